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
