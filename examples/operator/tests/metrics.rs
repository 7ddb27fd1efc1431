//! The example operator's `/metrics` and `/healthz` over loopback HTTP after a scripted
//! lifecycle (create → Ready → delete → gone) on the fake API server and the fake AAP: the
//! scraped values match what the fakes saw.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use prometheus_client::registry::Registry;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, ManualClock};
use provkit_core::{JobStatus, JobType};
use provkit_example_operator::controller::{self, Context};
use provkit_example_operator::crd::{Phase, VirtualNetwork, VirtualNetworkSpec};
use provkit_example_operator::metrics_server;
use provkit_lifecycle::LifecyclePolicy;
use provkit_lifecycle::{
    DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext, ProviderError,
    ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceView,
};
use provkit_testing::fake_aap::{FakeAap, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The AAP provider, counting the engine's status polls (the independent count the poll
/// histogram is checked against: the provider also reads jobs for other reasons).
#[derive(Debug)]
struct CountingPolls {
    inner: AapProvider,
    provision_polls: AtomicUsize,
    deprovision_polls: AtomicUsize,
}

#[provkit_lifecycle::async_trait]
impl ProvisioningProvider for CountingPolls {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        self.inner.trigger_provision(resource, ctx).await
    }
    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.provision_polls.fetch_add(1, Ordering::SeqCst);
        self.inner.provision_status(resource, job_id).await
    }
    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        self.inner.trigger_deprovision(resource, jobs, ctx).await
    }
    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.deprovision_polls.fetch_add(1, Ordering::SeqCst);
        self.inner.deprovision_status(resource, job_id).await
    }
    fn idempotency_support(&self) -> IdempotencySupport {
        self.inner.idempotency_support()
    }
    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.inner
            .find_job_by_idempotency_key(resource, job_type, key)
            .await
    }
    async fn find_job_by_idempotency_key_since(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<chrono::DateTime<Utc>>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.inner
            .find_job_by_idempotency_key_since(resource, job_type, key, since)
            .await
    }
    fn error_status_text(&self, error: &ProviderError, text: String) -> String {
        self.inner.error_status_text(error, text)
    }
}

/// Polls until `check` holds; fails after 30 s (a hang, not a timing claim).
async fn eventually<F, Fut>(what: &str, mut check: F)
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

/// One HTTP/1.1 GET over a fresh loopback connection: (status line, body).
async fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// The value of the sample `name` (with its labels, as exposed) in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_a_lifecycle_match_what_the_fakes_saw() {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let template = |name: &str| JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10))),
        ..JobTemplateSpec::new(name, "osac")
    };
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("osac")
        .job_template(template("osac-create-virtual-network"))
        .job_template(template("osac-delete-virtual-network"))
        .start()
        .await
        .unwrap();
    let provider = Arc::new(CountingPolls {
        inner: AapProvider::builder(
            AapClient::builder(aap.base_url())
                .token(aap.token())
                .build()
                .unwrap(),
        )
        .template_prefix("osac")
        .clock(dyn_clock.clone())
        .build(),
        provision_polls: AtomicUsize::new(0),
        deprovision_polls: AtomicUsize::new(0),
    });
    let server = FakeApiServer::builder()
        .crd::<VirtualNetwork>()
        .namespace("tenant-1")
        .clock(dyn_clock.clone())
        .build();
    let operator = server.client_with_user_agent("provkit-example-operator/0.1");
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(100));
    policy.min_requeue = Duration::from_millis(10);
    let mut registry = Registry::default();
    let ctx = Arc::new(Context::with_metrics(
        operator.clone(),
        provider.clone(),
        policy,
        dyn_clock,
        "test-0",
        controller::CONTROLLER_NAME,
        &mut registry,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(metrics_server::serve(
        listener,
        Arc::new(registry),
        std::future::pending(),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(controller::run(Api::all(operator), ctx, async {
        let _ = stopped.await;
    }));

    let (status, body) = get(addr, "/healthz").await;
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, "ok");

    let api: Api<VirtualNetwork> = Api::namespaced(server.client_named("user"), "tenant-1");
    let vn = VirtualNetwork::new(
        "net-a",
        VirtualNetworkSpec {
            cidr: "10.0.0.0/24".into(),
            region: None,
        },
    );
    api.create(&PostParams::default(), &vn).await.unwrap();
    eventually("create job", || async { aap.aap().jobs().len() == 1 }).await;
    clock.advance(Duration::from_secs(60));
    eventually("Ready", || async {
        api.get("net-a").await.unwrap().status.and_then(|s| s.phase) == Some(Phase::Ready)
    })
    .await;
    api.delete("net-a", &DeleteParams::default()).await.unwrap();
    eventually("delete job", || async { aap.aap().jobs().len() == 2 }).await;
    clock.advance(Duration::from_secs(60));
    eventually("gone", || async {
        matches!(api.get("net-a").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    let _ = stop.send(());
    run.await.unwrap();

    let (status, text) = get(addr, "/metrics").await;
    assert!(status.contains(" 200 "), "{status}");
    let made = |job_type: &str| {
        sample(
            &text,
            &format!(r#"provkit_launches_total{{job_type="{job_type}",result="made"}}"#),
        )
    };
    assert_eq!(made("provision"), Some(1.0), "{text}");
    assert_eq!(made("deprovision"), Some(1.0), "{text}");
    for (job_type, polls) in [
        ("provision", &provider.provision_polls),
        ("deprovision", &provider.deprovision_polls),
    ] {
        let polls = polls.load(Ordering::SeqCst) as f64;
        assert!(polls >= 1.0, "the {job_type} job was polled");
        assert_eq!(
            sample(
                &text,
                &format!(r#"provkit_poll_duration_seconds_count{{job_type="{job_type}"}}"#)
            ),
            Some(polls),
            "one poll-histogram sample per poll of the {job_type} job: {text}"
        );
    }
    let reconciles = sample(&text, r#"provkit_reconciles_total{outcome="ok"}"#).unwrap();
    assert!(reconciles >= 4.0, "{text}");
    assert_eq!(
        sample(&text, "provkit_reconcile_duration_seconds_count"),
        Some(
            reconciles
                + sample(&text, r#"provkit_reconciles_total{outcome="error"}"#).unwrap_or(0.0)
        ),
        "{text}"
    );
    let status_patches = |code: u16| {
        server
            .requests()
            .iter()
            .filter(|r| {
                r.client == "provkit-example-operator"
                    && r.method == "PATCH"
                    && r.path.contains("/status")
                    && r.status == code
            })
            .count() as f64
    };
    assert_eq!(
        sample(&text, "provkit_status_writes_total"),
        Some(status_patches(200)),
        "{text}"
    );
    assert_eq!(
        sample(&text, "provkit_status_conflicts_total"),
        Some(status_patches(409)),
        "{text}"
    );
    assert!(
        sample(&text, "provkit_finalizer_holds_total").unwrap() >= 1.0,
        "the finalizer was held while the delete job ran: {text}"
    );
}
