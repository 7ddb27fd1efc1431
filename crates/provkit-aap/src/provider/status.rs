//! AAP job status → provkit job state (spec §4.4).

use provkit_core::JobState;
use provkit_lifecycle::ProvisionStatus;

use crate::types::{AapJobStatus, Job};

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
        .with_times(job.started, job.finished);
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
        let unknown =
            Job::from_value(&json!({"id": 1, "status": "unknown_status"}), JobKind::Job).unwrap();
        let st = provision_status("1", &unknown);
        assert_eq!(
            (st.state, st.message.as_str()),
            (JobState::Unknown, "unknown_status")
        );
    }
}
