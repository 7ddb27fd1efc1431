//! Spec §7.1 ComputeDesiredConfigVersion, FindLatestJobByType (tie rule changed in provkit-core),
//! IsConfigApplied (incl. A-B-A); §7.7 AppendJob, UpdateJob / FindJobByID; NeedsProvisionJob.

use chrono::TimeDelta;
use provkit_core::{
    DEFAULT_MAX_JOB_HISTORY, JobState, JobStatus, JobType, append_job,
    compute_desired_config_version, find_job_by_id, find_latest_job_by_type, update_job,
};
use provkit_lifecycle::decide::{is_config_applied, needs_provision_job};

use provkit_lifecycle::LifecyclePolicy;

use super::support::*;

#[test]
fn compute_desired_config_version_vectors() {
    let a = compute_desired_config_version(&serde_json::json!({"key": "a"})).unwrap();
    let a2 = compute_desired_config_version(&serde_json::json!({"key": "a"})).unwrap();
    let b = compute_desired_config_version(&serde_json::json!({"key": "b"})).unwrap();
    assert_eq!(a, a2, "same input, same hash");
    assert_ne!(a, b);
    assert_eq!(a, "c855a4bcffcb8447");
    assert_eq!(b, "bfac7fbcfae417be");
}

#[test]
fn find_latest_job_by_type_vectors() {
    let h = |n: i64| t0() - TimeDelta::hours(n);
    assert!(
        find_latest_job_by_type(&[], &JobType::Provision).is_none(),
        "1 empty"
    );
    let only_deprov = vec![djob("d", JobState::Running, true, h(1))];
    assert!(
        find_latest_job_by_type(&only_deprov, &JobType::Provision).is_none(),
        "2 only deprovision"
    );
    let single = vec![pjob("job1", JobState::Running, "", h(1))];
    assert_eq!(
        find_latest_job_by_type(&single, &JobType::Provision)
            .unwrap()
            .job_id,
        "job1",
        "3 single"
    );
    let three = vec![
        pjob("job1", JobState::Succeeded, "", h(2)),
        pjob("job2", JobState::Succeeded, "", h(1)),
        pjob("job3", JobState::Running, "", t0() - TimeDelta::minutes(30)),
    ];
    assert_eq!(
        find_latest_job_by_type(&three, &JobType::Provision)
            .unwrap()
            .job_id,
        "job3",
        "4 latest by timestamp"
    );
    let shuffled = vec![three[2].clone(), three[0].clone(), three[1].clone()];
    assert_eq!(
        find_latest_job_by_type(&shuffled, &JobType::Provision)
            .unwrap()
            .job_id,
        "job3",
        "5 order irrelevant"
    );
    let mixed = vec![
        pjob("provision1", JobState::Succeeded, "", h(2)),
        pjob("provision2", JobState::Succeeded, "", h(1)),
        djob("deprovision1", JobState::Running, true, t0()),
    ];
    assert_eq!(
        find_latest_job_by_type(&mixed, &JobType::Provision)
            .unwrap()
            .job_id,
        "provision2",
        "6 by type"
    );
    assert_eq!(
        find_latest_job_by_type(&mixed, &JobType::Deprovision)
            .unwrap()
            .job_id,
        "deprovision1"
    );
    // 7: identical timestamps. Go returns the first (job1); provkit-core deliberately returns the later
    // element (the newer job, since jobs are appended in trigger order).
    let tie = vec![
        pjob("job1", JobState::Failed, "", t0()),
        pjob("job2", JobState::Running, "", t0()),
    ];
    assert_eq!(
        find_latest_job_by_type(&tie, &JobType::Provision)
            .unwrap()
            .job_id,
        "job2",
        "7 tie: later element"
    );
}

/// `IsConfigApplied` in both Go versions: the spec's v0.1.1 table (§7.1) runs under
/// `LifecyclePolicy::go_v0_1_1()`, and the newest operator's table under `go_monorepo()`.
#[test]
fn is_config_applied_vectors() {
    let aba = vec![
        pjob("a", JobState::Succeeded, "v1", ago(60)),
        pjob("b", JobState::Succeeded, "v2", t0()),
    ];
    // (name, jobs, desired, v0.1.1, newest)
    let cases: Vec<(&str, Vec<JobStatus>, &str, bool, bool)> = vec![
        (
            "1 succeeded v1/v1",
            vec![pjob("1", JobState::Succeeded, "v1", t0())],
            "v1",
            true,
            true,
        ),
        ("2 no jobs", vec![], "v1", false, false),
        (
            "3 succeeded v1, desired v2",
            vec![pjob("1", JobState::Succeeded, "v1", t0())],
            "v2",
            false,
            false,
        ),
        (
            "4 failed v2/v2",
            vec![pjob("1", JobState::Failed, "v2", t0())],
            "v2",
            false,
            false,
        ),
        (
            "5 legacy empty version",
            vec![pjob("1", JobState::Succeeded, "", t0())],
            "v1",
            true,
            false,
        ),
        ("6 A-B-A", aba, "v1", false, false),
        (
            "newest: empty desired is never applied",
            vec![pjob("1", JobState::Succeeded, "", t0())],
            "",
            true,
            false,
        ),
    ];
    let v011 = LifecyclePolicy::go_v0_1_1();
    let newest = LifecyclePolicy::go_monorepo();
    for (name, jobs, desired, want_v011, want_newest) in cases {
        assert_eq!(
            v011.is_config_applied(&jobs, desired),
            want_v011,
            "v0.1.1 {name}"
        );
        assert_eq!(
            is_config_applied(&jobs, desired),
            want_v011,
            "free fn = v0.1.1 {name}"
        );
        assert_eq!(
            newest.is_config_applied(&jobs, desired),
            want_newest,
            "newest {name}"
        );
    }
}

#[test]
fn append_job_vectors() {
    let c3 = cap(3);
    let job = |n: usize| {
        pjob(
            &format!("job-{n}"),
            JobState::Pending,
            "",
            t0() + TimeDelta::seconds(n as i64),
        )
    };
    let ids = |jobs: &[JobStatus]| jobs.iter().map(|j| j.job_id.clone()).collect::<Vec<_>>();
    let mut jobs = vec![];
    append_job(&mut jobs, job(1), c3);
    assert_eq!(ids(&jobs), ["job-1"], "append to empty");
    append_job(&mut jobs, job(2), c3);
    append_job(&mut jobs, job(3), c3);
    assert_eq!(ids(&jobs), ["job-1", "job-2", "job-3"], "under the cap");
    // With only provision jobs, the newest is the latest provision job and the oldest is dropped (as Go).
    append_job(&mut jobs, job(4), c3);
    assert_eq!(ids(&jobs), ["job-2", "job-3", "job-4"], "4th drops job-1");
    append_job(&mut jobs, job(5), c3);
    assert_eq!(ids(&jobs), ["job-3", "job-4", "job-5"], "5th drops job-2");
    assert_eq!(DEFAULT_MAX_JOB_HISTORY.get(), 10, "default cap");
}

#[test]
fn update_and_find_job_by_id_vectors() {
    let mut jobs: Vec<JobStatus> = vec![];
    assert!(
        !update_job(&mut jobs, &pjob("x", JobState::Failed, "", t0())),
        "empty slice"
    );
    let mut jobs = vec![
        pjob("a", JobState::Running, "v1", ago(10)),
        pjob("b", JobState::Running, "v1", t0()),
    ];
    assert!(
        !update_job(&mut jobs, &pjob("zzz", JobState::Failed, "", t0())),
        "not found"
    );
    let replacement = djob("a", JobState::Failed, true, ago(5));
    assert!(update_job(&mut jobs, &replacement));
    assert_eq!(
        jobs[0], replacement,
        "whole struct replaced incl. type and block flag"
    );
    assert_eq!(
        jobs[1],
        pjob("b", JobState::Running, "v1", t0()),
        "others untouched"
    );
    assert_eq!(find_job_by_id(&jobs, "b").unwrap().job_id, "b");
    assert!(find_job_by_id(&jobs, "nope").is_none());
}

#[test]
fn needs_provision_job_vectors() {
    assert!(needs_provision_job(None));
    assert!(needs_provision_job(Some(&pjob(
        "",
        JobState::Succeeded,
        "",
        t0()
    ))));
    assert!(!needs_provision_job(Some(&pjob(
        "1",
        JobState::Running,
        "",
        t0()
    ))));
    assert!(!needs_provision_job(Some(&pjob(
        "1",
        JobState::Succeeded,
        "",
        t0()
    ))));
    assert!(needs_provision_job(Some(&pjob(
        "1",
        JobState::Failed,
        "",
        t0()
    ))));
    assert!(needs_provision_job(Some(&pjob(
        "1",
        JobState::Canceled,
        "",
        t0()
    ))));
}
