//! What the loop tests in this directory share: the example operator's whole loop
//! (`controller::run`: kube-runtime `Controller` + provkit-kube `Provisioner`) on the
//! provkit-testing fake API server, with the real `AapProvider`/`AapClient` talking to the fake
//! AAP over loopback, and a wait that polls until a condition holds.
// Each test binary compiles this module and uses a different part of it.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use kube::Api;
use prometheus_client::registry::Registry;
use provkit_aap::metrics::AapMetrics;
use provkit_aap::{AapClient, AapClientBuilder, AapProvider};
use provkit_core::{Clock, ManualClock};
use provkit_example_operator::controller::{self, Context};
use provkit_example_operator::crd::{Phase, VirtualNetwork, VirtualNetworkSpec};
use provkit_lifecycle::{LifecyclePolicy, ProvisioningProvider};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;

/// Polls until `check` holds; fails after 30 s (a hang, not a timing claim).
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The object's phase.
pub fn phase(v: &VirtualNetwork) -> Option<Phase> {
    v.status.as_ref().and_then(|s| s.phase)
}

/// A `VirtualNetwork` named `name` with a /24.
pub fn virtual_network(name: &str) -> VirtualNetwork {
    VirtualNetwork::new(
        name,
        VirtualNetworkSpec {
            cidr: "10.0.0.0/24".into(),
            region: None,
        },
    )
}

/// The example operator's whole loop on the fake API server, with the fake AAP over loopback.
pub struct Running<P> {
    /// The clock of the fakes and the engine (jobs run in it; the breaker does not).
    pub clock: ManualClock,
    pub aap: FakeAapServer,
    pub server: FakeApiServer,
    /// What the operator's `Context` calls.
    pub provider: Arc<P>,
    /// `tenant-1`, as user `user`.
    pub api: Api<VirtualNetwork>,
    pub stop: tokio::sync::oneshot::Sender<()>,
    pub run: tokio::task::JoinHandle<()>,
}

/// [`run_operator_with`] with the client's defaults, the plain provider and no metrics.
pub async fn run_operator(create_script: JobScript) -> Running<AapProvider> {
    run_operator_with(create_script, |client| client, |provider| provider, None).await
}

/// Starts the fake AAP (the create template runs `create_script`, the delete template succeeds
/// after 10 s), the fake API server and `controller::run`. The AAP client is
/// `configure(builder)`; the provider handed to the operator is `wrap(AapProvider)`. With a
/// `registry`, the operator records provkit's metrics and the AAP client's (`AapMetrics`) in it,
/// as the binary does.
pub async fn run_operator_with<P>(
    create_script: JobScript,
    configure: impl FnOnce(AapClientBuilder) -> AapClientBuilder,
    wrap: impl FnOnce(AapProvider) -> P,
    registry: Option<&mut Registry>,
) -> Running<P>
where
    P: ProvisioningProvider + 'static,
{
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let template = |name: &str, script: JobScript| JobTemplateSpec {
        script: Some(script),
        ..JobTemplateSpec::new(name, "osac")
    };
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("osac")
        .job_template(template("osac-create-virtual-network", create_script))
        .job_template(template(
            "osac-delete-virtual-network",
            JobScript::successful(Duration::from_secs(10)),
        ))
        .start()
        .await
        .unwrap();
    let mut client = AapClient::builder(aap.base_url()).token(aap.token());
    let mut registry = registry;
    if let Some(registry) = registry.as_deref_mut() {
        client = client.metrics(AapMetrics::register(registry));
    }
    let provider = Arc::new(wrap(
        AapProvider::builder(configure(client).build().unwrap())
            .template_prefix("osac")
            .clock(dyn_clock.clone())
            .build(),
    ));
    let server = FakeApiServer::builder()
        .crd::<VirtualNetwork>()
        .namespace("tenant-1")
        .clock(dyn_clock.clone())
        .build();
    let operator = server.client_with_user_agent("provkit-example-operator/0.1");
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(100));
    policy.min_requeue = Duration::from_millis(10);
    let (identity, field_manager) = ("test-0", controller::CONTROLLER_NAME);
    let ctx = Arc::new(match registry {
        Some(registry) => Context::with_metrics(
            operator.clone(),
            provider.clone(),
            policy,
            dyn_clock,
            identity,
            field_manager,
            registry,
        ),
        None => Context::new(
            operator.clone(),
            provider.clone(),
            policy,
            dyn_clock,
            identity,
            field_manager,
        ),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(controller::run(Api::all(operator), ctx, async {
        let _ = stopped.await;
    }));
    let api: Api<VirtualNetwork> = Api::namespaced(server.client_named("user"), "tenant-1");
    Running {
        clock,
        aap,
        server,
        provider,
        api,
        stop,
        run,
    }
}
