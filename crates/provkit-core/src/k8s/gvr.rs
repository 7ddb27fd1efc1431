//! [`GroupVersionResource`].

use std::fmt;

use serde::{Deserialize, Serialize};

/// A Kubernetes API group, version and plural resource name, e.g.
/// `machine.openshift.io/v1beta1, machines` or (core group) `v1, nodes`.
///
/// ```
/// use provkit_core::k8s::GroupVersionResource;
/// let nodes = GroupVersionResource::new("", "v1", "nodes");
/// assert_eq!(nodes.to_string(), "v1, Resource=nodes");
/// assert_eq!(nodes.api_version(), "v1");
/// let machines = GroupVersionResource::new("machine.openshift.io", "v1beta1", "machines");
/// assert_eq!(machines.api_version(), "machine.openshift.io/v1beta1");
/// assert_ne!(nodes, machines);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct GroupVersionResource {
    /// API group; empty for the core group.
    pub group: String,
    /// API version, e.g. `v1beta1`.
    pub version: String,
    /// Plural, lower-case resource name, e.g. `machines`.
    pub resource: String,
}

impl GroupVersionResource {
    /// Builds a GVR from its three parts.
    ///
    /// ```
    /// use provkit_core::k8s::GroupVersionResource;
    /// let gvr = GroupVersionResource::new("apps", "v1", "deployments");
    /// assert_eq!(gvr.resource, "deployments");
    /// ```
    #[must_use]
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The `apiVersion` string: `group/version`, or just `version` for the core group.
    ///
    /// ```
    /// use provkit_core::k8s::GroupVersionResource;
    /// assert_eq!(GroupVersionResource::new("", "v1", "pods").api_version(), "v1");
    /// ```
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Resource={}", self.api_version(), self.resource)
    }
}
