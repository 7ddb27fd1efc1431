//! The async lifecycle flows: [`Lifecycle`].

mod deprovision;
mod launch;
pub(crate) mod multi_target;
mod observe;
mod provision;

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use provkit_core::Clock;

use crate::idempotency::IdempotencyKey;
use crate::policy::LifecyclePolicy;
use crate::provider::ProvisioningProvider;

/// The provisioning lifecycle engine: one provider, one clock, one policy.
///
/// Create one per controller and share it (it is cheap to clone). Every method works on a job history
/// (`&mut Vec<JobStatus>`, usually `status.provisioningJobs`) that the caller persists afterwards.
///
/// # Guarantees
/// - Wall time is read only from the [`Clock`]; nothing sleeps.
/// - No job is recorded without a non-empty id; no recorded job is ever dropped except by the history
///   cap (which never drops the latest provision job).
/// - Launches are exactly-once within the limits described in the crate docs ("Exactly-once launch").
///
/// # Assumptions
/// - Reconciles of one object do not run concurrently (kube-runtime guarantees this), but a reconcile
///   may see a stale cached copy; the [`StaleCacheCheck`](crate::StaleCacheCheck) covers that.
///
/// ```
/// use std::sync::Arc;
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{Clock, ManualClock};
/// use provkit_lifecycle::{Lifecycle, LifecyclePolicy, ProvisioningProvider};
///
/// fn engine(provider: Arc<dyn ProvisioningProvider>) -> Lifecycle {
///     let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(Utc.timestamp_opt(0, 0).unwrap()));
///     Lifecycle::new(provider, clock).with_policy(LifecyclePolicy::default())
/// }
/// ```
#[derive(Clone)]
pub struct Lifecycle {
    provider: Arc<dyn ProvisioningProvider>,
    clock: Arc<dyn Clock>,
    policy: LifecyclePolicy,
    journal: Arc<LaunchJournal>,
    /// The target this engine works for inside a multi-target lifecycle (`""`: single target); it
    /// scopes idempotency keys.
    target: String,
    observe: observe::Observe,
}

impl fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lifecycle")
            .field("provider", &self.provider.name())
            .field("clock", &self.clock)
            .field("policy", &self.policy)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Lifecycle {
    /// An engine with the default [`LifecyclePolicy`].
    pub fn new(provider: Arc<dyn ProvisioningProvider>, clock: Arc<dyn Clock>) -> Self {
        Self {
            provider,
            clock,
            policy: LifecyclePolicy::default(),
            journal: Arc::new(LaunchJournal::default()),
            target: String::new(),
            observe: observe::Observe::default(),
        }
    }

    /// Records launches and polls in `metrics` (feature `metrics`; see
    /// [`crate::metrics`]).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn with_metrics(mut self, metrics: crate::metrics::LifecycleMetrics) -> Self {
        self.observe.metrics = Some(metrics);
        self
    }

    /// Replaces the policy.
    #[must_use]
    pub fn with_policy(mut self, policy: LifecyclePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The policy.
    pub fn policy(&self) -> &LifecyclePolicy {
        &self.policy
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn ProvisioningProvider> {
        &self.provider
    }

    /// This engine with another provider (clock, policy and metrics kept), for example a
    /// decorator around the current one ([`with_launch_view`](Self::with_launch_view)).
    #[must_use]
    pub fn with_provider(mut self, provider: Arc<dyn ProvisioningProvider>) -> Self {
        self.provider = provider;
        self
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Idempotency keys of attempts whose launch outcome this engine saw as unknown and has not resolved
    /// yet (for diagnostics and tests).
    pub fn unresolved_launch_keys(&self) -> Vec<IdempotencyKey> {
        self.journal.keys()
    }
}

/// In-memory record of launch attempts with an unknown outcome, keyed by idempotency key.
#[derive(Debug, Default)]
struct LaunchJournal {
    unknown: Mutex<HashSet<IdempotencyKey>>,
}

impl LaunchJournal {
    /// Bound on remembered keys; beyond it the set is cleared (keys are only a hint for extra lookups).
    const CAP: usize = 16_384;

    fn insert(&self, key: IdempotencyKey) {
        let mut set = self.unknown.lock().unwrap_or_else(PoisonError::into_inner);
        if set.len() >= Self::CAP {
            set.clear();
        }
        set.insert(key);
    }

    fn remove(&self, key: &IdempotencyKey) {
        self.unknown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    fn contains(&self, key: &IdempotencyKey) -> bool {
        self.unknown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    }

    fn keys(&self) -> Vec<IdempotencyKey> {
        let mut keys: Vec<_> = self
            .unknown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        keys.sort();
        keys
    }
}
