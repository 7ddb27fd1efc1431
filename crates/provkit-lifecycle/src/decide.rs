//! Pure decisions: no IO, no async, no clock reads (the caller passes `now`).
//!
//! These functions reproduce Go's `EvaluateAction`, backoff computation, `IsConfigApplied` and
//! `NeedsProvisionJob`, with the deviations documented on each item.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::{JobState, JobStatus, JobType, find_latest_job_by_type, has_job_id};

/// Go's `BackoffBaseDelay`: 2 minutes.
pub const BACKOFF_BASE_DELAY: Duration = Duration::from_secs(120);
/// Go's `BackoffMaxDelay`: 30 minutes.
pub const BACKOFF_MAX_DELAY: Duration = Duration::from_secs(30 * 60);
/// Go's `DefaultStatusPollInterval`: 30 seconds.
pub const DEFAULT_STATUS_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// What the engine should do with a resource's provision history (Go's `Action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The desired config is applied (or being treated as applied); nothing to do.
    Skip,
    /// Launch a provision job.
    Trigger,
    /// A provision job is running; ask the provider for its status.
    Poll,
    /// The cache is stale (the API server shows a job the cached copy does not); come back later
    /// without touching the status.
    Requeue,
    /// The latest job for the desired config failed or was canceled; retry after the backoff.
    Backoff,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Skip => "Skip",
            Self::Trigger => "Trigger",
            Self::Poll => "Poll",
            Self::Requeue => "Requeue",
            Self::Backoff => "Backoff",
        })
    }
}

/// How legacy jobs (a `Succeeded` provision job with an empty config version, written before
/// config versions existed) are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LegacyJobs {
    /// **Default.** The first time such a job is the latest provision job, stamp the desired version on
    /// it (reported in the outcome, persisted by the caller like any status change) and Skip. A later
    /// spec change then re-provisions. *Changed from Go.*
    #[default]
    Adopt,
    /// Go v0.1.1's behaviour: Skip forever, even after spec changes, until a new job appears some
    /// other way.
    SkipForever,
    /// The newest Go operator's behaviour (osac-project/osac monorepo): a legacy job proves nothing,
    /// so the resource is provisioned again once (Trigger) unless the desired version is empty too;
    /// [`is_config_applied_under`] is false for it.
    Reprovision,
}

/// The result of [`evaluate_action`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evaluation<'a> {
    /// The decision. [`Action::Trigger`] from [`evaluate_action`] means "would trigger": the caller must
    /// confirm it with the stale-cache check ([`confirm_trigger`]).
    pub action: Action,
    /// The latest provision job (by timestamp), if any; for Trigger it may be the empty-id job.
    pub latest: Option<&'a JobStatus>,
    /// True when the decision is Skip because of a legacy job that should be stamped with the desired
    /// version ([`LegacyJobs::Adopt`]).
    pub adopt_legacy: bool,
}

/// Decides what to do from the cached history alone (Go's `EvaluateAction` without the API-server
/// check).
///
/// | Latest provision job | Result |
/// |---|---|
/// | has an id, non-terminal (incl. `Unknown`, `""`, unrecognised) | Poll |
/// | has an id, version = desired, Succeeded | Skip |
/// | has an id, version = desired, Failed or Canceled | Backoff |
/// | has an id, version empty, Succeeded, desired non-empty | Skip (legacy; `adopt_legacy` under [`LegacyJobs::Adopt`]); Trigger under [`LegacyJobs::Reprovision`] |
/// | none, empty id, or terminal with another version | Trigger ("would trigger", confirm with the stale check) |
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobState, JobStatus, JobType};
/// use provkit_lifecycle::decide::{evaluate_action, Action, LegacyJobs};
///
/// let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
/// let mut job = JobStatus::new("1", JobType::Provision, JobState::Failed, t);
/// job.config_version = "v1".into();
/// let jobs = vec![job];
/// assert_eq!(evaluate_action(&jobs, "v1", LegacyJobs::Adopt).action, Action::Backoff);
/// assert_eq!(evaluate_action(&jobs, "v2", LegacyJobs::Adopt).action, Action::Trigger);
/// ```
pub fn evaluate_action<'a>(
    jobs: &'a [JobStatus],
    desired: &str,
    legacy: LegacyJobs,
) -> Evaluation<'a> {
    let latest = find_latest_job_by_type(jobs, &JobType::Provision);
    if let Some(job) = latest.filter(|j| has_job_id(Some(j))) {
        if !job.state.is_terminal() {
            return Evaluation {
                action: Action::Poll,
                latest,
                adopt_legacy: false,
            };
        }
        if job.config_version == desired {
            let action = if job.state == JobState::Succeeded {
                Action::Skip
            } else {
                Action::Backoff
            };
            return Evaluation {
                action,
                latest,
                adopt_legacy: false,
            };
        }
        if job.config_version.is_empty()
            && job.state == JobState::Succeeded
            && legacy != LegacyJobs::Reprovision
        {
            return Evaluation {
                action: Action::Skip,
                latest,
                adopt_legacy: legacy == LegacyJobs::Adopt,
            };
        }
    }
    Evaluation {
        action: Action::Trigger,
        latest,
        adopt_legacy: false,
    }
}

/// Go's `EvaluateAction` exactly: [`evaluate_action`], then on the would-trigger path (and only there)
/// `api_server_has_non_terminal_job` is called; `true` turns Trigger into Requeue with no job.
///
/// ```
/// use provkit_lifecycle::decide::{evaluate_action_with_check, Action, LegacyJobs};
///
/// assert_eq!(evaluate_action_with_check(&[], "v1", LegacyJobs::Adopt, || false).action, Action::Trigger);
/// let e = evaluate_action_with_check(&[], "v1", LegacyJobs::Adopt, || true);
/// assert_eq!((e.action, e.latest), (Action::Requeue, None));
/// ```
pub fn evaluate_action_with_check<'a>(
    jobs: &'a [JobStatus],
    desired: &str,
    legacy: LegacyJobs,
    api_server_has_non_terminal_job: impl FnOnce() -> bool,
) -> Evaluation<'a> {
    let eval = evaluate_action(jobs, desired, legacy);
    confirm_trigger(eval, api_server_has_non_terminal_job)
}

/// Turns a "would trigger" into Requeue when `cache_is_stale` says so; any other evaluation is returned
/// unchanged and the closure is not called.
pub fn confirm_trigger<'a>(
    eval: Evaluation<'a>,
    cache_is_stale: impl FnOnce() -> bool,
) -> Evaluation<'a> {
    if eval.action == Action::Trigger && cache_is_stale() {
        Evaluation {
            action: Action::Requeue,
            latest: None,
            adopt_legacy: false,
        }
    } else {
        eval
    }
}

/// The stale-cache rule, applied to a history read directly from the API server.
///
/// Go's rule (`CheckAPIServerForNonTerminalProvisionJob`): the fresh copy's latest provision job has an
/// id and is non-terminal. With `newer_terminal_job_is_stale` (the default policy) the cache is also
/// stale when the fresh copy's latest provision job is a **different** job than the cached latest one
/// (for example a retry that already failed while the cache still shows the previous failure): launching
/// then would skip that job's backoff and make an extra job.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobState, JobStatus, JobType};
/// use provkit_lifecycle::decide::cache_is_stale;
///
/// let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
/// let running = vec![JobStatus::new("7", JobType::Provision, JobState::Running, t)];
/// assert!(cache_is_stale(None, &running, false));
/// assert!(!cache_is_stale(None, &[], true));
/// ```
pub fn cache_is_stale(
    cached_latest: Option<&JobStatus>,
    fresh_jobs: &[JobStatus],
    newer_terminal_job_is_stale: bool,
) -> bool {
    let fresh_latest = find_latest_job_by_type(fresh_jobs, &JobType::Provision);
    let Some(fresh) = fresh_latest.filter(|j| has_job_id(Some(j))) else {
        return false;
    };
    if !fresh.state.is_terminal() {
        return true;
    }
    newer_terminal_job_is_stale && cached_latest.is_none_or(|c| c.job_id != fresh.job_id)
}

/// Backoff bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The floor and the answer when fewer than two failures are known (default 2 min).
    pub base: Duration,
    /// The cap (default 30 min).
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: BACKOFF_BASE_DELAY,
            max: BACKOFF_MAX_DELAY,
        }
    }
}

impl Backoff {
    /// Clamps `d` into `[base, max]` (when `base > max`, `max` wins; never panics).
    pub fn clamp(&self, d: Duration) -> Duration {
        d.max(self.base).min(self.max)
    }
}

fn backoff_from_failed(
    jobs: &[JobStatus],
    bounds: Backoff,
    matches: impl Fn(&JobStatus) -> bool,
) -> Duration {
    let mut failed = jobs
        .iter()
        .rev()
        .filter(|j| j.state == JobState::Failed && matches(j));
    let (Some(last), Some(prev)) = (failed.next(), failed.next()) else {
        return bounds.clamp(bounds.base);
    };
    let (Some(last_t), Some(prev_t)) = (last.timestamp, prev.timestamp) else {
        return bounds.clamp(bounds.base);
    };
    let Ok(gap) = (last_t - prev_t).to_std() else {
        return bounds.clamp(bounds.base);
    };
    if gap.is_zero() {
        return bounds.clamp(bounds.base);
    }
    bounds.clamp(gap.saturating_mul(2))
}

/// Go's `ComputeBackoffFromJobs`: twice the gap between the trigger timestamps of the two most recent
/// (by array position) `Failed` provision jobs whose config version equals `config_version` exactly,
/// clamped to `[base, max]`; `base` with fewer than two such jobs, a gap ≤ 0, or a missing timestamp.
///
/// ```
/// use std::time::Duration;
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobState, JobStatus, JobType};
/// use provkit_lifecycle::decide::{compute_backoff_from_jobs, Backoff};
///
/// let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
/// let failed = |at| {
///     let mut j = JobStatus::new("x", JobType::Provision, JobState::Failed, at);
///     j.config_version = "v1".into();
///     j
/// };
/// let jobs = vec![failed(t - chrono::Duration::minutes(5)), failed(t)];
/// assert_eq!(compute_backoff_from_jobs(&jobs, "v1", Backoff::default()), Duration::from_secs(600));
/// ```
pub fn compute_backoff_from_jobs(
    jobs: &[JobStatus],
    config_version: &str,
    bounds: Backoff,
) -> Duration {
    backoff_from_failed(jobs, bounds, |j| {
        j.job_type == JobType::Provision && j.config_version == config_version
    })
}

/// Go's `ComputeDeprovisionBackoff`: as [`compute_backoff_from_jobs`] over `Failed` deprovision jobs,
/// ignoring config versions.
pub fn compute_deprovision_backoff(jobs: &[JobStatus], bounds: Backoff) -> Duration {
    backoff_from_failed(jobs, bounds, |j| j.job_type == JobType::Deprovision)
}

/// Go's `HandleBackoff` arithmetic: `None` when the retry is due (`now - triggered_at >= backoff`),
/// otherwise how long to wait.
///
/// A job without a timestamp counts as triggered long ago (retry due). *Changed from Go:* a timestamp in
/// the future counts as "now", so the wait never exceeds `backoff` (Go waits until the future time plus
/// the backoff).
pub fn backoff_remaining(
    backoff: Duration,
    triggered_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Duration> {
    let triggered_at = triggered_at?;
    let elapsed = (now - triggered_at).to_std().unwrap_or(Duration::ZERO);
    if elapsed >= backoff {
        None
    } else {
        Some(backoff - elapsed)
    }
}

/// Go's `IsConfigApplied`: true when the **latest** provision job (by timestamp) succeeded with the
/// desired version or with an empty (legacy) version. Older succeeded jobs do not count (the A-B-A fix).
///
/// ```
/// use chrono::{TimeZone, Utc, Duration};
/// use provkit_core::{JobState, JobStatus, JobType};
/// use provkit_lifecycle::decide::is_config_applied;
///
/// let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
/// let ok = |v: &str, at| {
///     let mut j = JobStatus::new(v, JobType::Provision, JobState::Succeeded, at);
///     j.config_version = v.into();
///     j
/// };
/// // v1 -> v2 -> back to v1: the old v1 success does not count.
/// let jobs = vec![ok("v1", t - Duration::minutes(1)), ok("v2", t)];
/// assert!(!is_config_applied(&jobs, "v1"));
/// assert!(is_config_applied(&jobs, "v2"));
/// ```
pub fn is_config_applied(jobs: &[JobStatus], desired: &str) -> bool {
    is_config_applied_under(jobs, desired, LegacyJobs::SkipForever)
}

/// `IsConfigApplied` under a legacy-job rule: with [`LegacyJobs::Adopt`] and
/// [`LegacyJobs::SkipForever`] it is Go v0.1.1's [`is_config_applied`]; with
/// [`LegacyJobs::Reprovision`] it is the newest Go operator's: an empty desired version is never
/// applied, and a legacy job (empty version) does not count.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobState, JobStatus, JobType};
/// use provkit_lifecycle::decide::{is_config_applied_under, LegacyJobs};
///
/// let legacy = vec![JobStatus::new("1", JobType::Provision, JobState::Succeeded, Utc.timestamp_opt(0, 0).unwrap())];
/// assert!(is_config_applied_under(&legacy, "v1", LegacyJobs::SkipForever));
/// assert!(!is_config_applied_under(&legacy, "v1", LegacyJobs::Reprovision));
/// assert!(!is_config_applied_under(&legacy, "", LegacyJobs::Reprovision));
/// ```
pub fn is_config_applied_under(jobs: &[JobStatus], desired: &str, legacy: LegacyJobs) -> bool {
    if legacy == LegacyJobs::Reprovision && desired.is_empty() {
        return false;
    }
    find_latest_job_by_type(jobs, &JobType::Provision).is_some_and(|j| {
        j.state == JobState::Succeeded
            && (j.config_version == desired
                || (j.config_version.is_empty() && legacy != LegacyJobs::Reprovision))
    })
}

/// Go's legacy `NeedsProvisionJob`: true without a job or with an empty id; false while the job is
/// non-terminal; otherwise true unless it succeeded.
pub fn needs_provision_job(latest: Option<&JobStatus>) -> bool {
    match latest {
        None => true,
        Some(j) if j.job_id.is_empty() => true,
        Some(j) if !j.state.is_terminal() => false,
        Some(j) => !j.state.is_successful(),
    }
}
