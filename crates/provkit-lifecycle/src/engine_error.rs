//! Errors of the async lifecycle flows.

use provkit_core::JobType;

use crate::error::{BoxError, LaunchCertainty, ProviderError};
use crate::idempotency::IdempotencyKey;

/// An error of [`Lifecycle`](crate::Lifecycle)'s flows. No job is recorded when one is returned; the
/// controller requeues with its error backoff.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// Launching a provision job failed (not a rate limit).
    #[error("failed to trigger provision: {source}")]
    TriggerProvision {
        /// The attempt's idempotency key.
        key: IdempotencyKey,
        /// Whether a job may nevertheless exist (then the next launch looks it up by `key` first).
        certainty: LaunchCertainty,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// Triggering deprovisioning failed (not a rate limit).
    #[error("failed to trigger deprovision: {source}")]
    TriggerDeprovision {
        /// The attempt's idempotency key.
        key: IdempotencyKey,
        /// Whether a job may nevertheless exist.
        certainty: LaunchCertainty,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// The provider reported a launch but returned an empty job id; nothing was recorded (a job may
    /// exist, so the next launch looks it up by `key` first).
    #[error("provider {provider} returned an empty job id for a {} launch; no job recorded", job_type.as_str())]
    EmptyJobId {
        /// The provider's name.
        provider: String,
        /// The job type of the launch.
        job_type: JobType,
        /// The attempt's idempotency key.
        key: IdempotencyKey,
    },
    /// The launch intent could not be persisted (for example, status writes are refused); nothing
    /// was launched.
    #[error(
        "could not persist the launch intent of the {} attempt {key}; nothing was launched",
        job_type.as_str()
    )]
    IntentWrite {
        /// The job type of the attempt.
        job_type: JobType,
        /// The attempt's idempotency key.
        key: IdempotencyKey,
        /// The store's error.
        #[source]
        source: BoxError,
    },
    /// Looking up a job by idempotency key failed; the engine does not launch without the answer.
    #[error("failed to look up {} job by idempotency key {key}: {source}", job_type.as_str())]
    IdempotencyLookup {
        /// The job type.
        job_type: JobType,
        /// The key looked up.
        key: IdempotencyKey,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
}

impl LifecycleError {
    /// True when the failed call may have created a job (outcome unknown or empty id).
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Self::TriggerProvision { certainty, .. }
            | Self::TriggerDeprovision { certainty, .. } => *certainty == LaunchCertainty::Unknown,
            Self::EmptyJobId { .. } => true,
            Self::IdempotencyLookup { .. } | Self::IntentWrite { .. } => false,
        }
    }

    /// The provider error behind this error, if any.
    pub fn provider_error(&self) -> Option<&ProviderError> {
        match self {
            Self::TriggerProvision { source, .. }
            | Self::TriggerDeprovision { source, .. }
            | Self::IdempotencyLookup { source, .. } => Some(source),
            Self::EmptyJobId { .. } | Self::IntentWrite { .. } => None,
        }
    }
}
