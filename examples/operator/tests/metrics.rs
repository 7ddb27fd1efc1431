//! The example operator's `/metrics` and `/healthz` over loopback HTTP, on the fake API server
//! and the fake AAP: after a scripted lifecycle (create → Ready → delete → gone) the scraped
//! values match what the fakes saw; during an injected AAP outage the scraped circuit breaker is
//! open and refuses requests without sending them, and after it the breaker closes and the
//! object gets Ready with one job launched.
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use kube::api::{DeleteParams, PostParams};
use prometheus_client::registry::Registry;
use provkit_aap::{AapProvider, CircuitBreakerConfig, RetryConfig};
use provkit_core::{JobStatus, JobType};
use provkit_example_operator::crd::Phase;
use provkit_example_operator::metrics_server;
use provkit_lifecycle::{
    DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext, ProviderError,
    ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceView,
};
use provkit_testing::fake_aap::{Endpoint, FakeAap, Fault, FaultAction, JobScript, RetryAfter};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;
use common::{eventually, phase, run_operator_with, virtual_network};

/// The AAP provider, counting the engine's status polls (the independent count the poll
/// histogram is checked against: the provider also reads jobs for other reasons).
#[derive(Debug)]
struct CountingPolls {
    inner: AapProvider,
    provision_polls: AtomicUsize,
    deprovision_polls: AtomicUsize,
}

impl CountingPolls {
    fn new(inner: AapProvider) -> Self {
        Self {
            inner,
            provision_polls: AtomicUsize::new(0),
            deprovision_polls: AtomicUsize::new(0),
        }
    }
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

/// Serves `registry` on `/metrics` and `/healthz` over loopback; returns the address.
async fn serve_metrics(registry: Registry) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(metrics_server::serve(
        listener,
        Arc::new(registry),
        std::future::pending(),
    ));
    addr
}

/// One HTTP/1.1 GET over a fresh loopback connection: (status line, body).
async fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// `GET /metrics`, which must answer 200.
async fn scrape(addr: SocketAddr) -> String {
    let (status, text) = get(addr, "/metrics").await;
    assert!(status.contains(" 200 "), "{status}");
    text
}

/// The value of the sample `name` (with its labels, as exposed) in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// The sum of the samples of metric `name` whose labels include each of `labels`
/// (`key="value"`); 0 when there are none.
fn sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (set, value) = match rest.strip_prefix('{') {
                Some(rest) => rest.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            let set: Vec<&str> = set.split(',').collect();
            labels
                .iter()
                .all(|want| set.contains(want))
                .then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// The circuit breaker state the scrape reports (the `state` whose gauge is 1).
fn breaker_state(text: &str) -> &'static str {
    let states = ["closed", "open", "half_open"];
    let current: Vec<&str> = states
        .into_iter()
        .filter(|state| {
            sample(
                text,
                &format!(r#"provkit_aap_circuit_breaker_state{{state="{state}"}}"#),
            ) == Some(1.0)
        })
        .collect();
    assert_eq!(current.len(), 1, "exactly one state is current: {text}");
    current[0]
}

/// How often the breaker entered `state`.
fn transitions(text: &str, state: &str) -> f64 {
    sum(
        text,
        "provkit_aap_circuit_breaker_transitions_total",
        &[&format!(r#"state="{state}""#)],
    )
}

/// AAP request attempts the client counted with this `status` label.
fn aap_requests(text: &str, status: &str) -> f64 {
    sum(
        text,
        "provkit_aap_requests_total",
        &[&format!(r#"status="{status}""#)],
    )
}

/// Made launches of `job_type` the engine counted.
fn made(text: &str, job_type: &str) -> Option<f64> {
    sample(
        text,
        &format!(r#"provkit_launches_total{{job_type="{job_type}",result="made"}}"#),
    )
}

/// Jobs the fake AAP holds of the template `name`.
fn jobs_of(aap: &FakeAap, name: &str) -> f64 {
    aap.jobs().iter().filter(|j| j.name == name).count() as f64
}

/// One poll-histogram sample per engine poll of each job type (counted by `CountingPolls`).
fn assert_one_poll_sample_per_poll(text: &str, provider: &CountingPolls) {
    for (job_type, polls) in [
        ("provision", &provider.provision_polls),
        ("deprovision", &provider.deprovision_polls),
    ] {
        let polls = polls.load(Ordering::SeqCst) as f64;
        assert_eq!(
            sample(
                text,
                &format!(r#"provkit_poll_duration_seconds_count{{job_type="{job_type}"}}"#)
            )
            .unwrap_or(0.0),
            polls,
            "one poll-histogram sample per poll of the {job_type} job: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_a_lifecycle_match_what_the_fakes_saw() {
    let mut registry = Registry::default();
    let op = run_operator_with(
        JobScript::successful(Duration::from_secs(10)),
        |client| client,
        CountingPolls::new,
        Some(&mut registry),
    )
    .await;
    let addr = serve_metrics(registry).await;

    let (status, body) = get(addr, "/healthz").await;
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, "ok");

    let api = &op.api;
    api.create(&PostParams::default(), &virtual_network("net-a"))
        .await
        .unwrap();
    eventually("create job", || async { op.aap.aap().jobs().len() == 1 }).await;
    op.clock.advance(Duration::from_secs(60));
    eventually("Ready", || async {
        phase(&api.get("net-a").await.unwrap()) == Some(Phase::Ready)
    })
    .await;
    api.delete("net-a", &DeleteParams::default()).await.unwrap();
    eventually("delete job", || async { op.aap.aap().jobs().len() == 2 }).await;
    op.clock.advance(Duration::from_secs(60));
    eventually("gone", || async {
        matches!(api.get("net-a").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    let _ = op.stop.send(());
    op.run.await.unwrap();

    let text = scrape(addr).await;
    assert_eq!(made(&text, "provision"), Some(1.0), "{text}");
    assert_eq!(made(&text, "deprovision"), Some(1.0), "{text}");
    assert_eq!(jobs_of(op.aap.aap(), "osac-create-virtual-network"), 1.0);
    assert_eq!(jobs_of(op.aap.aap(), "osac-delete-virtual-network"), 1.0);
    assert!(op.provider.provision_polls.load(Ordering::SeqCst) >= 1);
    assert!(op.provider.deprovision_polls.load(Ordering::SeqCst) >= 1);
    assert_one_poll_sample_per_poll(&text, &op.provider);
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
        op.server
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
    // The AAP client's metrics, served by the same registry: every attempt it counted reached
    // the fake AAP, and the two launches are the fake's two launch requests.
    let counters = op.aap.aap().counters();
    assert_eq!(
        sum(&text, "provkit_aap_requests_total", &[]),
        counters.total() as f64,
        "{text}"
    );
    assert_eq!(
        sum(
            &text,
            "provkit_aap_requests_total",
            &[
                r#"endpoint="launch""#,
                r#"method="POST""#,
                r#"status="201""#
            ]
        ),
        counters.endpoint(Endpoint::Launch) as f64,
        "{text}"
    );
    assert_eq!(counters.endpoint(Endpoint::Launch), 2);
    assert_eq!(breaker_state(&text), "closed");
}

/// Failed attempts in a row that open the outage test's circuit breaker.
const THRESHOLD: u32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_circuit_breaker_is_scraped_open_during_an_aap_outage_and_closed_after_it() {
    let mut registry = Registry::default();
    // A short cool-down so the test is quick; a probe that never answers would hold its slot
    // (no second probe in flight, so every request AAP sees after the circuit opened is a probe).
    let breaker = CircuitBreakerConfig::default()
        .failure_threshold(THRESHOLD)
        .cool_down(Duration::from_millis(300))
        .probe_interval(Duration::from_secs(600));
    let retry = RetryConfig::default()
        .initial_backoff(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(100));
    let op = run_operator_with(
        JobScript::successful(Duration::from_secs(10)),
        |client| client.circuit_breaker(breaker).retry(retry),
        CountingPolls::new,
        Some(&mut registry),
    )
    .await;
    let addr = serve_metrics(registry).await;
    let aap = op.aap.aap();
    let api = &op.api;

    // Created; the job runs (10 s of the manual clock) and the operator polls it.
    api.create(&PostParams::default(), &virtual_network("net-o"))
        .await
        .unwrap();
    eventually("create job", || async { aap.jobs().len() == 1 }).await;
    eventually("the job polled", || async {
        op.provider.provision_polls.load(Ordering::SeqCst) >= 1
    })
    .await;
    assert_eq!(breaker_state(&scrape(addr).await), "closed");

    // Outage, part 1: AAP resets every connection. The polls trip the breaker; from then on
    // requests fail fast, and a probe after each cool-down finds AAP still down.
    let reset = aap.add_fault(Fault::any_method("*", FaultAction::ConnectionReset));
    eventually("the breaker open, after a failed probe", || async {
        let text = scrape(addr).await;
        breaker_state(&text) == "open" && transitions(&text, "open") >= 2.0
    })
    .await;
    // Part 2: AAP answers 503 with `Retry-After` (the new fault goes in before the old one goes
    // out, so no request slips through in between).
    let unavailable = aap.add_fault(Fault::any_method(
        "*",
        FaultAction::service_unavailable(RetryAfter::Seconds(1)),
    ));
    aap.remove_fault(reset);
    eventually("a probe answered 503, the breaker open again", || async {
        aap.counters().status_class(5) >= 1 && breaker_state(&scrape(addr).await) == "open"
    })
    .await;
    let text = scrape(addr).await;
    assert!(
        sum(&text, "provkit_aap_circuit_rejections_total", &[]) >= 1.0,
        "requests were refused while the circuit was open: {text}"
    );
    assert!(
        phase(&api.get("net-o").await.unwrap()) != Some(Phase::Ready),
        "not Ready during the outage"
    );

    // Recovery: the next probe succeeds and closes the circuit; the job finishes; Ready.
    aap.remove_fault(unavailable);
    eventually("the breaker closed", || async {
        breaker_state(&scrape(addr).await) == "closed"
    })
    .await;
    op.clock.advance(Duration::from_secs(60));
    eventually("Ready", || async {
        phase(&api.get("net-o").await.unwrap()) == Some(Phase::Ready)
    })
    .await;
    let _ = op.stop.send(());
    op.run.await.unwrap();

    let text = scrape(addr).await;
    let counters = aap.counters();
    let (resets, answered_503) = (counters.resets() as f64, counters.status_class(5) as f64);
    assert!(
        resets >= f64::from(THRESHOLD) + 1.0,
        "tripped, then a failed probe"
    );
    assert!(answered_503 >= 1.0);
    // What the client counted as sent is exactly what AAP saw: the refused requests never left.
    assert_eq!(
        aap_requests(&text, "transport_error") + aap_requests(&text, "connect_error"),
        resets,
        "{text}"
    );
    assert_eq!(aap_requests(&text, "503"), answered_503, "{text}");
    assert_eq!(
        sum(&text, "provkit_aap_rate_limited_total", &[]),
        answered_503,
        "a 503 with Retry-After is a rate limit: {text}"
    );
    assert_eq!(
        sum(&text, "provkit_aap_requests_total", &[]),
        counters.total() as f64,
        "{text}"
    );
    // The first THRESHOLD failures opened the circuit; every later failed request AAP saw was a
    // probe (one half-open transition each, each reopening the circuit), and one probe closed it.
    let failed_probes = resets + answered_503 - f64::from(THRESHOLD);
    eprintln!(
        "outage: {resets} connections reset, {answered_503} answered 503, {failed_probes} failed \
         probes, {} requests refused by the open circuit",
        sum(&text, "provkit_aap_circuit_rejections_total", &[])
    );
    assert_eq!(
        transitions(&text, "half_open"),
        failed_probes + 1.0,
        "{text}"
    );
    assert_eq!(transitions(&text, "open"), failed_probes + 1.0, "{text}");
    assert_eq!(transitions(&text, "closed"), 1.0, "{text}");
    assert_eq!(breaker_state(&text), "closed");
    // No duplicate launch across the outage: one job, one launch request, one made launch.
    assert_eq!(aap.jobs().len(), 1);
    assert_eq!(counters.endpoint(Endpoint::Launch), 1);
    assert_eq!(made(&text, "provision"), Some(1.0), "{text}");
    assert_eq!(
        sum(&text, "provkit_launches_total", &[]),
        1.0,
        "no other launch outcome: {text}"
    );
    assert_one_poll_sample_per_poll(&text, &op.provider);
}
