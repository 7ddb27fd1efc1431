use kube::Api;
use provkit_core::{JobState, JobType};
use provkit_kube::{OnStaleCheckError, api_server_has_non_terminal_provision_job};

use crate::fixtures::*;

async fn check(reply: Exchange, on_error: OnStaleCheckError) -> bool {
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![reply]);
    let api: Api<Network> = Api::namespaced(client, NS);
    let answer = api_server_has_non_terminal_provision_job(&api, NAME, on_error).await;
    let log = timeout_after_1s(server).await;
    assert_eq!(log, [format!("GET {}", obj_uri())]);
    answer
}

#[tokio::test]
async fn running_job_on_the_server_blocks_the_trigger() {
    let fresh = Network::test().finalized().with_jobs(vec![job(
        "7",
        JobType::Provision,
        JobState::Running,
        0,
        "v1",
    )]);
    assert!(check(get_object(&fresh), OnStaleCheckError::AllowTrigger).await);
}

#[tokio::test]
async fn table_of_server_histories() {
    use JobState::*;
    let cases: Vec<(Vec<provkit_core::JobStatus>, bool)> = vec![
        (vec![], false),
        (
            vec![job("1", JobType::Provision, Succeeded, 0, "v1")],
            false,
        ),
        (vec![job("1", JobType::Provision, Failed, 0, "v1")], false),
        (
            vec![job("1", JobType::Provision, Pending, 0, "other-version")],
            true,
        ),
        (vec![job("1", JobType::Provision, Unknown, 0, "v1")], true),
        // empty id: not a job
        (vec![job("", JobType::Provision, Running, 0, "v1")], false),
        // only deprovision jobs
        (vec![job("1", JobType::Deprovision, Running, 0, "")], false),
        // latest by timestamp decides, not array position
        (
            vec![
                job("2", JobType::Provision, Running, 5, "v1"),
                job("1", JobType::Provision, Succeeded, 1, "v1"),
            ],
            true,
        ),
        (
            vec![
                job("2", JobType::Provision, Running, 1, "v1"),
                job("1", JobType::Provision, Succeeded, 5, "v1"),
            ],
            false,
        ),
    ];
    for (jobs, want) in cases {
        let fresh = Network::test().with_jobs(jobs.clone());
        assert_eq!(
            check(get_object(&fresh), OnStaleCheckError::AllowTrigger).await,
            want,
            "{jobs:?}"
        );
    }
}

#[tokio::test]
async fn errors_fail_open_by_default_and_closed_when_configured() {
    let err = || Exchange::get(obj_uri(), serde_json::Value::Null).fails(500, "InternalError");
    assert!(!check(err(), OnStaleCheckError::AllowTrigger).await);
    assert!(check(err(), OnStaleCheckError::Requeue).await);
    // 403 as well
    let forbidden = Exchange::get(obj_uri(), serde_json::Value::Null).fails(403, "Forbidden");
    assert!(!check(forbidden, OnStaleCheckError::AllowTrigger).await);
}

#[tokio::test]
async fn object_gone_means_no_job() {
    let gone = Exchange::get(obj_uri(), serde_json::Value::Null).fails(404, "NotFound");
    assert!(!check(gone, OnStaleCheckError::Requeue).await);
}
