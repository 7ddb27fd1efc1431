//! The product stack of a run, and what is done to it from the fakes' side.
//!
//! - provkit-testing's [`FakeApiServer`] (in-process `kube::Client`s) with the example
//!   operator's `VirtualNetwork` CRD, and the fake AAP over loopback ([`Backend`]);
//! - one or two **replicas**, each a kube-runtime [`Controller`] running the example
//!   operator's reconcile (provkit-kube's `Provisioner`, the real `Lifecycle`, `AapProvider`
//!   and `AapClient`), with provkit-kube's [`LeaderElector`] over the fake's Leases when there
//!   are two; extra per-object triggers reach every controller through
//!   [`Harness::trigger`] (`Controller::reconcile_on`);
//! - **crashes**: a replica is dropped whole (its controller stream, reflector cache, provider,
//!   client, connection pool and every in-memory journal) and rebuilt from nothing but the
//!   API server's state. They are triggered by the fakes' request observers
//!   ([`provkit_testing::observe`]) at the three phases of each launch-path request — the
//!   launch-intent status write, the launch `POST`, the flush recording the job — and, with
//!   two replicas, by killing the Lease holder at random moments;
//! - the **records** the audit needs, taken by the same observers from the requests the fakes
//!   accepted: which job ids a status write recorded, finalizer removals checked against the
//!   AAP job the object's status relied on, launches for objects whose status writes were being
//!   refused, and the operator's API-server requests by verb.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, WatchStreamExt as _, watcher};
use provkit_aap::push::{PushConfig, ReconnectBackoff};
use provkit_core::{Clock, SystemClock};
use provkit_example_operator::controller::Context;
use provkit_example_operator::crd::VirtualNetwork;
use provkit_kube::push::PushWakeups;
use provkit_kube::{
    ErrorBackoffConfig, LeaderElectionConfig, LeaderElector, Provisioner, ReconcileError,
};
use provkit_lifecycle::push::PollCadence;
use provkit_lifecycle::{Jitter, LifecyclePolicy};
use provkit_testing::fake_apiserver::{FakeApiServer, Fault, FaultEffect, FaultId, Verb};
use provkit_testing::observe::{ObservedRequest, Phase, Verdict};
use serde_json::Value;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;

use crate::audit::attempt_of;
use crate::backend::Backend;
use crate::instrumented::with_resource;
use crate::measure::Taps;
use crate::metrics::{RunMetrics, Timed};
use crate::stack::TimeScale;
use crate::trail::{Step as TrailStep, Trails};

/// The Lease the replicas compete for (namespace `default`).
pub const LEASE_NAME: &str = "fleet-operator";

/// The field manager of the operator's status writes.
pub const FIELD_MANAGER: &str = "fleet-operator";

/// The namespace of the fleet's objects.
pub const NAMESPACE: &str = "default";

/// The resource plural the operator reconciles.
pub(crate) const PLURAL: &str = "virtualnetworks";

/// When the fakes crash a replica.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CrashPlan {
    /// Probability that a launch-path request crashes its replica at a given phase.
    pub probability: f64,
    /// Scenario time between two crashes of the fleet, leader kills included (at least). Keep
    /// it well above the lease duration and the time a new leader takes to reconcile every
    /// object: every crash of the leader costs a handover and a full relist
    /// ([`for_fleet`](Self::for_fleet) sizes it).
    pub min_gap: Duration,
    /// With two replicas: mean scenario time between kills of the Lease holder (`None`: never).
    pub leader_kills_every: Option<Duration>,
}

impl Default for CrashPlan {
    fn default() -> Self {
        Self {
            probability: 0.01,
            min_gap: Duration::from_secs(45),
            leader_kills_every: Some(Duration::from_secs(180)),
        }
    }
}

impl CrashPlan {
    /// Scenario time per resource between two crashes, beyond the default gap.
    const GAP_PER_RESOURCE: Duration = Duration::from_millis(8);

    /// The default plan, spaced for a fleet of `resources`: every crash of the leader (and
    /// every leader kill) costs a handover, a relist and a reconcile of every object, which
    /// grows with the fleet — so does the gap between crashes (45 s up to 5,625 resources, then
    /// 8 ms per resource: 80 s at 10,000, which gives 20–30 crashes in a 10,000-resource run),
    /// and leader kills come on average every four gaps (at least 180 s).
    pub fn for_fleet(resources: usize) -> Self {
        let gap =
            Self::GAP_PER_RESOURCE.saturating_mul(u32::try_from(resources).unwrap_or(u32::MAX));
        let base = Self::default();
        Self {
            min_gap: gap.max(base.min_gap),
            leader_kills_every: Some(gap.saturating_mul(4).max(Duration::from_secs(180))),
            ..base
        }
    }
}

/// How the stack is built; durations are **scenario** durations (divided by `scale`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HarnessConfig {
    /// The run's one time scale.
    pub scale: TimeScale,
    /// Resources (sizes the per-resource counters).
    pub resources: usize,
    /// Replicas: 1 (no leader election) or 2 (leader election over the Lease).
    pub replicas: usize,
    /// kube-runtime's reconcile concurrency per controller.
    pub concurrency: u16,
    /// The engine's poll interval.
    pub poll_interval: Duration,
    /// Lease duration (renew deadline 2/3, retry period 2/15 of it, as client-go).
    pub lease_duration: Duration,
    /// Time a crashed replica takes to start again (a pod restart).
    pub restart_delay: Duration,
    /// How late the API server's watch events reach every client (the informer-cache lag).
    pub watch_lag: Duration,
    /// Seed of every random choice.
    pub seed: u64,
    /// Crashes (`None`: none).
    pub crashes: Option<CrashPlan>,
    /// provkit-kube's per-object error backoff (production durations, scaled by the harness).
    pub error_backoff: ErrorBackoffConfig,
    /// provkit-kube's resync of converged objects (`Provisioner::with_resync`; production
    /// time, scaled; `None`: off). Default 10 minutes.
    pub resync: Option<Duration>,
    /// Extra observers of both fakes' requests (measurements).
    pub taps: Taps,
    /// Push wake-ups from the fake AAP's websocket (the leader subscribes), with this
    /// safety-net poll interval while the stream is healthy (production time, scaled; `None`:
    /// off, every job found finished by polling).
    pub push: Option<Duration>,
}

impl HarnessConfig {
    /// The run's fake API server: the `VirtualNetwork` CRD, `retained` changes of watch history
    /// (the watch window), no request log (unless `FLEET_API_LOG` names how many requests to
    /// keep, for diagnosis), and every watch of the objects lagging
    /// [`watch_lag`](Self::watch_lag) (scaled): the informer-cache race.
    pub fn api_server(&self, retained: usize) -> FakeApiServer {
        let log = std::env::var("FLEET_API_LOG")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let api = FakeApiServer::builder()
            .crd::<VirtualNetwork>()
            .seed(self.seed)
            .retained_changes(retained)
            .request_log_limit(log)
            .build();
        api.inject(
            Fault::new(FaultEffect::WatchLag(self.scale.of(self.watch_lag)))
                .verb(Verb::Watch)
                .resource(PLURAL),
        );
        api
    }

    /// One replica, no crashes, 30 s polls, scale ×10.
    pub fn new(resources: usize) -> Self {
        Self {
            scale: TimeScale::new(0.1),
            resources,
            replicas: 1,
            concurrency: 64,
            poll_interval: Duration::from_secs(30),
            lease_duration: Duration::from_secs(15),
            restart_delay: Duration::from_secs(2),
            watch_lag: Duration::from_secs(1),
            seed: 42,
            crashes: None,
            error_backoff: ErrorBackoffConfig::default(),
            resync: Some(Duration::from_secs(600)),
            taps: Taps::default(),
            push: None,
        }
    }
}

/// A request of the launch path, as a crash point names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaunchStep {
    /// The status write persisting the launch intent (before the launch).
    IntentWrite,
    /// `POST …/launch/` to AAP.
    LaunchPost,
    /// The status write recording a job id not recorded before (the flush).
    Flush,
}

impl LaunchStep {
    /// A label.
    pub fn label(self) -> &'static str {
        match self {
            Self::IntentWrite => "intent status write",
            Self::LaunchPost => "launch POST",
            Self::Flush => "flush (job recorded)",
        }
    }
}

/// Where a replica was crashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CrashPoint {
    /// From a fake's observer, at a phase of a launch-path request.
    Request(LaunchStep, Phase),
    /// The Lease holder killed at a random moment.
    LeaderKill,
}

impl std::fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Request(step, phase) => write!(f, "{} {}", step.label(), phase.as_str()),
            Self::LeaderKill => f.write_str("leader killed at a random moment"),
        }
    }
}

/// The crashes of a run, and the leadership changes.
#[derive(Debug, Default)]
pub struct CrashLog {
    counts: Mutex<BTreeMap<CrashPoint, u64>>,
    /// `(when, identity)` of each kill.
    kills: Mutex<Vec<(Instant, String)>>,
    /// `(when, identity)` of each start of leadership.
    leaders: Mutex<Vec<(Instant, String)>>,
    last: Mutex<Option<Instant>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CrashLog {
    /// Crashes per point.
    pub fn counts(&self) -> BTreeMap<CrashPoint, u64> {
        lock(&self.counts).clone()
    }

    /// All crashes.
    pub fn total(&self) -> u64 {
        lock(&self.counts).values().sum()
    }

    /// For each kill of a replica that was leading: the wall time until another identity
    /// became leader.
    pub fn handovers(&self) -> Vec<Duration> {
        let kills = lock(&self.kills).clone();
        let leaders = lock(&self.leaders).clone();
        let mut out = Vec::new();
        for (at, who) in kills {
            let was_leading = leaders
                .iter()
                .rfind(|(t, _)| *t <= at)
                .is_some_and(|(_, id)| *id == who);
            if !was_leading {
                continue;
            }
            if let Some((t, _)) = leaders.iter().find(|(t, id)| *t > at && *id != who) {
                out.push(*t - at);
            }
        }
        out
    }

    /// How many times a replica became leader.
    pub fn leadership_starts(&self) -> usize {
        lock(&self.leaders).len()
    }
}

/// What the observers recorded from the requests the fakes accepted.
#[derive(Debug, Default)]
pub struct Records {
    /// Object uid → resource index (filled by the scenario when it creates an object).
    pub uids: RwLock<HashMap<String, usize>>,
    /// AAP job ids some accepted status write recorded.
    recorded: Mutex<HashSet<String>>,
    /// Object name → the id of the newest deprovision job its status recorded.
    deprovision_job: Mutex<HashMap<String, String>>,
    /// Names whose status writes are being refused.
    refused: Mutex<HashSet<String>>,
    /// Operator requests to the API server by `verb resource[/sub]`.
    api_ops: Mutex<BTreeMap<String, u64>>,
    /// Status writes answered 409.
    pub status_conflicts: std::sync::atomic::AtomicU64,
    /// Provision job id → when an accepted status write first recorded it `Succeeded`.
    succeeded_at: Mutex<HashMap<String, chrono::DateTime<chrono::Utc>>>,
    /// What happened to each key's attempts (intent writes, launch `POST`s), for the report
    /// of a duplicate.
    trail: Trails,
}

impl Records {
    /// Whether an accepted status write recorded job `id`.
    pub fn was_recorded(&self, id: &str) -> bool {
        lock(&self.recorded).contains(id)
    }

    /// The operator's API-server requests by `verb resource[/subresource]`.
    pub fn api_ops(&self) -> BTreeMap<String, u64> {
        lock(&self.api_ops).clone()
    }

    /// Provision job id → when an accepted status write first recorded it `Succeeded`.
    pub fn succeeded_at(&self) -> HashMap<String, chrono::DateTime<chrono::Utc>> {
        lock(&self.succeeded_at).clone()
    }

    /// What happened to the attempts of idempotency key `key` (intent writes, launch `POST`s),
    /// in order.
    pub fn trail(&self, key: &str) -> Vec<String> {
        self.trail.render(key)
    }

    /// The index of the object with `uid`.
    pub fn index_of_uid(&self, uid: &str) -> Option<usize> {
        self.uids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(uid)
            .copied()
    }
}

/// One operator replica: a supervisor that builds incarnations and drops them on a crash.
#[derive(Debug)]
struct Replica {
    name: String,
    incarnation: AtomicU32,
    crashing: AtomicBool,
    crash: Notify,
}

impl Replica {
    fn identity(&self) -> String {
        format!("{}.{}", self.name, self.incarnation.load(Ordering::Acquire))
    }
}

/// The stack of a run. Cheap to share (`Arc`).
#[derive(Debug)]
pub struct Harness {
    /// The settings.
    pub config: HarnessConfig,
    /// The fake API server.
    pub api: FakeApiServer,
    /// The fake AAP.
    pub backend: Backend,
    /// Harness counters.
    pub metrics: Arc<RunMetrics>,
    /// The observers' records.
    pub records: Arc<Records>,
    /// Crashes and leadership changes.
    pub crashes: Arc<CrashLog>,
    /// Every incarnation's push wake-ups (with [`HarnessConfig::push`]).
    pub push: Mutex<Vec<PushWakeups>>,
    replicas: Vec<Arc<Replica>>,
    triggers: broadcast::Sender<ObjectRef<VirtualNetwork>>,
    rng: Mutex<fastrand::Rng>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    // Faults injected for refused status writes, by object name.
    refusals: Mutex<HashMap<String, Vec<FaultId>>>,
}

/// The object name of resource `index`.
pub fn resource_name(index: usize) -> String {
    format!("res-{index:05}")
}

/// The resource index of an object name (`res-00042` → 42).
pub fn resource_index(name: &str) -> Option<usize> {
    name.strip_prefix("res-").and_then(|n| n.parse().ok())
}

/// `(verb, plural, name, subresource)` of an API-server path.
fn api_target<'a>(
    req: &ObservedRequest<'a>,
) -> Option<(&'static str, &'a str, Option<&'a str>, Option<&'a str>)> {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let rest: &[&str] = match segs.as_slice() {
        ["api", "v1", rest @ ..] => rest,
        ["apis", _, _, rest @ ..] => rest,
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(*n), None),
        [p, n, s] => (*p, Some(*n), Some(*s)),
        _ => return None,
    };
    let watch = req
        .query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    let verb = match (req.method, name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PATCH", _) => "patch",
        ("PUT", _) => "update",
        ("DELETE", _) => "delete",
        _ => "other",
    };
    Some((verb, plural, name, sub))
}

/// The job ids and types a status body records (`status.provisioningJobs`).
fn recorded_jobs(body: &Value) -> Vec<(String, String)> {
    body.pointer("/status/provisioningJobs")
        .and_then(Value::as_array)
        .map(|jobs| {
            jobs.iter()
                .filter_map(|j| {
                    let id = j.get("jobID")?.as_str()?.to_owned();
                    let ty = j
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    (!id.is_empty()).then_some((id, ty))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The provision job ids a status body records as `Succeeded`.
fn succeeded_jobs(body: &Value) -> Vec<String> {
    body.pointer("/status/provisioningJobs")
        .and_then(Value::as_array)
        .map(|jobs| {
            jobs.iter()
                .filter(|j| {
                    j.get("type").and_then(Value::as_str) == Some("provision")
                        && j.get("state").and_then(Value::as_str) == Some("Succeeded")
                })
                .filter_map(|j| Some(j.get("jobID")?.as_str()?.to_owned()))
                .filter(|id| !id.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

impl Harness {
    /// Builds the stack (nothing runs until [`start`](Self::start)).
    pub fn new(config: HarnessConfig, api: FakeApiServer, backend: Backend) -> Arc<Self> {
        let replicas = (0..config.replicas.clamp(1, 2))
            .map(|i| {
                Arc::new(Replica {
                    name: format!("replica-{}", ["a", "b"][i]),
                    incarnation: AtomicU32::new(0),
                    crashing: AtomicBool::new(false),
                    crash: Notify::new(),
                })
            })
            .collect();
        let (triggers, _) = broadcast::channel(1024);
        let seed = config.seed;
        Arc::new(Self {
            config,
            api,
            backend,
            metrics: Arc::new(RunMetrics::default()),
            records: Arc::new(Records::default()),
            crashes: Arc::new(CrashLog::default()),
            push: Mutex::new(Vec::new()),
            replicas,
            triggers,
            rng: Mutex::new(fastrand::Rng::with_seed(seed ^ 0xc4a5)),
            tasks: Mutex::new(Vec::new()),
            refusals: Mutex::new(HashMap::new()),
        })
    }

    /// A wall duration for a scenario duration.
    pub fn wall(&self, scenario: Duration) -> Duration {
        self.config.scale.of(scenario)
    }

    fn chance(&self, p: f64) -> bool {
        p > 0.0 && lock(&self.rng).f64() < p
    }

    /// Installs the observers and starts the replicas (and the leader killer).
    pub fn start(self: &Arc<Self>) {
        let (h, taps) = (Arc::downgrade(self), self.config.taps.clone());
        self.api.observe(Arc::new(move |req, phase| {
            taps.on_api(req, phase);
            h.upgrade()
                .map_or(Verdict::Continue, |h| h.on_api_request(req, phase))
        }));
        let (h, taps) = (Arc::downgrade(self), self.config.taps.clone());
        self.backend.aap().observe(Arc::new(move |req, phase| {
            taps.on_aap(req, phase);
            h.upgrade()
                .map_or(Verdict::Continue, |h| h.on_aap_request(req, phase))
        }));
        let mut tasks = lock(&self.tasks);
        for r in &self.replicas {
            tasks.push(tokio::spawn(supervise(self.clone(), r.clone())));
        }
        if self.replicas.len() > 1
            && let Some(every) = self
                .config
                .crashes
                .as_ref()
                .and_then(|c| c.leader_kills_every)
        {
            tasks.push(tokio::spawn(kill_leaders(self.clone(), every)));
        }
    }

    /// Stops every replica and removes the observers.
    pub async fn stop(&self) {
        let tasks: Vec<_> = lock(&self.tasks).drain(..).collect();
        for t in tasks {
            t.abort();
            let _ = t.await;
        }
        self.api.clear_observer();
        self.backend.aap().clear_observer();
    }

    /// Asks every controller to reconcile `name` now (kube-runtime's `reconcile_on`).
    pub fn trigger(&self, name: &str) {
        let _ = self.triggers.send(ObjectRef::new(name).within(NAMESPACE));
    }

    /// Refuses the status writes of `name` (403, as a missing RBAC verb) from now until
    /// [`allow_status_writes`](Self::allow_status_writes).
    pub fn refuse_status_writes(&self, name: &str) {
        lock(&self.records.refused).insert(name.to_owned());
        let ids = [Verb::Patch, Verb::Update]
            .into_iter()
            .map(|verb| {
                self.api.inject(
                    Fault::new(FaultEffect::Forbidden)
                        .verb(verb)
                        .resource(PLURAL)
                        .name(name)
                        .subresource(Some("status")),
                )
            })
            .collect();
        lock(&self.refusals).insert(name.to_owned(), ids);
    }

    /// Allows the status writes of `name` again.
    pub fn allow_status_writes(&self, name: &str) {
        lock(&self.records.refused).remove(name);
        for id in lock(&self.refusals).remove(name).unwrap_or_default() {
            self.api.remove_fault(id);
        }
    }

    /// Asks `replica` (if `identity` is its current incarnation) to crash at `point`; true when
    /// the crash was taken (the caller then abandons the request).
    fn crash(&self, identity: &str, point: CrashPoint) -> bool {
        let Some(r) = self.replicas.iter().find(|r| r.identity() == identity) else {
            return false;
        };
        let gap = self
            .config
            .crashes
            .as_ref()
            .map_or(Duration::ZERO, |c| self.wall(c.min_gap));
        {
            let mut last = lock(&self.crashes.last);
            // Leader kills keep the gap too: each is a handover and a full resync.
            if last.is_some_and(|t| t.elapsed() < gap) {
                return false;
            }
            if r.crashing.swap(true, Ordering::AcqRel) {
                return false;
            }
            *last = Some(Instant::now());
        }
        *lock(&self.crashes.counts).entry(point).or_default() += 1;
        lock(&self.crashes.kills).push((Instant::now(), identity.to_owned()));
        r.crash.notify_one();
        true
    }

    fn maybe_crash(&self, client: &str, step: LaunchStep, phase: Phase) -> Verdict {
        let p = self.config.crashes.as_ref().map_or(0.0, |c| c.probability);
        if self.chance(p) && self.crash(client, CrashPoint::Request(step, phase)) {
            if phase == Phase::Answered {
                Verdict::Continue
            } else {
                Verdict::Abandon
            }
        } else {
            Verdict::Continue
        }
    }

    fn on_api_request(&self, req: &ObservedRequest<'_>, phase: Phase) -> Verdict {
        let operator = req.client.starts_with("replica-");
        let Some((verb, plural, name, sub)) = api_target(req) else {
            return Verdict::Continue;
        };
        if operator && phase == Phase::Handled {
            let key = match sub {
                Some(s) => format!("{verb} {plural}/{s}"),
                None => format!("{verb} {plural}"),
            };
            *lock(&self.records.api_ops).entry(key).or_default() += 1;
        }
        if plural != PLURAL || !operator {
            return Verdict::Continue;
        }
        let Some(name) = name else {
            return Verdict::Continue;
        };
        match (verb, sub) {
            ("patch" | "update", Some("status")) => {
                let body: Value = serde_json::from_slice(req.body).unwrap_or(Value::Null);
                let intent = body
                    .pointer("/status/launchIntent")
                    .is_some_and(Value::is_object)
                    && body.pointer("/status/provisioningJobs").is_none();
                let jobs = recorded_jobs(&body);
                let new_job = {
                    let rec = lock(&self.records.recorded);
                    jobs.iter().any(|(id, _)| !rec.contains(id))
                };
                if phase == Phase::Handled {
                    match req.status {
                        Some(200) => {
                            let mut rec = lock(&self.records.recorded);
                            for (id, _) in &jobs {
                                rec.insert(id.clone());
                            }
                            drop(rec);
                            let succeeded = succeeded_jobs(&body);
                            if !succeeded.is_empty() {
                                let now = SystemClock.now();
                                let mut at = lock(&self.records.succeeded_at);
                                for id in succeeded {
                                    at.entry(id).or_insert(now);
                                }
                            }
                            if let Some((id, _)) =
                                jobs.iter().rev().find(|(_, ty)| ty == "deprovision")
                            {
                                lock(&self.records.deprovision_job)
                                    .insert(name.to_owned(), id.clone());
                            }
                        }
                        Some(409) => {
                            self.records
                                .status_conflicts
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                }
                if let Some(li) = body.pointer("/status/launchIntent")
                    && let Some(key) = li.get("idempotencyKey").and_then(Value::as_str)
                {
                    let at = li
                        .get("createdAt")
                        .and_then(Value::as_str)
                        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                        .map(|t| t.with_timezone(&chrono::Utc));
                    self.records.trail.note(
                        key,
                        req.client,
                        TrailStep::Intent(at),
                        phase,
                        req.status,
                    );
                }
                let step = if intent {
                    Some(LaunchStep::IntentWrite)
                } else if new_job {
                    Some(LaunchStep::Flush)
                } else {
                    None
                };
                match step {
                    Some(step) if req.status.is_none_or(|s| s == 200) => {
                        self.maybe_crash(req.client, step, phase)
                    }
                    _ => Verdict::Continue,
                }
            }
            ("patch" | "update", None) if phase == Phase::Handled && req.status == Some(200) => {
                let text = String::from_utf8_lossy(req.body);
                if text.contains("\"remove\"") && text.contains("/metadata/finalizers") {
                    self.check_release(name);
                }
                Verdict::Continue
            }
            _ => Verdict::Continue,
        }
    }

    /// A finalizer removal the API server accepted: the deprovision job the object's status
    /// recorded last must be successful in AAP.
    fn check_release(&self, name: &str) {
        self.metrics
            .finalizers_released
            .fetch_add(1, Ordering::Relaxed);
        let job = lock(&self.records.deprovision_job).get(name).cloned();
        let status = job
            .as_deref()
            .and_then(|id| id.parse::<u64>().ok())
            .and_then(|id| self.backend.aap().job(id))
            .map(|j| j.status);
        if status != Some("successful") {
            self.metrics.violation(
                &self.metrics.early_releases,
                format!("{name}: finalizer removed; deprovision job {job:?} is {status:?} in AAP"),
            );
        }
    }

    fn on_aap_request(&self, req: &ObservedRequest<'_>, phase: Phase) -> Verdict {
        if req.method != "POST"
            || !req.path.ends_with("/launch/")
            || !req.client.starts_with("replica-")
        {
            return Verdict::Continue;
        }
        let body: Value = serde_json::from_slice(req.body).unwrap_or(Value::Null);
        let vars = match body.get("extra_vars") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        let attempt = attempt_of(&vars);
        if let Some(a) = &attempt {
            self.records
                .trail
                .note(&a.key, req.client, TrailStep::LaunchPost, phase, req.status);
        }
        if phase == Phase::Received
            && let Some(index) = attempt.and_then(|a| self.records.index_of_uid(&a.uid))
        {
            let name = resource_name(index);
            if lock(&self.records.refused).contains(&name) {
                self.metrics.violation(
                    &self.metrics.launches_while_refused,
                    format!("{name}: launch POST while its status writes were refused"),
                );
            }
        }
        self.maybe_crash(req.client, LaunchStep::LaunchPost, phase)
    }
}

/// The per-incarnation reconcile context.
struct Ctx {
    operator: Arc<Context>,
    metrics: Arc<RunMetrics>,
}

impl AsRef<Provisioner<VirtualNetwork>> for Ctx {
    fn as_ref(&self) -> &Provisioner<VirtualNetwork> {
        &self.operator.provisioner
    }
}

async fn reconcile(obj: Arc<VirtualNetwork>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let index = obj
        .metadata
        .name
        .as_deref()
        .and_then(resource_index)
        .unwrap_or(usize::MAX);
    let (name, rv, deleting) = (
        obj.metadata.name.clone().unwrap_or_default(),
        obj.metadata.resource_version.clone().unwrap_or_default(),
        obj.metadata.deletion_timestamp.is_some(),
    );
    let fut = with_resource(
        index,
        provkit_example_operator::controller::reconcile(obj, ctx.operator.clone()),
    );
    let ((result, calls), cpu) = Timed::new(fut).await;
    ctx.metrics.trail.record(&name, || {
        let out = match &result {
            Ok(a) => format!("{a:?}"),
            Err(e) => format!("error: {}", provkit_kube::ErrorChain(e)),
        };
        let calls: Vec<String> = calls.iter().map(ToString::to_string).collect();
        format!(
            "rv {rv} deleting {deleting} calls [{}] → {out}",
            calls.join(", ")
        )
    });
    ctx.metrics.reconciles.fetch_add(1, Ordering::Relaxed);
    ctx.metrics.add_cpu(cpu);
    result
}

/// provkit-kube's per-object error backoff (scaled), counted.
#[allow(clippy::needless_pass_by_value)] // kube-runtime's error-policy signature
fn error_policy(obj: Arc<VirtualNetwork>, error: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    ctx.metrics.errors.fetch_add(1, Ordering::Relaxed);
    provkit_kube::error_policy(obj, error, ctx)
}

/// Every duration of the engine's policy, scaled.
fn policy(h: &Harness) -> LifecyclePolicy {
    let mut policy = h
        .config
        .scale
        .policy(LifecyclePolicy::default().with_poll_interval(h.config.poll_interval));
    policy.poll_jitter = Jitter::Proportional { max_fraction: 0.1 };
    policy.backoff_jitter = Jitter::Proportional { max_fraction: 0.1 };
    policy
}

/// The push stream's settings in scenario time (reconnect after 1 s doubling to 60 s, 10 s for
/// each handshake step, keepalive 30 s), scaled.
fn push_config(h: &Harness) -> PushConfig {
    PushConfig::default()
        .backoff(ReconnectBackoff::new(
            h.wall(Duration::from_secs(1)),
            h.wall(Duration::from_secs(60)),
        ))
        .handshake_timeout(h.wall(Duration::from_secs(10)).max(Duration::from_secs(1)))
        .keepalive(h.wall(Duration::from_secs(30)))
}

/// One incarnation of a replica: built from nothing but the API server's state; runs until
/// dropped (a crash) or until it loses the Lease.
async fn incarnation(h: Arc<Harness>, identity: String) {
    let user_agent = format!("{identity}/1");
    let client = h.api.client_with_user_agent(&user_agent);
    let provider = match h.backend.provider(&user_agent) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "AAP provider could not be built");
            return;
        }
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let Context {
        provisioner,
        callbacks,
    } = Context::new(
        client.clone(),
        Arc::new(provider),
        policy(&h),
        clock.clone(),
        &identity,
        FIELD_MANAGER,
    );
    // The operator's Event recorder, its series TTL scaled like every other duration.
    let events = provisioner
        .events()
        .clone()
        .with_ttl(h.config.scale.event_ttl());
    let mut provisioner = provisioner
        .with_error_backoff(h.config.scale.error_backoff(h.config.error_backoff))
        .with_events(events);
    provisioner = match h.config.resync {
        Some(period) => provisioner.with_resync(h.config.scale.of(period)),
        None => provisioner.without_resync(),
    };
    let wakeups = h.config.push.map(|safety_net| {
        let cadence =
            PollCadence::new(h.wall(h.config.poll_interval)).with_while_healthy(h.wall(safety_net));
        let wakeups = PushWakeups::new(cadence);
        lock(&h.push).push(wakeups.clone());
        wakeups
    });
    if let Some(w) = &wakeups {
        provisioner = provisioner.with_push(w.clone());
    }
    let operator = Arc::new(Context {
        provisioner,
        callbacks,
    });
    let ctx = Arc::new(Ctx {
        operator,
        metrics: h.metrics.clone(),
    });
    let triggers = futures::stream::unfold(h.triggers.subscribe(), |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(r) => return Some((r, rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let concurrency = h.config.concurrency;
    let api: Api<VirtualNetwork> = Api::all(client.clone());
    // Only the leader subscribes: the stream is opened inside the leader's run.
    let push = wakeups.and_then(|w| {
        let client = h.backend.client(&user_agent).ok()?;
        Some((w, client, push_config(&h)))
    });
    let run = move || async move {
        let (pushed, signals) = match push {
            Some((w, client, config)) => {
                let signals = client.job_status_stream_with(config).signals();
                (Some(w.clone()), Some((w, signals)))
            }
            None => (None, None),
        };
        let woken = futures::stream::iter(pushed).flat_map(|w| w.triggers::<VirtualNetwork>());
        // The reflector cache keeps no managedFields (kube-rs's advice for memory): the
        // reconcile never reads them, and with a server's real fieldsV1 sets they were the
        // largest part of every cached object.
        let (reader, writer) = kube::runtime::reflector::store();
        let objects = kube::runtime::reflector(
            writer,
            watcher(api, watcher::Config::default()).modify(|o: &mut VirtualNetwork| {
                kube::ResourceExt::managed_fields_mut(o).clear();
            }),
        )
        .applied_objects();
        let controller = Controller::for_stream(objects, reader)
            .with_config(controller::Config::default().concurrency(concurrency))
            .reconcile_on(futures::stream::select(triggers, woken))
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {});
        match signals {
            Some((w, signals)) => {
                tokio::select! {
                    () = controller => {}
                    () = w.run(signals) => {}
                }
            }
            None => controller.await,
        }
    };
    if h.replicas.len() == 1 {
        lock(&h.crashes.leaders).push((Instant::now(), identity.clone()));
        run().await;
        return;
    }
    let lease = h.config.lease_duration;
    let config = LeaderElectionConfig::new(
        h.wall(lease).max(Duration::from_secs(1)),
        h.wall(lease * 2 / 3).max(Duration::from_millis(700)),
        h.wall(lease * 2 / 15).max(Duration::from_millis(150)),
    )
    .unwrap_or_default();
    let elector = LeaderElector::with_config(
        Api::<Lease>::namespaced(client, NAMESPACE),
        LEASE_NAME,
        identity.clone(),
        config,
        clock,
    )
    .with_field_manager(FIELD_MANAGER);
    let crashes = h.crashes.clone();
    let end = elector
        .run(std::future::pending(), |_token| async move {
            lock(&crashes.leaders).push((Instant::now(), identity));
            run().await;
        })
        .await;
    tracing::info!(?end, "leadership ended");
}

/// Builds incarnations of `r` one after the other: a crash drops the running one whole.
async fn supervise(h: Arc<Harness>, r: Arc<Replica>) {
    loop {
        r.incarnation.fetch_add(1, Ordering::AcqRel);
        let identity = r.identity();
        r.crashing.store(false, Ordering::Release);
        // Run inline (not spawned): a crash drops the incarnation here, and so does
        // `Harness::stop` aborting this task — a spawned incarnation outlived `stop` and went on
        // reconciling (e.g. the plain-loop probe's objects, launching jobs the audit then saw).
        let run = Box::pin(incarnation(h.clone(), identity));
        tokio::select! {
            () = r.crash.notified() => {}
            () = run => {}
        }
        r.crashing.store(true, Ordering::Release);
        tokio::time::sleep(h.wall(h.config.restart_delay)).await;
    }
}

/// Kills the Lease holder at random moments (exponential gaps with mean `every`).
async fn kill_leaders(h: Arc<Harness>, every: Duration) {
    loop {
        let u = lock(&h.rng).f64().max(1e-6);
        tokio::time::sleep(h.wall(every.mul_f64(-u.ln()).max(Duration::from_secs(1)))).await;
        let holder = h
            .api
            .lease_holders()
            .get(&format!("{NAMESPACE}/{LEASE_NAME}"))
            .cloned()
            .flatten();
        if let Some(holder) = holder {
            h.crash(&holder, CrashPoint::LeaderKill);
        }
    }
}
