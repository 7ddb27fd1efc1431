//! kube-runtime's `Controller` with provkit-kube's `MultiTargetProvisioner`: one resource whose
//! spec drives two targets (a cluster and its storage), each with its own AAP provider, against
//! the provkit-testing fake API server (in-process `kube::Client`) and the fake AAP over loopback
//! HTTP. Every job in the shared history carries its target.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use futures::StreamExt;
use kube::CustomResource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use provkit_aap::provider::TemplateNames;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{
    Clock, JobState, JobStatus, JobType, ManualClock, compute_desired_config_version,
};
use provkit_kube::{
    EventPublisher, MultiTargetCallbacks, MultiTargetProvisioner, ProvisionedResource,
    ProvisioningStatus, ReconcileError,
};
use provkit_lifecycle::{
    JobTarget, Lifecycle, LifecyclePolicy, MultiTargetLifecycle, ProvisionStatus,
};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use common::eventually;

const FINALIZER: &str = "test.provkit.dev/cluster-finalizer";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "test.provkit.dev",
    version = "v1",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus"
)]
pub struct ClusterSpec {
    pub nodes: u32,
    pub storage_gb: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
    /// From the cluster target's job outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// From the storage target's job outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
}

impl ProvisionedResource for Cluster {
    fn config_source(&self) -> impl Serialize + '_ {
        &self.spec
    }
    fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
        self.status.as_ref().map(|s| &s.provisioning)
    }
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
        &mut self
            .status
            .get_or_insert_with(Default::default)
            .provisioning
    }
}

/// Writes each target's chosen output into the status.
struct Outputs;

impl MultiTargetCallbacks<Cluster> for Outputs {
    fn on_succeeded(&self, obj: &mut Cluster, target: &str, status: &ProvisionStatus) {
        let st = obj.status.get_or_insert_with(Default::default);
        let out = |k: &str| {
            status
                .outputs
                .get(k)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        match target {
            "cluster" => st.api_url = out("api_url"),
            "storage" => st.volume = out("volume"),
            _ => {}
        }
    }
}

struct Ctx {
    provisioner: MultiTargetProvisioner<Cluster>,
}

impl AsRef<provkit_kube::Provisioner<Cluster>> for Ctx {
    fn as_ref(&self) -> &provkit_kube::Provisioner<Cluster> {
        self.provisioner.as_ref()
    }
}

async fn reconcile(
    obj: Arc<Cluster>,
    ctx: Arc<Ctx>,
) -> Result<kube::runtime::controller::Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &Outputs).await
}

/// `(target, type, state, configVersion)` of every job, in array order.
fn history(c: &Cluster) -> Vec<(String, JobType, JobState, String)> {
    c.provisioning_jobs()
        .iter()
        .map(|j| {
            (
                j.target.clone(),
                j.job_type.clone(),
                j.state.clone(),
                j.config_version.clone(),
            )
        })
        .collect()
}

fn entry(
    target: &str,
    ty: JobType,
    state: JobState,
    v: &str,
) -> (String, JobType, JobState, String) {
    (target.to_owned(), ty, state, v.to_owned())
}

struct World {
    clock: ManualClock,
    aap: FakeAapServer,
    server: FakeApiServer,
    api: Api<Cluster>,
    operator: kube::Client,
    ctx: Arc<Ctx>,
    controller: Option<tokio::task::JoinHandle<()>>,
}

impl World {
    /// Starts the controller.
    fn start(&mut self) {
        self.controller = Some(tokio::spawn(
            Controller::new(
                Api::<Cluster>::all(self.operator.clone()),
                watcher::Config::default(),
            )
            .run(reconcile, provkit_kube::error_policy, self.ctx.clone())
            .for_each(|_| async {}),
        ));
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(c) = &self.controller {
            c.abort();
        }
    }
}

/// The fake AAP with a create and a delete template per target (the storage create job publishes
/// `volume`, the cluster's `api_url`), the fake API server, and the controller (not started).
async fn world() -> World {
    world_launching_storage_with("create-storage").await
}

/// [`world`], with the storage target launching template `storage_create`.
async fn world_launching_storage_with(storage_create: &str) -> World {
    world_with(storage_create, Duration::from_secs(5)).await
}

/// [`world`], with the storage target launching template `storage_create` through a client that
/// waits `storage_timeout` for an answer.
async fn world_with(storage_create: &str, storage_timeout: Duration) -> World {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let template = |name: &str, artifacts: serde_json::Value| JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10)).with_artifacts(artifacts)),
        ..JobTemplateSpec::new(name, "test")
    };
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("test")
        .job_template(template(
            "create-cluster",
            json!({"api_url": "https://api.c-1.example:6443"}),
        ))
        .job_template(template("delete-cluster", json!({})))
        .job_template(template("create-storage", json!({"volume": "vol-7"})))
        .job_template(template("delete-storage", json!({})))
        .start()
        .await
        .unwrap();
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(100));
    policy.min_requeue = Duration::from_millis(10);
    let engine = |target: &str, create: &str, timeout: Duration| {
        let provider = AapProvider::builder(
            AapClient::builder(aap.base_url())
                .token(aap.token())
                .timeout(timeout)
                .build()
                .unwrap(),
        )
        .templates(TemplateNames::explicit(create, format!("delete-{target}")))
        .clock(dyn_clock.clone())
        .build();
        Lifecycle::new(Arc::new(provider), dyn_clock.clone()).with_policy(policy.clone())
    };
    let targets = MultiTargetLifecycle::new([
        JobTarget::new(
            "cluster",
            engine("cluster", "create-cluster", Duration::from_secs(5)),
        )
        .absorbs_legacy_history(),
        JobTarget::new(
            "storage",
            engine("storage", storage_create, storage_timeout),
        ),
    ])
    .unwrap();

    let server = FakeApiServer::builder()
        .crd::<Cluster>()
        .clock(dyn_clock.clone())
        .build();
    let operator = server.client_with_user_agent("cluster-operator/0.1");
    let reporter = Reporter {
        controller: "cluster-operator".into(),
        instance: Some("test-0".into()),
    };
    let events = EventPublisher::new(operator.clone(), reporter);
    let provisioner = MultiTargetProvisioner::new(operator.clone(), targets, FINALIZER)
        .configure(|p| p.with_events(events).with_field_manager("cluster-operator"));
    let ctx = Arc::new(Ctx { provisioner });
    let api = Api::default_namespaced(server.client_named("user"));
    World {
        clock,
        aap,
        server,
        api,
        operator,
        ctx,
        controller: None,
    }
}

fn launched(aap: &FakeAapServer) -> Vec<String> {
    let mut names: Vec<String> = aap.aap().jobs().iter().map(|j| j.name.clone()).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_targets_create_ready_update_delete() {
    use JobState::Succeeded;
    use JobType::{Deprovision, Provision};
    let mut w = world().await;
    w.start();
    let spec = ClusterSpec {
        nodes: 3,
        storage_gb: 100,
    };
    w.api
        .create(&PostParams::default(), &Cluster::new("c-1", spec.clone()))
        .await
        .unwrap();
    let v1 = compute_desired_config_version(&spec).unwrap();

    // create → one job per target, each tagged with its target.
    eventually("both create jobs are launched", || async {
        w.aap.aap().jobs().len() == 2
    })
    .await;
    assert_eq!(launched(&w.aap), ["create-cluster", "create-storage"]);
    w.clock.advance(Duration::from_secs(60));
    eventually("both targets report success", || async {
        let c = w.api.get("c-1").await.unwrap();
        let mut h = history(&c);
        h.sort_by(|a, b| a.0.cmp(&b.0));
        h == [
            entry("cluster", Provision, Succeeded, &v1),
            entry("storage", Provision, Succeeded, &v1),
        ]
    })
    .await;
    // The callbacks wrote each target's outputs.
    eventually("the outputs are in the status", || async {
        let st = w.api.get("c-1").await.unwrap().status.unwrap();
        st.api_url.as_deref() == Some("https://api.c-1.example:6443")
            && st.volume.as_deref() == Some("vol-7")
    })
    .await;
    let raw: serde_json::Value = serde_json::to_value(w.api.get("c-1").await.unwrap()).unwrap();
    let targets: Vec<&str> = raw["status"]["provisioningJobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets.len(), 2, "target is in the stored JSON: {raw}");

    // spec change → one new job per target for the new version.
    let new_spec = ClusterSpec {
        nodes: 5,
        storage_gb: 100,
    };
    let v2 = compute_desired_config_version(&new_spec).unwrap();
    w.api
        .patch(
            "c-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": new_spec})),
        )
        .await
        .unwrap();
    eventually("both targets launch for the new spec", || async {
        w.aap.aap().jobs().len() == 4
    })
    .await;
    w.clock.advance(Duration::from_secs(60));
    eventually("the new spec is provisioned on both targets", || async {
        let c = w.api.get("c-1").await.unwrap();
        ["cluster", "storage"].iter().all(|t| {
            provkit_core::find_latest_job_by_type_and_target(c.provisioning_jobs(), &Provision, t)
                .is_some_and(|j| j.state == Succeeded && j.config_version == v2)
        })
    })
    .await;

    // delete → one delete job per target; the object goes once both finished.
    w.api.delete("c-1", &DeleteParams::default()).await.unwrap();
    eventually("both delete jobs are launched", || async {
        w.aap.aap().jobs().len() == 6
    })
    .await;
    eventually("both delete jobs are recorded, one per target", || async {
        let deleting = w.api.get("c-1").await.unwrap();
        let mut targets: Vec<String> = deleting
            .provisioning_jobs()
            .iter()
            .filter(|j| j.job_type == Deprovision)
            .map(|j| j.target.clone())
            .collect();
        targets.sort();
        deleting.metadata.deletion_timestamp.is_some() && targets == ["cluster", "storage"]
    })
    .await;
    w.clock.advance(Duration::from_secs(60));
    eventually("the object is gone", || async {
        matches!(w.api.get("c-1").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;

    assert_eq!(
        launched(&w.aap),
        [
            "create-cluster",
            "create-cluster",
            "create-storage",
            "create-storage",
            "delete-cluster",
            "delete-storage"
        ]
    );
    let reasons: Vec<String> = w
        .server
        .events()
        .iter()
        .filter_map(|e| e["reason"].as_str().map(str::to_owned))
        .collect();
    let count = |r: &str| reasons.iter().filter(|x| *x == r).count();
    assert_eq!(count("ProvisionJobTriggered"), 4, "{reasons:?}");
    assert_eq!(count("DeprovisionJobTriggered"), 2, "{reasons:?}");
    assert_eq!(count("Deprovisioned"), 1, "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_single_target_history_is_absorbed_not_reprovisioned() {
    let mut w = world().await;
    let spec = ClusterSpec {
        nodes: 3,
        storage_gb: 50,
    };
    let v1 = compute_desired_config_version(&spec).unwrap();
    // What a single-target operator wrote: the finalizer and one untagged, succeeded provision
    // job at v1. The controller starts afterwards.
    let mut obj = Cluster::new("c-legacy", spec);
    obj.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    w.api.create(&PostParams::default(), &obj).await.unwrap();
    let mut legacy = JobStatus::new(
        "900",
        JobType::Provision,
        JobState::Succeeded,
        w.clock.now(),
    );
    legacy.config_version.clone_from(&v1);
    w.api
        .patch_status(
            "c-legacy",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "provisioningJobs": [legacy],
                "desiredConfigVersion": v1,
            }})),
        )
        .await
        .unwrap();
    w.start();

    // Only the storage target has no job: one launch, and the legacy job becomes the cluster's.
    eventually("the storage job is launched and recorded", || async {
        let c = w.api.get("c-legacy").await.unwrap();
        c.provisioning_jobs().iter().any(|j| j.target == "storage")
    })
    .await;
    let c = w.api.get("c-legacy").await.unwrap();
    let legacy_now = c
        .provisioning_jobs()
        .iter()
        .find(|j| j.job_id == "900")
        .unwrap();
    assert_eq!(
        legacy_now.target, "cluster",
        "backfilled onto the legacy owner"
    );
    w.clock.advance(Duration::from_secs(60));
    eventually("the storage target succeeds", || async {
        let c = w.api.get("c-legacy").await.unwrap();
        provkit_core::find_latest_job_by_type_and_target(
            c.provisioning_jobs(),
            &JobType::Provision,
            "storage",
        )
        .is_some_and(|j| j.state == JobState::Succeeded)
    })
    .await;
    assert_eq!(
        launched(&w.aap),
        ["create-storage"],
        "the cluster was not re-provisioned"
    );
}

/// Creates cluster `name` and reconciles it twice (the first adds the finalizer, the second
/// runs the targets); the second reconcile's result.
async fn create_and_run_targets(
    w: &World,
    name: &str,
) -> Result<kube::runtime::controller::Action, ReconcileError> {
    let obj = w
        .api
        .create(
            &PostParams::default(),
            &Cluster::new(
                name,
                ClusterSpec {
                    nodes: 1,
                    storage_gb: 10,
                },
            ),
        )
        .await
        .unwrap();
    w.ctx
        .provisioner
        .reconcile(Arc::new(obj), &Outputs)
        .await
        .unwrap();
    let obj = w.api.get(name).await.unwrap();
    w.ctx.provisioner.reconcile(Arc::new(obj), &Outputs).await
}

/// The targets of the jobs the object's status records, in array order.
fn recorded_targets(c: &Cluster) -> Vec<&str> {
    c.provisioning_jobs()
        .iter()
        .map(|j| j.target.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_target_is_reported_and_the_others_jobs_are_kept() {
    // The storage target launches a template AAP does not have: its launch fails, the cluster's
    // does not.
    let w = world_launching_storage_with("create-storage-missing").await;
    let err = create_and_run_targets(&w, "c-fail").await.unwrap_err();
    let ReconcileError::Targets { source, .. } = &err else {
        panic!("{err:?}");
    };
    let failed: Vec<&str> = source.errors().map(|(t, _)| t).collect();
    assert_eq!(failed, ["storage"]);
    let c = w.api.get("c-fail").await.unwrap();
    assert_eq!(
        recorded_targets(&c),
        ["cluster"],
        "the cluster's job was written despite the storage failure"
    );
    assert_eq!(launched(&w.aap), ["create-cluster"]);
}

/// The object after a change of one of its annotations (a new resource version).
async fn touched(api: &Api<Cluster>, name: &str, value: &str) -> Cluster {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"touched": value}}})),
    )
    .await
    .unwrap()
}

/// A target whose lookup only waits for a launch window to close does not fail the reconcile
/// of a multi-target object: the storage launch outlives its client (AAP creates the job after
/// the client gave up; that reconcile fails, outcome unknown), the lookup that follows is deferred until the launch deadline after
/// the send has passed (the object shows `LaunchBlocked`, `IdempotencyLookupDeferred`), and the
/// reconcile returns `Ok` with a requeue at that time. Once the window has closed the job is
/// found, not launched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_lookup_of_one_target_is_a_requeue_not_a_failure() {
    use provkit_testing::fake_aap::{Fault, FaultAction, Trigger};
    let w = world_with("create-storage", Duration::from_millis(300)).await;
    let storage = w
        .aap
        .aap()
        .template_id("create-storage", Some("test"))
        .unwrap();
    w.aap.aap().add_fault(
        Fault::new(
            "POST",
            &format!("/api/v2/job_templates/{storage}/launch/"),
            // Far longer than the client waits (300 ms), and than the reconciles until the
            // lookup take on a loaded machine.
            FaultAction::Latency(Duration::from_secs(3)),
        )
        .trigger(Trigger::Nth(1)),
    );
    // The storage launch times out (outcome unknown).
    let err = create_and_run_targets(&w, "c-defer").await.unwrap_err();
    assert!(
        err.deferral().is_none(),
        "a lost launch answer is a failure"
    );
    // The next (brought by a change of the object: the object as this controller's own write
    // left it keeps that reconcile's requeue) looks the attempt up: no job yet, and AAP may
    // still create it.
    let obj = touched(&w.api, "c-defer", "1").await;
    let action = w
        .ctx
        .provisioner
        .reconcile(Arc::new(obj), &Outputs)
        .await
        .expect("a deferred lookup is no failed reconcile");
    let c = w.api.get("c-defer").await.unwrap();
    let blocked = provkit_kube::status::find_condition(
        &c.provisioning_status().unwrap().conditions,
        provkit_kube::LAUNCH_BLOCKED_CONDITION,
    )
    .cloned()
    .unwrap_or_else(|| panic!("LaunchBlocked shows the wait: {action:?} {c:?}"));
    assert_eq!(
        (blocked.status.as_str(), blocked.reason.as_str()),
        ("True", "IdempotencyLookupDeferred"),
        "{}",
        blocked.message
    );
    // Comes back when the window (the 60 s launch deadline after the send, AAP's clock) has
    // closed — not at the error backoff's next step.
    let shown = format!("{action:?}");
    let after: f64 = shown
        .split("requeue_after: Some(")
        .nth(1)
        .and_then(|rest| rest.split("s)").next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("a requeue in whole or fractional seconds: {shown}"));
    assert!((60.0..=63.0).contains(&after), "{shown}");
    assert_eq!(recorded_targets(&c), ["cluster"]);
    // AAP finishes the abandoned launch; the wait (AAP's clock) passes, and so does the echo
    // window of the last status write.
    eventually("AAP creates the storage job", || async {
        launched(&w.aap).len() == 2
    })
    .await;
    w.clock.advance(Duration::from_secs(63));
    let obj = touched(&w.api, "c-defer", "2").await;
    w.ctx
        .provisioner
        .reconcile(Arc::new(obj), &Outputs)
        .await
        .unwrap();
    let c = w.api.get("c-defer").await.unwrap();
    let mut recorded = recorded_targets(&c);
    recorded.sort_unstable();
    assert_eq!(recorded, ["cluster", "storage"], "the late job is found");
    assert_eq!(
        launched(&w.aap),
        ["create-cluster", "create-storage"],
        "and not launched again"
    );
}

/// Issue 27 (1, 2): the multi-target path comes back to a converged object after the resync
/// period, as the single-target path does (it returned `await_change` before, so a deletion
/// lost with a relist kept the object's finalizer on this path even with a resync set).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converged_object_comes_back_after_the_resync_period() {
    use JobState::Succeeded;
    use JobType::Provision;
    let mut w = world().await;
    w.start();
    let spec = ClusterSpec {
        nodes: 3,
        storage_gb: 100,
    };
    w.api
        .create(&PostParams::default(), &Cluster::new("c-1", spec.clone()))
        .await
        .unwrap();
    let v1 = compute_desired_config_version(&spec).unwrap();
    eventually("both create jobs are launched", || async {
        w.aap.aap().jobs().len() == 2
    })
    .await;
    w.clock.advance(Duration::from_secs(60));
    eventually(
        "both targets report success and the outputs are written",
        || async {
            let c = w.api.get("c-1").await.unwrap();
            let mut h = history(&c);
            h.sort_by(|a, b| a.0.cmp(&b.0));
            let st = c.status.clone().unwrap_or_default();
            h == [
                entry("cluster", Provision, Succeeded, &v1),
                entry("storage", Provision, Succeeded, &v1),
            ] && st.volume.is_some()
                && st.api_url.is_some()
        },
    )
    .await;
    let converged = Arc::new(w.api.get("c-1").await.unwrap());
    let action = w
        .ctx
        .provisioner
        .reconcile(converged, &Outputs)
        .await
        .unwrap();
    let text = format!("{action:?}");
    let secs: f64 = text
        .split_once("Some(")
        .and_then(|(_, rest)| rest.split_once("s)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("a requeue, not a wait for a change: {text}"));
    let period = provkit_kube::Provisioner::<Cluster>::DEFAULT_RESYNC.as_secs_f64();
    assert!((period * 0.9..=period).contains(&secs), "{text}");
    assert_eq!(w.aap.aap().jobs().len(), 2, "nothing launched");
}
