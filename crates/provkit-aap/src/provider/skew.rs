//! How far AAP's clock is from this host's, measured from the jobs this provider launched.
//!
//! A launch answer carries the new job's `created` (AWX's clock, microseconds). The job was
//! created while the request was in flight, so with `sent` and `received` read on the local
//! clock around the request, the offset `AAP − local` lies in `[created − received,
//! created − sent]`. The tightest of the recent samples is the estimate, widened on each side by
//! [`DRIFT_MARGIN`] plus [`DRIFT_RATE`] times the sample's age: what two clocks disciplined by NTP
//! (which slews at most 500 ppm) may drift apart between the sample and its use. Until the first
//! sample the configured allowance applies on both sides (conservative default).
//!
//! Failure mode: a clock step (on either host) larger than that margin between the sample and a
//! lookup narrows the real window's start or end past what the lookup reads; a job created in
//! that sliver would be missed and its attempt launched again. Steps happen at boot, before any
//! sample, or by hand.
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
        if self.samples.len() >= SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(Sample {
            offset: Offset {
                low: created - received,
                high: created - sent,
            },
            at: received,
        });
    }

    /// The offset's bounds at `now`, margins included; `±default` before the first sample.
    pub(crate) fn bounds(&self, default: TimeDelta, now: DateTime<Utc>) -> Offset {
        self.samples
            .iter()
            .map(|s| s.widened(now))
            .min_by_key(|o| o.high - o.low)
            .unwrap_or(Offset {
                low: -default,
                high: default,
            })
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
