//! The websocket's frames: the subscribe message and the typed server messages.
//!
//! Decoded by hand from a `serde_json::Value` because the server's messages share no tag: the
//! kind of a frame is told by which keys it has (`accept`, `groups_current`, `error`,
//! `unified_job_id`).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::types::{AapJobStatus, JobKind};

/// The groups this client subscribes to, as observed in the capture (AWX answers with
/// `groups_current: ["jobs-status_changed", "jobs-summary"]`).
const GROUP_JOBS: [&str; 2] = ["status_changed", "summary"];

/// The subscribe message sent after the server's `{"accept": true}`.
///
/// `xrftoken` must equal the `csrftoken` cookie sent with the HTTP upgrade (any value the client
/// chose); otherwise AWX answers `{"error": "access denied to channel"}` and joins nothing. Each
/// subscribe message replaces the previous set of groups.
///
/// ```
/// use provkit_aap::push::subscribe_message;
/// let sent: serde_json::Value = serde_json::from_str(&subscribe_message("X")).unwrap();
/// assert_eq!(
///     sent,
///     serde_json::json!({"groups": {"jobs": ["status_changed", "summary"]}, "xrftoken": "X"})
/// );
/// ```
pub fn subscribe_message(xrftoken: &str) -> String {
    json!({"groups": {"jobs": GROUP_JOBS}, "xrftoken": xrftoken}).to_string()
}

/// A frame that is not a JSON object.
#[derive(Debug, thiserror::Error)]
pub enum PushMessageError {
    /// The frame is not JSON.
    #[error("the websocket frame is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// The frame is JSON but not an object.
    #[error("the websocket frame is not a JSON object")]
    NotAnObject,
}

/// One `jobs-status_changed` message: a unified job's new status.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusChange {
    /// `unified_job_id` (jobs and workflow jobs share one id sequence).
    pub job_id: u64,
    /// `status`. AWX sends no `waiting` message.
    pub status: AapJobStatus,
    /// `type` (`job` / `workflow_job`), when known.
    pub kind: Option<JobKind>,
    /// `finished`: present on `successful`/`failed` and on the second of the two `canceled`
    /// messages; absent on `error` and on the first `canceled`.
    pub finished: Option<DateTime<Utc>>,
    /// `unified_job_template_id`.
    pub template_id: Option<u64>,
    /// `workflow_job_id`, for a workflow node's job.
    pub workflow_job_id: Option<u64>,
}

impl StatusChange {
    /// Whether the status is final (`successful`, `failed`, `error`, `canceled`): the moment to
    /// wake the object that waits for this job.
    pub fn is_final(&self) -> bool {
        self.status.is_terminal()
    }
}

/// A message from AWX's websocket.
#[derive(Clone, Debug, PartialEq)]
pub enum PushMessage {
    /// `{"accept": true, "user": 1}`: the upgrade was authenticated; send the subscription.
    Accepted {
        /// The authenticated user's id.
        user: Option<u64>,
    },
    /// The answer to a subscribe message.
    Subscribed {
        /// `groups_current`: every group the connection is in now.
        current: Vec<String>,
        /// `groups_joined`.
        joined: Vec<String>,
        /// `groups_left`.
        left: Vec<String>,
    },
    /// `{"error": "..."}`: a subscription was refused (`access denied to channel`).
    Denied(String),
    /// A `jobs-status_changed` message.
    StatusChanged(StatusChange),
    /// A `jobs-summary` message: the job's events are all processed.
    Summary {
        /// `unified_job_id`.
        job_id: u64,
        /// `final_counter`.
        final_counter: Option<u64>,
    },
    /// Any other object (kept for logging).
    Other(Value),
}

impl PushMessage {
    /// Decodes one text frame.
    pub fn parse(frame: &str) -> Result<Self, PushMessageError> {
        let value: Value = serde_json::from_str(frame).map_err(PushMessageError::NotJson)?;
        Self::from_value(value)
    }

    /// Decodes one JSON value.
    pub fn from_value(value: Value) -> Result<Self, PushMessageError> {
        let Value::Object(map) = &value else {
            return Err(PushMessageError::NotAnObject);
        };
        if map.get("accept").and_then(Value::as_bool) == Some(true) {
            return Ok(Self::Accepted {
                user: map.get("user").and_then(Value::as_u64),
            });
        }
        if let Some(error) = map.get("error").and_then(Value::as_str) {
            return Ok(Self::Denied(error.to_owned()));
        }
        if map.contains_key("groups_current") {
            let names = |key: &str| -> Vec<String> {
                map.get(key)
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            return Ok(Self::Subscribed {
                current: names("groups_current"),
                joined: names("groups_joined"),
                left: names("groups_left"),
            });
        }
        if let Some(job_id) = map.get("unified_job_id").and_then(Value::as_u64) {
            if let Some(status) = map.get("status").and_then(Value::as_str) {
                return Ok(Self::StatusChanged(StatusChange {
                    job_id,
                    status: AapJobStatus::parse(status),
                    kind: map
                        .get("type")
                        .and_then(Value::as_str)
                        .and_then(JobKind::from_type),
                    finished: map
                        .get("finished")
                        .and_then(Value::as_str)
                        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                        .map(|t| t.with_timezone(&Utc)),
                    template_id: map.get("unified_job_template_id").and_then(Value::as_u64),
                    workflow_job_id: map.get("workflow_job_id").and_then(Value::as_u64),
                }));
            }
            if map.contains_key("final_counter") {
                return Ok(Self::Summary {
                    job_id,
                    final_counter: map.get("final_counter").and_then(Value::as_u64),
                });
            }
        }
        Ok(Self::Other(value))
    }

    /// Whether this answer to a subscribe message puts the connection in `jobs-status_changed`.
    pub fn confirms_status_changes(&self) -> bool {
        matches!(self, Self::Subscribed { current, .. }
            if current.iter().any(|g| g == "jobs-status_changed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames of the capture in aap-observed.md §13.4, verbatim.
    const CAPTURE: [&str; 9] = [
        r#"{"unified_job_id": 111, "status": "pending", "type": "job", "group_name": "jobs", "unified_job_template_id": 7}"#,
        r#"{"unified_job_id": 111, "status": "running", "instance_group_name": "default", "type": "job", "group_name": "jobs", "unified_job_template_id": 7}"#,
        r#"{"group_name": "jobs", "unified_job_id": 111, "final_counter": 6}"#,
        r#"{"unified_job_id": 111, "status": "successful", "finished": "2026-12-01T19:24:26.874587Z", "type": "job", "group_name": "jobs", "unified_job_template_id": 7}"#,
        r#"{"unified_job_id": 112, "status": "pending", "type": "workflow_job", "group_name": "jobs", "unified_job_template_id": 9}"#,
        r#"{"unified_job_id": 112, "status": "running", "instance_group_name": null, "type": "workflow_job", "group_name": "jobs", "unified_job_template_id": 9}"#,
        r#"{"unified_job_id": 113, "status": "pending", "type": "job", "workflow_job_id": 112, "workflow_node_id": 25, "group_name": "jobs", "unified_job_template_id": 7}"#,
        r#"{"unified_job_id": 113, "status": "successful", "finished": "2026-12-01T19:24:31.150778Z", "type": "job", "workflow_job_id": 112, "workflow_node_id": 25, "group_name": "jobs", "unified_job_template_id": 7}"#,
        r#"{"unified_job_id": 112, "status": "successful", "finished": "2026-12-01T19:24:31.236810Z", "type": "workflow_job", "group_name": "jobs", "unified_job_template_id": 9}"#,
    ];

    fn change(frame: &str) -> StatusChange {
        match PushMessage::parse(frame) {
            Ok(PushMessage::StatusChanged(change)) => change,
            other => panic!("not a status change: {other:?}"),
        }
    }

    #[test]
    fn the_captured_status_changes_decode() {
        // (frame, id, status, kind, has `finished`, final)
        type Row = (usize, u64, &'static str, Option<JobKind>, bool, bool);
        let table: [Row; 8] = [
            (0, 111, "pending", Some(JobKind::Job), false, false),
            (1, 111, "running", Some(JobKind::Job), false, false),
            (3, 111, "successful", Some(JobKind::Job), true, true),
            (4, 112, "pending", Some(JobKind::WorkflowJob), false, false),
            (5, 112, "running", Some(JobKind::WorkflowJob), false, false),
            (6, 113, "pending", Some(JobKind::Job), false, false),
            (7, 113, "successful", Some(JobKind::Job), true, true),
            (8, 112, "successful", Some(JobKind::WorkflowJob), true, true),
        ];
        for (index, id, status, kind, finished, fin) in table {
            let got = change(CAPTURE[index]);
            assert_eq!(got.job_id, id, "frame {index}");
            assert_eq!(got.status.as_str(), status, "frame {index}");
            assert_eq!(got.kind, kind, "frame {index}");
            assert_eq!(got.finished.is_some(), finished, "frame {index}");
            assert_eq!(got.is_final(), fin, "frame {index}");
        }
        assert_eq!(change(CAPTURE[7]).workflow_job_id, Some(112));
        assert_eq!(change(CAPTURE[0]).template_id, Some(7));
    }

    #[test]
    fn the_summary_frame_is_not_a_status_change() {
        assert_eq!(
            PushMessage::parse(CAPTURE[2]).ok(),
            Some(PushMessage::Summary {
                job_id: 111,
                final_counter: Some(6)
            })
        );
    }

    #[test]
    fn handshake_frames_decode() {
        assert_eq!(
            PushMessage::parse(r#"{"accept": true, "user": 1}"#).ok(),
            Some(PushMessage::Accepted { user: Some(1) })
        );
        let joined = PushMessage::parse(
            r#"{"groups_current": ["jobs-status_changed", "jobs-summary"], "groups_left": [], "groups_joined": ["jobs-status_changed", "jobs-summary"]}"#,
        )
        .ok();
        assert!(
            joined
                .as_ref()
                .is_some_and(PushMessage::confirms_status_changes)
        );
        let denied = PushMessage::parse(r#"{"error": "access denied to channel"}"#).ok();
        assert_eq!(
            denied,
            Some(PushMessage::Denied("access denied to channel".to_owned()))
        );
        assert!(!denied.is_some_and(|m| m.confirms_status_changes()));
        let nothing =
            PushMessage::parse(r#"{"groups_current": [], "groups_left": [], "groups_joined": []}"#)
                .ok();
        assert!(!nothing.is_some_and(|m| m.confirms_status_changes()));
    }

    #[test]
    fn error_without_finished_and_canceled_twice_are_final() {
        let error = change(
            r#"{"unified_job_id": 5, "status": "error", "type": "job", "group_name": "jobs"}"#,
        );
        assert!(error.is_final() && error.finished.is_none());
        let first = change(
            r#"{"unified_job_id": 6, "status": "canceled", "type": "job", "group_name": "jobs"}"#,
        );
        let second = change(
            r#"{"unified_job_id": 6, "status": "canceled", "finished": "2026-12-01T19:24:31.236810Z", "type": "job", "group_name": "jobs"}"#,
        );
        assert!(first.is_final() && second.is_final());
        assert_eq!(first.job_id, second.job_id);
    }

    #[test]
    fn bad_frames_are_typed_errors() {
        assert!(matches!(
            PushMessage::parse("not json"),
            Err(PushMessageError::NotJson(_))
        ));
        assert!(matches!(
            PushMessage::parse("[1]"),
            Err(PushMessageError::NotAnObject)
        ));
        assert!(matches!(
            PushMessage::parse(r#"{"something": "else"}"#),
            Ok(PushMessage::Other(_))
        ));
    }
}
