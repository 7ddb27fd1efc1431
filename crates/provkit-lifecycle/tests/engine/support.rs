//! Shared fixtures: times, job builders, a Go-style table provider, flush and stale-check fakes.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use provkit_core::{Clock, JobState, JobStatus, JobType, ManualClock};
use provkit_lifecycle::{
    BoxError, DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext,
    Lifecycle, LifecyclePolicy, ProviderError, ProvisionResult, ProvisionStatus,
    ProvisioningProvider, ResourceMeta, ResourceView, StaleCacheCheck, StatusFlush,
};

pub const POLL: Duration = Duration::from_secs(30);

pub fn t0() -> DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000, 0).unwrap()
}

pub fn ago(secs: i64) -> DateTime<Utc> {
    t0() - TimeDelta::seconds(secs)
}

pub fn mins(n: u64) -> Duration {
    Duration::from_secs(60 * n)
}

pub fn cap(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap()
}

pub fn pjob(id: &str, state: JobState, version: &str, at: DateTime<Utc>) -> JobStatus {
    let mut j = JobStatus::new(id, JobType::Provision, state, at);
    j.config_version = version.to_owned();
    j
}

pub fn djob(id: &str, state: JobState, block: bool, at: DateTime<Utc>) -> JobStatus {
    let mut j = JobStatus::new(id, JobType::Deprovision, state, at);
    j.block_deletion_on_failure = block;
    j
}

pub fn resource(uid: &str) -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "VirtualNetwork".into(),
            name: format!("net-{uid}"),
            namespace: Some("tenant".into()),
            uid: uid.into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "VirtualNetwork", "metadata": {"name": uid, "uid": uid}, "spec": {}}),
    )
}

pub fn clock_at(t: DateTime<Utc>) -> (ManualClock, Arc<dyn Clock>) {
    let c = ManualClock::new(t);
    (c.clone(), Arc::new(c))
}

/// Go's test policy: maxHistory and poll 30s.
pub fn policy(max_history: usize) -> LifecyclePolicy {
    LifecyclePolicy::default()
        .with_max_history(cap(max_history))
        .with_poll_interval(POLL)
}

type TriggerFn =
    Box<dyn Fn(&LaunchContext) -> Result<ProvisionResult, ProviderError> + Send + Sync>;
type StatusFn = Box<dyn Fn(&str) -> Result<ProvisionStatus, ProviderError> + Send + Sync>;
type DeprovFn = Box<dyn Fn(&[JobStatus]) -> Result<DeprovisionResult, ProviderError> + Send + Sync>;

/// The Go test suite's mock provider: trigger answers `{mock-job, Pending}`, every status is Succeeded;
/// each answer can be replaced. No idempotency lookup.
pub struct TableProvider {
    pub trigger: Mutex<TriggerFn>,
    pub status: Mutex<StatusFn>,
    pub deprov: Mutex<DeprovFn>,
    pub deprov_status: Mutex<StatusFn>,
    pub trigger_calls: AtomicUsize,
    pub status_calls: AtomicUsize,
    pub deprov_calls: AtomicUsize,
    pub deprov_status_calls: AtomicUsize,
    pub received_jobs: Mutex<Vec<Vec<JobStatus>>>,
}

impl std::fmt::Debug for TableProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TableProvider")
    }
}

impl TableProvider {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            trigger: Mutex::new(Box::new(|_| {
                Ok(ProvisionResult::new(
                    "mock-job",
                    JobState::Pending,
                    "triggered",
                ))
            })),
            status: Mutex::new(Box::new(|id| {
                Ok(ProvisionStatus::new(id, JobState::Succeeded, "successful"))
            })),
            deprov: Mutex::new(Box::new(|_| {
                Ok(DeprovisionResult::triggered("deprov-1", true))
            })),
            deprov_status: Mutex::new(Box::new(|id| {
                Ok(ProvisionStatus::new(id, JobState::Succeeded, "successful"))
            })),
            trigger_calls: AtomicUsize::new(0),
            status_calls: AtomicUsize::new(0),
            deprov_calls: AtomicUsize::new(0),
            deprov_status_calls: AtomicUsize::new(0),
            received_jobs: Mutex::new(Vec::new()),
        })
    }

    pub fn on_trigger(
        &self,
        f: impl Fn(&LaunchContext) -> Result<ProvisionResult, ProviderError> + Send + Sync + 'static,
    ) {
        *self.trigger.lock().unwrap() = Box::new(f);
    }
    pub fn on_status(
        &self,
        f: impl Fn(&str) -> Result<ProvisionStatus, ProviderError> + Send + Sync + 'static,
    ) {
        *self.status.lock().unwrap() = Box::new(f);
    }
    pub fn on_deprovision(
        &self,
        f: impl Fn(&[JobStatus]) -> Result<DeprovisionResult, ProviderError> + Send + Sync + 'static,
    ) {
        *self.deprov.lock().unwrap() = Box::new(f);
    }
    pub fn on_deprovision_status(
        &self,
        f: impl Fn(&str) -> Result<ProvisionStatus, ProviderError> + Send + Sync + 'static,
    ) {
        *self.deprov_status.lock().unwrap() = Box::new(f);
    }
    pub fn triggers(&self) -> usize {
        self.trigger_calls.load(Ordering::SeqCst)
    }
    pub fn deprovisions(&self) -> usize {
        self.deprov_calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for TableProvider {
    fn name(&self) -> &str {
        "table"
    }
    async fn trigger_provision(
        &self,
        _: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        self.trigger_calls.fetch_add(1, Ordering::SeqCst);
        (self.trigger.lock().unwrap())(ctx)
    }
    async fn provision_status(
        &self,
        _: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status_calls.fetch_add(1, Ordering::SeqCst);
        (self.status.lock().unwrap())(job_id)
    }
    async fn trigger_deprovision(
        &self,
        _: &ResourceView,
        jobs: &[JobStatus],
        _: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        self.deprov_calls.fetch_add(1, Ordering::SeqCst);
        self.received_jobs.lock().unwrap().push(jobs.to_vec());
        (self.deprov.lock().unwrap())(jobs)
    }
    async fn deprovision_status(
        &self,
        _: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.deprov_status_calls.fetch_add(1, Ordering::SeqCst);
        (self.deprov_status.lock().unwrap())(job_id)
    }
    fn idempotency_support(&self) -> IdempotencySupport {
        IdempotencySupport::Unsupported
    }
    async fn find_job_by_idempotency_key(
        &self,
        _: &ResourceView,
        _: &JobType,
        _: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        Err(ProviderError::unsupported(
            "find_job_by_idempotency_key",
            "table",
        ))
    }
}

/// An engine over a [`TableProvider`] at `t0()`.
pub fn table_engine(max_history: usize) -> (Arc<TableProvider>, ManualClock, Lifecycle) {
    let provider = TableProvider::new();
    let (clock, dyn_clock) = clock_at(t0());
    let engine = Lifecycle::new(provider.clone(), dyn_clock).with_policy(policy(max_history));
    (provider, clock, engine)
}

/// A flush hook that records what it was given; optionally fails.
#[derive(Default)]
pub struct RecordingFlush {
    pub calls: Mutex<Vec<Vec<JobStatus>>>,
    pub fail: bool,
}

impl RecordingFlush {
    pub fn failing() -> Self {
        Self {
            calls: Mutex::new(Vec::new()),
            fail: true,
        }
    }
    pub fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait::async_trait]
impl StatusFlush for RecordingFlush {
    async fn flush(&self, jobs: &[JobStatus]) -> Result<(), BoxError> {
        self.calls.lock().unwrap().push(jobs.to_vec());
        if self.fail {
            Err("conflict: the object has been modified".into())
        } else {
            Ok(())
        }
    }
}

/// A stale-cache check answering a fixed fresh history (or an error); counts calls.
pub struct FixedFresh {
    pub jobs: Result<Vec<JobStatus>, String>,
    pub calls: AtomicUsize,
}

impl FixedFresh {
    pub fn jobs(jobs: Vec<JobStatus>) -> Self {
        Self {
            jobs: Ok(jobs),
            calls: AtomicUsize::new(0),
        }
    }
    pub fn error(msg: &str) -> Self {
        Self {
            jobs: Err(msg.to_owned()),
            calls: AtomicUsize::new(0),
        }
    }
    pub fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl StaleCacheCheck for FixedFresh {
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.jobs.clone().map_err(Into::into)
    }
}

/// Go v0.1.1's test policy, explicitly: `LifecyclePolicy::go_v0_1_1()` with maxHistory and poll 30s.
/// The spec's v0.1.1 vector tables run under it.
pub fn v011_policy(max_history: usize) -> LifecyclePolicy {
    LifecyclePolicy::go_v0_1_1()
        .with_max_history(cap(max_history))
        .with_poll_interval(POLL)
}

/// An engine over a [`TableProvider`] at `t0()` under [`v011_policy`].
pub fn v011_engine(max_history: usize) -> (Arc<TableProvider>, ManualClock, Lifecycle) {
    let provider = TableProvider::new();
    let (clock, dyn_clock) = clock_at(t0());
    let engine = Lifecycle::new(provider.clone(), dyn_clock).with_policy(v011_policy(max_history));
    (provider, clock, engine)
}
