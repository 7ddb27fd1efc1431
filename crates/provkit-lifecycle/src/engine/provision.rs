//! Provisioning flows: evaluate, trigger (exactly-once), poll, back off.

use provkit_core::{
    JobState, JobStatus, JobType, append_job, find_job_by_id, find_latest_job_by_type, update_job,
};

use super::Lifecycle;
use super::launch::{Attempt, FailedLaunch, Resolution, flush};
use super::observe::Launch;
use crate::decide::{
    Action, backoff_remaining, cache_is_stale, compute_backoff_from_jobs, evaluate_action,
};
use crate::engine_error::LifecycleError;
use crate::hooks::ProvisionHooks;
use crate::idempotency::{FoundJob, IdempotencyKey};
use crate::launch_context::LaunchContext;
use crate::outcome::{Outcome, ProvisionOutcome, ProvisionStep};
use crate::redact::{Redactor, redact_polled};
use crate::resource::ResourceView;

impl Lifecycle {
    /// A rate-limited provision step of `action`: nothing recorded, requeued after the wait
    /// (see [`LifecyclePolicy::rate_limit_requeue`](crate::LifecyclePolicy::rate_limit_requeue)).
    fn provision_rate_limited(
        &self,
        action: Action,
        retry_after: std::time::Duration,
    ) -> ProvisionOutcome {
        ProvisionOutcome::new(
            action,
            ProvisionStep::RateLimited { retry_after },
            Outcome::RequeueAfter(self.policy.rate_limit_requeue(retry_after)),
        )
    }

    /// One provisioning reconcile (Go's `RunProvisioningLifecycle`): evaluate the history, then skip,
    /// poll, wait for the backoff, or launch a job.
    ///
    /// # Guarantees
    /// - Before any launch (plain trigger, and by default also a backoff retry) the stale-cache check
    ///   runs; when the API server shows a job the cache does not, the result is Requeue with no change.
    /// - A launched job is appended (trimmed to the policy's cap) and the status flush runs right away;
    ///   a flush error is reported in [`ProvisionOutcome::flush`], never returned.
    /// - A rate-limited launch records nothing and requeues after the retry-after (at least
    ///   `min_requeue`).
    /// - Poll errors are written into the job's message and requeue after the poll interval; a job the
    ///   provider no longer knows becomes `Failed` (policy `purged_jobs_fail`).
    ///
    /// # Errors
    /// A failed launch ([`LifecycleError::TriggerProvision`]), an empty job id
    /// ([`LifecycleError::EmptyJobId`]) or a failed idempotency lookup. Nothing is recorded then.
    pub async fn run_provisioning_lifecycle(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        desired: &str,
        ctx: &LaunchContext,
        hooks: &mut ProvisionHooks<'_>,
    ) -> Result<ProvisionOutcome, LifecycleError> {
        let eval = evaluate_action(jobs, desired, self.policy.legacy_jobs);
        let action = eval.action;
        let latest = eval.latest.cloned();
        let adopt = eval.adopt_legacy;
        tracing::debug!(resource = %resource.display_name(), action = %action, "evaluated provisioning action");
        match action {
            Action::Skip => {
                let mut out =
                    ProvisionOutcome::new(Action::Skip, ProvisionStep::Skipped, Outcome::Done);
                if let (true, Some(mut job)) = (adopt, latest) {
                    job.config_version = desired.to_owned();
                    if update_job(jobs, &job) {
                        tracing::info!(job_id = %job.job_id, version = desired, "adopted legacy provision job");
                        out.adopted_legacy_job = Some(job.job_id);
                        out.history_changed = true;
                    }
                }
                Ok(out)
            }
            Action::Poll => match latest {
                Some(job) => Ok(self
                    .poll_provision(resource, jobs, desired, job, hooks, &ctx.redactor())
                    .await),
                None => Ok(ProvisionOutcome::new(
                    Action::Poll,
                    ProvisionStep::Skipped,
                    Outcome::RequeueAfter(self.policy.poll_requeue()),
                )),
            },
            Action::Backoff => {
                self.handle_backoff(resource, jobs, desired, latest.as_ref(), ctx, hooks)
                    .await
            }
            Action::Trigger | Action::Requeue => {
                if self.cache_is_stale(latest.as_ref(), hooks).await {
                    return Ok(self.stale_outcome());
                }
                self.trigger_provision_job(resource, jobs, desired, ctx, hooks)
                    .await
                    .map(|o| ProvisionOutcome {
                        action: Action::Trigger,
                        ..o
                    })
            }
        }
    }

    /// Go's `HandleBackoff`: retry (launch) when the backoff since `latest`'s trigger has elapsed,
    /// otherwise requeue after the remaining time (plus jitter).
    ///
    /// # Errors
    /// As [`trigger_provision_job`](Self::trigger_provision_job).
    pub async fn handle_backoff(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        desired: &str,
        latest: Option<&JobStatus>,
        ctx: &LaunchContext,
        hooks: &mut ProvisionHooks<'_>,
    ) -> Result<ProvisionOutcome, LifecycleError> {
        let backoff = compute_backoff_from_jobs(jobs, desired, self.policy.backoff);
        let triggered_at = latest.and_then(|j| j.timestamp);
        if let Some(remaining) = backoff_remaining(backoff, triggered_at, self.clock.now()) {
            return Ok(ProvisionOutcome::new(
                Action::Backoff,
                ProvisionStep::BackingOff { remaining },
                Outcome::RequeueAfter(self.policy.backoff_requeue(remaining)),
            ));
        }
        if self.policy.stale_check_before_backoff_retry && self.cache_is_stale(latest, hooks).await
        {
            return Ok(self.stale_outcome());
        }
        self.trigger_provision_job(resource, jobs, desired, ctx, hooks)
            .await
            .map(|o| ProvisionOutcome {
                action: Action::Backoff,
                ..o
            })
    }

    /// Go's `TriggerJob` plus the flush: launch one provision job exactly once and record it.
    ///
    /// Does **not** run the stale-cache check or look at the backoff; callers that bypass
    /// [`run_provisioning_lifecycle`](Self::run_provisioning_lifecycle) are responsible for those.
    ///
    /// # Errors
    /// [`LifecycleError::TriggerProvision`], [`LifecycleError::EmptyJobId`],
    /// [`LifecycleError::IdempotencyLookup`]; nothing is recorded then.
    pub async fn trigger_provision_job(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        desired: &str,
        ctx: &LaunchContext,
        hooks: &mut ProvisionHooks<'_>,
    ) -> Result<ProvisionOutcome, LifecycleError> {
        let predecessor = find_latest_job_by_type(jobs, &JobType::Provision);
        let key = IdempotencyKey::for_target_attempt(
            &resource.uid,
            &self.target,
            &JobType::Provision,
            desired,
            predecessor,
        );
        let store = hooks.intents;

        // A pending intent is resolved before anything new is launched.
        let resolution = self
            .resolve_pending_intent(resource, jobs, store, &key)
            .await?;
        if let Resolution::Adopted { job_id, changed } = &resolution {
            self.observe.launch(&JobType::Provision, Launch::Recovered);
            let mut out = ProvisionOutcome::new(
                Action::Trigger,
                ProvisionStep::Recovered {
                    job_id: job_id.clone(),
                },
                Outcome::RequeueAfter(self.policy.poll_requeue()),
            );
            if *changed {
                out.history_changed = true;
                out.flush = flush(hooks.status_flush, jobs).await;
            }
            return Ok(out);
        }
        if self.lookup_before_intent(&key, &resolution)
            && let Some(found) = self
                .lookup(resource, &JobType::Provision, &key, &Attempt::default())
                .await?
        {
            return Ok(self
                .record_recovered(jobs, desired, found, &key, hooks)
                .await);
        }
        // A launch the provider would refuse unsent gets no intent (no write, nothing for
        // another process to look up).
        if let Some(retry_after) = self.launch_refused(resource, &JobType::Provision) {
            return Ok(self.provision_rate_limited(Action::Trigger, retry_after));
        }
        // Write-ahead: the launch happens only once the intent is durable.
        let attempt = self
            .persist_intent(
                store,
                &resolution,
                resource,
                &key,
                &JobType::Provision,
                desired,
            )
            .await?;

        let call_ctx = attempt.context(ctx, &key);
        let result = match self.provider.trigger_provision(resource, &call_ctx).await {
            Ok(result) => result,
            Err(e) => {
                let e = e.redacted(&ctx.redactor());
                return match self
                    .launch_failed(store, resource, &JobType::Provision, &key, &attempt, e)
                    .await
                {
                    FailedLaunch::RateLimited(retry_after) => {
                        Ok(self.provision_rate_limited(Action::Trigger, retry_after))
                    }
                    FailedLaunch::Found(found) => Ok(self
                        .record_recovered(jobs, desired, found, &key, hooks)
                        .await),
                    FailedLaunch::Failed(certainty, source) => {
                        Err(LifecycleError::TriggerProvision {
                            key,
                            certainty,
                            source,
                        })
                    }
                };
            }
        };
        if result.job_id.trim().is_empty() {
            self.observe.launch(&JobType::Provision, Launch::Unknown);
            return Err(self.empty_job_id(JobType::Provision, key));
        }
        self.observe.launch(&JobType::Provision, Launch::Made);
        self.resolve(&key);
        if let Some(store) = store {
            store.resolve(key.as_str());
        }
        let mut job = JobStatus::new(
            result.job_id.clone(),
            JobType::Provision,
            result.initial_state.clone(),
            self.clock.now(),
        );
        job.message = result.message;
        job.config_version = desired.to_owned();
        let failed_at_launch = (job.state == JobState::Failed).then(|| job.message.clone());
        append_job(jobs, job, self.policy.max_history);
        tracing::info!(job_id = %result.job_id, key = %key, "provision job launched");
        if let (Some(message), Some(cb)) = (failed_at_launch, hooks.on_failed.as_mut()) {
            cb(&message);
        }
        let mut out = ProvisionOutcome::new(
            Action::Trigger,
            ProvisionStep::Launched {
                job_id: result.job_id,
            },
            Outcome::RequeueAfter(self.policy.poll_requeue()),
        );
        out.history_changed = true;
        out.flush = flush(hooks.status_flush, jobs).await;
        Ok(out)
    }

    /// Go's `PollJob`: ask the provider for the status of `latest` and record it.
    ///
    /// Never fails: provider errors end up in the job's message (and not-found makes the job `Failed`
    /// under the default policy). After `Failed`/`Canceled` the outcome requeues after the remaining
    /// backoff (policy `requeue_after_failed_poll`).
    pub async fn poll_provision_job(
        &self,
        resource: &ResourceView,
        jobs: &mut [JobStatus],
        desired: &str,
        latest: JobStatus,
        hooks: &mut ProvisionHooks<'_>,
    ) -> ProvisionOutcome {
        self.poll_provision(resource, jobs, desired, latest, hooks, &Redactor::default())
            .await
    }

    /// [`poll_provision_job`](Self::poll_provision_job) with the launch context's secrets kept
    /// out of the messages it records and logs (a backend may echo them in a failure).
    async fn poll_provision(
        &self,
        resource: &ResourceView,
        jobs: &mut [JobStatus],
        desired: &str,
        latest: JobStatus,
        hooks: &mut ProvisionHooks<'_>,
        redactor: &Redactor,
    ) -> ProvisionOutcome {
        let job_id = latest.job_id.clone();
        let timer = self.observe.poll_started(self.clock.as_ref());
        let polled = self.provider.provision_status(resource, &job_id).await;
        self.observe
            .polled(&JobType::Provision, timer, self.clock.as_ref());
        let polled = redact_polled(polled, redactor);
        let status = match polled {
            Ok(status) => status,
            Err(e) if e.is_not_found() && self.policy.purged_jobs_fail => {
                let mut job = latest;
                job.state = JobState::Failed;
                job.message = format!(
                    "job {job_id} no longer exists in provider {}: {}",
                    self.provider.name(),
                    crate::ErrorChain(&e)
                );
                let message = job.message.clone();
                update_job(jobs, &job);
                tracing::warn!(job_id = %job_id, "provision job purged by the provider; marked Failed");
                if let Some(cb) = hooks.on_failed.as_mut() {
                    cb(&message);
                }
                let mut out = ProvisionOutcome::new(
                    Action::Poll,
                    ProvisionStep::PurgedJobFailed { job_id },
                    self.after_unsuccessful(jobs, desired),
                );
                out.history_changed = true;
                return out;
            }
            Err(e) if e.retry_after().is_some() => {
                let retry_after = e.retry_after().unwrap_or_default();
                tracing::info!(job_id = %job_id, ?retry_after, error = %e, "provision job poll rate-limited; status untouched");
                return self.provision_rate_limited(Action::Poll, retry_after);
            }
            Err(e) => {
                tracing::warn!(job_id = %job_id, error = %e, "provision job poll failed");
                let mut job = latest;
                job.message = self.poll_error_message("Failed to get job status", &e);
                let changed = update_job(jobs, &job);
                let mut out = ProvisionOutcome::new(
                    Action::Poll,
                    ProvisionStep::StatusReadFailed { job_id },
                    Outcome::RequeueAfter(self.policy.poll_requeue()),
                );
                out.history_changed = changed;
                return out;
            }
        };

        let mut changed = false;
        if status.state != latest.state || status.message != latest.message {
            let mut job = latest;
            job.state = status.state.clone();
            job.message = status.message_with_details();
            changed = update_job(jobs, &job);
            if status.state == JobState::Failed
                && let Some(cb) = hooks.on_failed.as_mut()
            {
                cb(&job.message);
            }
        }
        let step = ProvisionStep::Polled {
            job_id,
            state: status.state.clone(),
        };
        let outcome = if !status.state.is_terminal() {
            Outcome::RequeueAfter(self.policy.poll_requeue())
        } else if status.state.is_successful() {
            if let Some(cb) = hooks.on_success.as_mut() {
                cb(&status);
            }
            Outcome::Done
        } else {
            self.after_unsuccessful(jobs, desired)
        };
        let mut out = ProvisionOutcome::new(Action::Poll, step, outcome);
        out.history_changed = changed;
        out
    }

    /// The requeue after a poll saw a job end unsuccessfully: the remaining backoff when the next
    /// evaluation will be Backoff, `min_requeue` when it will be Trigger.
    fn after_unsuccessful(&self, jobs: &[JobStatus], desired: &str) -> Outcome {
        if !self.policy.requeue_after_failed_poll {
            return Outcome::Done;
        }
        let eval = evaluate_action(jobs, desired, self.policy.legacy_jobs);
        match eval.action {
            Action::Backoff => {
                let backoff = compute_backoff_from_jobs(jobs, desired, self.policy.backoff);
                let at = eval.latest.and_then(|j| j.timestamp);
                match backoff_remaining(backoff, at, self.clock.now()) {
                    Some(wait) => Outcome::RequeueAfter(self.policy.backoff_requeue(wait)),
                    None => Outcome::RequeueAfter(self.policy.min_requeue),
                }
            }
            Action::Skip => Outcome::Done,
            Action::Poll => Outcome::RequeueAfter(self.policy.poll_requeue()),
            Action::Trigger | Action::Requeue => Outcome::RequeueAfter(self.policy.min_requeue),
        }
    }

    /// Records a job found by idempotency key (instead of launching a second one).
    async fn record_recovered(
        &self,
        jobs: &mut Vec<JobStatus>,
        desired: &str,
        found: FoundJob,
        key: &IdempotencyKey,
        hooks: &mut ProvisionHooks<'_>,
    ) -> ProvisionOutcome {
        self.observe.launch(&JobType::Provision, Launch::Recovered);
        self.resolve(key);
        if let Some(store) = hooks.intents {
            store.resolve(key.as_str());
        }
        let job_id = found.job_id.clone();
        let mut out = ProvisionOutcome::new(
            Action::Trigger,
            ProvisionStep::Recovered {
                job_id: job_id.clone(),
            },
            Outcome::RequeueAfter(self.policy.poll_requeue()),
        );
        if find_job_by_id(jobs, &job_id).is_some() {
            return out;
        }
        let mut job = JobStatus::new(
            job_id.clone(),
            JobType::Provision,
            found.state,
            self.clock.now(),
        );
        job.message = if found.message.is_empty() {
            format!("Provisioning job recovered by idempotency key {key}")
        } else {
            found.message
        };
        job.config_version = desired.to_owned();
        append_job(jobs, job, self.policy.max_history);
        tracing::info!(job_id = %job_id, key = %key, "recovered provision job launched by an earlier attempt");
        out.history_changed = true;
        out.flush = flush(hooks.status_flush, jobs).await;
        out
    }

    async fn cache_is_stale(
        &self,
        cached_latest: Option<&JobStatus>,
        hooks: &ProvisionHooks<'_>,
    ) -> bool {
        let Some(check) = hooks.stale_check else {
            return false;
        };
        match check.read_fresh_jobs().await {
            Ok(fresh) => {
                let stale = cache_is_stale(
                    cached_latest,
                    &fresh,
                    self.policy.stale_check_newer_terminal_job,
                );
                if stale {
                    tracing::info!("skipping provision trigger: newer job found via API server");
                }
                stale
            }
            Err(e) => {
                tracing::warn!(error = %crate::ErrorChain(e.as_ref()), fail_open = self.policy.stale_check_fail_open, "stale-cache check failed");
                !self.policy.stale_check_fail_open
            }
        }
    }

    fn stale_outcome(&self) -> ProvisionOutcome {
        ProvisionOutcome::new(
            Action::Requeue,
            ProvisionStep::StaleCache,
            Outcome::RequeueAfter(self.policy.poll_requeue()),
        )
    }
}
