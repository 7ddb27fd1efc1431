//! Job-history operations (Go `job_helpers.go`), on any job array.
//!
//! A resource keeps its jobs in one array (`status.provisioningJobs`), oldest first: jobs are
//! only ever appended at the end. Two orderings are used and must not be confused:
//!
//! - **"Latest"** ([`find_latest_job_by_type`]) is chosen by **timestamp**.
//! - **Trimming** ([`append_job`]) goes by **array position**.
//!
//! The functions work on any `Vec<JobStatus>`/slice, so the same code serves extra arrays
//! (Go keeps separate arrays for storage jobs).
//!
//! # Deviations from Go
//!
//! Both fix bugs that can launch a job twice or lose track of one; everything else behaves as
//! in Go.
//!
//! - **Ties in [`find_latest_job_by_type`]: the later array element wins.** Go keeps the
//!   *earlier* of two jobs with equal timestamps. Timestamps are stored at whole-second
//!   precision, so two jobs triggered within one second tie after the status goes through the
//!   API server, and Go then picks the older one, which can resurrect an old terminal job and
//!   cause a second launch. Since jobs are appended in trigger order, the later element is the
//!   newer job.
//! - **[`append_job`] never evicts the latest provision job (caps ≥ 2).** Go drops the oldest
//!   entries whatever their type, so ten deprovision retries can push the last provision job
//!   out of a ten-entry history. Here, when trimming would drop the latest provision job of a
//!   target ([`JobStatus::target`]; one target, `""`, for most resources), the oldest *other*
//!   job is dropped instead (only when there are more targets than room does the oldest
//!   target's latest provision job go); the
//!   length still never exceeds the cap and the newest job is always kept. With a cap of 1
//!   only the newest job is kept (nothing else fits). The cap is a [`NonZeroUsize`], so Go's
//!   "zero cap empties the history" and "negative cap panics" cannot happen.
//!
//! # Tolerated input
//!
//! Empty job ids and duplicate ids are allowed, as in Go: the by-id functions act on the
//! **first** element with that id (an empty id matches the first job with an empty id).
//! Arbitrarily long histories are fine: every operation is a single pass (O(n)).

use std::num::NonZeroUsize;

use crate::job::{JobStatus, JobType};

/// Go's `DefaultMaxJobHistory`: 10 entries.
///
/// ```
/// assert_eq!(provkit_core::DEFAULT_MAX_JOB_HISTORY.get(), 10);
/// ```
pub const DEFAULT_MAX_JOB_HISTORY: NonZeroUsize = match NonZeroUsize::new(10) {
    Some(n) => n,
    None => unreachable!(),
};

/// Appends `job` and trims the history to at most `max_history` entries.
///
/// # Guarantees
///
/// - `jobs.len() <= max_history` afterwards, and `job` is the last element.
/// - Entries are dropped oldest first, by array position (like Go), **except** that for
///   `max_history >= 2` the latest provision job of each target (by
///   [`find_latest_job_by_type_and_target`]) is dropped only after every other job: the oldest
///   other job goes instead. With `max_history == 1` only `job` remains.
/// - The relative order of the kept entries does not change.
///
/// ```
/// use std::num::NonZeroUsize;
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{append_job, find_latest_job_by_type, JobState, JobStatus, JobType};
///
/// let t = |s| Utc.timestamp_opt(s, 0).unwrap();
/// let cap = NonZeroUsize::new(3).unwrap();
/// let mut jobs = Vec::new();
/// append_job(&mut jobs, JobStatus::new("p1", JobType::Provision, JobState::Succeeded, t(1)), cap);
/// for (i, id) in ["d1", "d2", "d3"].into_iter().enumerate() {
///     let job = JobStatus::new(id, JobType::Deprovision, JobState::Failed, t(2 + i as i64));
///     append_job(&mut jobs, job, cap);
/// }
/// // Go would now hold d1, d2, d3; the provision job survives here.
/// let ids: Vec<_> = jobs.iter().map(|j| j.job_id.as_str()).collect();
/// assert_eq!(ids, ["p1", "d2", "d3"]);
/// assert_eq!(find_latest_job_by_type(&jobs, &JobType::Provision).unwrap().job_id, "p1");
/// ```
pub fn append_job(jobs: &mut Vec<JobStatus>, job: JobStatus, max_history: NonZeroUsize) {
    jobs.push(job);
    let cap = max_history.get();
    let Some(excess) = jobs.len().checked_sub(cap).filter(|&n| n > 0) else {
        return;
    };
    if cap == 1 {
        jobs.drain(..excess);
        return;
    }
    let newest = jobs.len() - 1;
    let protected = latest_provision_per_target(jobs);
    // Drop the oldest unprotected jobs first; only when the protected ones alone exceed the cap
    // (more targets than room) do the oldest protected ones go too. The newest job always stays.
    let mut drop = vec![false; jobs.len()];
    let mut left = excess;
    for pass_protected in [false, true] {
        for (i, slot) in drop.iter_mut().enumerate() {
            if left == 0 {
                break;
            }
            if i == newest || *slot || protected.contains(&i) != pass_protected {
                continue;
            }
            *slot = true;
            left -= 1;
        }
    }
    let mut index = 0;
    jobs.retain(|_| {
        let keep = !drop[index];
        index += 1;
        keep
    });
}

/// The index of the latest provision job of every target present in `jobs`.
fn latest_provision_per_target(jobs: &[JobStatus]) -> Vec<usize> {
    let mut targets: Vec<&str> = jobs
        .iter()
        .filter(|j| j.job_type == JobType::Provision)
        .map(|j| j.target.as_str())
        .collect();
    targets.sort_unstable();
    targets.dedup();
    targets
        .into_iter()
        .filter_map(|t| latest_index(jobs, &JobType::Provision, Some(t)))
        .collect()
}

/// Replaces the **first** job whose id equals `job.job_id` with a copy of `job` (every field,
/// type and timestamp included) and returns `true`; returns `false` when no job has that id.
/// The length never changes.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{update_job, JobState, JobStatus, JobType};
///
/// let t = Utc.timestamp_opt(0, 0).unwrap();
/// let mut jobs = vec![JobStatus::new("1", JobType::Provision, JobState::Running, t)];
/// let done = JobStatus::new("1", JobType::Provision, JobState::Succeeded, t);
/// assert!(update_job(&mut jobs, &done));
/// assert_eq!(jobs[0].state, JobState::Succeeded);
/// assert!(!update_job(&mut jobs, &JobStatus::new("2", JobType::Provision, JobState::Failed, t)));
/// ```
pub fn update_job(jobs: &mut [JobStatus], job: &JobStatus) -> bool {
    match jobs.iter_mut().find(|j| j.job_id == job.job_id) {
        Some(slot) => {
            slot.clone_from(job);
            true
        }
        None => false,
    }
}

/// The **first** job whose id equals `job_id`, whatever its type; `None` if there is none.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{find_job_by_id, JobState, JobStatus, JobType};
///
/// let t = Utc.timestamp_opt(0, 0).unwrap();
/// let jobs = vec![
///     JobStatus::new("7", JobType::Provision, JobState::Failed, t),
///     JobStatus::new("7", JobType::Deprovision, JobState::Running, t),
/// ];
/// assert_eq!(find_job_by_id(&jobs, "7").unwrap().job_type, JobType::Provision);
/// assert!(find_job_by_id(&jobs, "8").is_none());
/// ```
#[must_use]
pub fn find_job_by_id<'a>(jobs: &'a [JobStatus], job_id: &str) -> Option<&'a JobStatus> {
    jobs.iter().find(|j| j.job_id == job_id)
}

/// The job of type `job_type` with the latest timestamp; `None` if there is none.
///
/// A `None` timestamp orders before every real time. On equal timestamps **the later array
/// element wins** (Go picks the earlier one; see the [module docs](self#deviations-from-go)).
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{find_latest_job_by_type, JobState, JobStatus, JobType};
///
/// let t = |s| Utc.timestamp_opt(s, 0).unwrap();
/// let jobs = vec![
///     JobStatus::new("old", JobType::Provision, JobState::Failed, t(10)),
///     JobStatus::new("new", JobType::Provision, JobState::Running, t(10)),
///     JobStatus::new("d", JobType::Deprovision, JobState::Running, t(99)),
/// ];
/// assert_eq!(find_latest_job_by_type(&jobs, &JobType::Provision).unwrap().job_id, "new");
/// ```
#[must_use]
pub fn find_latest_job_by_type<'a>(
    jobs: &'a [JobStatus],
    job_type: &JobType,
) -> Option<&'a JobStatus> {
    latest_index(jobs, job_type, None).and_then(|i| jobs.get(i))
}

/// The job of type `job_type` **and** target `target` with the latest timestamp (Go
/// `FindLatestJobByTypeAndTarget`); `None` if there is none. `""` is the untagged target of a
/// single-target resource. Ties as in [`find_latest_job_by_type`].
///
/// *Differs from Go's `FindLatestJobByType`:* that Go function only sees untagged jobs
/// (`target == ""`); [`find_latest_job_by_type`] sees every job, because a single-target
/// resource's history is the whole array. Use this function (or [`jobs_of_target`]) for
/// multi-target histories.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{find_latest_job_by_type_and_target, JobState, JobStatus, JobType};
///
/// let t = |s| Utc.timestamp_opt(s, 0).unwrap();
/// let mut cluster = JobStatus::new("1", JobType::Provision, JobState::Succeeded, t(10));
/// cluster.target = "cluster".into();
/// let mut storage = JobStatus::new("2", JobType::Provision, JobState::Running, t(20));
/// storage.target = "storage".into();
/// let jobs = vec![cluster, storage];
/// let latest = find_latest_job_by_type_and_target(&jobs, &JobType::Provision, "cluster");
/// assert_eq!(latest.unwrap().job_id, "1");
/// assert!(find_latest_job_by_type_and_target(&jobs, &JobType::Provision, "").is_none());
/// ```
#[must_use]
pub fn find_latest_job_by_type_and_target<'a>(
    jobs: &'a [JobStatus],
    job_type: &JobType,
    target: &str,
) -> Option<&'a JobStatus> {
    latest_index(jobs, job_type, Some(target)).and_then(|i| jobs.get(i))
}

/// The jobs tagged with `target`, in array order (Go's `filterJobsByTarget`); `""` selects the
/// untagged jobs.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{jobs_of_target, JobState, JobStatus, JobType};
///
/// let mut a = JobStatus::new("1", JobType::Provision, JobState::Running, Utc.timestamp_opt(0, 0).unwrap());
/// a.target = "a".into();
/// let untagged = JobStatus::new("2", JobType::Provision, JobState::Running, Utc.timestamp_opt(0, 0).unwrap());
/// let jobs = vec![a, untagged];
/// assert_eq!(jobs_of_target(&jobs, "a").len(), 1);
/// assert_eq!(jobs_of_target(&jobs, "")[0].job_id, "2");
/// ```
#[must_use]
pub fn jobs_of_target(jobs: &[JobStatus], target: &str) -> Vec<JobStatus> {
    jobs.iter()
        .filter(|j| j.target == target)
        .cloned()
        .collect()
}

/// Tags every untagged job (`target == ""`) with `owner` and returns how many were tagged (Go's
/// `backfillLegacyJobTargets`): a resource that moves from a single-target to a multi-target
/// lifecycle keeps its history on the target that used to be its only one, instead of that
/// target starting from scratch (a duplicate provisioning). An empty `owner` changes nothing.
/// Idempotent: a second call tags nothing.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{absorb_legacy_history, JobState, JobStatus, JobType};
///
/// let mut jobs = vec![JobStatus::new("1", JobType::Provision, JobState::Succeeded, Utc.timestamp_opt(0, 0).unwrap())];
/// assert_eq!(absorb_legacy_history(&mut jobs, "cluster"), 1);
/// assert_eq!(jobs[0].target, "cluster");
/// assert_eq!(absorb_legacy_history(&mut jobs, "cluster"), 0);
/// ```
pub fn absorb_legacy_history(jobs: &mut [JobStatus], owner: &str) -> usize {
    if owner.is_empty() {
        return 0;
    }
    let mut tagged = 0;
    for job in jobs.iter_mut().filter(|j| j.target.is_empty()) {
        owner.clone_into(&mut job.target);
        tagged += 1;
    }
    tagged
}

fn latest_index(jobs: &[JobStatus], job_type: &JobType, target: Option<&str>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, job) in jobs.iter().enumerate() {
        if job.job_type != *job_type || target.is_some_and(|t| job.target != t) {
            continue;
        }
        let newer = best
            .and_then(|b| jobs.get(b))
            .is_none_or(|b| job.timestamp >= b.timestamp);
        if newer {
            best = Some(i);
        }
    }
    best
}

/// Go `HasJobID`: `true` when there is a job and its id is non-empty.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{has_job_id, JobState, JobStatus, JobType};
///
/// let t = Utc.timestamp_opt(0, 0).unwrap();
/// assert!(has_job_id(Some(&JobStatus::new("1", JobType::Provision, JobState::Pending, t))));
/// assert!(!has_job_id(Some(&JobStatus::new("", JobType::Provision, JobState::Pending, t))));
/// assert!(!has_job_id(None));
/// ```
#[must_use]
pub fn has_job_id(job: Option<&JobStatus>) -> bool {
    job.is_some_and(|j| !j.job_id.is_empty())
}
