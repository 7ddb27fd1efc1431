//! The example programs' custom resources: four provisioned kinds of group
//! `examples.provkit.dev/v1alpha1`, all with the same spec and status shape (one macro, so a
//! change reaches every kind).

use std::collections::BTreeMap;

use kube::CustomResource;
use provkit_kube::{ProvisionedResource, ProvisioningStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of every example kind.
pub const GROUP: &str = "examples.provkit.dev";

/// Observed state of every example kind: provkit-kube's job history, desired config version,
/// launch intent and conditions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionedStatus {
    /// Job history, desired config version, launch intent and conditions.
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

macro_rules! provisioned_kind {
    ($(#[$doc:meta])* $spec:ident, $kind:tt, $plural:tt) => {
        $(#[$doc])*
        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
        #[kube(
            group = "examples.provkit.dev",
            version = "v1alpha1",
            kind = $kind,
            plural = $plural,
            namespaced,
            status = "ProvisionedStatus"
        )]
        pub struct $spec {
            /// IPv4 CIDR, e.g. `10.0.0.0/24`.
            pub cidr: String,
            /// MTU.
            pub mtu: u32,
            /// Free-form labels passed to the playbook.
            #[serde(default)]
            pub labels: BTreeMap<String, String>,
        }
    };
}

provisioned_kind!(
    /// Desired state of a virtual network.
    VirtualNetworkSpec,
    "VirtualNetwork",
    "virtualnetworks"
);
provisioned_kind!(
    /// Desired state of a volume.
    VolumeSpec,
    "Volume",
    "volumes"
);
provisioned_kind!(
    /// Desired state of a cluster.
    ClusterSpec,
    "Cluster",
    "clusters"
);
provisioned_kind!(
    /// Desired state of a compute instance.
    ComputeInstanceSpec,
    "ComputeInstance",
    "computeinstances"
);

macro_rules! provisioned {
    ($($kind:ty),*) => {$(
        impl ProvisionedResource for $kind {
            fn config_source(&self) -> impl Serialize + '_ {
                &self.spec
            }
            fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
                self.status.as_ref().map(|s| &s.provisioning)
            }
            fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
                &mut self.status.get_or_insert_with(Default::default).provisioning
            }
        }
    )*};
}

provisioned!(VirtualNetwork, Volume, Cluster, ComputeInstance);
