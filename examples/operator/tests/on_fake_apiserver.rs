//! The example operator, unchanged, on the provkit-testing fake API server (in-process
//! `kube::Client`) and the fake AAP over loopback: the whole controller loop
//! (`controller::run`), leader election between two instances, and the CRD schema pruning a
//! status field; the operator's reconcile in provkit-testing's `OperatorTestEnv` (a failed job,
//! a failed deprovision). The request-exact exchange test stays in `operator.rs`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use provkit_core::JobState;
use provkit_core::{Clock, ManualClock};
use provkit_example_operator::controller::{self, Context, FINALIZER};
use provkit_example_operator::crd::{Phase, VirtualNetwork, VirtualNetworkSpec};
use provkit_kube::LeaderElector;
use provkit_kube::ProvisionedResource;
use provkit_testing::fake_aap::JobScript;
use provkit_testing::fake_apiserver::FakeApiServer;
use provkit_testing::operator_env::{EnvError, OperatorTestEnv, OperatorWiring};
use serde_json::json;

mod common;
use common::{Running, eventually, phase, run_operator};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_loop_create_ready_update_delete() {
    let Running {
        clock,
        aap,
        server,
        api,
        stop,
        run,
        ..
    } = run_operator(JobScript::successful(Duration::from_secs(10))).await;
    let vn = VirtualNetwork::new(
        "net-a",
        VirtualNetworkSpec {
            cidr: "10.0.0.0/24".into(),
            region: None,
        },
    );
    api.create(&PostParams::default(), &vn).await.unwrap();
    eventually("create job", || async { aap.aap().jobs().len() == 1 }).await;
    assert_eq!(
        api.get("net-a").await.unwrap().metadata.finalizers,
        Some(vec![FINALIZER.to_owned()])
    );
    clock.advance(Duration::from_secs(60));
    eventually("Ready", || async {
        phase(&api.get("net-a").await.unwrap()) == Some(Phase::Ready)
    })
    .await;

    api.patch(
        "net-a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"region": "eu"}})),
    )
    .await
    .unwrap();
    eventually("a job for the changed spec", || async {
        aap.aap().jobs().len() == 2
    })
    .await;
    clock.advance(Duration::from_secs(60));
    eventually("Ready again", || async {
        let v = api.get("net-a").await.unwrap();
        phase(&v) == Some(Phase::Ready)
            && v.status
                .as_ref()
                .unwrap()
                .provisioning
                .provisioning_jobs
                .len()
                == 2
    })
    .await;

    api.delete("net-a", &DeleteParams::default()).await.unwrap();
    eventually("delete job", || async { aap.aap().jobs().len() == 3 }).await;
    // Issue 16, problem 8: while the deprovision job runs, the object says Deleting and
    // Ready=False (it stayed True before), on what the API server stores.
    eventually("Deleting with Ready=False", || async {
        let v = api.get("net-a").await.unwrap();
        let ready = v
            .status
            .as_ref()
            .and_then(|s| {
                s.provisioning
                    .conditions
                    .iter()
                    .find(|c| c.type_ == "Ready")
            })
            .map(|c| (c.status.clone(), c.reason.clone()));
        phase(&v) == Some(Phase::Deleting) && ready == Some(("False".into(), "Deleting".into()))
    })
    .await;
    clock.advance(Duration::from_secs(60));
    eventually("gone", || async {
        matches!(api.get("net-a").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    let reasons: Vec<String> = server
        .events()
        .iter()
        .filter_map(|e| e["reason"].as_str().map(str::to_owned))
        .collect();
    assert!(
        reasons.iter().any(|r| r == "ProvisionJobSucceeded"),
        "{reasons:?}"
    );
    let _ = stop.send(());
    run.await.unwrap();
}

/// Two operator instances compete for one Lease on the fake: exactly one holds it; the
/// other takes over only after the holder's lease expired.
#[tokio::test]
async fn leader_election_between_two_instances() {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let server = FakeApiServer::builder().clock(dyn_clock.clone()).build();
    let elector = |who: &str| {
        LeaderElector::new(
            Api::<Lease>::default_namespaced(server.client_named(who)),
            "provkit-example-operator",
            who,
            Duration::from_secs(15),
            dyn_clock.clone(),
        )
    };
    let (a, b) = (elector("replica-a"), elector("replica-b"));
    assert!(a.try_acquire_or_renew().await.unwrap());
    assert!(!b.try_acquire_or_renew().await.unwrap());
    assert_eq!(
        server
            .lease_holders()
            .get("default/provkit-example-operator"),
        Some(&Some("replica-a".to_owned()))
    );
    clock.advance(Duration::from_secs(16));
    assert!(
        b.try_acquire_or_renew().await.unwrap(),
        "expired lease taken over"
    );
    assert!(!a.try_acquire_or_renew().await.unwrap());
    assert_eq!(
        server
            .lease_holders()
            .get("default/provkit-example-operator"),
        Some(&Some("replica-b".to_owned()))
    );
}

/// The CRD's schema prunes a status field it does not declare, as a cluster does.
#[tokio::test]
async fn the_crd_schema_prunes_an_undeclared_status_field() {
    let server = FakeApiServer::builder()
        .crd::<VirtualNetwork>()
        .namespace("tenant-1")
        .build();
    let api: Api<VirtualNetwork> = Api::namespaced(server.client(), "tenant-1");
    let vn = VirtualNetwork::new(
        "net-a",
        VirtualNetworkSpec {
            cidr: "10.0.0.0/24".into(),
            region: None,
        },
    );
    api.create(&PostParams::default(), &vn).await.unwrap();
    api.patch_status(
        "net-a",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Ready", "notInTheSchema": "vanishes"}})),
    )
    .await
    .unwrap();
    let stored = server.objects_json("osac.openshift.io", "virtualnetworks");
    assert_eq!(stored[0]["status"], json!({"phase": "Ready"}));
}

/// The operator's reconcile in `OperatorTestEnv` (provkit-testing): the fake API server with the
/// CRD, the fake AAP with the two templates (the create job runs `create`, the delete job
/// `delete`), one virtual clock and the test-speed policy.
async fn env(create: JobScript, delete: JobScript) -> OperatorTestEnv<VirtualNetwork> {
    OperatorTestEnv::builder()
        .organization("osac")
        .template_script(CREATE, create)
        .template_script(DELETE, delete)
        .template_prefix("osac")
        .namespace("tenant-1")
        .controller_name(controller::CONTROLLER_NAME)
        .start(
            |w: OperatorWiring| {
                Context::new(
                    w.client,
                    w.provider,
                    w.policy,
                    w.clock,
                    "test-0",
                    controller::CONTROLLER_NAME,
                )
            },
            controller::reconcile,
            controller::error_policy,
        )
        .await
        .unwrap()
}

const CREATE: &str = "osac-create-virtual-network";
const DELETE: &str = "osac-delete-virtual-network";
const MINUTE: Duration = Duration::from_secs(60);

/// Issue 16, problem 8: a failed job's Event note and status message say "failed" once
/// (it read `provision job 1 failed: failed: playbook failed…`), on what the API server stores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_is_reported_without_repeated_words() -> Result<(), EnvError> {
    let failing = JobScript::playbook_failure("create network", "localhost", "simulated failure");
    let env = env(failing, JobScript::successful(Duration::from_secs(10))).await;
    env.create(&common::virtual_network("net-f")).await?;
    env.wait_launches(CREATE, 1).await?;
    env.advance(MINUTE);
    env.eventually("the failure Event", || async {
        env.apiserver()
            .events()
            .iter()
            .any(|e| e["reason"] == "ProvisionJobFailed")
    })
    .await?;
    let notes: Vec<String> = env
        .apiserver()
        .events()
        .iter()
        .filter(|e| e["reason"] == "ProvisionJobFailed")
        .filter_map(|e| e["note"].as_str().map(str::to_owned))
        .collect();
    let id = env.jobs(CREATE)[0].id.to_string();
    for note in &notes {
        assert!(
            note.starts_with(&format!("provision job {id} failed")),
            "{note}"
        );
        assert!(!note.to_lowercase().contains("failed: failed"), "{note}");
        assert!(
            note.contains("simulated failure"),
            "the cause is kept: {note}"
        );
    }
    let stored = env
        .wait_for("net-f", "the job recorded as failed", |v| {
            v.provisioning_jobs()
                .first()
                .is_some_and(|j| j.state == JobState::Failed)
        })
        .await?;
    let job = &stored.provisioning_jobs()[0];
    assert!(
        !job.message.to_lowercase().contains("failed: failed"),
        "{}",
        job.message
    );
    assert_eq!(
        stored.condition("Ready").unwrap().reason,
        "ProvisioningFailed"
    );
    Ok(())
}

/// Issue 29, point 4: the AAP provider blocks deletion when the delete job fails
/// (`blockDeletionOnFailure`); the finalizer stays and the `Ready` condition says why (it said
/// `Deleting` for as long as the object stayed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_deprovision_shows_in_the_ready_condition() -> Result<(), EnvError> {
    let failing = JobScript::playbook_failure("delete network", "localhost", "quota backend down");
    let env = env(JobScript::successful(Duration::from_secs(10)), failing).await;
    env.create(&common::virtual_network("net-d")).await?;
    env.wait_launches(CREATE, 1).await?;
    env.advance(MINUTE);
    env.wait_condition("net-d", "Ready", "True").await?;

    env.delete("net-d").await?;
    env.wait_launches(DELETE, 1).await?;
    env.advance(MINUTE);
    let blocked = env
        .wait_for("net-d", "Ready says the deprovision failed", |v| {
            v.condition("Ready")
                .is_some_and(|c| c.reason == "DeprovisionFailed")
        })
        .await?;
    let ready = blocked.condition("Ready").unwrap();
    assert_eq!(ready.status, "False");
    assert!(
        ready.message.contains("quota backend down"),
        "{}",
        ready.message
    );
    assert_eq!(phase(&blocked), Some(Phase::Deleting));
    assert_eq!(
        blocked.metadata.finalizers,
        Some(vec![FINALIZER.to_owned()])
    );
    // Blocked: no second delete job, and the object stays (a few more reconciles).
    env.advance(MINUTE);
    env.wait_for("net-d", "still blocked after a later poll", |v| {
        v.condition("Ready")
            .is_some_and(|c| c.reason == "DeprovisionFailed")
    })
    .await?;
    assert_eq!(env.launches(DELETE), 1);
    Ok(())
}
