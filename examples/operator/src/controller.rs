//! The controller wiring: `Controller` + [`provkit_kube::Provisioner`].

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::controller::Action;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client};
use provkit_core::Clock;
use provkit_kube::{EventPublisher, Provisioner, ReconcileError};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy, ProvisioningProvider};

use crate::callbacks::VirtualNetworkCallbacks;
use crate::crd::VirtualNetwork;

/// The finalizer the operator puts on every `VirtualNetwork` (Go:
/// `osac.openshift.io/<kind>-finalizer`).
pub const FINALIZER: &str = "osac.openshift.io/virtualnetwork-finalizer";

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
    /// `provkit-example-operator` (instance `identity`).
    pub fn new(
        client: Client,
        provider: Arc<dyn ProvisioningProvider>,
        policy: LifecyclePolicy,
        clock: Arc<dyn Clock>,
        identity: &str,
    ) -> Self {
        let lifecycle = Lifecycle::new(provider, clock.clone()).with_policy(policy);
        let reporter = Reporter {
            controller: "provkit-example-operator".into(),
            instance: Some(identity.into()),
        };
        let provisioner = Provisioner::new(client.clone(), lifecycle, FINALIZER)
            .with_events(EventPublisher::new(Recorder::new(client, reporter)));
        Self {
            provisioner,
            callbacks: VirtualNetworkCallbacks::new(clock),
        }
    }
}

/// The reconcile function handed to `Controller::run`.
///
/// # Errors
/// [`ReconcileError`]; `KeepFinalizer` carries the requeue delay of an unfinished deletion.
pub async fn reconcile(
    obj: Arc<VirtualNetwork>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &ctx.callbacks).await
}

/// The error policy: honours `KeepFinalizer`'s delay, 30 s for other errors.
pub fn error_policy(obj: Arc<VirtualNetwork>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    provkit_kube::error_policy(obj, error, ctx)
}

/// Runs the controller over `api` until `shutdown` resolves (or SIGTERM/Ctrl-C).
pub async fn run(
    api: Api<VirtualNetwork>,
    ctx: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((obj, action)) => tracing::debug!(object = %obj, ?action, "reconciled"),
                Err(error) => tracing::debug!(%error, "reconcile error"),
            }
        })
        .await;
}
