//! Multi-target lifecycles (Go's `RunMultiTargetProvisioningLifecycle` and
//! `RunMultiTargetDeprovisioningLifecycle`): one resource provisioned through several targets at
//! once (a cluster and its storage, a subnet's fabric and Kubernetes managers), each with its own
//! provider, sharing one job array in which every job carries its target ([`JobStatus::target`]).
//!
//! Each target runs the single-target engine ([`Lifecycle::run_provisioning_lifecycle`],
//! [`Lifecycle::run_deprovisioning_lifecycle`]) over **its own view** of the history: the jobs
//! tagged with its name. What the run changed is merged back into the shared array: updated jobs in
//! place, new jobs appended (tagged, trimmed to the history cap, which keeps every target's latest
//! provision job). The same view is what the target's provider sees, so a deprovision provider only
//! ever cancels its own target's provision job, and what the per-target stale-cache check compares.
//!
//! # Rules (as Go)
//! - Targets are validated once, at construction ([`TargetError`]): at least one, non-empty unique
//!   names, at most one that absorbs legacy history.
//! - Before any target runs, untagged jobs (a history written before the resource had several
//!   targets) are tagged with the target that [absorbs legacy history](JobTarget::absorbs_legacy_history)
//!   ([`absorb_legacy_history`]); without such a target they belong to no target.
//! - Every target runs, whatever the others did: errors are collected per target
//!   ([`MultiTargetError`]), never short-circuited.
//! - The result requeues at the **soonest** requeue of all targets; it is done only when every
//!   target is done. Deprovisioning may remove the finalizer only when every target may.
//!
//! # Differences from Go
//! - The status flush runs right after each launch, with the whole merged history, instead of at
//!   most once after every target ran: a crash or a hanging launch of a later target must not lose
//!   the job id of an earlier one (the flush exists to persist new job ids at once).
//! - Idempotency keys include the target
//!   ([`IdempotencyKey::for_target_attempt`](crate::IdempotencyKey::for_target_attempt)), so two targets'
//!   first attempts never share a key.
//! - Per-target callbacks are one pair of callbacks that receive the target's name.
//! - The durable launch intent ([`IntentStore`]) is one slot per object, shared by the targets:
//!   each target sees only intents tagged with its name ([`LaunchIntent::target`]; untagged ones
//!   belong to the legacy owner), and a target's launch is refused ([`IntentHeldByTarget`], retried
//!   on the next reconcile) while another target's intent is still unresolved, so no intent is
//!   ever overwritten before its job is recorded.
//!
//! Written here rather than taken from a crate: it composes this crate's own engine.

use std::fmt;
use std::num::NonZeroUsize;

use provkit_core::{JobStatus, absorb_legacy_history, append_job};

use super::Lifecycle;
use crate::decide::is_config_applied_under;
use crate::engine_error::LifecycleError;
use crate::error::BoxError;
use crate::hooks::{DeprovisionHooks, ProvisionHooks, StaleCacheCheck, StatusFlush};
use crate::intent::{IntentStore, LaunchIntent};
use crate::launch_context::LaunchContext;
use crate::outcome::{DeprovisionOutcome, FinalizerDecision, Outcome, ProvisionOutcome};
use crate::provider::ProvisionStatus;
use crate::resource::ResourceView;

/// One target of a [`MultiTargetLifecycle`] (Go's `JobTarget` / `DeprovisionTarget`): a name that
/// tags its jobs and an engine (with its own provider and policy) that drives them.
///
/// ```
/// use std::sync::Arc;
/// use provkit_core::{Clock, SystemClock};
/// use provkit_lifecycle::{JobTarget, Lifecycle, ProvisioningProvider};
///
/// fn target(provider: Arc<dyn ProvisioningProvider>) -> JobTarget {
///     let clock: Arc<dyn Clock> = Arc::new(SystemClock);
///     JobTarget::new("cluster", Lifecycle::new(provider, clock)).absorbs_legacy_history()
/// }
/// ```
#[derive(Clone, Debug)]
pub struct JobTarget {
    name: String,
    /// The caller's engine, scoped to this target, with an unbounded history cap: the cap is
    /// applied when the target's new jobs are merged into the shared array.
    engine: Lifecycle,
    max_history: NonZeroUsize,
    absorbs_legacy_history: bool,
}

impl JobTarget {
    /// A target named `name` driven by `lifecycle` (its provider, clock and policy).
    pub fn new(name: impl Into<String>, lifecycle: Lifecycle) -> Self {
        let name = name.into();
        let max_history = lifecycle.policy.max_history;
        let mut engine = lifecycle;
        engine.policy.max_history = NonZeroUsize::MAX;
        engine.target.clone_from(&name);
        Self {
            name,
            engine,
            max_history,
            absorbs_legacy_history: false,
        }
    }

    /// Marks this target as the successor of the resource's single-target history (Go's
    /// `AbsorbsLegacyHistory`): its untagged jobs become this target's, so moving a resource to a
    /// multi-target lifecycle does not provision it a second time. At most one target may be marked.
    #[must_use]
    pub fn absorbs_legacy_history(mut self) -> Self {
        self.absorbs_legacy_history = true;
        self
    }

    /// The target's name (the `target` of its jobs).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this target absorbs the legacy history.
    pub fn absorbs_legacy(&self) -> bool {
        self.absorbs_legacy_history
    }

    /// The history cap applied when this target's jobs are recorded (its policy's `max_history`).
    pub fn max_history(&self) -> NonZeroUsize {
        self.max_history
    }

    /// The target's engine (its provider, clock and policy; the policy's history cap is lifted,
    /// see [`max_history`](Self::max_history)).
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.engine
    }
}

/// A target's launch was refused because another target's launch intent is still unresolved (the
/// object has one intent slot; overwriting it would lose that target's exactly-once guarantee).
/// The launch is retried on the next reconcile, once the other target resolved its intent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the launch intent of job target {target:?} is still unresolved")]
pub struct IntentHeldByTarget {
    /// The target whose intent is pending (empty: an untagged, single-target intent).
    pub target: String,
}

/// The target list given to [`MultiTargetLifecycle::new`] is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// No target at all.
    #[error("at least one job target is required")]
    NoTargets,
    /// A target has an empty name (the empty target is the single-target history).
    #[error("a job target's name must not be empty")]
    EmptyName,
    /// Two targets share a name.
    #[error("duplicate job target name {name:?}")]
    Duplicate {
        /// The repeated name.
        name: String,
    },
    /// More than one target absorbs the legacy history.
    #[error("at most one job target may absorb the legacy history ({first:?} and {second:?} do)")]
    SeveralLegacyOwners {
        /// The first such target.
        first: String,
        /// The second.
        second: String,
    },
}

/// Provisioning through several targets (Go's multi-target lifecycles).
///
/// Each target runs the single-target engine over its own view of the shared history (the jobs
/// tagged with its name); updates are merged back in place and new jobs appended, tagged and
/// trimmed. Targets are validated once ([`TargetError`]); untagged legacy jobs go to the target
/// that [absorbs legacy history](JobTarget::absorbs_legacy_history); every target runs whatever
/// the others did (errors joined in [`MultiTargetError`]); the result requeues at the soonest
/// requeue of all targets and is done (or may remove the finalizer) only when every target is.
/// *Differences from Go:* the status flush runs after each launch with the whole merged history
/// (not once after all targets), idempotency keys include the target, and the callbacks receive
/// the target's name.
///
/// ```
/// # async fn run(cluster: provkit_lifecycle::Lifecycle, storage: provkit_lifecycle::Lifecycle, resource: provkit_lifecycle::ResourceView) -> Result<(), Box<dyn std::error::Error>> {
/// use provkit_lifecycle::{JobTarget, LaunchContext, MultiTargetHooks, MultiTargetLifecycle};
///
/// let engine = MultiTargetLifecycle::new([
///     JobTarget::new("cluster", cluster).absorbs_legacy_history(),
///     JobTarget::new("storage", storage),
/// ])?;
/// let mut jobs = Vec::new(); // status.provisioningJobs
/// let outcome = engine
///     .run_provisioning_lifecycle(&resource, &mut jobs, "90f31220e6080755", &LaunchContext::new(), &mut MultiTargetHooks::new())
///     .await;
/// let requeue = outcome.into_result()?; // persist `jobs` first: nothing recorded is lost on error
/// # let _ = requeue; Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct MultiTargetLifecycle {
    targets: Vec<JobTarget>,
    /// The first target's engine: its clock and policy stand for the resource where one is needed.
    primary: Lifecycle,
}

type OnTargetFailed<'a> = Box<dyn FnMut(&str, &str) + Send + Sync + 'a>;
type OnTargetSuccess<'a> = Box<dyn FnMut(&str, &ProvisionStatus) + Send + Sync + 'a>;

/// The hooks of a multi-target provisioning call: the stale-cache check and the status flush work
/// on the whole object (each target sees its own part), the callbacks receive the target's name.
#[derive(Default)]
pub struct MultiTargetHooks<'a> {
    stale_check: Option<&'a dyn StaleCacheCheck>,
    status_flush: Option<&'a dyn StatusFlush>,
    on_failed: Option<OnTargetFailed<'a>>,
    on_success: Option<OnTargetSuccess<'a>>,
    intents: Option<&'a dyn IntentStore>,
}

impl<'a> MultiTargetHooks<'a> {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    crate::hooks::shared_hook_setters! {
        stale_check: "Sets the stale-cache check (reads the whole fresh history; each target compares its own jobs).",
        status_flush: "Sets the status flush (always given the whole merged history).",
        intents: "Sets the durable launch-intent store of the object (one slot shared by the targets; see the module docs).",
    }

    /// Sets the on-failed callback: `(target, message)`.
    #[must_use]
    pub fn on_failed(mut self, f: impl FnMut(&str, &str) + Send + Sync + 'a) -> Self {
        self.on_failed = Some(Box::new(f));
        self
    }

    /// Sets the on-success callback: `(target, status)`; the status carries the job's outputs.
    #[must_use]
    pub fn on_success(mut self, f: impl FnMut(&str, &ProvisionStatus) + Send + Sync + 'a) -> Self {
        self.on_success = Some(Box::new(f));
        self
    }
}

impl fmt::Debug for MultiTargetHooks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiTargetHooks")
            .field("stale_check", &self.stale_check.is_some())
            .field("status_flush", &self.status_flush.is_some())
            .field("on_failed", &self.on_failed.is_some())
            .field("on_success", &self.on_success.is_some())
            .field("intents", &self.intents.is_some())
            .finish()
    }
}

/// What one target did in a multi-target call.
#[derive(Debug)]
#[non_exhaustive]
pub struct TargetResult<T> {
    /// The target's name.
    pub target: String,
    /// Its single-target result.
    pub result: Result<T, LifecycleError>,
}

/// The result of [`MultiTargetLifecycle::run_provisioning_lifecycle`] or
/// [`MultiTargetLifecycle::run_deprovisioning_lifecycle`]. The shared history has been updated in
/// place whatever happened; persist it, then call [`into_result`](Self::into_result).
#[derive(Debug)]
#[non_exhaustive]
pub struct MultiTargetOutcome<T> {
    /// When to come back: the soonest requeue of the targets that succeeded; [`Outcome::Done`] only
    /// when every target is done.
    pub outcome: Outcome,
    /// Per target, in the order given.
    pub targets: Vec<TargetResult<T>>,
    /// How many untagged jobs were tagged with the legacy owner in this call.
    pub backfilled: usize,
    /// True when the shared history changed and must be persisted.
    pub history_changed: bool,
}

/// The result of a multi-target provisioning call.
pub type MultiTargetProvisionOutcome = MultiTargetOutcome<ProvisionOutcome>;
/// The result of a multi-target deprovisioning call.
pub type MultiTargetDeprovisionOutcome = MultiTargetOutcome<DeprovisionOutcome>;

impl<T> MultiTargetOutcome<T> {
    /// The outcome, or every target's error joined into one.
    ///
    /// # Errors
    /// [`MultiTargetError`] when at least one target failed.
    pub fn into_result(self) -> Result<Outcome, MultiTargetError> {
        let errors: Vec<(String, LifecycleError)> = self
            .targets
            .into_iter()
            .filter_map(|t| t.result.err().map(|e| (t.target, e)))
            .collect();
        if errors.is_empty() {
            Ok(self.outcome)
        } else {
            Err(MultiTargetError { errors })
        }
    }

    /// The result of the target named `name`, if it ran.
    pub fn target(&self, name: &str) -> Option<&Result<T, LifecycleError>> {
        self.targets
            .iter()
            .find(|t| t.target == name)
            .map(|t| &t.result)
    }
}

impl MultiTargetDeprovisionOutcome {
    /// True when every target allows removing the finalizer (and none failed).
    pub fn may_remove_finalizer(&self) -> bool {
        self.targets.iter().all(|t| {
            t.result
                .as_ref()
                .is_ok_and(|o| o.finalizer == FinalizerDecision::Remove)
        })
    }
}

/// One or more targets of a multi-target call failed (Go joins the errors with `errors.Join`).
/// [`source`](std::error::Error::source) is the first target's error; [`errors`](Self::errors)
/// has all of them.
#[derive(Debug)]
pub struct MultiTargetError {
    errors: Vec<(String, LifecycleError)>,
}

impl MultiTargetError {
    /// Every failed target with its error, in target order.
    pub fn errors(&self) -> impl Iterator<Item = (&str, &LifecycleError)> {
        self.errors.iter().map(|(t, e)| (t.as_str(), e))
    }
}

impl fmt::Display for MultiTargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.errors.iter().map(|(t, _)| format!("{t:?}")).collect();
        write!(
            f,
            "{} job target(s) failed: {}",
            self.errors.len(),
            names.join(", ")
        )
    }
}

impl std::error::Error for MultiTargetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.errors
            .first()
            .map(|(_, e)| e as &(dyn std::error::Error + 'static))
    }
}

impl MultiTargetLifecycle {
    /// Validates `targets` (Go's `validateJobTargets`).
    ///
    /// # Errors
    /// [`TargetError`] for an empty list, an empty or duplicate name, or two legacy owners.
    pub fn new(targets: impl IntoIterator<Item = JobTarget>) -> Result<Self, TargetError> {
        let targets: Vec<JobTarget> = targets.into_iter().collect();
        let Some(primary) = targets.first().map(|t| t.engine.clone()) else {
            return Err(TargetError::NoTargets);
        };
        let mut owner: Option<&str> = None;
        for (i, t) in targets.iter().enumerate() {
            if t.name.is_empty() {
                return Err(TargetError::EmptyName);
            }
            if targets[..i].iter().any(|o| o.name == t.name) {
                return Err(TargetError::Duplicate {
                    name: t.name.clone(),
                });
            }
            if t.absorbs_legacy_history {
                if let Some(first) = owner {
                    return Err(TargetError::SeveralLegacyOwners {
                        first: first.to_owned(),
                        second: t.name.clone(),
                    });
                }
                owner = Some(&t.name);
            }
        }
        Ok(Self { targets, primary })
    }

    /// The targets, in order.
    pub fn targets(&self) -> &[JobTarget] {
        &self.targets
    }

    /// The first target's engine: its clock and policy stand for the whole resource where one is
    /// needed (the time of a condition, the requeue after an unfinished deletion).
    pub fn primary(&self) -> &Lifecycle {
        &self.primary
    }

    /// The cap of the shared history: the largest of the targets' caps.
    pub fn max_history(&self) -> NonZeroUsize {
        self.targets
            .iter()
            .map(|t| t.max_history)
            .max()
            .unwrap_or(NonZeroUsize::MIN)
    }

    /// The target that absorbs the legacy history, if any.
    pub fn legacy_owner(&self) -> Option<&str> {
        self.targets
            .iter()
            .find(|t| t.absorbs_legacy_history)
            .map(|t| t.name.as_str())
    }

    /// Go's `IsConfigApplied` for every target: true when each target's latest provision job
    /// applied `desired` (under that target's policy).
    pub fn is_config_applied(&self, jobs: &[JobStatus], desired: &str) -> bool {
        self.targets.iter().all(|t| {
            let view = TargetView::of(jobs, &t.name, self.owner_for(t));
            is_config_applied_under(&view.jobs, desired, t.engine.policy.legacy_jobs)
        })
    }

    fn owner_for(&self, t: &JobTarget) -> bool {
        t.absorbs_legacy_history
    }

    fn intents_for<'a>(&self, inner: &'a dyn IntentStore, t: &'a JobTarget) -> TargetIntents<'a> {
        TargetIntents {
            inner,
            target: &t.name,
            legacy_owner: self.owner_for(t),
        }
    }

    fn backfill(&self, jobs: &mut [JobStatus]) -> usize {
        self.legacy_owner()
            .map_or(0, |owner| absorb_legacy_history(jobs, owner))
    }

    /// One provisioning reconcile of every target (Go's `RunMultiTargetProvisioningLifecycle`).
    ///
    /// Each target gets [`Lifecycle::run_provisioning_lifecycle`]'s guarantees over its own jobs.
    /// Never fails as a whole: see [`MultiTargetOutcome::into_result`].
    pub async fn run_provisioning_lifecycle(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        desired: &str,
        ctx: &LaunchContext,
        hooks: &mut MultiTargetHooks<'_>,
    ) -> MultiTargetProvisionOutcome {
        let backfilled = self.backfill(jobs);
        let mut out = MultiTargetOutcome::start(backfilled);
        let MultiTargetHooks {
            stale_check,
            status_flush,
            on_failed,
            on_success,
            intents,
        } = hooks;
        for t in &self.targets {
            let mut view = TargetView::of(jobs, &t.name, false);
            let stale = stale_check.map(|inner| TargetStaleCheck {
                inner,
                target: &t.name,
                legacy_owner: self.owner_for(t),
            });
            let flush = status_flush.map(|inner| TargetFlush {
                inner,
                base: jobs.clone(),
                positions: view.positions.clone(),
                target: t,
            });
            let target_intents = intents.map(|inner| self.intents_for(inner, t));
            let name = t.name.as_str();
            let result = {
                let mut sub = ProvisionHooks::new()
                    .on_failed(|m| {
                        if let Some(cb) = on_failed.as_mut() {
                            cb(name, m);
                        }
                    })
                    .on_success(|s| {
                        if let Some(cb) = on_success.as_mut() {
                            cb(name, s);
                        }
                    });
                if let Some(s) = &stale {
                    sub = sub.stale_check(s);
                }
                if let Some(f) = &flush {
                    sub = sub.status_flush(f);
                }
                if let Some(i) = &target_intents {
                    sub = sub.intents(i);
                }
                let mut sub_jobs = view.jobs.clone();
                let r = t
                    .engine
                    .run_provisioning_lifecycle(resource, &mut sub_jobs, desired, ctx, &mut sub)
                    .await;
                view.jobs = sub_jobs;
                r
            };
            drop(flush);
            let changed = result.as_ref().is_ok_and(|o| o.history_changed);
            view.merge_into(jobs, t);
            out.add(name, result, changed, |o: &ProvisionOutcome| o.outcome);
        }
        out
    }

    /// One deletion reconcile of every target (Go's `RunMultiTargetDeprovisioningLifecycle`): each
    /// target's provider sees only its own target's jobs, and the finalizer may go only when every
    /// target allows it ([`MultiTargetDeprovisionOutcome::may_remove_finalizer`]).
    pub async fn run_deprovisioning_lifecycle(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        ctx: &LaunchContext,
        hooks: &mut DeprovisionHooks<'_>,
    ) -> MultiTargetDeprovisionOutcome {
        let backfilled = self.backfill(jobs);
        let mut out = MultiTargetOutcome::start(backfilled);
        for t in &self.targets {
            let mut view = TargetView::of(jobs, &t.name, false);
            let stale = hooks.stale_check.map(|inner| TargetStaleCheck {
                inner,
                target: &t.name,
                legacy_owner: self.owner_for(t),
            });
            let flush = hooks.status_flush.map(|inner| TargetFlush {
                inner,
                base: jobs.clone(),
                positions: view.positions.clone(),
                target: t,
            });
            let target_intents = hooks.intents.map(|inner| self.intents_for(inner, t));
            let result = {
                let mut sub = DeprovisionHooks::new();
                if let Some(s) = &stale {
                    sub = sub.stale_check(s);
                }
                if let Some(f) = &flush {
                    sub = sub.status_flush(f);
                }
                if let Some(i) = &target_intents {
                    sub = sub.intents(i);
                }
                let mut sub_jobs = view.jobs.clone();
                let r = t
                    .engine
                    .run_deprovisioning_lifecycle(resource, &mut sub_jobs, ctx, &mut sub)
                    .await;
                view.jobs = sub_jobs;
                r
            };
            drop(flush);
            let changed = result.as_ref().is_ok_and(|o| o.history_changed);
            view.merge_into(jobs, t);
            out.add(&t.name, result, changed, |o: &DeprovisionOutcome| o.outcome);
        }
        out
    }
}

impl<T> MultiTargetOutcome<T> {
    fn start(backfilled: usize) -> Self {
        Self {
            outcome: Outcome::Done,
            targets: Vec::new(),
            backfilled,
            history_changed: backfilled > 0,
        }
    }

    fn add(
        &mut self,
        target: &str,
        result: Result<T, LifecycleError>,
        changed: bool,
        outcome_of: impl Fn(&T) -> Outcome,
    ) {
        self.history_changed |= changed;
        if let Ok(o) = &result {
            self.outcome = soonest(self.outcome, outcome_of(o));
        }
        self.targets.push(TargetResult {
            target: target.to_owned(),
            result,
        });
    }
}

/// The sooner of two outcomes: any timed requeue beats `Done`.
fn soonest(a: Outcome, b: Outcome) -> Outcome {
    match (a, b) {
        (Outcome::RequeueAfter(x), Outcome::RequeueAfter(y)) => Outcome::RequeueAfter(x.min(y)),
        (Outcome::RequeueAfter(x), Outcome::Done) | (Outcome::Done, Outcome::RequeueAfter(x)) => {
            Outcome::RequeueAfter(x)
        }
        (Outcome::Done, Outcome::Done) => Outcome::Done,
    }
}

/// One target's part of the shared history: its jobs (in array order) and where they sit.
struct TargetView {
    positions: Vec<usize>,
    jobs: Vec<JobStatus>,
}

impl TargetView {
    /// The jobs tagged `target`; with `include_untagged`, untagged jobs too (a fresh copy read
    /// before the backfill was persisted).
    fn of(all: &[JobStatus], target: &str, include_untagged: bool) -> Self {
        let mut positions = Vec::new();
        let mut jobs = Vec::new();
        for (i, j) in all.iter().enumerate() {
            if j.target == target || (include_untagged && j.target.is_empty()) {
                positions.push(i);
                jobs.push(j.clone());
            }
        }
        Self { positions, jobs }
    }

    /// Writes the target's (possibly changed) jobs back: the first `positions.len()` in place (the
    /// single-target engine only updates and appends, and its cap is unbounded here), the rest
    /// appended with the target's tag and history cap.
    fn merge_into(&self, all: &mut Vec<JobStatus>, target: &JobTarget) {
        merge(all, &self.positions, &self.jobs, target);
    }
}

fn merge(all: &mut Vec<JobStatus>, positions: &[usize], sub: &[JobStatus], target: &JobTarget) {
    for (i, job) in sub.iter().enumerate() {
        let mut job = job.clone();
        job.target.clone_from(&target.name);
        match positions.get(i).and_then(|&p| all.get_mut(p)) {
            Some(slot) => *slot = job,
            None => append_job(all, job, target.max_history),
        }
    }
}

/// The stale-cache check as one target sees it.
struct TargetStaleCheck<'a> {
    inner: &'a dyn StaleCacheCheck,
    target: &'a str,
    legacy_owner: bool,
}

#[async_trait::async_trait]
impl StaleCacheCheck for TargetStaleCheck<'_> {
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError> {
        let fresh = self.inner.read_fresh_jobs().await?;
        Ok(TargetView::of(&fresh, self.target, self.legacy_owner).jobs)
    }
}

/// The status flush as one target's run calls it: the run's jobs merged into the shared history as
/// it was when the target started.
struct TargetFlush<'a> {
    inner: &'a dyn StatusFlush,
    base: Vec<JobStatus>,
    positions: Vec<usize>,
    target: &'a JobTarget,
}

#[async_trait::async_trait]
impl StatusFlush for TargetFlush<'_> {
    async fn flush(&self, jobs: &[JobStatus]) -> Result<(), BoxError> {
        let mut merged = self.base.clone();
        merge(&mut merged, &self.positions, jobs, self.target);
        self.inner.flush(&merged).await
    }
}

/// The object's launch-intent slot as one target sees it: only its own intents are pending, and
/// its writes never replace another target's unresolved intent.
struct TargetIntents<'a> {
    inner: &'a dyn IntentStore,
    target: &'a str,
    legacy_owner: bool,
}

impl TargetIntents<'_> {
    fn owns(&self, intent: &LaunchIntent) -> bool {
        intent.target == self.target || (self.legacy_owner && intent.target.is_empty())
    }
}

#[async_trait::async_trait]
impl IntentStore for TargetIntents<'_> {
    fn pending(&self) -> Option<LaunchIntent> {
        self.inner.pending().filter(|i| self.owns(i))
    }

    async fn write(&self, intent: &LaunchIntent) -> Result<(), BoxError> {
        if let Some(other) = self.inner.pending().filter(|i| !self.owns(i)) {
            return Err(Box::new(IntentHeldByTarget {
                target: other.target,
            }));
        }
        let tagged = intent.clone().with_target(self.target);
        self.inner.write(&tagged).await
    }

    fn resolve(&self, idempotency_key: &str) {
        self.inner.resolve(idempotency_key);
    }
}
