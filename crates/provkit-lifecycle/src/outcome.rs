//! Inspectable results of the async flows.

use std::time::Duration;

use provkit_core::JobState;

use crate::decide::Action;

/// When the controller should look at the resource again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Nothing is pending: no timed requeue (wait for a change). kube: `Action::await_change()`.
    Done,
    /// Reconcile again after this long. kube: `Action::requeue(d)`.
    RequeueAfter(Duration),
}

impl Outcome {
    /// The requeue delay, `None` for [`Outcome::Done`].
    pub fn requeue_after(&self) -> Option<Duration> {
        match self {
            Self::Done => None,
            Self::RequeueAfter(d) => Some(*d),
        }
    }

    /// True for [`Outcome::Done`].
    pub fn is_done(&self) -> bool {
        matches!(self, Self::Done)
    }
}

/// Whether the status flush after a launch ran and how it went.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FlushReport {
    /// No job was recorded, so there was nothing to flush.
    #[default]
    NotNeeded,
    /// A job was recorded but no flush hook was supplied.
    NoHook,
    /// The flush succeeded.
    Flushed,
    /// The flush failed (non-fatal: the end-of-reconcile write retries); the error text.
    Failed(String),
}

/// What a provisioning call did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProvisionStep {
    /// Nothing to do (config applied).
    Skipped,
    /// The cache was stale; no status change.
    StaleCache,
    /// A job was launched and recorded.
    Launched {
        /// The new job's id.
        job_id: String,
    },
    /// A job launched by an earlier attempt (whose answer was lost) was found by its idempotency key and
    /// recorded instead of launching again.
    Recovered {
        /// The recovered job's id.
        job_id: String,
    },
    /// The provider rate-limited the launch or the poll (a `Retry-After`, an open circuit
    /// breaker); nothing recorded, the job's status untouched.
    RateLimited {
        /// The provider's retry-after.
        retry_after: Duration,
    },
    /// The job was polled; its state now.
    Polled {
        /// The job's id.
        job_id: String,
        /// The state after the poll.
        state: JobState,
    },
    /// The provider no longer knows the job; it was marked `Failed`.
    PurgedJobFailed {
        /// The job's id.
        job_id: String,
    },
    /// The status read failed; the error is in the job's message (unchanged while the same
    /// error repeats), state unchanged.
    StatusReadFailed {
        /// The job's id.
        job_id: String,
    },
    /// Waiting for the backoff of a failed job to elapse.
    BackingOff {
        /// How long until the retry is due (before jitter).
        remaining: Duration,
    },
}

/// The result of [`Lifecycle::run_provisioning_lifecycle`](crate::Lifecycle::run_provisioning_lifecycle)
/// and the lower-level provisioning flows.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProvisionOutcome {
    /// When to come back.
    pub outcome: Outcome,
    /// The evaluated action (Requeue when the stale-cache check fired).
    pub action: Action,
    /// What was done.
    pub step: ProvisionStep,
    /// The id of a legacy job that was stamped with the desired version in this call
    /// ([`LegacyJobs::Adopt`](crate::decide::LegacyJobs::Adopt)); the caller persists it with the status.
    pub adopted_legacy_job: Option<String>,
    /// The status flush after a launch.
    pub flush: FlushReport,
    /// True when the job history was changed in this call and must be persisted.
    pub history_changed: bool,
}

impl ProvisionOutcome {
    pub(crate) fn new(action: Action, step: ProvisionStep, outcome: Outcome) -> Self {
        Self {
            outcome,
            action,
            step,
            adopted_legacy_job: None,
            flush: FlushReport::NotNeeded,
            history_changed: false,
        }
    }

    /// The requeue delay, `None` when done.
    pub fn requeue_after(&self) -> Option<Duration> {
        self.outcome.requeue_after()
    }
}

/// Whether the controller may remove its finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FinalizerDecision {
    /// Teardown is complete (or not needed): remove the finalizer.
    Remove,
    /// Keep the finalizer and come back.
    Keep,
}

/// What a deprovisioning call did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeprovisionStep {
    /// The provider said nothing needs tearing down.
    Skipped,
    /// The cache was stale (the API server shows a newer deprovision job); nothing launched.
    StaleCache,
    /// The provider is waiting (for example for a provision job to be cancelled).
    Waiting,
    /// A deprovision job was launched and recorded.
    Launched {
        /// The new job's id.
        job_id: String,
    },
    /// A deprovision job from an earlier attempt with a lost answer was found by key and recorded.
    Recovered {
        /// The recovered job's id.
        job_id: String,
    },
    /// The provider rate-limited the call (a launch or a poll); nothing recorded, the job's
    /// status untouched.
    RateLimited {
        /// The provider's retry-after.
        retry_after: Duration,
    },
    /// The deprovision job was polled; its state now.
    Polled {
        /// The job's id.
        job_id: String,
        /// The state after the poll.
        state: JobState,
    },
    /// The provider no longer knows the deprovision job; it was marked `Failed`.
    PurgedJobFailed {
        /// The job's id.
        job_id: String,
    },
    /// The status read failed; the error is in the job's message (unchanged while the same
    /// error repeats).
    StatusReadFailed {
        /// The job's id.
        job_id: String,
    },
    /// The deprovision job succeeded (or failed without blocking deletion).
    Finished {
        /// The job's id.
        job_id: String,
        /// Its final state.
        state: JobState,
    },
    /// A failed deprovision job blocks deletion; waiting for its backoff before retrying.
    BackingOff {
        /// How long until the retry is due (before jitter).
        remaining: Duration,
    },
}

/// The result of [`Lifecycle::run_deprovisioning_lifecycle`](crate::Lifecycle::run_deprovisioning_lifecycle).
///
/// The finalizer answer is explicit: [`may_remove_finalizer`](Self::may_remove_finalizer) is true only
/// when the provider skipped teardown or the deprovision job finished (succeeded, or failed without
/// blocking deletion). A rate limit, even with a zero retry-after, never allows removal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeprovisionOutcome {
    /// When to come back ([`Outcome::Done`] exactly when the finalizer may be removed).
    pub outcome: Outcome,
    /// Whether the finalizer may be removed.
    pub finalizer: FinalizerDecision,
    /// What was done.
    pub step: DeprovisionStep,
    /// The status flush after a launch.
    pub flush: FlushReport,
    /// True when the job history was changed in this call and must be persisted.
    pub history_changed: bool,
}

impl DeprovisionOutcome {
    pub(crate) fn keep(step: DeprovisionStep, after: Duration) -> Self {
        Self {
            outcome: Outcome::RequeueAfter(after),
            finalizer: FinalizerDecision::Keep,
            step,
            flush: FlushReport::NotNeeded,
            history_changed: false,
        }
    }

    pub(crate) fn remove(step: DeprovisionStep) -> Self {
        Self {
            outcome: Outcome::Done,
            finalizer: FinalizerDecision::Remove,
            step,
            flush: FlushReport::NotNeeded,
            history_changed: false,
        }
    }

    /// True when the controller may remove its finalizer.
    pub fn may_remove_finalizer(&self) -> bool {
        self.finalizer == FinalizerDecision::Remove
    }

    /// The requeue delay, `None` when done.
    pub fn requeue_after(&self) -> Option<Duration> {
        self.outcome.requeue_after()
    }
}

#[cfg(feature = "kube")]
mod kube_conversions {
    use kube::runtime::controller::Action;

    use super::{DeprovisionOutcome, Outcome, ProvisionOutcome};

    impl From<Outcome> for Action {
        fn from(outcome: Outcome) -> Self {
            match outcome {
                Outcome::Done => Action::await_change(),
                Outcome::RequeueAfter(d) => Action::requeue(d),
            }
        }
    }

    impl From<&ProvisionOutcome> for Action {
        fn from(outcome: &ProvisionOutcome) -> Self {
            outcome.outcome.into()
        }
    }

    impl From<ProvisionOutcome> for Action {
        fn from(outcome: ProvisionOutcome) -> Self {
            outcome.outcome.into()
        }
    }

    impl From<&DeprovisionOutcome> for Action {
        fn from(outcome: &DeprovisionOutcome) -> Self {
            outcome.outcome.into()
        }
    }

    impl From<DeprovisionOutcome> for Action {
        fn from(outcome: DeprovisionOutcome) -> Self {
            outcome.outcome.into()
        }
    }
}

#[cfg(all(test, feature = "kube"))]
mod kube_tests {
    use std::time::Duration;

    use kube::runtime::controller::Action;

    use super::{DeprovisionOutcome, DeprovisionStep, Outcome};

    #[test]
    fn outcomes_convert_to_kube_actions() {
        assert_eq!(Action::from(Outcome::Done), Action::await_change());
        let d = Duration::from_secs(90);
        assert_eq!(Action::from(Outcome::RequeueAfter(d)), Action::requeue(d));
        let keep = DeprovisionOutcome::keep(DeprovisionStep::Waiting, d);
        assert_eq!(Action::from(&keep), Action::requeue(d));
        let remove = DeprovisionOutcome::remove(DeprovisionStep::Skipped);
        assert_eq!(Action::from(remove), Action::await_change());
    }
}
