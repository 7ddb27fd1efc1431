//! Dispatch targets: what each target of a multi-target lifecycle shows its provider.
//!
//! [`DispatchedProvider`] wraps a [`ProvisioningProvider`] and gives its **launches**
//! (`trigger_provision`, `trigger_deprovision`) a rewritten copy of the object — for OSAC's
//! dual-dispatch, the `osac.openshift.io/implementation-strategy` annotation set to the target's
//! manager, so the playbook picks its role from the payload. Status polls and idempotency lookups
//! pass the object through unchanged, and the caller's object is never mutated (the rewrite
//! works on a deep copy of its JSON). Each target of a [`MultiTargetLifecycle`] has its own
//! [`Lifecycle`] and so its own provider: wrap one shared provider once per target, or route a
//! target to a different provider altogether.
//!
//! [`OsacDispatchPlan`] reproduces OSAC's dual-dispatch (OSAC-1461, August 2026): up to two
//! targets, a fabric manager and a Kubernetes-side manager, through one shared provider.
//!
//! Hand-written: a thin decorator over this crate's own trait; nothing to reuse.
//!
//! [`MultiTargetLifecycle`]: crate::MultiTargetLifecycle
//! [`Lifecycle`]: crate::Lifecycle

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use provkit_core::{JobStatus, JobType};
use serde_json::Value;

use crate::{
    DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext, ProviderError,
    ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceView,
};

/// The annotation through which an OSAC playbook learns which manager implements the object.
pub const IMPLEMENTATION_STRATEGY_ANNOTATION: &str = "osac.openshift.io/implementation-strategy";

/// A rewrite of the object's JSON for one target's launches.
type Rewrite = dyn Fn(&mut Value) + Send + Sync;

/// A provider whose launches see a per-target view of the object (see the
/// [module documentation](self)).
///
/// ```
/// use std::sync::Arc;
/// use provkit_lifecycle::dispatch::{DispatchedProvider, IMPLEMENTATION_STRATEGY_ANNOTATION};
/// use provkit_lifecycle::{ProvisioningProvider, ResourceMeta, ResourceView};
/// # fn demo(shared: Arc<dyn ProvisioningProvider>) {
/// let fabric = DispatchedProvider::with_annotation(
///     shared.clone(),
///     IMPLEMENTATION_STRATEGY_ANNOTATION,
///     "fabric-manager",
/// );
/// let object = ResourceView::new(ResourceMeta::default(), serde_json::json!({"metadata": {}}));
/// let seen = fabric.launch_view(&object);
/// assert_eq!(
///     seen.json().unwrap()["metadata"]["annotations"][IMPLEMENTATION_STRATEGY_ANNOTATION],
///     "fabric-manager"
/// );
/// assert!(object.json().unwrap()["metadata"].get("annotations").is_none(), "never mutated");
/// # }
/// ```
#[derive(Clone)]
pub struct DispatchedProvider {
    inner: Arc<dyn ProvisioningProvider>,
    label: String,
    rewrite: Arc<Rewrite>,
}

impl fmt::Debug for DispatchedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DispatchedProvider")
            .field("inner", &self.inner)
            .field("view", &self.label)
            .finish_non_exhaustive()
    }
}

impl DispatchedProvider {
    /// Wraps `inner`; its launches see the object after `rewrite` (`label` names the rewrite
    /// in `Debug` output).
    pub fn new(
        inner: Arc<dyn ProvisioningProvider>,
        label: impl Into<String>,
        rewrite: impl Fn(&mut Value) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner,
            label: label.into(),
            rewrite: Arc::new(rewrite),
        }
    }

    /// Wraps `inner`; its launches see the object with annotation `key` set to `value`.
    pub fn with_annotation(
        inner: Arc<dyn ProvisioningProvider>,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        let (key, value) = (key.into(), value.into());
        let label = format!("{key}={value}");
        Self::new(inner, label, move |json| {
            set_annotation(json, &key, &value);
        })
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &Arc<dyn ProvisioningProvider> {
        &self.inner
    }

    /// The view a launch of `resource` gets: a copy with the rewrite applied. A view whose JSON
    /// cannot be rendered is passed on as it is, so the provider reports the render error as a
    /// launch that was not made.
    pub fn launch_view(&self, resource: &ResourceView) -> ResourceView {
        match resource.json() {
            Ok(json) => {
                let mut copy = json.clone();
                (self.rewrite)(&mut copy);
                ResourceView::new(resource.meta(), copy)
            }
            Err(_) => resource.clone(),
        }
    }
}

/// Sets `metadata.annotations[key] = value` in an object's JSON (creating the maps as needed;
/// a non-object `metadata` or `annotations` is replaced).
fn set_annotation(json: &mut Value, key: &str, value: &str) {
    let Some(object) = json.as_object_mut() else {
        return;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(serde_json::Map::new());
    }
    if let Some(metadata) = metadata.as_object_mut() {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(serde_json::Map::new());
        }
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for DispatchedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        self.inner
            .trigger_provision(&self.launch_view(resource), ctx)
            .await
    }

    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.inner.provision_status(resource, job_id).await
    }

    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        self.inner
            .trigger_deprovision(&self.launch_view(resource), jobs, ctx)
            .await
    }

    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.inner.deprovision_status(resource, job_id).await
    }

    fn idempotency_support(&self) -> IdempotencySupport {
        self.inner.idempotency_support()
    }

    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.inner
            .find_job_by_idempotency_key(resource, job_type, key)
            .await
    }

    async fn find_job_by_idempotency_key_since(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<DateTime<Utc>>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.inner
            .find_job_by_idempotency_key_since(resource, job_type, key, since)
            .await
    }

    fn error_status_text(&self, error: &ProviderError, text: String) -> String {
        self.inner.error_status_text(error, text)
    }
}

/// The target name of OSAC's fabric-manager target.
pub const OSAC_FABRIC_TARGET: &str = "fabric";
/// The target name of OSAC's Kubernetes-side target.
pub const OSAC_KUBERNETES_TARGET: &str = "kubernetes";
/// Kinds that fall back to the Kubernetes-side target alone when their plan names no fabric
/// manager.
pub const OSAC_KUBERNETES_FALLBACK_KINDS: &[&str] = &["VirtualNetwork", "SecurityGroup"];

/// An object's OSAC dispatch plan (resolved by the operator from its NetworkClass): the managers
/// that implement it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OsacDispatchPlan {
    /// The fabric manager's name, when the class names one.
    pub fabric_manager: Option<String>,
    /// The Kubernetes-side manager's name, when the class names one.
    pub kubernetes_manager: Option<String>,
}

/// One target of a dispatch plan: its name and the provider its launches go through.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DispatchTarget {
    /// The target's name ([`OSAC_FABRIC_TARGET`], [`OSAC_KUBERNETES_TARGET`], or the legacy
    /// single target's).
    pub name: String,
    /// The provider of this target's jobs.
    pub provider: Arc<dyn ProvisioningProvider>,
}

/// Why a dispatch plan gives no target.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// The plan names no manager this kind can be dispatched to.
    #[error("the dispatch plan of {kind} names no manager for it")]
    NoManager {
        /// The object's kind.
        kind: String,
    },
}

impl OsacDispatchPlan {
    /// A plan naming both managers (either may be empty: see [`targets`](Self::targets)).
    pub fn new(
        fabric_manager: Option<impl Into<String>>,
        kubernetes_manager: Option<impl Into<String>>,
    ) -> Self {
        Self {
            fabric_manager: fabric_manager.map(Into::into).filter(|m| !m.is_empty()),
            kubernetes_manager: kubernetes_manager.map(Into::into).filter(|m| !m.is_empty()),
        }
    }

    /// The targets of an object of `kind` under `plan`, each through `shared` with its launches
    /// annotated with its manager ([`IMPLEMENTATION_STRATEGY_ANNOTATION`]):
    /// - no plan: one target named `legacy_target` whose launches see the object unchanged (the
    ///   annotation keeps whatever legacy value the object carries);
    /// - a fabric manager: the [`OSAC_FABRIC_TARGET`] target, and the
    ///   [`OSAC_KUBERNETES_TARGET`] target too when a Kubernetes-side manager is named;
    /// - no fabric manager: the Kubernetes-side target alone, for the kinds of
    ///   [`OSAC_KUBERNETES_FALLBACK_KINDS`].
    ///
    /// What OSAC does for another kind whose plan names no fabric manager is not in the
    /// description provkit follows; provkit refuses it rather than guess.
    ///
    /// # Errors
    /// [`DispatchError::NoManager`] when the plan gives the kind no target.
    pub fn targets(
        plan: Option<&Self>,
        kind: &str,
        shared: &Arc<dyn ProvisioningProvider>,
        legacy_target: &str,
    ) -> Result<Vec<DispatchTarget>, DispatchError> {
        let Some(plan) = plan else {
            return Ok(vec![DispatchTarget {
                name: legacy_target.to_owned(),
                provider: shared.clone(),
            }]);
        };
        let target = |name: &str, manager: &str| DispatchTarget {
            name: name.to_owned(),
            provider: Arc::new(DispatchedProvider::with_annotation(
                shared.clone(),
                IMPLEMENTATION_STRATEGY_ANNOTATION,
                manager,
            )),
        };
        let mut targets = Vec::with_capacity(2);
        match (&plan.fabric_manager, &plan.kubernetes_manager) {
            (Some(fabric), kubernetes) => {
                targets.push(target(OSAC_FABRIC_TARGET, fabric));
                if let Some(kubernetes) = kubernetes {
                    targets.push(target(OSAC_KUBERNETES_TARGET, kubernetes));
                }
            }
            (None, Some(kubernetes)) if OSAC_KUBERNETES_FALLBACK_KINDS.contains(&kind) => {
                targets.push(target(OSAC_KUBERNETES_TARGET, kubernetes));
            }
            _ => {
                return Err(DispatchError::NoManager {
                    kind: kind.to_owned(),
                });
            }
        }
        Ok(targets)
    }
}
