//! [`ProvisionedResource`]: what a CRD type implements to be provisioned by provkit.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::core::object::{HasSpec, HasStatus};
use kube::{Api, Client, Resource};
use serde::{Serialize, de::DeserializeOwned};

use crate::status::ProvisioningStatus;

/// A typed Kubernetes object (usually a `kube::CustomResource`) whose status carries a
/// [`ProvisioningStatus`].
///
/// Three small methods: where the config version is hashed from, and where the
/// provisioning status lives. For the common shape — a derived custom resource whose status
/// struct embeds a [`ProvisioningStatus`] and whose config version is hashed from `spec` — you
/// write none of them: mark the status with [`provisioning_status!`](crate::provisioning_status)
/// (or implement [`HasProvisioningStatus`]) and the blanket implementation does the rest.
///
/// ```
/// use kube::CustomResource;
/// use provkit_kube::{ProvisionedResource, ProvisioningStatus};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
/// pub struct WidgetSpec { size: u32 }
///
/// #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
/// pub struct WidgetStatus {
///     #[serde(flatten)]
///     provisioning: ProvisioningStatus,
/// }
/// provkit_kube::provisioning_status!(WidgetStatus.provisioning);
///
/// let w = Widget::new("w", WidgetSpec { size: 1 });
/// assert!(w.provisioning_status().is_none());
/// ```
///
/// Spelled out (another config source, or a status without [`HasProvisioningStatus`]):
///
/// ```
/// use kube::CustomResource;
/// use provkit_kube::{ProvisionedResource, ProvisioningStatus};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
/// pub struct WidgetSpec { size: u32 }
///
/// #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
/// pub struct WidgetStatus {
///     #[serde(flatten)]
///     provisioning: ProvisioningStatus,
/// }
///
/// impl ProvisionedResource for Widget {
///     fn config_source(&self) -> impl Serialize + '_ { &self.spec }
///     fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
///         self.status.as_ref().map(|s| &s.provisioning)
///     }
///     fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
///         &mut self.status.get_or_insert_with(Default::default).provisioning
///     }
/// }
/// # fn main() {}
/// ```
pub trait ProvisionedResource:
    Resource<DynamicType = (), Scope: NamespaceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The value the desired config version is hashed from (Go: `resource.Spec`, or a wrapper
    /// such as `{Spec, ImplementationStrategy}`). For Go-compatible hashes its JSON must be
    /// byte-identical to Go's (see `provkit_core::compute_desired_config_version`).
    fn config_source(&self) -> impl Serialize + '_;

    /// The provisioning status, if the object has a status.
    fn provisioning_status(&self) -> Option<&ProvisioningStatus>;

    /// The provisioning status, created (empty) if the object has none yet.
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus;

    /// The merge-patch fragment under `status` that persists the job history and the desired
    /// config version. The default assumes [`ProvisioningStatus`] is flattened into the
    /// status (`status.provisioningJobs`, `status.desiredConfigVersion`); override it if you
    /// nest it elsewhere.
    fn provisioning_status_patch(status: &ProvisioningStatus) -> serde_json::Value {
        serde_json::json!({
            "provisioningJobs": status.provisioning_jobs,
            "desiredConfigVersion": if status.desired_config_version.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::Value::String(status.desired_config_version.clone())
            },
        })
    }

    /// The merge-patch fragment under `status` that sets (`Some`) or clears (`None`) the launch
    /// intent. The default assumes [`ProvisioningStatus`] is flattened into the status
    /// (`status.launchIntent`); override it together with
    /// [`provisioning_status_patch`](Self::provisioning_status_patch).
    fn launch_intent_patch(intent: Option<&provkit_core::LaunchIntent>) -> serde_json::Value {
        serde_json::json!({ "launchIntent": intent })
    }

    /// The job history (empty when there is no status).
    fn provisioning_jobs(&self) -> &[provkit_core::JobStatus] {
        self.provisioning_status()
            .map_or(&[], |s| s.provisioning_jobs.as_slice())
    }

    /// The status condition of that type (`obj.condition("Ready")`), if any.
    fn condition(&self, type_: &str) -> Option<&Condition> {
        self.provisioning_status().and_then(|s| s.condition(type_))
    }
}

/// A status struct that embeds a [`ProvisioningStatus`] (flattened, as the Go CRDs have it).
/// With it, a derived custom resource whose `status` is this type is a [`ProvisionedResource`]
/// (config version hashed from `spec`) without writing that trait's methods. The
/// [`provisioning_status!`](crate::provisioning_status) macro implements it in one line.
pub trait HasProvisioningStatus: Default {
    /// The embedded provisioning status.
    fn provisioning(&self) -> &ProvisioningStatus;
    /// The embedded provisioning status, mutably.
    fn provisioning_mut(&mut self) -> &mut ProvisioningStatus;
}

impl HasProvisioningStatus for ProvisioningStatus {
    fn provisioning(&self) -> &ProvisioningStatus {
        self
    }
    fn provisioning_mut(&mut self) -> &mut ProvisioningStatus {
        self
    }
}

/// Implements [`HasProvisioningStatus`] for a status struct through its field that holds the
/// [`ProvisioningStatus`]: `provisioning_status!(WidgetStatus.provisioning);`. The custom
/// resource whose `status` it is then is a [`ProvisionedResource`] (see there).
#[macro_export]
macro_rules! provisioning_status {
    ($status:ident . $field:ident) => {
        impl $crate::HasProvisioningStatus for $status {
            fn provisioning(&self) -> &$crate::ProvisioningStatus {
                &self.$field
            }
            fn provisioning_mut(&mut self) -> &mut $crate::ProvisioningStatus {
                &mut self.$field
            }
        }
    };
}

/// The common shape: a derived custom resource (`kube::CustomResource` implements `HasSpec`
/// and `HasStatus`) whose status embeds a [`ProvisioningStatus`]; the config version is hashed
/// from `spec`, as Go's operators do.
impl<K> ProvisionedResource for K
where
    K: Resource<DynamicType = (), Scope: NamespaceScope>
        + HasSpec
        + HasStatus
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
    K::Spec: Serialize,
    K::Status: HasProvisioningStatus,
{
    fn config_source(&self) -> impl Serialize + '_ {
        self.spec()
    }
    fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
        self.status().map(HasProvisioningStatus::provisioning)
    }
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
        self.status_mut()
            .get_or_insert_with(Default::default)
            .provisioning_mut()
    }
}

/// How an `Api<K>` is built for an object of scope `K::Scope`: implemented for
/// k8s-openapi's namespaced and cluster scopes, so [`ProvisionedResource`] works for both.
pub trait NamespaceScope {
    /// The `Api` for an object in `namespace` (`None` for cluster-scoped objects).
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>;
}

impl NamespaceScope for k8s_openapi::NamespaceResourceScope {
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>,
    {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::default_namespaced(client),
        }
    }
}

impl NamespaceScope for k8s_openapi::ClusterResourceScope {
    fn api<K>(client: Client, _namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>,
    {
        Api::all(client)
    }
}
