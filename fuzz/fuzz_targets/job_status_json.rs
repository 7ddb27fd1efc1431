//! `JobStatus` / status JSON decoding: never panics; whatever decodes re-encodes to JSON that
//! decodes to the same thing; the pure lifecycle decisions accept any decoded history.
#![no_main]

use std::num::NonZeroUsize;

use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;
use provkit_core::{
    JobState, JobStatus, JobType, append_job, find_job_by_id, find_latest_job_by_type, update_job,
};
use provkit_lifecycle::decide::{
    Backoff, LegacyJobs, backoff_remaining, cache_is_stale, compute_backoff_from_jobs,
    compute_deprovision_backoff, evaluate_action, is_config_applied,
};
use serde::{Deserialize, Serialize};

/// The part of a CRD status the lifecycle reads.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Status {
    #[serde(rename = "provisioningJobs", default)]
    jobs: Vec<JobStatus>,
    #[serde(rename = "desiredConfigVersion", default)]
    desired: String,
}

fn roundtrip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(v: &T) {
    let first = serde_json::to_vec(v).expect("decoded values encode");
    let again: T = serde_json::from_slice(&first).expect("encoded values decode");
    let second = serde_json::to_vec(&again).expect("encode again");
    assert_eq!(first, second, "encoding is not stable");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(job) = serde_json::from_slice::<JobStatus>(data) {
        roundtrip(&job);
        assert_eq!(job.state.is_successful(), job.state == JobState::Succeeded);
        assert!(!job.state.is_successful() || job.state.is_terminal());
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let state = JobState::from(text);
        assert_eq!(state.as_str(), text);
        let ty = JobType::from(text);
        assert_eq!(ty.as_str(), text);
    }
    let Ok(status) = serde_json::from_slice::<Status>(data) else {
        return;
    };
    roundtrip(&status);
    let jobs = &status.jobs;
    let desired = status.desired.as_str();

    let latest = find_latest_job_by_type(jobs, &JobType::Provision);
    let eval = evaluate_action(jobs, desired, LegacyJobs::Adopt);
    assert_eq!(
        eval.latest.map(|j| j as *const _),
        latest.map(|j| j as *const _)
    );
    let _ = evaluate_action(jobs, desired, LegacyJobs::SkipForever);
    let _ = is_config_applied(jobs, desired);
    let _ = cache_is_stale(latest, jobs, true);
    let bounds = Backoff::default();
    let b = compute_backoff_from_jobs(jobs, desired, bounds);
    assert!(b >= bounds.base && b <= bounds.max);
    let d = compute_deprovision_backoff(jobs, bounds);
    assert!(d >= bounds.base && d <= bounds.max);
    let now = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("valid time");
    if let Some(rest) = backoff_remaining(b, latest.and_then(|j| j.timestamp), now) {
        assert!(rest <= b);
    }

    // History operations on the decoded array.
    let mut hist = jobs.clone();
    let cap = NonZeroUsize::new((data.len() % 12) + 1).expect("non-zero");
    append_job(
        &mut hist,
        JobStatus::new("fuzz", JobType::Provision, JobState::Pending, now),
        cap,
    );
    assert!(hist.len() <= cap.get());
    assert_eq!(hist.last().map(|j| j.job_id.as_str()), Some("fuzz"));
    if let Some(first) = jobs.first() {
        let mut changed = first.clone();
        changed.state = JobState::Canceled;
        let mut copy = jobs.clone();
        assert!(update_job(&mut copy, &changed));
        assert_eq!(copy.len(), jobs.len());
        assert_eq!(
            find_job_by_id(&copy, &first.job_id).map(|j| j.state.clone()),
            Some(JobState::Canceled)
        );
    }
});
