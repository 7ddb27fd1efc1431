//! Shared pieces of the exactly-once launch: lookups by idempotency key and the status flush.

use provkit_core::{JobStatus, JobType};

use super::Lifecycle;
use crate::engine_error::LifecycleError;
use crate::hooks::StatusFlush;
use crate::idempotency::{FoundJob, IdempotencyKey, IdempotencySupport};
use crate::outcome::FlushReport;
use crate::policy::LookupBeforeLaunch;
use crate::resource::ResourceView;

impl Lifecycle {
    /// Whether to look the attempt up by key before launching.
    pub(super) fn should_lookup_before_launch(&self, key: &IdempotencyKey) -> bool {
        let support = self.provider.idempotency_support();
        if support == IdempotencySupport::Unsupported {
            return false;
        }
        let after_unknown = self.journal.contains(key);
        match self.policy.lookup_before_launch {
            LookupBeforeLaunch::Always => true,
            LookupBeforeLaunch::AfterUnknownOutcome => after_unknown,
            LookupBeforeLaunch::ProviderDefault => {
                after_unknown || support == IdempotencySupport::CheapLookup
            }
        }
    }

    /// Asks the provider for a job carrying `key`. `Unsupported` answers count as "none".
    ///
    /// A found job with an empty id is ignored (it cannot be recorded).
    pub(super) async fn lookup(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, LifecycleError> {
        match self
            .provider
            .find_job_by_idempotency_key(resource, job_type, key)
            .await
        {
            Ok(found) => Ok(found.filter(|f| !f.job_id.trim().is_empty())),
            Err(e) if e.is_unsupported() => Ok(None),
            Err(source) => Err(LifecycleError::IdempotencyLookup {
                job_type: job_type.clone(),
                key: key.clone(),
                source,
            }),
        }
    }

    /// After a launch with an unknown outcome: remember the key and try one immediate lookup.
    pub(super) async fn recover_after_unknown(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Option<FoundJob> {
        self.journal.insert(key.clone());
        if self.provider.idempotency_support() == IdempotencySupport::Unsupported {
            return None;
        }
        match self.lookup(resource, job_type, key).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, key = %key, "lookup after a launch with unknown outcome failed");
                None
            }
        }
    }

    pub(super) fn resolve(&self, key: &IdempotencyKey) {
        self.journal.remove(key);
    }

    /// The provider answered a launch without a job id: the outcome is unknown, so the key is
    /// remembered (the next attempt looks it up first) and the launch fails.
    pub(super) fn empty_job_id(&self, job_type: JobType, key: IdempotencyKey) -> LifecycleError {
        self.journal.insert(key.clone());
        LifecycleError::EmptyJobId {
            provider: self.provider.name().to_owned(),
            job_type,
            key,
        }
    }
}

/// Runs the flush hook after a job was recorded; errors are logged and reported, never returned.
pub(super) async fn flush(hook: Option<&dyn StatusFlush>, jobs: &[JobStatus]) -> FlushReport {
    let Some(hook) = hook else {
        return FlushReport::NoHook;
    };
    match hook.flush(jobs).await {
        Ok(()) => FlushReport::Flushed,
        Err(e) => {
            tracing::warn!(
                error = %e,
                "failed to flush status after job trigger; end-of-reconcile update will retry"
            );
            FlushReport::Failed(e.to_string())
        }
    }
}
