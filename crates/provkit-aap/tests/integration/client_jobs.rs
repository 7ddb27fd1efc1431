//! aap-api.md test cases 24–26, 32, 36, 37 and stdout.

use std::time::Duration;

use provkit_aap::{AapJobStatus, CancelOutcome, Error, JobKind, LaunchRequest};
use provkit_testing::fake_aap::{JobScript, JobTemplateSpec, Mode, Outcome};

use crate::support::{client, quick, requests_to, server_with};

async fn launch_with(
    script: JobScript,
) -> (
    provkit_testing::fake_aap::FakeAapServer,
    provkit_aap::AapClient,
    u64,
) {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(script),
            ..JobTemplateSpec::new("scripted", "osac")
        })
    })
    .await;
    let client = client(&server);
    let t = client.get_template("scripted").await.unwrap();
    let id = client
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap()
        .id;
    (server, client, id)
}

async fn poll_to_end(
    client: &provkit_aap::AapClient,
    kind: JobKind,
    id: u64,
) -> (Vec<AapJobStatus>, provkit_aap::Job) {
    let mut seen = Vec::new();
    for _ in 0..400 {
        let job = client.get_unified(kind, id).await.unwrap();
        if seen.last() != Some(&job.status) {
            seen.push(job.status.clone());
        }
        if job.status.is_terminal() {
            return (seen, job);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("job {id} never finished: {seen:?}");
}

#[tokio::test]
async fn case24_status_sequence_ends_successful() {
    let (_server, client, id) =
        launch_with(quick(JobScript::successful(Duration::from_millis(150)))).await;
    let (seen, job) = poll_to_end(&client, JobKind::Job, id).await;
    assert_eq!(seen.first(), Some(&AapJobStatus::Pending));
    assert_eq!(seen.last(), Some(&AapJobStatus::Successful));
    assert!(seen.contains(&AapJobStatus::Running), "{seen:?}");
    assert!(!job.failed);
    assert!(job.started.is_some() && job.finished.is_some());
}

#[tokio::test]
async fn case25_failure_outcomes_carry_explanation_and_traceback() {
    for (outcome, status) in [
        (Outcome::Failed, AapJobStatus::Failed),
        (Outcome::Error, AapJobStatus::Error),
        (Outcome::Canceled, AapJobStatus::Canceled),
    ] {
        let script = quick(JobScript::ending(outcome, Duration::from_millis(60)))
            .with_explanation("Job terminated due to timeout")
            .with_traceback("Traceback: boom");
        let (_server, client, id) = launch_with(script).await;
        let (_, job) = poll_to_end(&client, JobKind::Job, id).await;
        assert_eq!(job.status, status);
        assert!(job.failed);
        assert_eq!(job.job_explanation, "Job terminated due to timeout");
        assert_eq!(job.result_traceback, "Traceback: boom");
    }
}

#[tokio::test]
async fn case26_pending_straight_to_error() {
    let (_server, client, id) =
        launch_with(JobScript::error_before_start(Duration::from_millis(80))).await;
    let (seen, job) = poll_to_end(&client, JobKind::Job, id).await;
    assert!(!seen.contains(&AapJobStatus::Running), "{seen:?}");
    assert_eq!(job.status, AapJobStatus::Error);
    assert!(job.result_traceback.contains("Failed to start work unit"));
    assert!(job.started.is_none() || job.finished.is_some());
}

#[tokio::test]
async fn case32_artifacts_and_extra_vars_decode() {
    let script = quick(JobScript::successful(Duration::from_millis(30)))
        .with_artifacts(serde_json::json!({"cluster_id": "c-1"}));
    let (_server, client, id) = launch_with(script).await;
    let (_, job) = poll_to_end(&client, JobKind::Job, id).await;
    assert_eq!(job.artifacts, serde_json::json!({"cluster_id": "c-1"}));
    assert!(job.extra_vars_raw.is_some());
}

#[tokio::test]
async fn case36_cancel_accepted_then_canceled() {
    let server = server_with(Mode::Awx, |b| {
        b.cancel_delay(Duration::from_millis(150))
            .job_template(JobTemplateSpec {
                script: Some(quick(JobScript::run_until_canceled())),
                ..JobTemplateSpec::new("forever", "osac")
            })
    })
    .await;
    let client = client(&server);
    let t = client.get_template("forever").await.unwrap();
    let id = client
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap()
        .id;
    crate::support::eventually(|| async {
        client.get_job(id).await.unwrap().status == AapJobStatus::Running
    })
    .await;
    assert!(client.can_cancel(JobKind::Job, id).await.unwrap());
    assert_eq!(
        client.cancel_job(id).await.unwrap(),
        CancelOutcome::Accepted
    );
    let (seen, job) = poll_to_end(&client, JobKind::Job, id).await;
    assert_eq!(job.status, AapJobStatus::Canceled, "{seen:?}");
    assert!(!client.can_cancel(JobKind::Job, id).await.unwrap());
    // case 37: a finished job answers 405, reported as AlreadyFinished.
    assert_eq!(
        client.cancel_job(id).await.unwrap(),
        CancelOutcome::AlreadyFinished
    );
    let cancels = requests_to(&server, "/cancel/");
    assert!(
        cancels
            .iter()
            .all(|r| r.path == format!("/api/v2/jobs/{id}/cancel/"))
    );
}

#[tokio::test]
async fn workflow_jobs_are_cancelled_at_workflow_jobs() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(JobScript::run_until_canceled())),
            ..JobTemplateSpec::new("forever", "osac")
        })
        .workflow_job_template(provkit_testing::fake_aap::WorkflowJobTemplateSpec::new(
            "wf-forever",
            "osac",
            &["forever"],
        ))
    })
    .await;
    let client = client(&server);
    let t = client.get_template("wf-forever").await.unwrap();
    let launched = client.launch(&t, &LaunchRequest::default()).await.unwrap();
    assert_eq!(launched.kind, JobKind::WorkflowJob);
    assert_eq!(
        client.cancel_workflow_job(launched.id).await.unwrap(),
        CancelOutcome::Accepted
    );
    let (_, job) = poll_to_end(&client, JobKind::WorkflowJob, launched.id).await;
    assert_eq!(job.status, AapJobStatus::Canceled);
    assert_eq!(
        client.cancel_workflow_job(launched.id).await.unwrap(),
        CancelOutcome::AlreadyFinished
    );
    assert!(
        requests_to(&server, "/cancel/")
            .iter()
            .all(|r| r.path.contains("/workflow_jobs/"))
    );
}

#[tokio::test]
async fn unknown_job_is_not_found() {
    let (_server, client, _) =
        launch_with(quick(JobScript::successful(Duration::from_millis(10)))).await;
    for kind in [JobKind::Job, JobKind::WorkflowJob] {
        let err = client.get_unified(kind, 999_999).await.unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
        assert!(
            client
                .cancel(kind, 999_999)
                .await
                .unwrap_err()
                .is_not_found()
        );
    }
    assert_eq!(client.find_job_kind(999_999).await.unwrap(), None);
}

#[tokio::test]
async fn stdout_text_and_too_large_fallback() {
    let script = quick(JobScript::successful(Duration::from_millis(20)))
        .with_stdout("PLAY [all]\nok: [localhost]\n");
    let (server, client, id) = launch_with(script).await;
    poll_to_end(&client, JobKind::Job, id).await;
    assert_eq!(
        client.job_stdout(id).await.unwrap(),
        "PLAY [all]\nok: [localhost]\n"
    );
    assert_eq!(requests_to(&server, "/stdout/").len(), 1);

    let big: String = "x"
        .repeat(80)
        .chars()
        .chain(std::iter::once('\n'))
        .cycle()
        .take(1_200_000)
        .collect();
    let (server, client, id) = launch_with(
        quick(JobScript::successful(Duration::from_millis(20))).with_stdout(big.clone()),
    )
    .await;
    poll_to_end(&client, JobKind::Job, id).await;
    let text = client.job_stdout(id).await.unwrap();
    assert_eq!(text.len(), big.len());
    let formats: Vec<String> = requests_to(&server, "/stdout/")
        .into_iter()
        .map(|r| r.query)
        .collect();
    assert_eq!(
        formats,
        vec!["format=txt".to_owned(), "format=txt_download".to_owned()]
    );
}
