//! The cut-over check program (examples/cutover_check.rs) against the provkit-testing fake API
//! server: Go-written `Subnet` objects are listed through a `kube::Client` as the typed CRD and
//! checked with the library check.
//!
//! Every expected config version is FNV-1a 64 over the exact bytes Go's `encoding/json` writes
//! for the kind's hash input — the wrapper `{Spec, ImplementationStrategy}` with the spec's fields
//! in Go declaration order (`network` before `cidr`) — computed independently of provkit's hasher
//! (like osac-provisioning.md §3.1's vectors) and written here as constants.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../cutover_check.rs"]
#[allow(dead_code)]
mod cutover_check;

use chrono::{DateTime, Duration, Utc};
use cutover_check::{
    STRATEGY_ANNOTATION, Subnet, SubnetSpec, check, exit_status, list_subnets, parse_subnets,
    render, summary,
};
use kube::api::{Api, Patch, PatchParams, PostParams};
use provkit_core::{JobState, JobStatus, JobType};
use provkit_kube::cutover::CutoverReason;
use provkit_lifecycle::Action;
use provkit_testing::fake_apiserver::FakeApiServer;
use serde_json::json;

/// Go: `{"Spec":{"network":"net-b","cidr":"10.0.6.0/24"},"ImplementationStrategy":"ovn"}`.
const GO_FIELD_ORDER: &str = "15b48db891f78e94";
/// Go: `{"Spec":{"network":"net-a","cidr":"10.0.1.0/24"},"ImplementationStrategy":"ovn"}`.
const GO_READY: &str = "5c363c3ed8808a80";
/// Go: `{"Spec":{"network":"net-a","cidr":"10.0.2.0/24"},"ImplementationStrategy":"ovn"}`.
const GO_RUNNING: &str = "7b194200717304c3";
/// `{"cidr":"10.0.6.0/24","network":"net-b"}`: the bare spec with sorted keys, what the old
/// untyped program hashed (`.spec` as a JSON map). Not what Go hashes for this kind.
const SORTED_BARE_SPEC: &str = "53ea6b1b50c17705";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-07-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn job(id: &str, state: JobState, version: &str, minutes_ago: i64) -> JobStatus {
    let mut j = JobStatus::new(
        id,
        JobType::Provision,
        state,
        now() - Duration::minutes(minutes_ago),
    );
    j.config_version = version.to_owned();
    j
}

/// Creates a Subnet as the Go operator left it: strategy annotation, spec, and its status.
async fn go_written(
    api: &Api<Subnet>,
    name: &str,
    network: &str,
    cidr: &str,
    jobs: &[JobStatus],
    stored: &str,
) {
    let mut obj = Subnet::new(
        name,
        SubnetSpec {
            network: network.into(),
            cidr: cidr.into(),
        },
    );
    obj.metadata.annotations = Some([(STRATEGY_ANNOTATION.to_owned(), "ovn".to_owned())].into());
    api.create(&PostParams::default(), &obj).await.unwrap();
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "provisioningJobs": jobs,
            "desiredConfigVersion": stored,
        }})),
    )
    .await
    .unwrap();
}

async fn fleet() -> FakeApiServer {
    let server = FakeApiServer::builder()
        .crd::<Subnet>()
        .namespace("tenant-a")
        .namespace("tenant-b")
        .build();
    let api: Api<Subnet> = Api::namespaced(server.client_named("go-operator"), "tenant-a");
    // Non-alphabetical Go field order inside the wrapper: must be Skip, not RE-PROVISION.
    go_written(
        &api,
        "subnet-field-order",
        "net-b",
        "10.0.6.0/24",
        &[job("107", JobState::Succeeded, GO_FIELD_ORDER, 30)],
        GO_FIELD_ORDER,
    )
    .await;
    go_written(
        &api,
        "subnet-ready",
        "net-a",
        "10.0.1.0/24",
        &[job("101", JobState::Succeeded, GO_READY, 60)],
        GO_READY,
    )
    .await;
    go_written(
        &api,
        "subnet-provisioning",
        "net-a",
        "10.0.2.0/24",
        &[job("102", JobState::Running, GO_RUNNING, 1)],
        GO_RUNNING,
    )
    .await;
    // A Go operator whose stored version provkit does not reproduce (here: the sorted bare spec):
    // the one case the check exists to flag.
    go_written(
        &api,
        "subnet-mismatch",
        "net-b",
        "10.0.6.0/24",
        &[job("108", JobState::Succeeded, SORTED_BARE_SPEC, 30)],
        SORTED_BARE_SPEC,
    )
    .await;
    server
}

#[tokio::test]
async fn go_written_objects_listed_from_the_api_server() {
    let server = fleet().await;
    let objects = list_subnets(server.client_named("cutover-check"), None)
        .await
        .unwrap();
    assert_eq!(objects.len(), 4);
    let results = check(&objects, now());
    let reports: Vec<_> = results.iter().map(|r| r.as_ref().unwrap()).collect();
    let by = |name: &str| {
        *reports
            .iter()
            .find(|r| r.object == format!("tenant-a/{name}"))
            .unwrap()
    };

    let order = by("subnet-field-order");
    assert_eq!(order.desired, GO_FIELD_ORDER);
    assert_eq!(
        (order.action, &order.reason),
        (Action::Skip, &CutoverReason::ConfigApplied)
    );
    assert!(!order.reprovisions_because_of_cutover());
    let ready = by("subnet-ready");
    assert_eq!(
        (ready.desired.as_str(), ready.action),
        (GO_READY, Action::Skip)
    );
    let running = by("subnet-provisioning");
    assert_eq!(
        (running.desired.as_str(), running.action, &running.reason),
        (GO_RUNNING, Action::Poll, &CutoverReason::InFlight)
    );
    let mismatch = by("subnet-mismatch");
    assert_eq!(mismatch.desired, GO_FIELD_ORDER);
    assert_eq!(mismatch.reason, CutoverReason::HashDiffersFromGo);
    assert!(mismatch.reprovisions_because_of_cutover());

    assert_eq!(exit_status(&results), 2);
    let ok: Vec<_> = reports.into_iter().cloned().collect();
    assert_eq!(
        summary(&ok),
        "4 object(s); Skip: 2, Trigger: 1, Poll: 1; re-provisioned by the cut-over: 1"
    );
    let table = render(&ok);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 5);
    let col = lines[0].find("ACTION").unwrap();
    for l in &lines[1..] {
        assert!(
            ["Skip", "Trigger", "Poll"]
                .iter()
                .any(|a| l[col..].starts_with(a)),
            "{l}"
        );
    }
    assert!(table.contains("RE-PROVISION"), "{table}");
}

#[tokio::test]
async fn one_namespace_only_and_no_reprovision_means_exit_zero() {
    let server = fleet().await;
    let other: Api<Subnet> = Api::namespaced(server.client_named("go-operator"), "tenant-b");
    go_written(
        &other,
        "subnet-b",
        "net-b",
        "10.0.6.0/24",
        &[job("201", JobState::Succeeded, GO_FIELD_ORDER, 5)],
        GO_FIELD_ORDER,
    )
    .await;
    let objects = list_subnets(server.client_named("cutover-check"), Some("tenant-b"))
        .await
        .unwrap();
    assert_eq!(objects.len(), 1);
    let results = check(&objects, now());
    assert_eq!(results[0].as_ref().unwrap().action, Action::Skip);
    assert_eq!(exit_status(&results), 0);
}

#[tokio::test]
async fn kubectl_json_is_read_as_the_typed_crd() {
    let server = fleet().await;
    let objects = list_subnets(server.client_named("cutover-check"), None)
        .await
        .unwrap();
    // What `kubectl get subnets -o json` prints: a List of the same objects.
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let parsed = parse_subnets(&list.to_string()).unwrap();
    let value = |o: &[Subnet]| serde_json::to_value(o).unwrap();
    assert_eq!(value(&parsed), value(&objects));
    let single = parse_subnets(&serde_json::to_string(&objects[0]).unwrap()).unwrap();
    assert_eq!(single.len(), 1);
    assert!(parse_subnets(r#"{"kind": "Subnet", "spec": 5}"#).is_err());
}
