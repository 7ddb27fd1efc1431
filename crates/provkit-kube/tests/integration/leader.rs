use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use provkit_core::{Clock, ManualClock};
use provkit_kube::LeaderElector;
use serde_json::{Value, json};

use crate::fixtures::*;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

fn lease(rv: &str, holder: Option<&str>, renew: &str, transitions: i32) -> Value {
    let mut spec = json!({
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-06-29T12:00:00.000000Z",
        "renewTime": renew,
        "leaseTransitions": transitions
    });
    if let Some(h) = holder {
        spec["holderIdentity"] = h.into();
    }
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": "provkit-operator", "namespace": "default", "resourceVersion": rv},
           "spec": spec})
}

async fn elect(clock: &ManualClock, script: Vec<Exchange>) -> bool {
    let (client, verifier) = testcontext();
    let server = verifier.run(script);
    let clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let e = LeaderElector::new(
        Api::<Lease>::namespaced(client, NS),
        "provkit-operator",
        "pod-a",
        Duration::from_secs(15),
        clock,
    );
    let leader = e.try_acquire_or_renew().await.unwrap();
    timeout_after_1s(server).await;
    leader
}

#[tokio::test]
async fn creates_the_lease_when_absent() {
    let clock = ManualClock::new(t(0));
    let created = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "provkit-operator"},
        "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
                 "acquireTime": "2026-06-29T12:00:00.000000Z", "renewTime": "2026-06-29T12:00:00.000000Z", "leaseTransitions": 0}
    });
    let leader = elect(
        &clock,
        vec![
            Exchange::get(format!("{LEASES}/provkit-operator"), Value::Null).fails(404, "NotFound"),
            Exchange::post(
                format!("{LEASES}?"),
                BodyCheck::Json(created.clone()),
                created,
            ),
        ],
    )
    .await;
    assert!(leader);
}

#[tokio::test]
async fn losing_the_create_race_is_not_leader() {
    let clock = ManualClock::new(t(0));
    let leader = elect(
        &clock,
        vec![
            Exchange::get(format!("{LEASES}/provkit-operator"), Value::Null).fails(404, "NotFound"),
            Exchange::post(
                format!("{LEASES}?"),
                BodyCheck::Check(Box::new(|_| {})),
                Value::Null,
            )
            .fails(409, "AlreadyExists"),
        ],
    )
    .await;
    assert!(!leader);
}

#[tokio::test]
async fn renews_its_own_lease_with_the_read_resource_version() {
    let clock = ManualClock::new(t(0));
    clock.advance(Duration::from_secs(5));
    let current = lease("7", Some("pod-a"), "2026-06-29T12:00:00.000000Z", 0);
    let mut renewed = current.clone();
    renewed["spec"]["renewTime"] = "2026-06-29T12:00:05.000000Z".into();
    let leader = elect(
        &clock,
        vec![
            Exchange::get(format!("{LEASES}/provkit-operator"), current),
            Exchange::put(
                format!("{LEASES}/provkit-operator?"),
                renewed.clone(),
                renewed,
            ),
        ],
    )
    .await;
    assert!(leader);
}

#[tokio::test]
async fn does_not_take_a_live_lease() {
    let clock = ManualClock::new(t(0));
    clock.advance(Duration::from_secs(15)); // renewTime + 15 s is not yet *past*
    let held = lease("7", Some("pod-b"), "2026-06-29T12:00:00.000000Z", 3);
    let leader = elect(
        &clock,
        vec![Exchange::get(format!("{LEASES}/provkit-operator"), held)],
    )
    .await;
    assert!(!leader);
}

#[tokio::test]
async fn takes_over_an_expired_lease_and_counts_the_transition() {
    let clock = ManualClock::new(t(0));
    clock.advance(Duration::from_secs(16));
    let held = lease("7", Some("pod-b"), "2026-06-29T12:00:00.000000Z", 3);
    let mut taken = held.clone();
    taken["spec"]["holderIdentity"] = "pod-a".into();
    taken["spec"]["acquireTime"] = "2026-06-29T12:00:16.000000Z".into();
    taken["spec"]["renewTime"] = "2026-06-29T12:00:16.000000Z".into();
    taken["spec"]["leaseTransitions"] = 4.into();
    let leader = elect(
        &clock,
        vec![
            Exchange::get(format!("{LEASES}/provkit-operator"), held),
            Exchange::put(format!("{LEASES}/provkit-operator?"), taken.clone(), taken),
        ],
    )
    .await;
    assert!(leader);
}

#[tokio::test]
async fn a_conflicting_takeover_is_not_leader() {
    let clock = ManualClock::new(t(0));
    clock.advance(Duration::from_secs(60));
    let held = lease("7", None, "2026-06-29T12:00:00.000000Z", 1);
    let leader = elect(
        &clock,
        vec![
            Exchange::get(format!("{LEASES}/provkit-operator"), held),
            Exchange {
                method: http::Method::PUT,
                uri: format!("{LEASES}/provkit-operator?"),
                body: BodyCheck::Check(Box::new(|b: &Value| {
                    assert_eq!(b["spec"]["holderIdentity"], "pod-a");
                })),
                status: http::StatusCode::OK,
                reply: Value::Null,
            }
            .fails(409, "Conflict"),
        ],
    )
    .await;
    assert!(!leader);
}

#[tokio::test]
async fn step_down_clears_the_holder_only_when_we_hold_it() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(t(0)));
    let mine = lease("7", Some("pod-a"), "2026-06-29T12:00:00.000000Z", 2);
    let mut released = mine.clone();
    released["spec"]
        .as_object_mut()
        .unwrap()
        .remove("holderIdentity");
    released["spec"]["acquireTime"] = "2026-06-29T12:00:00.000000Z".into();
    let theirs = lease("8", Some("pod-b"), "2026-06-29T12:00:00.000000Z", 3);
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        Exchange::get(format!("{LEASES}/provkit-operator"), mine),
        Exchange::put(
            format!("{LEASES}/provkit-operator?"),
            released.clone(),
            released,
        ),
        Exchange::get(format!("{LEASES}/provkit-operator"), theirs),
    ]);
    let e = LeaderElector::new(
        Api::<Lease>::namespaced(client, NS),
        "provkit-operator",
        "pod-a",
        Duration::from_secs(15),
        clock,
    );
    assert!(e.step_down().await.unwrap());
    assert!(
        !e.step_down().await.unwrap(),
        "someone else's lease is left alone"
    );
    timeout_after_1s(server).await;
}
