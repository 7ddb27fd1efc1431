//! AapProvider against the fake: spec §7.2, §7.3 and §7.5 (adapted), workflow routing, kind
//! resolution cost, payload handling, exactly-once launches.

use std::time::Duration;

use provkit_aap::provider::{Envelope, IDEMPOTENCY_KEY_VAR, TemplateNames};
use provkit_aap::{AapProvider, LaunchRequest};
use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    DeprovisionAction, IdempotencyKey, LaunchCertainty, LaunchContext, ProvisioningProvider,
    ResolvedStorageClass, ResourceMeta, ResourceView,
};
use provkit_testing::fake_aap::{
    FakeAapServer, Fault, FaultAction, JobScript, JobTemplateSpec, Mode, RetryAfter, Trigger,
    WorkflowJobTemplateSpec,
};

use crate::support::{builder, client, quick, requests_to, server, server_with, template_id};

fn resource(kind: &str, name: &str) -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: kind.into(),
            name: name.into(),
            namespace: Some("default".into()),
            uid: format!("uid-{name}"),
            ..Default::default()
        },
        serde_json::json!({
            "apiVersion": "osac.openshift.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                         "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"cidr": "10.0.0.0/24"},
        }),
    )
}

/// `view` with its JSON changed by `edit`.
fn edited(view: &ResourceView, edit: impl FnOnce(&mut serde_json::Value)) -> ResourceView {
    let mut json = view.json().unwrap().clone();
    edit(&mut json);
    ResourceView::new(view.meta(), json)
}

/// Go's `NewAAPProvider` as the newest Go builds it: explicit names, the `osac_job_vars` envelope.
fn explicit(server: &FakeAapServer) -> AapProvider {
    AapProvider::builder(client(server))
        .templates(TemplateNames::explicit("provision-job", "deprovision-job"))
        .envelope(Envelope::OsacJobVars)
        .build()
}

fn launch_body(server: &FakeAapServer) -> serde_json::Value {
    serde_json::from_str(
        &requests_to(server, "/launch/")
            .pop()
            .expect("a launch")
            .body,
    )
    .unwrap()
}

async fn wait_terminal(
    p: &AapProvider,
    r: &ResourceView,
    id: &str,
) -> provkit_lifecycle::ProvisionStatus {
    for _ in 0..400 {
        let st = p.provision_status(r, id).await.unwrap();
        if st.state.is_terminal() {
            return st;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("job {id} did not finish");
}

#[tokio::test]
async fn s72_trigger_provision_job_template_envelope_and_result() {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let r = resource("VirtualNetwork", "test-resource");
    let res = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(res.initial_state, JobState::Pending);
    assert_eq!(res.message, "Provisioning job triggered");
    assert!(res.job_id.parse::<u64>().is_ok());
    // Before the first launch the template's launch requirements are read (GET …/launch/).
    let all = requests_to(&server, "/launch/");
    assert_eq!(
        all.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(),
        ["GET", "POST"]
    );
    let launches: Vec<_> = all.into_iter().filter(|r| r.method == "POST").collect();
    let header = |name: &str| {
        launches[0]
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(launches[0].method, "POST");
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert!(header("authorization").is_some_and(|v| v.starts_with("Bearer ")));
    assert_eq!(
        launches[0].path,
        format!(
            "/api/v2/job_templates/{}/launch/",
            template_id(&server, "provision-job")
        ),
        "numeric id in the path"
    );
    let body = launch_body(&server);
    let payload = &body["extra_vars"]["osac_job_vars"]["resource"];
    assert_eq!(payload["metadata"]["name"], "test-resource");
    assert_eq!(payload["metadata"]["namespace"], "default");
    assert!(
        payload["metadata"].get("managedFields").is_none(),
        "managedFields stripped"
    );
    assert!(
        body["extra_vars"]["osac_job_vars"]
            .get("tenant_storage_classes")
            .is_none()
    );
    assert_eq!(p.name(), "aap");
}

#[tokio::test]
async fn s72_workflow_template_is_polled_and_cancelled_at_workflow_jobs() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(JobScript::run_until_canceled())),
            ..JobTemplateSpec::new("forever", "osac")
        })
        .workflow_job_template(WorkflowJobTemplateSpec::new(
            "wf-forever",
            "osac",
            &["forever"],
        ))
    })
    .await;
    let p = AapProvider::with_templates(client(&server), "wf-forever", "deprovision-job");
    let r = resource("VirtualNetwork", "wf");
    let res = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap();
    let id: u64 = res.job_id.parse().expect("bare numeric id, as Go writes");
    let st = p.provision_status(&r, &res.job_id).await.unwrap();
    assert!(!st.state.is_terminal());
    assert!(requests_to(&server, &format!("/workflow_jobs/{id}/")).len() == 1);
    assert!(
        requests_to(&server, &format!("/jobs/{id}/"))
            .iter()
            .all(|r| r.path.contains("workflow_jobs"))
    );
    // Deprovision cancels the workflow job at /workflow_jobs/ and waits.
    let jobs = vec![JobStatus::new(
        res.job_id.clone(),
        JobType::Provision,
        JobState::Running,
        chrono::DateTime::UNIX_EPOCH,
    )];
    let d = p
        .trigger_deprovision(&r, &jobs, &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Waiting);
    assert!(d.block_deletion_on_failure);
    assert_eq!(
        requests_to(&server, "/cancel/").pop().unwrap().path,
        format!("/api/controller/v2/workflow_jobs/{id}/cancel/")
    );
    // Once canceled, deprovision proceeds.
    let st = wait_terminal(&p, &r, &res.job_id).await;
    assert_eq!(st.state, JobState::Canceled);
    let d = p
        .trigger_deprovision(&r, &jobs, &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Triggered);
    assert_eq!(d.provision_job_status.unwrap().state, JobState::Canceled);
}

#[tokio::test]
async fn s72_tenant_storage_classes_in_order_and_absent_when_unset() {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let ctx = LaunchContext::new().with_tenant_storage_classes(vec![
        ResolvedStorageClass::new("ceph-fast", "fast"),
        ResolvedStorageClass::new("ceph-default", "default"),
    ]);
    p.trigger_provision(&resource("ComputeInstance", "ci"), &ctx)
        .await
        .unwrap();
    assert_eq!(
        launch_body(&server)["extra_vars"]["osac_job_vars"]["tenant_storage_classes"],
        serde_json::json!([{"name": "ceph-fast", "tier": "fast"}, {"name": "ceph-default", "tier": "default"}])
    );
}

#[tokio::test]
async fn s72_errors_keep_the_go_prefixes() {
    let server = server(Mode::Awx).await;
    let none = AapProvider::builder(client(&server)).build();
    let err = none
        .trigger_provision(&resource("Subnet", "s"), &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("create template not configured"),
        "{err}"
    );
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade);
    let err = none
        .trigger_deprovision(&resource("Subnet", "s"), &[], &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("delete template not configured"),
        "{err}"
    );

    let missing = AapProvider::with_templates(client(&server), "no-such-template", "x");
    let err = missing
        .trigger_provision(&resource("Subnet", "s"), &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("failed to get template"), "{err}");
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade);

    let p = explicit(&server);
    server.aap().add_fault(Fault::new(
        "POST",
        "*/launch/",
        FaultAction::json(400, &serde_json::json!({"extra_vars": ["bad"]})),
    ));
    let err = p
        .trigger_provision(&resource("Subnet", "s"), &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("failed to launch job template"),
        "{err}"
    );
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade);
    server.aap().clear_faults();

    let err = p
        .provision_status(&resource("Subnet", "s"), "987654")
        .await
        .unwrap_err();
    assert!(
        err.is_not_found() && err.to_string().contains("failed to get job"),
        "{err}"
    );
    let unreachable = AapProvider::with_templates(
        provkit_aap::AapClient::builder("http://127.0.0.1:9")
            .base_path("/api/v2/")
            .retry(provkit_aap::RetryConfig::disabled())
            .build()
            .unwrap(),
        "p",
        "d",
    );
    let err = unreachable
        .provision_status(&resource("Subnet", "s"), "5")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("failed to get job"), "{err}");
}

#[tokio::test]
async fn s72_status_mapping_through_the_fake() {
    let cases = [
        (
            quick(JobScript::successful(Duration::from_millis(20))),
            JobState::Succeeded,
            "successful",
            "",
        ),
        (
            quick(JobScript::ending(
                provkit_testing::fake_aap::Outcome::Failed,
                Duration::from_millis(20),
            ))
            .with_traceback("Error: Connection timeout"),
            JobState::Failed,
            "failed",
            "Error: Connection timeout",
        ),
        (
            quick(JobScript::ending(
                provkit_testing::fake_aap::Outcome::Error,
                Duration::from_millis(20),
            )),
            JobState::Failed,
            "error",
            "",
        ),
        (
            quick(JobScript::ending(
                provkit_testing::fake_aap::Outcome::Canceled,
                Duration::from_millis(20),
            )),
            JobState::Canceled,
            "canceled",
            "",
        ),
    ];
    for (script, state, message, details) in cases {
        // The first poll must see `pending`: give it a second, not 30 ms, on a loaded machine.
        let script = JobScript {
            pending: Duration::from_secs(1),
            ..script
        };
        let server = server_with(Mode::Awx, |b| {
            b.job_template(JobTemplateSpec {
                script: Some(script),
                ..JobTemplateSpec::new("scripted", "osac")
            })
        })
        .await;
        let p = AapProvider::with_templates(client(&server), "scripted", "deprovision-job");
        let r = resource("Subnet", "s");
        let id = p
            .trigger_provision(&r, &LaunchContext::new())
            .await
            .unwrap()
            .job_id;
        let first = p.provision_status(&r, &id).await.unwrap();
        assert_eq!(first.state, JobState::Pending);
        let st = wait_terminal(&p, &r, &id).await;
        assert_eq!(
            (st.state, st.message.as_str(), st.error_details.as_str()),
            (state, message, details)
        );
        assert_eq!(st.job_id, id);
        assert!(st.end_time.is_some());
    }
}

#[tokio::test]
async fn s72_deprovision_cancel_first_flow() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(quick(JobScript::run_until_canceled())),
            ..JobTemplateSpec::new("forever", "osac")
        })
    })
    .await;
    let p = AapProvider::with_templates(client(&server), "forever", "deprovision-job");
    let r = resource("Subnet", "s");
    // 1. No provision jobs → Triggered, block=true.
    let d = p
        .trigger_deprovision(&r, &[], &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(
        (d.action, d.block_deletion_on_failure),
        (DeprovisionAction::Triggered, true)
    );
    assert!(d.provision_job_status.is_none());
    // 3. Running provision job → cancel accepted → Waiting with the running status.
    let id = crate::support::provision_running(&p, &r).await;
    let jobs = vec![JobStatus::new(
        id.clone(),
        JobType::Provision,
        JobState::Running,
        chrono::DateTime::UNIX_EPOCH,
    )];
    let d = p
        .trigger_deprovision(&r, &jobs, &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Waiting);
    assert_eq!(d.provision_job_status.unwrap().state, JobState::Running);
    // 4. Cancel answering 405 → Triggered immediately.
    server.aap().add_fault(Fault::new(
        "POST",
        "*/cancel/",
        FaultAction::json(
            405,
            &serde_json::json!({"detail": "Method \"POST\" not allowed."}),
        ),
    ));
    let second = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    let jobs = vec![JobStatus::new(
        second,
        JobType::Provision,
        JobState::Pending,
        chrono::DateTime::UNIX_EPOCH,
    )];
    let d = p
        .trigger_deprovision(&r, &jobs, &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Triggered);
    server.aap().clear_faults();
    // A purged provision job → proceed.
    let purged = vec![JobStatus::new(
        "999999",
        JobType::Provision,
        JobState::Running,
        chrono::DateTime::UNIX_EPOCH,
    )];
    assert_eq!(
        p.trigger_deprovision(&r, &purged, &LaunchContext::new())
            .await
            .unwrap()
            .action,
        DeprovisionAction::Triggered
    );
    // Another cancel error → error with the Go prefix.
    let third = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    server.aap().add_fault(Fault::new(
        "POST",
        "*/cancel/",
        FaultAction::json(403, &serde_json::json!({"detail": "nope"})),
    ));
    let jobs = vec![JobStatus::new(
        third,
        JobType::Provision,
        JobState::Pending,
        chrono::DateTime::UNIX_EPOCH,
    )];
    let err = p
        .trigger_deprovision(&r, &jobs, &LaunchContext::new())
        .await
        .unwrap_err();
    let chain = provkit_lifecycle::ErrorChain(&err).to_string();
    assert!(
        chain.contains("failed to cancel provision job: failed to cancel job"),
        "{chain}"
    );
}

/// Presets over loopback HTTP: a neutral prefix provider asks for `<prefix>-create-cluster-order`,
/// the OSAC preset for `osac-create-hosted-cluster`.
#[tokio::test]
async fn osac_preset_versus_neutral_prefix() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec::new("acme-create-cluster-order", "osac"))
            .job_template(JobTemplateSpec::new("osac-create-hosted-cluster", "osac"))
    })
    .await;
    let co = resource("ClusterOrder", "co");
    for (p, want) in [
        (
            AapProvider::with_prefix(client(&server), "acme"),
            "acme-create-cluster-order",
        ),
        (
            AapProvider::osac(client(&server)),
            "osac-create-hosted-cluster",
        ),
    ] {
        p.trigger_provision(&co, &LaunchContext::new())
            .await
            .unwrap();
        assert_eq!(
            requests_to(&server, "/launch/").pop().unwrap().path,
            format!(
                "/api/controller/v2/job_templates/{}/launch/",
                template_id(&server, want)
            ),
            "{want}"
        );
    }
    // Without the override a neutral `osac` prefix does not find OSAC's template.
    let err = AapProvider::with_prefix(client(&server), "osac")
        .trigger_provision(&co, &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("osac-create-cluster-order"),
        "{err}"
    );
}

#[tokio::test]
async fn s72_prefix_naming_and_cluster_order() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec::new("osac-delete-subnet", "osac"))
            .job_template(JobTemplateSpec::new("osac-create-security-group", "osac"))
            .job_template(JobTemplateSpec::new("osac-create-hosted-cluster", "osac"))
            .job_template(JobTemplateSpec::new("osac-delete-hosted-cluster", "osac"))
    })
    .await;
    // The OSAC preset (Go's names); the neutral prefix provider has no ClusterOrder override.
    let p = AapProvider::osac(client(&server));
    p.trigger_provision(&resource("VirtualNetwork", "vn"), &LaunchContext::new())
        .await
        .unwrap();
    assert!(
        requests_to(&server, "unified_job_templates")
            .pop()
            .unwrap()
            .query
            .contains("name=osac-create-virtual-network")
    );
    assert_eq!(
        requests_to(&server, "/launch/").pop().unwrap().path,
        format!(
            "/api/v2/job_templates/{}/launch/",
            template_id(&server, "osac-create-virtual-network")
        )
    );
    let d = p
        .trigger_deprovision(&resource("Subnet", "sn"), &[], &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Triggered);
    p.trigger_provision(&resource("SecurityGroup", "sg"), &LaunchContext::new())
        .await
        .unwrap();
    let co = resource("ClusterOrder", "co");
    let id = p
        .trigger_provision(&co, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    assert_eq!(
        requests_to(&server, "/launch/").pop().unwrap().path,
        format!(
            "/api/v2/job_templates/{}/launch/",
            template_id(&server, "osac-create-hosted-cluster")
        )
    );
    assert_eq!(wait_terminal(&p, &co, &id).await.state, JobState::Succeeded);
    assert_eq!(
        p.trigger_deprovision(&co, &[], &LaunchContext::new())
            .await
            .unwrap()
            .action,
        DeprovisionAction::Triggered
    );
    let err = p
        .trigger_provision(&resource("", "nokind"), &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("resource has no Kind set"),
        "{err}"
    );
}

#[tokio::test]
async fn s73_factory_combinations() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec::new("my-custom-provision", "osac"))
            .job_template(JobTemplateSpec::new("osac-delete-compute-instance", "osac"))
            .job_template(JobTemplateSpec::new("osac-create-hosted-cluster", "osac"))
            .job_template(JobTemplateSpec::new("my-provision", "osac"))
    })
    .await;
    let ci = resource("ComputeInstance", "ci");
    let both = AapProvider::builder(client(&server))
        .provision_template("my-custom-provision")
        .template_prefix("osac")
        .build();
    both.trigger_provision(&ci, &LaunchContext::new())
        .await
        .unwrap();
    assert!(
        requests_to(&server, "unified_job_templates")
            .pop()
            .unwrap()
            .query
            .contains("name=my-custom-provision")
    );
    let d = both
        .trigger_deprovision(&ci, &[], &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Triggered);
    assert!(
        requests_to(&server, "unified_job_templates")
            .pop()
            .unwrap()
            .query
            .contains("name=osac-delete-compute-instance")
    );
    // Go's factory with only a prefix: the OSAC preset (prefix `osac` + OSAC's overrides).
    let prefix_only = AapProvider::osac(client(&server));
    prefix_only
        .trigger_provision(&resource("ClusterOrder", "co"), &LaunchContext::new())
        .await
        .unwrap();
    assert!(
        requests_to(&server, "unified_job_templates")
            .pop()
            .unwrap()
            .query
            .contains("name=osac-create-hosted-cluster")
    );
    AapProvider::with_templates(client(&server), "my-provision", "my-deprovision")
        .trigger_provision(&ci, &LaunchContext::new())
        .await
        .unwrap();
    let err = AapProvider::builder(client(&server))
        .templates(TemplateNames::default())
        .build()
        .trigger_provision(&ci, &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("template not configured"));
}

#[tokio::test]
async fn kind_follows_from_the_template_and_a_wrong_guess_costs_one_request() {
    let server = server(Mode::Gateway).await;
    let launcher =
        AapProvider::with_templates(client(&server), "provision-workflow", "deprovision-job");
    let r = resource("Subnet", "s");
    let id = launcher
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    for _ in 0..3 {
        launcher.provision_status(&r, &id).await.unwrap();
    }
    assert!(
        requests_to(&server, "unified_jobs").is_empty(),
        "the launcher knows the kind"
    );
    // Another process (fresh provider): the kind follows from the (cached) template, no
    // `unified_jobs/?id=` at all.
    let other =
        AapProvider::with_templates(client(&server), "provision-workflow", "deprovision-job");
    for _ in 0..3 {
        other.provision_status(&r, &id).await.unwrap();
    }
    assert!(
        requests_to(&server, "unified_jobs").is_empty(),
        "the template tells the kind"
    );
    assert_eq!(
        requests_to(&server, &format!("/workflow_jobs/{id}/")).len(),
        6
    );
    // A template that now names a job template (changed, or sliced): the job detail's "No Job
    // matches" 404 sends it to `unified_jobs/?id=` once, then the kind is remembered.
    let changed = AapProvider::with_templates(client(&server), "provision-job", "deprovision-job");
    for _ in 0..3 {
        changed.provision_status(&r, &id).await.unwrap();
    }
    assert_eq!(requests_to(&server, "unified_jobs").len(), 1);
    assert_eq!(
        requests_to(&server, &format!("/workflow_jobs/{id}/")).len(),
        9
    );
}

#[tokio::test]
async fn oversized_payload_is_refused_before_any_request() {
    let server = server(Mode::Awx).await;
    let p = AapProvider::builder(client(&server))
        .provision_template("provision-job")
        .max_payload_bytes(2048)
        .build();
    let r = edited(&resource("Subnet", "big"), |json| {
        json["spec"]["blob"] = serde_json::Value::String("x".repeat(4096));
    });
    let err = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("2048-byte limit"), "{err}");
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade);
    assert!(requests_to(&server, "/launch/").is_empty());
    // managedFields do not count: a resource that is only big because of them fits.
    let noisy = edited(&resource("Subnet", "noisy"), |json| {
        json["metadata"]["managedFields"] = serde_json::json!([{"fieldsV1": "y".repeat(8192)}]);
    });
    p.trigger_provision(&noisy, &LaunchContext::new())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_resource_json_is_rendered_for_a_launch_only_and_a_view_that_cannot_render_launches_nothing()
 {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let renders = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = renders.clone();
    let lazy = ResourceView::lazy(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "lazy".into(),
            namespace: Some("default".into()),
            uid: "uid-lazy".into(),
            ..Default::default()
        },
        move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(serde_json::json!({"kind": "Subnet", "metadata": {"name": "lazy"}, "spec": {}}))
        },
    );
    let launched = p
        .trigger_provision(&lazy, &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(renders.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(
        launch_body(&server)["extra_vars"]["osac_job_vars"]["resource"]["metadata"]["name"],
        "lazy"
    );
    // A poll needs only the job id: a fresh lazy view is never rendered.
    let fresh = ResourceView::lazy(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "lazy".into(),
            namespace: None,
            uid: "uid-lazy".into(),
            ..Default::default()
        },
        || Err(serde::ser::Error::custom("must not be rendered")),
    );
    p.provision_status(&fresh, &launched.job_id).await.unwrap();
    assert!(!fresh.is_rendered());
    // A view that cannot render: the launch is refused before any request, as certainly not made.
    let launches_before = requests_to(&server, "/launch/").len();
    let err = p
        .trigger_provision(&fresh, &LaunchContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade);
    assert!(err.to_string().contains("must not be rendered"), "{err}");
    assert_eq!(requests_to(&server, "/launch/").len(), launches_before);
}

#[tokio::test]
async fn secrets_in_extra_vars_are_sent_but_never_in_debug_output() {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let ctx = LaunchContext::new().with_admin_kubeconfig("apiVersion: v1\ntoken: sup3r-secret");
    p.trigger_provision(&resource("Subnet", "s"), &ctx)
        .await
        .unwrap();
    assert_eq!(
        launch_body(&server)["extra_vars"]["osac_job_vars"]["admin_kubeconfig"],
        "apiVersion: v1\ntoken: sup3r-secret"
    );
    let req = LaunchRequest::new(
        provkit_aap::provider::build_extra_vars(resource("Subnet", "s").json().unwrap(), &ctx)
            .unwrap(),
    );
    assert!(!format!("{req:?} {ctx:?} {p:?}").contains("sup3r-secret"));
}

#[tokio::test]
async fn exactly_once_after_an_unknown_launch_outcome() {
    let actions = [
        FaultAction::ConnectionReset,
        FaultAction::MalformedJson,
        FaultAction::gateway_html(504),
        FaultAction::Latency(Duration::from_secs(2)),
    ];
    for action in actions {
        for mode in [Mode::Awx, Mode::Gateway] {
            let server = server(mode).await;
            let c = crate::support::builder(&server)
                .timeout(Duration::from_millis(500))
                .build()
                .unwrap();
            let p = AapProvider::with_templates(c, "provision-job", "deprovision-job");
            let r = resource("Subnet", "once");
            let key = IdempotencyKey::for_attempt(&r.uid, &JobType::Provision, "v1", None);
            let ctx = LaunchContext::new().with_idempotency_key(key.clone());
            assert_eq!(
                p.find_job_by_idempotency_key(&r, &JobType::Provision, &key)
                    .await
                    .unwrap(),
                None
            );
            server
                .aap()
                .add_fault(Fault::new("POST", "*/launch/", action.clone()).after());
            let err = p.trigger_provision(&r, &ctx).await.unwrap_err();
            assert_eq!(
                err.launch_certainty(),
                LaunchCertainty::Unknown,
                "{action:?}: {err}"
            );
            server.aap().clear_faults();
            let tid = template_id(&server, "provision-job");
            crate::support::eventually(|| async { server.aap().launch_count(tid) == 1 }).await;
            let found = p
                .find_job_by_idempotency_key(&r, &JobType::Provision, &key)
                .await
                .unwrap()
                .expect("the job is found");
            let job = server
                .aap()
                .jobs()
                .into_iter()
                .find(|j| j.template == Some(tid))
                .unwrap();
            assert_eq!(found.job_id, job.id.to_string(), "{action:?}");
            assert!(job.extra_vars.contains(IDEMPOTENCY_KEY_VAR));
            assert_eq!(
                server.aap().launch_count(tid),
                1,
                "{action:?}: exactly one job"
            );
            // A fresh provider (another process) finds it too, from the resource's creation time.
            let fresh =
                AapProvider::with_templates(client(&server), "provision-job", "deprovision-job");
            assert_eq!(
                fresh
                    .find_job_by_idempotency_key(&r, &JobType::Provision, &key)
                    .await
                    .unwrap()
                    .map(|f| f.job_id),
                Some(found.job_id.clone())
            );
            // The lookup reads jobs created since the attempt, filtered by template, client-side.
            let list = requests_to(&server, "/jobs/")
                .into_iter()
                .rfind(|q| q.query.contains("created__gt"))
                .unwrap();
            assert!(
                list.query.contains(&format!("job_template={tid}")),
                "{}",
                list.query
            );
            assert!(!list.query.contains("extra_vars"));
            // The status of the found job is available right away (its kind is remembered).
            assert!(p.provision_status(&r, &found.job_id).await.is_ok());
        }
    }
}

#[tokio::test]
async fn idempotency_lookup_for_workflow_templates() {
    let server = server(Mode::Awx).await;
    let p = AapProvider::with_templates(client(&server), "provision-workflow", "deprovision-job");
    let r = resource("Subnet", "wf-once");
    let key = IdempotencyKey::new("pk1-uid-wf-once-p-00000000000000aa");
    let id = p
        .trigger_provision(&r, &LaunchContext::new().with_idempotency_key(key.clone()))
        .await
        .unwrap()
        .job_id;
    let found = p
        .find_job_by_idempotency_key(&r, &JobType::Provision, &key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.job_id, id);
    assert!(
        requests_to(&server, "/workflow_jobs/")
            .iter()
            .any(|q| q.query.contains("workflow_job_template="))
    );
    let other = IdempotencyKey::new("pk1-uid-wf-once-p-00000000000000bb");
    assert_eq!(
        p.find_job_by_idempotency_key(&r, &JobType::Provision, &other)
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn launch_429_becomes_a_provider_rate_limit() {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    server.aap().add_fault(Fault::new(
        "POST",
        "*/launch/",
        FaultAction::too_many_requests(provkit_testing::fake_aap::RetryAfter::Seconds(7)),
    ));
    let err = p
        .trigger_provision(&resource("Subnet", "s"), &LaunchContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)), "{err}");
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade);
    assert_eq!(
        server
            .aap()
            .launch_count(template_id(&server, "provision-job")),
        0
    );
}

/// The lookups' job-list requests the fake logged (`jobs/?job_template=…`).
fn job_lists(server: &FakeAapServer) -> Vec<provkit_testing::fake_aap::LoggedRequest> {
    requests_to(server, "/jobs/")
        .into_iter()
        .filter(|q| q.method == "GET" && q.query.contains("job_template="))
        .collect()
}

/// The key of the `i`-th job of [`paged_lookup`].
fn paged_key(i: usize) -> IdempotencyKey {
    IdempotencyKey::new(format!("pk1-uid-paged-p-{i:016x}"))
}

/// A fake holding 205 provision jobs, one per key `paged_key(i)`: the first launched (oldest)
/// sits on the second page of 200 of a newest-first lookup. The server, the provider, the
/// resource and the job ids in launch order.
async fn paged_lookup() -> (FakeAapServer, AapProvider, ResourceView, Vec<String>) {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let r = resource("Subnet", "paged");
    let mut ids = Vec::new();
    for i in 0..205 {
        let ctx = LaunchContext::new().with_idempotency_key(paged_key(i));
        ids.push(p.trigger_provision(&r, &ctx).await.unwrap().job_id);
    }
    (server, p, r, ids)
}

#[tokio::test]
async fn idempotency_lookup_pages_newest_first_and_stops_at_the_first_match() {
    let (server, p, r, ids) = paged_lookup().await;
    // Newest key: found on the first page, one request.
    let found = p
        .find_job_by_idempotency_key(&r, &JobType::Provision, &paged_key(204))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.job_id, ids[204]);
    let first = job_lists(&server);
    assert_eq!(first.len(), 1, "stopped at the first page");
    assert!(
        first[0].query.contains("order_by=-id"),
        "{}",
        first[0].query
    );
    assert!(
        first[0].query.contains("page_size=200"),
        "{}",
        first[0].query
    );
    // Oldest key: on page two, two requests.
    let found = p
        .find_job_by_idempotency_key(&r, &JobType::Provision, &paged_key(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.job_id, ids[0]);
    assert_eq!(job_lists(&server).len(), 3);
    // Unknown key: every page, then none.
    let missing = IdempotencyKey::new("pk1-uid-paged-p-ffffffffffffffff");
    assert_eq!(
        p.find_job_by_idempotency_key(&r, &JobType::Provision, &missing)
            .await
            .unwrap(),
        None
    );
    assert_eq!(job_lists(&server).len(), 5);
}

/// A page of the lookup whose answer broke (a truncated body, then a 500) is read again; the
/// walk goes on from there instead of failing (and starting again from the first page).
#[tokio::test]
async fn a_lookup_reads_a_broken_page_again() {
    let (server, p, r, ids) = paged_lookup().await;
    // The lookup's second and third job-list reads (page 2, then page 2 again) break.
    server.aap().add_fault(
        Fault::new("GET", "*/jobs/", FaultAction::TruncatedJson).trigger(Trigger::Nth(2)),
    );
    server.aap().add_fault(
        Fault::new("GET", "*/jobs/", FaultAction::server_error()).trigger(Trigger::Nth(3)),
    );
    let found = p
        .find_job_by_idempotency_key(&r, &JobType::Provision, &paged_key(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.job_id, ids[0]);
    let lists = job_lists(&server);
    assert_eq!(lists.len(), 4, "page 1, page 2 broken twice, page 2");
    assert!(
        lists[1..].iter().all(|q| q.query.contains("page=2")),
        "{lists:?}"
    );
}

/// Looks the provision job of `key` up (it must be found): its id, and the job-list requests
/// the lookup made.
async fn logged_lookup(
    server: &FakeAapServer,
    p: &AapProvider,
    r: &ResourceView,
    key: &IdempotencyKey,
) -> (String, Vec<provkit_testing::fake_aap::LoggedRequest>) {
    let before = job_lists(server).len();
    let found = p
        .find_job_by_idempotency_key(r, &JobType::Provision, key)
        .await
        .unwrap()
        .unwrap();
    (found.job_id, job_lists(server).split_off(before))
}

/// A lookup cut short keeps what it read: its next attempt reads only the jobs created since
/// (`id__gt`) and the older ones it had not reached (`id__lt`) — not the window again from its
/// first page — and still returns the newest match; once a lookup ends (found, or proved
/// absent) the next one reads the whole window. Before, every attempt started at page one, and
/// in the 10,000-resource chaos run 73 objects whose windows held thousands of jobs never got
/// through theirs.
#[tokio::test]
async fn a_lookup_cut_short_goes_on_where_it_stopped() {
    let (server, p, r, ids) = paged_lookup().await;
    let top: u64 = ids[204].parse().unwrap();
    let bottom: u64 = ids[5].parse().unwrap();
    // The second job-list read (page 2) is told to wait 10 minutes: neither the transport nor
    // the walk reads it again, so the lookup fails after reading page 1 (jobs 5..=204).
    let wait = || FaultAction::too_many_requests(RetryAfter::Seconds(600));
    server
        .aap()
        .add_fault(Fault::new("GET", "*/jobs/", wait()).trigger(Trigger::Nth(2)));
    let err = p
        .find_job_by_idempotency_key(&r, &JobType::Provision, &paged_key(0))
        .await
        .unwrap_err();
    assert!(err.is_rate_limited(), "{err}");
    server.aap().clear_faults();
    // A job launched since, with another key.
    let ctx = LaunchContext::new().with_idempotency_key(paged_key(205));
    let newest = p.trigger_provision(&r, &ctx).await.unwrap().job_id;

    let (found, resumed) = logged_lookup(&server, &p, &r, &paged_key(0)).await;
    assert_eq!(found, ids[0]);
    assert_eq!(resumed.len(), 2, "{resumed:?}");
    assert!(
        resumed[0].query.contains(&format!("id__gt={top}")) && !resumed[0].query.contains("page=2"),
        "the jobs created since first: {resumed:?}"
    );
    assert!(
        resumed[1].query.contains(&format!("id__lt={bottom}")),
        "then the older ones not read: {resumed:?}"
    );

    // Done: the next lookup of that key reads the window from the top again (page 1 holds the
    // 200 newest, page 2 the rest, the match on it).
    let (again, fresh) = logged_lookup(&server, &p, &r, &paged_key(0)).await;
    assert_eq!(again, ids[0]);
    assert_eq!(fresh.len(), 2, "{fresh:?}");
    assert!(fresh.iter().all(|q| !q.query.contains("id__")), "{fresh:?}");
    assert_ne!(newest, ids[0]);
}

/// Only the job detail's authoritative 404 means purged — answered by AWX's API itself, whatever
/// its message (`No Job matches the given query.`, or `Not found.` from Django REST framework
/// versions that replace it: issue 27 (4)); a non-numeric id, an undecodable answer or a
/// proxy's 404 is an error the engine retries.
#[tokio::test]
async fn only_the_authoritative_404_reports_a_purged_job() {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let r = resource("Subnet", "s");
    let launched = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap();
    server
        .aap()
        .purge_job(launched.job_id.parse().unwrap())
        .unwrap();
    let purged = p.provision_status(&r, &launched.job_id).await.unwrap_err();
    assert!(purged.is_not_found(), "{purged}");

    for id in ["eda-webhook-3", "", "12a"] {
        let err = p.provision_status(&r, id).await.unwrap_err();
        assert!(!err.is_not_found(), "{id:?}: {err}");
        assert!(err.to_string().contains("not an AAP job id"), "{err}");
    }

    let other = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap();
    // AWX's API answering with the other DRF message: purged as well.
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::json(404, &serde_json::json!({"detail": "Not found."})),
    ));
    let err = p.provision_status(&r, &other.job_id).await.unwrap_err();
    assert!(err.is_not_found(), "AWX's `Not found.` is a purge: {err}");
    server.aap().clear_faults();
    // The same 404 from a proxy in front of AWX (none of AWX's headers): not a purge.
    for body in ["Not found.", "No Job matches the given query."] {
        server.aap().add_fault(Fault::new(
            "GET",
            "*/jobs/*",
            FaultAction::proxied_json(404, &serde_json::json!({ "detail": body })),
        ));
        let err = p.provision_status(&r, &other.job_id).await.unwrap_err();
        assert!(
            !err.is_not_found(),
            "a proxy's 404 is not a purge ({body}): {err}"
        );
        server.aap().clear_faults();
    }
    server
        .aap()
        .add_fault(Fault::new("GET", "*/jobs/*", FaultAction::MalformedJson));
    let err = p.provision_status(&r, &other.job_id).await.unwrap_err();
    assert!(
        !err.is_not_found(),
        "a decoding failure is not a purge: {err}"
    );
}

/// A template history of 10,001 jobs in the lookup window: the search stops at a 10,000-item
/// lookup cap without finding the key, which is an error (absence not proven), never
/// "not found" — so the engine launches nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow: 10,001 launches against the fake (about 4 min in a debug build); run with --run-ignored"]
async fn a_lookup_over_10_001_jobs_fails_instead_of_answering_not_found() {
    let server = server(Mode::Awx).await;
    let c = client(&server);
    let t = c.get_template("provision-job").await.unwrap();
    let mut launched = 0;
    while launched < 10_001 {
        let batch = (10_001 - launched).min(64);
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..batch {
            let (c, t) = (c.clone(), t.clone());
            set.spawn(async move { c.launch(&t, &LaunchRequest::default()).await.map(drop) });
        }
        while let Some(r) = set.join_next().await {
            r.unwrap().unwrap();
        }
        launched += batch;
    }
    let p = AapProvider::with_templates(
        crate::support::builder(&server)
            .max_lookup_items(10_000)
            .build()
            .unwrap(),
        "provision-job",
        "deprovision-job",
    );
    let r = resource("Subnet", "s");
    let key = IdempotencyKey::new("pk1-absent");
    let since = server.aap().now() - chrono::Duration::hours(1);
    let err = p
        .find_job_by_idempotency_key_since(&r, &JobType::Provision, &key, Some(since))
        .await
        .unwrap_err();
    let chain = provkit_lifecycle::ErrorChain(&err).to_string();
    assert!(chain.contains("10000-item list cap"), "{chain}");
    assert!(!err.is_not_found() && !err.is_unsupported(), "{err:?}");
}

/// Issue 31: a template whose playbook reads `osac_job_vars.resource.spec` (modelled by a
/// script rule on that path: the job fails unless the variable holds the spec) succeeds with
/// the default envelope and fails with the legacy one; a template with a survey and one that
/// only prompts for variables both keep the envelope and the idempotency key; the job record
/// shows the extra_vars as AWX stores them, secrets included.
#[tokio::test]
async fn a_playbook_reading_osac_job_vars_sees_the_spec() {
    use provkit_aap::provider::Envelope;
    use provkit_testing::fake_aap::{Outcome, ScriptRule, SurveyQuestion, SurveySpec};
    let reads_osac_vars = |name: &str| JobTemplateSpec {
        script: Some(quick(JobScript::ending(
            Outcome::Failed,
            Duration::from_millis(10),
        ))),
        scripts: vec![ScriptRule::when_extra_var(
            "osac_job_vars.resource.spec.cidr",
            serde_json::json!("10.0.0.0/24"),
            crate::support::quick_success(),
        )],
        ..JobTemplateSpec::new(name, "osac")
    };
    let server = server_with(Mode::Awx, |b| {
        b.job_template(reads_osac_vars("prompts-for-vars"))
            .job_template(JobTemplateSpec {
                survey_enabled: true,
                survey_spec: Some(SurveySpec {
                    name: "s".into(),
                    description: String::new(),
                    spec: vec![SurveyQuestion {
                        question_name: "size".into(),
                        kind: "text".into(),
                        variable: "size".into(),
                        default: serde_json::json!("small"),
                        ..SurveyQuestion::default()
                    }],
                }),
                ..reads_osac_vars("with-survey")
            })
    })
    .await;
    let r = resource("Subnet", "s");
    let ctx = LaunchContext::new()
        .with_admin_kubeconfig("token: sup3r-secret")
        .with_idempotency_key(IdempotencyKey::new("pk1-uid-s-p-0000000000000001"));
    for (template, envelope, want) in [
        (
            "prompts-for-vars",
            Envelope::OsacJobVars,
            JobState::Succeeded,
        ),
        ("with-survey", Envelope::OsacJobVars, JobState::Succeeded),
        ("prompts-for-vars", Envelope::AnsibleEda, JobState::Failed),
    ] {
        let p = AapProvider::builder(client(&server))
            .provision_template(template)
            .deprovision_template("deprovision-job")
            .envelope(envelope)
            .build();
        let launched = p.trigger_provision(&r, &ctx).await.unwrap();
        let st = wait_terminal(&p, &r, &launched.job_id).await;
        assert_eq!(st.state, want, "{template} {envelope:?}");
        let record = server
            .aap()
            .job(launched.job_id.parse().unwrap())
            .expect("the job record");
        let stored: serde_json::Value = serde_json::from_str(&record.extra_vars).unwrap();
        assert_eq!(
            stored[IDEMPOTENCY_KEY_VAR], "pk1-uid-s-p-0000000000000001",
            "{template}: the key is kept"
        );
        let kubeconfig = if envelope == Envelope::AnsibleEda {
            &stored["ansible_eda"]["event"]["admin_kubeconfig"]
        } else {
            &stored["osac_job_vars"]["admin_kubeconfig"]
        };
        assert_eq!(
            kubeconfig, "token: sup3r-secret",
            "AWX keeps the secret in the job record"
        );
    }
}

/// A deprovision after a provision job whose final state is recorded reads nothing of that job
/// (it cannot run any more: nothing to cancel); one still recorded in flight is read first.
#[tokio::test]
async fn deprovision_reads_the_provision_job_only_while_it_is_recorded_in_flight() {
    let server = server(Mode::Awx).await;
    let p = explicit(&server);
    let r = resource("Subnet", "final");
    let res = p
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap();
    wait_terminal(&p, &r, &res.job_id).await;
    let job_path = format!("/jobs/{}/", res.job_id);
    let reads = requests_to(&server, &job_path).len();
    let recorded = |state| {
        vec![JobStatus::new(
            res.job_id.clone(),
            JobType::Provision,
            state,
            chrono::DateTime::UNIX_EPOCH,
        )]
    };
    let d = p
        .trigger_deprovision(&r, &recorded(JobState::Succeeded), &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Triggered);
    assert!(d.provision_job_status.is_none());
    assert_eq!(requests_to(&server, &job_path).len(), reads, "no read");
    let d = p
        .trigger_deprovision(&r, &recorded(JobState::Running), &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(d.action, DeprovisionAction::Triggered);
    assert_eq!(d.provision_job_status.unwrap().state, JobState::Succeeded);
    assert_eq!(requests_to(&server, &job_path).len(), reads + 1, "one read");
}

/// Issue 33: a process that cannot read the template (a fault, the open circuit) fails the
/// poll and asks again next time, instead of resolving the job's kind with one
/// `unified_jobs/?id=` request per job (936 of them in one 10,000-resource chaos run).
#[tokio::test]
async fn a_template_that_cannot_be_read_fails_the_poll_without_a_kind_look_up() {
    let server = server(Mode::Awx).await;
    let launcher = AapProvider::with_templates(client(&server), "provision-job", "deprovision-job");
    let r = resource("Subnet", "s");
    let id = launcher
        .trigger_provision(&r, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    server
        .aap()
        .add_fault(provkit_testing::fake_aap::Fault::new(
            "GET",
            "*/unified_job_templates/",
            provkit_testing::fake_aap::FaultAction::gateway_html(502),
        ));
    let restarted = AapProvider::with_templates(
        builder(&server)
            .retry(provkit_aap::RetryConfig::disabled())
            .build()
            .unwrap(),
        "provision-job",
        "deprovision-job",
    );
    for _ in 0..3 {
        let err = restarted.provision_status(&r, &id).await.unwrap_err();
        assert!(!err.is_not_found(), "the job is not gone: {err}");
    }
    assert!(
        requests_to(&server, "unified_jobs/").is_empty(),
        "no kind look-up: {:?}",
        requests_to(&server, "unified_jobs/")
    );
    server.aap().clear_faults();
    restarted.provision_status(&r, &id).await.unwrap();
    assert!(requests_to(&server, "unified_jobs/").is_empty());
}
