//! kube-runtime's `Controller` with provkit-kube's `Provisioner`, unchanged, against the
//! provkit-testing fake API server (in-process `kube::Client`) and the fake AAP over
//! loopback HTTP: create → ready → spec change → ready again → delete → gone.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;
// Your CRD (a `ProvisionedResource`, see provkit-kube's crate docs) and finalizer.
use common::{FINALIZER, Network, NetworkSpec};

// guide: imports
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use futures::StreamExt;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, JobState, ManualClock, compute_desired_config_version};
use provkit_kube::{EventPublisher, NoCallbacks, ProvisionedResource, Provisioner, ReconcileError};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy};
use provkit_testing::fake_aap::{FakeAap, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;
use provkit_testing::operator_env::{DEFAULT_WAIT, eventually};
use serde_json::json;
// guide: end

// guide: context
struct Ctx {
    provisioner: Provisioner<Network>,
}

impl AsRef<Provisioner<Network>> for Ctx {
    fn as_ref(&self) -> &Provisioner<Network> {
        &self.provisioner
    }
}

async fn reconcile(
    obj: Arc<Network>,
    ctx: Arc<Ctx>,
) -> Result<kube::runtime::controller::Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &NoCallbacks).await
}

/// The latest provision job's state and config version.
fn latest_provision_state(n: &Network) -> Option<(JobState, String)> {
    let st = n.provisioning_status()?;
    let job = st
        .provisioning_jobs
        .iter()
        .rev()
        .find(|j| j.job_type == provkit_core::JobType::Provision)?;
    Some((job.state.clone(), job.config_version.clone()))
}
// guide: end

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_and_provisioner_create_ready_update_delete() {
    // guide: fakes
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let template = |name: &str| JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10))),
        ..JobTemplateSpec::new(name, "osac")
    };
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("osac")
        .job_template(template("osac-create-network"))
        .job_template(template("osac-delete-network"))
        .start()
        .await
        .unwrap();
    let provider = AapProvider::builder(
        AapClient::builder(aap.base_url())
            .token(aap.token())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
    )
    .template_prefix("osac")
    .clock(dyn_clock.clone())
    .build();
    // Test speed: the default 30 s poll would keep each job "running" for 30 s of real time.
    let policy = LifecyclePolicy::default()
        .with_poll_interval(Duration::from_millis(100))
        .with_min_requeue(Duration::from_millis(10));
    let lifecycle = Lifecycle::new(Arc::new(provider), dyn_clock.clone()).with_policy(policy);
    // guide: end

    // guide: register
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(dyn_clock.clone())
        .build();
    // Names the operator's writes in managedFields and the request log, as a real
    // User-Agent does (kube-runtime's finalizer helper and Event writes pass no field manager).
    let operator = server.client_with_user_agent("network-operator/0.1");
    // guide: end
    let reporter = Reporter {
        controller: "network-operator".into(),
        instance: Some("test-0".into()),
    };
    // guide: controller
    let provisioner = Provisioner::new(operator.clone(), lifecycle, FINALIZER)
        .with_events(EventPublisher::new(operator.clone(), reporter));
    let ctx = Arc::new(Ctx { provisioner });
    let controller = tokio::spawn(
        Controller::new(
            Api::<Network>::all(operator.clone()),
            watcher::Config::default(),
        )
        .run(reconcile, provkit_kube::error_policy, ctx)
        .for_each(|_| async {}),
    );
    // guide: end

    // guide: user
    // The user's own client.
    let api: Api<Network> = Api::default_namespaced(server.client_named("user"));
    let spec = NetworkSpec {
        cidr: "10.0.0.0/24".into(),
    };
    api.create(&PostParams::default(), &Network::new("net-a", spec.clone()))
        .await
        .unwrap();
    let v1 = compute_desired_config_version(&spec).unwrap();

    // create → finalizer, one AAP create job, then Succeeded once the job ends.
    eventually("the create job is launched", DEFAULT_WAIT, || async {
        aap.aap().jobs().len() == 1
    })
    .await
    .unwrap();
    let obj = api.get("net-a").await.unwrap();
    assert_eq!(obj.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));
    clock.advance(Duration::from_secs(60));
    eventually(
        "the object reports the provision succeeded",
        DEFAULT_WAIT,
        || async {
            latest_provision_state(&api.get("net-a").await.unwrap())
                == Some((JobState::Succeeded, v1.clone()))
        },
    )
    .await
    .unwrap();
    // guide: end
    let ready = api.get("net-a").await.unwrap();
    assert_eq!(
        ready.metadata.generation,
        Some(1),
        "status writes did not bump generation"
    );
    let managers: Vec<String> = ready
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers.contains(&"network-operator".to_owned()),
        "{managers:?}"
    );

    // spec change → generation 2, a second create job for the new config version.
    let new_spec = NetworkSpec {
        cidr: "10.9.0.0/24".into(),
    };
    let v2 = compute_desired_config_version(&new_spec).unwrap();
    let changed = api
        .patch(
            "net-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": new_spec})),
        )
        .await
        .unwrap();
    assert_eq!(changed.metadata.generation, Some(2));
    eventually(
        "a job for the new spec is launched",
        DEFAULT_WAIT,
        || async { aap.aap().jobs().len() == 2 },
    )
    .await
    .unwrap();
    clock.advance(Duration::from_secs(60));
    eventually("the new spec is provisioned", DEFAULT_WAIT, || async {
        latest_provision_state(&api.get("net-a").await.unwrap())
            == Some((JobState::Succeeded, v2.clone()))
    })
    .await
    .unwrap();

    // delete → the object stays (finalizer) while the delete job runs, then goes.
    api.delete("net-a", &DeleteParams::default()).await.unwrap();
    eventually("the delete job is launched", DEFAULT_WAIT, || async {
        aap.aap().jobs().len() == 3
    })
    .await
    .unwrap();
    assert!(
        api.get("net-a")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    clock.advance(Duration::from_secs(60));
    eventually("the object is gone", DEFAULT_WAIT, || async {
        matches!(api.get("net-a").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await
    .unwrap();

    let names: Vec<String> = aap.aap().jobs().iter().map(|j| j.name.clone()).collect();
    assert_eq!(
        names,
        [
            "osac-create-network",
            "osac-create-network",
            "osac-delete-network"
        ]
    );
    let reasons: Vec<String> = server
        .events()
        .iter()
        .filter_map(|e| e["reason"].as_str().map(str::to_owned))
        .collect();
    assert!(
        reasons.iter().any(|r| r == "ProvisionJobSucceeded"),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r == "DeprovisionJobTriggered"),
        "{reasons:?}"
    );
    controller.abort();
}

/// docs/testing-your-operator.md shows this file's steps: each `rust,ignore` excerpt of its
/// "Test your operator's reconcile" section is the region of this file between
/// `// guide: <name>` and `// guide: end`, in order, so the guide cannot drift from code that runs.
#[test]
fn the_testing_guide_excerpts_are_this_files_code() {
    fn dedent(lines: &[&str]) -> String {
        let indent = lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        lines
            .iter()
            .map(|l| l.get(indent..).unwrap_or("").trim_end())
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_owned()
    }
    let guide_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/testing-your-operator.md"
    );
    let guide = std::fs::read_to_string(guide_path).unwrap();
    let section = guide
        .split("## Test your operator's reconcile")
        .nth(1)
        .expect("the guide has the section")
        .split("\n## ")
        .next()
        .unwrap();
    let excerpts: Vec<String> = section
        .split("```rust,ignore\n")
        .skip(1)
        .map(|block| {
            let body: Vec<&str> = block.split("```").next().unwrap().lines().collect();
            dedent(&body)
        })
        .collect();

    let source = include_str!("fake_apiserver_controller.rs");
    let mut regions = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in source.lines() {
        let marker = line.trim().strip_prefix("// guide: ");
        match (marker, current.as_mut()) {
            (Some("end"), Some(_)) => regions.push(dedent(&current.take().unwrap())),
            (Some(name), None) if !name.contains(' ') => current = Some(Vec::new()),
            (_, Some(lines)) => lines.push(line),
            _ => {}
        }
    }
    assert_eq!(
        excerpts.len(),
        regions.len(),
        "one excerpt per marked region"
    );
    for (i, (excerpt, region)) in excerpts.iter().zip(&regions).enumerate() {
        assert_eq!(
            excerpt,
            region,
            "guide excerpt {} differs from the test",
            i + 1
        );
    }
}

/// The guide's `OperatorTestEnv` section shows the user-shaped example package's whole test
/// file (after its attributes), so the guide cannot drift from the test CI runs.
#[test]
fn the_testing_guide_shows_the_compute_instance_tests() {
    let guide = include_str!("../../../docs/testing-your-operator.md");
    let shown = guide
        .split("<!-- examples/compute-instance/tests/operator_env.rs -->\n```rust,ignore\n")
        .nth(1)
        .expect("the guide has the block")
        .split("\n```\n")
        .next()
        .unwrap();
    let file = include_str!("../../../examples/compute-instance/tests/operator_env.rs");
    let body = file
        .split("#![allow(missing_docs, clippy::unwrap_used)]\n")
        .nth(1)
        .unwrap()
        .trim_matches('\n');
    assert_eq!(shown, body);
}
