//! How far AAP's clock is from this host's, measured from AAP's answers.
//!
//! A launch answer carries the new job's `created` (AWX's clock, microseconds). The job was
//! created while the request was in flight, so with `sent` and `received` read on the local
//! clock around the request, the offset `AAP − local` lies in `[created − received,
//! created − sent]`. Before its first launch, a process asks once for AAP's `Date` header
//! (`GET ping/`, whole seconds): AAP's clock was in `[date, date + 1 s)` while the request was in
//! flight, so the offset lies in `[date − received, date + 1 s − sent]`. Every sample is widened
//! on each side by [`DRIFT_MARGIN`] plus [`DRIFT_RATE`] times its age (what two clocks
//! disciplined by NTP, which slews at most 500 ppm, may drift apart between the sample and its
//! use); the offset lies in every widened sample, so the estimate is their intersection (the
//! tightest sample alone if they do not meet: a clock stepped). Until the first sample the
//! configured allowance applies on both sides (conservative default).
//!
//! Failure mode: a clock step (on either host) larger than that margin between the sample and a
//! lookup narrows the real window's start or end past what the lookup reads; a job created in
//! that sliver would be missed and its attempt launched again. Steps happen at boot, before any
//! sample, or by hand. A proxy that writes its own `Date` from a clock that differs from AAP's
//! by more than the margin does the same to the lookups of a process that has not launched yet.
//!
//! Hand-written: a ring of intervals; no crate models a clock-offset bound.

use std::collections::VecDeque;

use chrono::{DateTime, TimeDelta, Utc};

/// Samples kept (the tightest of them is used).
const SAMPLES: usize = 32;

/// Added on both sides of the measured interval.
pub(crate) const DRIFT_MARGIN: TimeDelta = TimeDelta::milliseconds(50);

/// Added per second of a sample's age, on both sides (NTP's largest slew, 500 ppm, for each of
/// the two clocks).
pub(crate) const DRIFT_RATE: f64 = 1e-3;

/// The offset `AAP clock − local clock` lies in `[low, high]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Offset {
    pub(crate) low: TimeDelta,
    pub(crate) high: TimeDelta,
}

/// One sample: the offset's bounds and when (local clock) they were measured.
#[derive(Clone, Copy, Debug)]
struct Sample {
    offset: Offset,
    at: DateTime<Utc>,
}

impl Sample {
    /// The bounds widened for the drift since the sample, at `now`.
    fn widened(&self, now: DateTime<Utc>) -> Offset {
        let age_us = (now - self.at)
            .num_microseconds()
            .unwrap_or(i64::MAX)
            .max(0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        let drift = TimeDelta::microseconds((age_us as f64 * DRIFT_RATE) as i64);
        let margin = DRIFT_MARGIN + drift;
        Offset {
            low: self.offset.low - margin,
            high: self.offset.high + margin,
        }
    }
}

/// The recent launch samples.
#[derive(Debug, Default)]
pub(crate) struct SkewEstimator {
    samples: VecDeque<Sample>,
}

impl SkewEstimator {
    /// A launch sent at `sent` and answered at `received` (local clock) created a job AAP dated
    /// `created`. A sample with `received < sent` (a local clock step) is ignored.
    pub(crate) fn observe(
        &mut self,
        sent: DateTime<Utc>,
        received: DateTime<Utc>,
        created: DateTime<Utc>,
    ) {
        if received < sent {
            return;
        }
        self.push(Sample {
            offset: Offset {
                low: created - received,
                high: created - sent,
            },
            at: received,
        });
    }

    /// A request sent at `sent` and answered at `received` (local clock) carried AAP's `Date`
    /// header `date` (whole seconds: AAP's clock read `[date, date + 1 s)` while it was in
    /// flight).
    pub(crate) fn observe_date(
        &mut self,
        sent: DateTime<Utc>,
        received: DateTime<Utc>,
        date: DateTime<Utc>,
    ) {
        if received < sent {
            return;
        }
        self.push(Sample {
            offset: Offset {
                low: date - received,
                high: date + TimeDelta::seconds(1) - sent,
            },
            at: received,
        });
    }

    /// Whether any answer was sampled (the default allowance no longer applies).
    pub(crate) fn is_measured(&self) -> bool {
        !self.samples.is_empty()
    }

    fn push(&mut self, sample: Sample) {
        if self.samples.len() >= SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// The offset's bounds at `now`, margins included: the intersection of the widened samples
    /// (the tightest one if they do not meet); `±default` before the first sample.
    pub(crate) fn bounds(&self, default: TimeDelta, now: DateTime<Utc>) -> Offset {
        let widened = || self.samples.iter().map(|s| s.widened(now));
        let Some(tightest) = widened().min_by_key(|o| o.high - o.low) else {
            return Offset {
                low: -default,
                high: default,
            };
        };
        let low = widened().map(|o| o.low).max().unwrap_or(tightest.low);
        let high = widened().map(|o| o.high).min().unwrap_or(tightest.high);
        if low <= high {
            Offset { low, high }
        } else {
            tightest
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::milliseconds(ms)
    }

    #[test]
    fn the_default_applies_until_the_first_sample() {
        let e = SkewEstimator::default();
        let b = e.bounds(TimeDelta::minutes(5), t(0));
        assert_eq!(
            (b.low, b.high),
            (-TimeDelta::minutes(5), TimeDelta::minutes(5))
        );
    }

    #[test]
    fn the_narrowest_recent_sample_bounds_the_offset() {
        let mut e = SkewEstimator::default();
        // AAP is 10 s ahead; one slow launch (2 s), one fast (100 ms).
        e.observe(t(0), t(2_000), t(10_500));
        e.observe(t(5_000), t(5_100), t(15_050));
        let b = e.bounds(TimeDelta::minutes(5), t(5_100));
        assert_eq!(b.low, TimeDelta::milliseconds(9_950) - DRIFT_MARGIN);
        assert_eq!(b.high, TimeDelta::milliseconds(10_050) + DRIFT_MARGIN);
        assert!(b.low <= TimeDelta::seconds(10) && TimeDelta::seconds(10) <= b.high);
    }

    #[test]
    fn old_samples_leave_and_steps_back_are_ignored() {
        let mut e = SkewEstimator::default();
        e.observe(t(0), t(1), t(0));
        e.observe(t(10), t(5), t(0));
        for i in 0..SAMPLES as i64 {
            e.observe(t(i * 1000), t(i * 1000 + 400), t(i * 1000 + 200));
        }
        let last = (SAMPLES as i64 - 1) * 1000 + 400;
        let b = e.bounds(TimeDelta::zero(), t(last));
        assert_eq!(
            b.high - b.low,
            TimeDelta::milliseconds(400) + DRIFT_MARGIN * 2
        );
    }

    #[test]
    fn a_date_header_bounds_the_offset_within_a_second_and_the_round_trip() {
        let mut e = SkewEstimator::default();
        assert!(!e.is_measured());
        // AAP is 10.3 s ahead: at local 0.2 s (AAP 10.5 s) it wrote `Date` 10 s.
        e.observe_date(t(0), t(400), t(10_000));
        assert!(e.is_measured());
        let b = e.bounds(TimeDelta::minutes(5), t(400));
        assert_eq!(b.low, TimeDelta::milliseconds(9_600) - DRIFT_MARGIN);
        assert_eq!(b.high, TimeDelta::milliseconds(11_000) + DRIFT_MARGIN);
        assert!(
            b.low <= TimeDelta::milliseconds(10_300) && TimeDelta::milliseconds(10_300) <= b.high
        );
    }

    #[test]
    fn samples_that_meet_narrow_each_other() {
        let mut e = SkewEstimator::default();
        // True offset 10.3 s. A Date sample [9.6, 11.0] and two launch samples, [10.2, 10.9]
        // (slow) and [9.9, 10.35] (fast): the offset lies in all three.
        e.observe_date(t(0), t(400), t(10_000));
        e.observe(t(1_000), t(1_700), t(11_900));
        e.observe(t(2_000), t(2_450), t(12_350));
        let b = e.bounds(TimeDelta::zero(), t(2_450));
        let drift = |age_ms: i64| DRIFT_MARGIN + TimeDelta::microseconds(age_ms);
        assert_eq!(b.low, TimeDelta::milliseconds(10_200) - drift(750));
        assert_eq!(b.high, TimeDelta::milliseconds(10_350) + drift(0));
        assert!(
            b.low <= TimeDelta::milliseconds(10_300) && TimeDelta::milliseconds(10_300) <= b.high
        );
    }

    #[test]
    fn samples_that_do_not_meet_fall_back_to_the_tightest() {
        let mut e = SkewEstimator::default();
        // A clock step of 10 s between the two samples.
        e.observe(t(0), t(100), t(50));
        e.observe(t(1_000), t(1_300), t(11_100));
        let b = e.bounds(TimeDelta::zero(), t(1_300));
        let age = TimeDelta::microseconds(1_200);
        assert_eq!(
            (b.low, b.high),
            (
                TimeDelta::milliseconds(-50) - DRIFT_MARGIN - age,
                TimeDelta::milliseconds(50) + DRIFT_MARGIN + age
            )
        );
    }

    #[test]
    fn the_margin_grows_with_the_samples_age() {
        let mut e = SkewEstimator::default();
        e.observe(t(0), t(100), t(50));
        let fresh = e.bounds(TimeDelta::zero(), t(100));
        // 1,000 s later: 1 s more on each side (two clocks slewing at 500 ppm).
        let old = e.bounds(TimeDelta::zero(), t(1_000_100));
        assert_eq!(fresh.low - old.low, TimeDelta::seconds(1));
        assert_eq!(old.high - fresh.high, TimeDelta::seconds(1));
    }
}
