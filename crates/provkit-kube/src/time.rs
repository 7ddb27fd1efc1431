//! Conversions between provkit's `chrono` timestamps and k8s-openapi's [`Time`] / [`MicroTime`]
//! (which wrap `jiff::Timestamp` 0.2).
//!
//! The orphan rule forbids `From` impls between two foreign types, so these are free functions.
//!
//! Kubernetes serializes [`Time`] at whole-second precision; a round-trip through the API server
//! drops any fraction of a second, so compare round-tripped values at second precision.

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};

/// A `chrono` value that cannot be represented as a `jiff::Timestamp`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error("timestamp {value} cannot be represented as a Kubernetes time: {reason}")]
pub struct TimeConversionError {
    /// The offending value, RFC 3339.
    pub value: String,
    /// Why the conversion failed (out of jiff's range, …).
    pub reason: String,
}

/// Converts a `chrono` UTC timestamp to a `jiff::Timestamp`.
///
/// A leap second (chrono represents it as a sub-second part ≥ 1 s) is clamped to the last
/// nanosecond of that second, which jiff can represent.
///
/// # Errors
/// [`TimeConversionError`] when the value lies outside jiff's range (years −9999..=9999).
pub fn to_jiff(dt: DateTime<Utc>) -> Result<jiff::Timestamp, TimeConversionError> {
    let secs = dt.timestamp();
    let nanos = dt.timestamp_subsec_nanos().min(999_999_999);
    // `nanos` is below 1e9, so it fits in an i32.
    let nanos = i32::try_from(nanos).unwrap_or(999_999_999);
    jiff::Timestamp::new(secs, nanos).map_err(|e| TimeConversionError {
        value: dt.to_rfc3339(),
        reason: e.to_string(),
    })
}

/// Converts a `jiff::Timestamp` to a `chrono` UTC timestamp.
///
/// jiff's sub-second part is signed (negative before 1970); it is normalised before the
/// conversion. Every jiff timestamp is within chrono's range, so this cannot fail.
#[must_use]
pub fn from_jiff(ts: jiff::Timestamp) -> DateTime<Utc> {
    let mut secs = ts.as_second();
    let mut nanos = ts.subsec_nanosecond();
    if nanos < 0 {
        secs -= 1;
        nanos += 1_000_000_000;
    }
    let nanos = u32::try_from(nanos).unwrap_or(0);
    DateTime::from_timestamp(secs, nanos).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// `chrono` → k8s-openapi [`Time`] (e.g. for `Condition::last_transition_time`).
///
/// # Errors
/// See [`to_jiff`].
pub fn to_k8s_time(dt: DateTime<Utc>) -> Result<Time, TimeConversionError> {
    to_jiff(dt).map(Time)
}

/// k8s-openapi [`Time`] → `chrono` (e.g. `metadata.deletionTimestamp`).
#[must_use]
pub fn from_k8s_time(t: &Time) -> DateTime<Utc> {
    from_jiff(t.0)
}

/// `chrono` → k8s-openapi [`MicroTime`] (e.g. Lease `renewTime`).
///
/// # Errors
/// See [`to_jiff`].
pub fn to_k8s_micro_time(dt: DateTime<Utc>) -> Result<MicroTime, TimeConversionError> {
    to_jiff(dt).map(MicroTime)
}

/// k8s-openapi [`MicroTime`] → `chrono`.
#[must_use]
pub fn from_k8s_micro_time(t: &MicroTime) -> DateTime<Utc> {
    from_jiff(t.0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::{TimeZone, Timelike};

    #[test]
    fn whole_second_round_trip() {
        let dt = Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap();
        let t = to_k8s_time(dt).unwrap();
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2026-06-29T12:00:00Z\""
        );
        assert_eq!(from_k8s_time(&t), dt);
    }

    #[test]
    fn sub_second_survives_in_memory_and_is_dropped_on_the_wire() {
        let dt = Utc
            .with_ymd_and_hms(2026, 6, 29, 12, 0, 0)
            .unwrap()
            .with_nanosecond(250_000_000)
            .unwrap();
        let t = to_k8s_time(dt).unwrap();
        assert_eq!(from_k8s_time(&t), dt);
        let wire: Time = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(from_k8s_time(&wire), dt.with_nanosecond(0).unwrap());
    }

    #[test]
    fn pre_1970_with_fraction_round_trips() {
        let dt = Utc
            .with_ymd_and_hms(1969, 12, 31, 23, 59, 59)
            .unwrap()
            .with_nanosecond(500_000_000)
            .unwrap();
        let j = to_jiff(dt).unwrap();
        // jiff keeps the sign of the sub-second part: 0 s and -0.5 s, not -1 s and +0.5 s.
        assert_eq!((j.as_second(), j.subsec_nanosecond()), (0, -500_000_000));
        assert_eq!(from_jiff(j), dt);
        let neg = jiff::Timestamp::new(-1, 500_000_000).unwrap();
        assert_eq!(from_jiff(neg), dt);
    }

    #[test]
    fn leap_second_is_clamped() {
        let leap = Utc
            .with_ymd_and_hms(2016, 12, 31, 23, 59, 59)
            .unwrap()
            .with_nanosecond(1_500_000_000)
            .unwrap();
        let j = to_jiff(leap).unwrap();
        assert_eq!(j.subsec_nanosecond(), 999_999_999);
        assert_eq!(j.as_second(), leap.timestamp());
    }

    #[test]
    fn out_of_range_is_an_error() {
        let far = Utc.with_ymd_and_hms(20_000, 1, 1, 0, 0, 0).unwrap();
        let err = to_k8s_time(far).unwrap_err();
        assert!(err.value.starts_with("+20000"), "{err}");
    }

    #[test]
    fn micro_time_round_trip() {
        let dt = Utc
            .with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
            .unwrap()
            .with_nanosecond(123_456_000)
            .unwrap();
        let t = to_k8s_micro_time(dt).unwrap();
        assert_eq!(from_k8s_micro_time(&t), dt);
    }

    proptest::proptest! {
        #[test]
        fn any_in_range_instant_round_trips(secs in -377_705_116_800i64..253_402_207_200i64, nanos in 0u32..1_000_000_000u32) {
            let dt = DateTime::from_timestamp(secs, nanos).unwrap();
            proptest::prop_assert_eq!(from_jiff(to_jiff(dt).unwrap()), dt);
        }
    }
}
