//! Quiet status on the path users run: kube-runtime's `Controller` with provkit-kube's
//! `Provisioner`, the real `AapProvider` against the fake AAP over loopback HTTP, and the
//! provkit-testing fake API server. An AAP outage must not turn into API-server write load:
//! a repeating error keeps the persisted text byte-identical (no request ids), so it costs one
//! status write per object, not one per poll; a launch whose lookup cannot prove absence is
//! shown as a `LaunchBlocked` condition and Event, once per distinct error.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;
use common::{FINALIZER, Network, NetworkSpec, eventually};

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use provkit_aap::{AapClient, AapProvider, CircuitBreakerConfig, RetryConfig};
use provkit_core::{Clock, JobState, ManualClock};
use provkit_kube::{
    ErrorBackoffConfig, EventPublisher, LAUNCH_BLOCKED_CONDITION, NoCallbacks, ProvisionedResource,
    Provisioner, ReconcileError,
};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy};
use provkit_testing::fake_aap::{
    FakeAap, FakeAapServer, Fault, FaultAction, JobScript, JobTemplateSpec, Trigger,
};
use provkit_testing::fake_apiserver::{FakeApiServer, Verb};
use serde_json::json;

async fn reconcile(
    obj: Arc<Network>,
    ctx: Arc<Provisioner<Network>>,
) -> Result<Action, ReconcileError> {
    ctx.reconcile(obj, &NoCallbacks).await
}

struct World {
    clock: ManualClock,
    aap: FakeAapServer,
    server: FakeApiServer,
    api: Api<Network>,
    controller: tokio::task::JoinHandle<()>,
}

/// The fake AAP (10 s jobs on a manual clock, no client retries), the fake API server, and a
/// controller polling every 100 ms with a 10 ms → 50 ms error backoff.
async fn world() -> World {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let template = |name: &str| JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10))),
        ..JobTemplateSpec::new(name, "osac")
    };
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("osac")
        .job_template(template("osac-create-network"))
        .job_template(template("osac-delete-network"))
        .start()
        .await
        .unwrap();
    let provider = AapProvider::builder(
        AapClient::builder(aap.base_url())
            .token(aap.token())
            .timeout(Duration::from_secs(5))
            .retry(RetryConfig::disabled())
            // Every poll reaches the fake: this test is about the status, not the breaker.
            .circuit_breaker(CircuitBreakerConfig::disabled())
            .build()
            .unwrap(),
    )
    .template_prefix("osac")
    .clock(dyn_clock.clone())
    .build();
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(100));
    policy.min_requeue = Duration::from_millis(10);
    let lifecycle = Lifecycle::new(Arc::new(provider), dyn_clock.clone()).with_policy(policy);
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(dyn_clock)
        .build();
    let operator = server.client_with_user_agent("network-operator/0.1");
    let reporter = Reporter {
        controller: "network-operator".into(),
        instance: Some("test-0".into()),
    };
    let provisioner = Provisioner::new(operator.clone(), lifecycle, FINALIZER)
        .with_events(EventPublisher::new(operator.clone(), reporter))
        .with_error_backoff(
            ErrorBackoffConfig::default()
                .with_initial(Duration::from_millis(10))
                .with_max(Duration::from_millis(50)),
        );
    let controller = tokio::spawn(
        Controller::new(Api::<Network>::all(operator), watcher::Config::default())
            .run(reconcile, provkit_kube::error_policy, Arc::new(provisioner))
            .for_each(|_| async {}),
    );
    let api = Api::default_namespaced(server.client_named("user"));
    World {
        clock,
        aap,
        server,
        api,
        controller,
    }
}

fn network() -> Network {
    Network::new(
        "net-a",
        NetworkSpec {
            cidr: "10.0.0.0/24".into(),
        },
    )
}

fn status_patches(server: &FakeApiServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| {
            r.client == "network-operator"
                && r.verb == Some(Verb::Patch)
                && r.path.contains("/status")
        })
        .count()
}

fn latest_job(n: &Network) -> Option<provkit_core::JobStatus> {
    n.provisioning_jobs().last().cloned()
}

/// During an AAP outage (every job poll answers 500 with a fresh `X-API-Request-Id`), 20 polls
/// cost exactly one status write: the job's message says what fails, and says it the same way
/// each time. Before, every poll rewrote it with the new request id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aap_outage_costs_one_status_write_per_object() {
    let w = world().await;
    w.api
        .create(&PostParams::default(), &network())
        .await
        .unwrap();
    eventually("the job is launched and recorded", || async {
        latest_job(&w.api.get("net-a").await.unwrap()).is_some()
    })
    .await;
    // Into the job's run: the next poll writes its state, after which polls change nothing.
    w.clock.advance(Duration::from_secs(2));
    eventually("a poll has written the job's state", || async {
        latest_job(&w.api.get("net-a").await.unwrap()).is_some_and(|j| j.state == JobState::Running)
    })
    .await;

    // Settled first: a status write still on its way when the outage begins would count as
    // the outage's. Five polls in a row without a write (a pass-through fault counts them).
    let polls = w.aap.aap().add_fault(Fault::new(
        "GET",
        "/api/v2/jobs/*/",
        FaultAction::Latency(Duration::ZERO),
    ));
    let mut settled = None;
    for _ in 0..20 {
        let patches = status_patches(&w.server);
        let seen = w.aap.aap().fault_hits(polls);
        eventually("five more polls", || async {
            w.aap.aap().fault_hits(polls) >= seen + 5
        })
        .await;
        if status_patches(&w.server) == patches {
            settled = Some(patches);
            break;
        }
    }
    w.aap.aap().remove_fault(polls);
    let before = settled.expect("polls of a running job stop writing status");
    let outage = w.aap.aap().add_fault(Fault::new(
        "GET",
        "/api/v2/jobs/*/",
        FaultAction::server_error(),
    ));
    eventually("20 polls failed", || async {
        w.aap.aap().fault_hits(outage) >= 20
    })
    .await;
    let during = status_patches(&w.server) - before;
    let job = latest_job(&w.api.get("net-a").await.unwrap()).unwrap();
    assert_eq!(
        during,
        1,
        "status writes during the outage: {:?}",
        w.server.requests()
    );
    assert_eq!(job.state, JobState::Running, "{job:?}");
    assert!(
        job.message.starts_with("Failed to get job status"),
        "{}",
        job.message
    );
    assert!(job.message.contains("500"), "{}", job.message);
    assert!(!job.message.contains("request id"), "{}", job.message);

    // Recovery: the next poll writes the real state again, and the job finishes.
    w.aap.aap().remove_fault(outage);
    w.clock.advance(Duration::from_secs(60));
    eventually("the job is seen to succeed", || async {
        latest_job(&w.api.get("net-a").await.unwrap())
            .is_some_and(|j| j.state == JobState::Succeeded)
    })
    .await;
    assert_eq!(w.aap.aap().jobs().len(), 1);
    w.controller.abort();
}

/// The launch answer is lost and the lookup by idempotency key is refused (AWX's
/// `Filtering on extra_vars is not allowed.`): absence cannot be proven, so nothing is
/// launched again; the object shows a `LaunchBlocked` condition and one `LaunchBlocked`
/// Warning Event, whose series grows with each failed reconcile while the status is not
/// rewritten. Once the lookup works again the job is adopted and the condition goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_that_cannot_prove_absence_is_a_launch_blocked_event() {
    let w = world().await;
    let aap = w.aap.aap();
    aap.add_fault(
        Fault::new(
            "POST",
            "/api/v2/job_templates/*/launch/",
            FaultAction::ConnectionReset,
        )
        .after()
        .trigger(Trigger::Nth(1)),
    );
    let refused = aap.add_fault(Fault::new(
        "GET",
        "/api/v2/jobs/",
        FaultAction::json(
            403,
            &json!({"detail": "Filtering on extra_vars is not allowed."}),
        ),
    ));
    w.api
        .create(&PostParams::default(), &network())
        .await
        .unwrap();

    let blocked_events = |server: &FakeApiServer| {
        server
            .events()
            .into_iter()
            .filter(|e| e["reason"] == "LaunchBlocked")
            .collect::<Vec<_>>()
    };
    eventually("a LaunchBlocked Event", || async {
        !blocked_events(&w.server).is_empty()
    })
    .await;
    let obj = w.api.get("net-a").await.unwrap();
    let condition = obj
        .provisioning_status()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == LAUNCH_BLOCKED_CONDITION)
        .cloned()
        .unwrap();
    assert_eq!(condition.status, "True");
    assert!(
        condition.message.contains("refuses this filter"),
        "{}",
        condition.message
    );
    assert!(
        !condition.message.contains("request id"),
        "{}",
        condition.message
    );

    // More failed reconciles: the same Event's series grows, the status is not rewritten.
    let writes = status_patches(&w.server);
    eventually("the LaunchBlocked series reaches 5", || async {
        blocked_events(&w.server)
            .first()
            .is_some_and(|e| e["series"]["count"].as_u64() >= Some(5))
    })
    .await;
    let events = blocked_events(&w.server);
    assert_eq!(
        events.len(),
        1,
        "one Event for one repeating error: {events:?}"
    );
    assert_eq!(events[0]["type"], "Warning");
    assert!(
        events[0]["note"]
            .as_str()
            .unwrap()
            .contains("refuses this filter"),
        "{}",
        events[0]
    );
    assert_eq!(
        status_patches(&w.server),
        writes,
        "{:?}",
        w.server.requests()
    );
    assert_eq!(
        aap.jobs().len(),
        1,
        "nothing launched while absence is unproven"
    );

    // The lookup works again: the lost launch's job is adopted, the condition removed.
    aap.remove_fault(refused);
    eventually("the job is adopted and the condition removed", || async {
        let obj = w.api.get("net-a").await.unwrap();
        let st = obj.provisioning_status().unwrap();
        st.provisioning_jobs.len() == 1
            && !st
                .conditions
                .iter()
                .any(|c| c.type_ == LAUNCH_BLOCKED_CONDITION)
    })
    .await;
    assert_eq!(aap.jobs().len(), 1);
    w.controller.abort();
}
