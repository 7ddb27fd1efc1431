//! Kubernetes Events for job milestones, published through provkit-kube's
//! [`EventRecorder`] (kube-runtime's `Recorder` on the wire, with a bounded cache).
//!
//! | milestone | type | reason | action |
//! |---|---|---|---|
//! | provision job launched | Normal | `ProvisionJobTriggered` | `Provision/<job id>` |
//! | provision job succeeded | Normal | `ProvisionJobSucceeded` | `Provision/<job id>` |
//! | provision job failed | Warning | `ProvisionJobFailed` | `Provision/<job id>` |
//! | deprovision job launched | Normal | `DeprovisionJobTriggered` | `Deprovision/<job id>` |
//! | deprovision job failed | Warning | `DeprovisionJobFailed` | `Deprovision/<job id>` |
//! | deprovisioning finished, finalizer removed | Normal | `Deprovisioned` | `Deprovision` |
//! | a launch is blocked: the lookup by idempotency key cannot prove the pending attempt's job absent (page cap, refused filter, errors), or the launch intent cannot be persisted (not while the lookup only waits for a launch window to close: that wait shows on the `LaunchBlocked` condition alone, reason `IdempotencyLookupDeferred`, [`ReconcileError::deferral`](crate::ReconcileError::deferral)) | Warning | `LaunchBlocked` | `<Provision or Deprovision>/<fingerprint>` |
//! | a launch failed (nothing recorded) | Warning | `LaunchFailed` | `<Provision or Deprovision>/<fingerprint>` |
//!
//! # One Event per job, one series per repetition
//! The [`EventRecorder`] (like kube-runtime's `Recorder`) keys an Event series on type, reason,
//! **action**, reporting controller and instance, regarding and related object — not on the
//! note. A second publication with the same key within its TTL (six minutes by default,
//! [`EventPublisher::with_ttl`]) does not create an Event: it patches the first one's
//! `series.count` and keeps the first one's note. With a constant action, job 2's
//! launch would show up as job 1's Event with count 2. The job id therefore goes into the
//! action: two jobs are two Events with their own notes, while the same milestone of the same
//! job published again (a repeated identical occurrence) stays one series.
//!
//! # One Event per distinct error, one series step per failed reconcile
//! `LaunchBlocked` and `LaunchFailed` are published once per failed reconcile, that is once
//! per step of the per-object error backoff ([`crate::ErrorBackoffConfig`]). Their action ends
//! in a fingerprint of the note, so a different error is a new Event, while the same error
//! repeating only bumps its Event's `series.count` — about a dozen writes per object in an
//! hour-long outage at the default backoff, not one per requeue. The note is the error chain,
//! which holds no request ids, timestamps or retry counts.
//!
//! Publishing is best effort: a failure is logged as a warning (with the API server's answer,
//! see [`crate::ErrorChain`]) and never fails the reconcile. A series patch answered 404 (the
//! Event was deleted or expired on the server) creates a new Event.
//! RBAC: `create` and `patch` on `events.k8s.io/events`.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Reporter};
use provkit_core::{
    JobState, JobStatus, JobType, find_latest_job_by_type, find_latest_job_by_type_and_target,
};
use provkit_lifecycle::{Lifecycle, LifecycleError};
use tracing::warn;

use crate::error_chain::ErrorChain;
use crate::recorder::EventRecorder;

/// A job milestone worth an Event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobEvent {
    /// A provision job was launched.
    ProvisionTriggered {
        /// Provider job id.
        job_id: String,
    },
    /// A provision job succeeded.
    ProvisionSucceeded {
        /// Provider job id.
        job_id: String,
    },
    /// A provision job failed (or was canceled).
    ProvisionFailed {
        /// Provider job id.
        job_id: String,
        /// The job's message.
        message: String,
    },
    /// A deprovision job was launched.
    DeprovisionTriggered {
        /// Provider job id.
        job_id: String,
    },
    /// A deprovision job failed.
    DeprovisionFailed {
        /// Provider job id.
        job_id: String,
        /// The job's message.
        message: String,
    },
    /// Deprovisioning finished; the finalizer is being removed.
    Deprovisioned,
    /// A launch is blocked: the lookup by idempotency key could not prove that the pending
    /// attempt's job does not exist, or the launch intent could not be persisted. Nothing was
    /// launched.
    LaunchBlocked {
        /// The job type of the blocked launch.
        job_type: JobType,
        /// The error chain.
        message: String,
    },
    /// A launch failed; nothing was recorded.
    LaunchFailed {
        /// The job type of the failed launch.
        job_type: JobType,
        /// The error chain.
        message: String,
    },
}

impl JobEvent {
    /// The Event this milestone publishes.
    #[must_use]
    pub fn to_event(&self) -> Event {
        let (type_, reason, action, note) = match self {
            Self::ProvisionTriggered { job_id } => (
                EventType::Normal,
                "ProvisionJobTriggered",
                job_action("Provision", job_id),
                format!("provision job {job_id} launched"),
            ),
            Self::ProvisionSucceeded { job_id } => (
                EventType::Normal,
                "ProvisionJobSucceeded",
                job_action("Provision", job_id),
                format!("provision job {job_id} succeeded"),
            ),
            Self::ProvisionFailed { job_id, message } => (
                EventType::Warning,
                "ProvisionJobFailed",
                job_action("Provision", job_id),
                failure_note("provision", job_id, message),
            ),
            Self::DeprovisionTriggered { job_id } => (
                EventType::Normal,
                "DeprovisionJobTriggered",
                job_action("Deprovision", job_id),
                format!("deprovision job {job_id} launched"),
            ),
            Self::DeprovisionFailed { job_id, message } => (
                EventType::Warning,
                "DeprovisionJobFailed",
                job_action("Deprovision", job_id),
                failure_note("deprovision", job_id, message),
            ),
            Self::Deprovisioned => (
                EventType::Normal,
                "Deprovisioned",
                "Deprovision".to_owned(),
                "deprovisioning finished; removing the finalizer".to_owned(),
            ),
            Self::LaunchBlocked { job_type, message } => (
                EventType::Warning,
                "LaunchBlocked",
                error_action(job_type, message),
                message.clone(),
            ),
            Self::LaunchFailed { job_type, message } => (
                EventType::Warning,
                "LaunchFailed",
                error_action(job_type, message),
                message.clone(),
            ),
        };
        Event {
            type_,
            reason: reason.to_owned(),
            note: Some(truncate(note, 1024)),
            action,
            secondary: None,
        }
    }

    /// The provider job id this milestone is about (`None` for [`JobEvent::Deprovisioned`]).
    #[must_use]
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Self::ProvisionTriggered { job_id }
            | Self::ProvisionSucceeded { job_id }
            | Self::ProvisionFailed { job_id, .. }
            | Self::DeprovisionTriggered { job_id }
            | Self::DeprovisionFailed { job_id, .. } => Some(job_id),
            Self::Deprovisioned | Self::LaunchBlocked { .. } | Self::LaunchFailed { .. } => None,
        }
    }

    /// The Event of a reconcile that failed with `error`: [`JobEvent::LaunchBlocked`] for a
    /// lookup that could not prove absence or an intent that could not be persisted,
    /// [`JobEvent::LaunchFailed`] for the rest. The message is the error chain without
    /// request-scoped details ([`Lifecycle::error_status_text`]).
    #[must_use]
    pub fn for_lifecycle_error(error: &LifecycleError, lifecycle: &Lifecycle) -> Self {
        let message = lifecycle.error_status_text(error);
        match error {
            LifecycleError::IdempotencyLookup { job_type, .. }
            | LifecycleError::IntentWrite { job_type, .. } => Self::LaunchBlocked {
                job_type: job_type.clone(),
                message,
            },
            LifecycleError::TriggerDeprovision { .. } => Self::LaunchFailed {
                job_type: JobType::Deprovision,
                message,
            },
            LifecycleError::EmptyJobId { job_type, .. } => Self::LaunchFailed {
                job_type: job_type.clone(),
                message,
            },
            _ => Self::LaunchFailed {
                job_type: JobType::Provision,
                message,
            },
        }
    }
}

/// `<Provision|Deprovision>/<16 hex digits of the message's hash>`: one series per distinct
/// error (std's `DefaultHasher`, stable within a process, which is the recorder's cache).
fn error_action(job_type: &JobType, message: &str) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    message.hash(&mut hasher);
    let verb = match job_type {
        JobType::Deprovision => "Deprovision",
        _ => "Provision",
    };
    format!("{verb}/{:016x}", hasher.finish())
}

/// `<verb>/<job id>`, at most 128 bytes (the API server's limit on `action`).
fn job_action(verb: &str, job_id: &str) -> String {
    truncate(format!("{verb}/{job_id}"), 128)
}

/// `"<kind> job <id> failed: <detail>"`, without repeating the word "failed" when the job's
/// message starts with the provider's state (AAP's `"failed: <explanation>"`).
fn failure_note(kind: &str, job_id: &str, message: &str) -> String {
    let detail = strip_failed_prefix(message.trim());
    if detail.is_empty() {
        format!("{kind} job {job_id} failed")
    } else {
        format!("{kind} job {job_id} failed: {detail}")
    }
}

fn strip_failed_prefix(message: &str) -> &str {
    let Some(head) = message.get(..6) else {
        return message;
    };
    if !head.eq_ignore_ascii_case("failed") {
        return message;
    }
    let rest = &message[6..];
    if rest.is_empty() {
        ""
    } else if let Some(after) = rest.strip_prefix(':') {
        after.trim_start()
    } else {
        message
    }
}

/// `s` cut to `max` bytes (Kubernetes bounds Event fields in bytes).
fn truncate(mut s: String, max: usize) -> String {
    provkit_core::text::truncate_to_bytes(&mut s, max);
    s
}

/// Publishes [`JobEvent`]s through an [`EventRecorder`] when enabled; a no-op otherwise.
///
/// ```no_run
/// use kube::runtime::events::Reporter;
/// use provkit_kube::EventPublisher;
///
/// # fn demo(client: kube::Client) {
/// let events = EventPublisher::new(
///     client,
///     Reporter { controller: "my-operator".into(), instance: std::env::var("POD_NAME").ok() },
/// )
/// // The defaults: a repeat within 6 minutes is a series step; at most 16,384 series remembered.
/// .with_ttl(provkit_kube::recorder::DEFAULT_EVENT_TTL)
/// .with_capacity(provkit_kube::recorder::DEFAULT_EVENT_CAPACITY);
/// # let _ = events;
/// # }
/// ```
#[derive(Clone, Default)]
pub struct EventPublisher {
    recorder: Option<EventRecorder>,
}

impl std::fmt::Debug for EventPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPublisher")
            .field("recorder", &self.recorder)
            .finish()
    }
}

impl From<EventRecorder> for EventPublisher {
    fn from(recorder: EventRecorder) -> Self {
        Self {
            recorder: Some(recorder),
        }
    }
}

impl EventPublisher {
    /// Publishes through `client` as `reporter`, with an [`EventRecorder`]'s defaults (series
    /// TTL 6 minutes, 16,384 series remembered).
    #[must_use]
    pub fn new(client: Client, reporter: Reporter) -> Self {
        EventRecorder::new(client, reporter).into()
    }

    /// Publishes nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self { recorder: None }
    }

    /// How long a published Event's series is continued by a repeat
    /// ([`EventRecorder::with_ttl`]); no effect when disabled. Starts an empty cache.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.recorder = self.recorder.map(|r| r.with_ttl(ttl));
        self
    }

    /// How many series are remembered at most ([`EventRecorder::with_capacity`]); no effect
    /// when disabled. Starts an empty cache.
    #[must_use]
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.recorder = self.recorder.map(|r| r.with_capacity(capacity));
        self
    }

    /// Whether events are published.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.recorder.is_some()
    }

    /// The recorder (`None` when disabled).
    #[must_use]
    pub fn recorder(&self) -> Option<&EventRecorder> {
        self.recorder.as_ref()
    }

    /// Publishes `event` for `regarding`; logs and swallows errors.
    pub async fn publish(&self, event: &JobEvent, regarding: &ObjectReference) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let ev = event.to_event();
        if let Err(error) = recorder.publish(&ev, regarding).await {
            warn!(
                error = %ErrorChain(&error),
                reason = %ev.reason,
                action = %ev.action,
                "failed to publish Kubernetes event"
            );
        }
    }
}

/// The latest deprovision job (of `target`, or of any target when `None`) in `after` if it is
/// Failed/Canceled and was not already so in `before` (a failure observed in this reconcile).
/// The message of the latest deprovision job (of `target`, on the multi-target path) when it
/// failed or was canceled: what `on_deprovision_failed` is told on both paths.
pub(crate) fn latest_failed_deprovision(
    jobs: &[JobStatus],
    target: Option<&str>,
) -> Option<String> {
    match target {
        None => find_latest_job_by_type(jobs, &JobType::Deprovision),
        Some(t) => find_latest_job_by_type_and_target(jobs, &JobType::Deprovision, t),
    }
    .filter(|j| matches!(j.state, JobState::Failed | JobState::Canceled))
    .map(|j| j.message.clone())
}

pub(crate) fn newly_failed_deprovision_job(
    before: &[JobStatus],
    after: &[JobStatus],
    target: Option<&str>,
) -> Option<JobStatus> {
    let failed = |j: &JobStatus| matches!(j.state, JobState::Failed | JobState::Canceled);
    let now = match target {
        None => find_latest_job_by_type(after, &JobType::Deprovision),
        Some(t) => find_latest_job_by_type_and_target(after, &JobType::Deprovision, t),
    }?;
    if !failed(now) {
        return None;
    }
    let was = before
        .iter()
        .find(|j| j.job_id == now.job_id && j.job_type == JobType::Deprovision);
    match was {
        Some(was) if failed(was) => None,
        _ => Some(now.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_table() {
        let cases = [
            (
                JobEvent::ProvisionTriggered { job_id: "1".into() },
                EventType::Normal,
                "ProvisionJobTriggered",
            ),
            (
                JobEvent::ProvisionSucceeded { job_id: "1".into() },
                EventType::Normal,
                "ProvisionJobSucceeded",
            ),
            (
                JobEvent::ProvisionFailed {
                    job_id: "1".into(),
                    message: "boom".into(),
                },
                EventType::Warning,
                "ProvisionJobFailed",
            ),
            (
                JobEvent::DeprovisionTriggered { job_id: "2".into() },
                EventType::Normal,
                "DeprovisionJobTriggered",
            ),
            (
                JobEvent::DeprovisionFailed {
                    job_id: "2".into(),
                    message: "x".into(),
                },
                EventType::Warning,
                "DeprovisionJobFailed",
            ),
            (JobEvent::Deprovisioned, EventType::Normal, "Deprovisioned"),
        ];
        for (ev, ty, reason) in cases {
            let e = ev.to_event();
            assert_eq!(e.type_, ty);
            assert_eq!(e.reason, reason);
            assert!(e.reason.len() <= 128 && e.action.len() <= 128);
        }
        let long = JobEvent::ProvisionFailed {
            job_id: "1".into(),
            message: "é".repeat(2000),
        };
        assert!(long.to_event().note.unwrap_or_default().len() <= 1024);
    }

    #[test]
    fn each_job_is_its_own_series_key() {
        let a = JobEvent::ProvisionTriggered { job_id: "1".into() }.to_event();
        let b = JobEvent::ProvisionTriggered { job_id: "2".into() }.to_event();
        assert_eq!(
            (a.action.as_str(), b.action.as_str()),
            ("Provision/1", "Provision/2")
        );
        let long = JobEvent::DeprovisionTriggered {
            job_id: "9".repeat(300),
        };
        assert_eq!(long.to_event().action.len(), 128);
        assert_eq!(JobEvent::Deprovisioned.job_id(), None);
    }

    #[test]
    fn error_events_are_one_series_per_distinct_error() {
        let blocked = |m: &str| {
            JobEvent::LaunchBlocked {
                job_type: JobType::Provision,
                message: m.into(),
            }
            .to_event()
        };
        let (a, again, b) = (blocked("x"), blocked("x"), blocked("y"));
        assert_eq!(
            (a.type_, a.reason.as_str()),
            (EventType::Warning, "LaunchBlocked")
        );
        assert_eq!(a.action, again.action);
        assert_ne!(a.action, b.action);
        assert!(a.action.starts_with("Provision/") && a.action.len() <= 128);
        assert_eq!(a.note.as_deref(), Some("x"));
        let failed = JobEvent::LaunchFailed {
            job_type: JobType::Deprovision,
            message: "x".into(),
        }
        .to_event();
        assert_eq!(failed.reason, "LaunchFailed");
        assert!(
            failed.action.starts_with("Deprovision/"),
            "{}",
            failed.action
        );
    }

    #[test]
    fn failure_notes_do_not_repeat_failed() {
        let note = |message: &str| {
            JobEvent::ProvisionFailed {
                job_id: "1".into(),
                message: message.into(),
            }
            .to_event()
            .note
            .unwrap_or_default()
        };
        let cases = [
            (
                "failed: playbook failed",
                "provision job 1 failed: playbook failed",
            ),
            ("Failed:  boom", "provision job 1 failed: boom"),
            ("failed", "provision job 1 failed"),
            ("", "provision job 1 failed"),
            ("canceled", "provision job 1 failed: canceled"),
            ("failedover: x", "provision job 1 failed: failedover: x"),
            ("é", "provision job 1 failed: é"),
        ];
        for (message, want) in cases {
            assert_eq!(note(message), want, "{message:?}");
        }
    }
}
