//! Job-history operations: the spec's cases plus the two deliberate deviations from Go.

use std::num::NonZeroUsize;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use provkit_core::{
    DEFAULT_MAX_JOB_HISTORY, JobState, JobStatus, JobType, append_job, find_job_by_id,
    find_latest_job_by_type, has_job_id, update_job,
};

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap()
}

fn job(id: &str, t: JobType, s: JobState, offset_secs: i64) -> JobStatus {
    JobStatus::new(id, t, s, base() + TimeDelta::seconds(offset_secs))
}

fn prov(id: &str, offset: i64) -> JobStatus {
    job(id, JobType::Provision, JobState::Succeeded, offset)
}

fn deprov(id: &str, offset: i64) -> JobStatus {
    job(id, JobType::Deprovision, JobState::Failed, offset)
}

fn ids(jobs: &[JobStatus]) -> Vec<&str> {
    jobs.iter().map(|j| j.job_id.as_str()).collect()
}

fn cap(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap()
}

#[test]
fn find_latest_cases_from_spec() {
    // osac-provisioning.md §7.1 FindLatestJobByType.
    assert!(find_latest_job_by_type(&[], &JobType::Provision).is_none());
    assert!(find_latest_job_by_type(&[deprov("d", 0)], &JobType::Provision).is_none());
    assert_eq!(
        find_latest_job_by_type(&[prov("only", 0)], &JobType::Provision)
            .unwrap()
            .job_id,
        "only"
    );
    let jobs = [
        prov("job1", -7200),
        prov("job2", -3600),
        prov("job3", -1800),
    ];
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Provision)
            .unwrap()
            .job_id,
        "job3"
    );
    let shuffled = [
        prov("job3", -1800),
        prov("job1", -7200),
        prov("job2", -3600),
    ];
    assert_eq!(
        find_latest_job_by_type(&shuffled, &JobType::Provision)
            .unwrap()
            .job_id,
        "job3"
    );
    let mixed = [
        prov("provision1", -100),
        prov("provision2", -50),
        deprov("deprovision1", 0),
    ];
    assert_eq!(
        find_latest_job_by_type(&mixed, &JobType::Provision)
            .unwrap()
            .job_id,
        "provision2"
    );
    assert_eq!(
        find_latest_job_by_type(&mixed, &JobType::Deprovision)
            .unwrap()
            .job_id,
        "deprovision1"
    );
}

#[test]
fn find_latest_tie_later_element_wins() {
    // Deviation: Go returns job1 here.
    let jobs = [prov("job1", 0), prov("job2", 0), prov("job3", 0)];
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Provision)
            .unwrap()
            .job_id,
        "job3"
    );
    // A tie after truncation to whole seconds: the newer job wins.
    let mut a = prov("old-failed", 0);
    a.state = JobState::Failed;
    let mut b = prov("new-running", 0);
    b.state = JobState::Running;
    b.timestamp = Some(b.timestamp.unwrap() + TimeDelta::milliseconds(400));
    let round_tripped: Vec<JobStatus> =
        serde_json::from_value(serde_json::to_value([a, b]).unwrap()).unwrap();
    assert_eq!(
        find_latest_job_by_type(&round_tripped, &JobType::Provision)
            .unwrap()
            .job_id,
        "new-running"
    );
}

#[test]
fn find_latest_none_timestamps_sort_first() {
    let mut zero = prov("zero", 0);
    zero.timestamp = None;
    let mut zero2 = zero.clone();
    zero2.job_id = "zero2".into();
    let jobs = [prov("real", -100_000), zero.clone()];
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Provision)
            .unwrap()
            .job_id,
        "real"
    );
    let jobs = [zero.clone(), zero2];
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Provision)
            .unwrap()
            .job_id,
        "zero2"
    );
}

#[test]
fn find_latest_matches_other_types_verbatim() {
    let jobs = [job(
        "a",
        JobType::Other("attach".into()),
        JobState::Running,
        0,
    )];
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::from("attach"))
            .unwrap()
            .job_id,
        "a"
    );
    assert!(find_latest_job_by_type(&jobs, &JobType::Provision).is_none());
}

#[test]
fn append_job_cases_from_spec() {
    // osac-provisioning.md §7.7 AppendJob with max 3 (one job type: same as Go).
    let mut jobs = Vec::new();
    append_job(&mut jobs, prov("job-1", 1), cap(3));
    assert_eq!(ids(&jobs), ["job-1"]);
    append_job(&mut jobs, prov("job-2", 2), cap(3));
    append_job(&mut jobs, prov("job-3", 3), cap(3));
    assert_eq!(ids(&jobs), ["job-1", "job-2", "job-3"]);
    append_job(&mut jobs, prov("job-4", 4), cap(3));
    assert_eq!(ids(&jobs), ["job-2", "job-3", "job-4"]);
    append_job(&mut jobs, prov("job-5", 5), cap(3));
    assert_eq!(ids(&jobs), ["job-3", "job-4", "job-5"]);
    assert_eq!(DEFAULT_MAX_JOB_HISTORY.get(), 10);
    let mut many = Vec::new();
    for i in 0..15 {
        append_job(&mut many, prov(&i.to_string(), i), DEFAULT_MAX_JOB_HISTORY);
    }
    assert_eq!(many.len(), 10);
    assert_eq!(many[0].job_id, "5");
}

#[test]
fn append_job_keeps_latest_provision_job() {
    // Deviation: ten deprovision retries would evict the provision job in Go.
    let mut jobs = Vec::new();
    append_job(&mut jobs, prov("p-old", 0), cap(10));
    append_job(&mut jobs, prov("p", 1), cap(10));
    for i in 0..25 {
        append_job(&mut jobs, deprov(&format!("d{i}"), 10 + i), cap(10));
        assert!(jobs.len() <= 10);
        assert_eq!(
            find_latest_job_by_type(&jobs, &JobType::Provision)
                .unwrap()
                .job_id,
            "p"
        );
        assert_eq!(jobs.last().unwrap().job_id, format!("d{i}"));
    }
    assert_eq!(jobs.len(), 10);
    assert_eq!(jobs[0].job_id, "p");
    let expected: Vec<String> = (16..25).map(|i| format!("d{i}")).collect();
    assert_eq!(ids(&jobs[1..]), expected);
}

#[test]
fn append_job_cap_two_and_one() {
    let mut jobs = vec![prov("p", 0)];
    append_job(&mut jobs, deprov("d1", 1), cap(2));
    append_job(&mut jobs, deprov("d2", 2), cap(2));
    assert_eq!(ids(&jobs), ["p", "d2"]);

    let mut jobs = vec![prov("p", 0)];
    append_job(&mut jobs, deprov("d1", 1), cap(1));
    assert_eq!(ids(&jobs), ["d1"]);
}

#[test]
fn append_job_protects_latest_by_timestamp_not_position() {
    // The newer provision job sits earlier in the array (clock skew): it is the one kept.
    let mut jobs = vec![prov("p-newer", 100), prov("p-older", 0)];
    append_job(&mut jobs, deprov("d1", 200), cap(2));
    assert_eq!(ids(&jobs), ["p-newer", "d1"]);
}

#[test]
fn append_job_trims_an_oversized_history() {
    // A history longer than the cap (cap lowered by configuration) is trimmed in one go.
    let mut jobs: Vec<JobStatus> = (0..10_000).map(|i| deprov(&i.to_string(), i)).collect();
    jobs.insert(5, prov("p", -5));
    append_job(&mut jobs, deprov("new", 20_000), cap(3));
    assert_eq!(ids(&jobs), ["p", "9999", "new"]);
}

#[test]
fn update_and_find_by_id() {
    // osac-provisioning.md §7.7 UpdateJob / FindJobByID.
    assert!(!update_job(&mut [], &prov("x", 0)));
    let mut jobs = vec![prov("a", 0), deprov("b", 1), prov("c", 2)];
    assert!(!update_job(&mut jobs, &prov("zzz", 0)));
    let before = jobs.clone();
    let mut replacement = job("b", JobType::Provision, JobState::Running, 99);
    replacement.block_deletion_on_failure = true;
    replacement.message = "m".into();
    assert!(update_job(&mut jobs, &replacement));
    assert_eq!(jobs[1], replacement);
    assert_eq!(jobs[0], before[0]);
    assert_eq!(jobs[2], before[2]);
    assert_eq!(jobs.len(), 3);
    assert_eq!(find_job_by_id(&jobs, "b").unwrap(), &replacement);
    assert!(find_job_by_id(&jobs, "nope").is_none());
}

#[test]
fn duplicate_and_empty_ids_act_on_the_first_match() {
    let mut jobs = vec![prov("", 0), deprov("", 1), prov("dup", 2), deprov("dup", 3)];
    assert_eq!(
        find_job_by_id(&jobs, "dup").unwrap().job_type,
        JobType::Provision
    );
    assert_eq!(
        find_job_by_id(&jobs, "").unwrap().job_type,
        JobType::Provision
    );
    let mut upd = deprov("dup", 50);
    upd.state = JobState::Succeeded;
    assert!(update_job(&mut jobs, &upd));
    assert_eq!(jobs[2], upd);
    assert_eq!(jobs[3].state, JobState::Failed);
    assert!(!has_job_id(Some(&jobs[0])));
    assert!(has_job_id(Some(&jobs[2])));
    assert!(!has_job_id(None));
}

#[test]
fn large_histories_do_not_panic() {
    let mut jobs: Vec<JobStatus> = (0..10_000)
        .map(|i| {
            let t = if i % 2 == 0 {
                JobType::Provision
            } else {
                JobType::Deprovision
            };
            // Many equal timestamps and duplicate ids.
            job(&(i % 100).to_string(), t, JobState::Running, i / 1000)
        })
        .collect();
    let latest = find_latest_job_by_type(&jobs, &JobType::Provision).unwrap();
    assert_eq!(latest.job_id, "98"); // index 9998: last provision job of the last second
    assert!(find_job_by_id(&jobs, "42").is_some());
    assert!(update_job(&mut jobs, &prov("42", 0)));
    append_job(&mut jobs, deprov("new", 100), cap(10_000));
    assert_eq!(jobs.len(), 10_000);
    let json = serde_json::to_vec(&jobs).unwrap();
    let back: Vec<JobStatus> = serde_json::from_slice(&json).unwrap();
    assert_eq!(back.len(), 10_000);
}

fn tagged(mut j: JobStatus, target: &str) -> JobStatus {
    j.target = target.to_owned();
    j
}

#[test]
fn find_latest_by_type_and_target_table() {
    use provkit_core::find_latest_job_by_type_and_target as find;
    let jobs = vec![
        tagged(prov("a-old", 0), "a"),
        tagged(prov("b", 5), "b"),
        tagged(prov("a-new", 10), "a"),
        tagged(deprov("a-d", 20), "a"),
        prov("legacy", 30),
    ];
    let cases: [(&JobType, &str, Option<&str>); 6] = [
        (&JobType::Provision, "a", Some("a-new")),
        (&JobType::Provision, "b", Some("b")),
        (&JobType::Provision, "", Some("legacy")),
        (&JobType::Provision, "c", None),
        (&JobType::Deprovision, "a", Some("a-d")),
        (&JobType::Deprovision, "b", None),
    ];
    for (t, target, want) in cases {
        assert_eq!(
            find(&jobs, t, target).map(|j| j.job_id.as_str()),
            want,
            "{t} {target:?}"
        );
    }
    // Ties: the later element wins, per target.
    let ties = vec![tagged(prov("x1", 0), "a"), tagged(prov("x2", 0), "a")];
    assert_eq!(find(&ties, &JobType::Provision, "a").unwrap().job_id, "x2");
    // The untargeted search still sees every job.
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Provision)
            .unwrap()
            .job_id,
        "legacy"
    );
}

#[test]
fn jobs_of_target_keeps_order() {
    let jobs = vec![
        tagged(prov("1", 0), "a"),
        tagged(prov("2", 1), "b"),
        tagged(deprov("3", 2), "a"),
        prov("4", 3),
    ];
    assert_eq!(ids(&provkit_core::jobs_of_target(&jobs, "a")), ["1", "3"]);
    assert_eq!(ids(&provkit_core::jobs_of_target(&jobs, "")), ["4"]);
    assert!(provkit_core::jobs_of_target(&jobs, "z").is_empty());
}

#[test]
fn legacy_history_is_absorbed_by_one_owner() {
    use provkit_core::absorb_legacy_history;
    let mut jobs = vec![prov("1", 0), tagged(prov("2", 1), "b"), deprov("3", 2)];
    assert_eq!(absorb_legacy_history(&mut jobs, ""), 0, "no owner: no-op");
    assert!(jobs[0].target.is_empty());
    assert_eq!(absorb_legacy_history(&mut jobs, "a"), 2);
    let targets: Vec<&str> = jobs.iter().map(|j| j.target.as_str()).collect();
    assert_eq!(targets, ["a", "b", "a"]);
    assert_eq!(absorb_legacy_history(&mut jobs, "a"), 0, "idempotent");
}

#[test]
fn append_job_keeps_each_targets_latest_provision_job() {
    // Two targets, cap 3: target b's deprovision retries must not evict a's provision job.
    let mut jobs = Vec::new();
    append_job(&mut jobs, tagged(prov("pa", 0), "a"), cap(3));
    append_job(&mut jobs, tagged(prov("pb", 1), "b"), cap(3));
    for (i, id) in ["d1", "d2", "d3"].into_iter().enumerate() {
        append_job(&mut jobs, tagged(deprov(id, 2 + i as i64), "b"), cap(3));
    }
    assert_eq!(ids(&jobs), ["pa", "pb", "d3"]);
    // More targets than room: the oldest target's latest provision job goes, the newest job stays.
    let mut jobs = vec![tagged(prov("pa", 0), "a"), tagged(prov("pb", 1), "b")];
    append_job(&mut jobs, tagged(prov("pc", 2), "c"), cap(2));
    assert_eq!(ids(&jobs), ["pb", "pc"]);
    assert!(jobs.len() <= 2);
}
