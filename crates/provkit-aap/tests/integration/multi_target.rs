//! A multi-target lifecycle over loopback HTTP against the fake AAP: a cluster and its storage,
//! each with its own AapProvider (own templates), sharing one job history.

use std::sync::Arc;
use std::time::Duration;

use provkit_aap::AapProvider;
use provkit_core::{Clock, JobState, JobType, SystemClock, find_latest_job_by_type_and_target};
use provkit_lifecycle::{
    DeprovisionHooks, JobTarget, LaunchContext, Lifecycle, LifecyclePolicy, MultiTargetHooks,
    MultiTargetLifecycle, ResourceMeta, ResourceView,
};
use provkit_testing::fake_aap::{JobScript, JobTemplateSpec, Mode};

use crate::support::{client, quick, requests_to, server_with};

#[tokio::test]
async fn cluster_and_storage_targets_against_the_fake() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec::new("create-cluster", "osac"))
            .job_template(JobTemplateSpec::new("delete-cluster", "osac"))
            .job_template(JobTemplateSpec {
                script: Some(quick(
                    JobScript::successful(Duration::from_millis(60))
                        .with_artifacts(serde_json::json!({"storage_class": "ceph-gold"})),
                )),
                ..JobTemplateSpec::new("create-storage", "osac")
            })
            .job_template(JobTemplateSpec::new("delete-storage", "osac"))
    })
    .await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(20));
    let target = |name: &str| {
        let provider = AapProvider::with_templates(
            client(&server),
            format!("create-{name}"),
            format!("delete-{name}"),
        );
        JobTarget::new(
            name,
            Lifecycle::new(Arc::new(provider), clock.clone()).with_policy(policy.clone()),
        )
    };
    let engine = MultiTargetLifecycle::new([
        target("cluster").absorbs_legacy_history(),
        target("storage"),
    ])
    .unwrap();
    let resource = ResourceView::new(
        ResourceMeta {
            kind: "ClusterOrder".into(),
            name: "co-1".into(),
            namespace: Some("tenant-a".into()),
            uid: "uid-co-1".into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "ClusterOrder", "metadata": {"name": "co-1", "uid": "uid-co-1"}, "spec": {}}),
    );

    let mut jobs = Vec::new();
    let mut outputs = Vec::new();
    let mut done = false;
    for _ in 0..300 {
        let mut hooks = MultiTargetHooks::new()
            .on_success(|t, s| outputs.push((t.to_owned(), s.outputs.clone())));
        let out = engine
            .run_provisioning_lifecycle(
                &resource,
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut hooks,
            )
            .await;
        drop(hooks);
        if out.into_result().unwrap().is_done() {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(done, "both targets finished: {jobs:?}");
    assert_eq!(jobs.len(), 2);
    for t in ["cluster", "storage"] {
        let j = find_latest_job_by_type_and_target(&jobs, &JobType::Provision, t).unwrap();
        assert_eq!(j.state, JobState::Succeeded, "{t}");
    }
    assert_eq!(
        requests_to(&server, "/launch/")
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        2,
        "one launch per target (the GETs are the launch-requirements checks)"
    );
    let storage = outputs.iter().find(|(t, _)| t == "storage").unwrap();
    assert_eq!(storage.1["storage_class"], "ceph-gold");

    // Teardown: each target launches its own delete template; the finalizer goes when both are done.
    let mut removed = false;
    for _ in 0..300 {
        let out = engine
            .run_deprovisioning_lifecycle(
                &resource,
                &mut jobs,
                &LaunchContext::new(),
                &mut DeprovisionHooks::new(),
            )
            .await;
        if out.may_remove_finalizer() {
            removed = true;
            break;
        }
        out.into_result().unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(removed);
    for t in ["cluster", "storage"] {
        let d = find_latest_job_by_type_and_target(&jobs, &JobType::Deprovision, t).unwrap();
        assert_eq!(d.state, JobState::Succeeded, "{t}");
    }
    assert_eq!(
        requests_to(&server, "/launch/")
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        4,
        "one provision and one deprovision launch per target"
    );
}
