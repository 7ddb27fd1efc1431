//! `KubeProgressHandle` (feature `machines`) over a `kube::Client` whose API server is
//! in-process: scripted exchanges (exact wire format), and a small stateful API server that
//! keeps one object, applies JSON merge patches and enforces `resourceVersion`
//! preconditions — enough to run the progress-handle conformance suite and the crash-point
//! tests of `ensure_instance` / `cleanup_instance` through the API server.
#![allow(
    clippy::unwrap_used,
    clippy::needless_pass_by_value,
    missing_docs,
    unreachable_pub
)]

#[allow(dead_code)]
#[path = "integration/fixtures.rs"]
mod fixtures;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use fixtures::{Exchange, testcontext, timeout_after_1s};
use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::client::Body;
use kube::{Api, Client};
use provkit_core::ManualClock;
use provkit_kube::KubeProgressHandle;
use provkit_machines::cloud::{
    CleanupProgress, EnsureConfig, EnsureError, EnsureOutcome, MachineProgress, MachineView,
    PROGRESS_ANNOTATION, ProgressError, ProgressHandle, cleanup_instance, ensure_instance,
};
use provkit_testing::machines::conformance::progress_handle_contract;
use provkit_testing::machines::{
    CrashSwitch, CrashingCloud, CrashingProgress, FakeCloudConfig, FakeCloudProvider,
};
use serde_json::{Value, json};
use tower_test::mock;

const NS: &str = "default";
const NAME: &str = "worker-0";
const UID: &str = "0d9e4f1a-0000-4000-8000-0000000000aa";
const OBJ: &str = "/api/v1/namespaces/default/configmaps/worker-0";
const PATCH: &str = "/api/v1/namespaces/default/configmaps/worker-0?";

fn machine_object(rv: &str, progress: Option<&str>) -> Value {
    let mut meta = json!({"name": NAME, "namespace": NS, "uid": UID, "resourceVersion": rv,
        "annotations": {"other": "kept"}});
    if let Some(p) = progress {
        meta["annotations"][PROGRESS_ANNOTATION] = json!(p);
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
}

fn handle(client: Client) -> KubeProgressHandle<ConfigMap> {
    KubeProgressHandle::new(Api::namespaced(client, NS), NAME)
}

fn patch_body(rv: &str, progress: &str) -> Value {
    json!({"metadata": {"resourceVersion": rv, "annotations": {PROGRESS_ANNOTATION: progress}}})
}

// ---- scripted: the exact requests -------------------------------------------------------

#[tokio::test]
async fn update_reads_fresh_and_patches_the_annotation_with_a_precondition() {
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        Exchange::get(OBJ, machine_object("7", None)),
        Exchange::patch(
            PATCH,
            patch_body("7", r#"{"finalizers":["nic"]}"#),
            machine_object("8", Some(r#"{"finalizers":["nic"]}"#)),
        ),
    ]);
    let stored = handle(client).add_finalizer("nic").await.unwrap();
    assert_eq!(stored.finalizers, BTreeSet::from(["nic".to_owned()]));
    timeout_after_1s(server).await;
}

/// Issue 27 (3): a progress write carries the configured field manager (it sent none before).
#[tokio::test]
async fn update_carries_the_field_manager() {
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        Exchange::get(OBJ, machine_object("7", None)),
        Exchange::patch(
            format!("{PATCH}&fieldManager=machine-operator"),
            patch_body("7", r#"{"finalizers":["nic"]}"#),
            machine_object("8", Some(r#"{"finalizers":["nic"]}"#)),
        ),
    ]);
    handle(client)
        .with_field_manager("machine-operator")
        .add_finalizer("nic")
        .await
        .unwrap();
    timeout_after_1s(server).await;
}

/// Issue 27 (3): an object read without a `resourceVersion` is not written (before, the
/// patch carried `"resourceVersion": null`, an unconditional write).
#[tokio::test]
async fn no_write_without_a_resource_version() {
    let (client, verifier) = testcontext();
    let mut obj = machine_object("7", None);
    obj["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let server = verifier.run(vec![Exchange::get(OBJ, obj)]);
    let err = handle(client).add_finalizer("nic").await.unwrap_err();
    assert!(
        matches!(&err, ProgressError::Backend { source, .. }
            if source.downcast_ref::<provkit_kube::MissingResourceVersion>().is_some()),
        "{err:?}"
    );
    timeout_after_1s(server).await;
}

#[tokio::test]
async fn a_conflict_is_retried_on_the_re_read_object() {
    let (client, verifier) = testcontext();
    let theirs = r#"{"instanceId":"i-1"}"#;
    let both = r#"{"instanceId":"i-1","finalizers":["nic"]}"#;
    let server = verifier.run(vec![
        Exchange::get(OBJ, machine_object("7", None)),
        Exchange::patch(
            PATCH,
            patch_body("7", r#"{"finalizers":["nic"]}"#),
            Value::Null,
        )
        .fails(409, "Conflict"),
        Exchange::get(OBJ, machine_object("9", Some(theirs))),
        Exchange::patch(
            PATCH,
            patch_body("9", both),
            machine_object("10", Some(both)),
        ),
    ]);
    let stored = handle(client).add_finalizer("nic").await.unwrap();
    assert_eq!(
        stored.instance_id.as_deref(),
        Some("i-1"),
        "their change kept"
    );
    assert!(stored.finalizers.contains("nic"), "ours applied");
    timeout_after_1s(server).await;
}

#[tokio::test]
async fn repeated_conflicts_end_in_a_typed_error() {
    let (client, verifier) = testcontext();
    let mut script = Vec::new();
    for rv in ["1", "2"] {
        script.push(Exchange::get(OBJ, machine_object(rv, None)));
        script.push(
            Exchange::patch(
                PATCH,
                patch_body(rv, r#"{"instanceId":"i-9"}"#),
                Value::Null,
            )
            .fails(409, "Conflict"),
        );
    }
    let server = verifier.run(script);
    let h = handle(client).with_max_attempts(std::num::NonZeroU32::new(2).unwrap());
    let err = h.set_instance_id("i-9").await.unwrap_err();
    assert!(
        matches!(err, ProgressError::Conflict { attempts: 2, .. }),
        "{err:?}"
    );
    timeout_after_1s(server).await;
}

#[tokio::test]
async fn no_op_updates_write_nothing_and_errors_are_typed() {
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        Exchange::get(OBJ, machine_object("3", Some(r#"{"instanceId":"i-1"}"#))),
        Exchange::get(OBJ, machine_object("3", Some("{not json"))),
        Exchange::get(OBJ, Value::Null).fails(404, "NotFound"),
        Exchange::get(OBJ, Value::Null).fails(500, "InternalError"),
    ]);
    let h = handle(client);
    let same = h.set_instance_id("i-1").await.unwrap();
    assert_eq!(same.instance_id.as_deref(), Some("i-1"));
    assert!(matches!(h.load().await, Err(ProgressError::Corrupt { .. })));
    assert!(matches!(h.load().await, Err(ProgressError::Gone { .. })));
    assert!(matches!(h.load().await, Err(ProgressError::Backend { .. })));
    timeout_after_1s(server).await;
}

// ---- a stateful in-process API server ------------------------------------------------------

/// One object, GET and merge PATCH with a `resourceVersion` precondition.
#[derive(Clone, Default)]
struct ApiServer {
    state: Arc<Mutex<ServerState>>,
}

#[derive(Default)]
struct ServerState {
    object: Value,
    rv: u64,
    /// Before answering the GET with this (0-based) number, a concurrent writer changes the
    /// object (another annotation), so the following PATCH conflicts.
    interfere_at_get: Option<u64>,
    gets: u64,
    conflicts: u64,
}

fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn reply(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

fn status_error(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": reason, "reason": reason, "code": code})
}

impl ApiServer {
    fn new() -> Self {
        let s = Self::default();
        {
            let mut st = s.lock();
            st.rv = 1;
            st.object = machine_object("1", None);
        }
        s
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn progress(&self) -> MachineProgress {
        let st = self.lock();
        st.object["metadata"]["annotations"][PROGRESS_ANNOTATION]
            .as_str()
            .map(|s| serde_json::from_str(s).unwrap())
            .unwrap_or_default()
    }

    fn answer(&self, method: &Method, uri: &str, body: &[u8]) -> Response<Body> {
        let mut st = self.lock();
        let path = uri.split('?').next().unwrap_or_default();
        if path != OBJ {
            return reply(StatusCode::NOT_FOUND, &status_error(404, "NotFound"));
        }
        match *method {
            Method::GET => {
                if st.interfere_at_get == Some(st.gets) {
                    st.rv += 1;
                    let rv = st.rv.to_string();
                    st.object["metadata"]["annotations"]["concurrent"] = json!("writer");
                    st.object["metadata"]["resourceVersion"] = json!(rv);
                    // The concurrent write lands after our read: answer with the old object.
                    let mut stale = st.object.clone();
                    stale["metadata"]["resourceVersion"] = json!((st.rv - 1).to_string());
                    st.gets += 1;
                    return reply(StatusCode::OK, &stale);
                }
                st.gets += 1;
                reply(StatusCode::OK, &st.object)
            }
            Method::PATCH => {
                let patch: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let want = patch["metadata"]["resourceVersion"].as_str();
                if want.is_some_and(|rv| rv != st.rv.to_string()) {
                    st.conflicts += 1;
                    return reply(StatusCode::CONFLICT, &status_error(409, "Conflict"));
                }
                merge(&mut st.object, &patch);
                st.rv += 1;
                let rv = st.rv.to_string();
                st.object["metadata"]["resourceVersion"] = json!(rv);
                reply(StatusCode::OK, &st.object)
            }
            _ => reply(
                StatusCode::METHOD_NOT_ALLOWED,
                &status_error(405, "MethodNotAllowed"),
            ),
        }
    }

    /// A `kube::Client` served by this API server (a task answering until the client drops).
    fn client(&self) -> Client {
        let (svc, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let server = self.clone();
        tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                let method = request.method().clone();
                let uri = request.uri().to_string();
                let body = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .unwrap_or_default();
                send.send_response(server.answer(&method, &uri, &body));
            }
        });
        Client::new(svc, NS)
    }
}

#[tokio::test]
async fn the_kube_handle_passes_the_progress_contract() {
    let server = ApiServer::new();
    progress_handle_contract(&handle(server.client())).await;
    let st = server.lock();
    assert_eq!(
        st.object["metadata"]["annotations"]["other"], "kept",
        "other annotations untouched"
    );
}

#[tokio::test]
async fn a_concurrent_write_is_kept_and_ours_applied() {
    let server = ApiServer::new();
    server.lock().interfere_at_get = Some(0);
    let h = handle(server.client());
    h.set_instance_id("i-1").await.unwrap();
    let st = server.lock();
    assert_eq!(st.conflicts, 1, "the first patch conflicted");
    assert_eq!(st.object["metadata"]["annotations"]["concurrent"], "writer");
    drop(st);
    assert_eq!(server.progress().instance_id.as_deref(), Some("i-1"));
}

// ---- crash points through the API server -------------------------------------------------

const CONFIG: EnsureConfig = EnsureConfig {
    visibility_deadline: Duration::from_secs(600),
};

fn machine() -> MachineView {
    MachineView::new(UID, NAME, json!({"size": "small"}))
}

/// What survives a crash: the cloud, the API server, the clock.
struct World {
    cloud: Arc<FakeCloudProvider>,
    server: ApiServer,
    clock: ManualClock,
}

impl World {
    fn new(idempotent_create: bool) -> Self {
        Self {
            cloud: Arc::new(FakeCloudProvider::new(FakeCloudConfig {
                idempotent_create,
                get_misses_after_create: 2,
                sub_resources: vec!["public-ip".into(), "nic".into()],
                ..FakeCloudConfig::default()
            })),
            server: ApiServer::new(),
            clock: ManualClock::new(Utc.timestamp_opt(1_800_000_000, 0).unwrap()),
        }
    }

    async fn ensure(&self, switch: &CrashSwitch) -> Option<Result<EnsureOutcome, EnsureError>> {
        // A fresh client and handle per reconcile: in-memory state a crash drops.
        let cloud = CrashingCloud::new(self.cloud.clone(), switch.clone());
        let progress = CrashingProgress::new(handle(self.server.client()), switch.clone());
        let m = machine();
        switch
            .run(ensure_instance(
                &cloud,
                &m,
                "",
                &progress,
                &self.clock,
                CONFIG,
            ))
            .await
    }

    async fn cleanup(&self, switch: &CrashSwitch) -> Option<Result<CleanupProgress, EnsureError>> {
        let cloud = CrashingCloud::new(self.cloud.clone(), switch.clone());
        let progress = CrashingProgress::new(handle(self.server.client()), switch.clone());
        let m = machine();
        switch
            .run(cleanup_instance(&cloud, &m, &progress, &self.clock, CONFIG))
            .await
    }

    async fn converge_create(&self) -> Result<(), EnsureError> {
        for _ in 0..200 {
            match self.ensure(&CrashSwitch::disarmed()).await.unwrap() {
                Ok(EnsureOutcome::Found(_)) => return Ok(()),
                Ok(EnsureOutcome::Created(_)) => {}
                Ok(EnsureOutcome::NotVisibleYet { retry_after, .. }) => {
                    self.clock.advance(retry_after);
                }
                Err(e) => return Err(e),
            }
        }
        panic!("create did not converge");
    }

    async fn converge_cleanup(&self) {
        for _ in 0..200 {
            match self.cleanup(&CrashSwitch::disarmed()).await.unwrap() {
                Ok(CleanupProgress::Done) => return,
                Ok(CleanupProgress::InProgress { retry_after }) => {
                    self.clock
                        .advance(retry_after.unwrap_or(Duration::from_secs(10)));
                }
                Err(e) => panic!("cleanup failed: {e}"),
            }
        }
        panic!("cleanup did not converge");
    }
}

#[tokio::test]
async fn create_crashes_through_the_api_server_leave_one_instance_and_no_orphan() {
    let mut crashed = Vec::new();
    for point in 0.. {
        let world = World::new(true);
        let switch = CrashSwitch::at(point);
        let _ = world.ensure(&switch).await;
        let Some(name) = switch.fired() else { break };
        let label = format!("crash #{point} at {name}");
        world.converge_create().await.unwrap();
        assert_eq!(world.cloud.live_instances(UID), 1, "{label}");
        assert_eq!(world.cloud.duplicate_instances(), 0, "{label}");
        let recorded = world.server.progress();
        assert!(
            world
                .cloud
                .sub_resources(UID)
                .is_subset(&recorded.finalizers),
            "{label}: orphaned sub-resources"
        );
        assert!(recorded.instance_id.is_some(), "{label}");
        world.converge_cleanup().await;
        assert_eq!(world.cloud.live_instances(UID), 0, "{label}");
        assert!(world.cloud.sub_resources(UID).is_empty(), "{label}");
        assert!(world.server.progress().is_empty(), "{label}");
        let st = world.server.lock();
        let annotations = &st.object["metadata"]["annotations"];
        assert!(
            annotations.get(PROGRESS_ANNOTATION).is_none(),
            "{label}: an empty record removes the annotation: {annotations}"
        );
        assert_eq!(annotations["other"], "kept", "{label}");
        drop(st);
        crashed.push(name);
    }
    assert!(crashed.len() >= 12, "{crashed:?}");
}

#[tokio::test]
async fn without_idempotent_create_a_crash_never_makes_a_second_instance() {
    for point in 0.. {
        let world = World::new(false);
        let switch = CrashSwitch::at(point);
        let _ = world.ensure(&switch).await;
        let Some(name) = switch.fired() else { break };
        let label = format!("crash #{point} at {name}");
        let converged = world.converge_create().await;
        assert_eq!(world.cloud.duplicate_instances(), 0, "{label}");
        match world.cloud.live_instances(UID) {
            1 => assert!(converged.is_ok(), "{label}: {converged:?}"),
            0 => assert!(
                matches!(converged, Err(EnsureError::NotVisibleAfterDeadline { .. })),
                "{label}: {converged:?}"
            ),
            n => panic!("{label}: {n} instances"),
        }
    }
}
