//! [`ScriptedProvider`]: a [`ProvisioningProvider`] that plays back per-resource scripts and records
//! every call.
//!
//! ```
//! use provkit_core::{JobState, JobType};
//! use provkit_lifecycle::{LaunchContext, ProvisioningProvider, ResourceMeta, ResourceView};
//! use provkit_testing::scripted::{ScriptedProvider, StatusStep, TriggerStep};
//!
//! # tokio_test_block_on(async {
//! let provider = ScriptedProvider::new();
//! provider.push_trigger("uid-1", TriggerStep::RateLimited(std::time::Duration::from_secs(45)));
//! provider.push_trigger("uid-1", TriggerStep::launch());
//! provider.push_job_statuses("uid-1", &JobType::Provision, [
//!     StatusStep::State(JobState::Running),
//!     StatusStep::State(JobState::Succeeded),
//! ]);
//!
//! let r = ResourceView::new(ResourceMeta { kind: "Subnet".into(), name: "s".into(), namespace: None, uid: "uid-1".into(), ..Default::default() }, serde_json::json!({}));
//! assert!(provider.trigger_provision(&r, &LaunchContext::new()).await.is_err());
//! let job = provider.trigger_provision(&r, &LaunchContext::new()).await.unwrap();
//! assert_eq!(provider.provision_status(&r, &job.job_id).await.unwrap().state, JobState::Running);
//! assert_eq!(provider.provision_status(&r, &job.job_id).await.unwrap().state, JobState::Succeeded);
//! assert_eq!(provider.jobs_created("uid-1", &JobType::Provision), 1);
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

mod script;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext, ProviderError,
    ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceView,
};

pub use script::{DeprovisionScript, ProviderCall, ScriptedJob, StatusStep, TriggerStep};

/// A scripted, thread-safe [`ProvisioningProvider`] for tests.
///
/// - Scripts are kept **per resource uid**: a queue of trigger answers, a queue of deprovision answers,
///   and queues of status sequences handed to the jobs launched for that resource (one sequence per
///   job, in launch order).
/// - Empty queues fall back to defaults: triggers launch (`Pending`), deprovision triggers launch with
///   `blockDeletionOnFailure = true`, and jobs report the default status sequence (`Succeeded`).
///   As `AapProvider` does, a default deprovision trigger first looks at the latest provision job
///   of the history it is given: while that job is still running here (its next status is not
///   final), it is canceled (its next status is `Canceled`) and the answer is `Waiting` with the
///   job's status; a job that has ended is reported with the `Triggered` answer.
/// - Every call is recorded with its arguments ([`calls`](Self::calls)).
/// - Job ids are decimal numbers, `"1"`, `"2"`, … across all resources, like AAP's; the status of
///   an id that is not a number is an error (as `AapProvider` answers), never `NotFound`, and
///   an unknown number is `NotFound`. Jobs remember their idempotency key, so
///   [`find_job_by_idempotency_key`](ProvisioningProvider::find_job_by_idempotency_key) works.
///   It reports [`IdempotencySupport::Lookup`] by default — what `AapProvider` reports — so tests
///   see production's lookup behaviour; script
///   [`with_idempotency_support`](Self::with_idempotency_support)`(CheapLookup)` to have the
///   engine look up before every launch.
///
/// Clones share state, so one provider can serve many concurrent reconciles.
#[derive(Clone, Debug)]
pub struct ScriptedProvider {
    name: String,
    support: IdempotencySupport,
    lookup_cap: usize,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct ResourceScript {
    triggers: VecDeque<TriggerStep>,
    deprovisions: VecDeque<DeprovisionScript>,
    provision_statuses: VecDeque<Vec<StatusStep>>,
    deprovision_statuses: VecDeque<Vec<StatusStep>>,
}

#[derive(Debug)]
struct JobEntry {
    info: ScriptedJob,
    steps: VecDeque<StatusStep>,
}

/// What a default deprovision found of the latest provision job (`check_provision_job`).
enum ProvisionJob {
    /// Still running: canceled now; its status before the cancel.
    Running(ProvisionStatus),
    /// Ended (its status), or nothing to look at.
    Settled(Option<ProvisionStatus>),
}

#[derive(Debug)]
struct State {
    scripts: HashMap<String, ResourceScript>,
    default_statuses: Vec<StatusStep>,
    jobs: BTreeMap<u64, JobEntry>,
    next_id: u64,
    calls: Vec<ProviderCall>,
    launch_refused_for: Option<std::time::Duration>,
}

impl State {
    /// The script of `uid` (created empty on first use).
    fn script(&mut self, uid: &str) -> &mut ResourceScript {
        self.scripts.entry(uid.to_owned()).or_default()
    }
}

impl Default for ScriptedProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedProvider {
    /// A provider named `"scripted"` reporting [`IdempotencySupport::Lookup`] (as `AapProvider`).
    pub fn new() -> Self {
        Self {
            name: "scripted".into(),
            support: IdempotencySupport::Lookup,
            lookup_cap: Self::DEFAULT_LOOKUP_CAP,
            state: Arc::new(Mutex::new(State {
                scripts: HashMap::new(),
                default_statuses: vec![StatusStep::State(JobState::Succeeded)],
                jobs: BTreeMap::new(),
                next_id: 1,
                calls: Vec::new(),
                launch_refused_for: None,
            })),
        }
    }

    /// Changes the reported [`IdempotencySupport`] (with `Unsupported`, lookups return
    /// [`ProviderError::Unsupported`]).
    #[must_use]
    pub fn with_idempotency_support(mut self, support: IdempotencySupport) -> Self {
        self.support = support;
        self
    }

    /// The default of [`with_lookup_cap`](Self::with_lookup_cap): 100,000 jobs, the AAP
    /// client's default `max_lookup_items`.
    pub const DEFAULT_LOOKUP_CAP: usize = 100_000;

    /// At most `jobs` jobs are read by one idempotency lookup, newest first across every
    /// resource's jobs of the type (as `AapProvider` lists a template's jobs); a lookup that
    /// reaches the cap without a match is an error, never "not found".
    #[must_use]
    pub fn with_lookup_cap(mut self, jobs: usize) -> Self {
        self.lookup_cap = jobs;
        self
    }

    /// Changes the provider name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What [`launch_refused_for`](ProvisioningProvider::launch_refused_for) answers from now
    /// on, for every resource (`Some`: as a provider whose circuit breaker is open; `None`, the
    /// default: launches may be sent).
    pub fn set_launch_refused_for(&self, wait: Option<std::time::Duration>) {
        self.lock().launch_refused_for = wait;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues the answer of the next `trigger_provision` for `uid`.
    pub fn push_trigger(&self, uid: &str, step: TriggerStep) {
        self.lock().script(uid).triggers.push_back(step);
    }

    /// Queues the answer of the next `trigger_deprovision` for `uid`.
    pub fn push_deprovision(&self, uid: &str, step: DeprovisionScript) {
        self.lock().script(uid).deprovisions.push_back(step);
    }

    /// Queues the status sequence of the next job of `job_type` launched for `uid`.
    pub fn push_job_statuses(
        &self,
        uid: &str,
        job_type: &JobType,
        steps: impl IntoIterator<Item = StatusStep>,
    ) {
        let mut state = self.lock();
        let script = state.script(uid);
        let steps: Vec<_> = steps.into_iter().collect();
        match job_type {
            JobType::Deprovision => script.deprovision_statuses.push_back(steps),
            _ => script.provision_statuses.push_back(steps),
        }
    }

    /// Sets the status sequence of jobs without a queued one (default: `[Succeeded]`).
    pub fn set_default_statuses(&self, steps: impl IntoIterator<Item = StatusStep>) {
        let steps: Vec<_> = steps.into_iter().collect();
        self.lock().default_statuses = if steps.is_empty() {
            vec![StatusStep::State(JobState::Succeeded)]
        } else {
            steps
        };
    }

    /// Replaces the remaining status steps of an existing job.
    pub fn set_job_statuses(&self, job_id: &str, steps: impl IntoIterator<Item = StatusStep>) {
        let mut state = self.lock();
        if let Some(entry) = state.jobs.values_mut().find(|j| j.info.job_id == job_id) {
            entry.steps = steps.into_iter().collect();
        }
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<ProviderCall> {
        self.lock().calls.clone()
    }

    /// The calls made for `uid`.
    pub fn calls_for(&self, uid: &str) -> Vec<ProviderCall> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.uid() == uid)
            .cloned()
            .collect()
    }

    /// Every job created so far (including jobs whose launch answer was lost).
    pub fn jobs(&self) -> Vec<ScriptedJob> {
        self.lock().jobs.values().map(|j| j.info.clone()).collect()
    }

    /// How many jobs of `job_type` were created for `uid`.
    pub fn jobs_created(&self, uid: &str, job_type: &JobType) -> usize {
        self.lock()
            .jobs
            .values()
            .filter(|j| j.info.uid == uid && &j.info.job_type == job_type)
            .count()
    }

    /// Forgets recorded calls (scripts and jobs stay).
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// The default deprovision's first step (`AapProvider`'s): the latest provision job of
    /// `jobs`, recorded as not final, read here without consuming its script. Still running:
    /// it is canceled (its next status is `Canceled`) and its status goes with the `Waiting`
    /// answer. Ended: its status goes with the `Triggered` answer. No such job here, or gone,
    /// or unreadable: `Settled(None)`.
    fn check_provision_job(state: &mut State, jobs: &[JobStatus]) -> ProvisionJob {
        let Some(latest) = provkit_core::find_latest_job_by_type(jobs, &JobType::Provision)
            .filter(|j| !j.state.is_terminal())
        else {
            return ProvisionJob::Settled(None);
        };
        let Some(entry) = state.jobs.values_mut().find(|j| {
            j.info.job_id == latest.job_id && j.info.job_type == JobType::Provision && j.info.exists
        }) else {
            return ProvisionJob::Settled(None);
        };
        let now = match entry.steps.front() {
            Some(StatusStep::State(s)) => s.clone(),
            Some(StatusStep::FailedWith(_)) => JobState::Failed,
            Some(StatusStep::NotFound | StatusStep::Error(_)) => {
                return ProvisionJob::Settled(None);
            }
            None => JobState::Succeeded,
        };
        let status = ProvisionStatus::new(
            entry.info.job_id.clone(),
            now.clone(),
            now.as_str().to_ascii_lowercase(),
        );
        if now.is_terminal() {
            return ProvisionJob::Settled(Some(status));
        }
        entry.steps = VecDeque::from([StatusStep::State(JobState::Canceled)]);
        ProvisionJob::Running(status)
    }

    fn create_job(
        state: &mut State,
        uid: &str,
        job_type: JobType,
        key: Option<IdempotencyKey>,
    ) -> String {
        let n = state.next_id;
        state.next_id += 1;
        let job_id = n.to_string();
        let script = state.script(uid);
        let queued = match job_type {
            JobType::Deprovision => script.deprovision_statuses.pop_front(),
            _ => script.provision_statuses.pop_front(),
        };
        let steps = queued.unwrap_or_else(|| state.default_statuses.clone());
        state.jobs.insert(
            n,
            JobEntry {
                info: ScriptedJob {
                    job_id: job_id.clone(),
                    uid: uid.to_owned(),
                    job_type,
                    key,
                    state: JobState::Pending,
                    exists: true,
                },
                steps: steps.into(),
            },
        );
        job_id
    }

    fn status(
        &self,
        job_type: &JobType,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        let mut state = self.lock();
        let call = match job_type {
            JobType::Deprovision => ProviderCall::DeprovisionStatus {
                uid: resource.uid.clone(),
                job_id: job_id.to_owned(),
            },
            _ => ProviderCall::ProvisionStatus {
                uid: resource.uid.clone(),
                job_id: job_id.to_owned(),
            },
        };
        state.calls.push(call);
        if job_id.trim().parse::<u64>().is_err() {
            return Err(ProviderError::other(format!(
                "job id {job_id:?} is not a {} job id (its ids are decimal numbers)",
                self.name
            )));
        }
        let Some(entry) = state
            .jobs
            .values_mut()
            .find(|j| j.info.job_id == job_id && &j.info.job_type == job_type)
        else {
            return Err(ProviderError::not_found(format!("job {job_id}")));
        };
        if !entry.info.exists {
            return Err(ProviderError::not_found(format!("job {job_id}")));
        }
        let step = if entry.steps.len() > 1 {
            entry.steps.pop_front()
        } else {
            entry.steps.front().cloned()
        };
        match step.unwrap_or(StatusStep::State(JobState::Succeeded)) {
            StatusStep::State(s) => {
                entry.info.state = s.clone();
                Ok(ProvisionStatus::new(
                    job_id,
                    s.clone(),
                    s.as_str().to_ascii_lowercase(),
                ))
            }
            StatusStep::FailedWith(details) => {
                entry.info.state = JobState::Failed;
                Ok(ProvisionStatus::new(job_id, JobState::Failed, "failed")
                    .with_error_details(details))
            }
            StatusStep::NotFound => {
                entry.info.exists = false;
                Err(ProviderError::not_found(format!("job {job_id}")))
            }
            StatusStep::Error(message) => Err(ProviderError::other(message)),
        }
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        let mut state = self.lock();
        state.calls.push(ProviderCall::TriggerProvision {
            uid: resource.uid.clone(),
            ctx: ctx.clone(),
        });
        let step = state
            .script(&resource.uid)
            .triggers
            .pop_front()
            .unwrap_or_else(TriggerStep::launch);
        let key = ctx.idempotency_key.clone();
        match step {
            TriggerStep::Launch {
                initial_state,
                message,
            } => {
                let id = Self::create_job(&mut state, &resource.uid, JobType::Provision, key);
                Ok(ProvisionResult::new(id, initial_state, message))
            }
            TriggerStep::RateLimited(d) => Err(ProviderError::rate_limited(d)),
            TriggerStep::FailNotMade(m) => Err(ProviderError::launch_not_made(m, None)),
            TriggerStep::Fail(m) => Err(ProviderError::other(m)),
            TriggerStep::LoseAnswer => {
                Self::create_job(&mut state, &resource.uid, JobType::Provision, key);
                Err(ProviderError::outcome_unknown(
                    "launch answer lost: connection reset",
                    None,
                ))
            }
            TriggerStep::EmptyJobId => {
                Self::create_job(&mut state, &resource.uid, JobType::Provision, key);
                Ok(ProvisionResult::new(
                    "",
                    JobState::Pending,
                    "Provisioning job triggered",
                ))
            }
        }
    }

    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(&JobType::Provision, resource, job_id)
    }

    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        let mut state = self.lock();
        state.calls.push(ProviderCall::TriggerDeprovision {
            uid: resource.uid.clone(),
            jobs: jobs.to_vec(),
            ctx: ctx.clone(),
        });
        let scripted = state.script(&resource.uid).deprovisions.pop_front();
        let step = match scripted {
            Some(step) => step,
            None => match Self::check_provision_job(&mut state, jobs) {
                ProvisionJob::Running(running) => {
                    return Ok(DeprovisionResult::waiting(true).with_provision_job_status(running));
                }
                ProvisionJob::Settled(provision_status) => DeprovisionScript::Triggered {
                    block_deletion_on_failure: true,
                    provision_status,
                },
            },
        };
        let key = ctx.idempotency_key.clone();
        match step {
            DeprovisionScript::Triggered {
                block_deletion_on_failure,
                provision_status,
            } => {
                let id = Self::create_job(&mut state, &resource.uid, JobType::Deprovision, key);
                let mut r = DeprovisionResult::triggered(id, block_deletion_on_failure);
                if let Some(st) = provision_status {
                    r = r.with_provision_job_status(st);
                }
                Ok(r)
            }
            DeprovisionScript::Waiting { provision_status } => {
                let mut r = DeprovisionResult::waiting(true);
                if let Some(st) = provision_status {
                    r = r.with_provision_job_status(st);
                }
                Ok(r)
            }
            DeprovisionScript::Skipped => Ok(DeprovisionResult::skipped()),
            DeprovisionScript::RateLimited(d) => Err(ProviderError::rate_limited(d)),
            DeprovisionScript::Fail(m) => Err(ProviderError::other(m)),
            DeprovisionScript::LoseAnswer { .. } => {
                Self::create_job(&mut state, &resource.uid, JobType::Deprovision, key);
                Err(ProviderError::outcome_unknown(
                    "launch answer lost: timeout",
                    None,
                ))
            }
        }
    }

    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(&JobType::Deprovision, resource, job_id)
    }

    fn idempotency_support(&self) -> IdempotencySupport {
        self.support
    }

    fn launch_refused_for(
        &self,
        _resource: &ResourceView,
        _job_type: &JobType,
    ) -> Option<std::time::Duration> {
        self.lock().launch_refused_for
    }

    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let mut state = self.lock();
        state.calls.push(ProviderCall::FindJob {
            uid: resource.uid.clone(),
            job_type: job_type.clone(),
            key: key.clone(),
        });
        if self.support == IdempotencySupport::Unsupported {
            return Err(ProviderError::unsupported(
                "find_job_by_idempotency_key",
                self.name.clone(),
            ));
        }
        // As AAP lists a template's jobs: every resource's jobs of this type, newest first, at
        // most `lookup_cap` of them; running out of the cap without a match proves nothing.
        let mut read = 0;
        for j in state.jobs.values().rev() {
            if !j.info.exists || &j.info.job_type != job_type {
                continue;
            }
            if read == self.lookup_cap {
                return Err(ProviderError::other(format!(
                    "idempotency lookup read {read} jobs without finding key {key} (the lookup \
                     cap): its absence is not proven"
                )));
            }
            read += 1;
            if j.info.uid == resource.uid && j.info.key.as_ref() == Some(key) {
                return Ok(Some(FoundJob::new(
                    j.info.job_id.clone(),
                    j.info.state.clone(),
                    "",
                )));
            }
        }
        Ok(None)
    }
}
