//! The steps a [`ScriptedProvider`](super::ScriptedProvider) plays back, and the calls it records.

use std::time::Duration;

use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{IdempotencyKey, LaunchContext, ProvisionStatus};

/// What the next `trigger_provision` call of a resource does.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TriggerStep {
    /// Create a job and answer with its id.
    Launch {
        /// The answered initial state.
        initial_state: JobState,
        /// The answered message.
        message: String,
    },
    /// Answer with a rate limit; no job.
    RateLimited(Duration),
    /// Fail with [`ProviderError::LaunchNotMade`](provkit_lifecycle::ProviderError::LaunchNotMade); no job.
    FailNotMade(String),
    /// Fail with [`ProviderError::Other`](provkit_lifecycle::ProviderError::Other) (e.g. `"connection refused"`); no job.
    Fail(String),
    /// Create the job, then lose the answer: return
    /// [`ProviderError::OutcomeUnknown`](provkit_lifecycle::ProviderError::OutcomeUnknown).
    LoseAnswer,
    /// Create the job but answer with an empty job id.
    EmptyJobId,
}

impl TriggerStep {
    /// `Launch { Pending, "Provisioning job triggered" }` (what AAP answers).
    pub fn launch() -> Self {
        Self::Launch {
            initial_state: JobState::Pending,
            message: "Provisioning job triggered".into(),
        }
    }
}

/// One answer of a status call for a job; a job plays its steps in order and repeats the last one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StatusStep {
    /// Report this state with the state's name as message (AAP style).
    State(JobState),
    /// Report `Failed` with error details.
    FailedWith(String),
    /// The backend no longer knows the job.
    NotFound,
    /// The status read fails (for example `"timeout"`).
    Error(String),
}

/// What the next `trigger_deprovision` call of a resource does.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DeprovisionScript {
    /// Launch a deprovision job.
    Triggered {
        /// Whether its failure blocks deletion.
        block_deletion_on_failure: bool,
        /// The provision-job view to report.
        provision_status: Option<ProvisionStatus>,
    },
    /// Answer Waiting (e.g. a provision job is being cancelled).
    Waiting {
        /// The provision-job view to report.
        provision_status: Option<ProvisionStatus>,
    },
    /// Answer Skipped.
    Skipped,
    /// Answer with a rate limit.
    RateLimited(Duration),
    /// Fail (no job).
    Fail(String),
    /// Launch the job, then lose the answer.
    LoseAnswer {
        /// Whether its failure blocks deletion.
        block_deletion_on_failure: bool,
    },
}

impl DeprovisionScript {
    /// `Triggered` with `blockDeletionOnFailure = true` and no provision status (AAP style).
    pub fn triggered() -> Self {
        Self::Triggered {
            block_deletion_on_failure: true,
            provision_status: None,
        }
    }
}

/// One recorded call, with its arguments.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ProviderCall {
    /// `trigger_provision`.
    TriggerProvision {
        /// Resource uid.
        uid: String,
        /// The launch context received (includes the idempotency key).
        ctx: LaunchContext,
    },
    /// `provision_status`.
    ProvisionStatus {
        /// Resource uid.
        uid: String,
        /// Job id asked about.
        job_id: String,
    },
    /// `trigger_deprovision`.
    TriggerDeprovision {
        /// Resource uid.
        uid: String,
        /// The job history received.
        jobs: Vec<JobStatus>,
        /// The launch context received.
        ctx: LaunchContext,
    },
    /// `deprovision_status`.
    DeprovisionStatus {
        /// Resource uid.
        uid: String,
        /// Job id asked about.
        job_id: String,
    },
    /// `find_job_by_idempotency_key`.
    FindJob {
        /// Resource uid.
        uid: String,
        /// Job type asked about.
        job_type: JobType,
        /// Key asked about.
        key: IdempotencyKey,
    },
}

impl ProviderCall {
    /// The resource uid of the call.
    pub fn uid(&self) -> &str {
        match self {
            Self::TriggerProvision { uid, .. }
            | Self::ProvisionStatus { uid, .. }
            | Self::TriggerDeprovision { uid, .. }
            | Self::DeprovisionStatus { uid, .. }
            | Self::FindJob { uid, .. } => uid,
        }
    }

    /// True for the two trigger calls.
    pub fn is_trigger(&self) -> bool {
        matches!(
            self,
            Self::TriggerProvision { .. } | Self::TriggerDeprovision { .. }
        )
    }
}

/// A job the scripted backend created.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ScriptedJob {
    /// Its id.
    pub job_id: String,
    /// The resource uid it was launched for.
    pub uid: String,
    /// Provision or deprovision.
    pub job_type: JobType,
    /// The idempotency key it was launched with.
    pub key: Option<IdempotencyKey>,
    /// Its current state (after the status calls so far).
    pub state: JobState,
    /// False once a `NotFound` step was played (the backend purged it).
    pub exists: bool,
}
