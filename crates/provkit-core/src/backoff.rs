//! Exponential backoff and jitter: the one implementation behind the AAP client's retries,
//! provkit-kube's per-object error backoff and resync, and the lifecycle engine's requeues.
//! Written here rather than taken from a retry crate: those own the retry loop, the sleeping
//! and the randomness, and every caller here needs only the delay (pure arithmetic, testable
//! with a fixed random draw).

use std::time::Duration;

/// `initial · 2^step`, capped at `max` (never panics; `max` below `initial` gives `max`).
///
/// ```
/// use std::time::Duration;
/// use provkit_core::backoff::exponential;
/// let (one, cap) = (Duration::from_secs(1), Duration::from_secs(60));
/// assert_eq!(exponential(one, cap, 0), one);
/// assert_eq!(exponential(one, cap, 3), Duration::from_secs(8));
/// assert_eq!(exponential(one, cap, 200), cap);
/// ```
#[must_use]
pub fn exponential(initial: Duration, max: Duration, step: u32) -> Duration {
    let factor = 1u64.checked_shl(step.min(63)).unwrap_or(u64::MAX);
    u32::try_from(factor)
        .ok()
        .and_then(|f| initial.checked_mul(f))
        .map_or(max, |d| d.min(max))
}

/// Random variation of a delay, so that a fleet changed at the same time does not poll or retry
/// in lockstep. Fractions are clamped to `0..=1`; a non-finite fraction or draw counts as 0.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// No jitter (Go's behaviour; the lifecycle engine's default).
    #[default]
    None,
    /// Add a uniformly random `0 ..= max_fraction × d` to a delay `d`. Only ever *delays*: what
    /// must not happen before `d` has elapsed (the engine's retry after a backoff) never does.
    Proportional {
        /// The largest fraction of the delay that may be added.
        max_fraction: f64,
    },
    /// Take a uniformly random `0 ..= max_fraction × d` off a delay `d`: for delays that are an
    /// upper bound (a retry of a request, an error backoff, a resync), so the bound still holds.
    Shorten {
        /// The largest fraction of the delay that may be taken off.
        max_fraction: f64,
    },
}

impl Jitter {
    /// `d` with the jitter, drawing randomness from `unit` (a function returning values in
    /// `[0, 1)`; out-of-range values are clamped).
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_core::backoff::Jitter;
    /// let d = Duration::from_secs(100);
    /// assert_eq!(Jitter::Proportional { max_fraction: 0.2 }.apply_with(d, || 0.5), Duration::from_secs(110));
    /// assert_eq!(Jitter::Shorten { max_fraction: 0.5 }.apply_with(d, || 0.5), Duration::from_secs(75));
    /// assert_eq!(Jitter::None.apply_with(d, || 0.5), d);
    /// ```
    pub fn apply_with(&self, d: Duration, unit: impl FnOnce() -> f64) -> Duration {
        let (fraction, lengthen) = match *self {
            Self::None => return d,
            Self::Proportional { max_fraction } => (max_fraction, true),
            Self::Shorten { max_fraction } => (max_fraction, false),
        };
        let share = clamp_unit(fraction) * clamp_unit(unit());
        if lengthen {
            d.saturating_add(d.mul_f64(share))
        } else {
            d.saturating_sub(d.mul_f64(share))
        }
    }

    /// `d` with the jitter, with randomness from `fastrand`.
    pub fn apply(&self, d: Duration) -> Duration {
        self.apply_with(d, fastrand::f64)
    }
}

/// `x` clamped to `0..=1`; a non-finite `x` is 0.
fn clamp_unit(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn jitter_stays_within_its_fraction(ms in 0u64..10_000_000, f in -1.0f64..2.0, u in -1.0f64..2.0) {
            let d = Duration::from_millis(ms);
            let (f1, u1) = (f.clamp(0.0, 1.0), u.clamp(0.0, 1.0));
            let longer = Jitter::Proportional { max_fraction: f }.apply_with(d, || u);
            let shorter = Jitter::Shorten { max_fraction: f }.apply_with(d, || u);
            prop_assert!(longer >= d && longer <= d + d.mul_f64(f1));
            prop_assert!(shorter <= d && shorter >= d.saturating_sub(d.mul_f64(f1)));
            prop_assert_eq!(longer, d + d.mul_f64(f1 * u1));
        }

        #[test]
        fn exponential_doubles_until_the_cap(initial in 0u64..10_000, max in 0u64..10_000_000, step in 0u32..100) {
            let (i, m) = (Duration::from_millis(initial), Duration::from_millis(max));
            let got = exponential(i, m, step);
            prop_assert!(got <= m);
            if step < 30 {
                prop_assert_eq!(got, (i * 2u32.pow(step)).min(m));
            }
        }
    }

    #[test]
    fn nonsense_fractions_and_draws_mean_no_jitter() {
        let d = Duration::from_secs(10);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                Jitter::Shorten { max_fraction: bad }.apply_with(d, || 0.5),
                d
            );
            assert_eq!(
                Jitter::Proportional { max_fraction: 0.5 }.apply_with(d, || bad),
                d
            );
        }
    }
}
