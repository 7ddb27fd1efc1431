//! The per-object error backoff on the path users run: kube-runtime's `Controller` with
//! provkit-kube's `Provisioner` and the free `error_policy`, on the provkit-testing fake API
//! server (in-process `kube::Client`) and a `ScriptedProvider` whose launches fail.
//!
//! Tokio's clock is paused: the runtime jumps to the next timer whenever every task waits,
//! so the controller's requeues happen in virtual time and the counts below are exact, not
//! timed (nothing here depends on how fast the machine is).
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;
use common::{FINALIZER, Network, NetworkSpec};

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use provkit_core::{Clock, JobState, JobType, ManualClock};
use provkit_kube::{
    ErrorBackoffConfig, EventPublisher, NoCallbacks, ProvisionedResource, Provisioner,
    ReconcileError,
};
use provkit_lifecycle::Lifecycle;
use provkit_testing::fake_apiserver::{FakeApiServer, Verb};
use provkit_testing::scripted::{ProviderCall, ScriptedProvider, TriggerStep};
use serde_json::json;

/// The user's own context: the free `error_policy` reaches the provisioner through `AsRef`.
struct Ctx {
    provisioner: Provisioner<Network>,
}

impl AsRef<Provisioner<Network>> for Ctx {
    fn as_ref(&self) -> &Provisioner<Network> {
        &self.provisioner
    }
}

async fn reconcile(obj: Arc<Network>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &NoCallbacks).await
}

fn launches(provider: &ScriptedProvider) -> usize {
    provider
        .calls()
        .iter()
        .filter(|c| matches!(c, ProviderCall::TriggerProvision { .. }))
        .count()
}

fn launch_failed_events(server: &FakeApiServer) -> Vec<serde_json::Value> {
    server
        .events()
        .into_iter()
        .filter(|e| e["reason"] == "LaunchFailed")
        .collect()
}

/// The user's object, the fake API server and a controller running the `Provisioner` over
/// `provider`, with the error backoff's jitter off.
struct Running {
    server: FakeApiServer,
    api: Api<Network>,
    uid: String,
    ctx: Arc<Ctx>,
    controller: tokio::task::JoinHandle<()>,
}

/// Creates `net-a`, queues `failures` launches that fail with `step` for it, and starts the
/// controller.
async fn start(
    clock: &ManualClock,
    provider: &ScriptedProvider,
    failures: usize,
    step: impl Fn() -> TriggerStep,
) -> Running {
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(dyn_clock.clone())
        .build();
    let api: Api<Network> = Api::default_namespaced(server.client_named("user"));
    let created = api
        .create(
            &PostParams::default(),
            &Network::new(
                "net-a",
                NetworkSpec {
                    cidr: "10.0.0.0/24".into(),
                },
            ),
        )
        .await
        .unwrap();
    let uid = created.uid().unwrap();
    for _ in 0..failures {
        provider.push_trigger(&uid, step());
    }
    let operator = server.client_with_user_agent("network-operator/0.1");
    let reporter = Reporter {
        controller: "network-operator".into(),
        instance: Some("test-0".into()),
    };
    let provisioner = Provisioner::new(
        operator.clone(),
        Lifecycle::new(Arc::new(provider.clone()), dyn_clock),
        FINALIZER,
    )
    .with_events(EventPublisher::new(operator.clone(), reporter))
    .with_error_backoff(ErrorBackoffConfig::default().with_jitter(0.0));
    let ctx = Arc::new(Ctx { provisioner });
    let controller = tokio::spawn(
        Controller::new(Api::<Network>::all(operator), watcher::Config::default())
            .run(reconcile, provkit_kube::error_policy, ctx.clone())
            .for_each(|_| async {}),
    );
    Running {
        server,
        api,
        uid,
        ctx,
        controller,
    }
}

/// Failing launches back off per object (1 s doubling to 5 min, no jitter here): 11 failures
/// in 1,000 s where the former fixed 30 s requeue made 34; a success resets the object's
/// backoff, so the next failure is retried after 1 s again. Every failed reconcile is one
/// step of one `LaunchFailed` Event's series.
#[tokio::test(start_paused = true)]
async fn failing_reconciles_back_off_per_object_and_a_success_resets() {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    // Eleven failing launches are queued before the controller starts; the twelfth launches.
    let provider = ScriptedProvider::new();
    let Running {
        server,
        api,
        uid,
        ctx,
        controller,
    } = start(&clock, &provider, 11, || {
        TriggerStep::FailNotMade("template is disabled".into())
    })
    .await;

    // Failures at 0, 1, 3, 7, 15, 31, 63, 127, 255, 511 and 811 s. Each failed reconcile writes
    // its launch intent and the write that clears it (the launch certainly made no job), and
    // their watch events come back at once: taken for the echo of its own writes, they keep
    // the backoff's delay instead of running the failing launch again (before, the first
    // failure's echo did: failures at 0, 0, 2, 6, … s).
    tokio::time::sleep(Duration::from_secs(1000)).await;
    assert_eq!(launches(&provider), 11, "{:?}", provider.calls());
    let cached = api.get("net-a").await.unwrap();
    assert_eq!(ctx.provisioner.consecutive_failures(&cached), 11);
    let events = launch_failed_events(&server);
    assert_eq!(
        events.len(),
        1,
        "one Event for one repeating error: {events:?}"
    );
    assert_eq!(events[0]["series"]["count"], 11, "{}", events[0]);
    assert!(
        events[0]["note"]
            .as_str()
            .unwrap()
            .contains("template is disabled"),
        "{}",
        events[0]
    );
    // Each failed attempt wrote its launch intent before it launched (a fresh intent per
    // attempt bounds the idempotency lookup's window: issue 33) and the write that clears it
    // once the launch certainly made no job (the first of them also carries the desired
    // config version): two status writes per failure.
    let status_writes = |server: &FakeApiServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.verb == Some(Verb::Patch) && r.path.contains("/status"))
            .count()
    };
    assert_eq!(
        status_writes(&server),
        2 * launches(&provider),
        "{:?}",
        server.requests()
    );

    // The twelfth attempt (at 1,110 s) launches; the reconcile succeeds and resets the backoff.
    tokio::time::sleep(Duration::from_secs(200)).await;
    assert_eq!(launches(&provider), 12);
    let ready = api.get("net-a").await.unwrap();
    assert_eq!(ctx.provisioner.consecutive_failures(&ready), 0);
    let job = &ready.provisioning_jobs()[0];
    assert_eq!(job.job_type, JobType::Provision);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(
        api.get("net-a").await.unwrap().provisioning_jobs()[0].state,
        JobState::Succeeded
    );

    // A new spec whose launch fails again starts over at 1 s: 0, 1, 3, 7 s within 10 s
    // (without the reset the second retry would wait 5 min).
    for _ in 0..5 {
        provider.push_trigger(&uid, TriggerStep::FailNotMade("quota exceeded".into()));
    }
    api.patch(
        "net-a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"cidr": "10.9.0.0/24"}})),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(launches(&provider), 16, "{:?}", provider.calls());
    let events = launch_failed_events(&server);
    assert_eq!(
        events.len(),
        2,
        "a different error is a new Event: {events:?}"
    );
    controller.abort();
}

/// The echo of a failed reconcile's own writes keeps the backoff also when every attempt
/// writes something new: launches whose outcome is unknown (the answer was lost, nothing
/// found by the lookup) keep their intent, and with a clock that moves, each retry records a
/// fresh intent. Before the echo of a failed reconcile was recognised, its failures were
/// retried at once: 14 launches in these 1,000 s on 760a425.
#[tokio::test(start_paused = true)]
async fn failing_launches_with_fresh_intents_back_off_without_an_immediate_retry() {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let provider = ScriptedProvider::new();
    let running = start(&clock, &provider, 20, || {
        TriggerStep::Fail("connection reset".into())
    })
    .await;
    // The engine's clock follows tokio's (paused) clock.
    let ticking = clock.clone();
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            ticking.advance(Duration::from_millis(100));
        }
    });
    // Failures at 0, 1, 3, 7, 15, 31, 63, 127, 255, 511 and 811 s.
    tokio::time::sleep(Duration::from_secs(1000)).await;
    assert_eq!(launches(&provider), 11, "{:?}", provider.calls());
    let cached = running.api.get("net-a").await.unwrap();
    assert_eq!(running.ctx.provisioner.consecutive_failures(&cached), 11);
    assert!(
        cached
            .provisioning_status()
            .and_then(|s| s.launch_intent.as_ref())
            .is_some(),
        "an unknown outcome keeps its intent"
    );
    ticker.abort();
    running.controller.abort();
}

/// A rate limit anywhere in a failed reconcile's error chain — here a `Retry-After` on the
/// lookup by idempotency key, which the engine does not requeue for itself — is honoured: the
/// error backoff never requeues before it, and its own count goes on.
#[tokio::test]
async fn a_rate_limit_in_the_error_chain_is_honoured_by_the_error_policy() {
    use provkit_lifecycle::{IdempotencyKey, LifecycleError, ProviderError};
    let server = FakeApiServer::builder().crd::<Network>().build();
    let clock: Arc<dyn Clock> = Arc::new(provkit_core::SystemClock);
    let provisioner = Provisioner::<Network>::new(
        server.client(),
        Lifecycle::new(Arc::new(ScriptedProvider::new()), clock),
        FINALIZER,
    )
    .with_error_backoff(ErrorBackoffConfig::default().with_jitter(0.0));
    let mut obj = Network::new(
        "net-a",
        NetworkSpec {
            cidr: "10.0.0.0/24".into(),
        },
    );
    obj.metadata.namespace = Some("default".into());
    obj.metadata.uid = Some("uid-a".into());
    let lookup_failed = |source: ProviderError| ReconcileError::Lifecycle {
        object: "default/net-a".into(),
        source: LifecycleError::IdempotencyLookup {
            job_type: JobType::Provision,
            key: IdempotencyKey::new("key-a"),
            source,
        },
    };
    let limited = lookup_failed(ProviderError::rate_limited(Duration::from_secs(90)));
    assert_eq!(
        provisioner.error_policy(&obj, &limited),
        Action::requeue(Duration::from_secs(90)),
        "the first backoff step is 1 s; the Retry-After wins"
    );
    let plain = lookup_failed(ProviderError::other("connection reset"));
    assert_eq!(
        provisioner.error_policy(&obj, &plain),
        Action::requeue(Duration::from_secs(2)),
        "the backoff went on counting: the second step"
    );
    let short = lookup_failed(ProviderError::rate_limited(Duration::from_millis(100)));
    assert_eq!(
        provisioner.error_policy(&obj, &short),
        Action::requeue(Duration::from_secs(4)),
        "a shorter Retry-After does not shorten the backoff"
    );
    // An answer the provider cannot give yet (the lookup of another process's intent, deferred
    // until its launch window closes) is waited for the same way.
    let deferred = lookup_failed(ProviderError::other_with_source(
        "idempotency lookup deferred",
        provkit_lifecycle::RetryLater::new(
            "the launch window of intent key-a ends later",
            Duration::from_secs(45),
        ),
    ));
    assert_eq!(
        provisioner.error_policy(&obj, &deferred),
        Action::requeue(Duration::from_secs(45)),
        "the fourth backoff step is 8 s; the window's end wins"
    );
    assert_eq!(provisioner.consecutive_failures(&obj), 4);
}
