//! The controller wiring: `Controller` + [`provkit_kube::Provisioner`].

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::controller::Action;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client};
use provkit_core::Clock;
use provkit_kube::{ErrorChain, EventPublisher, Provisioner, ReconcileError};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy, ProvisioningProvider};

use crate::callbacks::VirtualNetworkCallbacks;
use crate::crd::VirtualNetwork;

/// The finalizer the operator puts on every `VirtualNetwork` (Go:
/// `osac.openshift.io/<kind>-finalizer`).
pub const FINALIZER: &str = "osac.openshift.io/virtualnetwork-finalizer";

/// The controller name: Events' `reportingController`, the default field manager and
/// User-Agent, the default Lease name.
pub const CONTROLLER_NAME: &str = "provkit-example-operator";

/// What `reconcile` needs.
#[derive(Debug)]
pub struct Context {
    /// The provkit reconcile helper.
    pub provisioner: Provisioner<VirtualNetwork>,
    /// Phase and condition callbacks.
    pub callbacks: VirtualNetworkCallbacks,
}

impl Context {
    /// Wires `provider` with the given policy and clock; Events are published as
    /// [`CONTROLLER_NAME`] (instance `identity`), status patches carry `field_manager`.
    /// Build `client` with [`provkit_kube::user_agent()`] so kube-runtime's finalizer and
    /// Event writes are attributed too.
    pub fn new(
        client: Client,
        provider: Arc<dyn ProvisioningProvider>,
        policy: LifecyclePolicy,
        clock: Arc<dyn Clock>,
        identity: &str,
        field_manager: &str,
    ) -> Self {
        let lifecycle = Lifecycle::new(provider, clock.clone()).with_policy(policy);
        let reporter = Reporter {
            controller: CONTROLLER_NAME.into(),
            instance: Some(identity.into()),
        };
        let provisioner = Provisioner::new(client.clone(), lifecycle, FINALIZER)
            .with_field_manager(field_manager)
            .with_events(EventPublisher::new(Recorder::new(client, reporter)));
        Self {
            provisioner,
            callbacks: VirtualNetworkCallbacks::new(clock),
        }
    }
}

/// The reconcile function handed to `Controller::run`.
///
/// An unfinished deletion is `Ok(Action::requeue(d))`.
///
/// # Errors
/// [`ReconcileError`], for failures only.
pub async fn reconcile(
    obj: Arc<VirtualNetwork>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &ctx.callbacks).await
}

/// The error policy: logs the error with its cause chain, requeues after 30 s.
pub fn error_policy(obj: Arc<VirtualNetwork>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    provkit_kube::error_policy(obj, error, ctx)
}

/// Runs the controller over `api` until `shutdown` resolves; in-flight reconciles finish
/// first (graceful shutdown). Dropping the returned future cancels them instead.
pub async fn run(
    api: Api<VirtualNetwork>,
    ctx: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((obj, action)) => tracing::debug!(object = %obj, ?action, "reconciled"),
                // The error policy already logged reconcile failures; these are the
                // controller's own (watch, queue) errors.
                Err(error) => tracing::debug!(error = %ErrorChain(&error), "controller error"),
            }
        })
        .await;
}
