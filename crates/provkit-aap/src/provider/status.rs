//! AAP job status → provkit job state (spec §4.4), plus what a finished job tells: its outputs
//! and why it failed.
//!
//! - **Outputs** are the job's `artifacts` (what the playbook published with `set_stats`). A
//!   workflow job has `artifacts: null` (aap-observed.md §13.2); its outputs are its node jobs'
//!   artifacts merged in the order the nodes finished (a later node's key wins), read with one
//!   request once the workflow is terminal.
//! - **Failure details** are `result_traceback`, else `job_explanation`. A playbook failure has
//!   both empty; then the details come from the job's failed task events (one bounded request,
//!   [`MAX_FAILED_EVENTS`] events), e.g. `"Create VM on localhost: quota exceeded"`.
//!
//! The extra requests only happen for terminal jobs, so polling a running job costs one request
//! as before; if one fails, the status is returned without that part (and a warning is logged).

use provkit_core::JobState;
use provkit_lifecycle::ProvisionStatus;
use serde_json::{Map, Value};

use crate::api::AapApi;
use crate::types::{AapJobStatus, Job, JobKind};

/// How many failed events are read to explain a playbook failure (one page).
pub const MAX_FAILED_EVENTS: usize = 10;

/// Failure details taken from events are cut at this many bytes (on a character boundary).
pub const MAX_EVENT_DETAILS_BYTES: usize = 2048;

/// Maps an AAP status string to a [`JobState`] (exact, case-sensitive; anything unknown is
/// [`JobState::Unknown`], which is non-terminal so polling continues).
///
/// ```
/// use provkit_aap::provider::map_status;
/// use provkit_core::JobState;
/// assert_eq!(map_status("error"), JobState::Failed);
/// assert_eq!(map_status("new"), JobState::Unknown);
/// ```
pub fn map_status(status: &str) -> JobState {
    match AapJobStatus::parse(status) {
        AapJobStatus::Successful => JobState::Succeeded,
        AapJobStatus::Failed | AapJobStatus::Error => JobState::Failed,
        AapJobStatus::Canceled => JobState::Canceled,
        AapJobStatus::Pending => JobState::Pending,
        AapJobStatus::Waiting => JobState::Waiting,
        AapJobStatus::Running => JobState::Running,
        AapJobStatus::New | AapJobStatus::Other(_) => JobState::Unknown,
    }
}

/// The provider's status view of a job: the mapped state, the raw status as message, start and
/// end times, and — for failed jobs — `result_traceback` as error details (falling back to
/// `job_explanation` when the traceback is empty, e.g. a workflow's "No error handling paths
/// found"; Go leaves the details empty then).
pub fn provision_status(job_id: &str, job: &Job) -> ProvisionStatus {
    let state = map_status(job.status.as_str());
    let mut status = ProvisionStatus::new(job_id, state.clone(), job.status.as_str())
        .with_times(job.started, job.finished)
        .with_outputs(artifacts_of(job));
    if state == JobState::Failed {
        let details = if job.result_traceback.is_empty() {
            &job.job_explanation
        } else {
            &job.result_traceback
        };
        if !details.is_empty() {
            status = status.with_error_details(details.clone());
        }
    }
    status
}

/// The job's `artifacts` when they are an object (`null`, `{}` and the no_log string give none).
fn artifacts_of(job: &Job) -> Map<String, Value> {
    match &job.artifacts {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    }
}

/// [`provision_status`], completed with a workflow's node outputs and a playbook failure's
/// failed events: a workflow's outputs are its node jobs' artifacts merged in finish order (one
/// request once terminal); a playbook failure without explanation or traceback is explained by
/// its first [`MAX_FAILED_EVENTS`] failed events (one request). A failed extra request leaves that
/// part out.
pub async fn provision_status_with_outputs(
    api: &dyn AapApi,
    job_id: &str,
    job: &Job,
) -> ProvisionStatus {
    let mut status = provision_status(job_id, job);
    if !status.state.is_terminal() {
        return status;
    }
    match job.kind {
        JobKind::WorkflowJob if status.outputs.is_empty() => {
            match api.workflow_node_jobs(job.id).await {
                Ok(nodes) => {
                    for node in &nodes {
                        status.outputs.extend(artifacts_of(node));
                    }
                }
                Err(e) => {
                    tracing::warn!(job_id, error = %e, "could not read the workflow's node jobs for outputs");
                }
            }
        }
        JobKind::Job if status.state == JobState::Failed && status.error_details.is_empty() => {
            match api.failed_job_events(job.id, MAX_FAILED_EVENTS).await {
                Ok(events) => {
                    let details = events_details(&events);
                    if !details.is_empty() {
                        status = status.with_error_details(details);
                    }
                }
                Err(e) => {
                    tracing::warn!(job_id, error = %e, "could not read the failed job's events");
                }
            }
        }
        _ => {}
    }
    status
}

/// The failed task events, summarised and joined with `"; "`, at most
/// [`MAX_EVENT_DETAILS_BYTES`].
fn events_details(events: &[crate::types::AapJobEvent]) -> String {
    let mut out = String::new();
    for e in events.iter().filter(|e| e.is_task_failure()) {
        let summary = e.summary();
        if summary.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("; ");
        }
        out.push_str(&summary);
    }
    if provkit_core::text::truncate_to_bytes(&mut out, MAX_EVENT_DETAILS_BYTES) {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::JobKind;
    use serde_json::json;

    #[test]
    fn mapping_table() {
        let cases = [
            ("successful", JobState::Succeeded),
            ("failed", JobState::Failed),
            ("error", JobState::Failed),
            ("canceled", JobState::Canceled),
            ("pending", JobState::Pending),
            ("waiting", JobState::Waiting),
            ("running", JobState::Running),
            ("new", JobState::Unknown),
            ("", JobState::Unknown),
            ("unknown_status", JobState::Unknown),
            ("Successful", JobState::Unknown),
        ];
        for (raw, want) in cases {
            assert_eq!(map_status(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn details_only_for_failures() {
        let failed = Job::from_value(&json!({"id": 789, "status": "failed", "result_traceback": "Error: Connection timeout"}), JobKind::Job).unwrap();
        let st = provision_status("789", &failed);
        assert_eq!(
            (
                st.state.clone(),
                st.message.as_str(),
                st.error_details.as_str()
            ),
            (JobState::Failed, "failed", "Error: Connection timeout")
        );
        let wf = Job::from_value(&json!({"id": 4, "status": "failed", "job_explanation": "No error handling paths found, marking workflow as failed"}), JobKind::WorkflowJob).unwrap();
        assert!(
            provision_status("4", &wf)
                .error_details
                .starts_with("No error handling")
        );
        let canceled = Job::from_value(
            &json!({"id": 8, "status": "canceled", "result_traceback": "x"}),
            JobKind::Job,
        )
        .unwrap();
        assert_eq!(provision_status("8", &canceled).error_details, "");
        let ok = Job::from_value(
            &json!({"id": 104, "status": "successful", "artifacts": {"vm_ip": "10.0.0.5"}}),
            JobKind::Job,
        )
        .unwrap();
        assert_eq!(provision_status("104", &ok).outputs["vm_ip"], "10.0.0.5");
        let wf_null = Job::from_value(
            &json!({"id": 5, "status": "successful", "artifacts": null}),
            JobKind::WorkflowJob,
        )
        .unwrap();
        assert!(provision_status("5", &wf_null).outputs.is_empty());
        let unknown =
            Job::from_value(&json!({"id": 1, "status": "unknown_status"}), JobKind::Job).unwrap();
        let st = provision_status("1", &unknown);
        assert_eq!(
            (st.state, st.message.as_str()),
            (JobState::Unknown, "unknown_status")
        );
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;
    use crate::types::AapJobEvent;
    use serde_json::json;

    #[allow(clippy::needless_pass_by_value)] // called with json!() temporaries
    fn ev(v: serde_json::Value) -> AapJobEvent {
        AapJobEvent::from_value(&v).unwrap()
    }

    #[test]
    fn details_from_events_table() {
        let parent = ev(
            json!({"counter": 3, "event": "playbook_on_task_start", "failed": true, "task": "Create VM"}),
        );
        let failed = ev(
            json!({"counter": 4, "event": "runner_on_failed", "failed": true, "task": "Create VM",
            "host_name": "localhost", "event_data": {"res": {"msg": "quota exceeded"}}}),
        );
        let unreachable = ev(
            json!({"counter": 6, "event": "runner_on_unreachable", "failed": true, "task": "Ping",
            "host_name": "db", "stdout": "\u{1b}[1;31mfatal: [db]: UNREACHABLE!\u{1b}[0m"}),
        );
        let cases: Vec<(&str, Vec<AapJobEvent>, &str)> = vec![
            ("no events", vec![], ""),
            ("only parents", vec![parent.clone()], ""),
            (
                "one failure, parent skipped",
                vec![parent, failed.clone()],
                "Create VM on localhost: quota exceeded",
            ),
            (
                "stdout without colours when there is no msg",
                vec![failed, unreachable],
                "Create VM on localhost: quota exceeded; Ping on db: fatal: [db]: UNREACHABLE!",
            ),
        ];
        for (name, events, want) in cases {
            assert_eq!(events_details(&events), want, "{name}");
        }
    }

    #[test]
    fn details_are_bounded() {
        let long = ev(
            json!({"event": "runner_on_failed", "failed": true, "event_data": {"res": {"msg": "é".repeat(5000)}}}),
        );
        let d = events_details(&[long]);
        assert!(d.len() <= MAX_EVENT_DETAILS_BYTES + '…'.len_utf8());
        assert!(d.ends_with('…'));
    }
}
