//! The free [`error_policy`] for kube-runtime's `Controller::run`: the per-object error
//! backoff of the [`Provisioner`] in the controller's context.

use std::sync::Arc;

use kube::runtime::controller::Action;

#[cfg(doc)]
use crate::backoff::ErrorBackoffConfig;
use crate::error::ReconcileError;
#[cfg(doc)]
use crate::error_chain::ErrorChain;
use crate::reconcile::Provisioner;
use crate::resource::ProvisionedResource;

/// The `error_policy` for `Controller::run`: logs the error with its whole cause chain
/// ([`ErrorChain`]: the API server's code, reason and message) as a warning, and requeues the
/// object after its next per-object backoff step ([`ErrorBackoffConfig`]: 1 s doubling to
/// 5 min, with jitter, by default; [`Provisioner::with_error_backoff`] changes it). A
/// successful reconcile resets the object's backoff.
///
/// The context is anything that lends a [`Provisioner`]: the `Provisioner` itself, or your
/// own context type with `impl AsRef<Provisioner<K>>`.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use futures::StreamExt;
/// # use kube::runtime::{Controller, controller::Action, watcher};
/// # use provkit_kube::{ProvisionedResource, Provisioner, ReconcileError};
/// # async fn reconcile<K: ProvisionedResource>(_: Arc<K>, _: Arc<Provisioner<K>>) -> Result<Action, ReconcileError> { Ok(Action::await_change()) }
/// async fn run<K: ProvisionedResource>(api: kube::Api<K>, provisioner: Provisioner<K>) {
///     Controller::new(api, watcher::Config::default())
///         .run(reconcile, provkit_kube::error_policy, Arc::new(provisioner))
///         .for_each(|_| async {})
///         .await;
/// }
/// ```
#[allow(clippy::needless_pass_by_value)] // kube-runtime's error-policy signature
pub fn error_policy<K, C>(obj: Arc<K>, error: &ReconcileError, ctx: Arc<C>) -> Action
where
    K: ProvisionedResource,
    C: AsRef<Provisioner<K>>,
{
    (*ctx).as_ref().error_policy(obj.as_ref(), error)
}
