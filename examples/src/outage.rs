//! The AAP outage scenario (issue 17, "Measured"): N resources mid-lifecycle — created, their
//! provision jobs launched and being polled — then AAP refuses connections (a TCP reset on
//! every path, before the request is handled) for 10 scenario minutes, then answers `503` with
//! `Retry-After` for 2 minutes, then recovers. Through the one-path [`Harness`] (kube-runtime
//! `Controller`s running provkit-kube's `Provisioner` with the real `AapProvider` and
//! `AapClient`, its circuit breaker and per-object error backoff scaled like every other
//! duration), it measures:
//!
//! - AAP requests during the outage, in total and per second of scenario time (target: at
//!   most one probe per second fleet-wide, plus the requests that trip the breaker — at most
//!   its threshold × the replicas);
//! - status writes and Event writes per object during the outage, counted from the operator's
//!   requests the fake API server handled (target: at most one of each per object);
//! - the time from recovery until every resource converged (target: 2 poll intervals + the
//!   longest backoff the outage left behind);
//! - then every object is deleted, and the usual audit runs against AAP's records: duplicates 0,
//!   lost job ids 0, no finalizer released early, exactly the needed jobs (one provision and
//!   one deprovision per resource).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::api::{Api, DeleteParams, PostParams};
use provkit_core::JobType;
use provkit_example_operator::crd::{VirtualNetwork, VirtualNetworkSpec};
use provkit_kube::{ErrorBackoffConfig, ProvisionedResource};
use provkit_testing::fake_aap::{Fault as AapFault, FaultAction, RetryAfter};
use provkit_testing::fake_apiserver::Verb;
use provkit_testing::observe::{ObservedRequest, Phase};
use serde_json::Value;
use tokio::time::Instant;

use crate::audit::{Audit, PurgeLog};
use crate::backend::{Backend, BackendConfig, BackendError};
use crate::fleet::{
    Watching, describe_with_trail, index_of, is_converged, machine, user_request, watch_objects,
};
use crate::harness::{Harness, HarnessConfig, NAMESPACE, PLURAL, resource_name};
use crate::measure::{AapCounters, AapSnapshot, BreakerSettings, PerSecond, RateSummary, Taps};
use crate::metrics::{RunMetrics, fmt_duration};
use crate::report::{Table, per};
use crate::stack::TimeScale;

/// Outage settings (durations in scenario time).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OutageConfig {
    /// Number of resources.
    pub resources: usize,
    /// The time scale.
    pub scale: TimeScale,
    /// kube-runtime reconcile concurrency.
    pub concurrency: u16,
    /// Replicas (2: leader election).
    pub replicas: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Window over which the resources are created.
    pub arrival: Duration,
    /// The engine's poll interval.
    pub poll_interval: Duration,
    /// How long a provision job runs (long enough to be running when the outage starts).
    pub create_job: Duration,
    /// How long a deprovision job runs.
    pub delete_job: Duration,
    /// The AAP client's request timeout.
    pub client_timeout: Duration,
    /// Time between every job having been recorded and the outage (jobs being polled).
    pub lead_in: Duration,
    /// How long AAP refuses connections.
    pub refused: Duration,
    /// Then how long it answers `503` with `Retry-After`.
    pub unavailable: Duration,
    /// The `Retry-After` of those answers (sent in whole wall seconds, at least 1).
    pub retry_after: Duration,
    /// The AAP client's circuit breaker.
    pub breaker: BreakerSettings,
    /// provkit-kube's per-object error backoff (production durations, scaled).
    pub error_backoff: ErrorBackoffConfig,
    /// Give up waiting for a phase (launches, convergence, deletion) after this long.
    pub deadline: Duration,
    /// Print the phases to stderr.
    pub progress: bool,
}

impl OutageConfig {
    /// `resources` resources, scale 1:10, 30 s polls, 5 min provision jobs, 10 min refused +
    /// 2 min `503`s with `Retry-After: 30`, the library's breaker and error-backoff defaults.
    pub fn new(resources: usize) -> Self {
        Self {
            resources,
            scale: TimeScale::new(0.1),
            concurrency: 64,
            replicas: 1,
            seed: 42,
            arrival: Duration::from_secs(60),
            poll_interval: Duration::from_secs(30),
            create_job: Duration::from_secs(300),
            delete_job: Duration::from_secs(30),
            client_timeout: Duration::from_secs(30),
            lead_in: Duration::from_secs(30),
            refused: Duration::from_secs(600),
            unavailable: Duration::from_secs(120),
            retry_after: Duration::from_secs(30),
            breaker: BreakerSettings::default(),
            error_backoff: ErrorBackoffConfig::default(),
            deadline: Duration::from_secs(1800),
            progress: false,
        }
    }

    /// The `Retry-After` header value in wall seconds.
    pub fn retry_after_header(&self) -> u64 {
        let wall = self.scale.of(self.retry_after).as_secs_f64().round();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let secs = wall.max(1.0) as u64;
        secs
    }

    /// The `Retry-After` the header stands for, in scenario time.
    pub fn effective_retry_after(&self) -> Duration {
        self.scale
            .production(Duration::from_secs(self.retry_after_header()))
    }
}

const RACY_TRIPPING: &str = "requests sent while the circuit was closed (tripping it)";
const RACY_MAX: &str = "AAP requests in one scenario second (max)";

const BEFORE: u8 = 0;
const REFUSED: u8 = 1;
const UNAVAILABLE: u8 = 2;
const RECOVERED: u8 = 3;

/// What the taps count during the outage.
#[derive(Debug)]
struct Counts {
    phase: AtomicU8,
    aap: PerSecond,
    aap_by_phase: [AtomicU64; 2],
    /// Object name → (status writes, Event writes) during the outage.
    writes: Mutex<HashMap<String, [u32; 2]>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A status write (0) or an Event write (1) of the operator, and the object it is about.
fn classify(method: &str, path: &str, body: &[u8]) -> Option<(usize, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let n = segs.len();
    match (method, segs.as_slice()) {
        ("PATCH" | "PUT", [.., "virtualnetworks", name, "status"]) => Some((0, (*name).to_owned())),
        ("POST", [.., "events"]) | ("PATCH" | "PUT", [.., "events", _]) => {
            // kube-runtime names an Event `<object>.<hex timestamp>`.
            let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let name = body
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| (n >= 1 && method != "POST").then(|| segs[n - 1].to_owned()))?;
            let object = name.split('.').next().unwrap_or_default().to_owned();
            Some((1, object))
        }
        _ => None,
    }
}

impl Counts {
    fn in_outage(&self) -> bool {
        matches!(self.phase.load(Ordering::Acquire), REFUSED | UNAVAILABLE)
    }

    fn on_aap(&self, req: &ObservedRequest<'_>, phase: Phase) {
        if phase != Phase::Received || !req.client.starts_with("replica-") {
            return;
        }
        let p = self.phase.load(Ordering::Acquire);
        if matches!(p, REFUSED | UNAVAILABLE) {
            self.aap.hit();
            self.aap_by_phase[usize::from(p - REFUSED)].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn on_api(&self, req: &ObservedRequest<'_>, phase: Phase) {
        if phase != Phase::Handled || !req.client.starts_with("replica-") || !self.in_outage() {
            return;
        }
        if let Some((kind, object)) = classify(req.method, req.path, req.body) {
            lock(&self.writes).entry(object).or_default()[kind] += 1;
        }
    }
}

/// The user's view: launches recorded, convergence and deletion, per object.
#[derive(Debug)]
struct Tracker {
    launched: Vec<AtomicBool>,
    launched_n: AtomicUsize,
    converged_at: Mutex<Vec<Option<Instant>>>,
    converged_n: AtomicUsize,
    gone: Vec<AtomicBool>,
    gone_n: AtomicUsize,
    /// Set once the objects are being deleted.
    deleting: AtomicBool,
}

impl Tracker {
    fn new(n: usize) -> Self {
        Self {
            launched: (0..n).map(|_| AtomicBool::new(false)).collect(),
            launched_n: AtomicUsize::new(0),
            converged_at: Mutex::new(vec![None; n]),
            converged_n: AtomicUsize::new(0),
            gone: (0..n).map(|_| AtomicBool::new(false)).collect(),
            gone_n: AtomicUsize::new(0),
            deleting: AtomicBool::new(false),
        }
    }

    fn seen(&self, obj: &VirtualNetwork) {
        let Some(i) = index_of(obj).filter(|i| *i < self.launched.len()) else {
            return;
        };
        let launched = obj
            .provisioning_jobs()
            .iter()
            .any(|j| j.job_type == JobType::Provision && !j.job_id.is_empty());
        if launched && !self.launched[i].swap(true, Ordering::AcqRel) {
            self.launched_n.fetch_add(1, Ordering::AcqRel);
        }
        if obj.metadata.deletion_timestamp.is_none() && is_converged(obj) {
            let mut at = lock(&self.converged_at);
            if at[i].is_none() {
                at[i] = Some(Instant::now());
                self.converged_n.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    fn deleted_at(&self, i: usize) {
        if i < self.gone.len() && !self.gone[i].swap(true, Ordering::AcqRel) {
            self.gone_n.fetch_add(1, Ordering::AcqRel);
        }
    }

    async fn watch(self: Arc<Self>, api: Api<VirtualNetwork>, pause: Duration) {
        watch_objects(api, pause, &*self).await;
    }
}

impl Watching for Tracker {
    fn resources(&self) -> usize {
        self.gone.len()
    }

    fn seen(&self, obj: &VirtualNetwork) {
        Tracker::seen(self, obj);
    }

    fn gone(&self, index: usize) {
        self.deleted_at(index);
    }

    fn may_be_gone(&self, _index: usize) -> bool {
        self.deleting.load(Ordering::Acquire)
    }
}

/// Waits (checking every `tick`) until `done()` or `limit` passed; returns whether done.
async fn wait_until(tick: Duration, limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= limit {
            return false;
        }
        tokio::time::sleep(tick).await;
    }
    true
}

/// Per-object write counts during the outage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteCounts {
    /// All writes.
    pub total: u64,
    /// The most for one object.
    pub max: u32,
    /// Objects with more than one.
    pub over_one: usize,
    /// Objects by count (0, 1, 2, 3+).
    pub histogram: [usize; 4],
}

impl WriteCounts {
    fn of(counts: impl Iterator<Item = u32>, objects: usize) -> Self {
        let mut w = WriteCounts::default();
        let mut seen = 0;
        for k in counts {
            seen += 1;
            w.total += u64::from(k);
            w.max = w.max.max(k);
            w.over_one += usize::from(k > 1);
            w.histogram[usize::try_from(k).unwrap_or(3).min(3)] += 1;
        }
        w.histogram[0] += objects.saturating_sub(seen);
        w
    }
}

/// Everything an outage run measured.
#[derive(Debug)]
#[non_exhaustive]
pub struct OutageReport {
    /// The settings.
    pub config: OutageConfig,
    /// Wall time of the whole run (creation to the last deletion).
    pub wall: Duration,
    /// Scenario time from the first creation to the outage.
    pub outage_at: Duration,
    /// Whether every resource had its provision job recorded before the outage.
    pub all_launched: bool,
    /// Resources already converged when the outage started (their jobs ended before).
    pub converged_before: usize,
    /// The outage's length in scenario time (refused + 503s, as run).
    pub outage: Duration,
    /// AAP requests from the replicas during the outage, per scenario second.
    pub aap: RateSummary,
    /// Of those: while refusing connections, while answering 503.
    pub aap_by_phase: [u64; 2],
    /// The client's own counters over the outage (provkit-aap metrics).
    pub breaker: AapSnapshot,
    /// Status writes during the outage, per object.
    pub status_writes: WriteCounts,
    /// Event writes during the outage, per object.
    pub event_writes: WriteCounts,
    /// The operator's API-server requests during the outage, by `verb resource`.
    pub api_ops: BTreeMap<String, u64>,
    /// Reconciles during the outage, and those that failed.
    pub reconciles: (u64, u64),
    /// Scenario time from recovery until every resource converged (`None`: some never did).
    pub recovery: Option<Duration>,
    /// Median of the per-resource times from recovery to convergence.
    pub recovery_median: Duration,
    /// Provision jobs still running in AAP at recovery.
    pub running_at_recovery: usize,
    /// When the recovery clock started, after recovery: zero, or when the last of those jobs
    /// ended.
    pub clock_start: Duration,
    /// Resources not converged by the deadline.
    pub not_converged: usize,
    /// Resources not deleted by the deadline.
    pub not_deleted: usize,
    /// The first few objects not converged or not deleted by the deadline, described.
    pub stuck_examples: Vec<String>,
    /// The audit.
    pub audit: Audit,
    /// Resources whose AAP jobs differ from the two needed.
    pub unexpected_launches: usize,
    /// Harness counters.
    pub metrics: Arc<RunMetrics>,
}

impl OutageReport {
    /// The AAP request budget of the outage: one probe per scenario second plus the requests
    /// that trip the breaker (threshold × replicas).
    pub fn request_budget(&self) -> u64 {
        self.outage.as_secs().max(1) + self.tripping_budget()
    }

    /// Requests that may trip the breaker: threshold × replicas.
    pub fn tripping_budget(&self) -> u64 {
        u64::from(self.config.breaker.threshold) * self.config.replicas.max(1) as u64
    }

    /// The longest backoff the outage leaves a resource in, and what it is: the breaker's hold
    /// (its cool-down, or a longer `Retry-After`), or the per-object error backoff's longest
    /// step when reconciles failed during the outage.
    pub fn longest_backoff(&self) -> (Duration, &'static str) {
        let c = &self.config;
        let mut best = (c.breaker.cool_down, "the breaker's cool-down");
        let ra = c.effective_retry_after();
        if ra > best.0 || c.breaker.threshold == 0 {
            best = if c.breaker.threshold == 0 {
                (ra, "the 503s' Retry-After (no breaker)")
            } else {
                (ra, "the breaker's hold after a 503 with Retry-After")
            };
        }
        if self.reconciles.1 > 0 && c.error_backoff.max > best.0 {
            best = (
                c.error_backoff.max,
                "the per-object error backoff's longest step (reconciles failed)",
            );
        }
        best
    }

    /// Target for the time from recovery to convergence: 2 poll intervals + the longest backoff.
    pub fn recovery_target(&self) -> Duration {
        self.config.poll_interval * 2 + self.longest_backoff().0
    }

    /// `(what, value, target, ok)` of every target.
    pub fn verdicts(&self) -> Vec<(String, String, String, bool)> {
        let mut v = Vec::new();
        let mut add = |what: &str, value: String, target: String, ok: bool| {
            v.push((what.to_owned(), value, target, ok));
        };
        add(
            "resources with a job running when the outage began",
            format!("{}", usize::from(self.all_launched) * self.config.resources),
            format!("{} (all)", self.config.resources),
            self.all_launched,
        );
        add(
            "AAP requests during the outage",
            self.aap.total.to_string(),
            format!(
                "≤ {} ({} s × 1 probe/s + {} tripping)",
                self.request_budget(),
                self.outage.as_secs(),
                self.tripping_budget()
            ),
            self.aap.total <= self.request_budget(),
        );
        add(
            "probes (requests sent half-open)",
            self.probes().to_string(),
            format!("≤ {} (1 per second)", self.outage.as_secs().max(1)),
            self.probes() <= self.outage.as_secs().max(1),
        );
        add(
            RACY_TRIPPING,
            self.tripping().to_string(),
            format!("≤ {} (threshold × replicas)", self.tripping_budget()),
            self.tripping() <= self.tripping_budget(),
        );
        add(
            RACY_MAX,
            self.aap.max.to_string(),
            format!("≤ {}", 1 + self.tripping_budget()),
            u64::from(self.aap.max) <= 1 + self.tripping_budget(),
        );
        add(
            "status writes per object during the outage (max)",
            self.status_writes.max.to_string(),
            "≤ 1".into(),
            self.status_writes.max <= 1,
        );
        add(
            "Event writes per object during the outage (max)",
            self.event_writes.max.to_string(),
            "≤ 1".into(),
            self.event_writes.max <= 1,
        );
        add(
            "recovery until every resource converged",
            self.recovery
                .map_or_else(|| "never".into(), |d| format!("{:.1} s", d.as_secs_f64())),
            format!("≤ {} s", self.recovery_target().as_secs()),
            self.recovery.is_some_and(|d| d <= self.recovery_target()),
        );
        let get = |c| RunMetrics::get(c);
        let early = get(&self.metrics.early_releases);
        for (what, value) in [
            ("duplicate launches", self.audit.duplicates as u64),
            ("lost job ids", self.audit.lost as u64),
            ("finalizers released before a successful deprovision", early),
            ("resources not converged", self.not_converged as u64),
            ("resources not deleted", self.not_deleted as u64),
            (
                "resources with launches ≠ 2 (provision + deprovision)",
                self.unexpected_launches as u64,
            ),
            ("jobs without an idempotency key", self.audit.unkeyed as u64),
            (
                "jobs still active at the end",
                self.audit.still_active as u64,
            ),
        ] {
            add(what, value.to_string(), "0".into(), value == 0);
        }
        v
    }

    /// The count targets only (everything but the recovery time): what a CI test asserts.
    ///
    /// Left out besides the recovery time: the requests sent while the circuit was still closed
    /// and the busiest second, which depend on how many requests were already on their way when
    /// the first failure came back. The breaker counts them, so from that failure on it lets
    /// only as many more through as could still open it (`threshold` in all), but when more
    /// than that were already sent — up to the reconcile concurrency — they all reach AAP.
    pub fn counts_ok(&self) -> bool {
        self.verdicts()
            .iter()
            .filter(|(w, ..)| !w.starts_with("recovery") && w != RACY_TRIPPING && w != RACY_MAX)
            .all(|(.., ok)| *ok)
    }

    /// Requests the breaker let through as probes during the outage (its half-open
    /// transitions, from provkit-aap's metrics).
    pub fn probes(&self) -> u64 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let probes = self.breaker.half_open.max(0.0) as u64;
        probes
    }

    /// Requests sent during the outage while the circuit was still closed: those that tripped
    /// it (every request but the probes).
    pub fn tripping(&self) -> u64 {
        self.aap.total.saturating_sub(self.probes())
    }

    /// Every target met.
    pub fn ok(&self) -> bool {
        self.verdicts().iter().all(|(.., ok)| *ok)
    }

    /// The text report.
    pub fn render(&self) -> String {
        let c = &self.config;
        let n = c.resources;
        let mut out = String::new();
        let secs = |d: Duration| format!("{} s", d.as_secs());
        let _ = writeln!(
            out,
            "outage: {n} resources, {} replica(s), concurrency {}, seed {}",
            c.replicas, c.concurrency, c.seed
        );
        let _ = writeln!(
            out,
            "{} · every figure below in scenario time unless marked wall",
            c.scale
        );
        let _ = writeln!(out, "machine: {}", machine());
        let _ = writeln!(
            out,
            "poll interval {} · provision jobs {} · deprovision jobs {} · client timeout {}",
            secs(c.poll_interval),
            secs(c.create_job),
            secs(c.delete_job),
            secs(c.client_timeout)
        );
        let _ = writeln!(
            out,
            "AAP client circuit breaker: opens after {} failed attempts in a row, open {}, one probe per {} · per-object error backoff {} → {} (all scaled)",
            c.breaker.threshold,
            secs(c.breaker.cool_down),
            secs(c.breaker.probe_interval),
            fmt_duration(c.error_backoff.initial),
            secs(c.error_backoff.max),
        );
        let _ = writeln!(
            out,
            "outage at {} (every provision job recorded {}, {} resources already converged): connections refused (TCP reset on every path) for {}, then 503 + Retry-After: {} s (wall; {} of scenario time) for {}\n",
            secs(self.outage_at),
            if self.all_launched { "yes" } else { "NO" },
            self.converged_before,
            secs(c.refused),
            c.retry_after_header(),
            secs(c.effective_retry_after()),
            secs(c.unavailable),
        );
        let _ = writeln!(out, "During the outage ({}):", secs(self.outage));
        let _ = writeln!(
            out,
            "  AAP requests: {} ({} while refusing, {} while answering 503) · max {} in one second (second {} of the outage) · {} seconds with any",
            self.aap.total,
            self.aap_by_phase[0],
            self.aap_by_phase[1],
            self.aap.max,
            self.aap.max_at,
            self.aap.busy,
        );
        let b = &self.breaker;
        let _ = writeln!(
            out,
            "  circuit breaker (provkit-aap metrics): opened {:.0} times, half-open (probe) {:.0}, closed {:.0} · {:.0} requests refused by the open circuit · {:.0} rate-limited answers · {:.0} attempts sent, {:.0} retries",
            b.opened, b.half_open, b.closed, b.rejections, b.rate_limited, b.attempts, b.retries
        );
        let hist = |w: &WriteCounts| {
            format!(
                "total {} ({} per object) · max {} · objects with 0: {}, 1: {}, 2: {}, 3+: {}",
                w.total,
                per(w.total, n),
                w.max,
                w.histogram[0],
                w.histogram[1],
                w.histogram[2],
                w.histogram[3]
            )
        };
        let _ = writeln!(out, "  status writes: {}", hist(&self.status_writes));
        let _ = writeln!(out, "  Event writes:  {}", hist(&self.event_writes));
        let _ = writeln!(
            out,
            "  reconciles: {} ({} per resource), {} failed",
            self.reconciles.0,
            per(self.reconciles.0, n),
            self.reconciles.1
        );
        if self.api_ops.is_empty() {
            let _ = writeln!(out, "  operator's API-server requests: none");
        } else {
            let mut t = Table::new(&[
                "API-server request during the outage (operator)",
                ">requests",
                ">per resource",
            ]);
            for (k, v) in &self.api_ops {
                t.row(vec![k.clone(), v.to_string(), per(*v, n)]);
            }
            out.push_str(&t.render());
        }
        let (backoff, what) = self.longest_backoff();
        let _ = writeln!(
            out,
            "\nAfter recovery{}: every resource converged after {} (median {:.1} s) · target ≤ 2 × {} + {} ({what}) = {}",
            if self.running_at_recovery == 0 {
                " (every provision job had ended during the outage)".to_owned()
            } else {
                format!(
                    " ({} provision jobs still running; clock started when the last ended, {:.0} s after recovery)",
                    self.running_at_recovery,
                    self.clock_start.as_secs_f64()
                )
            },
            self.recovery
                .map_or_else(|| "never".into(), |d| format!("{:.1} s", d.as_secs_f64())),
            self.recovery_median.as_secs_f64(),
            secs(c.poll_interval),
            secs(backoff),
            secs(self.recovery_target()),
        );
        let _ = writeln!(
            out,
            "Then deleted: {} of {n} · AAP jobs {} (needed 2 per resource) · finalizers released {}",
            n - self.not_deleted,
            self.audit.jobs,
            RunMetrics::get(&self.metrics.finalizers_released)
        );
        let _ = writeln!(out, "wall {:.1} s\n", self.wall.as_secs_f64());
        let mut t = Table::new(&["target", ">value", ">target", "ok"]);
        for (what, value, target, ok) in self.verdicts() {
            t.row(vec![
                what,
                value,
                target,
                if ok { "ok" } else { "MISSED" }.into(),
            ]);
        }
        out.push_str(&t.render());
        for e in self
            .audit
            .duplicate_examples
            .iter()
            .chain(&self.audit.lost_examples)
        {
            let _ = writeln!(out, "  {e}");
        }
        if !self.stuck_examples.is_empty() {
            let _ = writeln!(
                out,
                "objects left at the deadline (first {}):",
                self.stuck_examples.len()
            );
        }
        for e in &self.stuck_examples {
            let _ = writeln!(out, "  {e}");
        }
        let _ = writeln!(
            out,
            "{}",
            if self.ok() {
                "every outage target met"
            } else {
                "OUTAGE TARGETS MISSED"
            }
        );
        out
    }
}

fn spec(index: usize) -> VirtualNetworkSpec {
    VirtualNetworkSpec {
        cidr: format!("10.{}.{}.0/24", (index / 250) % 250, index % 250),
        region: Some(["eu-west-1", "us-east-2", "ap-south-1"][index % 3].to_owned()),
    }
}

/// Runs the outage scenario.
///
/// # Errors
/// [`BackendError`] when the fake AAP or a client cannot be set up.
#[allow(clippy::too_many_lines)]
pub async fn run_outage(config: OutageConfig) -> Result<OutageReport, BackendError> {
    let n = config.resources.max(1);
    let scale = config.scale;
    let say = |msg: String| {
        if config.progress {
            eprintln!("{msg}");
        }
    };
    let counters = AapCounters::new();
    let mut bc = BackendConfig::scaled_fleet(
        scale,
        config.create_job,
        config.delete_job,
        config.client_timeout,
        config.seed,
    );
    bc.circuit_breaker = config.breaker.config(scale);
    bc.metrics = Some(counters.metrics());
    let backend = Backend::start(&bc, n).await?;
    let counts = Arc::new(Counts {
        phase: AtomicU8::new(BEFORE),
        aap: PerSecond::new(scale),
        aap_by_phase: [AtomicU64::new(0), AtomicU64::new(0)],
        writes: Mutex::new(HashMap::new()),
    });
    let mut hc = HarnessConfig::new(n);
    hc.scale = scale;
    hc.replicas = config.replicas;
    hc.concurrency = config.concurrency;
    hc.poll_interval = config.poll_interval;
    hc.seed = config.seed;
    hc.error_backoff = config.error_backoff;
    let (c1, c2) = (counts.clone(), counts.clone());
    hc.taps = Taps {
        api: Some(Arc::new(move |req: &ObservedRequest<'_>, phase: Phase| {
            c1.on_api(req, phase);
            provkit_testing::observe::Verdict::Continue
        })),
        aap: Some(Arc::new(move |req: &ObservedRequest<'_>, phase: Phase| {
            c2.on_aap(req, phase);
            provkit_testing::observe::Verdict::Continue
        })),
    };
    let api = hc.api_server(5000);
    let h = Harness::new(hc, api.clone(), backend);
    h.start();

    let tick = scale.of(Duration::from_secs(1));
    let tracker = Arc::new(Tracker::new(n));
    let user: Api<VirtualNetwork> = Api::namespaced(api.client_named("user"), NAMESPACE);
    let watch = tokio::spawn(tracker.clone().watch(user.clone(), tick));
    let wall0 = Instant::now();
    let mut rng = fastrand::Rng::with_seed(config.seed);
    let mut creations = Vec::new();
    for index in 0..n {
        let wait = scale.of(config.arrival.mul_f64(rng.f64()));
        let (user, h) = (user.clone(), h.clone());
        creations.push(tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let name = resource_name(index);
            let obj = VirtualNetwork::new(&name, spec(index));
            let pp = PostParams::default();
            let created = match user_request(tick, || user.create(&pp, &obj)).await {
                Some(c) => Some(c),
                None => user.get(&name).await.ok(),
            };
            if let Some(uid) = created.and_then(|c| c.metadata.uid) {
                h.records
                    .uids
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(uid, index);
            }
        }));
    }
    let all_launched = wait_until(tick, scale.of(config.arrival + config.deadline), || {
        tracker.launched_n.load(Ordering::Acquire) >= n
    })
    .await;
    say(format!(
        "[{:>6.1} s wall] {} of {n} provision jobs recorded; outage in {} s",
        wall0.elapsed().as_secs_f64(),
        tracker.launched_n.load(Ordering::Acquire),
        config.lead_in.as_secs()
    ));
    tokio::time::sleep(scale.of(config.lead_in)).await;

    // The outage.
    let aap = h.backend.aap();
    let outage_at = scale.production(wall0.elapsed());
    let converged_before = tracker.converged_n.load(Ordering::Acquire);
    let ops0 = h.records.api_ops();
    let snap0 = counters.snapshot();
    let reconciles0 = RunMetrics::get(&h.metrics.reconciles);
    let errors0 = RunMetrics::get(&h.metrics.errors);
    counts.aap.start();
    counts.phase.store(REFUSED, Ordering::Release);
    let refused = aap.add_fault(AapFault::any_method("*", FaultAction::ConnectionReset));
    let t_out = Instant::now();
    tokio::time::sleep(scale.of(config.refused)).await;
    let unavailable = aap.add_fault(AapFault::any_method(
        "*",
        FaultAction::service_unavailable(RetryAfter::Seconds(config.retry_after_header())),
    ));
    aap.remove_fault(refused);
    counts.phase.store(UNAVAILABLE, Ordering::Release);
    say(format!(
        "[{:>6.1} s wall] connections refused for {} s; now 503 + Retry-After",
        wall0.elapsed().as_secs_f64(),
        config.refused.as_secs()
    ));
    tokio::time::sleep(scale.of(config.unavailable)).await;
    aap.remove_fault(unavailable);
    counts.phase.store(RECOVERED, Ordering::Release);
    let t_rec = Instant::now();
    let outage = scale.production(t_rec - t_out);
    let breaker = counters.snapshot().since(&snap0);
    let reconciles = (
        RunMetrics::get(&h.metrics.reconciles) - reconciles0,
        RunMetrics::get(&h.metrics.errors) - errors0,
    );
    let ops1 = h.records.api_ops();
    let api_ops: BTreeMap<String, u64> = ops1
        .iter()
        .map(|(k, v)| (k.clone(), v - ops0.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect();
    say(format!(
        "[{:>6.1} s wall] AAP answers again; waiting for convergence",
        wall0.elapsed().as_secs_f64()
    ));

    // The clock starts at recovery, or when the last provision job ended if some were still
    // running then (a short outage): convergence cannot precede the job's end.
    let active = |aap: &provkit_testing::fake_aap::FakeAap| {
        aap.jobs()
            .iter()
            .filter(|j| {
                j.name.contains("-create-")
                    && matches!(j.status, "new" | "pending" | "waiting" | "running")
            })
            .count()
    };
    let running_at_recovery = active(aap);
    let t_start = if running_at_recovery == 0 {
        t_rec
    } else {
        wait_until(tick, scale.of(config.deadline), || active(aap) == 0).await;
        Instant::now()
    };
    let converged = wait_until(tick, scale.of(config.deadline), || {
        tracker.converged_n.load(Ordering::Acquire) >= n
    })
    .await;
    let mut times: Vec<Duration> = lock(&tracker.converged_at)
        .iter()
        .flatten()
        .map(|at| scale.production(at.saturating_duration_since(t_start)))
        .collect();
    times.sort();
    let recovery = converged.then(|| times.last().copied().unwrap_or_default());
    let clock_start = scale.production(t_start.saturating_duration_since(t_rec));
    let recovery_median = times.get(times.len() / 2).copied().unwrap_or_default();
    let not_converged = n - tracker.converged_n.load(Ordering::Acquire).min(n);
    say(format!(
        "[{:>6.1} s wall] {} of {n} converged; deleting",
        wall0.elapsed().as_secs_f64(),
        n - not_converged
    ));

    for c in creations {
        c.abort();
    }
    tracker.deleting.store(true, Ordering::Release);
    let mut deletions = Vec::new();
    for index in 0..n {
        let user = user.clone();
        deletions.push(tokio::spawn(async move {
            let (name, dp) = (resource_name(index), DeleteParams::default());
            user_request(tick, || user.delete(&name, &dp)).await;
        }));
    }
    wait_until(tick, scale.of(config.deadline), || {
        tracker.gone_n.load(Ordering::Acquire) >= n
    })
    .await;
    let not_deleted = n - tracker.gone_n.load(Ordering::Acquire).min(n);
    let wall = wall0.elapsed();
    let stuck: Vec<VirtualNetwork> = api
        .objects::<VirtualNetwork>()
        .into_iter()
        .filter(|o| index_of(o).is_some_and(|i| !tracker.gone[i].load(Ordering::Acquire)))
        .collect();
    let stuck_examples: Vec<String> = stuck
        .iter()
        .take(10)
        .map(|o| {
            let aap_side: Vec<String> = o
                .provisioning_jobs()
                .iter()
                .filter_map(|j| j.job_id.parse().ok())
                .filter_map(|id| h.backend.aap().job(id))
                .map(|j| format!("{} {} {}", j.id, j.name, j.status))
                .collect();
            format!(
                "{}\n      AAP: {}",
                describe_with_trail(o, &h.metrics),
                aap_side.join("; ")
            )
        })
        .collect();
    if std::env::var_os("FLEET_API_LOG").is_some() {
        // Diagnosis: every list and watch of the objects, in order, and where the stuck objects
        // stand (their resourceVersion is their deletion's).
        for r in api.requests() {
            if matches!(r.verb, Some(Verb::List | Verb::Watch)) && r.path.contains(PLURAL) {
                say(format!(
                    "api {} {} {} {}",
                    r.client, r.method, r.path, r.status
                ));
            }
        }
        let versions: Vec<String> = stuck
            .iter()
            .map(|o| {
                format!(
                    "{}@{}",
                    o.metadata.name.as_deref().unwrap_or_default(),
                    o.metadata.resource_version.as_deref().unwrap_or_default()
                )
            })
            .collect();
        say(format!(
            "stuck ({}): {}",
            versions.len(),
            versions.join(" ")
        ));
    }
    for d in deletions {
        d.abort();
    }
    watch.abort();
    h.stop().await;

    let writes = lock(&counts.writes).clone();
    let status_writes = WriteCounts::of(writes.values().map(|w| w[0]), n);
    let event_writes = WriteCounts::of(writes.values().map(|w| w[1]), n);
    let audit = Audit::run(h.backend.aap(), &h.records, &PurgeLog::default(), n);
    let unexpected_launches = (0..n).filter(|i| audit.launches(*i) != 2).count();
    Ok(OutageReport {
        wall,
        outage_at,
        all_launched,
        converged_before,
        outage,
        aap: counts.aap.summary(1.0),
        aap_by_phase: [
            counts.aap_by_phase[0].load(Ordering::Relaxed),
            counts.aap_by_phase[1].load(Ordering::Relaxed),
        ],
        breaker,
        status_writes,
        event_writes,
        api_ops,
        reconciles,
        recovery,
        recovery_median,
        running_at_recovery,
        clock_start,
        not_converged,
        not_deleted,
        stuck_examples,
        audit,
        unexpected_launches,
        metrics: h.metrics.clone(),
        config,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_status_and_event_writes() {
        let status =
            "/apis/osac.openshift.io/v1alpha1/namespaces/default/virtualnetworks/res-00007/status";
        assert_eq!(
            classify("PATCH", status, b"{}"),
            Some((0, "res-00007".into()))
        );
        let body = br#"{"metadata": {"name": "res-00003.18c0ffee"}}"#;
        let events = "/apis/events.k8s.io/v1/namespaces/default/events";
        assert_eq!(
            classify("POST", events, body),
            Some((1, "res-00003".into()))
        );
        let one = "/apis/events.k8s.io/v1/namespaces/default/events/res-00004.18c0ffee";
        assert_eq!(classify("PATCH", one, b"{}"), Some((1, "res-00004".into())));
        let object =
            "/apis/osac.openshift.io/v1alpha1/namespaces/default/virtualnetworks/res-00007";
        assert_eq!(classify("PATCH", object, b"{}"), None);
    }

    #[test]
    fn write_counts_fill_in_untouched_objects() {
        let w = WriteCounts::of([1, 2, 0, 5].into_iter(), 10);
        assert_eq!((w.total, w.max, w.over_one), (8, 5, 2));
        assert_eq!(w.histogram, [7, 1, 1, 1]);
    }
}
