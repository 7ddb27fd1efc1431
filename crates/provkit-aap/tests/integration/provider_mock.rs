//! The provider against `MockAapApi` (feature `mock`): error prefixes and kind bookkeeping without HTTP.

use std::sync::Arc;

use provkit_aap::{
    AapApi, AapJobStatus, AapProvider, Error, JobKind, Launched, MockAapApi, Template, TemplateKind,
};
use provkit_lifecycle::{
    LaunchCertainty, LaunchContext, ProvisioningProvider, ResourceMeta, ResourceView,
};

fn resource() -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "s".into(),
            namespace: Some("ns".into()),
            uid: "uid-s".into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "Subnet", "metadata": {"name": "s"}}),
    )
}

fn workflow_template() -> Template {
    Template {
        id: 20,
        name: "wf".into(),
        kind: TemplateKind::WorkflowJobTemplate,
        organization: None,
        organization_name: None,
    }
}

#[tokio::test]
async fn workflow_launch_errors_use_the_workflow_prefix_and_undecodable_answers_are_outcome_unknown()
 {
    let mut mock = MockAapApi::new();
    mock.expect_get_template()
        .returning(|_| Ok(workflow_template()));
    mock.expect_launch_requirements().times(1).returning(|_| {
        Ok(provkit_aap::LaunchRequirements::from_value(
            &serde_json::json!({"ask_variables_on_launch": true}),
        ))
    });
    mock.expect_launch().times(1).returning(|_, _| {
        Err(Error::Decode {
            ctx: Box::new(provkit_aap::RequestContext {
                method: http::Method::POST,
                path: "/api/v2/workflow_job_templates/20/launch/".into(),
                status: Some(http::StatusCode::CREATED),
                request_id: None,
                product: None,
            }),
            message: "truncated".into(),
            source: None,
        })
    });
    let api: Arc<dyn AapApi> = Arc::new(mock);
    let p = AapProvider::with_templates(api, "wf", "wf-delete");
    let err = p
        .trigger_provision(&resource(), &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("failed to launch workflow template"),
        "{err}"
    );
    assert_eq!(err.launch_certainty(), LaunchCertainty::Unknown);
}

#[tokio::test]
async fn launched_workflow_jobs_are_polled_as_workflow_jobs_without_a_kind_lookup() {
    let mut mock = MockAapApi::new();
    mock.expect_get_template()
        .returning(|_| Ok(workflow_template()));
    mock.expect_launch_requirements().times(1).returning(|_| {
        Ok(provkit_aap::LaunchRequirements::from_value(
            &serde_json::json!({"ask_variables_on_launch": true}),
        ))
    });
    mock.expect_launch().returning(|_, _| {
        Ok(Launched {
            id: 456,
            kind: JobKind::WorkflowJob,
            status: AapJobStatus::Pending,
            ignored_fields: Default::default(),
            url: None,
            created: None,
        })
    });
    // A terminal workflow's outputs come from its node jobs: one list request.
    mock.expect_workflow_node_jobs()
        .times(1)
        .returning(|_| Ok(Vec::new()));
    mock.expect_find_job_kind().times(0);
    mock.expect_get_unified()
        .withf(|kind, id| *kind == JobKind::WorkflowJob && *id == 456)
        .returning(|kind, id| {
            Ok(provkit_aap::Job::from_value(
                &serde_json::json!({"id": id, "status": "successful"}),
                kind,
            )
            .unwrap())
        });
    let api: Arc<dyn AapApi> = Arc::new(mock);
    let p = AapProvider::with_templates(api, "wf", "wf-delete");
    let id = p
        .trigger_provision(&resource(), &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    assert_eq!(id, "456");
    let st = p.provision_status(&resource(), &id).await.unwrap();
    assert_eq!(st.state, provkit_core::JobState::Succeeded);
    assert_eq!(st.message, "successful");
}

/// A mock whose template `create` is job template 7 and whose server states no time.
fn create_template_mock() -> MockAapApi {
    let mut mock = MockAapApi::new();
    mock.expect_get_template().returning(|_| {
        Ok(Template {
            id: 7,
            name: "create".into(),
            kind: TemplateKind::JobTemplate,
            organization: None,
            organization_name: None,
        })
    });
    mock.expect_server_time().returning(|| Ok(None));
    mock
}

/// A provider on `api` (templates `create` / `delete`, 1 s clock-skew allowance, 10 s launch
/// deadline).
fn create_provider(api: Arc<dyn AapApi>) -> provkit_aap::AapProviderBuilder {
    AapProvider::builder(api)
        .templates(provkit_aap::provider::TemplateNames::explicit(
            "create", "delete",
        ))
        .clock_skew(std::time::Duration::from_secs(1))
        .launch_deadline(std::time::Duration::from_secs(10))
}

/// An `AapApi` that does not offer window reads (the trait's default for `jobs_between`, e.g. a
/// wrapper written before it existed) still has its inherited intents looked up: the provider
/// reads the intent's own window, once, with `first_job_with_key_between`.
#[tokio::test]
async fn an_api_without_window_reads_gets_each_inherited_window_read_on_its_own() {
    let mut mock = create_template_mock();
    mock.expect_jobs_between()
        .times(1)
        .returning(|_, _, _| Ok(provkit_aap::WindowJobs::unsupported()));
    mock.expect_first_job_with_key_between()
        .times(1)
        .returning(|kind, _, _, _, _, from_end, _| {
            assert!(!from_end, "an inherited window is read oldest first");
            Ok(provkit_aap::Job::from_value(
                &serde_json::json!({"id": 77, "status": "successful"}),
                kind,
            ))
        });
    let api: Arc<dyn AapApi> = Arc::new(mock);
    let p = create_provider(api).build();
    let key = provkit_lifecycle::IdempotencyKey::new("pk1-uid-s-p-00000000000000aa");
    // Long closed, and past any wait for the rest of its hand-over.
    let intent =
        provkit_core::Clock::now(&provkit_core::SystemClock) - chrono::Duration::seconds(200);
    let found = p
        .find_job_by_idempotency_key_since(
            &resource(),
            &provkit_core::JobType::Provision,
            &key,
            Some(intent),
        )
        .await
        .unwrap()
        .expect("found by the window's own read");
    assert_eq!(found.job_id, "77");
}
