//! Shared pieces of the exactly-once launch: lookups by idempotency key and the status flush.

use chrono::{DateTime, Utc};
use provkit_core::{JobStatus, JobType, append_job, find_job_by_id};

use super::Lifecycle;
use super::observe::Launch;
use crate::engine_error::LifecycleError;
use crate::error::{LaunchCertainty, ProviderError};
use crate::hooks::StatusFlush;
use crate::idempotency::{FoundJob, IdempotencyKey, IdempotencySupport};
use crate::intent::{IntentStore, LaunchIntent};
use crate::outcome::FlushReport;
use crate::policy::LookupBeforeLaunch;
use crate::resource::ResourceView;

impl Lifecycle {
    /// Whether the policy asks for a lookup by key before a launch, given whether this
    /// attempt's last outcome is unknown (`after_unknown`).
    fn lookup_asked(&self, after_unknown: bool) -> bool {
        let support = self.provider.idempotency_support();
        if support == IdempotencySupport::Unsupported {
            return false;
        }
        match self.policy.lookup_before_launch {
            LookupBeforeLaunch::Always => true,
            LookupBeforeLaunch::AfterUnknownOutcome => after_unknown,
            LookupBeforeLaunch::ProviderDefault => {
                after_unknown || support == IdempotencySupport::CheapLookup
            }
        }
    }

    /// How long the provider will refuse a launch of `job_type` unsent
    /// ([`launch_refused_for`](crate::ProvisioningProvider::launch_refused_for)); a refusal is
    /// observed as a launch not made.
    pub(super) fn launch_refused(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
    ) -> Option<std::time::Duration> {
        let wait = self.provider.launch_refused_for(resource, job_type)?;
        tracing::info!(retry_after = ?wait, job_type = job_type.as_str(), "launch refused unsent by the provider; no intent written");
        self.observe
            .launch(job_type, super::observe::Launch::NotMade);
        Some(wait)
    }

    /// Whether to look the attempt up by key (without an intent window) before writing its
    /// intent and launching, once the pending intent was resolved. Without an intent store,
    /// the in-memory journal of unknown outcomes says whether the last outcome is unknown.
    /// With one, every launch this engine made had a durable intent written first, and a
    /// pending one was just resolved: the journal adds nothing (its lookup would read the
    /// template's jobs up to now, unbounded); only the policy `Always` and a cheap lookup
    /// still ask.
    pub(super) fn lookup_before_intent(
        &self,
        key: &IdempotencyKey,
        resolution: &Resolution,
    ) -> bool {
        match resolution {
            Resolution::NoStore => self.lookup_asked(self.journal.contains(key)),
            Resolution::Clear { reuse: Some(_) } | Resolution::Adopted { .. } => false,
            Resolution::Clear { reuse: None } => self.lookup_asked(false),
        }
    }

    /// Asks the provider for a job carrying `key`, created since `since` when known (by the
    /// attempt's marker, when its intent recorded one). `Unsupported` answers count as "none".
    ///
    /// A found job with an empty id is ignored (it cannot be recorded).
    pub(super) async fn lookup(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        attempt: &Attempt,
    ) -> Result<Option<FoundJob>, LifecycleError> {
        let answer = match (attempt.since, attempt.marker.as_deref()) {
            (Some(since), Some(marker)) => {
                self.provider
                    .find_job_by_marker(resource, job_type, key, since, marker)
                    .await
            }
            (since, _) => {
                self.provider
                    .find_job_by_idempotency_key_since(resource, job_type, key, since)
                    .await
            }
        };
        match answer {
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
        attempt: &Attempt,
    ) -> Option<FoundJob> {
        self.journal.insert(key.clone());
        if self.provider.idempotency_support() == IdempotencySupport::Unsupported {
            return None;
        }
        match self.lookup(resource, job_type, key, attempt).await {
            Ok(found) => found,
            // The provider defers the lookup until the launch's window has closed: expected.
            Err(e) if crate::find_retry_later(&e).is_some() => {
                tracing::debug!(error = %crate::ErrorChain(&e), key = %key, "lookup after a launch with unknown outcome deferred");
                None
            }
            Err(e) => {
                tracing::warn!(error = %crate::ErrorChain(&e), key = %key, "lookup after a launch with unknown outcome failed");
                None
            }
        }
    }

    /// After the launch of `key` (written under the intent `attempt`) failed with `e`
    /// (redacted), what provision and deprovision alike do: a launch certainly not made
    /// resolves its intent (a rate limit is retried after its wait); one with an unknown outcome
    /// is remembered and looked up once at once; the launch counter notes what is known.
    pub(super) async fn launch_failed(
        &self,
        store: Option<&dyn IntentStore>,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        attempt: &Attempt,
        e: ProviderError,
    ) -> FailedLaunch {
        if let Some(retry_after) = e.retry_after() {
            self.launch_not_made(store, key);
            self.observe.launch(job_type, Launch::NotMade);
            tracing::info!(retry_after = ?retry_after, job_type = ?job_type, "launch rate-limited");
            return FailedLaunch::RateLimited(retry_after);
        }
        let certainty = e.launch_certainty();
        if certainty == LaunchCertainty::NotMade {
            self.launch_not_made(store, key);
        }
        if certainty == LaunchCertainty::Unknown
            && let Some(found) = self
                .recover_after_unknown(resource, job_type, key, attempt)
                .await
        {
            return FailedLaunch::Found(found);
        }
        self.observe
            .launch(job_type, Launch::of_certainty(certainty));
        FailedLaunch::Failed(certainty, e)
    }

    pub(super) fn resolve(&self, key: &IdempotencyKey) {
        self.journal.remove(key);
    }

    /// The provider is certain that the launch of `key` made no job (refused, rate-limited, or
    /// never sent). Every earlier attempt of the object was resolved before this one's intent
    /// was written, so nothing is left to look up: the intent is resolved, and the reconcile's
    /// status write clears it. Without this, the intent stayed pending until the next launch
    /// replaced it, and a process that inherited the object (after a crash or a hand-over) had
    /// to read AAP's job list to prove an absence that was known when the launch failed.
    pub(super) fn launch_not_made(&self, store: Option<&dyn IntentStore>, key: &IdempotencyKey) {
        if let Some(store) = store {
            store.resolve(key.as_str());
        }
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

/// How a failed launch ends (see [`Lifecycle::launch_failed`]).
pub(super) enum FailedLaunch {
    /// Rate limited: nothing was made; the step is retried after this wait.
    RateLimited(std::time::Duration),
    /// The outcome was unknown, and the lookup that followed found the job.
    Found(FoundJob),
    /// The launch failed, with what is known of its outcome.
    Failed(LaunchCertainty, ProviderError),
}

/// What resolving the pending launch intent found (see [`Lifecycle::resolve_pending_intent`]).
#[derive(Debug)]
pub(super) enum Resolution {
    /// No intent store: the engine's in-memory journal decides about lookups.
    NoStore,
    /// Nothing pending, or the pending intent's job provably does not exist. `reuse` is the
    /// pending intent's time when it is the attempt about to launch: its absence was just
    /// proven (no second lookup before the launch), and the launch still records a fresh intent
    /// first, so that every launch has an intent time of its own and a lookup's window can end
    /// a bounded time after it.
    Clear {
        /// `created_at` of the pending intent of this very attempt (proven absent).
        reuse: Option<DateTime<Utc>>,
    },
    /// The pending intent's job exists and was appended to the history (or already was).
    Adopted {
        /// The adopted job's id.
        job_id: String,
        /// Whether the history changed.
        changed: bool,
    },
}

impl Lifecycle {
    /// Resolves the pending launch intent, if any, before anything new is launched: looks its
    /// key up in the provider (jobs created since the intent's time), adopts the job when found,
    /// and otherwise marks the intent resolved (a new attempt's intent replaces it).
    ///
    /// # Errors
    /// [`LifecycleError::IdempotencyLookup`] when the provider cannot prove absence; nothing may
    /// be launched then.
    pub(super) async fn resolve_pending_intent(
        &self,
        resource: &ResourceView,
        jobs: &mut Vec<JobStatus>,
        store: Option<&dyn IntentStore>,
        key: &IdempotencyKey,
    ) -> Result<Resolution, LifecycleError> {
        let Some(store) = store else {
            return Ok(Resolution::NoStore);
        };
        let Some(pending) = store.pending() else {
            return Ok(Resolution::Clear { reuse: None });
        };
        let same_attempt = pending.idempotency_key == key.as_str();
        let pending_key = IdempotencyKey::new(pending.idempotency_key.clone());
        if self.provider.idempotency_support() == IdempotencySupport::Unsupported {
            // Nothing to look up: at-least-once, as documented.
            if !same_attempt {
                store.resolve(pending_key.as_str());
            }
            return Ok(Resolution::Clear {
                reuse: same_attempt.then_some(pending.created_at),
            });
        }
        let found = self
            .lookup(
                resource,
                &pending.job_type,
                &pending_key,
                &Attempt::of_intent(&pending),
            )
            .await?;
        let Some(found) = found else {
            tracing::info!(key = %pending_key, "pending launch intent has no job in the provider");
            if !same_attempt {
                store.resolve(pending_key.as_str());
            }
            return Ok(Resolution::Clear {
                reuse: same_attempt.then_some(pending.created_at),
            });
        };
        self.resolve(&pending_key);
        store.resolve(pending_key.as_str());
        let job_id = found.job_id.clone();
        let changed = self.append_found(jobs, &pending, found);
        tracing::info!(job_id = %job_id, key = %pending_key, "adopted the job of a pending launch intent");
        Ok(Resolution::Adopted { job_id, changed })
    }

    /// Appends a job found for `intent` (unless its id is already recorded).
    fn append_found(
        &self,
        jobs: &mut Vec<JobStatus>,
        intent: &LaunchIntent,
        found: FoundJob,
    ) -> bool {
        if find_job_by_id(jobs, &found.job_id).is_some() {
            return false;
        }
        let mut job = JobStatus::new(
            found.job_id,
            intent.job_type.clone(),
            found.state,
            self.clock.now(),
        );
        job.message = if found.message.is_empty() {
            format!(
                "{} job recovered by idempotency key {}",
                intent.job_type.as_str(),
                intent.idempotency_key
            )
        } else {
            found.message
        };
        job.config_version.clone_from(&intent.config_version);
        // The provider's flag is unknown for a recovered deprovision job: block (the safe choice).
        job.block_deletion_on_failure = intent.job_type == JobType::Deprovision;
        append_job(jobs, job, self.policy.max_history);
        true
    }

    /// Persists a fresh intent of the attempt about to launch (also when the same attempt's
    /// intent was pending and proven absent: a relaunch never reuses an older intent's time)
    /// with the provider's [`launch_marker`](crate::ProvisioningProvider::launch_marker), and
    /// returns what it recorded: its time, the start of any later lookup's window (and, with
    /// the provider's launch deadline, its end), and the marker the launch must carry.
    ///
    /// # Errors
    /// [`LifecycleError::IntentWrite`]: nothing may be launched.
    pub(super) async fn persist_intent(
        &self,
        store: Option<&dyn IntentStore>,
        resolution: &Resolution,
        resource: &ResourceView,
        key: &IdempotencyKey,
        job_type: &JobType,
        config_version: &str,
    ) -> Result<Attempt, LifecycleError> {
        let Some(store) = store else {
            return Ok(Attempt::default());
        };
        if let Resolution::Clear { reuse: Some(at) } = resolution {
            tracing::debug!(key = %key, previous = %at, "relaunch after a proven absence: fresh intent");
        }
        let mut intent = LaunchIntent::new(
            key.as_str(),
            job_type.clone(),
            config_version,
            self.clock.now(),
        )
        .with_target(&self.target);
        if let Some(marker) = self.provider.launch_marker(resource, job_type, key).await {
            intent = intent.with_marker(marker);
        }
        store
            .write(&intent)
            .await
            .map_err(|source| LifecycleError::IntentWrite {
                job_type: job_type.clone(),
                key: key.clone(),
                source,
            })?;
        Ok(Attempt::of_intent(&intent))
    }
}

/// What the durable intent of a launch attempt recorded, as the lookups of that attempt need
/// it (nothing without an intent store).
#[derive(Clone, Debug, Default)]
pub(super) struct Attempt {
    /// The intent's time.
    pub(super) since: Option<DateTime<Utc>>,
    /// The intent's marker (see [`LaunchIntent::marker`]).
    pub(super) marker: Option<String>,
}

impl Attempt {
    pub(super) fn of_intent(intent: &LaunchIntent) -> Self {
        Self {
            since: Some(intent.created_at),
            marker: (!intent.marker.is_empty()).then(|| intent.marker.clone()),
        }
    }

    /// The launch context of this attempt: `ctx` with the key, the intent time and the marker.
    pub(super) fn context(
        &self,
        ctx: &crate::LaunchContext,
        key: &IdempotencyKey,
    ) -> crate::LaunchContext {
        ctx.clone()
            .with_idempotency_key(key.clone())
            .with_attempt_started(self.since)
            .with_attempt_marker(self.marker.clone())
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
                error = %crate::ErrorChain(e.as_ref()),
                "failed to flush status after job trigger; end-of-reconcile update will retry"
            );
            FlushReport::Failed(crate::ErrorChain(e.as_ref()).to_string())
        }
    }
}

impl Lifecycle {
    /// The persisted text of a failed reconcile's error (the `LaunchBlocked` condition, an
    /// Event note): its cause chain, passed through the provider's
    /// [`error_status_text`](crate::ProvisioningProvider::error_status_text) so that request ids
    /// and other request-scoped details stay out, and the same error gives the same text.
    pub fn error_status_text(&self, error: &LifecycleError) -> String {
        let text = crate::error::ErrorChain(error).to_string();
        match error.provider_error() {
            Some(source) => self.provider.error_status_text(source, text),
            None => text,
        }
    }

    /// The job message of a failed poll: `"<what>: <error>"` through the provider's
    /// [`error_status_text`](crate::ProvisioningProvider::error_status_text), so a repeating
    /// poll error keeps the message byte-identical and causes no status write.
    pub(super) fn poll_error_message(&self, what: &str, error: &ProviderError) -> String {
        self.provider
            .error_status_text(error, format!("{what}: {}", crate::ErrorChain(error)))
    }
}
