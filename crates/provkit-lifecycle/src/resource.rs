//! The kube-free view of the resource a provider works on.

use serde::Serialize;

/// The resource a [`ProvisioningProvider`](crate::ProvisioningProvider) receives: its identity and its
/// full JSON serialisation, independent of any Kubernetes client library.
///
/// provkit-kube builds one from any `kube::Resource + Serialize`; tests and non-kube callers use
/// [`ResourceView::new`] or [`ResourceView::from_serialize`].
///
/// ```
/// use provkit_lifecycle::ResourceView;
/// use serde_json::json;
///
/// let r = ResourceView::new(
///     "VirtualNetwork",
///     "net-a",
///     Some("tenant-1".to_owned()),
///     "8c7f0e4e-0000-4000-8000-000000000001",
///     json!({"kind": "VirtualNetwork", "metadata": {"name": "net-a"}, "spec": {}}),
/// )
/// .with_api_version("osac.openshift.io/v1alpha1");
/// assert_eq!(r.kind, "VirtualNetwork");
/// assert_eq!(r.json["metadata"]["name"], "net-a");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ResourceView {
    /// The object's kind, for example `"VirtualNetwork"` (may be empty when unknown).
    pub kind: String,
    /// The object's `apiVersion`, for example `"osac.openshift.io/v1alpha1"` (may be empty).
    pub api_version: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// `metadata.uid`. The engine derives idempotency keys from it, so it should be non-empty.
    pub uid: String,
    /// The whole object as JSON (metadata, spec and in-memory status).
    pub json: serde_json::Value,
}

impl ResourceView {
    /// Builds a view from its parts.
    pub fn new(
        kind: impl Into<String>,
        name: impl Into<String>,
        namespace: Option<String>,
        uid: impl Into<String>,
        json: serde_json::Value,
    ) -> Self {
        Self {
            kind: kind.into(),
            api_version: String::new(),
            name: name.into(),
            namespace,
            uid: uid.into(),
            json,
        }
    }

    /// Builds a view by serialising `object` to JSON.
    ///
    /// # Errors
    /// The serialisation error of `serde_json`.
    pub fn from_serialize<T: Serialize + ?Sized>(
        kind: impl Into<String>,
        name: impl Into<String>,
        namespace: Option<String>,
        uid: impl Into<String>,
        object: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(
            kind,
            name,
            namespace,
            uid,
            serde_json::to_value(object)?,
        ))
    }

    /// Sets the `apiVersion`.
    #[must_use]
    pub fn with_api_version(mut self, api_version: impl Into<String>) -> Self {
        self.api_version = api_version.into();
        self
    }

    /// `namespace/name`, or `name` for cluster-scoped objects (for logs).
    pub fn display_name(&self) -> String {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => format!("{ns}/{}", self.name),
            _ => self.name.clone(),
        }
    }
}
