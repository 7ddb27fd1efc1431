//! The example operator, unchanged, on the provkit-testing fake API server (in-process
//! `kube::Client`) and the fake AAP over loopback: the whole controller loop
//! (`controller::run`), leader election between two instances, and the CRD schema pruning a
//! status field. The request-exact exchange test stays in `operator.rs`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use provkit_core::{Clock, ManualClock};
use provkit_example_operator::controller::FINALIZER;
use provkit_example_operator::crd::{Phase, VirtualNetwork, VirtualNetworkSpec};
use provkit_kube::LeaderElector;
use provkit_testing::fake_aap::JobScript;
use provkit_testing::fake_apiserver::FakeApiServer;
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

/// Issue 16, problem 8: a failed job's Event note and status message say "failed" once
/// (it read `provision job 1 failed: failed: playbook failed…`), on what the API server stores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_is_reported_without_repeated_words() {
    let Running {
        clock,
        aap,
        server,
        api,
        stop,
        run,
        ..
    } = run_operator(JobScript::playbook_failure(
        "create network",
        "localhost",
        "simulated failure",
    ))
    .await;
    let vn = VirtualNetwork::new(
        "net-f",
        VirtualNetworkSpec {
            cidr: "10.0.0.0/24".into(),
            region: None,
        },
    );
    api.create(&PostParams::default(), &vn).await.unwrap();
    eventually("create job", || async { aap.aap().jobs().len() == 1 }).await;
    clock.advance(Duration::from_secs(60));
    eventually("the failure Event", || async {
        server
            .events()
            .iter()
            .any(|e| e["reason"] == "ProvisionJobFailed")
    })
    .await;
    let notes: Vec<String> = server
        .events()
        .iter()
        .filter(|e| e["reason"] == "ProvisionJobFailed")
        .filter_map(|e| e["note"].as_str().map(str::to_owned))
        .collect();
    let id = aap.aap().jobs()[0].id.to_string();
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
    let stored = api.get("net-f").await.unwrap();
    let job = &stored
        .status
        .as_ref()
        .unwrap()
        .provisioning
        .provisioning_jobs[0];
    assert!(
        !job.message.to_lowercase().contains("failed: failed"),
        "{}",
        job.message
    );
    let _ = stop.send(());
    run.await.unwrap();
}
