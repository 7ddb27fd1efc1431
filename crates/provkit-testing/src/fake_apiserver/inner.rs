//! The state every clone of a [`FakeApiServer`](super::FakeApiServer) shares: the store, the
//! injected faults and the request log. Its own module so that the HTTP handler and the
//! server's API both depend on it and not on each other.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::faults::{Fault, FaultId, Hit, RequestTarget};
use super::inspect::{RequestLog, RequestRecord};
use super::store::Store;

/// An installed fault and how many requests it hit.
#[derive(Debug)]
pub(crate) struct Injected {
    pub(crate) id: FaultId,
    pub(crate) fault: Fault,
    pub(crate) hits: u64,
}

/// The shared state behind every clone of a [`FakeApiServer`](super::FakeApiServer).
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) store: Mutex<Store>,
    pub(crate) faults: Mutex<Vec<Injected>>,
    pub(crate) next_fault: std::sync::atomic::AtomicU64,
    pub(crate) log: Mutex<RequestLog>,
    pub(crate) observer: crate::observe::ObserverSlot,
    pub(crate) bookmark_interval: Duration,
    pub(crate) default_namespace: String,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    pub(crate) fn lock_store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    /// The combined effect of the faults matching `target` (counting down `times`).
    pub(crate) fn faults_for(&self, target: &RequestTarget<'_>) -> Hit {
        let mut hit = Hit::default();
        let mut faults = lock(&self.faults);
        for i in faults.iter_mut().filter(|i| i.fault.matches(target)) {
            let f = &mut i.fault;
            if f.skip > 0 {
                f.skip -= 1;
                continue;
            }
            if f.probability < 1.0 && self.lock_store().rng.f64() >= f.probability {
                continue;
            }
            if let Some(n) = &mut f.remaining {
                *n -= 1;
            }
            i.hits += 1;
            hit.add(&f.effect);
        }
        hit
    }

    pub(crate) fn log(&self, record: RequestRecord) {
        lock(&self.log).push(record);
    }
}
