//! What the controller tests in this directory share: the `Network` custom resource (a spec
//! with one field, the provisioning status flattened into its status), its finalizer, and a
//! wait that polls until a condition holds.
// Each test binary compiles this module and uses a different part of it.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use kube::CustomResource;
use provkit_kube::{ProvisionedResource, ProvisioningStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer the tests' `Provisioner`s hold.
pub const FINALIZER: &str = "test.provkit.dev/network-finalizer";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "test.provkit.dev",
    version = "v1",
    kind = "Network",
    namespaced,
    status = "NetworkStatus"
)]
pub struct NetworkSpec {
    pub cidr: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

impl ProvisionedResource for Network {
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

/// Polls `check` every 20 ms until it holds; fails after 30 s (a hang, not a timing claim).
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
