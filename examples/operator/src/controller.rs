//! The controller wiring: `Controller` + [`provkit_kube::Provisioner`].

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client};
use prometheus_client::registry::Registry;
use provkit_core::Clock;
use provkit_kube::metrics::KubeMetrics;
use provkit_kube::{ErrorChain, EventPublisher, Provisioner, ReconcileError};
use provkit_lifecycle::metrics::LifecycleMetrics;
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
        Self::build(
            client,
            provider,
            policy,
            clock,
            identity,
            field_manager,
            None,
        )
    }

    /// As [`new`](Self::new), recording provkit's metrics (reconciles, launches, polls, status
    /// writes, finalizer holds) in `registry`, which [`crate::metrics_server`] serves.
    pub fn with_metrics(
        client: Client,
        provider: Arc<dyn ProvisioningProvider>,
        policy: LifecyclePolicy,
        clock: Arc<dyn Clock>,
        identity: &str,
        field_manager: &str,
        registry: &mut Registry,
    ) -> Self {
        Self::build(
            client,
            provider,
            policy,
            clock,
            identity,
            field_manager,
            Some(registry),
        )
    }

    fn build(
        client: Client,
        provider: Arc<dyn ProvisioningProvider>,
        policy: LifecyclePolicy,
        clock: Arc<dyn Clock>,
        identity: &str,
        field_manager: &str,
        registry: Option<&mut Registry>,
    ) -> Self {
        let mut lifecycle = Lifecycle::new(provider, clock.clone()).with_policy(policy);
        let reporter = Reporter {
            controller: CONTROLLER_NAME.into(),
            instance: Some(identity.into()),
        };
        let mut provisioner_metrics = None;
        if let Some(registry) = registry {
            lifecycle = lifecycle.with_metrics(LifecycleMetrics::register(registry));
            provisioner_metrics = Some(KubeMetrics::register(registry));
        }
        let mut provisioner = Provisioner::new(client.clone(), lifecycle, FINALIZER)
            .with_field_manager(field_manager)
            .with_events(EventPublisher::new(client, reporter));
        if let Some(metrics) = provisioner_metrics {
            provisioner = provisioner.with_metrics(metrics);
        }
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

impl AsRef<Provisioner<VirtualNetwork>> for Context {
    fn as_ref(&self) -> &Provisioner<VirtualNetwork> {
        &self.provisioner
    }
}

/// The error policy: logs the error with its cause chain and requeues after the object's
/// next per-object backoff step (1 s doubling to 5 min, with jitter).
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

/// As [`run`], with push wake-ups: while running (call it only while leading) subscribes to
/// `aap`'s job status websocket, when given, and wakes an object as soon as its job ends
/// (`wakeups` must be the one `ctx`'s provisioner was built [`with_push`](Provisioner::with_push)
/// with; the webhook receiver feeds it too). The controller is provkit-kube's
/// `WakeupController`, on kube-runtime's stable `applier`.
pub async fn run_with_push(
    api: Api<VirtualNetwork>,
    ctx: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    aap: Option<provkit_aap::AapClient>,
    wakeups: provkit_kube::push::PushWakeups,
) {
    let signals = match &aap {
        Some(aap) => aap.job_status_stream().signals().boxed(),
        None => futures::stream::pending().boxed(),
    };
    let controller = provkit_kube::push::WakeupController::new(
        api,
        watcher::Config::default(),
        wakeups.triggers(),
    )
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, ctx)
    .for_each(|result| async move {
        match result {
            Ok((obj, action)) => tracing::debug!(object = %obj, ?action, "reconciled"),
            Err(error) => tracing::debug!(error = %ErrorChain(&error), "controller error"),
        }
    });
    tokio::select! {
        () = controller => {}
        () = wakeups.run(signals) => {}
    }
}
