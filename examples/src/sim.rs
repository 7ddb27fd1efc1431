//! The simulation: the controller (reconcile function), its workers and the clock driver.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::{
    Clock, JobState, JobStatus, JobType, compute_desired_config_version, find_latest_job_by_type,
};
use provkit_lifecycle::{
    Action, BoxError, DeprovisionHooks, DeprovisionOutcome, DeprovisionStep, LaunchContext,
    Lifecycle, LifecycleError, LifecyclePolicy, ProvisionHooks, ProvisionOutcome, ProvisionStep,
    stale_check_fn, status_flush_fn,
};
use provkit_testing::fake_aap::FakeAap;

use crate::backend::Backend;
use crate::clock::VirtualClock;
use crate::instrumented::{CallRecord, CallStats, with_resource};
use crate::metrics::{RunMetrics, Timed};
use crate::queue::{Advance, DriveEnd, WorkQueue};
use crate::store::{ApiServer, Object, StatusSession};

/// How the controller runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SimConfig {
    /// Number of resource slots.
    pub resources: usize,
    /// Concurrent reconciles (workers).
    pub concurrency: usize,
    /// When the clock may advance.
    pub advance: Advance,
    /// Fraction of reconciles after a status write that read the previous (stale) copy.
    pub stale_fraction: f64,
    /// Seed for the store's randomness.
    pub seed: u64,
    /// The engine's policy.
    pub policy: LifecyclePolicy,
    /// Requeue after an engine error (kube-runtime's error policy; virtual time).
    pub error_requeue: Duration,
}

impl SimConfig {
    /// `resources` slots, 4 workers, discrete-event clock, no stale reads, Go's policy defaults.
    pub fn new(resources: usize) -> Self {
        Self {
            resources,
            concurrency: 4,
            advance: Advance::WhenIdle,
            stale_fraction: 0.0,
            seed: 1,
            policy: LifecyclePolicy::default(),
            error_requeue: Duration::from_secs(10),
        }
    }
}

/// What one reconcile did (handed to the [`Observer`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReconcileReport {
    /// The object's index.
    pub index: usize,
    /// Virtual time at the start.
    pub at: DateTime<Utc>,
    /// The copy the reconcile read (`None`: the object was gone).
    pub copy: Option<Arc<Object>>,
    /// True when the copy was stale.
    pub stale: bool,
    /// What the engine did.
    pub result: EngineResult,
    /// The provider calls made.
    pub calls: Vec<CallRecord>,
    /// The requeue handed to the queue.
    pub requeue: Option<Duration>,
    /// The finalizer was removed (the object is gone).
    pub released: bool,
    /// The API server's copy after the reconcile.
    pub after: Option<Arc<Object>>,
    /// CPU spent inside the reconcile.
    pub cpu: Duration,
}

/// The engine's answer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum EngineResult {
    /// The object no longer exists.
    Gone,
    /// Provisioning flow.
    Provision(Result<ProvisionOutcome, String>),
    /// Deprovisioning flow.
    Deprovision(Result<DeprovisionOutcome, String>),
    /// A status write failed after the engine ran.
    WriteFailed(String),
}

impl ReconcileReport {
    /// True when the object exists, is not being deleted and its latest provision job succeeded
    /// with the config version of its current spec.
    pub fn converged(&self) -> bool {
        self.after.as_ref().is_some_and(|o| is_converged(o))
    }

    /// `(decision, job id, state)` for a timeline line.
    pub fn describe(&self) -> (String, String, String) {
        let latest_state = |types: JobType| {
            self.after
                .as_ref()
                .and_then(|o| {
                    find_latest_job_by_type(&o.jobs, &types).map(|j| j.state.as_str().to_owned())
                })
                .unwrap_or_default()
        };
        match &self.result {
            EngineResult::Gone => ("(gone)".into(), String::new(), String::new()),
            EngineResult::WriteFailed(e) => (
                format!("status write failed: {e}"),
                String::new(),
                String::new(),
            ),
            EngineResult::Provision(Err(e)) => {
                (format!("error: {e}"), String::new(), String::new())
            }
            EngineResult::Deprovision(Err(e)) => {
                (format!("error: {e}"), String::new(), String::new())
            }
            EngineResult::Provision(Ok(o)) => {
                let (what, id) = match &o.step {
                    ProvisionStep::Skipped => ("Skip: config applied".to_owned(), String::new()),
                    ProvisionStep::StaleCache => {
                        ("Requeue: stale cache, no launch".to_owned(), String::new())
                    }
                    ProvisionStep::Launched { job_id } if o.action == Action::Backoff => {
                        ("Backoff over: retry launched".to_owned(), job_id.clone())
                    }
                    ProvisionStep::Launched { job_id } => {
                        (format!("{}: launched", o.action), job_id.clone())
                    }
                    ProvisionStep::Recovered { job_id } => {
                        ("Trigger: recovered by key".to_owned(), job_id.clone())
                    }
                    ProvisionStep::RateLimited { retry_after } => (
                        format!("rate-limited, retry in {}s", retry_after.as_secs()),
                        String::new(),
                    ),
                    ProvisionStep::Polled { job_id, state }
                        if state.is_terminal() && !state.is_successful() =>
                    {
                        let wait = self
                            .requeue
                            .map(crate::metrics::fmt_duration)
                            .unwrap_or_default();
                        (
                            format!("Poll: job {} → backoff, retry in {wait}", state.as_str()),
                            job_id.clone(),
                        )
                    }
                    ProvisionStep::Polled { job_id, .. } => ("Poll".to_owned(), job_id.clone()),
                    ProvisionStep::PurgedJobFailed { job_id } => {
                        ("Poll: job purged → Failed".to_owned(), job_id.clone())
                    }
                    ProvisionStep::StatusReadFailed { job_id } => {
                        ("Poll: status read failed".to_owned(), job_id.clone())
                    }
                    ProvisionStep::BackingOff { remaining } => (
                        format!(
                            "Backoff: retry in {}",
                            crate::metrics::fmt_duration(*remaining)
                        ),
                        String::new(),
                    ),
                    other => (format!("{other:?}"), String::new()),
                };
                (what, id, latest_state(JobType::Provision))
            }
            EngineResult::Deprovision(Ok(o)) => {
                let (what, id, ty) = match &o.step {
                    DeprovisionStep::Skipped => (
                        "Deprovision: skipped".to_owned(),
                        String::new(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::StaleCache => (
                        "Deprovision: stale cache, no launch".to_owned(),
                        String::new(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::Waiting => (
                        "Deprovision: cancel provision job, wait".to_owned(),
                        String::new(),
                        JobType::Provision,
                    ),
                    DeprovisionStep::Launched { job_id } => {
                        let canceled = self.after.as_ref().is_some_and(|o| {
                            find_latest_job_by_type(&o.jobs, &JobType::Provision)
                                .is_some_and(|j| j.state == JobState::Canceled)
                        });
                        let what = if canceled {
                            "Deprovision: provision job canceled → launched"
                        } else {
                            "Deprovision: launched"
                        };
                        (what.to_owned(), job_id.clone(), JobType::Deprovision)
                    }
                    DeprovisionStep::Recovered { job_id } => (
                        "Deprovision: recovered by key".to_owned(),
                        job_id.clone(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::RateLimited { retry_after } => (
                        format!(
                            "Deprovision: rate-limited, retry in {}s",
                            retry_after.as_secs()
                        ),
                        String::new(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::Polled { job_id, .. } => (
                        "Deprovision: poll".to_owned(),
                        job_id.clone(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::PurgedJobFailed { job_id } => (
                        "Deprovision: job purged → Failed".to_owned(),
                        job_id.clone(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::StatusReadFailed { job_id } => (
                        "Deprovision: status read failed".to_owned(),
                        job_id.clone(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::Finished { job_id, .. } => (
                        "Deprovision: finished, finalizer removed".to_owned(),
                        job_id.clone(),
                        JobType::Deprovision,
                    ),
                    DeprovisionStep::BackingOff { remaining } => (
                        format!(
                            "Deprovision: backoff {}",
                            crate::metrics::fmt_duration(*remaining)
                        ),
                        String::new(),
                        JobType::Deprovision,
                    ),
                    other => (format!("{other:?}"), String::new(), JobType::Deprovision),
                };
                let state = match &o.step {
                    DeprovisionStep::Finished { state, .. } => state.as_str().to_owned(),
                    _ => latest_state(ty),
                };
                (what, id, state)
            }
        }
    }
}

/// True when `o` exists for good and its latest provision job succeeded with its spec's version.
pub fn is_converged(o: &Object) -> bool {
    if o.deleting.is_some() {
        return false;
    }
    let Some(latest) = find_latest_job_by_type(&o.jobs, &JobType::Provision) else {
        return false;
    };
    latest.state == JobState::Succeeded
        && compute_desired_config_version(&*o.spec)
            .is_ok_and(|desired| latest.config_version == desired)
}

/// Sees every reconcile (drives the scenario: spec changes, deletions; prints timelines).
pub trait Observer: Send + Sync {
    /// Called after each reconcile, before the object goes back to the queue.
    fn reconciled(&self, sim: &Arc<Sim>, report: &ReconcileReport);
}

/// The simulation.
pub struct Sim {
    /// The virtual clock.
    pub clock: VirtualClock,
    /// The in-memory API server.
    pub store: Arc<ApiServer>,
    /// The work queue.
    pub queue: Arc<WorkQueue>,
    /// The lifecycle engine.
    pub engine: Lifecycle,
    /// Provider-call counters.
    pub calls: Arc<CallStats>,
    /// The fake AAP (for audits).
    pub aap: FakeAap,
    /// Run metrics.
    pub metrics: Arc<RunMetrics>,
    config: SimConfig,
}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// A simulation driving `backend`'s provider.
    pub fn new(config: SimConfig, clock: VirtualClock, backend: &Backend) -> Arc<Self> {
        let store = Arc::new(ApiServer::new(
            clock.clone(),
            config.resources,
            config.stale_fraction,
            config.seed,
        ));
        let queue = Arc::new(WorkQueue::new(
            clock.clone(),
            config.resources,
            config.advance,
        ));
        let engine = Lifecycle::new(backend.provider.clone(), clock.shared())
            .with_policy(config.policy.clone());
        Arc::new(Self {
            clock,
            store,
            queue,
            engine,
            calls: backend.calls.clone(),
            aap: backend.aap().clone(),
            metrics: Arc::new(RunMetrics::default()),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Creates object `index` and schedules its first reconcile (a watch event).
    pub fn create(&self, index: usize, kind: &str, name: &str, spec: serde_json::Value) {
        if self.store.create(index, kind, name, spec).is_some() {
            self.queue.schedule(index, self.clock.now());
        }
    }

    /// Changes the spec of `index` (a watch event).
    pub fn change_spec(&self, index: usize, spec: serde_json::Value) {
        if self.store.update_spec(index, spec).is_some() {
            self.queue.schedule(index, self.clock.now());
        }
    }

    /// Deletes `index` (a watch event; the finalizer keeps it until deprovisioned).
    pub fn delete(&self, index: usize) {
        if self.store.delete(index).is_some() {
            self.queue.schedule(index, self.clock.now());
        }
    }

    /// Runs `concurrency` workers and the clock driver until quiescence or `deadline`.
    pub async fn run(
        self: &Arc<Self>,
        observer: Arc<dyn Observer>,
        deadline: DateTime<Utc>,
    ) -> DriveEnd {
        let mut workers = Vec::new();
        for _ in 0..self.config.concurrency.max(1) {
            let sim = self.clone();
            let observer = observer.clone();
            workers.push(tokio::spawn(async move {
                while let Some(index) = sim.queue.next().await {
                    let report = sim.reconcile(index).await;
                    observer.reconciled(&sim, &report);
                    sim.queue.done(index, report.requeue);
                }
            }));
        }
        // The clock driver runs as a task of the runtime too (waking it is then cheap).
        let queue = self.queue.clone();
        let end = tokio::spawn(async move { queue.drive(deadline).await })
            .await
            .unwrap_or(DriveEnd::Closed);
        for w in workers {
            let _ = w.await;
        }
        end
    }

    /// One reconcile of object `index`.
    pub async fn reconcile(self: &Arc<Self>, index: usize) -> ReconcileReport {
        let at = self.clock.now();
        let read = self.store.begin_reconcile(index);
        let m = &self.metrics;
        m.reconciles.fetch_add(1, Ordering::Relaxed);
        let Some(copy) = read.object.clone() else {
            return ReconcileReport {
                index,
                at,
                copy: None,
                stale: false,
                result: EngineResult::Gone,
                calls: Vec::new(),
                requeue: None,
                released: false,
                after: None,
                cpu: Duration::ZERO,
            };
        };
        if read.stale {
            m.stale_reconciles.fetch_add(1, Ordering::Relaxed);
        }
        let session = Arc::new(StatusSession::new(self.store.clone(), &copy));
        let ((result, cpu), calls) =
            with_resource(index, Timed::new(self.run_engine(&copy, &session))).await;
        m.add_cpu(cpu);
        let (result, requeue, released) = result;
        self.store.end_reconcile(index, &read, session.wrote());
        ReconcileReport {
            index,
            at,
            copy: Some(copy),
            stale: read.stale,
            result,
            calls,
            requeue,
            released,
            after: self.store.fresh(index),
            cpu,
        }
    }

    async fn run_engine(
        self: &Arc<Self>,
        copy: &Arc<Object>,
        session: &Arc<StatusSession>,
    ) -> (EngineResult, Option<Duration>, bool) {
        let index = copy.index;
        let view = copy.view();
        let ctx = LaunchContext::new();
        let mut jobs = copy.jobs.clone();
        let s = session.clone();
        let flush = status_flush_fn(move |jobs: Vec<JobStatus>| {
            let s = s.clone();
            async move { s.write(&jobs).map_err(|e| Box::new(e) as BoxError) }
        });
        let m = &self.metrics;
        if copy.deleting.is_some() {
            if !copy.finalizer {
                return (
                    EngineResult::Deprovision(Err("no finalizer".into())),
                    None,
                    false,
                );
            }
            let store = self.store.clone();
            let check = stale_check_fn(move || {
                let store = store.clone();
                async move {
                    Ok(store
                        .fresh(index)
                        .map(|o| o.jobs.clone())
                        .unwrap_or_default())
                }
            });
            let mut hooks = DeprovisionHooks::new()
                .status_flush(&flush)
                .stale_check(&check);
            let out = self
                .engine
                .run_deprovisioning_lifecycle(&view, &mut jobs, &ctx, &mut hooks)
                .await;
            let out = match out {
                Ok(o) => o,
                Err(e) => {
                    return (
                        self.engine_error(&e, EngineResult::Deprovision),
                        Some(self.config.error_requeue),
                        false,
                    );
                }
            };
            if matches!(out.step, DeprovisionStep::StaleCache) {
                m.stale_check_requeues.fetch_add(1, Ordering::Relaxed);
            }
            if matches!(out.step, DeprovisionStep::Recovered { .. }) {
                m.recovered.fetch_add(1, Ordering::Relaxed);
            }
            if matches!(out.step, DeprovisionStep::RateLimited { .. }) {
                m.rate_limited.fetch_add(1, Ordering::Relaxed);
            }
            if out.history_changed
                && let Err(e) = session.write(&jobs)
            {
                m.write_failures.fetch_add(1, Ordering::Relaxed);
                return (
                    EngineResult::WriteFailed(e.to_string()),
                    Some(self.config.error_requeue),
                    false,
                );
            }
            let mut released = false;
            let mut requeue = out.requeue_after();
            if out.may_remove_finalizer() {
                self.audit_release(copy, &jobs);
                released = self.store.remove_finalizer(index);
                if released {
                    m.finalizers_released.fetch_add(1, Ordering::Relaxed);
                }
                requeue = None;
            }
            return (EngineResult::Deprovision(Ok(out)), requeue, released);
        }
        let desired = compute_desired_config_version(&*copy.spec).unwrap_or_default();
        let store = self.store.clone();
        let check = stale_check_fn(move || {
            let store = store.clone();
            async move {
                Ok(store
                    .fresh(index)
                    .map(|o| o.jobs.clone())
                    .unwrap_or_default())
            }
        });
        let mut hooks = ProvisionHooks::new()
            .stale_check(&check)
            .status_flush(&flush);
        let out = self
            .engine
            .run_provisioning_lifecycle(&view, &mut jobs, &desired, &ctx, &mut hooks)
            .await;
        drop(hooks);
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                return (
                    self.engine_error(&e, EngineResult::Provision),
                    Some(self.config.error_requeue),
                    false,
                );
            }
        };
        match out.step {
            ProvisionStep::StaleCache => {
                m.stale_check_requeues.fetch_add(1, Ordering::Relaxed);
            }
            ProvisionStep::Recovered { .. } => {
                m.recovered.fetch_add(1, Ordering::Relaxed);
            }
            ProvisionStep::RateLimited { .. } => {
                m.rate_limited.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        if (out.history_changed || out.adopted_legacy_job.is_some())
            && let Err(e) = session.write(&jobs)
        {
            m.write_failures.fetch_add(1, Ordering::Relaxed);
            return (
                EngineResult::WriteFailed(e.to_string()),
                Some(self.config.error_requeue),
                false,
            );
        }
        let requeue = out.requeue_after();
        (EngineResult::Provision(Ok(out)), requeue, false)
    }

    fn engine_error<T>(
        &self,
        e: &LifecycleError,
        wrap: impl FnOnce(Result<T, String>) -> EngineResult,
    ) -> EngineResult {
        self.metrics.errors.fetch_add(1, Ordering::Relaxed);
        if e.outcome_unknown() {
            self.metrics
                .unknown_outcome_errors
                .fetch_add(1, Ordering::Relaxed);
        }
        let mut text = e.to_string();
        if text.len() > 90 {
            let cut = (0..=90)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            text.truncate(cut);
            text.push('…');
        }
        wrap(Err(text))
    }

    /// Checks, against AAP's own records, that the deprovision job the engine relied on succeeded.
    fn audit_release(&self, copy: &Object, jobs: &[JobStatus]) {
        let latest = find_latest_job_by_type(jobs, &JobType::Deprovision);
        let verdict = match latest {
            None => Err("no deprovision job recorded".to_owned()),
            Some(job) => match job
                .job_id
                .parse::<u64>()
                .ok()
                .and_then(|id| self.aap.job(id))
            {
                None => Err(format!("deprovision job {} unknown to AAP", job.job_id)),
                Some(info) if info.status == "successful" => Ok(()),
                Some(info) => Err(format!(
                    "deprovision job {} is {} in AAP",
                    job.job_id, info.status
                )),
            },
        };
        if let Err(why) = verdict {
            self.metrics.early_releases.fetch_add(1, Ordering::Relaxed);
            let mut d = self
                .metrics
                .early_release_details
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if d.len() < 20 {
                d.push(format!("{}: {why}", copy.name));
            }
        }
    }
}
