//! The fleet-wide circuit breaker over loopback: it opens after a run of failures, every clone
//! fails fast without sending anything, one probe tests recovery, and the provider and the engine
//! treat an open circuit like a rate limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use provkit_aap::{
    AapClient, AapProvider, CircuitBreakerConfig, CircuitState, Error, LaunchRequest,
};
use provkit_core::{JobType, SystemClock};
use provkit_lifecycle::{
    IntentStore, LaunchCertainty, LaunchContext, Lifecycle, MemoryIntentStore, ProvisionHooks,
    ProvisionStep, ProvisioningProvider, ResourceMeta, ResourceView,
};
use provkit_testing::fake_aap::{FakeAapServer, Fault, FaultAction, Mode, Trigger};
use provkit_testing::observe::{Phase, Verdict};

use crate::support::{builder, requests_to, server, template_id};

/// Opens after 3 failed attempts, 300 ms cool-down; a lost probe never frees its slot in a test;
/// after a failure a request waits 100 ms for a place.
fn breaker() -> CircuitBreakerConfig {
    CircuitBreakerConfig::default()
        .failure_threshold(3)
        .cool_down(Duration::from_millis(300))
        .probe_interval(Duration::from_secs(600))
        .admission_wait(Duration::from_millis(100))
}

fn breaking_client(server: &FakeAapServer) -> AapClient {
    builder(server).circuit_breaker(breaker()).build().unwrap()
}

/// [`breaker`], no retries, and a timeout no test reaches: requests held by AAP stay on their way.
fn patient_client(server: &FakeAapServer) -> AapClient {
    builder(server)
        .retry(provkit_aap::RetryConfig::disabled())
        .timeout(Duration::from_secs(600))
        .circuit_breaker(breaker())
        .build()
        .unwrap()
}

async fn launched_job(client: &AapClient) -> u64 {
    let t = client.get_template("provision-job").await.unwrap();
    client
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap()
        .id
}

/// Sleeps past the cool-down (no timing is asserted: only that time went forward).
async fn past_cool_down() {
    tokio::time::sleep(Duration::from_millis(350)).await;
}

#[tokio::test]
async fn opens_after_a_run_of_5xx_fails_fast_on_every_clone_and_one_probe_closes_it() {
    let server = server(Mode::Awx).await;
    let client = breaking_client(&server);
    let id = launched_job(&client).await;
    let job_path = format!("/jobs/{id}/");
    server
        .aap()
        .add_fault(Fault::any_method("*", FaultAction::gateway_html(503)));

    // Retried 503s: the third failure opens the circuit, so the fourth attempt is never sent.
    let err = client.get_job(id).await.unwrap_err();
    assert!(err.is_circuit_open(), "{err:?}");
    assert!(!err.is_outcome_unknown(), "nothing was sent");
    assert!(
        err.retry_after()
            .is_some_and(|d| d <= Duration::from_millis(300))
    );
    assert_eq!(requests_to(&server, &job_path).len(), 3);

    // Every clone, every route: fail fast, nothing reaches AAP.
    let clone = client.clone();
    assert_eq!(clone.circuit_state(), CircuitState::Open);
    assert!(
        clone
            .launch_refused_for()
            .is_some_and(|d| d <= Duration::from_millis(300))
    );
    let before = server.aap().requests().len();
    for _ in 0..20 {
        assert!(clone.get_job(id).await.unwrap_err().is_circuit_open());
    }
    assert!(clone.ping().await.unwrap_err().is_circuit_open());
    let t = client.get_template("provision-job").await.unwrap(); // cached: no request
    let launch = clone
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap_err();
    assert!(launch.is_circuit_open() && !launch.is_outcome_unknown());
    assert_eq!(
        server.aap().requests().len(),
        before,
        "no request while open"
    );

    // After the cool-down one probe goes; it fails and the circuit reopens at once.
    past_cool_down().await;
    assert_eq!(client.circuit_state(), CircuitState::HalfOpen);
    assert_eq!(client.launch_refused_for(), None, "a probe may go");
    assert!(client.get_job(id).await.unwrap_err().is_circuit_open());
    assert_eq!(
        requests_to(&server, &job_path).len(),
        4,
        "exactly one probe"
    );
    assert_eq!(client.circuit_state(), CircuitState::Open);

    // AAP recovers: the next probe closes the circuit for every clone.
    server.aap().clear_faults();
    past_cool_down().await;
    assert_eq!(clone.get_job(id).await.unwrap().id, id);
    assert_eq!(client.circuit_state(), CircuitState::Closed);
    assert_eq!(client.get_job(id).await.unwrap().id, id);
    assert_eq!(requests_to(&server, &job_path).len(), 6);
}

#[tokio::test]
async fn connection_errors_and_timeouts_open_it_and_4xx_answers_do_not() {
    // Nothing listens on port 9: connection refused.
    let refused = AapClient::builder("http://127.0.0.1:9")
        .base_path("/api/v2/")
        .retry(provkit_aap::RetryConfig::disabled())
        .circuit_breaker(breaker().failure_threshold(2))
        .proxy_from_env(false)
        .build()
        .unwrap();
    for _ in 0..2 {
        let err = refused.get_job(1).await.unwrap_err();
        assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    }
    assert_eq!(refused.circuit_state(), CircuitState::Open);
    assert!(refused.get_job(1).await.unwrap_err().is_circuit_open());

    let server = server(Mode::Awx).await;
    let slow = builder(&server)
        .retry(provkit_aap::RetryConfig::disabled())
        .timeout(Duration::from_millis(100))
        .circuit_breaker(breaker().failure_threshold(2))
        .build()
        .unwrap();
    let id = launched_job(&slow).await;
    // 404s (the server answers) never open it, however many.
    for _ in 0..5 {
        assert!(slow.get_job(999_999).await.unwrap_err().is_not_found());
    }
    assert_eq!(slow.circuit_state(), CircuitState::Closed);
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::Latency(Duration::from_secs(2)),
    ));
    for _ in 0..2 {
        let err = slow.get_job(id).await.unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    }
    assert_eq!(slow.circuit_state(), CircuitState::Open);
}

#[tokio::test]
async fn disabled_breaker_sends_every_request() {
    let server = server(Mode::Awx).await;
    let client = builder(&server)
        .retry(provkit_aap::RetryConfig::disabled())
        .circuit_breaker(CircuitBreakerConfig::disabled())
        .build()
        .unwrap();
    let id = launched_job(&client).await;
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::gateway_html(502),
    ));
    for _ in 0..10 {
        assert!(matches!(
            client.get_job(id).await.unwrap_err(),
            Error::Server { .. }
        ));
    }
    assert_eq!(requests_to(&server, &format!("/jobs/{id}/")).len(), 10);
    assert_eq!(client.circuit_state(), CircuitState::Closed);
}

/// After one failure the breaker sends only as many requests as could still open it: with a
/// threshold of 3, one failure and two requests hanging in AAP, eight more fail fast without
/// being sent; dropping the hanging requests gives their slots back; an answer lifts the limit.
#[tokio::test]
async fn after_a_failure_only_as_many_requests_are_sent_as_could_still_open_the_circuit() {
    let server = server(Mode::Awx).await;
    let client = patient_client(&server);
    let id = launched_job(&client).await;
    let job_path = format!("/jobs/{id}/");
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::gateway_html(503),
    ));
    let first = client.get_job(id).await.unwrap_err();
    assert!(matches!(first, Error::Server { .. }), "{first:?}");
    server.aap().clear_faults();

    // From now on AAP takes job reads in and never answers while `hold` is set.
    let received = Arc::new(AtomicUsize::new(0));
    let hold = Arc::new(AtomicBool::new(true));
    let (seen, held, path) = (received.clone(), hold.clone(), job_path.clone());
    server.aap().observe(Arc::new(move |req, phase| {
        if phase == Phase::Received && req.path.contains(&path) && held.load(Ordering::SeqCst) {
            seen.fetch_add(1, Ordering::SeqCst);
            return Verdict::Abandon;
        }
        Verdict::Continue
    }));
    let mut calls = spawn_reads(&client, id, 10);
    // 1 failure + 2 in flight could open it: the other eight wait for a place, none comes (the
    // two hang), and they are refused after the admission wait, nothing sent.
    for _ in 0..8 {
        let done = tokio::time::timeout(Duration::from_secs(60), calls.join_next())
            .await
            .expect("eight requests refused (deadline, not a timing assertion)")
            .unwrap()
            .unwrap();
        let err = done.unwrap_err();
        assert!(
            err.is_circuit_open() && !err.is_outcome_unknown(),
            "{err:?}"
        );
    }
    assert_eq!(calls.len(), 2, "two requests are on their way");
    assert!(client.get_job(id).await.unwrap_err().is_circuit_open());
    assert_eq!(client.circuit_state(), CircuitState::Closed);
    until_received(&received, 2).await;

    // The callers give up on them (futures dropped): their slots come back, the next is sent.
    calls.abort_all();
    while calls.join_next().await.is_some() {}
    hold.store(false, Ordering::SeqCst);
    assert_eq!(client.get_job(id).await.unwrap().id, id);
    // That answer lifted the limit: concurrent requests go again.
    let answers = futures_join(&client, id, 5).await;
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert_eq!(received.load(Ordering::SeqCst), 2);
    assert_eq!(
        requests_to(&server, &job_path).len(),
        1 + 1 + 5,
        "the 503, then 6 answered"
    );
}

/// Requests already on their way when the first failure comes back count toward the threshold:
/// with a threshold of 3, two job reads hanging in AAP and one failed read of another job, nothing
/// more is sent (the first breaker counted nothing before a failure and sent two more); when
/// the callers give the hanging reads up, their places come back and the next read is sent.
#[tokio::test]
async fn requests_on_their_way_before_the_first_failure_count_toward_the_threshold() {
    let server = server(Mode::Awx).await;
    let client = patient_client(&server);
    let id = launched_job(&client).await;
    let job_path = format!("/jobs/{id}/");
    let (received, sent) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (seen, all, path) = (received.clone(), sent.clone(), job_path.clone());
    server.aap().observe(Arc::new(move |req, phase| {
        if phase != Phase::Received {
            return Verdict::Continue;
        }
        all.fetch_add(1, Ordering::SeqCst);
        if req.path.contains(&path) {
            seen.fetch_add(1, Ordering::SeqCst);
            return Verdict::Abandon;
        }
        Verdict::Continue
    }));
    let mut hanging = spawn_reads(&client, id, 2);
    until_received(&received, 2).await;
    let other = a_failed_read(&server, &client, id).await;
    // 1 failure + 2 on their way could open it: nothing more is sent.
    let before = sent.load(Ordering::SeqCst);
    for _ in 0..3 {
        let err = client.get_job(other).await.unwrap_err();
        assert!(
            err.is_circuit_open() && !err.is_outcome_unknown(),
            "{err:?}"
        );
    }
    assert_eq!(sent.load(Ordering::SeqCst), before, "nothing sent");
    assert_eq!(client.circuit_state(), CircuitState::Closed);

    hanging.abort_all();
    while hanging.join_next().await.is_some() {}
    let answered = client.get_job(other).await.unwrap_err();
    assert!(
        matches!(answered, Error::Server { .. }),
        "a place came back: the request was sent ({answered:?})"
    );
    assert_eq!(
        received.load(Ordering::SeqCst),
        2,
        "only the two reads hung"
    );
}

/// One failure among answers on their way refuses nothing: with a threshold of 3, two slow job
/// reads on their way (300 ms in AAP) and one failed read of another job, every place that
/// could open the circuit is taken; the next read waits for a slow read's healthy answer and
/// is then sent. (Refused at once before the admission wait: in the 10,000-resource chaos run,
/// where 64 reconciles always have requests on their way, every sporadic 5xx refused the
/// requests made until the next answer, and the run fell far behind.)
#[tokio::test]
async fn one_failure_among_answers_on_their_way_refuses_nothing() {
    let server = server(Mode::Awx).await;
    let client = builder(&server)
        .retry(provkit_aap::RetryConfig::disabled())
        .timeout(Duration::from_secs(600))
        .circuit_breaker(breaker().admission_wait(Duration::from_secs(60)))
        .build()
        .unwrap();
    let id = launched_job(&client).await;
    let job_path = format!("/jobs/{id}/");
    server.aap().add_fault(
        Fault::new(
            "GET",
            &format!("*/jobs/{id}/*"),
            FaultAction::Latency(Duration::from_millis(300)),
        )
        .trigger(Trigger::FirstN(2)),
    );
    let received = Arc::new(AtomicUsize::new(0));
    let (seen, path) = (received.clone(), job_path.clone());
    server.aap().observe(Arc::new(move |req, phase| {
        if phase == Phase::Received && req.path.contains(&path) {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        Verdict::Continue
    }));
    let slow = spawn_reads(&client, id, 2);
    until_received(&received, 2).await;
    a_failed_read(&server, &client, id).await;

    let next = client.get_job(id).await;
    assert_eq!(
        next.map(|j| j.id).ok(),
        Some(id),
        "sent after a slow read answered"
    );
    let slow = slow.join_all().await;
    assert!(slow.iter().all(Result::is_ok), "{slow:?}");
    assert_eq!(received.load(Ordering::SeqCst), 3);
    assert_eq!(client.circuit_state(), CircuitState::Closed);
}

/// The first failure of a run: reads of a job nobody holds (`id + 1000`, so no cache answers
/// them) fail with a 503; one is made. Returns that job id.
async fn a_failed_read(server: &FakeAapServer, client: &AapClient, id: u64) -> u64 {
    let other = id + 1000;
    server.aap().add_fault(Fault::new(
        "GET",
        &format!("*/jobs/{other}/*"),
        FaultAction::gateway_html(503),
    ));
    let failed = client.get_job(other).await.unwrap_err();
    assert!(matches!(failed, Error::Server { .. }), "{failed:?}");
    other
}

/// `n` reads of job `id`, each on a task of its own.
fn spawn_reads(client: &AapClient, id: u64, n: usize) -> tokio::task::JoinSet<Result<u64, Error>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let c = client.clone();
        set.spawn(async move { c.get_job(id).await.map(|j| j.id) });
    }
    set
}

/// Waits until the observer has counted `n` requests.
async fn until_received(received: &AtomicUsize, n: usize) {
    while received.load(Ordering::SeqCst) < n {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `n` concurrent reads of job `id`.
async fn futures_join(client: &AapClient, id: u64, n: usize) -> Vec<Result<u64, Error>> {
    spawn_reads(client, id, n).join_all().await
}

fn resource() -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "s".into(),
            namespace: Some("default".into()),
            uid: "uid-s".into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "Subnet", "metadata": {"name": "s", "uid": "uid-s"}, "spec": {}}),
    )
}

#[tokio::test]
async fn an_open_circuit_is_a_rate_limit_for_the_provider_and_the_engine() {
    let server = server(Mode::Awx).await;
    let client = breaking_client(&server);
    let id = launched_job(&client).await;
    let provider = Arc::new(AapProvider::with_templates(
        client.clone(),
        "provision-job",
        "deprovision-job",
    ));
    server
        .aap()
        .add_fault(Fault::any_method("*", FaultAction::gateway_html(502)));
    assert!(client.get_job(id).await.unwrap_err().is_circuit_open());
    let tid = template_id(&server, "provision-job");
    let launches_before = server.aap().launch_count(tid);

    let r = resource();
    let poll = provider
        .provision_status(&r, &id.to_string())
        .await
        .unwrap_err();
    assert!(poll.is_rate_limited() && !poll.is_not_found(), "{poll}");
    let launch = provider
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(launch.retry_after().is_some(), "{launch}");
    assert_eq!(launch.launch_certainty(), LaunchCertainty::NotMade);

    // The provider says so before anything is tried: the rest of the cool-down.
    let refused = provider.launch_refused_for(&r, &JobType::Provision);
    assert!(
        refused.is_some_and(|d| d <= Duration::from_millis(300)),
        "{refused:?}"
    );

    // The engine: requeue after the wait, nothing recorded, no status to write — and no
    // launch intent written (one status write less, nothing for a restart to look up).
    let engine = Lifecycle::new(provider, Arc::new(SystemClock));
    let mut jobs = Vec::new();
    let intents = MemoryIntentStore::default();
    let out = engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new().intents(&intents),
        )
        .await
        .unwrap();
    assert!(
        matches!(out.step, ProvisionStep::RateLimited { .. }),
        "{out:?}"
    );
    assert!(out.requeue_after().is_some());
    assert!(!out.history_changed && jobs.is_empty());
    assert_eq!(
        intents.pending(),
        None,
        "no intent for a launch refused unsent"
    );
    assert_eq!(server.aap().launch_count(tid), launches_before);
}
