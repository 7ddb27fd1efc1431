//! Kubernetes Events for job milestones, published through kube-runtime's
//! `Recorder` ([`kube::runtime::events::Recorder`]).
//!
//! | milestone | type | reason | action |
//! |---|---|---|---|
//! | provision job launched | Normal | `ProvisionJobTriggered` | `Provision` |
//! | provision job succeeded | Normal | `ProvisionJobSucceeded` | `Provision` |
//! | provision job failed | Warning | `ProvisionJobFailed` | `Provision` |
//! | deprovision job launched | Normal | `DeprovisionJobTriggered` | `Deprovision` |
//! | deprovision job failed | Warning | `DeprovisionJobFailed` | `Deprovision` |
//! | deprovisioning finished, finalizer removed | Normal | `Deprovisioned` | `Deprovision` |
//!
//! Publishing is best effort: a failure is logged as a warning and never fails the reconcile.
//! RBAC: `create` and `patch` on `events.k8s.io/events`.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};
use tracing::warn;

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
}

impl JobEvent {
    /// The Event this milestone publishes.
    #[must_use]
    pub fn to_event(&self) -> Event {
        let (type_, reason, action, note) = match self {
            Self::ProvisionTriggered { job_id } => (
                EventType::Normal,
                "ProvisionJobTriggered",
                "Provision",
                format!("provision job {job_id} launched"),
            ),
            Self::ProvisionSucceeded { job_id } => (
                EventType::Normal,
                "ProvisionJobSucceeded",
                "Provision",
                format!("provision job {job_id} succeeded"),
            ),
            Self::ProvisionFailed { job_id, message } => (
                EventType::Warning,
                "ProvisionJobFailed",
                "Provision",
                format!("provision job {job_id} failed: {message}"),
            ),
            Self::DeprovisionTriggered { job_id } => (
                EventType::Normal,
                "DeprovisionJobTriggered",
                "Deprovision",
                format!("deprovision job {job_id} launched"),
            ),
            Self::DeprovisionFailed { job_id, message } => (
                EventType::Warning,
                "DeprovisionJobFailed",
                "Deprovision",
                format!("deprovision job {job_id} failed: {message}"),
            ),
            Self::Deprovisioned => (
                EventType::Normal,
                "Deprovisioned",
                "Deprovision",
                "deprovisioning finished; removing the finalizer".to_owned(),
            ),
        };
        Event {
            type_,
            reason: reason.to_owned(),
            note: Some(truncate(note, 1024)),
            action: action.to_owned(),
            secondary: None,
        }
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// Publishes [`JobEvent`]s when a recorder is configured; a no-op otherwise.
#[derive(Clone, Default)]
pub struct EventPublisher {
    recorder: Option<Recorder>,
}

impl std::fmt::Debug for EventPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPublisher")
            .field("enabled", &self.recorder.is_some())
            .finish()
    }
}

impl EventPublisher {
    /// Publishes through `recorder`.
    #[must_use]
    pub fn new(recorder: Recorder) -> Self {
        Self {
            recorder: Some(recorder),
        }
    }

    /// Publishes nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self { recorder: None }
    }

    /// Whether events are published.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.recorder.is_some()
    }

    /// Publishes `event` for `regarding`; logs and swallows errors.
    pub async fn publish(&self, event: &JobEvent, regarding: &ObjectReference) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        if let Err(error) = recorder.publish(&event.to_event(), regarding).await {
            warn!(%error, reason = %event.to_event().reason, "failed to publish Kubernetes event");
        }
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
}
