//! controller-rs style fixtures: a test CRD with builders, and an `ApiServerVerifier` that
//! plays a scripted sequence of API-server exchanges on a `tower_test::mock` pair, asserting
//! method, path (with query) and JSON body of every request, in order.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use kube::{Client, CustomResource, Resource};
use provkit_core::{JobState, JobStatus, JobType};
use provkit_kube::{ProvisionedResource, ProvisioningStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tower_test::mock::{self, Handle};

pub const NS: &str = "default";
pub const NAME: &str = "net-a";
pub const UID: &str = "8c7f0e4e-0000-4000-8000-000000000001";
pub const FINALIZER: &str = "test.provkit.dev/network-finalizer";
pub const BASE: &str = "/apis/test.provkit.dev/v1/namespaces/default/networks";

/// The test CRD.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "test.provkit.dev",
    version = "v1",
    kind = "Network",
    namespaced,
    status = "NetworkStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    pub cidr: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

impl ProvisionedResource for Network {
    fn config_source(&self) -> impl Serialize + '_ {
        &self.spec
    }
    fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
        self.status.as_ref().map(|s| &s.provisioning)
    }
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
        &mut self
            .status
            .get_or_insert_with(Default::default)
            .provisioning
    }
}

pub fn t(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 29, 12, minute, 0)
        .single()
        .unwrap_or_default()
}

pub fn job(id: &str, job_type: JobType, state: JobState, minute: u32, version: &str) -> JobStatus {
    let mut j = JobStatus::new(id, job_type, state, t(minute));
    j.config_version = version.to_owned();
    j
}

impl Network {
    /// A fresh object as the API server returns it (rv "1", no finalizer, no status).
    pub fn test() -> Self {
        let mut n = Network::new(
            NAME,
            NetworkSpec {
                cidr: "10.0.0.0/24".into(),
            },
        );
        n.meta_mut().namespace = Some(NS.into());
        n.meta_mut().uid = Some(UID.into());
        n.meta_mut().resource_version = Some("1".into());
        n.meta_mut().generation = Some(1);
        n
    }
    pub fn finalized(mut self) -> Self {
        self.meta_mut().finalizers = Some(vec![FINALIZER.into()]);
        self
    }
    pub fn needs_delete(mut self) -> Self {
        let ts = jiff::Timestamp::from_second(1_782_734_400).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        self.meta_mut().deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts));
        self
    }
    pub fn with_rv(mut self, rv: &str) -> Self {
        self.meta_mut().resource_version = Some(rv.into());
        self
    }
    pub fn with_cidr(mut self, cidr: &str) -> Self {
        self.spec.cidr = cidr.into();
        self
    }
    pub fn with_jobs(mut self, jobs: Vec<JobStatus>) -> Self {
        self.provisioning_status_mut().provisioning_jobs = jobs;
        self
    }
    pub fn with_desired(mut self, v: &str) -> Self {
        self.provisioning_status_mut().desired_config_version = v.into();
        self
    }
    pub fn with_phase(mut self, phase: &str) -> Self {
        self.status.get_or_insert_with(Default::default).phase = Some(phase.into());
        self
    }
    pub fn with_annotation(mut self, k: &str, v: &str) -> Self {
        self.meta_mut()
            .annotations
            .get_or_insert_with(Default::default)
            .insert(k.into(), v.into());
        self
    }
    pub fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// How a request body is checked.
pub enum BodyCheck {
    /// No body (GET).
    Empty,
    /// Exact JSON equality.
    Json(Value),
    /// A custom assertion (for bodies with server-generated values, e.g. Event names).
    Check(Box<dyn Fn(&Value) + Send>),
}

impl std::fmt::Debug for BodyCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => f.write_str("Empty"),
            Self::Json(v) => write!(f, "Json({v})"),
            Self::Check(_) => f.write_str("Check(..)"),
        }
    }
}

/// One expected request and the reply to it.
#[derive(Debug)]
pub struct Exchange {
    pub method: Method,
    /// The exact path and query, or a prefix followed by `*`.
    pub uri: String,
    pub body: BodyCheck,
    pub status: StatusCode,
    pub reply: Value,
}

impl Exchange {
    pub fn get(uri: impl Into<String>, reply: Value) -> Self {
        Self {
            method: Method::GET,
            uri: uri.into(),
            body: BodyCheck::Empty,
            status: StatusCode::OK,
            reply,
        }
    }
    pub fn patch(uri: impl Into<String>, body: Value, reply: Value) -> Self {
        Self {
            method: Method::PATCH,
            uri: uri.into(),
            body: BodyCheck::Json(body),
            status: StatusCode::OK,
            reply,
        }
    }
    pub fn put(uri: impl Into<String>, body: Value, reply: Value) -> Self {
        Self {
            method: Method::PUT,
            uri: uri.into(),
            body: BodyCheck::Json(body),
            status: StatusCode::OK,
            reply,
        }
    }
    pub fn post(uri: impl Into<String>, body: BodyCheck, reply: Value) -> Self {
        Self {
            method: Method::POST,
            uri: uri.into(),
            body,
            status: StatusCode::CREATED,
            reply,
        }
    }
    /// Replies with a `Status` error instead.
    pub fn fails(mut self, code: u16, reason: &str) -> Self {
        self.status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        self.reply = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("scripted {code}"), "reason": reason, "code": code
        });
        self
    }
}

// ---- common exchanges on the test object -------------------------------------------------

pub fn obj_uri() -> String {
    format!("{BASE}/{NAME}")
}
pub fn status_uri() -> String {
    format!("{BASE}/{NAME}/status?")
}
pub fn patch_uri() -> String {
    format!("{BASE}/{NAME}?")
}

/// The uncached GET of the stale-cache check (or a conflict re-read).
pub fn get_object(reply: &Network) -> Exchange {
    Exchange::get(obj_uri(), reply.json())
}

/// The status flush / status write: a merge patch with a resourceVersion precondition.
pub fn patch_status(rv: &str, status: Value, reply: &Network) -> Exchange {
    Exchange::patch(
        status_uri(),
        json!({"metadata": {"resourceVersion": rv}, "status": status}),
        reply.json(),
    )
}

/// kube-runtime's finalizer add (no finalizers yet).
pub fn add_finalizer(reply: &Network) -> Exchange {
    Exchange::patch(
        patch_uri(),
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}
        ]),
        reply.json(),
    )
}

/// kube-runtime's finalizer removal (ours at index 0).
pub fn remove_finalizer(reply: &Network) -> Exchange {
    Exchange::patch(
        patch_uri(),
        json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": FINALIZER},
            {"op": "remove", "path": "/metadata/finalizers/0"}
        ]),
        reply.json(),
    )
}

/// An Event POST (events.k8s.io/v1) with the given reason; name and times are generated.
pub fn event(reason: &'static str, note_contains: &'static str) -> Exchange {
    Exchange::post(
        format!("/apis/events.k8s.io/v1/namespaces/{NS}/events?"),
        BodyCheck::Check(Box::new(move |b: &Value| {
            assert_eq!(b["reason"], reason, "event body {b}");
            assert_eq!(b["regarding"]["name"], NAME, "event body {b}");
            assert_eq!(b["regarding"]["kind"], "Network", "event body {b}");
            let note = b["note"].as_str().unwrap_or_default();
            assert!(
                note.contains(note_contains),
                "event note {note:?} lacks {note_contains:?}"
            );
        })),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e", "namespace": NS}, "eventTime": null}),
    )
}

/// A scenario: the exact sequence of API requests the code under test must make, with the
/// replies (controller-rs's `Scenario`, as data instead of an enum of hand-written tasks).
pub type Scenario = Vec<Exchange>;

/// Plays a scripted API server.
pub struct ApiServerVerifier {
    handle: Handle<Request<Body>, Response<Body>>,
    log: Arc<Mutex<Vec<String>>>,
}

/// A mocked `kube::Client` and the verifier that answers it.
pub fn testcontext() -> (Client, ApiServerVerifier) {
    let (svc, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (
        Client::new(svc, NS),
        ApiServerVerifier {
            handle,
            log: Arc::default(),
        },
    )
}

impl ApiServerVerifier {
    /// Spawns a task answering exactly `script`, in order. Await the handle (with
    /// [`timeout_after_1s`]) after the code under test ran: a missing request shows up as a
    /// timeout, an extra one as a `Service(Closed)` error in the code under test.
    pub fn run(self, script: Scenario) -> JoinHandle<Vec<String>> {
        let Self { mut handle, log } = self;
        tokio::spawn(async move {
            for (i, ex) in script.into_iter().enumerate() {
                let Some((request, send)) = handle.next_request().await else {
                    panic!("request #{i} ({} {}) never came", ex.method, ex.uri);
                };
                let method = request.method().clone();
                let uri = request.uri().to_string();
                let bytes = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .unwrap_or_default();
                log.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!("{method} {uri}"));
                assert_eq!(method, ex.method, "request #{i}: method (uri {uri})");
                match ex.uri.strip_suffix('*') {
                    // A trailing `*` matches any rest (server-generated names).
                    Some(prefix) => assert!(uri.starts_with(prefix), "request #{i}: uri {uri}"),
                    None => assert_eq!(uri, ex.uri, "request #{i}: uri"),
                }
                match &ex.body {
                    BodyCheck::Empty => assert!(bytes.is_empty(), "request #{i}: unexpected body"),
                    BodyCheck::Json(want) => {
                        let got: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        assert_json_diff::assert_json_eq!(got, want.clone());
                    }
                    BodyCheck::Check(f) => {
                        let got: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        f(&got);
                    }
                }
                let body = serde_json::to_vec(&ex.reply).unwrap_or_default();
                let response = Response::builder()
                    .status(ex.status)
                    .header("content-type", "application/json")
                    .body(Body::from(body));
                match response {
                    Ok(r) => send.send_response(r),
                    Err(e) => panic!("bad scripted response: {e}"),
                }
            }
            log.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        })
    }
}

/// Waits for the verifier: fails on a missing request (timeout) or an assertion in it.
pub async fn timeout_after_1s(handle: JoinHandle<Vec<String>>) -> Vec<String> {
    match tokio::time::timeout(Duration::from_secs(1), handle).await {
        Ok(Ok(log)) => log,
        Ok(Err(join)) => std::panic::resume_unwind(join.into_panic()),
        Err(_) => panic!("timeout: the code under test made fewer API requests than scripted"),
    }
}

/// The launch-intent write before a launch: a merge patch of `status.launchIntent` alone, with
/// the `resourceVersion` precondition. The scripted server answers `reply` (keep its
/// `resourceVersion` equal to `rv` so the following exchanges keep their numbers).
pub fn patch_intent(rv: &str, job_type: &'static str, reply: &Network) -> Exchange {
    let rv = rv.to_owned();
    Exchange {
        method: Method::PATCH,
        uri: status_uri(),
        body: BodyCheck::Check(Box::new(move |b: &Value| {
            assert_eq!(
                b["metadata"],
                json!({"resourceVersion": rv}),
                "intent body {b}"
            );
            let status = b["status"].as_object().cloned().unwrap_or_default();
            assert_eq!(status.len(), 1, "only the intent is written: {b}");
            let intent = &status["launchIntent"];
            assert_eq!(intent["jobType"], job_type, "intent body {b}");
            assert!(
                intent["idempotencyKey"]
                    .as_str()
                    .is_some_and(|k| k.starts_with(&format!("pk1-{UID}-"))),
                "intent body {b}"
            );
            assert!(intent["createdAt"].is_string(), "intent body {b}");
        })),
        status: StatusCode::OK,
        reply: reply.json(),
    }
}

/// `status` with `"launchIntent": null`: the write that records the job clears the intent.
pub fn clearing_intent(mut status: Value) -> Value {
    status["launchIntent"] = Value::Null;
    status
}

/// The delay of a requeue in seconds (kube's `Action` keeps it private; its `Debug` shows it);
/// `None` for `Action::await_change()`.
pub fn requeue_secs(action: &kube::runtime::controller::Action) -> Option<f64> {
    let text = format!("{action:?}");
    text.split_once("Some(")
        .and_then(|(_, rest)| rest.split_once("s)"))
        .and_then(|(n, _)| n.parse().ok())
}

/// A converged object's action with the default settings: the resync requeue
/// (`Provisioner::DEFAULT_RESYNC`, shortened by at most a tenth), never an await-change.
pub fn assert_resync(action: &kube::runtime::controller::Action) {
    let period = provkit_kube::Provisioner::<Network>::DEFAULT_RESYNC.as_secs_f64();
    let secs = requeue_secs(action).unwrap_or_else(|| panic!("a resync requeue: {action:?}"));
    assert!(
        (period * 0.9..=period).contains(&secs),
        "a resync requeue: {action:?}"
    );
}

/// Wall time that follows tokio's (paused) clock.
#[derive(Debug)]
pub struct TokioClock {
    pub base: DateTime<Utc>,
    pub start: tokio::time::Instant,
}

impl provkit_core::Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        self.base + self.start.elapsed()
    }
}
