//! Push wake-ups end to end over loopback: the fake AAP's websocket → `AapClient`'s
//! `JobStatusStream` → `PushWakeups` → a controller built with `WakeupController`
//! (kube-runtime's stable `applier`) on the fake API server, with `AapProvider` polling the fake
//! AAP. Real time: the normal poll interval is long (an hour) unless a test needs polling, so a
//! completion seen within seconds can only have come by push.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Config};
use kube::runtime::watcher;
use provkit_aap::push::{PushConfig, ReconnectBackoff};
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, JobState, SystemClock};
use provkit_kube::push::{PushWakeups, WakeupController};
use provkit_kube::{MultiTargetProvisioner, NoCallbacks, Provisioner, ReconcileError};
use provkit_lifecycle::push::{PollCadence, PushHealth};
use provkit_lifecycle::{JobTarget, Lifecycle, LifecyclePolicy, MultiTargetLifecycle};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::fixtures::*;

const HOUR: Duration = Duration::from_secs(3600);

fn long_running() -> JobScript {
    JobScript::run_until_canceled().with_phases(
        Duration::from_millis(20),
        Duration::from_millis(20),
        Duration::from_millis(20),
    )
}

fn ends_after(running: Duration) -> JobScript {
    JobScript::successful(running).with_phases(
        Duration::from_millis(20),
        Duration::from_millis(20),
        running,
    )
}

async fn fake_aap(create: JobScript) -> FakeAapServer {
    FakeAap::builder()
        .organization("osac")
        .job_template(JobTemplateSpec {
            script: Some(create.clone()),
            ..JobTemplateSpec::new("osac-create-network", "osac")
        })
        .job_template(JobTemplateSpec {
            script: Some(create),
            ..JobTemplateSpec::new("stor-create-network", "osac")
        })
        .job_template(JobTemplateSpec::new("osac-delete-network", "osac"))
        .start()
        .await
        .unwrap()
}

fn aap_client(server: &FakeAapServer) -> AapClient {
    AapClient::builder(server.base_url())
        .token(server.token())
        .timeout(Duration::from_secs(5))
        .proxy_from_env(false)
        .build()
        .unwrap()
}

fn lifecycle(client: &AapClient, prefix: &str, poll: Duration) -> Lifecycle {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let provider = AapProvider::builder(client.clone())
        .template_prefix(prefix)
        .clock(clock.clone())
        .build();
    let mut policy = LifecyclePolicy::default().with_poll_interval(poll);
    policy.poll_jitter = provkit_lifecycle::Jitter::None;
    policy.min_requeue = Duration::from_millis(50);
    Lifecycle::new(Arc::new(provider), clock).with_policy(policy)
}

fn quick_retry<C>(_obj: Arc<Network>, _err: &ReconcileError, _ctx: Arc<C>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

/// A running operator: the controller, the push stream and what they share.
struct Operator {
    wakeups: PushWakeups,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Operator {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn push_config() -> PushConfig {
    PushConfig::default().backoff(ReconnectBackoff::new(
        Duration::from_millis(50),
        Duration::from_millis(200),
    ))
}

/// Starts the push stream and the controller of `provisioner` (single target).
fn operator(
    api: &FakeApiServer,
    aap: &AapClient,
    normal: Duration,
    build: impl FnOnce(Provisioner<Network>) -> Provisioner<Network>,
    lifecycle: Lifecycle,
) -> Operator {
    let wakeups = PushWakeups::new(PollCadence::new(normal).with_while_healthy(HOUR * 2));
    let client = api.client();
    let provisioner = Arc::new(build(
        Provisioner::new(client.clone(), lifecycle, FINALIZER).with_push(wakeups.clone()),
    ));
    let w = wakeups.clone();
    let signals = aap.job_status_stream_with(push_config()).signals();
    let push = tokio::spawn(async move { w.run(signals).await });
    let controller = WakeupController::new(
        Api::<Network>::all(client),
        watcher::Config::default(),
        wakeups.triggers(),
    )
    .with_config(Config::default())
    .run(
        |obj, p: Arc<Provisioner<Network>>| async move { p.reconcile(obj, &NoCallbacks).await },
        quick_retry,
        provisioner,
    );
    let run = tokio::spawn(controller.for_each(|_| async {}));
    Operator {
        wakeups,
        tasks: vec![push, run],
    }
}

/// Waits (up to 20 s) for `check`.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..400 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not reached within 20 s: {what}");
}

async fn until_async<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..400 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not reached within 20 s: {what}");
}

async fn create(api: &FakeApiServer, name: &str) {
    let nets: Api<Network> = Api::namespaced(api.client(), NS);
    let net = Network::new(
        name,
        NetworkSpec {
            cidr: "10.0.0.0/24".into(),
        },
    );
    nets.create(&PostParams::default(), &net).await.unwrap();
}

async fn jobs_of(api: &FakeApiServer, name: &str) -> Vec<provkit_core::JobStatus> {
    let nets: Api<Network> = Api::namespaced(api.client(), NS);
    nets.get(name)
        .await
        .ok()
        .and_then(|n| n.status)
        .map(|s| s.provisioning.provisioning_jobs)
        .unwrap_or_default()
}

async fn job_id_of(api: &FakeApiServer, name: &str) -> String {
    for _ in 0..400 {
        if let Some(job) = jobs_of(api, name).await.first()
            && !job.job_id.is_empty()
        {
            return job.job_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} has no job within 20 s");
}

/// `GET jobs/<id>/` requests the fake AAP received.
fn job_gets(aap: &FakeAapServer, id: &str) -> usize {
    let path = format!("/api/v2/jobs/{id}/");
    aap.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == path)
        .count()
}

fn template(aap: &FakeAapServer, name: &str) -> u64 {
    aap.template_id(name, Some("osac")).unwrap()
}

async fn healthy(op: &Operator) {
    until("push healthy", || {
        op.wakeups.health() == PushHealth::Healthy
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_wakes_exactly_the_object_of_its_job_and_one_get_confirms_it() {
    let aap = fake_aap(ends_after(Duration::from_millis(1500))).await;
    let api = FakeApiServer::builder().crd::<Network>().build();
    let client = aap_client(&aap);
    let op = operator(&api, &client, HOUR, |p| p, lifecycle(&client, "osac", HOUR));
    healthy(&op).await;

    create(&api, "net-a").await;
    let a = job_id_of(&api, "net-a").await;
    // The next job runs until canceled.
    aap.set_template_script(template(&aap, "osac-create-network"), long_running())
        .unwrap();
    create(&api, "net-b").await;
    let b = job_id_of(&api, "net-b").await;

    until_async("net-a succeeded", || async {
        jobs_of(&api, "net-a")
            .await
            .first()
            .is_some_and(|j| j.state == JobState::Succeeded)
    })
    .await;
    // One GET confirmed a's job (the message decides nothing); b's job was never polled.
    assert_eq!(job_gets(&aap, &a), 1, "one confirming GET of a's job");
    assert_eq!(job_gets(&aap, &b), 0, "b was not woken");
    assert!(
        jobs_of(&api, "net-b")
            .await
            .first()
            .is_some_and(|j| !j.state.is_terminal()),
        "b's job is still in flight"
    );
    // The reconcile that recorded a's success stops tracking a's job once it ends, a moment
    // after its status write is visible.
    until("only b's job is tracked", || {
        op.wakeups.stats().tracked == 1
    })
    .await;
    let stats = op.wakeups.stats();
    assert_eq!(stats.woken, 1);
    assert_eq!(stats.tracked, 1, "b still waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_target_objects_are_woken_too() {
    let aap = fake_aap(long_running()).await;
    aap.set_template_script(
        template(&aap, "stor-create-network"),
        ends_after(Duration::from_millis(1500)),
    )
    .unwrap();
    let api = FakeApiServer::builder().crd::<Network>().build();
    let client = aap_client(&aap);
    let targets = MultiTargetLifecycle::new([
        JobTarget::new("net", lifecycle(&client, "osac", HOUR)).absorbs_legacy_history(),
        JobTarget::new("storage", lifecycle(&client, "stor", HOUR)),
    ])
    .unwrap();
    let wakeups = PushWakeups::new(PollCadence::new(HOUR).with_while_healthy(HOUR * 2));
    let provisioner = Arc::new(
        MultiTargetProvisioner::new(api.client(), targets, FINALIZER)
            .configure(|p| p.with_push(wakeups.clone())),
    );
    let w = wakeups.clone();
    let signals = client.job_status_stream_with(push_config()).signals();
    let push = tokio::spawn(async move { w.run(signals).await });
    let controller = WakeupController::new(
        Api::<Network>::all(api.client()),
        watcher::Config::default(),
        wakeups.triggers(),
    )
    .run(
        |obj, p: Arc<MultiTargetProvisioner<Network>>| async move {
            p.reconcile(obj, &NoCallbacks).await
        },
        quick_retry,
        provisioner,
    );
    let run = tokio::spawn(controller.for_each(|_| async {}));
    let op = Operator {
        wakeups,
        tasks: vec![push, run],
    };
    healthy(&op).await;

    create(&api, "net-m").await;
    until_async("the storage job succeeded", || async {
        let jobs = jobs_of(&api, "net-m").await;
        jobs.iter()
            .any(|j| j.target == "storage" && j.state == JobState::Succeeded)
            && jobs
                .iter()
                .any(|j| j.target == "net" && j.state == JobState::Running)
    })
    .await;
    assert_eq!(op.wakeups.stats().woken, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_falls_back_to_polling_and_re_polls_after_reconnecting() {
    let aap = fake_aap(long_running()).await;
    let api = FakeApiServer::builder().crd::<Network>().build();
    let client = aap_client(&aap);
    let normal = Duration::from_millis(300);
    let op = operator(
        &api,
        &client,
        normal,
        |p| p,
        lifecycle(&client, "osac", normal),
    );
    healthy(&op).await;
    create(&api, "net-a").await;
    let a = job_id_of(&api, "net-a").await;
    // Healthy: no poll after the launch (the requeue is the long interval).
    tokio::time::sleep(normal * 4).await;
    assert_eq!(job_gets(&aap, &a), 0, "healthy: no polling");

    // Down (and kept down): polling resumes at the normal interval.
    aap.websocket_refuse(Some(502));
    aap.websocket_drop_connections();
    until("the stream is down", || {
        op.wakeups.health() != PushHealth::Healthy
    })
    .await;
    until("polled at the normal interval", || job_gets(&aap, &a) >= 3).await;

    // Back: one re-poll of every in-flight job, then the long interval again.
    let before = op.wakeups.stats().bursts;
    aap.websocket_refuse(None);
    healthy(&op).await;
    until("re-polled", || op.wakeups.stats().bursts > before).await;
    assert_eq!(op.wakeups.stats().last_burst, 1);
    let gets = job_gets(&aap, &a);
    tokio::time::sleep(normal * 6).await;
    assert!(
        job_gets(&aap, &a) <= gets + 1,
        "healthy again: at most the re-poll's GET, no normal-interval polling ({} → {})",
        gets,
        job_gets(&aap, &a)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_jobs_wake_nothing_and_a_duplicate_canceled_is_harmless() {
    let aap = fake_aap(long_running()).await;
    let api = FakeApiServer::builder().crd::<Network>().build();
    let client = aap_client(&aap);
    let op = operator(&api, &client, HOUR, |p| p, lifecycle(&client, "osac", HOUR));
    healthy(&op).await;
    create(&api, "net-a").await;
    let a = job_id_of(&api, "net-a").await;
    until("tracked", || op.wakeups.stats().tracked == 1).await;
    let writes = api.requests().len();

    // Another user's job, and an id nobody launched: nothing happens.
    for id in [9_001_u64, 9_002] {
        aap.websocket_inject(json!({"unified_job_id": id, "status": "successful",
            "finished": "2026-12-01T19:24:26.874587Z", "type": "job", "group_name": "jobs",
            "unified_job_template_id": 1}));
    }
    until("both dropped", || op.wakeups.stats().unknown >= 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(job_gets(&aap, &a), 0);
    assert_eq!(op.wakeups.stats().woken, 0);
    assert_eq!(api.requests().len(), writes, "no API server request at all");

    // `canceled` twice for a's job (which in truth still runs): the reconcile reads the job,
    // finds it running, and records nothing new; the second message changes nothing either.
    let a_id: u64 = a.parse().unwrap();
    for finished in [None, Some("2026-12-01T19:24:31.236810Z")] {
        let mut m = json!({"unified_job_id": a_id, "status": "canceled", "type": "job",
            "group_name": "jobs", "unified_job_template_id": 1});
        if let Some(f) = finished {
            m["finished"] = json!(f);
        }
        aap.websocket_inject(m);
    }
    until("a woken", || job_gets(&aap, &a) >= 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(job_gets(&aap, &a) <= 2, "at most one GET per message");
    let jobs = jobs_of(&api, "net-a").await;
    assert_eq!(jobs.len(), 1, "no second launch");
    assert_eq!(
        jobs[0].state,
        JobState::Running,
        "the message decided nothing"
    );
    assert_eq!(op.wakeups.stats().tracked, 1, "still waiting for its job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upgrade_leaves_polling_at_the_normal_interval() {
    let aap = fake_aap(long_running()).await;
    aap.websocket_refuse(Some(403));
    let api = FakeApiServer::builder().crd::<Network>().build();
    let client = aap_client(&aap);
    let normal = Duration::from_millis(300);
    let op = operator(
        &api,
        &client,
        normal,
        |p| p,
        lifecycle(&client, "osac", normal),
    );
    create(&api, "net-a").await;
    let a = job_id_of(&api, "net-a").await;
    until("polled at the normal interval", || job_gets(&aap, &a) >= 3).await;
    assert_eq!(op.wakeups.health(), PushHealth::Down);
    assert!(aap.websocket_stats().refused >= 1);
}
