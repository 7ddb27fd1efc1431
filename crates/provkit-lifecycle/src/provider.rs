//! The [`ProvisioningProvider`] trait and the values it returns.

use std::fmt;

use chrono::{DateTime, Utc};
use provkit_core::{JobState, JobStatus, JobType};

use crate::error::ProviderError;
use crate::idempotency::{FoundJob, IdempotencyKey, IdempotencySupport};
use crate::launch_context::LaunchContext;
use crate::resource::ResourceView;

/// The answer to a successful provision trigger (Go's `ProvisionResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProvisionResult {
    /// The backend's job id. Must be non-empty: the engine refuses to record a job without an id.
    pub job_id: String,
    /// The job's state right after the launch (AAP: `Pending`).
    pub initial_state: JobState,
    /// A human-readable message (AAP: `"Provisioning job triggered"`).
    pub message: String,
}

impl ProvisionResult {
    /// Builds a result.
    pub fn new(
        job_id: impl Into<String>,
        initial_state: JobState,
        message: impl Into<String>,
    ) -> Self {
        Self {
            job_id: job_id.into(),
            initial_state,
            message: message.into(),
        }
    }
}

/// A provider's view of one job (Go's `ProvisionStatus`).
///
/// ```
/// use provkit_core::JobState;
/// use provkit_lifecycle::ProvisionStatus;
///
/// let st = ProvisionStatus::new("42", JobState::Failed, "failed")
///     .with_error_details("Error: Connection timeout");
/// assert_eq!(st.message_with_details(), "failed: Error: Connection timeout");
/// assert_eq!(ProvisionStatus::new("42", JobState::Running, "running").message_with_details(), "running");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProvisionStatus {
    /// The job id.
    pub job_id: String,
    /// The mapped state.
    pub state: JobState,
    /// The backend's status message (AAP: the raw status string).
    pub message: String,
    /// Progress in percent (AAP: always 0).
    pub progress: i32,
    /// When the job started, if known.
    pub start_time: Option<DateTime<Utc>>,
    /// When the job finished, if known.
    pub end_time: Option<DateTime<Utc>>,
    /// The config version the backend reports as applied (AAP: never set).
    pub reconciled_version: String,
    /// Error details (AAP: the result traceback of a failed job, or its explanation, or the
    /// failed task events of a playbook failure).
    pub error_details: String,
    /// What the job published (Go `Outputs`; AAP: the job's `artifacts`, i.e. what the playbook
    /// set with `set_stats`; for a workflow, its node jobs' artifacts). Empty when nothing was
    /// published or the provider has no outputs.
    pub outputs: serde_json::Map<String, serde_json::Value>,
}

impl ProvisionStatus {
    /// Builds a status with the given id, state and message.
    pub fn new(job_id: impl Into<String>, state: JobState, message: impl Into<String>) -> Self {
        Self {
            job_id: job_id.into(),
            state,
            message: message.into(),
            ..Self::default()
        }
    }

    /// Sets the error details.
    #[must_use]
    pub fn with_error_details(mut self, details: impl Into<String>) -> Self {
        self.error_details = details.into();
        self
    }

    /// Sets the start and end times.
    #[must_use]
    pub fn with_times(mut self, start: Option<DateTime<Utc>>, end: Option<DateTime<Utc>>) -> Self {
        self.start_time = start;
        self.end_time = end;
        self
    }

    /// Sets the outputs.
    ///
    /// ```
    /// use provkit_core::JobState;
    /// use provkit_lifecycle::ProvisionStatus;
    ///
    /// let outputs = serde_json::json!({"vm_ip": "10.0.0.5"}).as_object().cloned().unwrap();
    /// let st = ProvisionStatus::new("104", JobState::Succeeded, "successful").with_outputs(outputs);
    /// assert_eq!(st.outputs["vm_ip"], "10.0.0.5");
    /// ```
    #[must_use]
    pub fn with_outputs(mut self, outputs: serde_json::Map<String, serde_json::Value>) -> Self {
        self.outputs = outputs;
        self
    }

    /// Sets the progress.
    #[must_use]
    pub fn with_progress(mut self, progress: i32) -> Self {
        self.progress = progress;
        self
    }

    /// Sets the reconciled version.
    #[must_use]
    pub fn with_reconciled_version(mut self, version: impl Into<String>) -> Self {
        self.reconciled_version = version.into();
        self
    }

    /// `"<message>: <error_details>"` when there are details, otherwise the message.
    pub fn message_with_details(&self) -> String {
        if self.error_details.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.message, self.error_details)
        }
    }
}

/// What a deprovision trigger did (Go's `DeprovisionAction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeprovisionAction {
    /// A deprovision job was launched.
    Triggered,
    /// Teardown cannot start yet (for example a provision job is being cancelled); ask again later.
    Waiting,
    /// Nothing needs tearing down; the finalizer may be removed.
    Skipped,
}

impl DeprovisionAction {
    /// `"triggered"`, `"waiting"` or `"skipped"` (the Go strings).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Triggered => "triggered",
            Self::Waiting => "waiting",
            Self::Skipped => "skipped",
        }
    }
}

impl fmt::Display for DeprovisionAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The answer to a deprovision trigger (Go's `DeprovisionResult`).
///
/// ```
/// use provkit_core::JobState;
/// use provkit_lifecycle::{DeprovisionAction, DeprovisionResult, ProvisionStatus};
///
/// let r = DeprovisionResult::triggered("999", true)
///     .with_provision_job_status(ProvisionStatus::new("7", JobState::Canceled, "canceled"));
/// assert_eq!(r.action, DeprovisionAction::Triggered);
/// assert_eq!(r.job_id.as_deref(), Some("999"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeprovisionResult {
    /// What the provider did.
    pub action: DeprovisionAction,
    /// The launched job's id (only for [`DeprovisionAction::Triggered`]).
    pub job_id: Option<String>,
    /// Whether a failure of the deprovision job must block deletion (AAP: always true).
    pub block_deletion_on_failure: bool,
    /// The provider's fresh view of the latest provision job, when it checked one.
    pub provision_job_status: Option<ProvisionStatus>,
}

impl DeprovisionResult {
    /// A [`DeprovisionAction::Triggered`] result.
    pub fn triggered(job_id: impl Into<String>, block_deletion_on_failure: bool) -> Self {
        Self {
            action: DeprovisionAction::Triggered,
            job_id: Some(job_id.into()),
            block_deletion_on_failure,
            provision_job_status: None,
        }
    }

    /// A [`DeprovisionAction::Waiting`] result.
    pub fn waiting(block_deletion_on_failure: bool) -> Self {
        Self {
            action: DeprovisionAction::Waiting,
            job_id: None,
            block_deletion_on_failure,
            provision_job_status: None,
        }
    }

    /// A [`DeprovisionAction::Skipped`] result.
    pub fn skipped() -> Self {
        Self {
            action: DeprovisionAction::Skipped,
            job_id: None,
            block_deletion_on_failure: false,
            provision_job_status: None,
        }
    }

    /// Attaches the provider's view of the latest provision job.
    #[must_use]
    pub fn with_provision_job_status(mut self, status: ProvisionStatus) -> Self {
        self.provision_job_status = Some(status);
        self
    }
}

/// A backend that runs provision and deprovision jobs for resources (Go's `ProvisioningProvider`).
///
/// The trait is object-safe (`Arc<dyn ProvisioningProvider>`), `Send + Sync`, and its futures are
/// `Send`. A mockall mock, `MockProvisioningProvider`, is generated with the `mock` feature.
///
/// # Contract
/// - `trigger_*` launch at most one job per call and return its non-empty id. They attach
///   `ctx.idempotency_key` (when set) to the job if the provider supports
///   [`find_job_by_idempotency_key`](Self::find_job_by_idempotency_key).
/// - A failed launch returns a [`ProviderError`] whose
///   [`launch_certainty`](ProviderError::launch_certainty) is truthful: use
///   [`ProviderError::LaunchNotMade`] only when no job can exist.
/// - `*_status` return [`ProviderError::NotFound`] when the backend no longer knows the job.
/// - Rate limits are [`ProviderError::RateLimited`] (or a [`RateLimitError`](crate::RateLimitError) in
///   the source chain).
/// - `trigger_deprovision` receives the whole job history (provision and deprovision jobs) and decides
///   itself whether to cancel a running provision job first ([`DeprovisionAction::Waiting`]).
///
/// provkit-testing's `conformance` module checks an implementation against this contract.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait ProvisioningProvider: Send + Sync + fmt::Debug {
    /// A short, stable name for logs and messages (AAP: `"aap"`).
    fn name(&self) -> &str;

    /// Launches a provision job for `resource`.
    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError>;

    /// The current status of provision job `job_id`.
    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError>;

    /// Starts tearing `resource` down: launch a deprovision job, wait, or skip.
    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError>;

    /// The current status of deprovision job `job_id`.
    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError>;

    /// How this provider supports [`find_job_by_idempotency_key`](Self::find_job_by_idempotency_key).
    fn idempotency_support(&self) -> IdempotencySupport;

    /// How long this provider will certainly refuse to send a launch of `job_type` for
    /// `resource`, without sending anything (its circuit breaker to the backend is open, say);
    /// `None`, the default, when a launch may be sent now.
    ///
    /// The engine asks right before it writes a launch intent: on `Some(wait)` it writes no
    /// intent, launches nothing and requeues after `wait`, as for a rate-limited launch — an
    /// intent written for a launch that is then refused costs a status write, and a lookup by
    /// every process that inherits it.
    fn launch_refused_for(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
    ) -> Option<std::time::Duration> {
        let _ = (resource, job_type);
        None
    }

    /// Finds the job of `job_type` launched for `resource` with idempotency key `key`, if any.
    ///
    /// Providers without support return [`ProviderError::Unsupported`] (and report
    /// [`IdempotencySupport::Unsupported`]).
    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError>;

    /// As [`find_job_by_idempotency_key`](Self::find_job_by_idempotency_key), for an attempt
    /// first persisted at `since` (a [`LaunchIntent`](crate::LaunchIntent)'s `created_at`): the
    /// provider searches only jobs created from then on (minus its clock-skew allowance), so the
    /// lookup after a restart reads seconds of history instead of a day. `None`: the attempt's
    /// start is unknown and the provider picks its own bound.
    ///
    /// The answer must be provable: `Ok(None)` means the backend has no such job in the window.
    /// When absence cannot be proven (a page cap reached, a window that cannot be bounded, an
    /// error) return an error; the engine then launches nothing.
    ///
    /// The default ignores `since` and calls `find_job_by_idempotency_key`.
    async fn find_job_by_idempotency_key_since(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<DateTime<Utc>>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let _ = since;
        self.find_job_by_idempotency_key(resource, job_type, key)
            .await
    }

    /// A marker this provider promises to attach to the launch of attempt `key` (of `job_type`
    /// for `resource`) such that [`find_job_by_marker`](Self::find_job_by_marker) finds its job with
    /// one exact query; `None`, the default, when it has none (the lookup reads the attempt's
    /// window).
    ///
    /// The engine asks right before it writes the attempt's [`LaunchIntent`](crate::LaunchIntent),
    /// records the answer in it ([`marker`](crate::LaunchIntent::marker)) and passes it to the
    /// launch ([`LaunchContext::attempt_marker`](crate::LaunchContext::attempt_marker)). A
    /// provider that cannot attach the marker it promised when the launch comes must refuse
    /// the launch as certainly not made: a lookup trusts an empty answer for a marked intent.
    /// A `None` where a marker was possible (the backend could not be asked, say) only costs a
    /// window read.
    async fn launch_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Option<String> {
        let _ = (resource, job_type, key);
        None
    }

    /// As [`find_job_by_idempotency_key_since`](Self::find_job_by_idempotency_key_since) for
    /// an intent whose launch carried `marker` (from [`launch_marker`](Self::launch_marker),
    /// read back from the intent): the provider may search by the marker instead of reading
    /// the attempt's window. The same rule holds: `Ok(None)` only when absence is proven.
    ///
    /// The default ignores the marker and reads the window from `since`.
    async fn find_job_by_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: DateTime<Utc>,
        marker: &str,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let _ = marker;
        self.find_job_by_idempotency_key_since(resource, job_type, key, Some(since))
            .await
    }

    /// The text of `error` that may be persisted in status or an Event (a job's message after a
    /// failed poll, the `LaunchBlocked` condition): `text`, the engine's rendering of `error`,
    /// without request-scoped details such as request ids, timestamps or attempt counts. It
    /// must be the same text each time the same error repeats, so that a repeating error
    /// writes no status; the details belong in logs (the engine logs the full error).
    ///
    /// The default returns `text` unchanged (for errors whose `Display` has no such details).
    fn error_status_text(&self, error: &ProviderError, text: String) -> String {
        let _ = error;
        text
    }
}
