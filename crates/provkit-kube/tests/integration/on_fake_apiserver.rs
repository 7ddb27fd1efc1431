//! Issue 16 on provkit-testing's `FakeApiServer`: kube-runtime's `Controller` running the
//! `Provisioner` (with `ScriptedProvider`, in-process), and `LeaderElector::run` with two
//! replicas whose clients the fake tells apart, so a fault can partition one replica's Lease
//! traffic while its other requests still work. Assertions read the fake's request log, its
//! stored objects and its Events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use kube::{CustomResourceExt, Resource};
use provkit_core::{Clock, JobState, JobType};
use provkit_kube::{
    EventPublisher, JobEvent, LeaderElectionConfig, LeaderElector, LeadershipEnd, LeadershipLost,
    NoCallbacks, ProvisionedResource, Provisioner, ProvisioningCallbacks, ReconcileError,
    unique_identity,
};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy};
use provkit_testing::fake_apiserver::{FakeApiServer, Fault, FaultEffect, RequestRecord, Verb};
use provkit_testing::scripted::{ProviderCall, ScriptedProvider, StatusStep};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use crate::fixtures::*;

fn running_provider() -> ScriptedProvider {
    let p = ScriptedProvider::new();
    p.set_default_statuses([StatusStep::State(JobState::Running)]);
    p
}

fn lifecycle(provider: &ScriptedProvider, clock: Arc<dyn Clock>) -> Lifecycle {
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(200));
    policy.min_requeue = Duration::from_millis(20);
    Lifecycle::new(Arc::new(provider.clone()), clock).with_policy(policy)
}

async fn reconcile_plain(
    obj: Arc<Network>,
    p: Arc<Provisioner<Network>>,
) -> Result<Action, ReconcileError> {
    p.reconcile(obj, &NoCallbacks).await
}

fn quick_retry<C>(_obj: Arc<Network>, _err: &ReconcileError, _ctx: Arc<C>) -> Action {
    Action::requeue(Duration::from_millis(50))
}

fn is_write(r: &RequestRecord) -> bool {
    matches!(
        r.verb,
        Some(Verb::Create | Verb::Update | Verb::Patch | Verb::Delete)
    ) && r.status < 300
}

/// One operator replica: `LeaderElector::run` around the `Controller`.
fn replica(
    server: &FakeApiServer,
    name: &str,
    provider: &ScriptedProvider,
    clock: Arc<dyn Clock>,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) -> (String, JoinHandle<LeadershipEnd>) {
    replica_as(server, name, name, provider, clock, shutdown)
}

/// [`replica`] whose identity is `unique_identity(pod_name)` (what `default_identity` makes of
/// `$POD_NAME`).
fn replica_as(
    server: &FakeApiServer,
    name: &str,
    pod_name: &str,
    provider: &ScriptedProvider,
    clock: Arc<dyn Clock>,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) -> (String, JoinHandle<LeadershipEnd>) {
    let client = server.client_named(name);
    let identity = unique_identity(pod_name);
    let elector = LeaderElector::with_config(
        Api::<Lease>::namespaced(client.clone(), NS),
        "op",
        identity.clone(),
        LeaderElectionConfig::default(),
        clock.clone(),
    )
    .with_field_manager("network-operator");
    let provisioner = Arc::new(
        Provisioner::new(client.clone(), lifecycle(provider, clock), FINALIZER)
            .with_field_manager("network-operator"),
    );
    let task = tokio::spawn(async move {
        elector
            .run(
                async move {
                    let _ = shutdown.await;
                },
                |token| async move {
                    Controller::new(Api::<Network>::all(client), watcher::Config::default())
                        .graceful_shutdown_on(token.cancelled_owned())
                        .run(reconcile_plain, quick_retry, provisioner)
                        .for_each(|_| async {})
                        .await;
                },
            )
            .await
    });
    (identity, task)
}

/// Problems 2/3 of issue 16 on the real reconcile path: the leader's Lease requests fail (a
/// per-client fault on `leases`; its other requests still work). It keeps reconciling until
/// its renew deadline, then stops — cancelling in-flight reconciles — and makes no request at
/// all afterwards; the standby's first write (the Lease takeover) comes after the old
/// leader's last write in the request log, and its `acquireTime` is at least the skew margin
/// (lease duration − renew deadline) after the old leader stopped. Every object gets exactly
/// one job across the hand-over.
#[tokio::test(start_paused = true)]
async fn a_partitioned_leader_stops_writing_before_the_new_leader_takes_over() {
    let config = LeaderElectionConfig::default();
    let start = Instant::now();
    let clock: Arc<dyn Clock> = Arc::new(TokioClock { base: t(0), start });
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(clock.clone())
        .build();
    let provider = running_provider();
    let (_stop_a, rx_a) = tokio::sync::oneshot::channel();
    let (stop_b, rx_b) = tokio::sync::oneshot::channel();
    let (_a_id, a) = replica(&server, "a", &provider, clock.clone(), rx_a);
    sleep(Duration::from_secs(1)).await;
    let (b_id, b) = replica(&server, "b", &provider, clock.clone(), rx_b);

    // The user creates one object per second throughout.
    let user: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    let creator = tokio::spawn(async move {
        for i in 0..40 {
            let net = Network::new(
                &format!("net-{i}"),
                NetworkSpec {
                    cidr: format!("10.{i}.0.0/24"),
                },
            );
            user.create(&PostParams::default(), &net).await.unwrap();
            sleep(Duration::from_secs(1)).await;
        }
    });

    sleep(Duration::from_secs(5)).await;
    let partitioned_at = server.requests().len();
    server.inject(
        Fault::new(FaultEffect::ServiceUnavailable {
            retry_after_secs: None,
        })
        .client("a")
        .resource("leases"),
    );
    let end = a.await.unwrap();
    let a_stopped = clock.now();
    let stopped_at = server.requests().len();
    assert!(
        matches!(
            end,
            LeadershipEnd::Lost(LeadershipLost::RenewDeadlineExceeded {
                last_error: Some(_),
                ..
            })
        ),
        "{end:?}"
    );
    sleep(Duration::from_secs(45)).await;
    creator.await.unwrap();
    sleep(Duration::from_secs(5)).await;
    let log = server.requests();

    let during = &log[partitioned_at..stopped_at];
    assert!(
        during
            .iter()
            .filter(|r| r.client == "a" && r.path.contains("/leases/"))
            .count()
            >= 3,
        "the leader retried its renewal"
    );
    assert!(
        during
            .iter()
            .any(|r| r.client == "a" && is_write(r) && r.path.contains("/networks/")),
        "the leader kept reconciling until its renew deadline"
    );
    assert!(
        log[stopped_at..].iter().all(|r| r.client != "a"),
        "no request by the old leader after its renew deadline: {:?}",
        log[stopped_at..]
            .iter()
            .filter(|r| r.client == "a")
            .collect::<Vec<_>>()
    );
    let a_last_write = log
        .iter()
        .rposition(|r| r.client == "a" && is_write(r))
        .unwrap();
    let b_first_write = log
        .iter()
        .position(|r| r.client == "b" && is_write(r))
        .expect("B took over");
    assert!(a_last_write < b_first_write);
    assert!(
        log[b_first_write].path.contains("/leases/"),
        "B's first write is the takeover: {:?}",
        log[b_first_write]
    );
    let lease = Api::<Lease>::namespaced(server.client(), NS)
        .get("op")
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(b_id.as_str()));
    let acquired = provkit_kube::time::from_k8s_micro_time(&spec.acquire_time.unwrap());
    let margin = config.lease_duration() - config.renew_deadline();
    assert!(
        acquired >= a_stopped + margin,
        "B acquired at {acquired}, A stopped at {a_stopped}"
    );
    // Exactly one job per object across the hand-over.
    let nets = server.objects::<Network>();
    assert_eq!(nets.len(), 40);
    for n in &nets {
        let uid = n.meta().uid.clone().unwrap();
        assert_eq!(
            provider.jobs_created(&uid, &JobType::Provision),
            1,
            "{:?}",
            n.metadata.name
        );
    }
    let _ = stop_b.send(());
    assert!(matches!(
        b.await.unwrap(),
        LeadershipEnd::Shutdown { released: true }
    ));
    assert_eq!(
        server.lease_holders().get("default/op"),
        Some(&None),
        "released on shutdown"
    );
}

fn network(i: usize) -> Network {
    Network::new(
        &format!("net-{i}"),
        NetworkSpec {
            cidr: format!("10.{i}.0.0/24"),
        },
    )
}

fn object_writers(log: &[RequestRecord]) -> std::collections::BTreeSet<String> {
    log.iter()
        .filter(|r| is_write(r) && r.path.contains("/networks/"))
        .map(|r| r.client.clone())
        .collect()
}

/// Issue 16 problem 1: two replicas started with the same `POD_NAME` get distinct identities,
/// so only one leads: every object write comes from one replica, one job per object.
#[tokio::test(start_paused = true)]
async fn replicas_with_the_same_pod_name_do_not_both_lead() {
    let start = Instant::now();
    let clock: Arc<dyn Clock> = Arc::new(TokioClock { base: t(0), start });
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(clock.clone())
        .build();
    let provider = running_provider();
    let (_stop_a, rx_a) = tokio::sync::oneshot::channel();
    let (_stop_b, rx_b) = tokio::sync::oneshot::channel();
    let (a_id, _a) = replica_as(
        &server,
        "a",
        "same-identity",
        &provider,
        clock.clone(),
        rx_a,
    );
    let (b_id, _b) = replica_as(
        &server,
        "b",
        "same-identity",
        &provider,
        clock.clone(),
        rx_b,
    );
    assert_ne!(a_id, b_id);
    let user: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    sleep(Duration::from_secs(3)).await;
    for i in 0..5 {
        user.create(&PostParams::default(), &network(i))
            .await
            .unwrap();
        sleep(Duration::from_secs(2)).await;
    }
    sleep(Duration::from_secs(10)).await;
    let writers = object_writers(&server.requests());
    assert_eq!(writers.len(), 1, "one replica reconciles: {writers:?}");
    let holder = server.lease_holders().get("default/op").cloned().flatten();
    let leader = if writers.contains("a") { &a_id } else { &b_id };
    assert_eq!(holder.as_ref(), Some(leader));
    for n in server.objects::<Network>() {
        let uid = n.meta().uid.clone().unwrap();
        assert_eq!(provider.jobs_created(&uid, &JobType::Provision), 1);
    }
}

/// Issue 16 problem 3: an outage of the leader's Lease requests shorter than the renew
/// deadline keeps it leading; the standby never writes.
#[tokio::test(start_paused = true)]
async fn a_lease_outage_shorter_than_the_renew_deadline_keeps_the_leader() {
    let start = Instant::now();
    let clock: Arc<dyn Clock> = Arc::new(TokioClock { base: t(0), start });
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(clock.clone())
        .build();
    let provider = running_provider();
    let (_stop_a, rx_a) = tokio::sync::oneshot::channel();
    let (_stop_b, rx_b) = tokio::sync::oneshot::channel();
    let (a_id, a) = replica(&server, "a", &provider, clock.clone(), rx_a);
    sleep(Duration::from_secs(1)).await;
    let (_b_id, b) = replica(&server, "b", &provider, clock.clone(), rx_b);
    // A renews at 0, 2, 4, … s; the outage from 8.5 s to 13.5 s fails the renewals at 10 and
    // 12 s, the one at 14 s is within the renew deadline (8 s + 10 s).
    sleep(Duration::from_millis(7500)).await;
    let outage_at = server.requests().len();
    server.inject(
        Fault::new(FaultEffect::ServiceUnavailable {
            retry_after_secs: None,
        })
        .client("a")
        .resource("leases"),
    );
    sleep(Duration::from_secs(5)).await;
    server.clear_faults();
    let user: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    user.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    sleep(Duration::from_secs(30)).await;
    let log = server.requests();
    let refused = log[outage_at..]
        .iter()
        .filter(|r| r.client == "a" && r.path.contains("/leases/") && r.status == 503)
        .count();
    assert!(refused >= 2, "renewals failed during the outage: {refused}");
    assert!(!a.is_finished() && !b.is_finished());
    assert_eq!(
        server.lease_holders().get("default/op").cloned().flatten(),
        Some(a_id)
    );
    assert_eq!(
        object_writers(&log),
        ["a".to_owned()].into(),
        "only the leader reconciles, after the outage too"
    );
    assert!(!log.iter().any(|r| r.client == "b" && is_write(r)));
}

/// Sets `status.phase` while the config is not applied and removes it (`None`, skipped when
/// serialising) once it is.
struct PhaseWhileProvisioning;

impl ProvisioningCallbacks<Network> for PhaseWhileProvisioning {
    fn on_apply(&self, obj: &mut Network, config_applied: bool) {
        obj.status.get_or_insert_with(Default::default).phase = if config_applied {
            None
        } else {
            Some("Provisioning".into())
        };
    }
}

struct Ctx {
    provisioner: Provisioner<Network>,
    results: Mutex<Vec<(bool, String)>>,
}

async fn reconcile_recording(obj: Arc<Network>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let deleting = obj.meta().deletion_timestamp.is_some();
    let result = ctx
        .provisioner
        .reconcile(obj, &PhaseWhileProvisioning)
        .await;
    ctx.results.lock().unwrap().push((
        deleting,
        match &result {
            Ok(a) => format!("Ok({a:?})"),
            Err(e) => format!("Err({e})"),
        },
    ));
    result
}

async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("never happened: {what}");
}

/// The CRD with one more status field, `legacy`, that the Rust status type does not know (a
/// Go operator's field during a cut-over).
fn crd_with_a_foreign_status_field() -> Value {
    let mut crd = serde_json::to_value(Network::crd()).unwrap();
    let props = crd
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/status/properties")
        .and_then(Value::as_object_mut)
        .unwrap();
    props.insert("legacy".into(), json!({"type": "string"}));
    crd
}

/// Issue 16: status writes clear a field this controller removed (`phase`) and keep a field
/// unknown to its status type (`legacy`); deletion in progress is `Ok(requeue)`, never an
/// error; Events carry the job id in `action`, one per job, read back from the fake; status,
/// finalizer and Event writes are recorded under the controller's field manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_clearing_deletion_requeue_events_and_field_manager() {
    let clock: Arc<dyn Clock> = Arc::new(provkit_core::SystemClock);
    let server = FakeApiServer::builder()
        .crd_json(&crd_with_a_foreign_status_field())
        .unwrap()
        .build();
    let provider = running_provider();
    // The operator's client names the controller in its User-Agent (`provkit_kube::user_agent`
    // does this for a `kube::Config`), for the writes that take no field manager.
    let operator = server.client_with_user_agent("network-operator/0.1");
    let events = EventPublisher::new(
        operator.clone(),
        Reporter {
            controller: "network-operator".into(),
            instance: Some("test-0".into()),
        },
    );
    let ctx = Arc::new(Ctx {
        provisioner: Provisioner::new(operator.clone(), lifecycle(&provider, clock), FINALIZER)
            .with_field_manager("network-operator")
            .with_events(events),
        results: Mutex::new(Vec::new()),
    });
    let controller = tokio::spawn(
        Controller::new(Api::<Network>::all(operator), watcher::Config::default())
            .run(reconcile_recording, quick_retry, ctx.clone())
            .for_each(|_| async {}),
    );
    let user: Api<Network> = Api::namespaced(server.client_with_user_agent("kubectl/v1.37"), NS);
    let stored = || {
        server
            .objects_json("test.provkit.dev", "networks")
            .into_iter()
            .find(|o| o["metadata"]["name"] == NAME)
    };
    user.create(
        &PostParams::default(),
        &Network::new(
            NAME,
            NetworkSpec {
                cidr: "10.0.0.0/24".into(),
            },
        ),
    )
    .await
    .unwrap();
    until("the first job runs and the phase is written", || {
        stored().is_some_and(|o| o["status"]["phase"] == "Provisioning")
    })
    .await;
    // Another writer (a Go operator during a cut-over) sets a field this controller's status
    // type does not have.
    user.patch_status(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"legacy": "go-owned"}})),
    )
    .await
    .unwrap();
    let job1 = provider.jobs()[0].job_id.clone();
    provider.set_job_statuses(&job1, [StatusStep::State(JobState::Succeeded)]);
    until("phase cleared once the config is applied", || {
        stored().is_some_and(|o| o["status"].get("phase").is_none())
    })
    .await;
    let obj = stored().unwrap();
    assert_eq!(
        obj["status"]["legacy"], "go-owned",
        "a field unknown to the status type is kept: {obj}"
    );

    // A second job (spec change): its own Event.
    user.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"cidr": "10.9.0.0/24"}})),
    )
    .await
    .unwrap();
    until("the second job runs", || provider.jobs().len() == 2).await;
    let job2 = provider.jobs()[1].job_id.clone();
    provider.set_job_statuses(&job2, [StatusStep::State(JobState::Succeeded)]);
    until("the second job's events are written", || {
        server
            .events()
            .iter()
            .filter(|e| e["reason"] == "ProvisionJobSucceeded")
            .count()
            == 2
    })
    .await;
    for (reason, verb) in [
        ("ProvisionJobTriggered", "launched"),
        ("ProvisionJobSucceeded", "succeeded"),
    ] {
        let mut got: Vec<(String, String)> = server
            .events()
            .iter()
            .filter(|e| e["reason"] == reason)
            .map(|e| {
                (
                    e["action"].as_str().unwrap_or("").to_owned(),
                    e["note"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        got.sort();
        let mut want = vec![
            (
                format!("Provision/{job1}"),
                format!("provision job {job1} {verb}"),
            ),
            (
                format!("Provision/{job2}"),
                format!("provision job {job2} {verb}"),
            ),
        ];
        want.sort();
        assert_eq!(got, want, "one Event per job for {reason}");
    }

    // managedFields: status patches and the finalizer patch (kube-runtime, no field manager:
    // the User-Agent) are the controller's; the user's writes are the user's.
    let obj = stored().unwrap();
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"network-operator"), "{managers:?}");
    assert!(
        managers
            .iter()
            .all(|m| *m == "network-operator" || *m == "kubectl"),
        "{managers:?}"
    );
    let operator_writes: Vec<RequestRecord> = server
        .requests()
        .into_iter()
        .filter(|r| r.client == "network-operator" && is_write(r))
        .collect();
    assert!(!operator_writes.is_empty());
    for w in &operator_writes {
        assert_eq!(
            w.field_manager.as_deref(),
            Some("network-operator"),
            "{w:?}"
        );
    }
    assert!(
        operator_writes.iter().any(|w| w.path.contains("/events")),
        "Event writes are among them"
    );

    // Deletion: the deprovision job runs; every reconcile meanwhile is Ok(requeue).
    user.delete(NAME, &DeleteParams::default()).await.unwrap();
    until("the deprovision job runs", || {
        provider
            .jobs()
            .iter()
            .any(|j| j.job_type == JobType::Deprovision)
    })
    .await;
    until("a few reconciles of the deleting object", || {
        ctx.results.lock().unwrap().iter().filter(|r| r.0).count() >= 3
    })
    .await;
    let deprov = provider
        .jobs()
        .iter()
        .find(|j| j.job_type == JobType::Deprovision)
        .unwrap()
        .job_id
        .clone();
    provider.set_job_statuses(&deprov, [StatusStep::State(JobState::Succeeded)]);
    until("the object is gone", || stored().is_none()).await;
    controller.abort();
    let results = ctx.results.lock().unwrap().clone();
    let deleting: Vec<&String> = results.iter().filter(|r| r.0).map(|r| &r.1).collect();
    assert!(
        deleting.iter().all(|r| r.starts_with("Ok(")),
        "deletion in progress is not an error: {deleting:?}"
    );
    assert!(
        deleting.iter().any(|r| r.contains("requeue_after: Some")),
        "{deleting:?}"
    );
    assert_eq!(
        server
            .events()
            .iter()
            .filter(|e| e["reason"] == "Deprovisioned")
            .count(),
        1
    );
}

/// Issue 16 problem 4: the same occurrence published again is one Event with a `series`
/// (`EventRecorder`, like kube-runtime's `Recorder`, keys series on reason and action), while another job's
/// occurrence is its own Event.
#[tokio::test]
async fn a_repeated_occurrence_is_one_event_series_and_another_job_its_own_event() {
    let server = FakeApiServer::builder().crd::<Network>().build();
    let user: Api<Network> = Api::namespaced(server.client(), NS);
    let net = user
        .create(
            &PostParams::default(),
            &Network::new(
                NAME,
                NetworkSpec {
                    cidr: "10.0.0.0/24".into(),
                },
            ),
        )
        .await
        .unwrap();
    let events = EventPublisher::new(
        server.client_with_user_agent("network-operator/0.1"),
        Reporter {
            controller: "network-operator".into(),
            instance: None,
        },
    );
    let regarding = net.object_ref(&());
    let failed = |job: &str| JobEvent::ProvisionFailed {
        job_id: job.into(),
        message: "playbook failed".into(),
    };
    events.publish(&failed("7"), &regarding).await;
    events.publish(&failed("7"), &regarding).await;
    events.publish(&failed("8"), &regarding).await;
    let mut got: Vec<(String, String, u64)> = server
        .events()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or("").to_owned(),
                e["note"].as_str().unwrap_or("").to_owned(),
                e.pointer("/series/count")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "Provision/7");
    assert_eq!(got[0].2, 2, "the repeat is a series: {got:?}");
    assert!(got[0].1.contains("job 7"), "{got:?}");
    assert_eq!(got[1].0, "Provision/8");
    assert!(got[1].1.contains("job 8"), "{got:?}");
    assert_eq!(got[1].2, 1);
}

/// Issue 16 problem 5: a 403 from the fake API server on the status subresource reaches the
/// log line of `provkit_kube::error_policy` with its code, reason and message (the Controller
/// runs on this thread, so its logs land in the test's subscriber).
#[tokio::test]
async fn a_forbidden_status_write_logs_the_403_with_its_message() {
    let logs = crate::production::LogBuffer::default();
    let _guard = logs.install();
    let server = FakeApiServer::builder().crd::<Network>().build();
    server.inject(
        Fault::new(FaultEffect::Forbidden)
            .verb(Verb::Patch)
            .resource("networks")
            .subresource(Some("status")),
    );
    let provider = running_provider();
    let operator = server.client_named("operator");
    let provisioner = Arc::new(Provisioner::new(
        operator.clone(),
        lifecycle(&provider, Arc::new(provkit_core::SystemClock)),
        FINALIZER,
    ));
    let controller = tokio::spawn(
        Controller::new(Api::<Network>::all(operator), watcher::Config::default())
            .run(reconcile_plain, provkit_kube::error_policy, provisioner)
            .for_each(|_| async {}),
    );
    let user: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    user.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    until("a reconcile failed", || {
        logs.text().contains("reconcile failed")
    })
    .await;
    controller.abort();
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("reconcile failed"))
        .unwrap();
    assert!(
        line.contains("forbidden: the client may not perform this request (injected)"),
        "{line}"
    );
    assert!(line.contains("403") && line.contains("Forbidden"), "{line}");
    assert!(provider.jobs().is_empty(), "nothing launched");
}

/// Issue 16 problem 7: after this controller removed the finalizer, a reconcile of the stale
/// cached copy (read from the fake just before the removal) does nothing: no second
/// deprovisioning, no second `Deprovisioned` Event, no request.
#[tokio::test]
async fn a_stale_copy_after_the_finalizer_removal_does_nothing() {
    let server = FakeApiServer::builder().crd::<Network>().build();
    let provider = ScriptedProvider::new(); // jobs succeed at their first poll
    let operator = server.client_with_user_agent("network-operator/0.1");
    // Driven by hand, one reconcile right after the other: each must do the next step, so
    // none may be taken for the echo of the previous one's status write.
    let p = Provisioner::new(
        operator.clone(),
        lifecycle(&provider, Arc::new(provkit_core::SystemClock)),
        FINALIZER,
    )
    .with_own_write_window(Duration::ZERO)
    .with_events(EventPublisher::new(
        operator,
        Reporter {
            controller: "network-operator".into(),
            instance: None,
        },
    ));
    let api: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    api.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    // Reconcile until the job is recorded and done, then delete and reconcile until only the
    // finalizer removal is left: the copy read then is what a lagging cache still holds.
    let mut stale = None;
    for _ in 0..20 {
        let obj = api.get_opt("net-0").await.unwrap();
        let Some(obj) = obj else { break };
        if obj.meta().deletion_timestamp.is_none()
            && obj
                .provisioning_jobs()
                .iter()
                .any(|j| j.state == JobState::Succeeded)
        {
            api.delete("net-0", &DeleteParams::default()).await.unwrap();
            continue;
        }
        stale = Some(obj.clone());
        p.reconcile(Arc::new(obj), &NoCallbacks).await.unwrap();
    }
    assert!(api.get_opt("net-0").await.unwrap().is_none(), "deleted");
    let stale = stale.unwrap();
    assert!(
        stale
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER)
    );
    let calls = provider.calls().len();
    let requests = server.requests().len();
    let again = p.reconcile(Arc::new(stale), &NoCallbacks).await.unwrap();
    assert_eq!(again, Action::await_change());
    assert_eq!(provider.calls().len(), calls, "no second deprovisioning");
    assert_eq!(server.requests().len(), requests, "no request at all");
    let deprovisioned = server
        .events()
        .iter()
        .filter(|e| e["reason"] == "Deprovisioned")
        .count();
    assert_eq!(deprovisioned, 1);
}

/// A lifecycle over `provider`, whose jobs run until told otherwise, polled every 30 s without
/// jitter.
fn running_jobs_polled_every_30s(provider: &ScriptedProvider) -> Lifecycle {
    provider.set_default_statuses([StatusStep::State(JobState::Running)]);
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_secs(30));
    policy.poll_jitter = provkit_lifecycle::Jitter::None;
    Lifecycle::new(
        Arc::new(provider.clone()),
        Arc::new(provkit_core::SystemClock),
    )
    .with_policy(policy)
}

/// Issue 27 (2): the multi-target path answers the watch echo of its own status write as the
/// single-target path does (it polled every target again before), and its converged objects
/// come back after the resync period.
#[tokio::test]
async fn the_multi_target_path_skips_the_echo_of_its_own_write_too() {
    use provkit_kube::MultiTargetProvisioner;
    use provkit_lifecycle::{JobTarget, MultiTargetLifecycle};
    let server = FakeApiServer::builder().crd::<Network>().build();
    let (a, b) = (ScriptedProvider::new(), ScriptedProvider::new());
    let targets = MultiTargetLifecycle::new([
        JobTarget::new("a", running_jobs_polled_every_30s(&a)),
        JobTarget::new("b", running_jobs_polled_every_30s(&b)),
    ])
    .unwrap();
    let p = MultiTargetProvisioner::new(server.client(), targets, FINALIZER)
        .configure(|p| p.with_own_write_window(Duration::from_secs(60)));
    let api: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    api.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    let fresh = async || Arc::new(api.get("net-0").await.unwrap());
    let polls = || {
        [&a, &b]
            .iter()
            .flat_map(|p| p.calls())
            .filter(|c| matches!(c, ProviderCall::ProvisionStatus { .. }))
            .count()
    };
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    let launched = p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!((a.jobs().len(), b.jobs().len()), (1, 1));
    assert_eq!(launched, Action::requeue(Duration::from_secs(30)));
    let requests = server.requests().len();
    let echo = p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    let left = requeue_secs(&echo).expect("the requeue stands");
    assert!(left > 0.0 && left <= 30.0, "the requeue left: {echo:?}");
    assert_eq!(
        polls(),
        0,
        "no poll of either target for the echo of our own write"
    );
    assert_eq!(
        server.requests().len(),
        requests + 1,
        "only the test's own GET reached the API server"
    );
}

/// The watch echo of the Provisioner's own status write (the object exactly as that write left
/// it, within the window) is answered with the requeue the writing reconcile asked for, with no
/// provider call and no request; a change by anybody else, or the same version after the window,
/// reconciles normally.
#[tokio::test]
async fn the_echo_of_its_own_status_write_does_not_poll_again() {
    let server = FakeApiServer::builder().crd::<Network>().build();
    let provider = ScriptedProvider::new();
    let lifecycle = running_jobs_polled_every_30s(&provider);
    let window = Duration::from_millis(400);
    let p = Provisioner::new(server.client(), lifecycle, FINALIZER).with_own_write_window(window);
    let api: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    api.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    let fresh = async || Arc::new(api.get("net-0").await.unwrap());
    let polls = || {
        provider
            .calls()
            .iter()
            .filter(|c| matches!(c, ProviderCall::ProvisionStatus { .. }))
            .count()
    };
    // Finalizer, then the launch (intent write, launch, flush): the flush is our own write.
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    let launched = p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!(provider.jobs().len(), 1);
    assert_eq!(launched, Action::requeue(Duration::from_secs(30)));

    // The echo: same resourceVersion, within the window → the requeue left, nothing sent.
    let requests = server.requests().len();
    let echo = p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_ne!(echo, Action::await_change(), "the requeue stands");
    assert_eq!(polls(), 0, "no poll for the echo of our own write");
    assert_eq!(
        server.requests().len(),
        requests + 1,
        "only the test's own GET reached the API server"
    );

    // Past the window the same version is no echo any more: a normal reconcile, which polls
    // (the job is now running: a status write, whose echo is again answered without a poll).
    sleep(window + Duration::from_millis(100)).await;
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!(polls(), 1, "outside the window");
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!(polls(), 1, "the echo of the write that recorded 'running'");

    // Somebody else changed the object (a label): a normal reconcile, which polls.
    relabel(&api, "net-0").await;
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!(polls(), 2, "another writer's change is reconciled");
    // That poll wrote nothing (still running): nothing to echo, the next reconcile polls.
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!(polls(), 3);
}

/// Another writer's metadata-only change: the label `team: b` on `name`.
async fn relabel(api: &Api<Network>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"team": "b"}}})),
    )
    .await
    .unwrap();
}

/// A status write that lands on somebody else's change is nobody's echo. A reconcile working
/// on a copy read before the user deleted the object records a poll: its write conflicts, is
/// re-read and retried, and returns the deleting object. The next reconcile of that version
/// must deprovision — before, it was taken for the echo of the write and kept the requeue
/// the poll asked for, so the deletion waited for it (1 to 23 of 10,000 objects not deleted
/// within 30 minutes in the fleet's outage runs).
#[tokio::test]
async fn a_status_write_that_landed_on_a_deletion_is_not_an_echo() {
    let server = FakeApiServer::builder().crd::<Network>().build();
    let provider = ScriptedProvider::new();
    let lifecycle = running_jobs_polled_every_30s(&provider);
    let p = Provisioner::new(server.client(), lifecycle, FINALIZER)
        .with_own_write_window(Duration::from_secs(600));
    let api: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    api.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    let fresh = async || Arc::new(api.get("net-0").await.unwrap());
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    p.reconcile(fresh().await, &NoCallbacks).await.unwrap();
    assert_eq!(provider.jobs().len(), 1, "launched");
    // A label edit makes the next copy nobody's echo; the reconcile takes that copy (its job
    // is running by now), and the user deletes the object before its write.
    relabel(&api, "net-0").await;
    let before_delete = fresh().await;
    let state = |o: &Network| o.provisioning_jobs().first().map(|j| j.state.clone());
    assert_ne!(state(&before_delete), Some(JobState::Running));
    api.delete("net-0", &DeleteParams::default()).await.unwrap();
    let polled = p.reconcile(before_delete, &NoCallbacks).await.unwrap();
    assert_eq!(polled, Action::requeue(Duration::from_secs(30)));
    let deleting = fresh().await;
    assert!(deleting.meta().deletion_timestamp.is_some());
    assert_eq!(
        state(&deleting),
        Some(JobState::Running),
        "the poll's write landed on the deleting object"
    );
    let deprovisions = || {
        provider
            .calls()
            .iter()
            .filter(|c| matches!(c, ProviderCall::TriggerDeprovision { .. }))
            .count()
    };
    assert_eq!(deprovisions(), 0);
    p.reconcile(deleting, &NoCallbacks).await.unwrap();
    assert_eq!(
        deprovisions(),
        1,
        "the deletion is reconciled, not taken for an echo"
    );
}

/// Issue 27 (1): deletions lost after a relist. The controller's watch is told `410 Gone` while
/// the objects are being deleted; kube-runtime relists page by page and reconciles each page's
/// objects as it arrives — from the reflector's store, which keeps the copies from before the
/// deletions until the relist ends. Those reconciles see converged objects and nothing triggers
/// them again. With provkit's default settings (the resync, on by default) every object is
/// deprovisioned and released; with `without_resync()` (the default before issue 27) the first
/// page's objects keep their finalizers for good. Paused time: the ten-minute resync passes in
/// no wall time.
#[tokio::test(start_paused = true)]
async fn deletions_during_a_relist_are_not_lost_with_the_default_settings() {
    for resync in [true, false] {
        let left = deletions_across_a_relist(resync).await;
        if resync {
            assert!(
                left.is_empty(),
                "with the default resync: {left:?} never released"
            );
        } else {
            assert!(
                left.contains(&"net-0".to_owned()) && left.contains(&"net-1".to_owned()),
                "without resync the first page is stranded (the hazard this test guards): {left:?}"
            );
        }
    }
}

/// Four converged objects, a relist in pages of two that falls into their deletion; returns the
/// objects still present an hour (of paused time) later.
async fn deletions_across_a_relist(resync: bool) -> Vec<String> {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock {
        base: t(0),
        start: Instant::now(),
    });
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(clock.clone())
        .build();
    let provider = ScriptedProvider::new();
    provider.set_default_statuses([StatusStep::State(JobState::Succeeded)]);
    let client = server.client_named("operator");
    let provisioner = Provisioner::new(client.clone(), lifecycle(&provider, clock), FINALIZER);
    let provisioner = Arc::new(if resync {
        provisioner
    } else {
        provisioner.without_resync()
    });
    let user: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    for i in 0..4 {
        user.create(&PostParams::default(), &network(i))
            .await
            .unwrap();
    }
    let controller = tokio::spawn(
        Controller::new(
            Api::<Network>::all(client),
            watcher::Config::default().page_size(2).timeout(10),
        )
        .run(reconcile_plain, quick_retry, provisioner)
        .for_each(|_| async {}),
    );
    let converged = async || {
        let all = user.list(&Default::default()).await.unwrap().items;
        all.len() == 4
            && all.iter().all(|n| {
                n.provisioning_jobs()
                    .iter()
                    .any(|j| j.state == JobState::Succeeded)
            })
    };
    let mut waited = 0;
    while !converged().await {
        waited += 1;
        assert!(waited < 600, "the objects never converged");
        sleep(Duration::from_millis(100)).await;
    }
    // The next watch (once the current one times out, within 10 s) is told 410 Gone; the
    // relist's two pages each take a minute. The deletions land after the watch ended and
    // before the relist's snapshot.
    server.inject(
        Fault::new(FaultEffect::Gone)
            .verb(Verb::Watch)
            .resource("networks")
            .times(1),
    );
    server.inject(
        Fault::new(FaultEffect::Latency(Duration::from_secs(60)))
            .verb(Verb::List)
            .resource("networks")
            .times(2),
    );
    sleep(Duration::from_secs(30)).await;
    for i in 0..4 {
        user.delete(&format!("net-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    sleep(Duration::from_secs(3600)).await;
    controller.abort();
    let mut left: Vec<String> = server
        .objects::<Network>()
        .iter()
        .map(|n| n.metadata.name.clone().unwrap_or_default())
        .collect();
    left.sort();
    left
}

/// Issue 27 (2), a drift of the kind the issue names: issue 29's `on_deprovision_failed` reached
/// the single-target path only. The multi-target path now calls it (with the target's name)
/// for each target whose latest deprovision job failed, through the reconcile steps both paths
/// share.
#[tokio::test]
async fn the_multi_target_path_reports_a_failed_deprovision_per_target() {
    use provkit_kube::{MultiTargetCallbacks, MultiTargetProvisioner};
    use provkit_lifecycle::{JobTarget, MultiTargetLifecycle};

    #[derive(Default)]
    struct Seen(Mutex<Vec<(String, String)>>);
    impl MultiTargetCallbacks<Network> for Seen {
        fn on_deprovision_failed(&self, _obj: &mut Network, target: &str, message: &str) {
            self.0
                .lock()
                .unwrap()
                .push((target.to_owned(), message.to_owned()));
        }
    }

    let server = FakeApiServer::builder().crd::<Network>().build();
    let (a, b) = (ScriptedProvider::new(), ScriptedProvider::new());
    let clock: Arc<dyn Clock> = Arc::new(provkit_core::SystemClock);
    let targets = MultiTargetLifecycle::new([
        JobTarget::new("a", lifecycle(&a, clock.clone())),
        JobTarget::new("b", lifecycle(&b, clock)),
    ])
    .unwrap();
    let p = MultiTargetProvisioner::new(server.client(), targets, FINALIZER);
    let api: Api<Network> = Api::namespaced(server.client_named("user"), NS);
    api.create(&PostParams::default(), &network(0))
        .await
        .unwrap();
    let fresh = async || Arc::new(api.get("net-0").await.unwrap());
    let seen = Seen::default();
    let uid = fresh().await.metadata.uid.clone().unwrap();
    b.push_job_statuses(
        &uid,
        &JobType::Deprovision,
        [StatusStep::FailedWith("volume still attached".into())],
    );
    // Finalizer, launches, polls: both provision jobs succeed.
    for _ in 0..4 {
        p.reconcile(fresh().await, &seen).await.unwrap();
        sleep(Duration::from_millis(250)).await;
    }
    assert!(
        fresh()
            .await
            .provisioning_jobs()
            .iter()
            .filter(|j| j.state == JobState::Succeeded)
            .count()
            == 2,
        "both targets provisioned"
    );
    api.delete("net-0", &DeleteParams::default()).await.unwrap();
    // Deprovision jobs on both targets, then their polls: b's fails.
    for _ in 0..4 {
        let _ = p.reconcile(fresh().await, &seen).await;
        sleep(Duration::from_millis(250)).await;
    }
    let seen = seen.0.lock().unwrap().clone();
    assert!(!seen.is_empty(), "on_deprovision_failed was never called");
    assert!(
        seen.iter().all(|(target, _)| target == "b"),
        "only the failed target is reported: {seen:?}"
    );
    assert!(
        api.get_opt("net-0").await.unwrap().is_some(),
        "the failed deprovision keeps the finalizer"
    );
}
