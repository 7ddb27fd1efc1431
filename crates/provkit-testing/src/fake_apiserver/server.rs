//! [`FakeApiServer`]: the shared state, its builder, in-process clients and inspection.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderValue;
use kube::{CustomResourceExt, Resource};
use provkit_core::{Clock, SystemClock};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::faults::{Fault, FaultId, Verb};
use super::http::{CLIENT_HEADER, handle};
use super::inner::{Injected, Inner, lock};
use super::inspect::{RequestLog, RequestRecord, StoreFootprint};
use super::resource::{CrdError, ResourceType, TypeKey, parse_crd_documents};
use super::store::{Store, Writer};

/// Builds a [`FakeApiServer`].
///
/// Namespaces `default`, `kube-system` and the builder's [default
/// namespace](Self::default_namespace) exist from the start; creating an object in any other
/// namespace needs the Namespace created first, as on a real cluster.
#[derive(Debug)]
pub struct FakeApiServerBuilder {
    types: Vec<ResourceType>,
    namespaces: Vec<String>,
    seed: u64,
    clock: Arc<dyn Clock>,
    retained_changes: usize,
    request_log_limit: usize,
    bookmark_interval: Duration,
    default_namespace: String,
}

impl FakeApiServerBuilder {
    fn register(&mut self, versions: Vec<ResourceType>) {
        for v in versions {
            self.types.retain(|t| {
                !(t.group == v.group && t.version == v.version && t.plural == v.plural)
            });
            self.types.push(v);
        }
    }

    /// Serves the custom resource `K` from its derived CRD.
    ///
    /// # Panics
    /// If the derived CRD cannot be read — it always can, since kube-derive writes it; use
    /// [`crd_document`](Self::crd_document) for CRDs from elsewhere.
    #[must_use]
    pub fn crd<K: CustomResourceExt>(self) -> Self {
        let crd = serde_json::to_value(K::crd()).unwrap_or(Value::Null);
        #[allow(clippy::expect_used)]
        self.crd_json(&crd)
            .expect("a kube-derive CRD is always a valid CustomResourceDefinition")
    }

    /// Serves the custom resources of one CRD given as JSON.
    ///
    /// # Errors
    /// [`CrdError`] when it is not a CRD with a group, names and a served version.
    pub fn crd_json(mut self, crd: &Value) -> Result<Self, CrdError> {
        let versions = ResourceType::from_crd(crd)?;
        self.register(versions);
        Ok(self)
    }

    /// Serves every CRD of a YAML (multi-document) or JSON text, e.g. the output of
    /// `my-operator crd`.
    ///
    /// # Errors
    /// [`CrdError`] when a document does not parse or is not a CRD.
    pub fn crd_document(mut self, text: &str) -> Result<Self, CrdError> {
        for doc in parse_crd_documents(text)? {
            self = self.crd_json(&doc)?;
        }
        Ok(self)
    }

    /// A Namespace that exists from the start.
    #[must_use]
    pub fn namespace(mut self, name: impl Into<String>) -> Self {
        self.namespaces.push(name.into());
        self
    }

    /// The namespace of [`FakeApiServer::client`]'s `Api::default_namespaced` (default
    /// `default`); it exists from the start.
    #[must_use]
    pub fn default_namespace(mut self, name: impl Into<String>) -> Self {
        self.default_namespace = name.into();
        self
    }

    /// Seeds the generator behind UIDs, `generateName` suffixes and fault probabilities
    /// (default 0), so a run is reproducible.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The clock of `creationTimestamp`, `deletionTimestamp` and `managedFields` times
    /// (default [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How many past changes of each resource type watches (and the later pages of a list) can
    /// resume from (default 1000), like the real API server's watch cache, which keeps a window
    /// per type; a watch from an older `resourceVersion` gets 410 Gone.
    #[must_use]
    pub fn retained_changes(mut self, n: usize) -> Self {
        self.retained_changes = n;
        self
    }

    /// How many requests [`FakeApiServer::requests`] keeps (default 10 000; the counters count
    /// all).
    #[must_use]
    pub fn request_log_limit(mut self, n: usize) -> Self {
        self.request_log_limit = n;
        self
    }

    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK (default 60 s).
    #[must_use]
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every.max(Duration::from_millis(1));
        self
    }

    /// The server.
    #[must_use]
    pub fn build(self) -> FakeApiServer {
        let mut store = Store::new(
            self.types,
            self.retained_changes.max(1),
            self.seed,
            self.clock,
        );
        let mut namespaces = vec!["default".to_owned(), "kube-system".to_owned()];
        namespaces.push(self.default_namespace.clone());
        namespaces.extend(self.namespaces);
        namespaces.sort();
        namespaces.dedup();
        let ns_type = store
            .types
            .iter()
            .find(|t| t.group.is_empty() && t.plural == "namespaces")
            .cloned();
        if let Some(rt) = ns_type {
            for ns in namespaces {
                let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                                 "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
                let writer = Writer {
                    manager: "kube-apiserver",
                    subresource: None,
                    recording: super::ssa::Recording::Update,
                    checks: super::field_validation::FieldChecks::NONE,
                };
                // Creating a fresh namespace in an empty store cannot fail.
                let _ = store.create(&rt, "", obj, writer);
            }
        }
        FakeApiServer {
            inner: Arc::new(Inner {
                store: Mutex::new(store),
                faults: Mutex::new(Vec::new()),
                next_fault: std::sync::atomic::AtomicU64::new(1),
                observer: crate::observe::ObserverSlot::default(),
                log: Mutex::new(RequestLog {
                    limit: self.request_log_limit,
                    ..RequestLog::default()
                }),
                bookmark_interval: self.bookmark_interval,
                default_namespace: self.default_namespace,
            }),
        }
    }
}

/// A stateful in-memory Kubernetes API server; clones share the state.
///
/// See the [module docs](super) for what it emulates.
#[derive(Debug, Clone)]
pub struct FakeApiServer {
    pub(crate) inner: Arc<Inner>,
}

impl FakeApiServer {
    /// A builder with the built-in types (Namespace, ConfigMap, Secret, core and
    /// `events.k8s.io` Event, Lease) and no custom resource.
    #[must_use]
    pub fn builder() -> FakeApiServerBuilder {
        FakeApiServerBuilder {
            types: ResourceType::builtins(),
            namespaces: Vec::new(),
            seed: 0,
            clock: Arc::new(SystemClock),
            retained_changes: 1000,
            request_log_limit: 10_000,
            bookmark_interval: Duration::from_secs(60),
            default_namespace: "default".into(),
        }
    }

    /// The server as a tower `Service` (what [`client`](Self::client) wraps).
    #[must_use]
    pub fn service(&self) -> FakeApiService {
        FakeApiService {
            inner: self.inner.clone(),
            client: None,
            user_agent: None,
        }
    }

    /// A `kube::Client` talking to the server in-process (no socket). Its requests carry no
    /// User-Agent, so writes are recorded under the manager `unknown` unless they pass a
    /// field manager.
    #[must_use]
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), self.inner.default_namespace.clone())
    }

    /// A client that identifies as `name` for faults and the request log (its User-Agent is
    /// left alone), e.g. one operator replica of several.
    #[must_use]
    pub fn client_named(&self, name: &str) -> kube::Client {
        let mut svc = self.service();
        svc.client = HeaderValue::from_str(name).ok();
        kube::Client::new(svc, self.inner.default_namespace.clone())
    }

    /// A client whose requests carry this `User-Agent` (its prefix before `/` names the
    /// client and, without a field manager, its writes).
    #[must_use]
    pub fn client_with_user_agent(&self, user_agent: &str) -> kube::Client {
        let mut svc = self.service();
        svc.user_agent = HeaderValue::from_str(user_agent).ok();
        kube::Client::new(svc, self.inner.default_namespace.clone())
    }

    /// Serves the custom resources of one more CRD (JSON) from now on. Registering a CRD
    /// again replaces its versions; stored objects then read with the new schema's defaults.
    ///
    /// # Errors
    /// [`CrdError`] when it is not a CRD.
    pub fn register_crd_json(&self, crd: &Value) -> Result<(), CrdError> {
        let versions = ResourceType::from_crd(crd)?;
        let mut store = self.inner.lock_store();
        for v in versions {
            store.types.retain(|t| {
                !(t.group == v.group && t.version == v.version && t.plural == v.plural)
            });
            store.redefault(&v);
            store.types.push(v);
        }
        Ok(())
    }

    /// Adds a fault; it applies to matching requests from now on. The id removes it
    /// ([`remove_fault`](Self::remove_fault)) and counts its hits
    /// ([`fault_hits`](Self::fault_hits)).
    pub fn inject(&self, fault: Fault) -> FaultId {
        let id = FaultId(
            self.inner
                .next_fault
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        lock(&self.inner.faults).push(Injected { id, fault, hits: 0 });
        id
    }

    /// Removes one fault (no effect when it is already gone).
    pub fn remove_fault(&self, id: FaultId) {
        lock(&self.inner.faults).retain(|i| i.id != id);
    }

    /// How many requests the fault hit so far (0 once it was removed).
    #[must_use]
    pub fn fault_hits(&self, id: FaultId) -> u64 {
        lock(&self.inner.faults)
            .iter()
            .find(|i| i.id == id)
            .map_or(0, |i| i.hits)
    }

    /// Removes every fault.
    pub fn clear_faults(&self) {
        lock(&self.inner.faults).clear();
    }

    /// Calls `observer` at each [`Phase`](crate::observe::Phase) of every request from now on
    /// (replacing any earlier one); it may abandon a request (see [`crate::observe`]).
    /// In-process, an abandoned request's future stays pending until the caller drops it.
    pub fn observe(&self, observer: crate::observe::RequestObserver) {
        self.inner.observer.set(Some(observer));
    }

    /// Removes the request observer.
    pub fn clear_observer(&self) {
        self.inner.observer.set(None);
    }

    /// Forgets the retained change history: every watch resuming from an older
    /// `resourceVersion` now gets 410 Gone (an etcd compaction).
    pub fn compact(&self) {
        self.inner.lock_store().compact();
    }

    /// The store-wide `resourceVersion` (the last write's).
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.inner.lock_store().resource_version()
    }

    /// Every stored object of type `K`, decoded (objects that do not decode are skipped).
    #[must_use]
    pub fn objects<K>(&self) -> Vec<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.objects_json(&K::group(&()), &K::plural(&()))
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect()
    }

    /// Every stored object of a type by group (empty for core) and plural, as JSON.
    #[must_use]
    pub fn objects_json(&self, group: &str, plural: &str) -> Vec<Value> {
        let store = self.inner.lock_store();
        let key = TypeKey {
            group: group.into(),
            plural: plural.into(),
        };
        let rt = store.types.iter().find(|t| t.key() == key).cloned();
        let docs = store.all_of(&key);
        drop(store);
        docs.into_iter()
            .map(|d| {
                let mut o = d.value();
                if let (Some(rt), Some(m)) = (&rt, o.as_object_mut()) {
                    m.insert("apiVersion".into(), json!(rt.api_version()));
                    m.insert("kind".into(), json!(rt.kind));
                }
                o
            })
            .collect()
    }

    /// What the store holds in memory: stored objects by type with their JSON size, and the
    /// versions only the retained change history holds. Takes reference counts under the
    /// store's lock and measures after releasing it; copies no object.
    ///
    /// ```
    /// use provkit_testing::fake_apiserver::FakeApiServer;
    /// let api = FakeApiServer::builder().namespace("team-a").build();
    /// let footprint = api.footprint();
    /// assert_eq!(footprint.by_type["namespaces"].objects, 3); // default, kube-system, team-a
    /// assert!(footprint.json_bytes() > 0);
    /// ```
    #[must_use]
    pub fn footprint(&self) -> StoreFootprint {
        let store = self.inner.lock_store();
        let (current, history) = store.held();
        let current: Vec<(String, super::store::Doc)> = current
            .into_iter()
            .map(|(k, d)| {
                let label = if k.group.is_empty() {
                    k.plural.clone()
                } else {
                    format!("{}/{}", k.group, k.plural)
                };
                (label, d)
            })
            .collect();
        drop(store);
        let mut out = StoreFootprint::default();
        for (label, doc) in current {
            let t = out.by_type.entry(label).or_default();
            t.objects += 1;
            t.json_bytes += doc.json().len() as u64;
        }
        out.history_objects = history.len();
        out.history_json_bytes = history.iter().map(|d| d.json().len() as u64).sum();
        out
    }

    /// The requests answered, oldest first (bounded by
    /// [`request_log_limit`](FakeApiServerBuilder::request_log_limit)).
    #[must_use]
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.inner.log).records.iter().cloned().collect()
    }

    /// How many requests of each verb were answered (all of them, faulted ones included).
    #[must_use]
    pub fn verb_counts(&self) -> BTreeMap<Verb, u64> {
        lock(&self.inner.log).counters.clone()
    }

    /// The Events recorded through either Event API (`events.k8s.io/v1` and core `v1`).
    #[must_use]
    pub fn events(&self) -> Vec<Value> {
        let mut out = self.objects_json("events.k8s.io", "events");
        out.extend(self.objects_json("", "events"));
        out
    }

    /// Each Lease (`namespace/name`) and its `spec.holderIdentity`.
    #[must_use]
    pub fn lease_holders(&self) -> BTreeMap<String, Option<String>> {
        self.objects_json("coordination.k8s.io", "leases")
            .into_iter()
            .map(|l| {
                let ns = l
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let name = l
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let holder = l
                    .pointer("/spec/holderIdentity")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (format!("{ns}/{name}"), holder)
            })
            .collect()
    }
}

/// The server as a tower `Service` over `http` requests, for `kube::Client::new` or any
/// HTTP stack.
#[derive(Debug, Clone)]
pub struct FakeApiService {
    inner: Arc<Inner>,
    client: Option<HeaderValue>,
    user_agent: Option<HeaderValue>,
}

impl<B> tower::Service<http::Request<B>> for FakeApiService
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<tower::BoxError>,
{
    type Response = http::Response<axum::body::Body>;
    type Error = std::convert::Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let (mut parts, body) = req.into_parts();
        if let Some(c) = &self.client {
            parts.headers.insert(CLIENT_HEADER, c.clone());
        }
        if let Some(ua) = &self.user_agent {
            parts.headers.insert(http::header::USER_AGENT, ua.clone());
        }
        let req = http::Request::from_parts(parts, axum::body::Body::new(body));
        let inner = self.inner.clone();
        Box::pin(async move { Ok(handle(inner, req).await) })
    }
}
