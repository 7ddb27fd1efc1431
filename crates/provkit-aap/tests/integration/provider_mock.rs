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
