//! Dispatch targets: what each target of a [`MultiTargetLifecycle`](crate::MultiTargetLifecycle)
//! sends, and to which provider.
//!
//! - **Launch views** ([`LaunchView`], [`ViewedProvider`], [`Lifecycle::with_launch_view`]): a
//!   target may rewrite the copy of the object its provider's launches see — for example set the
//!   `osac.openshift.io/implementation-strategy` annotation to the target's manager, so one shared
//!   provider and one set of templates serve every target and the playbook picks its role from
//!   the payload. Only `trigger_provision` and `trigger_deprovision` see the rewritten copy;
//!   status polls and idempotency lookups see the object unchanged. The object itself (and the
//!   [`ResourceView`] the caller passed) is never changed: the copy is rendered from it on first
//!   use.
//! - **Routing** ([`ProviderRoutes`], [`RoutedProvider`]): a target's launches go to one of several
//!   named providers, chosen per launch; a job is polled, cancelled and deprovisioned by the
//!   provider that recorded it, whatever the routing says later (the module
//!   [`routing`] explains how that is recorded and how it round-trips with Go-written status).
//! - **The OSAC preset** ([`osac`]): Go's dual-dispatch provisioning (OSAC-1461) — a dispatch plan
//!   of a fabric and a Kubernetes-side manager, the fallback rule, the legacy value without a plan,
//!   and the targets of a plan.
//!
//! Written here rather than taken from a crate: provider decorators over this crate's own trait.
//!
//! ```
//! # async fn run(aap: std::sync::Arc<dyn provkit_lifecycle::ProvisioningProvider>, clock: std::sync::Arc<dyn provkit_core::Clock>) -> Result<(), provkit_lifecycle::TargetError> {
//! use provkit_lifecycle::dispatch::SetAnnotation;
//! use provkit_lifecycle::{JobTarget, Lifecycle, MultiTargetLifecycle};
//!
//! const STRATEGY: &str = "osac.openshift.io/implementation-strategy";
//! let shared = Lifecycle::new(aap, clock);
//! let engine = MultiTargetLifecycle::new([
//!     JobTarget::new("fabric", shared.clone().with_launch_view(SetAnnotation::new(STRATEGY, "netris")))
//!         .absorbs_legacy_history(),
//!     JobTarget::new("k8s", shared.with_launch_view(SetAnnotation::new(STRATEGY, "cudn_net"))),
//! ])?;
//! # let _ = engine; Ok(()) }
//! ```

pub mod osac;
pub mod routing;

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use provkit_core::{JobStatus, JobType};
use serde_json::Value;

use crate::engine::Lifecycle;
use crate::error::ProviderError;
use crate::idempotency::{FoundJob, IdempotencyKey, IdempotencySupport};
use crate::launch_context::LaunchContext;
use crate::provider::{DeprovisionResult, ProvisionResult, ProvisionStatus, ProvisioningProvider};
use crate::resource::ResourceView;

pub use routing::{ProviderRoutes, RouteError, RoutedProvider};

/// Rewrites the copy of the object a target's launches send (see the [module docs](self)).
pub trait LaunchView: Send + Sync + fmt::Debug {
    /// Changes `object` (a copy of the resource's JSON) before a launch sees it.
    fn rewrite(&self, object: &mut Value);
}

/// Sets one annotation to a fixed value (creating `metadata.annotations` if needed): Go's
/// dual-dispatch decorator, with `osac.openshift.io/implementation-strategy` and the target's
/// manager name.
///
/// ```
/// use provkit_lifecycle::dispatch::{LaunchView, SetAnnotation};
/// let view = SetAnnotation::new("osac.openshift.io/implementation-strategy", "netris");
/// let mut object = serde_json::json!({"metadata": {"name": "s"}});
/// view.rewrite(&mut object);
/// assert_eq!(object["metadata"]["annotations"]["osac.openshift.io/implementation-strategy"], "netris");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAnnotation {
    key: String,
    value: String,
}

impl SetAnnotation {
    /// Sets annotation `key` to `value`.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }

    /// The annotation key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value it is set to.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl LaunchView for SetAnnotation {
    fn rewrite(&self, object: &mut Value) {
        let Some(root) = object.as_object_mut() else {
            return;
        };
        let metadata = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        let Some(metadata) = metadata.as_object_mut() else {
            return;
        };
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(serde_json::Map::new());
        }
        if let Some(map) = annotations.as_object_mut() {
            map.insert(self.key.clone(), Value::String(self.value.clone()));
        }
    }
}

/// A [`LaunchView`] from a closure (`name` shows in `Debug`).
pub struct ViewFn<F> {
    name: String,
    f: F,
}

impl<F> fmt::Debug for ViewFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ViewFn").field(&self.name).finish()
    }
}

impl<F: Fn(&mut Value) + Send + Sync> LaunchView for ViewFn<F> {
    fn rewrite(&self, object: &mut Value) {
        (self.f)(object);
    }
}

/// A [`LaunchView`] running `f` (named `name` in `Debug` output).
///
/// ```
/// use provkit_lifecycle::dispatch::{LaunchView, view_fn};
/// let view = view_fn("drop status", |object| { object.as_object_mut().map(|o| o.remove("status")); });
/// let mut object = serde_json::json!({"spec": {}, "status": {}});
/// view.rewrite(&mut object);
/// assert_eq!(object, serde_json::json!({"spec": {}}));
/// ```
pub fn view_fn<F: Fn(&mut Value) + Send + Sync>(name: impl Into<String>, f: F) -> ViewFn<F> {
    ViewFn {
        name: name.into(),
        f,
    }
}

/// A provider whose launches see the object through a [`LaunchView`] (Go's
/// `dispatchTargetProvider`, generalised). Polls, lookups, the name and the status texts are the
/// inner provider's.
#[derive(Clone, Debug)]
pub struct ViewedProvider {
    inner: Arc<dyn ProvisioningProvider>,
    view: Arc<dyn LaunchView>,
}

impl ViewedProvider {
    /// `inner` with its launches seeing the object through `view`.
    pub fn new(inner: Arc<dyn ProvisioningProvider>, view: impl LaunchView + 'static) -> Self {
        Self {
            inner,
            view: Arc::new(view),
        }
    }

    /// The provider that does the work.
    pub fn inner(&self) -> &Arc<dyn ProvisioningProvider> {
        &self.inner
    }

    /// What the launches of `resource` send: a copy rewritten by the view, rendered on first use
    /// from `resource`'s own JSON (which is rendered at most once and never changed).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use provkit_lifecycle::dispatch::{SetAnnotation, ViewedProvider};
    /// use provkit_lifecycle::{ResourceMeta, ResourceView};
    /// # fn f(aap: Arc<dyn provkit_lifecycle::ProvisioningProvider>) -> Result<(), provkit_lifecycle::ViewError> {
    /// let p = ViewedProvider::new(aap, SetAnnotation::new("example.com/manager", "fabric-a"));
    /// let object = ResourceView::new(ResourceMeta { kind: "Subnet".into(), name: "s".into(), uid: "u".into(), ..Default::default() },
    ///     serde_json::json!({"metadata": {"name": "s"}}));
    /// let seen = p.view_of(&object);
    /// assert_eq!(seen.json()?["metadata"]["annotations"]["example.com/manager"], "fabric-a");
    /// assert!(object.json()?["metadata"].get("annotations").is_none());
    /// # Ok(()) }
    /// ```
    pub fn view_of(&self, resource: &ResourceView) -> ResourceView {
        let original = resource.clone();
        let view = Arc::clone(&self.view);
        ResourceView::lazy(resource.meta(), move || {
            let mut json = original
                .json()
                .map_err(|e| <serde_json::Error as serde::ser::Error>::custom(e.message))?
                .clone();
            view.rewrite(&mut json);
            Ok(json)
        })
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for ViewedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        self.inner
            .trigger_provision(&self.view_of(resource), ctx)
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
            .trigger_deprovision(&self.view_of(resource), jobs, ctx)
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

    fn launch_refused_for(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
    ) -> Option<std::time::Duration> {
        self.inner.launch_refused_for(resource, job_type)
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

    async fn launch_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Option<String> {
        self.inner.launch_marker(resource, job_type, key).await
    }

    async fn find_job_by_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: DateTime<Utc>,
        marker: &str,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.inner
            .find_job_by_marker(resource, job_type, key, since, marker)
            .await
    }

    fn error_status_text(&self, error: &ProviderError, text: String) -> String {
        self.inner.error_status_text(error, text)
    }
}

impl Lifecycle {
    /// This engine with its provider's launches seeing the object through `view`
    /// ([`ViewedProvider`]); clock, policy and metrics are kept. Give each
    /// [`JobTarget`](crate::JobTarget) its own view of one shared provider.
    #[must_use]
    pub fn with_launch_view(self, view: impl LaunchView + 'static) -> Self {
        let provider = Arc::new(ViewedProvider::new(Arc::clone(self.provider()), view));
        self.with_provider(provider)
    }
}
