use kube::Api;
use provkit_core::{JobState, JobType};
use provkit_kube::{StatusSession, StatusWriteConfig, StatusWriteError};
use serde_json::json;

use crate::fixtures::*;

fn ids(jobs: &[provkit_core::JobStatus]) -> Vec<&str> {
    jobs.iter().map(|j| j.job_id.as_str()).collect()
}

#[tokio::test]
async fn flush_sends_jobs_and_desired_version_with_the_resource_version() {
    let cached = Network::test().finalized().with_rv("5");
    let ours = vec![job("11", JobType::Provision, JobState::Pending, 0, "v1")];
    let stored = cached
        .clone()
        .with_rv("6")
        .with_jobs(ours.clone())
        .with_desired("v1");
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![patch_status(
        "5",
        json!({
            "provisioningJobs": [{"jobID":"11","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Pending","configVersion":"v1"}],
            "desiredConfigVersion": "v1"
        }),
        &stored,
    )]);
    let session = StatusSession::new(
        Api::namespaced(client, NS),
        &cached,
        StatusWriteConfig::default(),
    )
    .unwrap();
    let persisted = session.flush_jobs(&ours, "v1").await.unwrap();
    timeout_after_1s(server).await;
    assert_eq!(ids(&persisted), ["11"]);
    assert_eq!(session.resource_version().as_deref(), Some("6"));
}

#[tokio::test]
async fn conflict_rereads_merges_by_job_id_and_retries() {
    // Our cache: one old succeeded job. Another writer meanwhile added job "20" and a phase.
    let old = job("10", JobType::Provision, JobState::Succeeded, 0, "v0");
    let cached = Network::test()
        .finalized()
        .with_rv("5")
        .with_jobs(vec![old.clone()]);
    let theirs = cached
        .clone()
        .with_rv("6")
        .with_phase("Ready")
        .with_jobs(vec![
            old.clone(),
            job("20", JobType::Deprovision, JobState::Failed, 1, ""),
        ]);
    let ours = vec![
        old.clone(),
        job("21", JobType::Provision, JobState::Pending, 2, "v1"),
    ];
    let merged_json = json!([
        {"jobID":"10","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Succeeded","configVersion":"v0"},
        {"jobID":"20","type":"deprovision","timestamp":"2026-06-29T12:01:00Z","state":"Failed"},
        {"jobID":"21","type":"provision","timestamp":"2026-06-29T12:02:00Z","state":"Pending","configVersion":"v1"}
    ]);
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        patch_status(
            "5",
            json!({"provisioningJobs": [
                {"jobID":"10","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Succeeded","configVersion":"v0"},
                {"jobID":"21","type":"provision","timestamp":"2026-06-29T12:02:00Z","state":"Pending","configVersion":"v1"}
            ], "desiredConfigVersion": "v1"}),
            &cached,
        )
        .fails(409, "Conflict"),
        get_object(&theirs),
        patch_status("6", json!({"provisioningJobs": merged_json, "desiredConfigVersion": "v1"}), &theirs.clone().with_rv("7")),
    ]);
    let session = StatusSession::new(
        Api::namespaced(client, NS),
        &cached,
        StatusWriteConfig::default(),
    )
    .unwrap();
    let persisted = session.flush_jobs(&ours, "v1").await.unwrap();
    let log = timeout_after_1s(server).await;
    assert_eq!(log.len(), 3);
    assert_eq!(ids(&persisted), ["10", "20", "21"]);
    assert_eq!(session.resource_version().as_deref(), Some("7"));
}

#[tokio::test]
async fn full_write_after_a_flush_uses_the_new_resource_version_and_keeps_merged_jobs() {
    let cached = Network::test().finalized().with_rv("5");
    let theirs = cached.clone().with_rv("6").with_jobs(vec![job(
        "30",
        JobType::Provision,
        JobState::Failed,
        0,
        "v0",
    )]);
    let ours_jobs = vec![job("31", JobType::Provision, JobState::Pending, 1, "v1")];
    let (client, verifier) = testcontext();
    let after_flush = theirs.clone().with_rv("7");
    let server = verifier.run(vec![
        patch_status("5", json!({"provisioningJobs": [
            {"jobID":"31","type":"provision","timestamp":"2026-06-29T12:01:00Z","state":"Pending","configVersion":"v1"}
        ], "desiredConfigVersion": "v1"}), &cached)
        .fails(409, "Conflict"),
        get_object(&theirs),
        patch_status("6", json!({"provisioningJobs": [
            {"jobID":"30","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Failed","configVersion":"v0"},
            {"jobID":"31","type":"provision","timestamp":"2026-06-29T12:01:00Z","state":"Pending","configVersion":"v1"}
        ], "desiredConfigVersion": "v1"}), &after_flush),
        // the end-of-reconcile write: rv 7, full status, jobs still merged
        patch_status("7", json!({
            "phase": "Progressing",
            "provisioningJobs": [
                {"jobID":"30","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Failed","configVersion":"v0"},
                {"jobID":"31","type":"provision","timestamp":"2026-06-29T12:01:00Z","state":"Pending","configVersion":"v1"}
            ],
            "desiredConfigVersion": "v1"
        }), &after_flush.clone().with_rv("8")),
    ]);
    let session = StatusSession::new(
        Api::namespaced(client, NS),
        &cached,
        StatusWriteConfig::default(),
    )
    .unwrap();
    session.flush_jobs(&ours_jobs, "v1").await.unwrap();
    let working = cached
        .clone()
        .with_phase("Progressing")
        .with_jobs(ours_jobs)
        .with_desired("v1");
    let written = session.write_status(&working).await.unwrap();
    timeout_after_1s(server).await;
    assert_eq!(written.metadata.resource_version.as_deref(), Some("8"));
}

#[tokio::test]
async fn gives_up_after_max_attempts_of_conflicts() {
    let cached = Network::test().with_rv("1");
    let ours = vec![job("1", JobType::Provision, JobState::Pending, 0, "v")];
    let body = json!({"provisioningJobs": [
        {"jobID":"1","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Pending","configVersion":"v"}
    ], "desiredConfigVersion": "v"});
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        patch_status("1", body.clone(), &cached).fails(409, "Conflict"),
        get_object(&cached.clone().with_rv("2")),
        patch_status("2", body, &cached).fails(409, "Conflict"),
        get_object(&cached.clone().with_rv("3")),
    ]);
    let config =
        StatusWriteConfig::default().with_max_attempts(std::num::NonZeroU32::new(2).unwrap());
    let session = StatusSession::new(Api::namespaced(client, NS), &cached, config).unwrap();
    let err = session.flush_jobs(&ours, "v").await.unwrap_err();
    timeout_after_1s(server).await;
    assert!(
        matches!(err, StatusWriteError::Conflicts { attempts: 2, .. }),
        "{err}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn other_errors_are_not_retried() {
    let cached = Network::test().with_rv("1");
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        patch_status(
            "1",
            json!({"provisioningJobs": [], "desiredConfigVersion": null}),
            &cached,
        )
        .fails(422, "Invalid"),
    ]);
    let session = StatusSession::new(
        Api::namespaced(client, NS),
        &cached,
        StatusWriteConfig::default(),
    )
    .unwrap();
    let err = session.flush_jobs(&[], "").await.unwrap_err();
    timeout_after_1s(server).await;
    assert!(matches!(err, StatusWriteError::Patch { .. }), "{err}");
}

#[tokio::test]
async fn missing_resource_version_reads_first() {
    let mut cached = Network::test();
    cached.metadata.resource_version = None;
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        get_object(&cached.clone().with_rv("4")),
        patch_status(
            "4",
            json!({"provisioningJobs": [], "desiredConfigVersion": "v"}),
            &cached.clone().with_rv("5"),
        ),
    ]);
    let session = StatusSession::new(
        Api::namespaced(client, NS),
        &cached,
        StatusWriteConfig::default(),
    )
    .unwrap();
    session.flush_jobs(&[], "v").await.unwrap();
    timeout_after_1s(server).await;
}
