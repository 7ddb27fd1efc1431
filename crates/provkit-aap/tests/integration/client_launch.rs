//! aap-api.md test cases 15–17, 22, 23.

use provkit_aap::{AapJobStatus, JobKind, LaunchRequest};
use provkit_testing::fake_aap::{AskFlags, JobTemplateSpec, Mode};

use crate::support::{client, requests_to, server, server_with};

fn vars(v: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap()
}

#[tokio::test]
async fn case15_launch_job_and_workflow_templates_with_object_extra_vars() {
    let server = server(Mode::Gateway).await;
    let client = client(&server);
    let jt = client.get_template("provision-job").await.unwrap();
    let job = client
        .launch_job_template(
            jt.id,
            &LaunchRequest::new(vars(&serde_json::json!({"network_name": "net-a"}))),
        )
        .await
        .unwrap();
    assert_eq!(job.kind, JobKind::Job);
    let body: serde_json::Value =
        serde_json::from_str(&requests_to(&server, "/launch/").pop().unwrap().body).unwrap();
    assert_eq!(
        body["extra_vars"],
        serde_json::json!({"network_name": "net-a"}),
        "sent as an object"
    );
    let detail = client.get_job(job.id).await.unwrap();
    assert_eq!(detail.extra_vars["network_name"], "net-a");
    assert!(
        detail.extra_vars_raw.is_some(),
        "the server returns extra_vars as a string"
    );

    let wf = client.get_template("provision-workflow").await.unwrap();
    let launched = client
        .launch_workflow_template(wf.id, &LaunchRequest::default())
        .await
        .unwrap();
    assert_eq!(launched.kind, JobKind::WorkflowJob);
    assert_eq!(
        client.get_workflow_job(launched.id).await.unwrap().kind,
        JobKind::WorkflowJob
    );
}

#[tokio::test]
async fn case16_sliced_job_template_launch_is_followed_as_a_workflow_job() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec {
            job_slice_count: 2,
            ..JobTemplateSpec::new("sliced", "osac")
        })
    })
    .await;
    let client = client(&server);
    let t = client.get_template("sliced").await.unwrap();
    let launched = client.launch(&t, &LaunchRequest::default()).await.unwrap();
    assert_eq!(launched.kind, JobKind::WorkflowJob);
    let wf = client
        .get_unified(launched.kind, launched.id)
        .await
        .unwrap();
    assert!(wf.is_sliced_job);
    assert_eq!(
        client.find_job_kind(launched.id).await.unwrap(),
        Some(JobKind::WorkflowJob)
    );
}

#[tokio::test]
async fn case17_ignored_fields_are_surfaced() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec {
            ask: AskFlags::default(),
            ..JobTemplateSpec::new("no-ask", "osac")
        })
    })
    .await;
    let client = client(&server);
    let t = client.get_template("no-ask").await.unwrap();
    let launched = client
        .launch(
            &t,
            &LaunchRequest::new(vars(&serde_json::json!({"network_name": "net-c"})))
                .limit("localhost"),
        )
        .await
        .unwrap();
    assert_eq!(
        launched.ignored_fields["extra_vars"],
        serde_json::json!({"network_name": "net-c"})
    );
    assert_eq!(launched.ignored_fields["limit"], "localhost");
    let t2 = client.get_template("provision-job").await.unwrap();
    assert!(
        client
            .launch(&t2, &LaunchRequest::default())
            .await
            .unwrap()
            .ignored_fields
            .is_empty()
    );
}

#[tokio::test]
async fn case22_unset_fields_are_omitted_and_falsy_values_can_be_sent() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec {
            ask: AskFlags {
                variables: true,
                limit: true,
                verbosity: true,
                diff_mode: true,
                ..AskFlags::default()
            },
            ..JobTemplateSpec::new("prompts", "osac")
        })
    })
    .await;
    let client = client(&server);
    let t = client.get_template("prompts").await.unwrap();
    let launched = client
        .launch(
            &t,
            &LaunchRequest::default()
                .limit("")
                .verbosity(0)
                .diff_mode(false),
        )
        .await
        .unwrap();
    let body: serde_json::Value =
        serde_json::from_str(&requests_to(&server, "/launch/").pop().unwrap().body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"extra_vars": {}, "limit": "", "verbosity": 0, "diff_mode": false})
    );
    assert!(
        launched.ignored_fields.is_empty(),
        "{:?}",
        launched.ignored_fields
    );
}

#[tokio::test]
async fn case23_launch_status_pending_is_not_terminal() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let t = client.get_template("provision-job").await.unwrap();
    let launched = client.launch(&t, &LaunchRequest::default()).await.unwrap();
    assert_eq!(launched.status, AapJobStatus::Pending);
    assert!(!launched.status.is_terminal());
    assert!(
        launched
            .url
            .as_deref()
            .is_some_and(|u| u.ends_with(&format!("/jobs/{}/", launched.id)))
    );
}
