//! Core types for Kubernetes operators that provision infrastructure through jobs (Ansible
//! Automation Platform and the like), wire-compatible with the Go OSAC operator.
//!
//! - [`JobStatus`], [`JobType`], [`JobState`]: one entry of the job history a resource keeps in
//!   its CRD status, with Go's exact JSON (module [`job`]).
//! - [`append_job`], [`update_job`], [`find_job_by_id`], [`find_latest_job_by_type`],
//!   [`has_job_id`], and for multi-target histories [`find_latest_job_by_type_and_target`],
//!   [`jobs_of_target`], [`absorb_legacy_history`]: the history operations (module [`history`], which documents two
//!   deliberate deviations from Go).
//! - [`compute_desired_config_version`] and [`ConfigHasher`]: the spec hash that decides when to
//!   re-provision, byte-compatible with Go (module [`config_version`]).
//! - [`LaunchIntent`]: the write-ahead record of a launch attempt (module [`intent`]).
//! - [`Clock`], [`SystemClock`], [`ManualClock`]: injectable wall-clock time (module [`clock`]).
//! - [`timestamp`]: serde modules for Kubernetes-style RFC 3339 timestamps (whole-second `metav1.Time`, microsecond `metav1.MicroTime`).
//! - `k8s` (feature `k8s`): `ObjectRef`, `GroupVersionResource`, `MachineInfo` on k8s-openapi.
//!
//! No IO happens here.
//!
//! # Features
//!
//! - `k8s`: the Kubernetes types above (pulls in k8s-openapi; the final binary selects the
//!   Kubernetes version with one of k8s-openapi's version features, e.g. `latest`, or the
//!   `K8S_OPENAPI_ENABLED_VERSION` environment variable).
//! - `schemars`: `schemars::JsonSchema` for the status types, to embed them in a CRD schema.
//!
//! # Example
//!
//! ```
//! use std::num::NonZeroUsize;
//! use provkit_core::{
//!     append_job, compute_desired_config_version, find_latest_job_by_type, Clock, JobState,
//!     JobStatus, JobType, ManualClock,
//! };
//!
//! #[derive(serde::Serialize)]
//! struct Spec { size: String }
//!
//! let clock = ManualClock::new(chrono::DateTime::UNIX_EPOCH);
//! let version = compute_desired_config_version(&Spec { size: "large".into() }).unwrap();
//!
//! let mut jobs: Vec<JobStatus> = Vec::new();
//! let mut job = JobStatus::new("101", JobType::Provision, JobState::Pending, clock.now());
//! job.config_version = version.clone();
//! append_job(&mut jobs, job, provkit_core::DEFAULT_MAX_JOB_HISTORY);
//!
//! let latest = find_latest_job_by_type(&jobs, &JobType::Provision).unwrap();
//! assert_eq!(latest.config_version, version);
//! let status = serde_json::to_value(&jobs).unwrap();
//! assert_eq!(status[0]["timestamp"], "1970-01-01T00:00:00Z");
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod backoff;
pub mod clock;
pub mod config_version;
pub mod history;
pub mod intent;
pub mod job;
pub mod text;
pub mod timestamp;

#[cfg(feature = "k8s")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s")))]
pub mod k8s;

#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use clock::MockClock;
#[doc(inline)]
pub use clock::{Clock, ManualClock, SystemClock};
#[doc(inline)]
pub use config_version::{
    ConfigHasher, ConfigVersionError, SpecWithStrategies, SpecWithStrategy,
    SpecWithStrategyAndTargetIp, compute_desired_config_version, to_go_json,
};
#[doc(inline)]
pub use history::{
    DEFAULT_MAX_JOB_HISTORY, absorb_legacy_history, append_job, find_job_by_id,
    find_latest_job_by_type, find_latest_job_by_type_and_target, has_job_id, jobs_of_target,
    update_job,
};
#[doc(inline)]
pub use intent::LaunchIntent;
pub use job::{JobState, JobStatus, JobType};
#[cfg(feature = "k8s")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s")))]
#[doc(inline)]
pub use k8s::{GroupVersionResource, MachineInfo, ObjectRef, UpdateState};
