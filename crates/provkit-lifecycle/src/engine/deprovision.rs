//! Deprovisioning flows: trigger (cancel-first comes from the provider), poll, blocking-failure retry.

use provkit_core::{
    JobState, JobStatus, JobType, append_job, find_job_by_id, find_latest_job_by_type, has_job_id,
    update_job,
};

use super::Lifecycle;
use super::launch::{Attempt, FailedLaunch, Resolution, flush};
use super::observe::Launch;
use crate::decide::{backoff_remaining, compute_deprovision_backoff};
use crate::engine_error::LifecycleError;
use crate::hooks::DeprovisionHooks;
use crate::idempotency::{FoundJob, IdempotencyKey};
use crate::launch_context::LaunchContext;
use crate::outcome::{DeprovisionOutcome, DeprovisionStep};
use crate::provider::{DeprovisionAction, DeprovisionResult};
use crate::redact::{redact_polled, redact_status};
use crate::resource::ResourceView;

/// The message of a freshly triggered deprovision job (as Go).
pub(crate) const DEPROVISION_TRIGGERED: &str = "Deprovision job triggered";

impl Lifecycle {
    /// A rate-limited deprovision step: the finalizer kept, requeued after the wait (see
    /// [`LifecyclePolicy::rate_limit_requeue`](crate::LifecyclePolicy::rate_limit_requeue)).
    fn deprovision_rate_limited(&self, retry_after: std::time::Duration) -> DeprovisionOutcome {
        DeprovisionOutcome::keep(
            DeprovisionStep::RateLimited { retry_after },
            self.policy.rate_limit_requeue(retry_after),
        )
    }

    /// One deletion reconcile (Go's `RunDeprovisioningLifecycle`): trigger teardown when there is no
    /// deprovision job yet, otherwise poll the latest one.
    ///
    /// # Guarantees
    /// - [`DeprovisionOutcome::may_remove_finalizer`] is true only when the provider skipped teardown
    ///   or the latest deprovision job succeeded (or failed without `blockDeletionOnFailure`).
    /// - A failed or canceled deprovision job with `blockDeletionOnFailure` is retried after the
    ///   deprovision backoff (2 → 30 min) until one succeeds; the finalizer stays until then.
    /// - A deprovision job the provider no longer knows becomes `Failed` (then retried if it blocks).
    /// - A rate limit never allows finalizer removal, whatever its retry-after.
    ///
    /// # Errors
    /// [`LifecycleError::TriggerDeprovision`], [`LifecycleError::EmptyJobId`],
    /// [`LifecycleError::IdempotencyLookup`]; keep the finalizer then.
    pub async fn run_deprovisioning_lifecycle(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        ctx: &LaunchContext,
        hooks: &mut DeprovisionHooks<'_>,
    ) -> Result<DeprovisionOutcome, LifecycleError> {
        let latest = find_latest_job_by_type(jobs, &JobType::Deprovision).cloned();
        match latest {
            Some(job) if has_job_id(Some(&job)) => {
                self.poll_deprovision_job(resource, jobs, job, ctx, hooks)
                    .await
            }
            _ => {
                self.trigger_deprovision_job(resource, jobs, ctx, hooks)
                    .await
            }
        }
    }

    /// Go's `TriggerDeprovisionJob`: ask the provider to tear down and record what it did.
    ///
    /// # Errors
    /// As [`run_deprovisioning_lifecycle`](Self::run_deprovisioning_lifecycle).
    pub async fn trigger_deprovision_job(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        ctx: &LaunchContext,
        hooks: &mut DeprovisionHooks<'_>,
    ) -> Result<DeprovisionOutcome, LifecycleError> {
        if self.deprovision_cache_is_stale(jobs, hooks).await {
            return Ok(DeprovisionOutcome::keep(
                DeprovisionStep::StaleCache,
                self.policy.poll_requeue(),
            ));
        }
        let predecessor = find_latest_job_by_type(jobs, &JobType::Deprovision);
        let key = IdempotencyKey::for_target_attempt(
            &resource.uid,
            &self.target,
            &JobType::Deprovision,
            "",
            predecessor,
        );
        let store = hooks.intents;

        // A pending intent (of either job type) is resolved before anything new is launched.
        let resolution = self
            .resolve_pending_intent(resource, jobs, store, &key)
            .await?;
        if let Resolution::Adopted { job_id, changed } = &resolution {
            self.observe
                .launch(&JobType::Deprovision, Launch::Recovered);
            let mut out = DeprovisionOutcome::keep(
                DeprovisionStep::Recovered {
                    job_id: job_id.clone(),
                },
                self.policy.poll_requeue(),
            );
            if *changed {
                out.history_changed = true;
                out.flush = flush(hooks.status_flush, jobs).await;
            }
            return Ok(out);
        }
        if self.lookup_before_intent(&key, &resolution)
            && let Some(found) = self
                .lookup(resource, &JobType::Deprovision, &key, &Attempt::default())
                .await?
        {
            return Ok(self
                .record_recovered_deprovision(jobs, found, &key, hooks)
                .await);
        }
        if let Some(retry_after) = self.launch_refused(resource, &JobType::Deprovision) {
            return Ok(self.deprovision_rate_limited(retry_after));
        }
        let attempt = self
            .persist_intent(
                store,
                &resolution,
                resource,
                &key,
                &JobType::Deprovision,
                "",
            )
            .await?;

        let call_ctx = attempt.context(ctx, &key);
        let result = match self
            .provider
            .trigger_deprovision(resource, jobs, &call_ctx)
            .await
        {
            Ok(mut result) => {
                result.provision_job_status = result
                    .provision_job_status
                    .map(|st| redact_status(st, &ctx.redactor()));
                result
            }
            Err(e) => {
                let e = e.redacted(&ctx.redactor());
                return match self
                    .launch_failed(store, resource, &JobType::Deprovision, &key, &attempt, e)
                    .await
                {
                    FailedLaunch::RateLimited(retry_after) => {
                        Ok(self.deprovision_rate_limited(retry_after))
                    }
                    FailedLaunch::Found(found) => Ok(self
                        .record_recovered_deprovision(jobs, found, &key, hooks)
                        .await),
                    FailedLaunch::Failed(certainty, source) => {
                        Err(LifecycleError::TriggerDeprovision {
                            key,
                            certainty,
                            source,
                        })
                    }
                };
            }
        };
        if result.action != DeprovisionAction::Triggered {
            // The provider is certain no deprovision job was made.
            self.launch_not_made(store, &key);
        }

        match result.action {
            DeprovisionAction::Skipped => {
                self.resolve(&key);
                Ok(DeprovisionOutcome::remove(DeprovisionStep::Skipped))
            }
            DeprovisionAction::Waiting => {
                self.resolve(&key);
                let changed = update_provision_job_from_result(jobs, &result);
                let mut out =
                    DeprovisionOutcome::keep(DeprovisionStep::Waiting, self.policy.poll_requeue());
                out.history_changed = changed;
                Ok(out)
            }
            DeprovisionAction::Triggered => {
                // The history changes anyway (the new job is appended below).
                update_provision_job_from_result(jobs, &result);
                let Some(job_id) = result.job_id.clone().filter(|id| !id.trim().is_empty()) else {
                    self.observe.launch(&JobType::Deprovision, Launch::Unknown);
                    return Err(self.empty_job_id(JobType::Deprovision, key));
                };
                self.observe.launch(&JobType::Deprovision, Launch::Made);
                self.resolve(&key);
                if let Some(store) = store {
                    store.resolve(key.as_str());
                }
                let mut job = JobStatus::new(
                    job_id.clone(),
                    JobType::Deprovision,
                    JobState::Pending,
                    self.clock.now(),
                );
                job.message = DEPROVISION_TRIGGERED.to_owned();
                job.block_deletion_on_failure = result.block_deletion_on_failure;
                append_job(jobs, job, self.policy.max_history);
                tracing::info!(job_id = %job_id, key = %key, "deprovision job launched");
                let mut out = DeprovisionOutcome::keep(
                    DeprovisionStep::Launched { job_id },
                    self.policy.poll_requeue(),
                );
                out.history_changed = true;
                out.flush = flush(hooks.status_flush, jobs).await;
                Ok(out)
            }
        }
    }

    /// True when the hooks' stale-cache check shows a deprovision job (with an id) that differs from
    /// the cached latest one: a previous reconcile launched it and the cache has not caught up.
    async fn deprovision_cache_is_stale(
        &self,
        jobs: &[JobStatus],
        hooks: &DeprovisionHooks<'_>,
    ) -> bool {
        let Some(check) = hooks.stale_check else {
            return false;
        };
        let cached = find_latest_job_by_type(jobs, &JobType::Deprovision).map(|j| j.job_id.clone());
        match check.read_fresh_jobs().await {
            Ok(fresh) => {
                let stale = find_latest_job_by_type(&fresh, &JobType::Deprovision)
                    .filter(|j| has_job_id(Some(j)))
                    .is_some_and(|f| cached.as_deref() != Some(f.job_id.as_str()));
                if stale {
                    tracing::info!(
                        "skipping deprovision trigger: newer deprovision job found via API server"
                    );
                }
                stale
            }
            Err(e) => {
                tracing::warn!(error = %crate::ErrorChain(e.as_ref()), fail_open = self.policy.stale_check_fail_open, "stale-cache check failed");
                !self.policy.stale_check_fail_open
            }
        }
    }

    /// Go's `PollDeprovisionJob`.
    ///
    /// # Errors
    /// Only from a blocking-failure retry (which triggers again).
    pub async fn poll_deprovision_job(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        latest: JobStatus,
        ctx: &LaunchContext,
        hooks: &mut DeprovisionHooks<'_>,
    ) -> Result<DeprovisionOutcome, LifecycleError> {
        if latest.state.is_terminal() {
            return self
                .after_terminal_deprovision(resource, jobs, latest, ctx, hooks, false)
                .await;
        }
        let job_id = latest.job_id.clone();
        let timer = self.observe.poll_started(self.clock.as_ref());
        let polled = self.provider.deprovision_status(resource, &job_id).await;
        self.observe
            .polled(&JobType::Deprovision, timer, self.clock.as_ref());
        let polled = redact_polled(polled, &ctx.redactor());
        let status = match polled {
            Ok(status) => status,
            Err(e) if e.is_not_found() && self.policy.purged_jobs_fail => {
                let mut job = latest;
                job.state = JobState::Failed;
                job.message = format!(
                    "deprovision job {job_id} no longer exists in provider {}: {}",
                    self.provider.name(),
                    crate::ErrorChain(&e)
                );
                update_job(jobs, &job);
                tracing::warn!(job_id = %job_id, "deprovision job purged by the provider; marked Failed");
                let mut out = self
                    .after_terminal_deprovision(resource, jobs, job, ctx, hooks, true)
                    .await?;
                if matches!(
                    out.step,
                    DeprovisionStep::Finished { .. } | DeprovisionStep::BackingOff { .. }
                ) {
                    out.step = DeprovisionStep::PurgedJobFailed { job_id };
                }
                out.history_changed = true;
                return Ok(out);
            }
            Err(e) if e.retry_after().is_some() => {
                let retry_after = e.retry_after().unwrap_or_default();
                tracing::info!(job_id = %job_id, ?retry_after, error = %e, "deprovision job poll rate-limited; status untouched");
                return Ok(self.deprovision_rate_limited(retry_after));
            }
            Err(e) => {
                tracing::warn!(job_id = %job_id, error = %e, "deprovision job poll failed");
                let mut job = latest;
                job.message = self.poll_error_message("Failed to get deprovision status", &e);
                let changed = update_job(jobs, &job);
                let mut out = DeprovisionOutcome::keep(
                    DeprovisionStep::StatusReadFailed { job_id },
                    self.policy.poll_requeue(),
                );
                out.history_changed = changed;
                return Ok(out);
            }
        };
        let mut job = latest;
        let mut changed = false;
        if status.state != job.state || status.message != job.message {
            job.state = status.state.clone();
            job.message = status.message_with_details();
            changed = update_job(jobs, &job);
        }
        if !status.state.is_terminal() {
            let mut out = DeprovisionOutcome::keep(
                DeprovisionStep::Polled {
                    job_id,
                    state: status.state,
                },
                self.policy.poll_requeue(),
            );
            out.history_changed = changed;
            return Ok(out);
        }
        let mut out = self
            .after_terminal_deprovision(resource, jobs, job, ctx, hooks, changed)
            .await?;
        out.history_changed |= changed;
        Ok(out)
    }

    /// A terminal deprovision job: done, or (failed with `blockDeletionOnFailure`) the backoff retry.
    async fn after_terminal_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        job: JobStatus,
        ctx: &LaunchContext,
        hooks: &mut DeprovisionHooks<'_>,
        changed: bool,
    ) -> Result<DeprovisionOutcome, LifecycleError> {
        if job.state.is_successful() || !job.block_deletion_on_failure {
            let mut out = DeprovisionOutcome::remove(DeprovisionStep::Finished {
                job_id: job.job_id,
                state: job.state,
            });
            out.history_changed = changed;
            return Ok(out);
        }
        // Go's handleDeprovisionBackoff.
        let backoff = compute_deprovision_backoff(jobs, self.policy.backoff);
        if let Some(remaining) = backoff_remaining(backoff, job.timestamp, self.clock.now()) {
            let mut out = DeprovisionOutcome::keep(
                DeprovisionStep::BackingOff { remaining },
                self.policy.backoff_requeue(remaining),
            );
            out.history_changed = changed;
            return Ok(out);
        }
        tracing::info!(job_id = %job.job_id, "retrying failed deprovision that blocks deletion");
        self.trigger_deprovision_job(resource, jobs, ctx, hooks)
            .await
    }

    async fn record_recovered_deprovision(
        &self,
        jobs: &mut Vec<JobStatus>,
        found: FoundJob,
        key: &IdempotencyKey,
        hooks: &DeprovisionHooks<'_>,
    ) -> DeprovisionOutcome {
        self.observe
            .launch(&JobType::Deprovision, Launch::Recovered);
        self.resolve(key);
        if let Some(store) = hooks.intents {
            store.resolve(key.as_str());
        }
        let job_id = found.job_id.clone();
        let mut out = DeprovisionOutcome::keep(
            DeprovisionStep::Recovered {
                job_id: job_id.clone(),
            },
            self.policy.poll_requeue(),
        );
        if find_job_by_id(jobs, &job_id).is_some() {
            return out;
        }
        let mut job = JobStatus::new(job_id, JobType::Deprovision, found.state, self.clock.now());
        job.message = if found.message.is_empty() {
            format!("Deprovision job recovered by idempotency key {key}")
        } else {
            found.message
        };
        // The provider's flag is unknown for a recovered job: block (the safe choice).
        job.block_deletion_on_failure = true;
        append_job(jobs, job, self.policy.max_history);
        out.history_changed = true;
        out.flush = flush(hooks.status_flush, jobs).await;
        out
    }
}

/// Go's `updateProvisionJobFromDeprovisionResult`: copy the provider's view of the latest provision
/// job (for example `Canceled` after a cancel-first) into the history. Returns whether it changed.
fn update_provision_job_from_result(jobs: &mut [JobStatus], result: &DeprovisionResult) -> bool {
    let Some(status) = &result.provision_job_status else {
        return false;
    };
    let Some(mut job) = find_latest_job_by_type(jobs, &JobType::Provision).cloned() else {
        return false;
    };
    if job.state == status.state && job.message == status.message_with_details() {
        return false;
    }
    job.state = status.state.clone();
    job.message = status.message_with_details();
    update_job(jobs, &job)
}
