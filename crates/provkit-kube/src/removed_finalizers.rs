//! Which objects this controller already removed its finalizer from, so a reconcile of a
//! stale cached copy (the informer has not seen the removal yet) does not clean up twice.
//!
//! Hand-written because it is a few lines over a `HashMap`: entries are keyed by
//! `metadata.uid` (a re-created object with the same name has a new uid) and dropped after
//! [`RemovedFinalizers::TTL`], long after any watch event has caught the cache up. The memory
//! is per process, which is all it needs: a restarted (or newly elected) controller starts
//! from a fresh list, which already shows the removal.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Uids whose finalizer this controller removed recently.
#[derive(Debug, Default)]
pub(crate) struct RemovedFinalizers {
    removed: Mutex<HashMap<String, Instant>>,
}

impl RemovedFinalizers {
    /// How long a removal is remembered.
    pub(crate) const TTL: Duration = Duration::from_secs(600);

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.removed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that the finalizer of `uid` was removed now.
    pub(crate) fn record(&self, uid: &str) {
        let now = Instant::now();
        let mut removed = self.lock();
        removed.retain(|_, at| now.duration_since(*at) < Self::TTL);
        removed.insert(uid.to_owned(), now);
    }

    /// Whether the finalizer of `uid` was removed within [`Self::TTL`].
    pub(crate) fn contains(&self, uid: &str) -> bool {
        self.lock()
            .get(uid)
            .is_some_and(|at| at.elapsed() < Self::TTL)
    }

    /// Forgets `uid` (the cache has caught up: the copy no longer carries the finalizer).
    pub(crate) fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_per_uid_until_forgotten() {
        let r = RemovedFinalizers::default();
        assert!(!r.contains("a"));
        r.record("a");
        assert!(r.contains("a"));
        assert!(!r.contains("b"));
        r.forget("a");
        assert!(!r.contains("a"));
    }
}
