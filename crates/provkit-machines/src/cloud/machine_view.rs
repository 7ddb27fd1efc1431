//! [`MachineView`]: the kube-free view of a machine a cloud provider works on.

use std::collections::BTreeMap;

use super::instance::NodeAddress;

/// What a [`CloudProvider`](super::CloudProvider) sees of a machine. provkit-kube builds it
/// from a Cluster API or machine-controller `Machine`. Identity is the `uid`.
///
/// ```
/// use provkit_machines::cloud::MachineView;
/// let m = MachineView::new("uid-1", "worker-a", serde_json::json!({"size": "m5.large"}));
/// assert_eq!(m.uid, "uid-1");
/// assert_eq!(m.namespace, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MachineView {
    /// The machine UID (instance identity).
    pub uid: String,
    /// The machine name.
    pub name: String,
    /// The machine namespace.
    pub namespace: Option<String>,
    /// Machine labels.
    pub labels: BTreeMap<String, String>,
    /// Machine annotations.
    pub annotations: BTreeMap<String, String>,
    /// The provider spec (opaque JSON).
    pub provider_spec: serde_json::Value,
    /// `spec.providerID`, once set.
    pub provider_id: Option<String>,
    /// `status.addresses`.
    pub addresses: Vec<NodeAddress>,
}

impl MachineView {
    /// A view with uid, name and provider spec.
    ///
    /// ```
    /// use provkit_machines::cloud::MachineView;
    /// assert_eq!(MachineView::new("u", "n", serde_json::Value::Null).name, "n");
    /// ```
    #[must_use]
    pub fn new(
        uid: impl Into<String>,
        name: impl Into<String>,
        provider_spec: serde_json::Value,
    ) -> Self {
        Self {
            uid: uid.into(),
            name: name.into(),
            provider_spec,
            ..Self::default()
        }
    }

    /// The same machine under another UID (as after an API-type migration).
    ///
    /// ```
    /// use provkit_machines::cloud::MachineView;
    /// let m = MachineView::new("old", "n", serde_json::Value::Null).with_uid("new");
    /// assert_eq!(m.uid, "new");
    /// ```
    #[must_use]
    pub fn with_uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = uid.into();
        self
    }
}
