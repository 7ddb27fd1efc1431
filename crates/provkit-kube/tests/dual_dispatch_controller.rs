//! OSAC's dual-dispatch provisioning end to end: kube-runtime's `Controller` with provkit-kube's
//! `MultiTargetProvisioner`, one Subnet, two targets (the fabric manager and the
//! Kubernetes-side manager of its dispatch plan) sharing **one** AAP provider with the OSAC
//! templates and the `osac_job_vars` envelope, against the provkit-testing fake API server and
//! the fake AAP over loopback HTTP.
//!
//! Each target's launches see the object with `osac.openshift.io/implementation-strategy` set to
//! its own manager (the osac-aap playbook picks its role from it); the object stored in the API
//! server never carries either value, and polls and deletion work on the object as stored.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use futures::StreamExt;
use kube::CustomResource;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::{Controller, watcher};
use provkit_aap::AapClient;
use provkit_aap::provider::{AapProvider, Envelope, TemplateNames};
use provkit_core::{Clock, JobState, JobType, ManualClock};
use provkit_kube::{
    MultiTargetCallbacks, MultiTargetProvisioner, ProvisionedResource, ProvisioningStatus,
    ReconcileError,
};
use provkit_lifecycle::dispatch::osac::{
    DispatchPlan, FABRIC_TARGET, IMPLEMENTATION_STRATEGY_ANNOTATION, K8S_TARGET, Managers,
};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy, MultiTargetLifecycle};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobInfo, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use common::eventually;

const FINALIZER: &str = "test.provkit.dev/subnet-finalizer";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "test.provkit.dev",
    version = "v1",
    kind = "Subnet",
    namespaced,
    status = "SubnetStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct SubnetSpec {
    #[serde(rename = "ipv4CIDR")]
    pub ipv4_cidr: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubnetStatus {
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

impl ProvisionedResource for Subnet {
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

struct NoCallbacks;
impl MultiTargetCallbacks<Subnet> for NoCallbacks {}

struct Ctx {
    provisioner: MultiTargetProvisioner<Subnet>,
}

impl AsRef<provkit_kube::Provisioner<Subnet>> for Ctx {
    fn as_ref(&self) -> &provkit_kube::Provisioner<Subnet> {
        self.provisioner.as_ref()
    }
}

async fn reconcile(
    obj: Arc<Subnet>,
    ctx: Arc<Ctx>,
) -> Result<kube::runtime::controller::Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &NoCallbacks).await
}

/// The template as the current osac-aap playbook uses it: it reads its role from the resource's
/// implementation-strategy annotation and the spec from `osac_job_vars.resource.spec`.
fn osac_template(name: &str) -> JobTemplateSpec {
    JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10))),
        ..JobTemplateSpec::new(name, "osac")
    }
    .reading([
        "osac_job_vars.resource.spec",
        "osac_job_vars.resource.metadata.annotations",
    ])
}

/// The manager a job's playbook saw, from the job record's extra_vars as AWX stores them.
fn manager_seen(job: &JobInfo) -> String {
    let vars: Value = serde_json::from_str(&job.extra_vars).unwrap();
    vars["osac_job_vars"]["resource"]["metadata"]["annotations"][IMPLEMENTATION_STRATEGY_ANNOTATION]
        .as_str()
        .unwrap_or_else(|| panic!("job {} carries no manager: {vars}", job.id))
        .to_owned()
}

/// `(template, manager)` of every job, sorted.
fn launches(aap: &FakeAapServer) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = aap
        .aap()
        .jobs()
        .iter()
        .map(|j| (j.name.clone(), manager_seen(j)))
        .collect();
    out.sort();
    out
}

fn strategy_of(stored: &Subnet) -> Option<String> {
    stored
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(IMPLEMENTATION_STRATEGY_ANNOTATION).cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_dispatch_launches_each_target_with_its_manager_and_stores_neither() {
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 8, 3, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("osac")
        .job_template(osac_template("osac-create-subnet"))
        .job_template(osac_template("osac-delete-subnet"))
        .start()
        .await
        .unwrap();
    // One provider for both targets: the OSAC template names and envelope (the preset's, with
    // the test's clock).
    let provider = AapProvider::builder(
        AapClient::builder(aap.base_url())
            .token(aap.token())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
    )
    .templates(TemplateNames::osac())
    .envelope(Envelope::OsacJobVars)
    .clock(dyn_clock.clone())
    .build();
    let mut policy = LifecyclePolicy::default().with_poll_interval(Duration::from_millis(100));
    policy.min_requeue = Duration::from_millis(10);
    let shared = Lifecycle::new(Arc::new(provider), dyn_clock.clone()).with_policy(policy);
    let plan = DispatchPlan::resolve("Subnet", &Managers::new(Some("netris"), Some("cudn_net")))
        .unwrap()
        .expect("both managers: a plan");
    let targets =
        MultiTargetLifecycle::new(plan.job_targets(&shared).expect("a fabric target")).unwrap();

    let server = FakeApiServer::builder()
        .crd::<Subnet>()
        .clock(dyn_clock.clone())
        .build();
    let operator = server.client_with_user_agent("osac-operator/0.1");
    let provisioner = MultiTargetProvisioner::new(operator.clone(), targets, FINALIZER)
        .configure(|p| p.with_field_manager("osac-operator"));
    let ctx = Arc::new(Ctx { provisioner });
    let controller = tokio::spawn(
        Controller::new(Api::<Subnet>::all(operator), watcher::Config::default())
            .run(reconcile, provkit_kube::error_policy, ctx)
            .for_each(|_| async {}),
    );
    let api: Api<Subnet> = Api::default_namespaced(server.client_named("user"));
    let spec = SubnetSpec {
        ipv4_cidr: "10.0.1.0/24".into(),
    };
    api.create(&PostParams::default(), &Subnet::new("subnet-a", spec))
        .await
        .unwrap();

    // One launch per target through the one template, each seeing its own manager.
    eventually("both targets launch", || async {
        aap.aap().jobs().len() == 2
    })
    .await;
    assert_eq!(
        launches(&aap),
        [
            ("osac-create-subnet".to_owned(), "cudn_net".to_owned()),
            ("osac-create-subnet".to_owned(), "netris".to_owned()),
        ]
    );
    // The playbook read the spec and its role from the payload.
    for job in aap.aap().jobs() {
        let reads: Vec<&Result<Value, String>> = job.reads.iter().map(|(_, r)| r).collect();
        assert_eq!(
            reads[0],
            &Ok(json!({"ipv4CIDR": "10.0.1.0/24"})),
            "job {}",
            job.id
        );
        assert!(reads[1].is_ok(), "job {}: {:?}", job.id, reads[1]);
    }
    // The stored object carries no manager.
    assert_eq!(strategy_of(&api.get("subnet-a").await.unwrap()), None);

    // Polls run on the stored object; both targets end Succeeded, each job tagged.
    clock.advance(Duration::from_secs(60));
    eventually("both targets succeed", || async {
        let s = api.get("subnet-a").await.unwrap();
        let mut done: Vec<(String, JobType, JobState)> = s
            .provisioning_jobs()
            .iter()
            .map(|j| (j.target.clone(), j.job_type.clone(), j.state.clone()))
            .collect();
        done.sort_by(|a, b| a.0.cmp(&b.0));
        done == [
            (
                FABRIC_TARGET.to_owned(),
                JobType::Provision,
                JobState::Succeeded,
            ),
            (
                K8S_TARGET.to_owned(),
                JobType::Provision,
                JobState::Succeeded,
            ),
        ]
    })
    .await;
    let stored = api.get("subnet-a").await.unwrap();
    assert_eq!(strategy_of(&stored), None);
    // Each target's recorded job is the one launched with its manager.
    for job in stored.provisioning_jobs() {
        let record = aap.aap().job(job.job_id.parse().unwrap()).unwrap();
        let want = if job.target == FABRIC_TARGET {
            "netris"
        } else {
            "cudn_net"
        };
        assert_eq!(manager_seen(&record), want, "{job:?}");
    }

    // Deletion: each target deprovisions with its own manager too; the object then goes.
    api.delete("subnet-a", &DeleteParams::default())
        .await
        .unwrap();
    eventually("both targets launch their deprovision", || async {
        aap.aap().jobs().len() == 4
    })
    .await;
    let deletes: Vec<(String, String)> = launches(&aap)
        .into_iter()
        .filter(|(t, _)| t == "osac-delete-subnet")
        .collect();
    assert_eq!(
        deletes,
        [
            ("osac-delete-subnet".to_owned(), "cudn_net".to_owned()),
            ("osac-delete-subnet".to_owned(), "netris".to_owned()),
        ]
    );
    clock.advance(Duration::from_secs(60));
    eventually("the object is gone", || async {
        api.get_opt("subnet-a").await.unwrap().is_none()
    })
    .await;
    controller.abort();
}
