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
    #[error("failed to trigger provision")]
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
    #[error("failed to trigger deprovision")]
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
    #[error("failed to look up {} job by idempotency key {key}", job_type.as_str())]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorChain;

    /// Each error's `Display` followed by each cause's, as an error chain prints them.
    fn segments(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
        let mut out = vec![err.to_string()];
        let mut cause = err.source();
        while let Some(e) = cause {
            out.push(e.to_string());
            cause = e.source();
        }
        out
    }

    fn io(msg: &str) -> BoxError {
        Box::new(std::io::Error::other(msg.to_owned()))
    }

    /// Every error with a `source()`, at every nesting provkit builds: printed as a whole
    /// chain, no segment repeats its cause's text (issue 15: a chain used to show the same
    /// message two or three times).
    #[test]
    fn no_display_repeats_its_source() {
        let key = || IdempotencyKey::new("k-1");
        let provider_errors = || -> Vec<ProviderError> {
            vec![
                ProviderError::other_with_source("failed to get job status", io("403 forbidden")),
                ProviderError::other_with_source(
                    "failed to cancel provision job",
                    ProviderError::other_with_source(
                        "failed to cancel job",
                        io("connection reset"),
                    ),
                ),
                ProviderError::not_found_with_source(
                    "job 7",
                    io("No Job matches the given query."),
                ),
                ProviderError::launch_not_made("launch refused", Some(io("400 bad request"))),
                ProviderError::outcome_unknown("launch answer lost", Some(io("timed out"))),
            ]
        };
        let mut errors: Vec<Box<dyn std::error::Error + 'static>> = Vec::new();
        for source in provider_errors() {
            errors.push(Box::new(LifecycleError::TriggerProvision {
                key: key(),
                certainty: source.launch_certainty(),
                source,
            }));
        }
        for source in provider_errors() {
            errors.push(Box::new(LifecycleError::TriggerDeprovision {
                key: key(),
                certainty: source.launch_certainty(),
                source,
            }));
        }
        for source in provider_errors() {
            errors.push(Box::new(LifecycleError::IdempotencyLookup {
                job_type: JobType::Provision,
                key: key(),
                source,
            }));
        }
        errors.push(Box::new(LifecycleError::IntentWrite {
            job_type: JobType::Provision,
            key: key(),
            source: io("status patch of net-a failed"),
        }));
        for err in &errors {
            let chain = ErrorChain(err.as_ref()).to_string();
            println!("{chain}");
            let segs = segments(err.as_ref());
            assert!(segs.len() >= 2, "{chain}");
            for pair in segs.windows(2) {
                assert!(
                    !pair[0].contains(&pair[1]),
                    "{:?} repeats its source {:?} in {chain:?}",
                    pair[0],
                    pair[1]
                );
            }
            for (i, s) in segs.iter().enumerate() {
                assert_eq!(
                    chain.matches(s.as_str()).count(),
                    1,
                    "segment {i} {s:?} appears more than once in {chain:?}"
                );
            }
        }
        assert_eq!(
            ErrorChain(errors[1].as_ref()).to_string(),
            "failed to trigger provision: failed to cancel provision job: failed to cancel job: connection reset"
        );
    }
}
