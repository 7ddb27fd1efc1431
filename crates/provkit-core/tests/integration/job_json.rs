//! The job types' JSON: a Go-written status round-trips unchanged.

use std::collections::BTreeSet;

use chrono::{TimeZone, Utc};
use provkit_core::{JobState, JobStatus, JobType};
use serde_json::{Value, json};

/// A status as the Go operator writes it (osac-provisioning.md §1.1): all seven states, an
/// unknown state and type, a `null` timestamp, omitted optional fields, and fields a newer
/// writer added.
const GO_STATUS: &str = r#"{
  "desiredConfigVersion": "90f31220e6080755",
  "provisioningJobs": [
    {"jobID": "101", "type": "provision", "timestamp": "2026-06-29T12:00:00Z", "state": "Pending", "configVersion": "90f31220e6080755"},
    {"jobID": "102", "type": "provision", "timestamp": "2026-06-29T12:00:01Z", "state": "Waiting", "message": "waiting for capacity", "configVersion": "90f31220e6080755"},
    {"jobID": "103", "type": "provision", "timestamp": "2026-06-29T12:00:02Z", "state": "Running"},
    {"jobID": "104", "type": "provision", "timestamp": "2026-06-29T12:00:03Z", "state": "Succeeded", "message": "done", "configVersion": "c855a4bcffcb8447"},
    {"jobID": "105", "type": "provision", "timestamp": "2026-06-29T12:00:04Z", "state": "Failed", "message": "playbook failed <rc=2>"},
    {"jobID": "106", "type": "deprovision", "timestamp": "2026-06-29T12:00:05Z", "state": "Canceled", "blockDeletionOnFailure": true},
    {"jobID": "107", "type": "deprovision", "timestamp": null, "state": "Unknown", "blockDeletionOnFailure": true},
    {"jobID": "", "type": "provision", "timestamp": "2026-06-29T12:00:07Z", "state": "Paused"},
    {"jobID": "eda-webhook-3", "type": "attach", "timestamp": "2026-06-29T12:00:08Z", "state": "Succeeded",
     "progress": 40, "annotations": {"b": 1, "a": [true, null]}, "startedBy": "newer-operator"}
  ]
}"#;

fn key_sets(v: &Value) -> Vec<BTreeSet<String>> {
    v["provisioningJobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_object().unwrap().keys().cloned().collect())
        .collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    desired_config_version: String,
    provisioning_jobs: Vec<JobStatus>,
}

#[test]
fn go_written_status_round_trips() {
    let original: Value = serde_json::from_str(GO_STATUS).unwrap();
    let status: Status = serde_json::from_str(GO_STATUS).unwrap();
    let rewritten = serde_json::to_value(&status).unwrap();
    assert_eq!(rewritten, original);
    assert_eq!(key_sets(&rewritten), key_sets(&original));

    let jobs = &status.provisioning_jobs;
    let states: Vec<_> = jobs.iter().map(|j| j.state.clone()).collect();
    assert_eq!(
        states,
        [
            JobState::Pending,
            JobState::Waiting,
            JobState::Running,
            JobState::Succeeded,
            JobState::Failed,
            JobState::Canceled,
            JobState::Unknown,
            JobState::Other("Paused".into()),
            JobState::Succeeded,
        ]
    );
    assert_eq!(jobs[6].timestamp, None);
    assert!(jobs[5].block_deletion_on_failure);
    assert_eq!(jobs[7].job_id, "");
    assert_eq!(jobs[8].job_type, JobType::Other("attach".into()));
    assert_eq!(jobs[8].extra["progress"], 40);
    assert_eq!(jobs[8].extra.len(), 3);
    assert!(jobs[..8].iter().all(|j| j.extra.is_empty()));
}

#[test]
fn known_keys_are_written_first_in_go_order() {
    let job: JobStatus = serde_json::from_str(
        r#"{"zz":1,"configVersion":"v","blockDeletionOnFailure":true,"message":"m","state":"Failed","timestamp":"2026-06-29T12:00:00Z","type":"deprovision","jobID":"9"}"#,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&job).unwrap(),
        r#"{"jobID":"9","type":"deprovision","timestamp":"2026-06-29T12:00:00Z","state":"Failed","message":"m","blockDeletionOnFailure":true,"configVersion":"v","zz":1}"#
    );
}

#[test]
fn missing_fields_read_as_defaults() {
    let job: JobStatus = serde_json::from_str("{}").unwrap();
    assert_eq!(job, JobStatus::default());
    assert_eq!(job.timestamp, None);
    assert_eq!(job.job_type, JobType::Provision);
    assert_eq!(job.state, JobState::Pending);
    // Written back with the required keys and `null` timestamp, optional ones omitted.
    assert_eq!(
        serde_json::to_value(&job).unwrap(),
        json!({"jobID": "", "type": "provision", "timestamp": null, "state": "Pending"})
    );
}

#[test]
fn timestamps_with_offsets_and_fractions() {
    let cases = [
        ("2026-06-29T12:00:00Z", "2026-06-29T12:00:00Z"),
        ("2026-06-29T12:00:00.999999999Z", "2026-06-29T12:00:00Z"),
        ("2026-06-29T14:30:00.5+02:30", "2026-06-29T12:00:00Z"),
        ("2026-06-29T07:00:00-05:00", "2026-06-29T12:00:00Z"),
    ];
    for (input, written) in cases {
        let job: JobStatus =
            serde_json::from_value(json!({"jobID": "1", "timestamp": input})).unwrap();
        assert_eq!(
            job.timestamp.unwrap().timestamp(),
            Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0)
                .unwrap()
                .timestamp(),
            "{input}"
        );
        assert_eq!(serde_json::to_value(&job).unwrap()["timestamp"], written);
    }
    // The fraction is kept in memory, dropped on write.
    let job: JobStatus =
        serde_json::from_value(json!({"timestamp": "2026-06-29T12:00:00.25Z"})).unwrap();
    assert_eq!(job.timestamp.unwrap().timestamp_subsec_millis(), 250);
}

#[test]
fn go_zero_time_reads_as_none() {
    let job: JobStatus =
        serde_json::from_value(json!({"timestamp": "0001-01-01T00:00:00Z"})).unwrap();
    assert_eq!(job.timestamp, None);
}

#[test]
fn bad_timestamps_are_errors_not_panics() {
    for bad in [
        json!(""),
        json!("yesterday"),
        json!(12),
        json!("2026-13-01T00:00:00Z"),
    ] {
        let err = serde_json::from_value::<JobStatus>(json!({"timestamp": bad})).unwrap_err();
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn wrong_types_are_errors() {
    assert!(serde_json::from_value::<JobStatus>(json!({"state": 3})).is_err());
    assert!(serde_json::from_value::<JobStatus>(json!({"blockDeletionOnFailure": "yes"})).is_err());
    assert!(serde_json::from_value::<JobStatus>(json!([])).is_err());
}

#[test]
fn states_terminal_and_successful() {
    // osac-provisioning.md §7.6.
    for (s, terminal, successful) in [
        (JobState::Pending, false, false),
        (JobState::Waiting, false, false),
        (JobState::Running, false, false),
        (JobState::Unknown, false, false),
        (JobState::Succeeded, true, true),
        (JobState::Failed, true, false),
        (JobState::Canceled, true, false),
        (JobState::Other(String::new()), false, false),
        (JobState::Other("Cancelled".into()), false, false),
    ] {
        assert_eq!(s.is_terminal(), terminal, "{s}");
        assert_eq!(s.is_successful(), successful, "{s}");
    }
}

#[test]
fn enum_strings_are_exact() {
    for (s, text) in [
        (JobState::Pending, "Pending"),
        (JobState::Waiting, "Waiting"),
        (JobState::Running, "Running"),
        (JobState::Succeeded, "Succeeded"),
        (JobState::Failed, "Failed"),
        (JobState::Canceled, "Canceled"),
        (JobState::Unknown, "Unknown"),
    ] {
        assert_eq!(serde_json::to_value(&s).unwrap(), text);
        assert_eq!(serde_json::from_value::<JobState>(json!(text)).unwrap(), s);
        assert!(!matches!(
            serde_json::from_value::<JobState>(json!(text)).unwrap(),
            JobState::Other(_)
        ));
    }
    assert_eq!(
        serde_json::to_value(JobType::Provision).unwrap(),
        "provision"
    );
    assert_eq!(
        serde_json::to_value(JobType::Deprovision).unwrap(),
        "deprovision"
    );
    // Equality by string form: an `Other` holding a known string equals the variant.
    assert_eq!(JobState::Other("Failed".into()), JobState::Failed);
    assert!(JobState::Other("Failed".into()).is_terminal());
    assert_eq!(JobType::Other("deprovision".into()), JobType::Deprovision);
}

/// A status written by the newest Go operator (osac-project/osac `osac-operator`, with
/// `JobStatus.Target`): a multi-target history next to untagged legacy jobs. Byte-exact: Go writes
/// `target` last of the known keys and omits it when empty.
const GO_MULTI_TARGET_STATUS: &str = r#"{"desiredConfigVersion":"90f31220e6080755","provisioningJobs":[{"jobID":"90","type":"provision","timestamp":"2026-06-28T09:00:00Z","state":"Succeeded","configVersion":"08f44b07b5901a25"},{"jobID":"101","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Succeeded","message":"successful","configVersion":"90f31220e6080755","target":"fabric"},{"jobID":"102","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Running","configVersion":"90f31220e6080755","target":"k8s"},{"jobID":"103","type":"deprovision","timestamp":"2026-06-29T12:05:00Z","state":"Failed","message":"failed","blockDeletionOnFailure":true,"target":"k8s"}]}"#;

#[test]
fn newest_go_status_with_target_round_trips_byte_for_byte() {
    let status: Status = serde_json::from_str(GO_MULTI_TARGET_STATUS).unwrap();
    assert_eq!(
        serde_json::to_string(&status).unwrap(),
        GO_MULTI_TARGET_STATUS
    );
    let targets: Vec<&str> = status
        .provisioning_jobs
        .iter()
        .map(|j| j.target.as_str())
        .collect();
    assert_eq!(targets, ["", "fabric", "k8s", "k8s"]);
    assert!(status.provisioning_jobs.iter().all(|j| j.extra.is_empty()));
}

#[test]
fn target_is_written_after_config_version_and_omitted_when_empty() {
    let mut job = JobStatus::new(
        "9",
        JobType::Provision,
        JobState::Pending,
        Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap(),
    );
    job.config_version = "v".into();
    assert!(!serde_json::to_string(&job).unwrap().contains("target"));
    job.target = "storage".into();
    assert_eq!(
        serde_json::to_string(&job).unwrap(),
        r#"{"jobID":"9","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Pending","configVersion":"v","target":"storage"}"#
    );
}
