//! The server's clock: any [`provkit_core::Clock`] plus a hand-advanced offset.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use provkit_core::Clock;

/// A clock that reads a base clock and adds an offset that tests advance by hand.
#[derive(Debug)]
pub(crate) struct OffsetClock {
    base: Arc<dyn Clock>,
    offset_micros: AtomicI64,
}

impl OffsetClock {
    pub(crate) fn new(base: Arc<dyn Clock>) -> Self {
        OffsetClock {
            base,
            offset_micros: AtomicI64::new(0),
        }
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.base.now() + TimeDelta::microseconds(self.offset_micros.load(Ordering::Relaxed))
    }

    pub(crate) fn advance(&self, by: Duration) {
        let micros = i64::try_from(by.as_micros()).unwrap_or(i64::MAX / 2);
        self.offset_micros.fetch_add(micros, Ordering::Relaxed);
    }
}
