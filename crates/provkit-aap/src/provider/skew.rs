//! How far AAP's clock is from this host's, measured from the jobs this provider launched.
//!
//! A launch answer carries the new job's `created` (AWX's clock, microseconds). The job was
//! created while the request was in flight, so with `sent` and `received` read on the local
//! clock around the request, the offset `AAP − local` lies in `[created − received,
//! created − sent]`. The narrowest of the recent samples is the estimate, widened by
//! [`DRIFT_MARGIN`] for what the clocks may drift apart between that sample and its use. Until
//! the first sample the configured allowance applies on both sides (conservative default).
//!
//! Failure mode: a clock step larger than the margin (on either host) between the sample and a
//! lookup narrows the real window's start or end past what the lookup reads; a job created in
//! that sliver would be missed and its attempt launched again. NTP slews by well under the margin
//! per minute; steps happen at boot, before any sample.
//!
//! Hand-written: a ring of intervals; no crate models a clock-offset bound.

use std::collections::VecDeque;

use chrono::{DateTime, TimeDelta, Utc};

/// Samples kept (the narrowest of them is used).
const SAMPLES: usize = 32;

/// Added on both sides of the measured interval.
pub(crate) const DRIFT_MARGIN: TimeDelta = TimeDelta::milliseconds(500);

/// The offset `AAP clock − local clock` lies in `[low, high]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Offset {
    pub(crate) low: TimeDelta,
    pub(crate) high: TimeDelta,
}

/// The recent launch samples.
#[derive(Debug, Default)]
pub(crate) struct SkewEstimator {
    samples: VecDeque<Offset>,
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
        self.samples.push_back(Offset {
            low: created - received,
            high: created - sent,
        });
    }

    /// The offset's bounds, margin included; `±default` before the first sample.
    pub(crate) fn bounds(&self, default: TimeDelta) -> Offset {
        self.samples.iter().min_by_key(|o| o.high - o.low).map_or(
            Offset {
                low: -default,
                high: default,
            },
            |o| Offset {
                low: o.low - DRIFT_MARGIN,
                high: o.high + DRIFT_MARGIN,
            },
        )
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
        let b = e.bounds(TimeDelta::minutes(5));
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
        let b = e.bounds(TimeDelta::minutes(5));
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
        let b = e.bounds(TimeDelta::zero());
        assert_eq!(
            b.high - b.low,
            TimeDelta::milliseconds(400) + DRIFT_MARGIN * 2
        );
    }
}
