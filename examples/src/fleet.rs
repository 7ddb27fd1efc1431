//! The fleet simulation: N resources, each provisioned, changed once and deleted, reconciled by a
//! concurrent work queue through the real engine and `AapProvider` against the fake AAP server,
//! optionally under chaos. Used by the `fleet` example and the CI-sized integration test.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use provkit_aap::{JobKind, RetryConfig};
use provkit_core::{JobType, find_latest_job_by_type};
use provkit_lifecycle::{Jitter, LifecyclePolicy};
use provkit_testing::fake_aap::{Endpoint, JobTemplateSpec};
use serde_json::{Value, json};

use crate::audit::{Audit, PurgeLog};
use crate::backend::{Backend, BackendConfig, BackendError, Chaos, KindTemplates};
use crate::clock::VirtualClock;
use crate::instrumented::Op;
use crate::metrics::{RunMetrics, fmt_duration, mib, peak_rss_bytes, process_cpu};
use crate::queue::{Advance, DriveEnd};
use crate::report::{EndpointCounts, Table, call_table, endpoint_table, per};
use crate::sim::{Observer, ReconcileReport, Sim, SimConfig};

/// The fleet's resource kinds: `(kind, provision job running time, deprovision running time)`.
pub const KINDS: [(&str, u64, u64); 3] = [
    ("VirtualNetwork", 60, 30),
    ("Volume", 90, 30),
    ("ComputeInstance", 150, 45),
];

/// Seconds a scripted job spends `pending` + `waiting` before it runs.
const QUEUE_SECS: u64 = 1;

/// Fleet settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FleetConfig {
    /// Number of resources.
    pub resources: usize,
    /// Concurrent reconciles.
    pub concurrency: usize,
    /// Inject faults and purge jobs.
    pub chaos: bool,
    /// Seed of every random choice (fault fractions, stale reads, think times).
    pub seed: u64,
    /// Fraction of reconciles after a status write that read a stale copy.
    pub stale_fraction: f64,
    /// Window (virtual) over which the resources are created.
    pub arrival: Duration,
    /// Longest wait (virtual) between convergence and the next user action.
    pub think: Duration,
    /// Jobs purged from AAP mid-run (chaos only).
    pub purges: usize,
    /// The engine's poll interval (virtual).
    pub poll_interval: Duration,
    /// Wall time of the plain-loop throughput probe.
    pub probe: Duration,
    /// Show a progress bar.
    pub progress: bool,
}

impl FleetConfig {
    /// `resources` resources, concurrency 64, no chaos, 20 % stale reads.
    pub fn new(resources: usize) -> Self {
        Self {
            resources,
            concurrency: 64,
            chaos: false,
            seed: 42,
            stale_fraction: 0.2,
            arrival: Duration::from_secs(600),
            think: Duration::from_secs(300),
            purges: (resources / 1000).max(3),
            poll_interval: Duration::from_secs(30),
            probe: Duration::from_secs(2),
            progress: false,
        }
    }
}

fn spec(index: usize, generation: u32) -> Value {
    let region = ["eu-west-1", "us-east-2", "ap-south-1"][index % 3];
    json!({
        "region": region,
        "size": if generation == 1 { "small" } else { "medium" },
        "cidr": format!("10.{}.{}.0/24", (index / 250) % 250, index % 250),
        "labels": {"team": format!("team-{}", index % 17), "generation": generation},
    })
}

fn kind_of(index: usize) -> (&'static str, u64, u64) {
    KINDS[index % KINDS.len()]
}

/// The scenario driver: spec change after the first convergence, deletion after the second.
struct Driver {
    phase: Vec<AtomicU8>,
    rng: Mutex<fastrand::Rng>,
    think: Duration,
    gone: AtomicUsize,
    progress: Option<indicatif::ProgressBar>,
}

const PROVISIONING: u8 = 0;
const CHANGED: u8 = 1;
const DELETING: u8 = 2;
const GONE: u8 = 3;

impl Driver {
    fn think(&self) -> Duration {
        let r = self
            .rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .f64();
        self.think.mul_f64(r)
    }
}

impl Observer for Driver {
    fn reconciled(&self, sim: &Arc<Sim>, report: &ReconcileReport) {
        let index = report.index;
        let Some(phase) = self.phase.get(index) else {
            return;
        };
        if report.released {
            if phase.swap(GONE, Ordering::AcqRel) != GONE {
                self.gone.fetch_add(1, Ordering::Relaxed);
                if let Some(p) = &self.progress {
                    p.inc(1);
                }
            }
            return;
        }
        if !report.converged() {
            return;
        }
        let generation = report.after.as_ref().map_or(0, |o| o.generation);
        let s = sim.clone();
        if generation == 1
            && phase
                .compare_exchange(PROVISIONING, CHANGED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            sim.queue.at(
                sim.clock.after(self.think()),
                Box::new(move || s.change_spec(index, spec(index, 2))),
            );
        } else if generation >= 2
            && phase
                .compare_exchange(CHANGED, DELETING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            sim.queue.at(
                sim.clock.after(self.think()),
                Box::new(move || s.delete(index)),
            );
        }
    }
}

/// Everything a fleet run measured.
#[derive(Debug)]
#[non_exhaustive]
pub struct FleetReport {
    /// The settings.
    pub config: FleetConfig,
    /// Wall time of the simulation (probe and audit excluded).
    pub wall: Duration,
    /// Virtual time covered.
    pub virtual_time: Duration,
    /// Why the queue stopped.
    pub end: DriveEnd,
    /// The audit.
    pub audit: Audit,
    /// Server-side requests of the simulation, by endpoint.
    pub requests: EndpointCounts,
    /// Plain-loop throughput of the same client against the same fake with the simulation's request
    /// mix, polling the run's own jobs (requests/s, measured after the run, median of
    /// three windows): the bound's divisor.
    pub probe_rps: f64,
    /// Plain-loop throughput of `GET job detail` of one job alone (requests/s, measured before the
    /// run, when the fake holds no other job).
    pub probe_get_rps: f64,
    /// Resources not deleted at the end.
    pub not_converged: usize,
    /// Up to ten of them, with their state.
    pub not_converged_examples: Vec<String>,
    /// Resources whose AAP job count differs from the jobs they needed (3 + their purged jobs).
    pub unexpected_launches: usize,
    /// Up to ten examples.
    pub unexpected_examples: Vec<String>,
    /// Provision jobs polled more often than ⌈duration ÷ poll interval⌉ + 1.
    pub poll_budget_exceeded: usize,
    /// Polls per job (mean).
    pub polls_per_job: f64,
    /// Peak RSS in bytes at the end of the simulation (before the probe and the audit).
    pub peak_rss: Option<u64>,
    /// Process CPU during the simulation.
    pub process_cpu: Option<Duration>,
    /// Fault labels and hits.
    pub faults: Vec<(String, u64)>,
    /// Rendered tables (endpoint, calls).
    tables: String,
    /// Counters.
    pub metrics: Arc<RunMetrics>,
    /// Status writes and conflicts.
    pub writes: (u64, u64),
    /// Reconciles per resource distribution: (min, median, p99, max) of provider calls per resource.
    pub calls_per_resource: (u32, u32, u32, u32),
}

impl FleetReport {
    /// The wall-time bound: requests ÷ plain-loop requests/s.
    pub fn bound(&self) -> Duration {
        #[allow(clippy::cast_precision_loss)]
        let secs = self.requests.total() as f64 / self.probe_rps.max(1e-9);
        Duration::from_secs_f64(secs.min(1e9))
    }

    /// Wall time ÷ bound.
    pub fn ratio(&self) -> f64 {
        self.wall.as_secs_f64() / self.bound().as_secs_f64().max(1e-9)
    }

    /// The correctness verdicts (each must hold): `(what, value, ok)`.
    pub fn verdicts(&self) -> Vec<(&'static str, usize, bool)> {
        let early =
            usize::try_from(RunMetrics::get(&self.metrics.early_releases)).unwrap_or(usize::MAX);
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
        let mut out = String::new();
        let _ = writeln!(
            out,
            "fleet: {} resources, concurrency {}, chaos {}, seed {}, stale reads {:.0} %",
            c.resources,
            c.concurrency,
            if c.chaos { "ON" } else { "off" },
            c.seed,
            c.stale_fraction * 100.0
        );
        let _ = writeln!(out, "machine: {}", machine());
        let _ = writeln!(
            out,
            "wall time {:.2} s · virtual time {} · end {:?}",
            self.wall.as_secs_f64(),
            fmt_duration(self.virtual_time),
            self.end
        );
        let reconciles = RunMetrics::get(&m.reconciles);
        let _ = writeln!(
            out,
            "reconciles {reconciles} ({} per resource)\n",
            per(reconciles, c.resources)
        );
        out.push_str(&self.tables);
        let mut hist: BTreeMap<u32, usize> = BTreeMap::new();
        for i in 0..c.resources {
            *hist.entry(self.audit.launches(i)).or_default() += 1;
        }
        let hist: Vec<String> = hist.iter().map(|(k, v)| format!("{k} jobs: {v}")).collect();
        let _ = writeln!(
            out,
            "AAP jobs: {} ({} purged mid-run) · per resource: {} · needed per resource: 3 + its purged jobs",
            self.audit.jobs,
            self.audit.purged,
            hist.join(", ")
        );
        let (lo, med, p99, hi) = self.calls_per_resource;
        let _ = writeln!(
            out,
            "provider calls per resource: min {lo}, median {med}, p99 {p99}, max {hi}"
        );
        let _ = writeln!(
            out,
            "polls per job: {:.2} (bound ⌈duration ÷ {}s⌉ + 1 exceeded by {} jobs)",
            self.polls_per_job,
            c.poll_interval.as_secs(),
            self.poll_budget_exceeded
        );
        let _ = writeln!(
            out,
            "stale reads {} → launches stopped by the stale-cache check {} · status writes {} (conflicts {}) · recovered by idempotency key {} · engine errors {} (unknown outcome {}) · rate-limited {}",
            RunMetrics::get(&m.stale_reconciles),
            RunMetrics::get(&m.stale_check_requeues),
            self.writes.0,
            self.writes.1,
            RunMetrics::get(&m.recovered),
            RunMetrics::get(&m.errors),
            RunMetrics::get(&m.unknown_outcome_errors),
            RunMetrics::get(&m.rate_limited),
        );
        let _ = writeln!(
            out,
            "engine CPU per reconcile: {} mean, {} max (time inside the reconcile future: engine + AapProvider + client encode/decode)",
            fmt_duration(m.cpu_per_reconcile()),
            fmt_duration(Duration::from_nanos(RunMetrics::get(
                &m.reconcile_cpu_max_nanos
            )))
        );
        if let Some(cpu) = self.process_cpu {
            let _ = writeln!(
                out,
                "process CPU: {:.2} s ({} per reconcile, fake AAP server and HTTP on both sides included)",
                cpu.as_secs_f64(),
                fmt_duration(cpu / u32::try_from(reconciles.max(1)).unwrap_or(u32::MAX))
            );
        }
        let rss = self.peak_rss.map_or_else(|| "n/a".to_owned(), mib);
        let rss_ok = self.peak_rss.is_some_and(|b| b <= 200 * 1024 * 1024);
        let _ = writeln!(
            out,
            "peak RSS: {rss} (target ≤ 200 MiB: {})",
            if rss_ok { "met" } else { "MISSED" }
        );
        #[allow(clippy::cast_precision_loss)]
        let launch_share =
            self.requests.get(Endpoint::Launch) as f64 / self.requests.total().max(1) as f64;
        #[allow(clippy::cast_precision_loss)]
        let get_bound = self.requests.total() as f64 / self.probe_get_rps.max(1e-9);
        let _ = writeln!(
            out,
            "plain loop, same client, same fake, {} workers (median of {PROBE_WINDOWS} windows): {:.0} requests/s with the run's mix ({:.0} % launches, polls over the run's jobs) → bound {:.2} s for {} requests; before the run, GET of one job alone {:.0} requests/s → {:.2} s (wall ÷ that: {:.2})",
            c.concurrency,
            self.probe_rps,
            launch_share * 100.0,
            self.bound().as_secs_f64(),
            self.requests.total(),
            self.probe_get_rps,
            get_bound,
            self.wall.as_secs_f64() / get_bound.max(1e-9),
        );
        if c.chaos {
            let _ = writeln!(
                out,
                "wall ÷ bound: {:.2} (chaos: faults add wall time; the 1.3× target applies without chaos)",
                self.ratio()
            );
            let _ = writeln!(out, "\nfaults injected:");
            let mut t = Table::new(&["fault", ">hits"]);
            for (label, hits) in &self.faults {
                t.row(vec![label.clone(), hits.to_string()]);
            }
            t.row(vec![
                "jobs purged mid-run".into(),
                self.audit.purged.to_string(),
            ]);
            out.push_str(&t.render());
        } else {
            let ok = self.ratio() <= 1.3;
            let _ = writeln!(
                out,
                "wall ÷ bound: {:.2} (target ≤ 1.3: {})",
                self.ratio(),
                if ok { "met" } else { "MISSED" }
            );
        }
        out.push('\n');
        for (what, n, ok) in self.verdicts() {
            let _ = writeln!(out, "{} {what}: {n}", if ok { "✓" } else { "✗" });
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
            .early_release_details
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let _ = writeln!(out, "    early release: {e}");
        }
        let _ = writeln!(out, "\nfleet: {}", if self.ok() { "PASS" } else { "FAIL" });
        out
    }
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

/// The JSON of a typical fleet resource after its first provision (two jobs in its history).
fn typical_resource() -> Value {
    let store = crate::store::ApiServer::new(VirtualClock::new(), 1, 0.0, 0);
    let Some(obj) = store.create(0, KINDS[1].0, "res-00001", spec(1, 2)) else {
        return Value::Null;
    };
    let mut obj = crate::store::Object::clone(&obj);
    let t = VirtualClock::new().start();
    let mut done = provkit_core::JobStatus::new(
        "1001",
        JobType::Provision,
        provkit_core::JobState::Succeeded,
        t,
    );
    done.config_version = "0123456789abcdef".into();
    done.message = "successful".into();
    let mut running = provkit_core::JobStatus::new(
        "2002",
        JobType::Provision,
        provkit_core::JobState::Running,
        t,
    );
    running.config_version = "fedcba9876543210".into();
    running.message = "running".into();
    obj.jobs = vec![done, running];
    obj.to_json()
}

/// What the plain loop polls: the job ids of a finished run, or (empty) the probe's own job.
fn run_jobs(backend: &Backend, probe_template: Option<u64>) -> Vec<(JobKind, u64)> {
    backend
        .aap()
        .jobs()
        .into_iter()
        .filter(|j| j.template.is_some() && j.template != probe_template)
        .map(|j| {
            let kind = if j.kind == "workflow_job" {
                JobKind::WorkflowJob
            } else {
                JobKind::Job
            };
            (kind, j.id)
        })
        .collect()
}

/// Windows the plain loop is split into; its figure is the median window's rate, so a burst of
/// load from outside the process in one window does not move the bound.
const PROBE_WINDOWS: usize = 3;

/// Measures requests/s of a plain loop with `workers` concurrent tasks for `wall` time: each request
/// is a `POST launch` with probability `launch_fraction`, else a `GET job detail` of a job picked at
/// random from `jobs` (the run's own jobs, so the fake serves the same population of jobs as in the
/// run; the probe's own job when `jobs` is empty), launches with the same payload as the
/// simulation's jobs. Returns the median of [`PROBE_WINDOWS`] windows' rates.
async fn probe(
    backend: &Backend,
    workers: usize,
    wall: Duration,
    launch_fraction: f64,
    jobs: Vec<(JobKind, u64)>,
) -> f64 {
    let Ok(template) = backend.client.get_template("probe-template").await else {
        return 0.0;
    };
    // A job like the simulation's: the same extra_vars envelope around a typical resource with a
    // job history, so each poll carries the same payload as a simulated poll.
    let typical = typical_resource();
    let ctx = provkit_lifecycle::LaunchContext::new().with_idempotency_key(
        provkit_lifecycle::IdempotencyKey::new("pk1-probe-p-0000000000000000"),
    );
    let Ok(vars) = provkit_aap::provider::build_extra_vars(&typical, &ctx) else {
        return 0.0;
    };
    let request = provkit_aap::LaunchRequest::new(vars);
    let Ok(launched) = backend.client.launch(&template, &request).await else {
        return 0.0;
    };
    let jobs: std::sync::Arc<[(JobKind, u64)]> = if jobs.is_empty() {
        vec![(launched.kind, launched.id)].into()
    } else {
        jobs.into()
    };
    // Warm the connection pool first.
    for _ in 0..workers.max(1) {
        let _ = backend.client.get_unified(launched.kind, launched.id).await;
    }
    let window = wall / PROBE_WINDOWS as u32;
    let start = tokio::time::Instant::now();
    let cpu0 = process_cpu();
    let mut tasks = Vec::new();
    for worker in 0..workers.max(1) {
        let (client, template, request, jobs) = (
            backend.client.clone(),
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
        let done = t.await.unwrap_or_default();
        for (sum, n) in per_window.iter_mut().zip(done) {
            *sum += n;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let used = match (cpu0, process_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a).as_secs_f64(),
        _ => 0.0,
    };
    #[allow(clippy::cast_precision_loss)]
    let mut rates: Vec<f64> = per_window
        .iter()
        .map(|n| *n as f64 / window.as_secs_f64().max(1e-9))
        .collect();
    rates.sort_by(f64::total_cmp);
    let median = rates[PROBE_WINDOWS / 2];
    if std::env::var_os("FLEET_DEBUG").is_some() {
        let total: u64 = per_window.iter().sum();
        eprintln!(
            "probe: {total} requests in {secs:.2} s over {} jobs, windows {rates:.0?} req/s, process CPU {used:.2} s ({:.0} % of one core)",
            jobs.len(),
            used / secs * 100.0
        );
    }
    median
}

/// Runs the fleet.
///
/// # Errors
/// [`BackendError`] when the fake or the client cannot be set up.
pub async fn run_fleet(config: FleetConfig) -> Result<FleetReport, BackendError> {
    let n = config.resources.max(1);
    let clock = VirtualClock::new();
    let kinds: Vec<KindTemplates> = KINDS
        .iter()
        .map(|(k, c, d)| KindTemplates::new(*k, Duration::from_secs(*c), Duration::from_secs(*d)))
        .collect();
    let mut bc = BackendConfig::new(kinds);
    bc.request_log = 0;
    bc.seed = config.seed;
    if config.chaos {
        bc.client_timeout = Duration::from_millis(500);
        bc.retry = RetryConfig::default()
            .max_retries(4)
            .initial_backoff(Duration::from_millis(5))
            .max_backoff(Duration::from_millis(50))
            .max_elapsed(Duration::from_secs(5));
    }
    // The probe's template (not one of the simulation's, so the audit ignores its job).
    bc.extra_templates.push(JobTemplateSpec {
        allow_simultaneous: true,
        script: Some(provkit_testing::fake_aap::JobScript::successful(
            Duration::from_secs(3600),
        )),
        ..JobTemplateSpec::new("probe-template", crate::backend::ORGANIZATION)
    });
    let backend = Backend::start(&bc, &clock, n).await?;
    let probe_get_rps = probe(&backend, config.concurrency, config.probe, 0.0, Vec::new()).await;
    let baseline = EndpointCounts::read(backend.aap());

    let mut policy = LifecyclePolicy::default().with_poll_interval(config.poll_interval);
    policy.poll_jitter = Jitter::Proportional { max_fraction: 0.1 };
    policy.backoff_jitter = Jitter::Proportional { max_fraction: 0.1 };
    let mut sc = SimConfig::new(n);
    sc.concurrency = config.concurrency.max(1);
    sc.advance = Advance::Pipelined;
    sc.stale_fraction = config.stale_fraction;
    sc.seed = config.seed;
    sc.policy = policy;
    sc.error_requeue = Duration::from_secs(5);
    let sim = Sim::new(sc, clock.clone(), &backend);
    let chaos = config
        .chaos
        .then(|| Chaos::install(backend.aap(), bc.client_timeout));
    let progress = config.progress.then(|| {
        let bar = indicatif::ProgressBar::new(n as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} resources provisioned, changed and deleted  [{elapsed}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let driver = Arc::new(Driver {
        phase: (0..n).map(|_| AtomicU8::new(PROVISIONING)).collect(),
        rng: Mutex::new(fastrand::Rng::with_seed(config.seed ^ 0xd1ce)),
        think: config.think,
        gone: AtomicUsize::new(0),
        progress: progress.clone(),
    });
    let mut rng = fastrand::Rng::with_seed(config.seed);
    for index in 0..n {
        let at = clock.after(config.arrival.mul_f64(rng.f64()));
        let s = sim.clone();
        sim.queue.at(
            at,
            Box::new(move || {
                let (kind, _, _) = kind_of(index);
                s.create(index, kind, &format!("res-{index:05}"), spec(index, 1));
            }),
        );
    }
    let purged = Arc::new(PurgeLog::default());
    let purged_by_resource = Arc::new(Mutex::new(vec![0u32; n]));
    if config.chaos {
        for _ in 0..config.purges {
            let at = clock.after(config.arrival.mul_f64(0.2 + rng.f64()));
            let (s, log, by) = (sim.clone(), purged.clone(), purged_by_resource.clone());
            let seed = rng.u64(..);
            sim.queue.at(
                at,
                Box::new(move || {
                    let mut r = fastrand::Rng::with_seed(seed);
                    for _ in 0..200 {
                        let index = r.usize(..n);
                        let Some(obj) = s.store.fresh(index) else {
                            continue;
                        };
                        if obj.deleting.is_some() {
                            continue;
                        }
                        let Some(job) = find_latest_job_by_type(&obj.jobs, &JobType::Provision)
                        else {
                            continue;
                        };
                        if job.state.is_terminal() {
                            continue;
                        }
                        let Ok(id) = job.job_id.parse::<u64>() else {
                            continue;
                        };
                        if s.aap
                            .job(id)
                            .is_some_and(|j| matches!(j.status, "pending" | "waiting" | "running"))
                            && log.purge(&s.aap, id)
                        {
                            if let Some(c) = by
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .get_mut(index)
                            {
                                *c += 1;
                            }
                            break;
                        }
                    }
                }),
            );
        }
    }

    let cpu0 = process_cpu();
    let wall0 = tokio::time::Instant::now();
    let end = sim
        .run(
            driver.clone(),
            clock.after(Duration::from_secs(7 * 24 * 3600)),
        )
        .await;
    let wall = wall0.elapsed();
    // Peak RSS of the run itself (before the probe and the audit).
    let peak_rss = peak_rss_bytes();
    let process_cpu = match (cpu0, process_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    if std::env::var_os("FLEET_DEBUG").is_some() {
        let used = process_cpu.unwrap_or_default().as_secs_f64();
        eprintln!(
            "simulation: {:.2} s, process CPU {used:.2} s ({:.0} % of one core)",
            wall.as_secs_f64(),
            used / wall.as_secs_f64() * 100.0
        );
    }
    if let Some(p) = &progress {
        p.finish();
    }
    let requests = EndpointCounts::read(backend.aap()).since(&baseline);
    let faults = chaos
        .as_ref()
        .map(|c| c.hits(backend.aap()))
        .unwrap_or_default();
    if let Some(c) = &chaos {
        c.remove(backend.aap());
    }
    // The plain loop with the simulation's own request mix (launch share), after the run, faults off.
    #[allow(clippy::cast_precision_loss)]
    let launch_fraction = requests.get(Endpoint::Launch) as f64 / requests.total().max(1) as f64;
    let probe_template = backend.aap().template_id("probe-template", None);
    let jobs = run_jobs(&backend, probe_template);
    let probe_rps = probe(
        &backend,
        config.concurrency,
        config.probe,
        launch_fraction,
        jobs,
    )
    .await;
    let audit = Audit::run(backend.aap(), &sim.store, &purged, n);

    // Convergence: every resource deleted, after its two provisions.
    let mut not_converged = 0;
    let mut not_converged_examples = Vec::new();
    let mut unexpected_launches = 0;
    let mut unexpected_examples = Vec::new();
    let by = purged_by_resource
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for index in 0..n {
        let phase = driver.phase[index].load(Ordering::Acquire);
        if phase != GONE || sim.store.fresh(index).is_some() {
            not_converged += 1;
            if not_converged_examples.len() < 10 {
                let state = sim.store.fresh(index).map_or_else(
                    || "missing".to_owned(),
                    |o| {
                        let jobs: Vec<String> = o
                            .jobs
                            .iter()
                            .map(|j| {
                                format!("{}:{}:{}", j.job_type.as_str(), j.job_id, j.state.as_str())
                            })
                            .collect();
                        format!(
                            "gen {} deleting {} jobs [{}]",
                            o.generation,
                            o.deleting.is_some(),
                            jobs.join(", ")
                        )
                    },
                );
                not_converged_examples.push(format!("res-{index:05} (phase {phase}): {state}"));
            }
        }
        let needed = 3 + by.get(index).copied().unwrap_or(0);
        let launched = audit.launches(index);
        if launched != needed {
            unexpected_launches += 1;
            if unexpected_examples.len() < 10 {
                unexpected_examples.push(format!(
                    "res-{index:05}: {launched} AAP jobs ({} provision, {} deprovision), needed {needed}",
                    audit.provision_launches[index], audit.deprovision_launches[index]
                ));
            }
        }
    }

    // Polls: each provision job of a kind with running time D is polled at most ⌈(D + queue) ÷ P⌉ + 1
    // times; deprovision jobs likewise; plus one provision-status read per deprovision trigger.
    let mut budget_exceeded = 0;
    let mut polls = 0u64;
    let mut jobs = 0u64;
    for index in 0..n {
        let (_, create, delete) = kind_of(index);
        let p = config.poll_interval.as_secs().max(1);
        let bound = |d: u64| (d + QUEUE_SECS).div_ceil(p) + 1;
        let provision_jobs = u64::from(audit.provision_launches[index]);
        let deprovision_jobs = u64::from(audit.deprovision_launches[index]);
        let allowed = provision_jobs * bound(create) + deprovision_jobs * (bound(delete) + 1);
        let made = u64::from(sim.calls.for_resource(index, Op::GetJob));
        polls += made;
        jobs += provision_jobs + deprovision_jobs;
        if made > allowed {
            budget_exceeded += 1;
        }
    }
    let mut per_resource: Vec<u32> = (0..n).map(|i| sim.calls.resource_total(i)).collect();
    per_resource.sort_unstable();
    let pick = |q: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((n - 1) as f64 * q).round() as usize;
        per_resource.get(i).copied().unwrap_or(0)
    };
    let calls_per_resource = (pick(0.0), pick(0.5), pick(0.99), pick(1.0));
    let mut tables = endpoint_table(&requests, n);
    tables.push('\n');
    tables.push_str(&call_table(&sim.calls, n));
    tables.push('\n');
    #[allow(clippy::cast_precision_loss)]
    let polls_per_job = polls as f64 / jobs.max(1) as f64;
    Ok(FleetReport {
        wall,
        virtual_time: clock.elapsed(),
        end,
        audit,
        requests,
        probe_rps,
        probe_get_rps,
        not_converged,
        not_converged_examples,
        unexpected_launches,
        unexpected_examples,
        poll_budget_exceeded: budget_exceeded,
        polls_per_job,
        peak_rss,
        process_cpu,
        faults,
        tables,
        metrics: sim.metrics.clone(),
        writes: (
            sim.store.stats.writes.load(Ordering::Relaxed),
            sim.store.stats.conflicts.load(Ordering::Relaxed),
        ),
        calls_per_resource,
        config,
    })
}
