//! The reconcile helper's error ([`error_policy`](crate::error_policy()) requeues it).

use kube::runtime::controller::Action;
use kube::runtime::finalizer;

use crate::flush::StatusWriteError;

/// A failure of [`Provisioner::reconcile`](crate::Provisioner::reconcile).
///
/// Only failures: an unfinished deletion ("keep the finalizer, come back in d") is
/// `Ok(Action::requeue(d))`, so an error policy (and kube-runtime's error metrics) see
/// nothing but real failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The lifecycle engine failed (a launch failed; nothing was recorded).
    #[error("provisioning lifecycle of {object} failed")]
    Lifecycle {
        /// `namespace/name`.
        object: String,
        /// The engine error.
        #[source]
        source: provkit_lifecycle::LifecycleError,
    },
    /// One or more targets of a multi-target resource failed
    /// ([`MultiTargetProvisioner`](crate::MultiTargetProvisioner)); the others ran, and what they
    /// recorded was written.
    #[error("job targets of {object} failed")]
    Targets {
        /// `namespace/name`.
        object: String,
        /// Every failed target's error.
        #[source]
        source: provkit_lifecycle::MultiTargetError,
    },
    /// The desired config version could not be computed.
    #[error("computing the config version of {object} failed")]
    ConfigVersion {
        /// `namespace/name`.
        object: String,
        /// The hashing error.
        #[source]
        source: provkit_core::ConfigVersionError,
    },
    /// The object could not be serialised for the provider.
    #[error("serialising {object} failed")]
    Serialize {
        /// `namespace/name`.
        object: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// Writing the status failed.
    #[error("writing the status of {object} failed")]
    Status {
        /// `namespace/name`.
        object: String,
        /// The write error.
        #[source]
        source: StatusWriteError,
    },
    /// Adding the finalizer failed (kube-runtime's finalizer helper).
    #[error("adding the finalizer to {object} failed")]
    AddFinalizer {
        /// `namespace/name`.
        object: String,
        /// The kube error (the API server's answer).
        #[source]
        source: kube::Error,
    },
    /// Removing the finalizer failed (kube-runtime's finalizer helper).
    #[error("removing the finalizer from {object} failed")]
    RemoveFinalizer {
        /// `namespace/name`.
        object: String,
        /// The kube error (the API server's answer).
        #[source]
        source: kube::Error,
    },
    /// The object has no name, or the finalizer name is not a valid JSON-pointer segment.
    #[error("the finalizer of {object} cannot be patched: {reason}")]
    InvalidFinalizer {
        /// `namespace/name`.
        object: String,
        /// kube-runtime's description.
        reason: String,
    },
}

/// What the finalizer closure returns as its error: a failure, or the "not finished yet" of a
/// deletion (kube-runtime removes the finalizer whenever the cleanup returns `Ok`, so keeping
/// it has to travel as an error until [`ReconcileError::from_finalizer`] turns it back into
/// an `Action`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FinalizerStep {
    #[error("deprovisioning not finished; keeping the finalizer")]
    Keep(Action),
    #[error(transparent)]
    Failed(#[from] ReconcileError),
}

impl ReconcileError {
    /// The wait of a reconcile that failed only because a lookup by idempotency key cannot be
    /// answered yet: every failed step is a [`LifecycleError::IdempotencyLookup`] whose cause
    /// chain carries a [`RetryLater`] (the provider waits for a launch window to close) and
    /// no rate limit. The shortest such wait (a multi-target resource's soonest target), or
    /// `None` when anything else failed.
    ///
    /// [`Provisioner`](crate::Provisioner) and
    /// [`MultiTargetProvisioner`](crate::MultiTargetProvisioner) treat such a reconcile as a
    /// wait, not a failure: it returns `Ok` with a requeue (the object shows `LaunchBlocked`,
    /// reason `IdempotencyLookupDeferred`), publishes no Warning Event, logs no warning and does
    /// not reach the error policy. The requeue is this wait or the object's next error-backoff
    /// step, whichever is longer (the step is taken): lookups deferred together then come back
    /// spread out, after more of their windows have closed, and one shared read of the
    /// provider can answer more of them (as before this method existed).
    ///
    /// [`LifecycleError::IdempotencyLookup`]: provkit_lifecycle::LifecycleError::IdempotencyLookup
    /// [`RetryLater`]: provkit_lifecycle::RetryLater
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_core::JobType;
    /// use provkit_kube::ReconcileError;
    /// use provkit_lifecycle::{IdempotencyKey, LifecycleError, ProviderError, RetryLater};
    ///
    /// let deferred = ReconcileError::Lifecycle {
    ///     object: "default/net-a".into(),
    ///     source: LifecycleError::IdempotencyLookup {
    ///         job_type: JobType::Provision,
    ///         key: IdempotencyKey::new("pk1-uid-net-a-p-00000000000000aa"),
    ///         source: ProviderError::other_with_source(
    ///             "idempotency lookup deferred",
    ///             RetryLater::new("the launch window closes at 12:00:05Z", Duration::from_secs(3)),
    ///         ),
    ///     },
    /// };
    /// assert_eq!(deferred.deferral(), Some(Duration::from_secs(3)));
    ///
    /// let failed = ReconcileError::Lifecycle {
    ///     object: "default/net-a".into(),
    ///     source: LifecycleError::IdempotencyLookup {
    ///         job_type: JobType::Provision,
    ///         key: IdempotencyKey::new("pk1-uid-net-a-p-00000000000000aa"),
    ///         source: ProviderError::other("the job list answered 502"),
    ///     },
    /// };
    /// assert_eq!(failed.deferral(), None);
    /// ```
    #[must_use]
    pub fn deferral(&self) -> Option<std::time::Duration> {
        fn wait(error: &provkit_lifecycle::LifecycleError) -> Option<std::time::Duration> {
            match error {
                provkit_lifecycle::LifecycleError::IdempotencyLookup { .. }
                    if provkit_lifecycle::find_rate_limit(error).is_none() =>
                {
                    provkit_lifecycle::find_retry_later(error)
                }
                _ => None,
            }
        }
        match self {
            Self::Lifecycle { source, .. } => wait(source),
            Self::Targets { source, .. } => source
                .errors()
                .map(|(_, e)| wait(e))
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .min(),
            _ => None,
        }
    }

    /// kube-runtime's finalizer result → the reconcile's: a kept finalizer is its `Action`,
    /// the Apply / Cleanup errors are ours already, the finalizer patches get the object name.
    pub(crate) fn from_finalizer(
        object: &str,
        result: Result<Action, finalizer::Error<FinalizerStep>>,
    ) -> Result<Action, Self> {
        let object = object.to_owned();
        match result {
            Ok(action) => Ok(action),
            Err(finalizer::Error::ApplyFailed(step) | finalizer::Error::CleanupFailed(step)) => {
                match step {
                    FinalizerStep::Keep(action) => Ok(action),
                    FinalizerStep::Failed(e) => Err(e),
                }
            }
            Err(finalizer::Error::AddFinalizer(source)) => {
                Err(Self::AddFinalizer { object, source })
            }
            Err(finalizer::Error::RemoveFinalizer(source)) => {
                Err(Self::RemoveFinalizer { object, source })
            }
            Err(e @ (finalizer::Error::UnnamedObject | finalizer::Error::InvalidFinalizer)) => {
                Err(Self::InvalidFinalizer {
                    object,
                    reason: e.to_string(),
                })
            }
        }
    }
}
