//! A small in-memory API server for one `Network` object, behind a `tower_test` mock: uncached
//! GETs, status merge patches with the `resourceVersion` precondition (409 on a mismatch),
//! `resourceVersion` bumps on every write, and two faults — refused status writes (403, the
//! missing `networks/status` patch permission) and a crash point (a matching request is
//! applied or not, then never answered, so the caller can abort the reconcile there).

use std::sync::{Arc, Mutex, PoisonError};

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tower_test::mock::{self, SendResponse};

use crate::fixtures::{NS, Network};

/// Where the crash point strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hang {
    /// The N-th status patch (1-based) is applied, then never answered.
    AfterStatusPatch(usize),
    /// The N-th status patch is neither applied nor answered.
    BeforeStatusPatch(usize),
}

#[derive(Default)]
struct State {
    object: Value,
    rv: u64,
    refuse_status: bool,
    hang: Option<Hang>,
    status_patches: usize,
    writes: Vec<String>,
    parked: Vec<SendResponse<Response<Body>>>,
}

/// The store; clones share it.
#[derive(Clone)]
pub struct ObjectStore {
    state: Arc<Mutex<State>>,
    /// Notified when a request is parked at the crash point.
    pub parked: Arc<Notify>,
}

fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            if let Some(t) = target.as_object_mut() {
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

fn status_error(code: u16, reason: &str) -> (StatusCode, Value) {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("store {code}"), "reason": reason, "code": code}),
    )
}

impl ObjectStore {
    /// A store holding `object` (its `resourceVersion` is replaced by the store's).
    pub fn new(object: &Network) -> Self {
        let mut value = object.json();
        value["metadata"]["resourceVersion"] = json!("1");
        Self {
            state: Arc::new(Mutex::new(State {
                object: value,
                rv: 1,
                ..State::default()
            })),
            parked: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The object as stored (what an informer would deliver next).
    pub fn object(&self) -> Network {
        serde_json::from_value(self.lock().object.clone()).unwrap()
    }

    /// Refuse (403) or allow status writes.
    pub fn refuse_status_writes(&self, refuse: bool) {
        self.lock().refuse_status = refuse;
    }

    /// Installs the crash point.
    pub fn hang(&self, hang: Option<Hang>) {
        let mut st = self.lock();
        st.hang = hang;
        st.status_patches = 0;
    }

    /// Writes answered so far, as `VERB path`.
    pub fn writes(&self) -> Vec<String> {
        self.lock().writes.clone()
    }

    /// A `kube::Client` served by this store (one serving task per client).
    pub fn client(&self) -> Client {
        let (svc, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let store = self.clone();
        tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                let method = request.method().clone();
                let path = request.uri().path().to_owned();
                let bytes = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                store.answer(&method, &path, &body, send);
            }
        });
        Client::new(svc, NS)
    }

    /// Answers one request (or parks it at the crash point, returning `None`).
    fn answer(
        &self,
        method: &Method,
        path: &str,
        body: &Value,
        send: SendResponse<Response<Body>>,
    ) {
        let mut st = self.lock();
        let is_status = path.ends_with("/status");
        let (status, reply) = if *method == Method::GET {
            (StatusCode::OK, st.object.clone())
        } else if *method == Method::PATCH && is_status {
            st.status_patches += 1;
            let n = st.status_patches;
            if st.hang == Some(Hang::BeforeStatusPatch(n)) {
                st.parked.push(send);
                drop(st);
                self.parked.notify_one();
                return;
            }
            if st.refuse_status {
                status_error(403, "Forbidden")
            } else {
                let want = body.pointer("/metadata/resourceVersion").cloned();
                let have = json!(st.rv.to_string());
                if want.is_some() && want.as_ref() != Some(&have) {
                    status_error(409, "Conflict")
                } else {
                    let patch = body.get("status").cloned().unwrap_or(Value::Null);
                    let mut status = st.object.get("status").cloned().unwrap_or(json!({}));
                    merge(&mut status, &patch);
                    st.object["status"] = status;
                    st.rv += 1;
                    let rv = st.rv.to_string();
                    st.object["metadata"]["resourceVersion"] = json!(rv);
                    st.writes.push(format!("PATCH {path}"));
                    if st.hang == Some(Hang::AfterStatusPatch(n)) {
                        st.parked.push(send);
                        drop(st);
                        self.parked.notify_one();
                        return;
                    }
                    (StatusCode::OK, st.object.clone())
                }
            }
        } else if *method == Method::POST && path.contains("/events") {
            (StatusCode::CREATED, body.clone())
        } else {
            status_error(405, "MethodNotAllowed")
        };
        drop(st);
        let response = Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&reply).unwrap_or_default()))
            .unwrap();
        send.send_response(response);
    }
}
