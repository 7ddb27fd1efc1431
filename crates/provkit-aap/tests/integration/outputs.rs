//! Job outputs and failure details over loopback HTTP against the fake AAP (aap-observed.md
//! §13.2): a job's `artifacts`, a workflow's node jobs' artifacts, and a playbook failure whose
//! reason is only in the failed job events.

use std::time::Duration;

use provkit_aap::AapProvider;
use provkit_core::JobState;
use provkit_lifecycle::{LaunchContext, ProvisioningProvider, ResourceMeta, ResourceView};
use provkit_testing::fake_aap::{JobScript, JobTemplateSpec, Mode, WorkflowJobTemplateSpec};

use crate::support::{client, quick, requests_to, server_with};

fn resource(name: &str) -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "ComputeInstance".into(),
            name: name.into(),
            namespace: Some("default".into()),
            uid: format!("uid-{name}"),
            ..Default::default()
        },
        serde_json::json!({"kind": "ComputeInstance", "metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": {}}),
    )
}

async fn run_to_end(p: &AapProvider, r: &ResourceView) -> provkit_lifecycle::ProvisionStatus {
    let id = p
        .trigger_provision(r, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    for _ in 0..400 {
        let st = p.provision_status(r, &id).await.unwrap();
        if st.state.is_terminal() {
            return st;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("job {id} did not finish");
}

#[tokio::test]
async fn job_outputs_are_its_artifacts() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(
                JobScript::successful(Duration::from_millis(50))
                    .with_artifacts(serde_json::json!({"vm_ip": "10.0.0.5", "disks": 2})),
            )),
            ..JobTemplateSpec::new("create-vm", "osac")
        })
    })
    .await;
    let p = AapProvider::with_templates(client(&server), "create-vm", "deprovision-job");
    let st = run_to_end(&p, &resource("vm-1")).await;
    assert_eq!(st.state, JobState::Succeeded);
    assert_eq!(st.outputs["vm_ip"], "10.0.0.5");
    assert_eq!(st.outputs["disks"], 2);
    assert!(
        requests_to(&server, "/job_events/").is_empty(),
        "no extra request for a success"
    );
}

#[tokio::test]
async fn workflow_outputs_come_from_its_node_jobs() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(
                JobScript::successful(Duration::from_millis(40))
                    .with_artifacts(serde_json::json!({"network_id": "net-7", "stage": "net"})),
            )),
            ..JobTemplateSpec::new("wf-net", "osac")
        })
        .job_template(JobTemplateSpec {
            script: Some(quick(
                JobScript::successful(Duration::from_millis(40))
                    .with_artifacts(serde_json::json!({"vm_ip": "10.0.0.9", "stage": "vm"})),
            )),
            ..JobTemplateSpec::new("wf-vm", "osac")
        })
        .workflow_job_template(WorkflowJobTemplateSpec::new(
            "wf-create",
            "osac",
            &["wf-net", "wf-vm"],
        ))
    })
    .await;
    let p = AapProvider::with_templates(client(&server), "wf-create", "deprovision-job");
    let st = run_to_end(&p, &resource("vm-2")).await;
    assert_eq!(st.state, JobState::Succeeded);
    assert_eq!(st.outputs["network_id"], "net-7");
    assert_eq!(st.outputs["vm_ip"], "10.0.0.9");
    assert_eq!(
        st.outputs["stage"], "vm",
        "the node that finished last wins"
    );
    let lists: Vec<_> = requests_to(&server, "/jobs/")
        .into_iter()
        .filter(|r| r.query.contains("unified_job_node__workflow_job"))
        .collect();
    assert_eq!(lists.len(), 1, "one node-jobs request, once terminal");
}

#[tokio::test]
async fn playbook_failure_details_come_from_the_failed_events() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(JobScript::playbook_failure(
                "Create VM",
                "localhost",
                "quota exceeded for project tenant-a",
            ))),
            ..JobTemplateSpec::new("create-vm", "osac")
        })
    })
    .await;
    let p = AapProvider::with_templates(client(&server), "create-vm", "deprovision-job");
    let st = run_to_end(&p, &resource("vm-3")).await;
    assert_eq!(st.state, JobState::Failed);
    assert_eq!(
        st.error_details,
        "Create VM on localhost: quota exceeded for project tenant-a"
    );
    assert_eq!(
        st.message_with_details(),
        "failed: Create VM on localhost: quota exceeded for project tenant-a"
    );
    let events = requests_to(&server, "/job_events/");
    assert_eq!(events.len(), 1, "one bounded request");
    assert!(
        events[0].query.contains("failed=true"),
        "{}",
        events[0].query
    );
    assert!(
        events[0].query.contains("page_size=10"),
        "{}",
        events[0].query
    );

    // A failure with a traceback needs no event request.
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(JobScript::error_before_start(Duration::from_millis(
                30,
            )))),
            ..JobTemplateSpec::new("broken", "osac")
        })
    })
    .await;
    let p = AapProvider::with_templates(client(&server), "broken", "deprovision-job");
    let st = run_to_end(&p, &resource("vm-4")).await;
    assert!(st.error_details.contains("Failed to start work unit"));
    assert!(requests_to(&server, "/job_events/").is_empty());
}
