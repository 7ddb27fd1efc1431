//! Adapters between kube types and the lifecycle's kube-free types: [`resource_view`],
//! [`object_ref`], and kube-backed implementations of the lifecycle hooks
//! ([`ApiServerJobs`] and [`SessionStaleCheck`] for the stale-cache check, [`SessionFlush`] for
//! the status flush, [`SessionIntents`] for the durable launch intent).

use kube::{Api, Resource, ResourceExt};
use provkit_core::JobStatus;
use provkit_core::k8s::{GroupVersionResource, ObjectRef};
use provkit_lifecycle::{
    BoxError, IntentStore, LaunchIntent, ResourceMeta, ResourceView, StaleCacheCheck, StatusFlush,
};
use serde::Serialize;

use crate::flush::StatusSession;
use crate::resource::ProvisionedResource;
use crate::stale_check::read_fresh;

/// The lifecycle's view of a typed object: kind and apiVersion from [`kube::Resource`]
/// (not from the object's own `TypeMeta`, which may be missing), name, namespace, uid, and the
/// whole object as JSON (what the AAP provider sends as extra_vars).
///
/// # Errors
/// The serialisation error, if `obj` does not serialise.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ObjectMeta;
///
/// let cm = ConfigMap {
///     metadata: ObjectMeta { name: Some("c".into()), namespace: Some("ns".into()), uid: Some("u-1".into()), ..Default::default() },
///     ..Default::default()
/// };
/// let view = provkit_kube::resource_view(&cm).unwrap();
/// assert_eq!((view.kind.as_str(), view.api_version.as_str()), ("ConfigMap", "v1"));
/// assert_eq!(view.display_name(), "ns/c");
/// assert_eq!(view.uid, "u-1");
/// assert_eq!(view.json().unwrap()["metadata"]["name"], "c");
/// ```
pub fn resource_view<K>(obj: &K) -> Result<ResourceView, serde_json::Error>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let meta = obj.meta();
    let mut json = serde_json::to_value(obj)?;
    // Typed objects built in code may lack TypeMeta; the provider needs both.
    if let Some(map) = json.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| K::api_version(&()).into_owned().into());
        map.entry("kind")
            .or_insert_with(|| K::kind(&()).into_owned().into());
    }
    Ok(ResourceView::new(
        ResourceMeta {
            kind: K::kind(&()).into_owned(),
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone().unwrap_or_default(),
            ..Default::default()
        },
        json,
    )
    .with_api_version(K::api_version(&()).into_owned()))
}

/// The [`GroupVersionResource`] of a typed resource (plural from [`kube::Resource::plural`]).
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// let gvr = provkit_kube::gvr_of::<Deployment>();
/// assert_eq!((gvr.group.as_str(), gvr.version.as_str(), gvr.resource.as_str()), ("apps", "v1", "deployments"));
/// ```
#[must_use]
pub fn gvr_of<K: Resource<DynamicType = ()>>() -> GroupVersionResource {
    GroupVersionResource::new(K::group(&()), K::version(&()), K::plural(&()))
}

/// An [`ObjectRef`] (GVR + metadata) for a typed object.
///
/// ```
/// use k8s_openapi::api::core::v1::Node;
/// use kube::api::ObjectMeta;
/// let node = Node { metadata: ObjectMeta { name: Some("n-0".into()), ..Default::default() }, ..Default::default() };
/// let r = provkit_kube::object_ref(&node);
/// assert_eq!(r.name(), "n-0");
/// assert_eq!(r.gvr.resource, "nodes");
/// ```
#[must_use]
pub fn object_ref<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectRef {
    ObjectRef::new(gvr_of::<K>(), obj.meta().clone())
}

/// `namespace/name` (or `name`) of an object, for logs and spans.
#[must_use]
pub fn display_name<K: Resource>(obj: &K) -> String {
    match obj.namespace() {
        Some(ns) => format!("{ns}/{}", obj.name_any()),
        None => obj.name_any(),
    }
}

/// The lifecycle's [`StaleCacheCheck`] backed by an **uncached** GET of the object from the
/// API server. A 404 reads as "no jobs"; other errors are returned, and the lifecycle policy
/// (`stale_check_fail_open`, default true like Go) decides whether to launch anyway.
///
/// It answers with the fresh object's **whole** job history (provision and deprovision jobs),
/// so one check serves both hooks: the provisioning lifecycle looks at the fresh latest
/// provision job (non-terminal, or newer than the cached one), the deprovisioning lifecycle at
/// the fresh latest deprovision job (one with an id that differs from the cached latest).
#[derive(Debug)]
pub struct ApiServerJobs<K: ProvisionedResource> {
    api: Api<K>,
    name: String,
}

impl<K: ProvisionedResource> ApiServerJobs<K> {
    /// Reads object `name` through `api`.
    pub fn new(api: Api<K>, name: impl Into<String>) -> Self {
        Self {
            api,
            name: name.into(),
        }
    }
}

#[async_trait::async_trait]
impl<K: ProvisionedResource> StaleCacheCheck for ApiServerJobs<K> {
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError> {
        let fresh = read_fresh(&self.api, &self.name).await?;
        Ok(fresh
            .map(|f| f.provisioning_jobs().to_vec())
            .unwrap_or_default())
    }
}

/// The lifecycle's [`StatusFlush`] backed by a [`StatusSession`]: persists the jobs and the
/// given desired config version (merge patch + `resourceVersion` precondition, conflict merge).
#[derive(Debug)]
pub struct SessionFlush<'a, K: ProvisionedResource> {
    session: &'a StatusSession<K>,
    desired_config_version: String,
}

impl<'a, K: ProvisionedResource> SessionFlush<'a, K> {
    /// Flushes through `session`, writing `desired_config_version` alongside the jobs.
    pub fn new(session: &'a StatusSession<K>, desired_config_version: impl Into<String>) -> Self {
        Self {
            session,
            desired_config_version: desired_config_version.into(),
        }
    }
}

#[async_trait::async_trait]
impl<K: ProvisionedResource> StatusFlush for SessionFlush<'_, K> {
    async fn flush(&self, jobs: &[JobStatus]) -> Result<(), BoxError> {
        self.session
            .flush_jobs(jobs, &self.desired_config_version)
            .await
            .map(drop)
            .map_err(|e| Box::new(e) as BoxError)
    }
}

/// The stale-cache check of [`Provisioner`](crate::Provisioner): an **uncached** GET of the
/// object, like [`ApiServerJobs`], that also hands the fresh copy to the reconcile's
/// [`StatusSession`] ([`StatusSession::observe`]). The launch intent the engine resolves next
/// is therefore the API server's, not a lagging cache's, and the intent write carries the fresh
/// `resourceVersion`.
#[derive(Debug)]
pub struct SessionStaleCheck<'a, K: ProvisionedResource> {
    api: Api<K>,
    session: &'a StatusSession<K>,
    name: String,
}

impl<'a, K: ProvisionedResource> SessionStaleCheck<'a, K> {
    /// Reads object `name` through `api` and records it in `session`.
    pub fn new(api: Api<K>, session: &'a StatusSession<K>, name: impl Into<String>) -> Self {
        Self {
            api,
            session,
            name: name.into(),
        }
    }
}

#[async_trait::async_trait]
impl<K: ProvisionedResource> StaleCacheCheck for SessionStaleCheck<'_, K> {
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError> {
        let Some(fresh) = read_fresh(&self.api, &self.name).await? else {
            return Ok(Vec::new());
        };
        self.session.observe(&fresh);
        Ok(fresh.provisioning_jobs().to_vec())
    }
}

/// The lifecycle's [`IntentStore`] backed by a [`StatusSession`]: the intent lives in
/// `status.launchIntent` and is written through the status subresource
/// ([`StatusSession::write_intent`]), so a refused status write refuses the launch.
#[derive(Debug)]
pub struct SessionIntents<'a, K: ProvisionedResource> {
    session: &'a StatusSession<K>,
}

impl<'a, K: ProvisionedResource> SessionIntents<'a, K> {
    /// Keeps the intent through `session`.
    pub fn new(session: &'a StatusSession<K>) -> Self {
        Self { session }
    }
}

#[async_trait::async_trait]
impl<K: ProvisionedResource> IntentStore for SessionIntents<'_, K> {
    fn pending(&self) -> Option<LaunchIntent> {
        self.session.pending_intent()
    }

    async fn write(&self, intent: &LaunchIntent) -> Result<(), BoxError> {
        self.session
            .write_intent(intent)
            .await
            .map_err(|e| Box::new(e) as BoxError)
    }

    fn resolve(&self, idempotency_key: &str) {
        self.session.resolve_intent(idempotency_key);
    }
}
