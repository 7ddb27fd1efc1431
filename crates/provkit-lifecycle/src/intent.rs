//! The durable launch intent: [`IntentStore`], the hook through which the engine persists a
//! [`LaunchIntent`] before each launch, and [`MemoryIntentStore`], an in-memory store for tests
//! and for engines without a durable store.
//!
//! # Why a hook
//! The engine has no IO of its own; where an intent lives is the caller's choice. provkit-kube
//! keeps it in `status.launchIntent`, written through the status subresource — the same path
//! the status flush uses, so a refused status write (403) refuses the intent and nothing is
//! launched.

use std::sync::{Mutex, PoisonError};

pub use provkit_core::LaunchIntent;

use crate::error::BoxError;

/// Persists the launch intent of one object (write-ahead log of one entry).
///
/// # Contract
/// - [`pending`](Self::pending) answers without IO: the intent the object carries as the store
///   last saw it (the object the reconcile started with, refreshed by the stale-cache check and
///   by the store's own writes).
/// - [`write`](Self::write) returns `Ok` only once the intent is durable (on the API server);
///   the engine launches only after that.
/// - [`resolve`](Self::resolve) does no IO: it marks the intent with that key resolved, so the
///   caller's next status write clears it (provkit-kube writes one for that alone when nothing
///   else changed). A status write must never clear an intent that was not resolved.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait IntentStore: Send + Sync {
    /// The unresolved intent the object carries, if any.
    fn pending(&self) -> Option<LaunchIntent>;
    /// Persists `intent`, replacing any pending one.
    async fn write(&self, intent: &LaunchIntent) -> Result<(), BoxError>;
    /// Marks the intent with `idempotency_key` resolved: its job is recorded, the backend
    /// proved that no such job exists, or the provider is certain that its launch made none
    /// ([`LaunchCertainty::NotMade`](crate::LaunchCertainty::NotMade), a rate limit included).
    fn resolve(&self, idempotency_key: &str);
}

/// An [`IntentStore`] in memory: durable only as long as the value lives. Useful in tests and as
/// the store of a long-lived engine that persists nothing else.
///
/// ```
/// use chrono::Utc;
/// use provkit_core::JobType;
/// use provkit_lifecycle::{IntentStore, LaunchIntent, MemoryIntentStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryIntentStore::default();
/// store.write(&LaunchIntent::new("k1", JobType::Provision, "v1", Utc::now())).await.unwrap();
/// assert_eq!(store.pending().unwrap().idempotency_key, "k1");
/// store.resolve("other");
/// assert!(store.pending().is_some());
/// store.resolve("k1");
/// assert!(store.pending().is_none());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryIntentStore {
    intent: Mutex<Option<LaunchIntent>>,
}

impl MemoryIntentStore {
    /// A store that starts with `intent` pending (for example, read back from storage).
    pub fn with_pending(intent: Option<LaunchIntent>) -> Self {
        Self {
            intent: Mutex::new(intent),
        }
    }
}

#[async_trait::async_trait]
impl IntentStore for MemoryIntentStore {
    fn pending(&self) -> Option<LaunchIntent> {
        self.intent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn write(&self, intent: &LaunchIntent) -> Result<(), BoxError> {
        *self.intent.lock().unwrap_or_else(PoisonError::into_inner) = Some(intent.clone());
        Ok(())
    }

    fn resolve(&self, idempotency_key: &str) {
        let mut slot = self.intent.lock().unwrap_or_else(PoisonError::into_inner);
        if slot
            .as_ref()
            .is_some_and(|i| i.idempotency_key == idempotency_key)
        {
            *slot = None;
        }
    }
}
