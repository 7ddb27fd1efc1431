//! The reconcile helper's error, which also carries "keep the finalizer, come back in d", and
//! the matching [`error_policy`].

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::runtime::finalizer;

use crate::flush::StatusWriteError;

/// The requeue delay [`error_policy`] uses for errors that carry none (30 s, the default poll
/// interval).
pub const DEFAULT_ERROR_REQUEUE: Duration = Duration::from_secs(30);

/// An error of [`Provisioner::reconcile`](crate::Provisioner::reconcile).
///
/// kube-runtime's [`finalizer`](kube::runtime::finalizer()) removes the finalizer whenever the
/// cleanup returns `Ok`. "Deprovisioning is not finished, keep the finalizer and come back in
/// d" therefore travels as [`ReconcileError::KeepFinalizer`], an error that carries its delay;
/// [`error_policy`] turns it into `Action::requeue(d)`. The job history (with a new
/// deprovision job, if one was launched) has already been written when it is returned —
/// except after a stale-cache requeue (step `StaleCache`), where the API server already holds
/// a newer history than the cached copy and nothing is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// Deprovisioning is in progress (or blocked by a failed job); the finalizer stays.
    #[error(
        "deprovisioning of {object} not finished ({step}); keeping the finalizer, retry in {requeue_after:?}"
    )]
    KeepFinalizer {
        /// `namespace/name`.
        object: String,
        /// When to look again.
        requeue_after: Duration,
        /// What the deprovisioning step was, for logs.
        step: String,
    },
    /// The lifecycle engine failed (a launch failed; nothing was recorded).
    #[error("provisioning lifecycle of {object} failed")]
    Lifecycle {
        /// `namespace/name`.
        object: String,
        /// The engine error.
        #[source]
        source: provkit_lifecycle::LifecycleError,
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
    /// Adding or removing the finalizer failed (kube-runtime's finalizer helper).
    #[error("finalizer handling failed")]
    Finalizer(#[source] Box<finalizer::Error<ReconcileError>>),
}

impl ReconcileError {
    /// The delay this error asks for, if it carries one.
    #[must_use]
    pub fn requeue_after(&self) -> Option<Duration> {
        match self {
            Self::KeepFinalizer { requeue_after, .. } => Some(*requeue_after),
            Self::Finalizer(inner) => match inner.as_ref() {
                finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => {
                    e.requeue_after()
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// True for [`ReconcileError::KeepFinalizer`]: not a failure, a "not yet".
    #[must_use]
    pub fn is_keep_finalizer(&self) -> bool {
        matches!(self, Self::KeepFinalizer { .. })
    }

    /// Unwraps kube-runtime's finalizer error: the Apply / Cleanup errors are ours already.
    pub(crate) fn from_finalizer(e: finalizer::Error<Self>) -> Self {
        match e {
            finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => inner,
            other => Self::Finalizer(Box::new(other)),
        }
    }
}

/// The delay for `error`: its own for [`ReconcileError::KeepFinalizer`], `fallback` otherwise.
///
/// ```
/// use std::time::Duration;
/// use kube::runtime::controller::Action;
/// use provkit_kube::{error_action, ReconcileError};
///
/// let keep = ReconcileError::KeepFinalizer {
///     object: "ns/a".into(), requeue_after: Duration::from_secs(120), step: "backing off".into(),
/// };
/// assert_eq!(error_action(&keep, Duration::from_secs(5)), Action::requeue(Duration::from_secs(120)));
/// ```
#[must_use]
pub fn error_action(error: &ReconcileError, fallback: Duration) -> Action {
    Action::requeue(error.requeue_after().unwrap_or(fallback))
}

/// A ready-made `error_policy` for `Controller::run`: honours the delay of
/// [`ReconcileError::KeepFinalizer`] (logged at debug: it is expected), and requeues other
/// errors after [`DEFAULT_ERROR_REQUEUE`] (logged as a warning).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use futures::StreamExt;
/// # use kube::runtime::{Controller, controller::Action, watcher};
/// # async fn demo(api: kube::Api<k8s_openapi::api::core::v1::ConfigMap>) {
/// # async fn reconcile(_: Arc<k8s_openapi::api::core::v1::ConfigMap>, _: Arc<()>) -> Result<Action, provkit_kube::ReconcileError> { Ok(Action::await_change()) }
/// Controller::new(api, watcher::Config::default())
///     .run(reconcile, provkit_kube::error_policy, Arc::new(()))
///     .for_each(|_| async {})
///     .await;
/// # }
/// ```
pub fn error_policy<K, C>(_obj: Arc<K>, error: &ReconcileError, _ctx: Arc<C>) -> Action {
    if error.is_keep_finalizer() {
        tracing::debug!(%error, "keeping finalizer");
    } else {
        tracing::warn!(error = %error, "reconcile failed");
    }
    error_action(error, DEFAULT_ERROR_REQUEUE)
}
