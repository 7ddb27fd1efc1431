//! Serde `with` modules for `chrono::DateTime<Utc>` in the Kubernetes `metav1.Time` wire format.
//!
//! Kubernetes (and Go's `metav1.Time`) stores times as RFC 3339 in UTC at **whole-second
//! precision** with a `Z` suffix, e.g. `2026-06-29T12:00:00Z`. chrono's own serde output adds a
//! fraction whenever the value has one, which Go would not write; these modules write what Go
//! writes:
//!
//! - **Writing** drops (truncates) any sub-second part and always uses `Z`.
//! - **Reading** accepts any RFC 3339 string, with or without a fraction, with any offset, and
//!   converts it to UTC (the fraction is kept in memory).
//! - [`option`]: `None` ⇔ JSON `null`. Go writes `null` for its zero time, so the Go zero time
//!   `0001-01-01T00:00:00Z` also reads as `None`. Combine with `#[serde(default)]` to read a
//!   missing key as `None`.
//!
//! Years outside 0000–9999 are written the way chrono formats them (with a sign and more
//! digits), which Go cannot parse; Kubernetes timestamps never fall there.
//!
//! ```
//! use chrono::{DateTime, TimeZone, Utc};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Event {
//!     #[serde(with = "provkit_core::timestamp")]
//!     at: DateTime<Utc>,
//!     #[serde(default, with = "provkit_core::timestamp::option")]
//!     done: Option<DateTime<Utc>>,
//! }
//!
//! let e: Event = serde_json::from_str(r#"{"at":"2026-06-29T14:00:00.75+02:00"}"#).unwrap();
//! assert_eq!(e.done, None);
//! assert_eq!(
//!     serde_json::to_string(&e).unwrap(),
//!     r#"{"at":"2026-06-29T12:00:00Z","done":null}"#,
//! );
//! ```

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// Formats `t` the way Go's `metav1.Time` does: RFC 3339, UTC, whole seconds, `Z`.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// let t = Utc.timestamp_opt(1_782_734_400, 999_000_000).unwrap();
/// assert_eq!(provkit_core::timestamp::format(&t), "2026-06-29T12:00:00Z");
/// ```
#[must_use]
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses an RFC 3339 string (any offset, optional fraction) into UTC.
///
/// # Errors
///
/// The chrono parse error when `s` is not RFC 3339 (an empty string included; Go rejects it too).
///
/// ```
/// let t = provkit_core::timestamp::parse("2026-06-29T12:00:00.123456789-05:00").unwrap();
/// assert_eq!(provkit_core::timestamp::format(&t), "2026-06-29T17:00:00Z");
/// assert!(provkit_core::timestamp::parse("").is_err());
/// ```
pub fn parse(s: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc))
}

/// Serializes a time as RFC 3339 UTC at whole seconds with `Z` (use through `#[serde(with)]`).
///
/// # Errors
///
/// Only those of the serializer.
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format(t))
}

/// Deserializes any RFC 3339 string into UTC (use through `#[serde(with)]`).
///
/// # Errors
///
/// A custom serde error naming the bad string when it is not RFC 3339.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
    let s = String::deserialize(deserializer)?;
    parse(&s).map_err(|e| {
        serde::de::Error::custom(format_args!("invalid RFC 3339 timestamp {s:?}: {e}"))
    })
}

/// The same format for `Option<DateTime<Utc>>`: `None` ⇔ JSON `null`.
///
/// Reading the Go zero time `0001-01-01T00:00:00Z` yields `None` (Go writes `null` for it).
/// Add `#[serde(default)]` so a missing key reads as `None` too.
pub mod option {
    use super::{DateTime, Deserialize, Deserializer, Serializer, Utc};

    /// Serializes `Some` like [`super::serialize`] and `None` as `null`.
    ///
    /// # Errors
    ///
    /// Only those of the serializer.
    pub fn serialize<S: Serializer>(
        t: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => serializer.serialize_some(&super::format(t)),
            None => serializer.serialize_none(),
        }
    }

    /// Deserializes `null` as `None` and a string like [`super::deserialize`].
    ///
    /// # Errors
    ///
    /// A custom serde error naming the bad string when it is not RFC 3339.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        let Some(s) = Option::<String>::deserialize(deserializer)? else {
            return Ok(None);
        };
        let t = super::parse(&s).map_err(|e| {
            serde::de::Error::custom(format_args!("invalid RFC 3339 timestamp {s:?}: {e}"))
        })?;
        Ok((!is_go_zero_time(&t)).then_some(t))
    }

    /// Go's `time.Time{}`: 0001-01-01T00:00:00Z.
    fn is_go_zero_time(t: &DateTime<Utc>) -> bool {
        chrono::NaiveDate::from_ymd_opt(1, 1, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .is_some_and(|zero| zero.and_utc() == *t)
    }
}

/// Kubernetes' `metav1.MicroTime` format: RFC 3339 in UTC with exactly six fractional digits
/// and `Z`, e.g. `2026-06-29T12:00:00.250000Z` (what a Lease's `renewTime` holds).
///
/// For times that must keep their sub-second part across a status round trip (a launch
/// intent's time bounds an idempotency lookup). Reading accepts any RFC 3339 string, so a
/// whole-second value written earlier still reads; [`truncate`](micro::truncate) gives the
/// value a time has after a round trip.
///
/// ```
/// use chrono::{DateTime, TimeZone, Utc};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// struct Intent {
///     #[serde(with = "provkit_core::timestamp::micro")]
///     at: DateTime<Utc>,
/// }
///
/// let at = provkit_core::timestamp::micro::truncate(Utc.timestamp_opt(1_782_734_400, 250_000_999).unwrap());
/// let json = serde_json::to_string(&Intent { at }).unwrap();
/// assert_eq!(json, r#"{"at":"2026-06-29T12:00:00.250000Z"}"#);
/// assert_eq!(serde_json::from_str::<Intent>(&json).unwrap().at, at);
/// // A whole-second value (an older writer) still reads.
/// let old: Intent = serde_json::from_str(r#"{"at":"2026-06-29T12:00:00Z"}"#).unwrap();
/// assert_eq!(old.at, Utc.timestamp_opt(1_782_734_400, 0).unwrap());
/// ```
pub mod micro {
    use super::{DateTime, Deserializer, SecondsFormat, Serializer, Utc};
    use chrono::{SubsecRound, Timelike};

    /// `t` at whole microseconds (truncated): the value it reads back as after
    /// [`serialize`] / [`deserialize`].
    #[must_use]
    pub fn truncate(t: DateTime<Utc>) -> DateTime<Utc> {
        t.trunc_subsecs(6)
    }

    /// Whether `t` has no sub-second part (a value an older, whole-second writer may have
    /// truncated by up to a second).
    #[must_use]
    pub fn is_whole_second(t: &DateTime<Utc>) -> bool {
        t.nanosecond() == 0
    }

    /// Formats `t` as `metav1.MicroTime` does: RFC 3339, UTC, six fractional digits, `Z`.
    #[must_use]
    pub fn format(t: &DateTime<Utc>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Micros, true)
    }

    /// Serializes a time in the `metav1.MicroTime` format (use through `#[serde(with)]`).
    ///
    /// # Errors
    ///
    /// Only those of the serializer.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format(t))
    }

    /// Deserializes any RFC 3339 string into UTC (use through `#[serde(with)]`).
    ///
    /// # Errors
    ///
    /// A custom serde error naming the bad string when it is not RFC 3339.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        super::deserialize(deserializer)
    }
}
