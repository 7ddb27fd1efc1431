//! The fleet scenario: N `VirtualNetwork`s, each created, provisioned, changed once,
//! provisioned again and deleted by a user client, reconciled by the product stack
//! ([`Harness`]) in real time scaled by one factor, optionally under chaos (AAP faults and
//! purges, API-server faults, refused status writes, crashes, two replicas). Used by the
//! `fleet` example and the CI-sized integration test.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use provkit_aap::{JobKind, RateLimit};
use provkit_core::{JobState, JobType, compute_desired_config_version};
use provkit_example_operator::crd::{Phase, VirtualNetwork, VirtualNetworkSpec};
use provkit_kube::ProvisionedResource;
use provkit_testing::fake_aap::{Endpoint, JobTemplateSpec};
use provkit_testing::fake_apiserver::{FakeApiServer, Fault, FaultEffect, FaultId, Verb};
use tokio::time::Instant;

use crate::audit::{Audit, PurgeLog, attempt_of};
use crate::backend::{Backend, BackendConfig, BackendError, Chaos, ORGANIZATION};
use crate::harness::{CrashPlan, Harness, HarnessConfig, NAMESPACE, resource_index, resource_name};
use crate::measure::{AapCounters, AapSnapshot, BreakerSettings, Taps};
use crate::metrics::{RunMetrics, fmt_duration, mib, peak_rss_bytes, process_cpu, rss_bytes};
use crate::report::{EndpointCounts, Table, call_table, endpoint_table, per};
use crate::stack::TimeScale;

/// Seconds a scripted job spends `pending` + `waiting` before it runs.
const QUEUE_SECS: u64 = 1;

/// Fleet settings (durations in scenario time).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FleetConfig {
    /// Number of resources.
    pub resources: usize,
    /// The time scale.
    pub scale: TimeScale,
    /// kube-runtime reconcile concurrency.
    pub concurrency: u16,
    /// AAP faults and purges, API-server faults.
    pub chaos: bool,
    /// Crashes from the fakes' side (and leader kills with two replicas).
    pub crashes: bool,
    /// Fraction of the resources whose status writes are refused (403) from their creation
    /// for `refuse_for`.
    pub refused_fraction: f64,
    /// How long those writes are refused.
    pub refuse_for: Duration,
    /// Replicas (2: leader election).
    pub replicas: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Window over which the resources are created.
    pub arrival: Duration,
    /// Longest wait between convergence and the next user action.
    pub think: Duration,
    /// Jobs purged from AAP mid-run (chaos only).
    pub purges: usize,
    /// The engine's poll interval.
    pub poll_interval: Duration,
    /// How long a provision job runs.
    pub create_job: Duration,
    /// How long a deprovision job runs.
    pub delete_job: Duration,
    /// The AAP client's request timeout.
    pub client_timeout: Duration,
    /// When crashes happen (with `crashes`).
    pub crash_plan: CrashPlan,
    /// Wall time of each plain-loop probe (no chaos only; zero: skip).
    pub probe: Duration,
    /// Show a progress bar.
    pub progress: bool,
    /// Give up after this much scenario time.
    pub deadline: Duration,
    /// The AAP client's circuit breaker (scenario durations, scaled).
    pub breaker: BreakerSettings,
    /// The AAP client's rate limit in requests per scenario second (`None`: none).
    pub aap_rate: Option<f64>,
    /// provkit-kube's per-object error backoff (production durations, scaled).
    pub error_backoff: provkit_kube::ErrorBackoffConfig,
    /// Extra observers of both fakes' requests.
    pub taps: Taps,
    /// Push wake-ups from the fake AAP's websocket, with this safety-net poll interval while
    /// the stream is healthy (`None`: polling only).
    pub push: Option<Duration>,
    /// With push: drop the websocket connections (no close frame) about this often (each gap
    /// drawn from half to one and a half of it; `None`: never).
    pub push_drop_every: Option<Duration>,
}

impl FleetConfig {
    /// `resources` resources, scale 1:10, concurrency 64, no chaos.
    pub fn new(resources: usize) -> Self {
        Self {
            resources,
            scale: TimeScale::new(0.1),
            concurrency: 64,
            chaos: false,
            crashes: false,
            refused_fraction: 0.0,
            refuse_for: Duration::from_secs(150),
            replicas: 1,
            seed: 42,
            arrival: Duration::from_secs(600),
            think: Duration::from_secs(300),
            purges: (resources / 1000).max(3),
            poll_interval: Duration::from_secs(30),
            create_job: Duration::from_secs(60),
            delete_job: Duration::from_secs(30),
            client_timeout: Duration::from_secs(30),
            crash_plan: CrashPlan::for_fleet(resources),
            probe: Duration::from_secs(2),
            progress: false,
            deadline: Duration::from_secs(4 * 3600),
            breaker: BreakerSettings::default(),
            aap_rate: None,
            error_backoff: provkit_kube::ErrorBackoffConfig::default(),
            taps: Taps::default(),
            push: None,
            push_drop_every: None,
        }
    }

    /// Everything on: AAP and API-server chaos, crashes, 2 % refused writes, two replicas.
    #[must_use]
    pub fn everything(mut self) -> Self {
        self.chaos = true;
        self.crashes = true;
        self.refused_fraction = 0.02;
        self.replicas = 2;
        self
    }
}

fn spec(index: usize, generation: u32) -> VirtualNetworkSpec {
    let region = ["eu-west-1", "us-east-2", "ap-south-1"][index % 3];
    VirtualNetworkSpec {
        cidr: format!(
            "10.{}.{}.0/{}",
            (index / 250) % 250,
            index % 250,
            if generation == 1 { 24 } else { 25 }
        ),
        region: Some(region.to_owned()),
    }
}

const PROVISIONING: u8 = 0;
const CHANGED: u8 = 1;
const DELETING: u8 = 2;
const GONE: u8 = 3;

/// Whether the object's spec is provisioned: `Ready`, and its newest provision job succeeded
/// for the spec's config version.
pub fn is_converged(obj: &VirtualNetwork) -> bool {
    let Ok(desired) = compute_desired_config_version(&obj.spec) else {
        return false;
    };
    let ready = obj
        .status
        .as_ref()
        .is_some_and(|s| s.phase == Some(Phase::Ready));
    ready
        && obj
            .provisioning_jobs()
            .iter()
            .rev()
            .find(|j| j.job_type == JobType::Provision)
            .is_some_and(|j| j.state == JobState::Succeeded && j.config_version == desired)
}

/// The resource index of a fleet object (`res-00042` → 42).
pub(crate) fn index_of(obj: &VirtualNetwork) -> Option<usize> {
    obj.metadata.name.as_deref().and_then(resource_index)
}

/// What a user watching the fleet's objects does with what it sees.
pub(crate) trait Watching {
    /// Resources in the run.
    fn resources(&self) -> usize;
    /// An object as it is now.
    fn seen(&self, obj: &VirtualNetwork);
    /// Resource `index`'s object is gone.
    fn gone(&self, index: usize);
    /// Whether resource `index` may have gone away (its deletion was asked for).
    fn may_be_gone(&self, index: usize) -> bool;
}

/// A user's watch of the fleet's objects (kube-runtime's `watcher`), pausing `pause` after an
/// error. A relist (after a dropped watch or a 410 Gone) sends no `Delete` for the objects that
/// went away meanwhile: an object that may be gone and that the relist no longer holds is gone.
pub(crate) async fn watch_objects(api: Api<VirtualNetwork>, pause: Duration, user: &impl Watching) {
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
    let mut listed: Option<Vec<bool>> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(o)) => user.seen(&o),
            Ok(watcher::Event::Init) => listed = Some(vec![false; user.resources()]),
            Ok(watcher::Event::InitApply(o)) => {
                if let Some(seen) = listed
                    .as_mut()
                    .zip(index_of(&o))
                    .and_then(|(l, i)| l.get_mut(i))
                {
                    *seen = true;
                }
                user.seen(&o);
            }
            Ok(watcher::Event::InitDone) => {
                for (index, present) in listed.take().unwrap_or_default().iter().enumerate() {
                    if !present && user.may_be_gone(index) {
                        user.gone(index);
                    }
                }
            }
            Ok(watcher::Event::Delete(o)) => {
                if let Some(i) = index_of(&o) {
                    user.gone(i);
                }
            }
            Err(_) => tokio::time::sleep(pause).await,
        }
    }
}

/// A user's request, retried every `pause` as `kubectl` users do until it is taken; `None` when
/// the API server answers 404 or AlreadyExists. Never gives up: a user who gave up would leave
/// the object at its step for ever and the run would report it as not converged (the run's
/// deadline bounds the loop).
pub(crate) async fn user_request<T, F, Fut>(pause: Duration, mut op: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    loop {
        match op().await {
            Ok(v) => return Some(v),
            Err(kube::Error::Api(s))
                if s.code == 404 || s.code == 409 && s.reason == "AlreadyExists" =>
            {
                return None;
            }
            Err(e) => {
                tracing::debug!(error = %e, "user request refused; retrying");
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// The user: creates, changes and deletes objects, retrying refused requests as `kubectl`
/// users do.
struct User {
    api: Api<VirtualNetwork>,
    phase: Vec<AtomicU8>,
    think: Vec<[Duration; 2]>,
    gone: AtomicUsize,
    progress: Option<indicatif::ProgressBar>,
    h: Arc<Harness>,
    done: tokio::sync::Notify,
}

impl User {
    async fn retry<T, F, Fut>(&self, op: F) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        user_request(self.h.wall(Duration::from_secs(1)), op).await
    }

    async fn create(&self, index: usize) {
        let name = resource_name(index);
        let obj = VirtualNetwork::new(&name, spec(index, 1));
        let pp = PostParams::default();
        let created = self.retry(|| self.api.create(&pp, &obj)).await;
        let created = match created {
            Some(c) => Some(c),
            None => self.api.get(&name).await.ok(),
        };
        if let Some(uid) = created.and_then(|c| c.metadata.uid) {
            self.h
                .records
                .uids
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(uid, index);
        }
    }

    async fn change(&self, index: usize) {
        let body = serde_json::json!({"spec": spec(index, 2)});
        let (name, pp, patch) = (
            resource_name(index),
            PatchParams::default(),
            Patch::Merge(&body),
        );
        self.retry(|| self.api.patch(&name, &pp, &patch)).await;
    }

    async fn delete(&self, index: usize) {
        let (name, dp) = (resource_name(index), DeleteParams::default());
        self.retry(|| self.api.delete(&name, &dp)).await;
    }

    fn seen(self: &Arc<Self>, obj: &VirtualNetwork) {
        let Some(index) = index_of(obj).filter(|i| *i < self.phase.len()) else {
            return;
        };
        if obj.metadata.deletion_timestamp.is_some() || !is_converged(obj) {
            return;
        }
        let generation = obj.metadata.generation.unwrap_or(0);
        let phase = &self.phase[index];
        let next = if generation == 1 {
            phase
                .compare_exchange(PROVISIONING, CHANGED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
                .then_some(0)
        } else {
            phase
                .compare_exchange(CHANGED, DELETING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
                .then_some(1)
        };
        if let Some(step) = next {
            let user = self.clone();
            let wait = self.h.wall(self.think[index][step]);
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                if step == 0 {
                    user.change(index).await;
                } else {
                    user.delete(index).await;
                }
            });
        }
    }

    fn gone_at(&self, index: usize) {
        if let Some(phase) = self.phase.get(index)
            && phase.swap(GONE, Ordering::AcqRel) == DELETING
        {
            if let Some(p) = &self.progress {
                p.inc(1);
            }
            if self.gone.fetch_add(1, Ordering::AcqRel) + 1 == self.phase.len() {
                self.done.notify_one();
            }
        }
    }

    /// The user's own watch: drives each object to its next step once converged.
    async fn watch(self: Arc<Self>) {
        let pause = self.h.wall(Duration::from_secs(1));
        watch_objects(self.api.clone(), pause, &self).await;
    }
}

impl Watching for Arc<User> {
    fn resources(&self) -> usize {
        self.phase.len()
    }

    fn seen(&self, obj: &VirtualNetwork) {
        User::seen(self, obj);
    }

    fn gone(&self, index: usize) {
        self.gone_at(index);
    }

    fn may_be_gone(&self, index: usize) -> bool {
        self.phase
            .get(index)
            .is_some_and(|p| p.load(Ordering::Acquire) == DELETING)
    }
}

/// The API-server chaos mix: 2 % conflicts on status writes, 1 % 5xx on every request,
/// every watch stream closed after a few hundred events (the run adds one forced 410 Gone).
#[derive(Debug, Default)]
pub struct ApiChaos {
    faults: Vec<(String, FaultId)>,
}

impl ApiChaos {
    /// Installs the mix.
    pub fn install(api: &FakeApiServer) -> Self {
        let list = [
            (
                "409 Conflict on status writes (2 %)",
                Fault::new(FaultEffect::Conflict)
                    .verb(Verb::Patch)
                    .subresource(Some("status"))
                    .probability(0.02),
            ),
            (
                "500 on any request (0.5 %)",
                Fault::new(FaultEffect::InternalError).probability(0.005),
            ),
            (
                "503 on any request (0.5 %)",
                Fault::new(FaultEffect::ServiceUnavailable {
                    retry_after_secs: None,
                })
                .probability(0.005),
            ),
            (
                "watch streams closed after 300 events",
                Fault::new(FaultEffect::DropWatch { after_events: 300 }).verb(Verb::Watch),
            ),
        ];
        Self {
            faults: list
                .into_iter()
                .map(|(l, f)| (l.to_owned(), api.inject(f)))
                .collect(),
        }
    }

    /// `(label, hits)` of every fault.
    pub fn hits(&self, api: &FakeApiServer) -> Vec<(String, u64)> {
        self.faults
            .iter()
            .map(|(l, id)| (l.clone(), api.fault_hits(*id)))
            .collect()
    }

    /// Removes the faults.
    pub fn remove(&self, api: &FakeApiServer) {
        for (_, id) in &self.faults {
            api.remove_fault(*id);
        }
    }
}

/// What peak RSS was made of, sampled during the run.
#[derive(Clone, Debug, Default)]
pub struct MemorySample {
    /// RSS at the sample.
    pub rss: u64,
    /// Objects the API server stores (JSON bytes of every stored object: VirtualNetworks,
    /// Events, Leases, Namespaces).
    pub stores: u64,
    /// Objects stored.
    pub objects: usize,
    /// Jobs the fake AAP holds (`extra_vars` bytes + ~300 B of fields each).
    pub jobs_bytes: u64,
    /// Jobs held.
    pub jobs: usize,
    /// The watch window: JSON bytes of the versions only the API server's retained change
    /// history holds (older versions, deleted objects).
    pub watch_window: u64,
}

/// Everything a fleet run measured.
#[derive(Debug)]
#[non_exhaustive]
pub struct FleetReport {
    /// The settings.
    pub config: FleetConfig,
    /// Wall time of the scenario (probes and audit excluded).
    pub wall: Duration,
    /// The scenario's own timeline (scenario time): the latest resource's arrival + its jobs
    /// (each seen at the first poll after it ends) + its think times.
    pub timeline: Duration,
    /// The audit.
    pub audit: Audit,
    /// AAP requests (server side), by endpoint.
    pub requests: EndpointCounts,
    /// The operator's API-server requests by `verb resource`.
    pub api_ops: BTreeMap<String, u64>,
    /// Plain-loop AAP requests/s (same client, same fake, the run's mix).
    pub aap_rps: f64,
    /// Plain-loop API-server requests/s (status patches and gets with a watcher consuming the
    /// events).
    pub api_rps: f64,
    /// Resources not deleted at the end.
    pub not_converged: usize,
    /// Up to ten of them.
    pub not_converged_examples: Vec<String>,
    /// Resources whose AAP job count differs from the jobs they needed (3 + their purged jobs).
    pub unexpected_launches: usize,
    /// Up to ten examples.
    pub unexpected_examples: Vec<String>,
    /// Polls per job (mean).
    pub polls_per_job: f64,
    /// Peak RSS in bytes (before the probes and the audit).
    pub peak_rss: Option<u64>,
    /// The memory sample taken at the highest RSS.
    pub memory: MemorySample,
    /// Process CPU during the scenario.
    pub process_cpu: Option<Duration>,
    /// Fault labels and hits (AAP and API server).
    pub faults: Vec<(String, u64)>,
    /// Crashes per point.
    pub crashes: BTreeMap<crate::harness::CrashPoint, u64>,
    /// Handover times (wall) after leader kills.
    pub handovers: Vec<Duration>,
    /// Times a replica became leader.
    pub leadership_starts: usize,
    /// Harness counters.
    pub metrics: Arc<RunMetrics>,
    /// Status writes answered 409.
    pub status_conflicts: u64,
    /// The AAP clients' own counters over the scenario (provkit-aap metrics): attempts,
    /// retries, rate-limited answers, the circuit breaker's transitions and refusals.
    pub aap_client: AapSnapshot,
    /// Push wake-ups: job GETs per job, requests per resource, completion latency, stream
    /// counters.
    pub push: crate::push_report::PushReport,
    /// Rendered provider-call table.
    calls_table: String,
    /// Idempotency-key lookups of every client: calls, job-list pages requested, most pages of
    /// one call, the calls without an intent window and their pages, the calls that stopped at
    /// their page budget.
    pub key_lookups: provkit_aap::KeyLookupStats,
    /// `unified_jobs/?id=` kind look-ups the providers made.
    pub kind_lookups: u64,
}

impl FleetReport {
    /// The request bound: AAP requests ÷ the AAP plain-loop rate + API-server requests ÷ the
    /// API-server plain-loop rate.
    /// `None` when the plain-loop probes did not run ([`FleetConfig::probe`] zero).
    pub fn bound(&self) -> Option<(Duration, Duration)> {
        if self.aap_rps <= 0.0 || self.api_rps <= 0.0 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)]
        let aap = self.requests.total() as f64 / self.aap_rps;
        #[allow(clippy::cast_precision_loss)]
        let api = self.api_ops.values().sum::<u64>() as f64 / self.api_rps;
        Some((
            Duration::from_secs_f64(aap.min(1e9)),
            Duration::from_secs_f64(api.min(1e9)),
        ))
    }

    /// The scaled timeline (wall).
    pub fn scaled_timeline(&self) -> Duration {
        self.config.scale.of(self.timeline)
    }

    /// wall ÷ max(request bound, scaled timeline); `None` without the probes.
    pub fn ratio(&self) -> Option<f64> {
        let (a, b) = self.bound()?;
        let limit = (a + b).max(self.scaled_timeline());
        Some(self.wall.as_secs_f64() / limit.as_secs_f64().max(1e-9))
    }

    /// The correctness verdicts (each must hold): `(what, value, ok)`.
    pub fn verdicts(&self) -> Vec<(&'static str, usize, bool)> {
        let get = |c| usize::try_from(RunMetrics::get(c)).unwrap_or(usize::MAX);
        let early = get(&self.metrics.early_releases);
        let refused = get(&self.metrics.launches_while_refused);
        vec![
            (
                "duplicate launches",
                self.audit.duplicates,
                self.audit.duplicates == 0,
            ),
            ("lost job ids", self.audit.lost, self.audit.lost == 0),
            (
                "finalizers released before a successful deprovision",
                early,
                early == 0,
            ),
            (
                "AAP launches while the object's status could not be written",
                refused,
                refused == 0,
            ),
            (
                "resources not converged",
                self.not_converged,
                self.not_converged == 0,
            ),
            (
                "resources with launches ≠ needed jobs",
                self.unexpected_launches,
                self.unexpected_launches == 0,
            ),
            (
                "jobs without an idempotency key",
                self.audit.unkeyed,
                self.audit.unkeyed == 0,
            ),
            (
                "jobs still active at the end",
                self.audit.still_active,
                self.audit.still_active == 0,
            ),
        ]
    }

    /// True when every verdict holds.
    pub fn ok(&self) -> bool {
        self.verdicts().iter().all(|(_, _, ok)| *ok)
    }

    /// The full text report.
    pub fn render(&self) -> String {
        let c = &self.config;
        let m = &self.metrics;
        let n = c.resources;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "fleet: {n} resources, {} replica(s), concurrency {}, chaos {}, crashes {}, refused status writes {:.0} %, seed {}",
            c.replicas,
            c.concurrency,
            on(c.chaos),
            on(c.crashes),
            c.refused_fraction * 100.0,
            c.seed,
        );
        let _ = writeln!(
            out,
            "{} · poll interval {} s (scenario)",
            c.scale,
            c.poll_interval.as_secs()
        );
        let _ = writeln!(out, "machine: {}", machine());
        let reconciles = RunMetrics::get(&m.reconciles);
        let _ = writeln!(
            out,
            "wall {:.2} s · scenario timeline {} → scaled {:.2} s · reconciles {reconciles} ({} per resource, {} errors)\n",
            self.wall.as_secs_f64(),
            fmt_duration(self.timeline),
            self.scaled_timeline().as_secs_f64(),
            per(reconciles, n),
            RunMetrics::get(&m.errors),
        );
        out.push_str(&endpoint_table(&self.requests, n));
        out.push('\n');
        let mut t = Table::new(&[
            "API-server request (operator)",
            ">requests",
            ">per resource",
        ]);
        for (k, v) in &self.api_ops {
            t.row(vec![k.clone(), v.to_string(), per(*v, n)]);
        }
        let api_total: u64 = self.api_ops.values().sum();
        t.row(vec![
            "total".into(),
            api_total.to_string(),
            per(api_total, n),
        ]);
        out.push_str(&t.render());
        out.push('\n');
        out.push_str(&self.calls_table);
        out.push('\n');
        let k = self.key_lookups;
        #[allow(clippy::cast_precision_loss)]
        let per_lookup = k.pages as f64 / k.lookups.max(1) as f64;
        let _ = writeln!(
            out,
            "idempotency lookups: {} lookups, {} pages, {per_lookup:.2} pages per lookup (max {}) · of which without an intent window: {} lookups, {} pages · shared reads of inherited windows: {} lookups, {} pages, answering {} intents · one attempt's window, key met: {} lookups, {} pages · by skip tag: {} lookups, {} pages, {} found · stopped at the page budget (window continued by a later call): {}",
            k.lookups,
            k.pages,
            k.max_pages,
            k.unbounded_lookups,
            k.unbounded_pages,
            k.shared_reads,
            k.shared_pages,
            k.shared_answered,
            k.found_lookups,
            k.found_pages,
            k.tagged_lookups,
            k.tagged_pages,
            k.tagged_found,
            k.unfinished,
        );
        // Per intent looked up: a shared read answers many inherited intents with one call, so
        // per call its pages count as one lookup's; per intent they are spread over the
        // intents it answered.
        let intents = k.lookups - k.shared_reads + k.shared_answered;
        #[allow(clippy::cast_precision_loss)]
        let per_intent = k.pages as f64 / intents.max(1) as f64;
        let _ = writeln!(
            out,
            "idempotency lookups per intent: {intents} intents looked up ({} by one attempt's window or its skip tag, {} answered by shared reads), {per_intent:.2} pages per intent",
            k.lookups - k.shared_reads,
            k.shared_answered,
        );
        let _ = writeln!(
            out,
            "unified_jobs look-ups (job kind): {} ({} per resource) · AAP requests per resource: {}",
            self.kind_lookups,
            per(self.kind_lookups, n),
            per(self.requests.total(), n),
        );
        let mut hist: BTreeMap<u32, usize> = BTreeMap::new();
        for i in 0..n {
            *hist.entry(self.audit.launches(i)).or_default() += 1;
        }
        let hist: Vec<String> = hist.iter().map(|(k, v)| format!("{k} jobs: {v}")).collect();
        let _ = writeln!(
            out,
            "AAP jobs: {} ({} purged mid-run, {} of them before any status recorded their id; {} launched again after their attempt's job was purged) · per resource: {} · needed per resource: 3 + its purged jobs",
            self.audit.jobs,
            self.audit.purged,
            self.audit.purged_unrecorded,
            self.audit.relaunched_after_purge,
            hist.join(", ")
        );
        let _ = writeln!(
            out,
            "polls per job: {:.2} · status writes answered 409: {} · finalizers released: {}",
            self.polls_per_job,
            self.status_conflicts,
            RunMetrics::get(&m.finalizers_released),
        );
        let a = &self.aap_client;
        let _ = writeln!(
            out,
            "AAP client (provkit-aap metrics): {:.0} attempts sent, {:.0} retries, {:.0} rate-limited answers · circuit breaker opened {:.0} times, {:.0} probes, closed {:.0} times, {:.0} requests refused (not sent)",
            a.attempts, a.retries, a.rate_limited, a.opened, a.half_open, a.closed, a.rejections,
        );
        let _ = writeln!(
            out,
            "engine CPU per reconcile: {} mean, {} max",
            fmt_duration(m.cpu_per_reconcile()),
            fmt_duration(Duration::from_nanos(RunMetrics::get(
                &m.reconcile_cpu_max_nanos
            )))
        );
        if let Some(cpu) = self.process_cpu {
            let _ = writeln!(
                out,
                "process CPU: {:.2} s (both fakes, every client and the user included)",
                cpu.as_secs_f64()
            );
        }
        let rss = self.peak_rss.map_or_else(|| "n/a".to_owned(), mib);
        let rss_ok = self.peak_rss.is_some_and(|b| b <= 300 * 1024 * 1024);
        let ms = &self.memory;
        let _ = writeln!(
            out,
            "peak RSS: {rss} (target ≤ 300 MiB: {}) · at the largest sample ({}): API-server stores {} ({} objects), watch window ≈ {}, fake AAP jobs ≈ {} ({} jobs)",
            if rss_ok { "met" } else { "MISSED" },
            mib(ms.rss),
            mib(ms.stores),
            ms.objects,
            mib(ms.watch_window),
            mib(ms.jobs_bytes),
            ms.jobs,
        );
        match (self.bound(), self.ratio()) {
            (Some((aap_bound, api_bound)), Some(ratio)) => {
                let limit = (aap_bound + api_bound).max(self.scaled_timeline());
                let _ = writeln!(
                    out,
                    "request bound: AAP {} requests ÷ {:.0}/s = {:.2} s + API server {api_total} requests ÷ {:.0}/s = {:.2} s → {:.2} s; scaled timeline {:.2} s",
                    self.requests.total(),
                    self.aap_rps,
                    aap_bound.as_secs_f64(),
                    self.api_rps,
                    api_bound.as_secs_f64(),
                    (aap_bound + api_bound).as_secs_f64(),
                    self.scaled_timeline().as_secs_f64(),
                );
                let target = if c.chaos || c.crashes {
                    "reported only under chaos"
                } else if ratio <= 1.5 {
                    "met"
                } else {
                    "MISSED"
                };
                let _ = writeln!(
                    out,
                    "wall ÷ max(request bound, scaled timeline) = {:.2} s ÷ {:.2} s = {ratio:.2} (target ≤ 1.5: {target})",
                    self.wall.as_secs_f64(),
                    limit.as_secs_f64(),
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "request bound: not measured (plain-loop probes off); scaled timeline {:.2} s",
                    self.scaled_timeline().as_secs_f64(),
                );
            }
        }
        if c.crashes || c.replicas > 1 {
            let _ = writeln!(
                out,
                "\ncrashes (whole replica dropped and rebuilt from the API server):"
            );
            let mut t = Table::new(&["crash point", ">crashes"]);
            for (p, k) in &self.crashes {
                t.row(vec![p.to_string(), k.to_string()]);
            }
            t.row(vec![
                "total".into(),
                self.crashes.values().sum::<u64>().to_string(),
            ]);
            out.push_str(&t.render());
            let hand: Vec<String> = self
                .handovers
                .iter()
                .map(|d| format!("{:.2} s", d.as_secs_f64()))
                .collect();
            let _ = writeln!(
                out,
                "leadership starts: {} · handovers after leader kills (wall; lease {} s scenario = {:.2} s): [{}]",
                self.leadership_starts,
                15,
                c.scale.of(Duration::from_secs(15)).as_secs_f64(),
                hand.join(", ")
            );
        }
        if !self.faults.is_empty() {
            let _ = writeln!(out, "\nfaults injected:");
            let mut t = Table::new(&["fault", ">hits"]);
            for (label, hits) in &self.faults {
                t.row(vec![label.clone(), hits.to_string()]);
            }
            t.row(vec![
                "AAP jobs purged mid-run".into(),
                self.audit.purged.to_string(),
            ]);
            out.push_str(&t.render());
        }
        out.push('\n');
        for (what, k, ok) in self.verdicts() {
            let _ = writeln!(out, "{} {what}: {k}", if ok { "✓" } else { "✗" });
        }
        for e in self
            .audit
            .duplicate_examples
            .iter()
            .chain(&self.audit.lost_examples)
        {
            let _ = writeln!(out, "    {e}");
        }
        for e in self
            .not_converged_examples
            .iter()
            .chain(&self.unexpected_examples)
        {
            let _ = writeln!(out, "    {e}");
        }
        for e in m
            .details
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let _ = writeln!(out, "    {e}");
        }
        out.push_str(&self.push.render());
        let _ = writeln!(out, "\nfleet: {}", if self.ok() { "PASS" } else { "FAIL" });
        out
    }
}

fn on(b: bool) -> &'static str {
    if b { "ON" } else { "off" }
}

/// `nproc` and the CPU model.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZeroUsize::get);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cpus} cores ({model}), {}", std::env::consts::OS)
}

/// Windows a probe is split into; its figure is the median window's rate.
const PROBE_WINDOWS: usize = 3;

fn median_rate(per_window: [u64; PROBE_WINDOWS], window: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let mut rates: Vec<f64> = per_window
        .iter()
        .map(|n| *n as f64 / window.as_secs_f64().max(1e-9))
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[PROBE_WINDOWS / 2]
}

/// The AAP plain loop: `workers` tasks on one client, each request a `POST launch` with
/// probability `launch_fraction`, else a `GET` of one of `jobs` (the run's own jobs).
async fn aap_probe(
    backend: &Backend,
    workers: usize,
    wall: Duration,
    launch_fraction: f64,
    jobs: Vec<(JobKind, u64)>,
) -> f64 {
    let Ok(client) = backend.client("probe/1") else {
        return 0.0;
    };
    let Ok(template) = client.get_template("probe-template").await else {
        return 0.0;
    };
    let typical =
        serde_json::to_value(VirtualNetwork::new("res-00001", spec(1, 2))).unwrap_or_default();
    let ctx = provkit_lifecycle::LaunchContext::new().with_idempotency_key(
        provkit_lifecycle::IdempotencyKey::new("pk1-probe-p-0000000000000000"),
    );
    let Ok(vars) = provkit_aap::provider::build_extra_vars(&typical, &ctx) else {
        return 0.0;
    };
    let request = provkit_aap::LaunchRequest::new(vars);
    let Ok(launched) = client.launch(&template, &request).await else {
        return 0.0;
    };
    let jobs: Arc<[(JobKind, u64)]> = if jobs.is_empty() {
        vec![(launched.kind, launched.id)].into()
    } else {
        jobs.into()
    };
    let window = wall / PROBE_WINDOWS as u32;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..workers.max(1) {
        let (client, template, request, jobs) = (
            client.clone(),
            template.clone(),
            request.clone(),
            jobs.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(worker as u64);
            let mut done = [0u64; PROBE_WINDOWS];
            while start.elapsed() < wall {
                let ok = if rng.f64() < launch_fraction {
                    client.launch(&template, &request).await.is_ok()
                } else {
                    let (kind, id) = jobs[rng.usize(..jobs.len())];
                    client.get_unified(kind, id).await.is_ok()
                };
                let at = (start.elapsed().as_nanos() / window.as_nanos().max(1)) as usize;
                if ok && at < PROBE_WINDOWS {
                    done[at] += 1;
                }
            }
            done
        }));
    }
    let mut per_window = [0u64; PROBE_WINDOWS];
    for t in tasks {
        for (sum, k) in per_window.iter_mut().zip(t.await.unwrap_or_default()) {
            *sum += k;
        }
    }
    median_rate(per_window, window)
}

/// The API-server plain loop: `workers` tasks on one client patch the status of (with
/// probability `write_fraction`) or get one of 100 probe objects, while a watcher consumes
/// every event the writes cause.
async fn api_probe(
    api: &FakeApiServer,
    workers: usize,
    wall: Duration,
    write_fraction: f64,
) -> f64 {
    let client = api.client_with_user_agent("probe/1");
    let objects: Api<VirtualNetwork> = Api::namespaced(client.clone(), NAMESPACE);
    let mut names = Vec::new();
    for i in 0..100 {
        let name = format!("probe-{i:03}");
        if objects
            .create(
                &PostParams::default(),
                &VirtualNetwork::new(&name, spec(i, 1)),
            )
            .await
            .is_ok()
        {
            names.push(name);
        }
    }
    if names.is_empty() {
        return 0.0;
    }
    let names: Arc<[String]> = names.into();
    let watch = tokio::spawn({
        let objects = objects.clone();
        async move {
            let mut s = std::pin::pin!(watcher(objects, watcher::Config::default()));
            while s.next().await.is_some() {}
        }
    });
    let window = wall / PROBE_WINDOWS as u32;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..workers.max(1) {
        let (objects, names) = (objects.clone(), names.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(worker as u64 ^ 0xa9);
            let mut done = [0u64; PROBE_WINDOWS];
            let mut k = 0u64;
            while start.elapsed() < wall {
                let name = &names[rng.usize(..names.len())];
                k += 1;
                let ok = if rng.f64() < write_fraction {
                    let body = serde_json::json!({"status": {"phase": "Progressing", "desiredConfigVersion": format!("{k:016x}")}});
                    objects
                        .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
                        .await
                        .is_ok()
                } else {
                    objects.get(name).await.is_ok()
                };
                let at = (start.elapsed().as_nanos() / window.as_nanos().max(1)) as usize;
                if ok && at < PROBE_WINDOWS {
                    done[at] += 1;
                }
            }
            done
        }));
    }
    let mut per_window = [0u64; PROBE_WINDOWS];
    for t in tasks {
        for (sum, k) in per_window.iter_mut().zip(t.await.unwrap_or_default()) {
            *sum += k;
        }
    }
    watch.abort();
    for name in names.iter() {
        let _ = objects.delete(name, &DeleteParams::default()).await;
    }
    median_rate(per_window, window)
}

fn sample_memory(h: &Harness) -> MemorySample {
    // The fake's own footprint (reference counts under its lock, sized after): sampling must
    // not copy the stores, or the copies become the peak it reports.
    let footprint = h.api.footprint();
    let jobs = h.backend.aap().jobs_footprint();
    let jobs_bytes = jobs.extra_vars_bytes + jobs.jobs * 300;
    MemorySample {
        rss: rss_bytes().unwrap_or(0),
        stores: footprint.json_bytes() - footprint.history_json_bytes,
        objects: footprint.objects(),
        jobs_bytes: jobs_bytes as u64,
        jobs: jobs.jobs,
        watch_window: footprint.history_json_bytes,
    }
}

/// Runs the fleet.
///
/// # Errors
/// [`BackendError`] when the fake AAP or a client cannot be set up.
#[allow(clippy::too_many_lines)]
pub async fn run_fleet(config: FleetConfig) -> Result<FleetReport, BackendError> {
    let n = config.resources.max(1);
    let scale = config.scale;
    let mut rng = fastrand::Rng::with_seed(config.seed);
    let mut bc = BackendConfig::scaled_fleet(
        scale,
        config.create_job,
        config.delete_job,
        config.client_timeout,
        config.seed,
    );
    bc.circuit_breaker = config.breaker.config(scale);
    let aap_counters = AapCounters::new();
    bc.metrics = Some(aap_counters.metrics());
    bc.rate_limit = config
        .aap_rate
        .map(|r| RateLimit::new(r / scale.factor(), 1));
    bc.extra_templates.push(JobTemplateSpec {
        allow_simultaneous: true,
        script: Some(provkit_testing::fake_aap::JobScript::successful(
            Duration::from_secs(3600),
        )),
        ..JobTemplateSpec::new("probe-template", ORGANIZATION)
    });
    let backend = Backend::start(&bc, n).await?;
    let retained = 5000;
    let mut hc = HarnessConfig::new(n);
    hc.scale = scale;
    hc.replicas = config.replicas;
    hc.concurrency = config.concurrency;
    hc.poll_interval = config.poll_interval;
    hc.seed = config.seed;
    hc.crashes = config.crashes.then(|| config.crash_plan.clone());
    hc.error_backoff = config.error_backoff;
    hc.taps = config.taps.clone();
    hc.push = config.push;
    let api = hc.api_server(retained);
    let h = Harness::new(hc, api.clone(), backend);
    let aap_chaos = config
        .chaos
        .then(|| Chaos::install(h.backend.aap(), bc.client_timeout));
    let api_chaos = config.chaos.then(|| ApiChaos::install(&api));
    h.start();

    let progress = config.progress.then(|| {
        let bar = indicatif::ProgressBar::new(n as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40.cyan/blue} {pos}/{len} resources provisioned, changed and deleted  [{elapsed}]",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let arrivals: Vec<Duration> = (0..n).map(|_| config.arrival.mul_f64(rng.f64())).collect();
    let think: Vec<[Duration; 2]> = (0..n)
        .map(|_| {
            [
                config.think.mul_f64(rng.f64()),
                config.think.mul_f64(rng.f64()),
            ]
        })
        .collect();
    let poll = config.poll_interval.as_secs().max(1);
    let seen_after =
        |d: Duration| Duration::from_secs((d.as_secs() + QUEUE_SECS).div_ceil(poll) * poll);
    let timeline = (0..n)
        .map(|i| {
            arrivals[i]
                + seen_after(config.create_job) * 2
                + seen_after(config.delete_job)
                + think[i][0]
                + think[i][1]
        })
        .max()
        .unwrap_or_default();
    let user = Arc::new(User {
        api: Api::namespaced(api.client_named("user"), NAMESPACE),
        phase: (0..n).map(|_| AtomicU8::new(PROVISIONING)).collect(),
        think,
        gone: AtomicUsize::new(0),
        progress: progress.clone(),
        h: h.clone(),
        done: tokio::sync::Notify::new(),
    });
    let refused: Vec<bool> = (0..n)
        .map(|_| rng.f64() < config.refused_fraction)
        .collect();

    let cpu0 = process_cpu();
    let wall0 = Instant::now();
    let watch = tokio::spawn(user.clone().watch());
    let mut background = Vec::new();
    for (index, at) in arrivals.iter().enumerate() {
        let (user, h) = (user.clone(), h.clone());
        let wait = scale.of(*at);
        let refuse = refused[index].then(|| scale.of(config.refuse_for));
        background.push(tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let name = resource_name(index);
            if refuse.is_some() {
                h.refuse_status_writes(&name);
            }
            // Boxed: the create future is large, and all N tasks wait for their arrival at
            // once (3.8 KB each unboxed: 38 MB at 10,000 resources).
            Box::pin(user.create(index)).await;
            if let Some(d) = refuse {
                tokio::time::sleep(d).await;
                h.allow_status_writes(&name);
            }
        }));
    }
    let purged = Arc::new(PurgeLog::default());
    let gone: Arc<Mutex<Option<FaultId>>> = Arc::default();
    let purged_by = Arc::new(Mutex::new(vec![0u32; n]));
    if config.chaos {
        let gone_at = scale.of(config.arrival.mul_f64(0.2 + rng.f64() * 0.6));
        let (api2, slot) = (api.clone(), gone.clone());
        background.push(tokio::spawn(async move {
            tokio::time::sleep(gone_at).await;
            let id = api2.inject(
                Fault::new(FaultEffect::Gone)
                    .verb(Verb::Watch)
                    .resource("virtualnetworks")
                    .times(1),
            );
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(id);
        }));
        for _ in 0..config.purges {
            let at = scale.of(config.arrival.mul_f64(0.2 + rng.f64()));
            let (h, log, by) = (h.clone(), purged.clone(), purged_by.clone());
            let seed = rng.u64(..);
            background.push(tokio::spawn(async move {
                tokio::time::sleep(at).await;
                let mut r = fastrand::Rng::with_seed(seed);
                let aap = h.backend.aap();
                let running: Vec<_> = aap
                    .jobs()
                    .into_iter()
                    .filter(|j| j.name.starts_with("sim-create") && j.status == "running")
                    .collect();
                if running.is_empty() {
                    return;
                }
                let job = &running[r.usize(..running.len())];
                let index =
                    attempt_of(&job.extra_vars).and_then(|a| h.records.index_of_uid(&a.uid));
                if let Some(index) = index
                    && log.purge(aap, job.id)
                    && let Some(c) = by
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_mut(index)
                {
                    *c += 1;
                }
            }));
        }
    }
    let push_drops = Arc::new(std::sync::atomic::AtomicU64::new(0));
    if let (Some(_), Some(every)) = (config.push, config.push_drop_every) {
        let (h, drops, seed) = (h.clone(), push_drops.clone(), rng.u64(..));
        background.push(tokio::spawn(async move {
            let mut r = fastrand::Rng::with_seed(seed);
            loop {
                tokio::time::sleep(h.wall(every.mul_f64(0.5 + r.f64()))).await;
                let n = h.backend.aap().websocket_drop_connections();
                drops.fetch_add(n as u64, Ordering::Relaxed);
            }
        }));
    }
    let best = Arc::new(Mutex::new(MemorySample::default()));
    let sampler = tokio::spawn({
        let (h, best) = (h.clone(), best.clone());
        async move {
            loop {
                tokio::time::sleep(h.wall(Duration::from_secs(60))).await;
                let s = sample_memory(&h);
                let mut b = best.lock().unwrap_or_else(PoisonError::into_inner);
                if s.rss >= b.rss {
                    *b = s;
                }
            }
        }
    });
    let deadline = scale.of(config.deadline);
    let debug = std::env::var_os("FLEET_DEBUG").is_some().then(|| {
        let (user, h) = (user.clone(), h.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let mut phases = [0usize; 4];
                for p in &user.phase {
                    phases[usize::from(p.load(Ordering::Acquire)).min(3)] += 1;
                }
                eprintln!(
                    "[{:>5.0} s] phases (provisioning, changed, deleting, gone) {phases:?} · crashes {} · leadership starts {} · lease {:?} · reconciles {} errors {}",
                    wall0.elapsed().as_secs_f64(),
                    h.crashes.total(),
                    h.crashes.leadership_starts(),
                    h.api.lease_holders(),
                    RunMetrics::get(&h.metrics.reconciles),
                    RunMetrics::get(&h.metrics.errors),
                );
            }
        })
    });
    let _ = tokio::time::timeout(deadline, user.done.notified()).await;
    if let Some(d) = debug {
        d.abort();
    }
    let wall = wall0.elapsed();
    let aap_client = aap_counters.snapshot();
    let peak_rss = peak_rss_bytes();
    let process_cpu = match (cpu0, process_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    sampler.abort();
    watch.abort();
    for t in background {
        t.abort();
    }
    if let Some(p) = &progress {
        p.finish();
    }
    // Let in-flight work settle before the replicas stop (jobs of the last deletions end).
    h.stop().await;
    let requests = EndpointCounts::read(h.backend.aap());
    let mut faults = aap_chaos
        .as_ref()
        .map(|c| c.hits(h.backend.aap()))
        .unwrap_or_default();
    if let Some(c) = &aap_chaos {
        c.remove(h.backend.aap());
    }
    if let Some(c) = &api_chaos {
        faults.extend(c.hits(&api));
        c.remove(&api);
    }
    if let Some(id) = *gone.lock().unwrap_or_else(PoisonError::into_inner) {
        // A `times(1)` fault stays listed (spent) with its hit.
        faults.push(("forced 410 Gone on a watch".into(), api.fault_hits(id)));
        api.remove_fault(id);
    }
    let api_ops = h.records.api_ops();
    let (mut aap_rps, mut api_rps) = (0.0, 0.0);
    if !config.probe.is_zero() {
        #[allow(clippy::cast_precision_loss)]
        let launch_fraction =
            requests.get(Endpoint::Launch) as f64 / requests.total().max(1) as f64;
        let probe_template = h.backend.aap().template_id("probe-template", None);
        let jobs: Vec<(JobKind, u64)> = h
            .backend
            .aap()
            .jobs()
            .into_iter()
            .filter(|j| j.template.is_some() && j.template != probe_template)
            .map(|j| (JobKind::Job, j.id))
            .collect();
        let workers = usize::from(config.concurrency);
        aap_rps = aap_probe(&h.backend, workers, config.probe, launch_fraction, jobs).await;
        let writes: u64 = api_ops
            .iter()
            .filter(|(k, _)| {
                !k.starts_with("get") && !k.starts_with("list") && !k.starts_with("watch")
            })
            .map(|(_, v)| v)
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let write_fraction = writes as f64 / api_ops.values().sum::<u64>().max(1) as f64;
        api_rps = api_probe(&api, workers, config.probe, write_fraction).await;
    }
    let audit = Audit::run(h.backend.aap(), &h.records, &purged, n);

    let remaining: Vec<VirtualNetwork> = api.objects();
    let remaining: Vec<&VirtualNetwork> = remaining
        .iter()
        .filter(|o| {
            o.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("res-"))
        })
        .collect();
    let mut not_converged_examples = Vec::new();
    let not_converged = (0..n)
        .filter(|i| user.phase[*i].load(Ordering::Acquire) != GONE)
        .count()
        .max(remaining.len());
    for o in remaining.iter().take(10) {
        not_converged_examples.push(describe_with_trail(o, &h.metrics));
    }
    let by = purged_by
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let mut unexpected_launches = 0;
    let mut unexpected_examples = Vec::new();
    for index in 0..n {
        let needed = 3 + by.get(index).copied().unwrap_or(0);
        let launched = audit.launches(index);
        if launched != needed {
            unexpected_launches += 1;
            if unexpected_examples.len() < 10 {
                unexpected_examples.push(format!(
                    "{}: {launched} AAP jobs ({} provision, {} deprovision), needed {needed}",
                    resource_name(index),
                    audit.provision_launches[index],
                    audit.deprovision_launches[index]
                ));
            }
        }
    }
    let polls = h.backend.calls.total(crate::instrumented::Op::GetJob);
    #[allow(clippy::cast_precision_loss)]
    let polls_per_job = polls as f64 / audit.jobs.max(1) as f64;
    let calls_table = call_table(&h.backend.calls, n);
    let push = crate::push_report::PushReport::measure(
        &h,
        &requests,
        audit.jobs,
        n,
        push_drops.load(Ordering::Relaxed),
    );
    let memory = best.lock().unwrap_or_else(PoisonError::into_inner).clone();
    Ok(FleetReport {
        wall,
        timeline,
        audit,
        requests,
        api_ops,
        aap_rps,
        api_rps,
        not_converged,
        not_converged_examples,
        unexpected_launches,
        unexpected_examples,
        polls_per_job,
        peak_rss,
        memory,
        process_cpu,
        faults,
        crashes: h.crashes.counts(),
        handovers: h.crashes.handovers(),
        leadership_starts: h.crashes.leadership_starts(),
        status_conflicts: h.records.status_conflicts.load(Ordering::Relaxed),
        aap_client,
        metrics: h.metrics.clone(),
        push,
        calls_table,
        key_lookups: h.backend.calls.key_lookups(),
        kind_lookups: h.backend.calls.total(crate::instrumented::Op::FindKind),
        config,
    })
}

/// One line about an object that did not get where it should: its generation, whether it is
/// being deleted, its launch intent, its jobs and its conditions (the reports print it for the
/// first few stuck objects).
pub fn describe_object(o: &VirtualNetwork) -> String {
    let jobs: Vec<String> = o
        .provisioning_jobs()
        .iter()
        .map(|j| {
            let message: String = j.message.chars().take(160).collect();
            format!(
                "{}:{}:{} {message:?}",
                j.job_type.as_str(),
                j.job_id,
                j.state.as_str()
            )
        })
        .collect();
    format!(
        "{} gen {:?} deleting {} finalizers {:?} intent {} jobs [{}] conditions [{}]",
        o.metadata.name.as_deref().unwrap_or(""),
        o.metadata.generation,
        o.metadata.deletion_timestamp.is_some(),
        o.metadata.finalizers.as_deref().unwrap_or_default(),
        o.provisioning_status()
            .is_some_and(|s| s.launch_intent.is_some()),
        jobs.join(", "),
        o.provisioning_status()
            .map(|s| s
                .conditions
                .iter()
                .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
                .collect::<Vec<_>>()
                .join("; "))
            .unwrap_or_default()
    )
}

/// [`describe_object`], then the object's last reconciles when the trail is kept
/// (`FLEET_DEBUG`), one per line.
pub fn describe_with_trail(o: &VirtualNetwork, metrics: &RunMetrics) -> String {
    let mut line = describe_object(o);
    for t in metrics
        .trail
        .of(o.metadata.name.as_deref().unwrap_or_default())
    {
        line.push_str("\n      ");
        line.push_str(&t);
    }
    line
}
