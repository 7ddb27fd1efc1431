//! Wall-clock time behind a trait, so that code recording job timestamps or computing backoff
//! can be tested without waiting.
//!
//! - [`SystemClock`] reads the real time; it is the only place in provkit that calls
//!   `chrono::Utc::now()` (the workspace's clippy configuration forbids it elsewhere).
//! - [`ManualClock`] is driven by hand ([`ManualClock::set`], [`ManualClock::advance`]); clones
//!   share one time, so a test keeps a handle while the code under test holds another.
//! - `Arc<C>` is a clock whenever `C` is, so `Arc<dyn Clock>` can be passed around.
//!
//! For tests that run under tokio's paused time, provkit-testing's `FakeClock` advances together
//! with `tokio::time`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use chrono::{TimeZone, Utc};
//! use provkit_core::{Clock, ManualClock, SystemClock};
//!
//! let manual = ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
//! let clock: Arc<dyn Clock> = Arc::new(manual.clone());
//! manual.advance(Duration::from_secs(90));
//! assert_eq!(clock.now(), Utc.with_ymd_and_hms(2026, 1, 1, 0, 1, 30).unwrap());
//!
//! let real: Arc<dyn Clock> = Arc::new(SystemClock);
//! assert!(real.now() > Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap());
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

/// A source of wall-clock time.
///
/// ```
/// use provkit_core::{Clock, SystemClock};
///
/// fn stamp(clock: &dyn Clock) -> String {
///     provkit_core::timestamp::format(&clock.now())
/// }
/// assert!(stamp(&SystemClock).ends_with('Z'));
/// ```
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current wall-clock time.
    fn now(&self) -> DateTime<Utc>;
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

/// The real wall clock (`chrono::Utc::now()`).
///
/// ```
/// use provkit_core::{Clock, SystemClock};
/// let a = SystemClock.now();
/// let b = SystemClock.now();
/// assert!(b >= a - chrono::TimeDelta::seconds(1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one sanctioned wall-clock read
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. Clones share the same time.
///
/// ```
/// use std::time::Duration;
/// use chrono::{TimeDelta, TimeZone, Utc};
/// use provkit_core::{Clock, ManualClock};
///
/// let start = Utc.timestamp_opt(1_000, 0).unwrap();
/// let clock = ManualClock::new(start);
/// let handle = clock.clone();
/// handle.advance(Duration::from_millis(1_500));
/// assert_eq!(clock.now(), start + TimeDelta::milliseconds(1_500));
/// handle.set(start);
/// assert_eq!(clock.now(), start);
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::{Clock, ManualClock};
    /// let t = Utc.timestamp_opt(0, 0).unwrap();
    /// assert_eq!(ManualClock::new(t).now(), t);
    /// ```
    #[must_use]
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves every handle of this clock to `t` (backwards too).
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::{Clock, ManualClock};
    /// let clock = ManualClock::new(Utc.timestamp_opt(100, 0).unwrap());
    /// clock.set(Utc.timestamp_opt(5, 0).unwrap());
    /// assert_eq!(clock.now().timestamp(), 5);
    /// ```
    pub fn set(&self, t: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }

    /// Moves every handle of this clock forward by `by`. A step that would overflow chrono's
    /// range stops the clock at its maximum (`DateTime::<Utc>::MAX_UTC`) instead of panicking.
    ///
    /// ```
    /// use std::time::Duration;
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::{Clock, ManualClock};
    /// let clock = ManualClock::new(Utc.timestamp_opt(0, 0).unwrap());
    /// clock.advance(Duration::from_secs(120));
    /// assert_eq!(clock.now().timestamp(), 120);
    /// ```
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now = TimeDelta::from_std(by)
            .ok()
            .and_then(|d| now.checked_add_signed(d))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_handles_share_time() {
        let start = DateTime::<Utc>::UNIX_EPOCH;
        let clock = ManualClock::new(start);
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        let boxed: Box<dyn Clock> = Box::new(clock.clone());
        clock.advance(Duration::from_secs(30));
        assert_eq!(shared.now(), start + TimeDelta::seconds(30));
        assert_eq!(boxed.now(), start + TimeDelta::seconds(30));
        fn read<C: Clock>(c: C) -> DateTime<Utc> {
            c.now()
        }
        assert_eq!(read(&clock), start + TimeDelta::seconds(30));
        clock.set(start - TimeDelta::days(1));
        assert_eq!(shared.now(), start - TimeDelta::days(1));
    }

    #[test]
    fn manual_clock_advance_saturates_instead_of_panicking() {
        let clock = ManualClock::new(DateTime::<Utc>::MAX_UTC - TimeDelta::seconds(1));
        clock.advance(Duration::from_secs(10));
        assert_eq!(clock.now(), DateTime::<Utc>::MAX_UTC);
        clock.advance(Duration::MAX);
        assert_eq!(clock.now(), DateTime::<Utc>::MAX_UTC);
    }
}
