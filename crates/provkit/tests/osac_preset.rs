//! `provkit::osac::provisioner`: the OSAC template names and management-state annotation in one
//! call, through provkit-kube's `Provisioner` against the fake API server (in-process
//! `kube::Client`) and the fake AAP over loopback HTTP.
#![cfg(all(feature = "aap", feature = "kube"))]
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use kube::CustomResource;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use provkit::aap::AapClient;
use provkit::kube::{NoCallbacks, ProvisionedResource, ProvisioningStatus};
use provkit::{Clock, LifecyclePolicy, ManualClock};
use provkit_testing::fake_aap::{FakeAap, JobScript, JobTemplateSpec};
use provkit_testing::fake_apiserver::FakeApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "osac.openshift.io",
    version = "v1alpha1",
    kind = "ClusterOrder",
    namespaced,
    status = "OrderStatus"
)]
pub struct ClusterOrderSpec {
    pub template_id: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub struct OrderStatus {
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

impl ProvisionedResource for ClusterOrder {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_gives_osac_names_and_the_management_annotation() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap(),
    ));
    let aap = FakeAap::builder()
        .clock(clock.clone())
        .organization("osac")
        .job_template(JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(10))),
            ..JobTemplateSpec::new("osac-create-hosted-cluster", "osac")
        })
        .start()
        .await
        .unwrap();
    let server = FakeApiServer::builder()
        .crd::<ClusterOrder>()
        .clock(clock.clone())
        .build();
    let client = server.client_named("osac-operator");
    let aap_client = AapClient::builder(aap.base_url())
        .token(aap.token())
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let provisioner = provkit::osac::provisioner::<ClusterOrder>(
        client.clone(),
        aap_client,
        clock,
        LifecyclePolicy::default(),
        "osac.openshift.io/clusterorder-finalizer",
    );
    let api: Api<ClusterOrder> = Api::default_namespaced(client);
    let spec = || ClusterOrderSpec {
        template_id: "ocp-4-17".into(),
    };
    let mut unmanaged = ClusterOrder::new("order-unmanaged", spec());
    unmanaged.metadata.annotations = Some(
        [(
            "osac.openshift.io/management-state".to_owned(),
            "unmanaged".to_owned(),
        )]
        .into(),
    );
    for obj in [ClusterOrder::new("order-a", spec()), unmanaged] {
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    // Two reconciles each: the first adds the finalizer, the second launches.
    for name in ["order-a", "order-unmanaged", "order-a", "order-unmanaged"] {
        let obj = api.get(name).await.unwrap();
        let action = provisioner
            .reconcile(Arc::new(obj), &NoCallbacks)
            .await
            .unwrap();
        if name == "order-unmanaged" {
            assert_eq!(action, Action::await_change(), "skipped per annotation");
        }
    }
    // ClusterOrder → osac-create-hosted-cluster (not the neutral osac-create-cluster-order).
    let names: Vec<String> = aap.aap().jobs().iter().map(|j| j.name.clone()).collect();
    assert_eq!(names, ["osac-create-hosted-cluster"]);
    let skipped = api.get("order-unmanaged").await.unwrap();
    assert_eq!(
        skipped.metadata.finalizers, None,
        "the unmanaged object was not touched"
    );
    assert_eq!(
        api.get("order-a").await.unwrap().provisioning_jobs().len(),
        1
    );
}
