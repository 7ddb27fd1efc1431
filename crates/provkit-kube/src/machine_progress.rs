//! [`KubeProgressHandle`]: a [`ProgressHandle`] that keeps a machine's
//! [`MachineProgress`] in the [`PROGRESS_ANNOTATION`] annotation of the machine object
//! (feature `machines`).
//!
//! # Writes: merge patch with a `resourceVersion` precondition
//! Every [`update`](ProgressHandle::update) reads the object from the API server (uncached: a
//! stale informer copy that misses a recorded create intent is exactly how a duplicate
//! instance is born), applies the change to the decoded record and sends a JSON merge patch
//! of `metadata.annotations[PROGRESS_ANNOTATION]` carrying `metadata.resourceVersion`. A
//! concurrent write makes the API server answer 409 Conflict; the handle re-reads and
//! re-applies the change, up to [`KubeProgressHandle::with_max_attempts`] times (default 5).
//! A change that alters nothing is not written; a record that becomes empty removes the
//! annotation. Only the one annotation is touched; other annotations, labels, finalizers, spec
//! and status are left alone.
//!
//! Hand-written: a read-modify-patch loop over `kube::Api` (kube-rs has no generic
//! retry-on-conflict helper for metadata).
//!
//! Why an annotation and not `status`: it works for every machine type (Cluster API, Machine
//! API, a custom CRD) without a schema change, and survives status rewrites by other
//! controllers; sub-resource finalizers live inside the record rather than in
//! `metadata.finalizers` because the machine's own instance finalizer already blocks deletion.

use std::fmt;
use std::num::NonZeroU32;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use provkit_machines::cloud::{
    MachineProgress, PROGRESS_ANNOTATION, ProgressChange, ProgressError, ProgressHandle,
};
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::debug;

/// A [`ProgressHandle`] over one machine object reached through `Api<K>`.
///
/// ```
/// # #[cfg(any())] // needs an API server
/// # async fn demo(client: kube::Client) {
/// use k8s_openapi::api::core::v1::ConfigMap; // any resource type works
/// use provkit_kube::KubeProgressHandle;
/// use provkit_machines::cloud::ProgressHandle;
/// let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, "machines");
/// let handle = KubeProgressHandle::new(api, "worker-0");
/// handle.set_instance_id("i-0abc").await.unwrap();
/// # }
/// ```
pub struct KubeProgressHandle<K> {
    api: Api<K>,
    name: String,
    max_attempts: NonZeroU32,
    field_manager: Option<String>,
}

/// The machine object was read without a `metadata.resourceVersion`, so the progress write
/// would carry no precondition; it is not sent (the source of [`ProgressError::Backend`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the object was read without a resourceVersion; not writing without a precondition")]
pub struct MissingResourceVersion;

impl<K> fmt::Debug for KubeProgressHandle<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeProgressHandle")
            .field("name", &self.name)
            .field("max_attempts", &self.max_attempts)
            .field("field_manager", &self.field_manager)
            .finish_non_exhaustive()
    }
}

impl<K> KubeProgressHandle<K> {
    /// A handle for the object `name` of `api`.
    #[must_use]
    pub fn new(api: Api<K>, name: impl Into<String>) -> Self {
        Self {
            api,
            name: name.into(),
            max_attempts: NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN),
            field_manager: None,
        }
    }

    /// Sends `field_manager` (usually the controller name, as given to
    /// [`Provisioner::with_field_manager`](crate::Provisioner::with_field_manager)) as the
    /// `fieldManager` of every progress write. Without it the API server derives the manager
    /// from the client's User-Agent.
    #[must_use]
    pub fn with_field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = Some(field_manager.into());
        self
    }

    /// Sets how many patch attempts an update makes before [`ProgressError::Conflict`].
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: NonZeroU32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The machine object's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Decodes the record stored on `obj` (an absent annotation is an empty record).
///
/// # Errors
/// [`ProgressError::Corrupt`] when the annotation is not a valid record.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use provkit_kube::progress_of;
/// let mut cm = ConfigMap::default();
/// assert!(progress_of(&cm).unwrap().is_empty());
/// cm.metadata.annotations = Some([(provkit_machines::cloud::PROGRESS_ANNOTATION.to_owned(),
///     r#"{"instanceId":"i-1"}"#.to_owned())].into());
/// assert_eq!(progress_of(&cm).unwrap().instance_id.as_deref(), Some("i-1"));
/// ```
pub fn progress_of<K: Resource>(obj: &K) -> Result<MachineProgress, ProgressError> {
    match obj
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROGRESS_ANNOTATION))
    {
        None => Ok(MachineProgress::default()),
        Some(raw) => serde_json::from_str(raw).map_err(|source| ProgressError::Corrupt {
            machine: obj.meta().name.clone().unwrap_or_default(),
            source,
        }),
    }
}

impl<K> KubeProgressHandle<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn backend(&self, source: kube::Error) -> ProgressError {
        match source {
            kube::Error::Api(s) if s.is_not_found() => ProgressError::Gone {
                machine: self.name.clone(),
            },
            other => ProgressError::Backend {
                machine: self.name.clone(),
                source: Box::new(other),
            },
        }
    }

    async fn read(&self) -> Result<K, ProgressError> {
        self.api.get(&self.name).await.map_err(|e| self.backend(e))
    }
}

#[async_trait::async_trait]
impl<K> ProgressHandle for KubeProgressHandle<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    async fn load(&self) -> Result<MachineProgress, ProgressError> {
        progress_of(&self.read().await?)
    }

    async fn update<'c>(
        &self,
        change: ProgressChange<'c>,
    ) -> Result<MachineProgress, ProgressError> {
        let attempts = self.max_attempts.get();
        let params = PatchParams {
            field_manager: self.field_manager.clone(),
            ..PatchParams::default()
        };
        for attempt in 1..=attempts {
            let obj = self.read().await?;
            let current = progress_of(&obj)?;
            let mut next = current.clone();
            change.apply(&mut next);
            if next == current {
                return Ok(current);
            }
            // An empty record removes the annotation (`null` in a merge patch).
            let encoded = if next.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::to_string(&next)
                    .map(serde_json::Value::String)
                    .map_err(|source| ProgressError::Corrupt {
                        machine: self.name.clone(),
                        source,
                    })?
            };
            // Never write without a precondition (`null` would make the patch unconditional).
            let Some(rv) = obj.meta().resource_version.as_deref() else {
                return Err(ProgressError::Backend {
                    machine: self.name.clone(),
                    source: Box::new(MissingResourceVersion),
                });
            };
            let body = json!({
                "metadata": {
                    "resourceVersion": rv,
                    "annotations": { PROGRESS_ANNOTATION: encoded },
                }
            });
            match self
                .api
                .patch(&self.name, &params, &Patch::Merge(&body))
                .await
            {
                Ok(written) => return progress_of(&written),
                Err(kube::Error::Api(s)) if s.is_conflict() => {
                    debug!(object.name = %self.name, attempt, "progress write conflicted; re-reading");
                }
                Err(e) => return Err(self.backend(e)),
            }
        }
        Err(ProgressError::Conflict {
            machine: self.name.clone(),
            attempts,
        })
    }
}
