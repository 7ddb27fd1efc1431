//! The cut-over check: before a provkit operator takes over objects the Go OSAC operator
//! provisioned, report for each object what the engine would do and why — above all, whether it
//! would **re-provision** an object only because provkit computes a different config version than
//! Go stored.
//!
//! The config version is computed exactly as [`Provisioner`](crate::Provisioner) computes it:
//! from the typed object's [`ProvisionedResource::config_source`] (the spec struct in Go field
//! order, or the Go wrapper such as [`SpecWithStrategy`](provkit_core::SpecWithStrategy)) with the
//! same [`ConfigHasher`]. The decision uses the same pure functions and policy as the engine;
//! the object as read from the API server is both the cached and the fresh copy.
//!
//! ```
//! # use provkit_kube::cutover::{check_cutover, CutoverReason};
//! # fn run<K: provkit_kube::ProvisionedResource>(objects: &[K]) {
//! let policy = provkit_lifecycle::LifecyclePolicy::default();
//! let hasher = provkit_core::ConfigHasher::default();
//! for obj in objects {
//!     match check_cutover(obj, &policy, &hasher, chrono::Utc::now()) {
//!         Ok(r) if r.reason == CutoverReason::HashDiffersFromGo => eprintln!("{}: RE-PROVISION", r.object),
//!         Ok(r) => println!("{}: {} ({})", r.object, r.action, r.reason),
//!         Err(e) => eprintln!("{e}"),
//!     }
//! }
//! # }
//! ```

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::{ConfigHasher, ConfigVersionError, JobStatus, JobType, find_latest_job_by_type};
use provkit_lifecycle::LifecyclePolicy;
use provkit_lifecycle::decide::{
    Action, backoff_remaining, cache_is_stale, compute_backoff_from_jobs,
    evaluate_action_with_check,
};

use crate::adapters::display_name;
use crate::resource::ProvisionedResource;

/// Why the engine would take [`CutoverReport::action`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CutoverReason {
    /// The latest provision job succeeded with the computed version.
    ConfigApplied,
    /// A legacy job (no config version) is adopted: stamped, not re-provisioned.
    LegacyAdopted,
    /// A legacy job is skipped forever (Go v0.1.1).
    LegacySkipped,
    /// A provision job is in flight; it is polled.
    InFlight,
    /// The history shows a job the decision did not expect (requeue).
    StaleCache,
    /// The latest job for this version failed; retried after the backoff (`remaining` is `None`
    /// when the retry is due now).
    BackingOff {
        /// The backoff.
        backoff: Duration,
        /// Time left.
        remaining: Option<Duration>,
    },
    /// No provision job yet: one is launched.
    NoJobYet,
    /// The spec changed since the latest job: a job is launched (not caused by the cut-over).
    SpecChanged,
    /// **Re-provision caused by the cut-over**: the latest job carries the version Go stored in
    /// `desiredConfigVersion`, and provkit computes another one. (If the spec was edited after
    /// Go's last reconcile the stored version is stale and this is reported too: re-run the check
    /// once Go has reconciled every object.)
    HashDiffersFromGo,
}

impl fmt::Display for CutoverReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConfigApplied => f.write_str("config applied"),
            Self::LegacyAdopted => {
                f.write_str("legacy job (no configVersion): adopted, not re-provisioned")
            }
            Self::LegacySkipped => f.write_str("legacy job (no configVersion): skipped"),
            Self::InFlight => f.write_str("provision job in flight: polled until it finishes"),
            Self::StaleCache => f.write_str("a newer job than expected: requeue"),
            Self::BackingOff { backoff, remaining } => match remaining {
                Some(r) => write!(
                    f,
                    "failed at this version: retry in {}s (backoff {}s)",
                    r.as_secs(),
                    backoff.as_secs()
                ),
                None => write!(
                    f,
                    "failed at this version: backoff {}s elapsed, retries now",
                    backoff.as_secs()
                ),
            },
            Self::NoJobYet => f.write_str("no provision job yet: launches"),
            Self::SpecChanged => f.write_str("spec changed since the latest job: launches"),
            Self::HashDiffersFromGo => {
                f.write_str("RE-PROVISION: provkit's config version differs from the one Go stored")
            }
        }
    }
}

/// The check's result for one object.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CutoverReport {
    /// `namespace/name`.
    pub object: String,
    /// The action the engine would take.
    pub action: Action,
    /// The config version provkit computes from the typed object.
    pub desired: String,
    /// `status.desiredConfigVersion` as stored (by Go), if any.
    pub stored_desired: Option<String>,
    /// The latest provision job (by timestamp).
    pub latest_job: Option<JobStatus>,
    /// Why.
    pub reason: CutoverReason,
    /// Whether the object is being deleted (the deprovision path runs instead).
    pub deleting: bool,
}

impl CutoverReport {
    /// True when taking over would re-provision the object only because of the cut-over.
    pub fn reprovisions_because_of_cutover(&self) -> bool {
        self.reason == CutoverReason::HashDiffersFromGo
    }
}

/// The config version of an object could not be computed.
#[derive(Debug, thiserror::Error)]
#[error("{object}: cannot compute the config version")]
pub struct CutoverError {
    /// `namespace/name`.
    pub object: String,
    /// The hasher's error.
    #[source]
    pub source: ConfigVersionError,
}

/// Checks one object at time `now` under `policy`, hashing with `hasher` (use the ones your
/// [`Provisioner`](crate::Provisioner) uses).
///
/// # Errors
/// [`CutoverError`] when the object's config source does not serialise.
pub fn check_cutover<K: ProvisionedResource>(
    obj: &K,
    policy: &LifecyclePolicy,
    hasher: &ConfigHasher,
    now: DateTime<Utc>,
) -> Result<CutoverReport, CutoverError> {
    let object = display_name(obj);
    let desired = hasher
        .compute(&obj.config_source())
        .map_err(|source| CutoverError {
            object: object.clone(),
            source,
        })?;
    let stored_desired = obj
        .provisioning_status()
        .map(|s| s.desired_config_version.clone())
        .filter(|s| !s.is_empty());
    let jobs = obj.provisioning_jobs();
    let latest = find_latest_job_by_type(jobs, &JobType::Provision);
    let eval = evaluate_action_with_check(jobs, &desired, policy.legacy_jobs, || {
        cache_is_stale(latest, jobs, policy.stale_check_newer_terminal_job)
    });
    let hash_differs = stored_desired.as_deref().is_some_and(|s| s != desired);
    let latest_has_go_version =
        latest.is_some_and(|j| Some(j.config_version.as_str()) == stored_desired.as_deref());
    let reason = match eval.action {
        Action::Skip if eval.adopt_legacy => CutoverReason::LegacyAdopted,
        Action::Skip
            if latest.is_some_and(|j| j.config_version.is_empty() && !desired.is_empty()) =>
        {
            CutoverReason::LegacySkipped
        }
        Action::Skip => CutoverReason::ConfigApplied,
        Action::Poll => CutoverReason::InFlight,
        Action::Requeue => CutoverReason::StaleCache,
        Action::Backoff => {
            let backoff = compute_backoff_from_jobs(jobs, &desired, policy.backoff);
            CutoverReason::BackingOff {
                backoff,
                remaining: backoff_remaining(backoff, latest.and_then(|j| j.timestamp), now),
            }
        }
        Action::Trigger if hash_differs && latest_has_go_version => {
            CutoverReason::HashDiffersFromGo
        }
        Action::Trigger if latest.is_none() => CutoverReason::NoJobYet,
        Action::Trigger => CutoverReason::SpecChanged,
    };
    Ok(CutoverReport {
        object,
        action: eval.action,
        desired,
        stored_desired,
        latest_job: latest.cloned(),
        reason,
        deleting: obj.meta().deletion_timestamp.is_some(),
    })
}

/// [`check_cutover`] for every object, in order.
pub fn check_cutover_all<'a, K: ProvisionedResource>(
    objects: impl IntoIterator<Item = &'a K>,
    policy: &LifecyclePolicy,
    hasher: &ConfigHasher,
    now: DateTime<Utc>,
) -> Vec<Result<CutoverReport, CutoverError>> {
    objects
        .into_iter()
        .map(|o| check_cutover(o, policy, hasher, now))
        .collect()
}
