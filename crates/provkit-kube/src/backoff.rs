//! Per-object exponential backoff with jitter for failed reconciles: what
//! [`error_policy`](crate::error_policy) requeues after.
//!
//! The failure count lives here, keyed by object: [`Provisioner::reconcile`](crate::Provisioner::reconcile)
//! counts a failure when it fails (and chooses the delay, which the echo of its own status
//! writes keeps, see `own_writes`), the error policy that kube-runtime calls next requeues
//! after that delay (it counts failures of other reconciles itself), and a successful
//! reconcile resets the count. The delay of the `n`-th consecutive failure (`n` from 1) is
//! `min(initial × 2^(n-1), max)`, shortened by a random fraction of up to `jitter` of itself,
//! so a fleet that failed together (an AAP outage) does not come back in lock step.
//!
//! Hand-written: a map of counters; the formula is provkit-core's [`backoff`](provkit_core::backoff)
//! (shared with the AAP client's retries and the resync). kube-runtime's own backoff
//! (`backon`-based) applies to watch streams, not to per-object reconcile errors.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use provkit_core::backoff::{Jitter, exponential};

/// Settings of the per-object error backoff.
///
/// ```
/// use std::time::Duration;
/// use provkit_kube::ErrorBackoffConfig;
///
/// let config = ErrorBackoffConfig::default()
///     .with_initial(Duration::from_secs(2))
///     .with_max(Duration::from_secs(120))
///     .with_jitter(0.0);
/// assert_eq!(config.delay(1, 0.0), Duration::from_secs(2));
/// assert_eq!(config.delay(3, 0.0), Duration::from_secs(8));
/// assert_eq!(config.delay(30, 0.0), Duration::from_secs(120));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ErrorBackoffConfig {
    /// The delay after the first failure (default 1 s).
    pub initial: Duration,
    /// The longest delay (default 5 min).
    pub max: Duration,
    /// The largest fraction, in `0.0..=1.0`, by which a delay is randomly shortened
    /// (default 0.5: a delay `d` becomes a value in `d/2..=d`). 0 disables jitter.
    pub jitter: f64,
}

impl Default for ErrorBackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(300),
            jitter: 0.5,
        }
    }
}

impl ErrorBackoffConfig {
    /// Replaces the first delay.
    #[must_use]
    pub fn with_initial(mut self, initial: Duration) -> Self {
        self.initial = initial;
        self
    }

    /// Replaces the longest delay.
    #[must_use]
    pub fn with_max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// Replaces the jitter fraction (clamped to `0.0..=1.0`).
    #[must_use]
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// The delay after the `failures`-th consecutive failure (counted from 1; 0 is treated as
    /// 1), with `unit` in `0.0..1.0` choosing the jitter (0: no shortening).
    #[must_use]
    pub fn delay(&self, failures: u32, unit: f64) -> Duration {
        let base = exponential(
            self.initial,
            self.max.max(self.initial),
            failures.saturating_sub(1),
        );
        Jitter::Shorten {
            max_fraction: self.jitter,
        }
        .apply_with(base, || unit)
    }
}

/// The failure counts of all objects of one controller (shared by its reconciles).
pub(crate) struct ErrorBackoff {
    config: ErrorBackoffConfig,
    entries: Mutex<HashMap<String, Failing>>,
    rng: Mutex<fastrand::Rng>,
}

/// One failing object.
#[derive(Debug, Default)]
struct Failing {
    /// Consecutive failures.
    failures: u32,
    /// The delay decided when the last of them failed, until the error policy that follows
    /// takes it.
    decided: Option<Duration>,
}

impl fmt::Debug for ErrorBackoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErrorBackoff")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Entries beyond this bound are dropped (objects deleted while failing leave theirs
/// behind); a dropped entry only restarts that object's backoff at the first step.
const MAX_ENTRIES: usize = 65_536;

impl ErrorBackoff {
    pub(crate) fn new(config: ErrorBackoffConfig) -> Self {
        Self {
            config,
            entries: Mutex::new(HashMap::new()),
            rng: Mutex::new(fastrand::Rng::new()),
        }
    }

    pub(crate) fn config(&self) -> &ErrorBackoffConfig {
        &self.config
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Failing>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records one more failure of `key`; returns the delay before its next reconcile and the
    /// failure count.
    pub(crate) fn failed(&self, key: &str) -> (Duration, u32) {
        let failures = {
            let mut entries = self.entries();
            if entries.len() >= MAX_ENTRIES && !entries.contains_key(key) {
                entries.clear();
            }
            let entry = entries.entry(key.to_owned()).or_default();
            entry.failures = entry.failures.saturating_add(1);
            entry.decided = None;
            entry.failures
        };
        let unit = self
            .rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .f64();
        (self.config.delay(failures, unit), failures)
    }

    /// Keeps the delay decided when the reconcile of `key` failed (after [`failed`](Self::failed)
    /// counted it), for the error policy that follows ([`take_decided`](Self::take_decided)).
    pub(crate) fn decide(&self, key: &str, delay: Duration) {
        if let Some(entry) = self.entries().get_mut(key) {
            entry.decided = Some(delay);
        }
    }

    /// The delay decided for `key`'s failed reconcile and its failure count, once.
    pub(crate) fn take_decided(&self, key: &str) -> Option<(Duration, u32)> {
        let mut entries = self.entries();
        let entry = entries.get_mut(key)?;
        entry.decided.take().map(|delay| (delay, entry.failures))
    }

    /// Forgets `key`'s failures (a reconcile succeeded).
    pub(crate) fn succeeded(&self, key: &str) {
        let mut entries = self.entries();
        if !entries.is_empty() {
            entries.remove(key);
        }
    }

    /// The number of consecutive failures recorded for `key` (for tests and diagnostics).
    pub(crate) fn failures(&self, key: &str) -> u32 {
        self.entries().get(key).map_or(0, |e| e.failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn doubling_from_initial_up_to_max() {
        let c = ErrorBackoffConfig::default().with_jitter(0.0);
        let secs: Vec<u64> = (1..=11).map(|n| c.delay(n, 0.0).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(c.delay(0, 0.0), Duration::from_secs(1));
        assert_eq!(c.delay(u32::MAX, 0.0), Duration::from_secs(300));
    }

    #[test]
    fn jitter_shortens_by_at_most_its_fraction() {
        let c = ErrorBackoffConfig::default();
        assert_eq!(c.delay(4, 0.0), Duration::from_secs(8));
        assert_eq!(c.delay(4, 1.0), Duration::from_secs(4));
        assert_eq!(
            c.with_jitter(f64::NAN).delay(4, 0.9),
            Duration::from_secs(8)
        );
    }

    #[test]
    fn success_resets_only_its_object() {
        let b = ErrorBackoff::new(ErrorBackoffConfig::default().with_jitter(0.0));
        assert_eq!(b.failed("a"), (Duration::from_secs(1), 1));
        assert_eq!(b.failed("a"), (Duration::from_secs(2), 2));
        assert_eq!(b.failed("b"), (Duration::from_secs(1), 1));
        b.succeeded("a");
        assert_eq!(b.failures("a"), 0);
        assert_eq!(b.failed("a"), (Duration::from_secs(1), 1));
        assert_eq!(b.failures("b"), 1);
    }

    #[test]
    fn a_decided_delay_is_taken_once_and_a_new_failure_replaces_it() {
        let b = ErrorBackoff::new(ErrorBackoffConfig::default().with_jitter(0.0));
        b.decide("a", Duration::from_secs(9));
        assert_eq!(
            b.take_decided("a"),
            None,
            "no failure counted: nothing kept"
        );
        assert_eq!(b.failed("a"), (Duration::from_secs(1), 1));
        b.decide("a", Duration::from_secs(9));
        assert_eq!(b.take_decided("a"), Some((Duration::from_secs(9), 1)));
        assert_eq!(b.take_decided("a"), None, "once");
        b.decide("a", Duration::from_secs(9));
        assert_eq!(b.failed("a"), (Duration::from_secs(2), 2));
        assert_eq!(b.take_decided("a"), None, "a later failure drops it");
        b.succeeded("a");
        assert_eq!(b.failures("a"), 0);
    }

    proptest! {
        #[test]
        fn delays_are_bounded_and_monotone(
            initial_ms in 1u64..10_000,
            max_ms in 1u64..1_000_000,
            jitter in 0.0f64..=1.0,
            unit in 0.0f64..1.0,
            n in 1u32..200,
        ) {
            let c = ErrorBackoffConfig::default()
                .with_initial(Duration::from_millis(initial_ms))
                .with_max(Duration::from_millis(max_ms))
                .with_jitter(jitter);
            let cap = c.max.max(c.initial);
            let d = c.delay(n, unit);
            prop_assert!(d <= cap);
            prop_assert!(d >= c.delay(n, 0.0).mul_f64(1.0 - jitter) - Duration::from_nanos(1));
            prop_assert!(c.delay(n + 1, 0.0) >= c.delay(n, 0.0));
        }
    }
}
