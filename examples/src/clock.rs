//! The virtual clock shared by the work queue, the lifecycle engine, the `AapProvider` and the fake
//! AAP server.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use provkit_core::Clock;

/// A clock that only moves when the simulation moves it (never backwards).
///
/// Clones share one time. Reading it is one atomic load, so every component can read it on every
/// request without contention.
///
/// ```
/// use std::time::Duration;
/// use provkit_core::Clock;
/// use provkit_examples::VirtualClock;
///
/// let clock = VirtualClock::new();
/// let start = clock.now();
/// clock.advance_to(start + chrono::TimeDelta::seconds(90));
/// assert_eq!(clock.elapsed(), Duration::from_secs(90));
/// clock.advance_to(start); // never backwards
/// assert_eq!(clock.elapsed(), Duration::from_secs(90));
/// ```
#[derive(Clone, Debug)]
pub struct VirtualClock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    start_micros: i64,
    now_micros: AtomicI64,
}

impl Default for VirtualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl VirtualClock {
    /// A clock at the simulation epoch, 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        let start = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_default();
        Self::starting_at(start)
    }

    /// A clock starting at `start`.
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        let micros = start.timestamp_micros();
        Self {
            inner: Arc::new(Inner {
                start_micros: micros,
                now_micros: AtomicI64::new(micros),
            }),
        }
    }

    /// The start time.
    pub fn start(&self) -> DateTime<Utc> {
        from_micros(self.inner.start_micros)
    }

    /// Virtual time elapsed since the start.
    pub fn elapsed(&self) -> Duration {
        let d = self.inner.now_micros.load(Ordering::Acquire) - self.inner.start_micros;
        Duration::from_micros(u64::try_from(d).unwrap_or(0))
    }

    /// Moves the clock to `t` if `t` is later than now.
    pub fn advance_to(&self, t: DateTime<Utc>) {
        self.inner
            .now_micros
            .fetch_max(t.timestamp_micros(), Ordering::AcqRel);
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX / 4);
        self.inner.now_micros.fetch_add(micros, Ordering::AcqRel);
    }

    /// `now + d`.
    pub fn after(&self, d: Duration) -> DateTime<Utc> {
        self.now() + TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX / 4)
    }

    /// A shared handle as the `Arc<dyn Clock>` the engine, provider and fake take.
    pub fn shared(&self) -> Arc<dyn Clock> {
        Arc::new(self.clone())
    }

    /// `T+mm:ss` (or `T+h:mm:ss`) of a time relative to the start, for timelines.
    pub fn label(&self, t: DateTime<Utc>) -> String {
        let secs = (t.timestamp_micros() - self.inner.start_micros).max(0) / 1_000_000;
        let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
        if h > 0 {
            format!("T+{h}:{m:02}:{s:02}")
        } else {
            format!("T+{m:02}:{s:02}")
        }
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> DateTime<Utc> {
        from_micros(self.inner.now_micros.load(Ordering::Acquire))
    }
}

fn from_micros(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap_or_default()
}
