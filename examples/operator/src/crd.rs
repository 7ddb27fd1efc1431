//! The `VirtualNetwork` custom resource.

use kube::CustomResource;
use provkit_kube::{ProvisionedResource, ProvisioningStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a virtual network.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "osac.openshift.io",
    version = "v1alpha1",
    kind = "VirtualNetwork",
    namespaced,
    status = "VirtualNetworkStatus",
    shortname = "vnet",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"CIDR","type":"string","jsonPath":".spec.cidr"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNetworkSpec {
    /// IPv4 CIDR of the network, e.g. `10.0.0.0/24`.
    pub cidr: String,
    /// Region to create it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// Lifecycle phase shown by `kubectl get vnet`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    /// A job is (or is about to be) running for the current spec.
    Progressing,
    /// The current spec is provisioned.
    Ready,
    /// The last provision job failed; it is retried with backoff.
    Failed,
    /// Being torn down.
    Deleting,
}

/// Observed state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNetworkStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The network id the provision playbook published (`set_stats: {network_id: …}`, read from
    /// the job's outputs when it succeeds).
    #[serde(default, rename = "networkID", skip_serializing_if = "Option::is_none")]
    pub network_id: Option<String>,
    /// Job history, desired config version and conditions.
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

impl ProvisionedResource for VirtualNetwork {
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

/// The CRD as YAML (what `operator crd` prints).
///
/// # Errors
/// The YAML serialisation error.
pub fn crd_yaml() -> Result<String, serde_yaml_ng::Error> {
    use kube::CustomResourceExt;
    serde_yaml_ng::to_string(&VirtualNetwork::crd())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn crd_is_structural_with_status_subresource_and_list_map_conditions() {
        let crd = serde_json::to_value(VirtualNetwork::crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "virtualnetworks.osac.openshift.io");
        let v = &crd["spec"]["versions"][0];
        assert_eq!(v["name"], "v1alpha1");
        assert_eq!(v["subresources"]["status"], serde_json::json!({}));
        let status = &v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
        assert_eq!(status["conditions"]["x-kubernetes-list-type"], "map");
        assert_eq!(
            status["conditions"]["x-kubernetes-list-map-keys"],
            serde_json::json!(["type"])
        );
        assert_eq!(status["provisioningJobs"]["type"], "array");
        assert_eq!(
            status["phase"]["enum"],
            serde_json::json!(["Progressing", "Ready", "Failed", "Deleting"])
        );
        assert!(
            crd_yaml().unwrap().starts_with(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            )
        );
    }
}
