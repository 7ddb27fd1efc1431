//! The [`CloudProvider`] port.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use super::error::ProviderError;
use super::instance::Instance;
use super::machine_view::MachineView;
use super::progress::{CreateIntent, DynProgressHandle};

/// A provider spec with defaults applied. It is `#[must_use]`: dropping it (the upstream bug
/// that silently discarded defaults for years) is a compiler warning.
///
/// ```
/// use provkit_machines::cloud::DefaultedSpec;
/// let d = DefaultedSpec::new(serde_json::json!({"a": 1}));
/// assert_eq!(d.into_inner()["a"], 1);
/// ```
///
/// Discarding the defaulted spec does not compile under `deny(unused_must_use)`:
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// use provkit_machines::cloud::{CloudProvider, ProviderError};
/// fn admit(p: &dyn CloudProvider, spec: serde_json::Value) -> Result<(), ProviderError> {
///     p.add_defaults(spec)?; // the upstream bug: defaults silently dropped
///     Ok(())
/// }
/// ```
#[must_use = "the defaulted spec replaces the input spec; dropping it loses the defaults"]
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultedSpec(serde_json::Value);

impl DefaultedSpec {
    /// Wraps a defaulted spec.
    ///
    /// ```
    /// use provkit_machines::cloud::DefaultedSpec;
    /// let _ = DefaultedSpec::new(serde_json::Value::Null);
    /// ```
    pub fn new(spec: serde_json::Value) -> Self {
        Self(spec)
    }

    /// The defaulted spec.
    ///
    /// ```
    /// use provkit_machines::cloud::DefaultedSpec;
    /// assert!(DefaultedSpec::new(serde_json::Value::Null).into_inner().is_null());
    /// ```
    #[must_use]
    pub fn into_inner(self) -> serde_json::Value {
        self.0
    }
}

/// Progress of [`CloudProvider::cleanup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CleanupProgress {
    /// Everything is verifiably gone (also when nothing was ever created).
    Done,
    /// Deletion was issued; call again (after `retry_after`, if given).
    InProgress {
        /// Suggested delay before the next call.
        retry_after: Option<Duration>,
    },
}

/// An instance-level cloud provider: finds, creates and cleans up the one cloud instance that
/// belongs to a machine. Identity is the machine **UID** (a tag on the instance), not its name.
///
/// Contract:
/// - [`add_defaults`](Self::add_defaults): pure transform; the result must be used.
/// - [`validate`](Self::validate): checks a spec against the cloud; should return terminal
///   errors for invalid specs.
/// - [`get`](Self::get): the instance of this machine; [`ProviderError::NotFound`] when none
///   exists, and terminated / already gone instances count as none.
/// - [`create`](Self::create): creates one instance with the user data, tagged with the UID.
///   The caller has already recorded `intent` through `progress` (use
///   [`ensure_instance`](super::ensure_instance), which does); the provider records every
///   sub-resource finalizer through `progress` **before** creating the sub-resource. A cloud
///   that deduplicates creates gets `intent.token` as its idempotency key, and the provider
///   says so with [`idempotent_create`](Self::idempotent_create). Post-condition: a
///   subsequent `get` sees the instance ([`CreateVisibilityGuard`](super::CreateVisibilityGuard)
///   enforces this; when it cannot, the recorded intent stops a second create).
/// - [`cleanup`](Self::cleanup): idempotent, repeatable teardown; removes each sub-resource
///   finalizer through `progress` after that sub-resource is gone; `Done` only when everything
///   is gone (no finalizer left), also when nothing was ever created.
/// - [`migrate_uid`](Self::migrate_uid): re-tag resources to a new UID; no instance → `Ok`.
/// - [`metrics_labels`](Self::metrics_labels): synchronous, no I/O; should include `size`.
/// - [`idempotent_create`](Self::idempotent_create): `true` only if a second `create` with the
///   same `intent.token` never makes a second instance (default `false`).
///
/// Providers that want a typed spec implement [`TypedCloudProvider`](super::TypedCloudProvider)
/// and wrap it in [`Typed`](super::Typed), which implements this trait.
///
/// ```
/// # #[cfg(feature = "mock")]
/// # {
/// use provkit_machines::cloud::{CloudProvider, MockCloudProvider, ProviderError};
/// let mut mock = MockCloudProvider::new();
/// mock.expect_add_defaults().returning(|s| Ok(provkit_machines::cloud::DefaultedSpec::new(s)));
/// let p: &dyn CloudProvider = &mock;
/// let spec = p.add_defaults(serde_json::json!({"size": "s"})).unwrap().into_inner();
/// assert_eq!(spec["size"], "s");
/// # }
/// ```
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait CloudProvider: Send + Sync + Debug {
    /// Applies defaults to a provider spec.
    fn add_defaults(&self, spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError>;

    /// Validates a provider spec.
    async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError>;

    /// The instance belonging to `machine` (by UID).
    async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError>;

    /// Creates the instance for `machine` with `user_data`; `intent` is already recorded
    /// through `progress`, which also takes the sub-resource finalizers.
    async fn create(
        &self,
        machine: &MachineView,
        intent: &CreateIntent,
        user_data: &str,
        progress: &DynProgressHandle,
    ) -> Result<Instance, ProviderError>;

    /// Tears down the instance and everything associated with it, removing sub-resource
    /// finalizers through `progress` as it goes.
    async fn cleanup(
        &self,
        machine: &MachineView,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError>;

    /// Re-tags the machine's resources from `machine.uid` to `new_uid`.
    async fn migrate_uid(&self, machine: &MachineView, new_uid: &str) -> Result<(), ProviderError>;

    /// Metrics labels for the machine (no I/O).
    fn metrics_labels(
        &self,
        machine: &MachineView,
    ) -> Result<BTreeMap<String, String>, ProviderError>;

    /// Whether a repeated `create` with the same intent token is deduplicated by the cloud.
    fn idempotent_create(&self) -> bool {
        false
    }
}

macro_rules! forward_cloud_provider {
    ($ptr:ident) => {
        #[async_trait::async_trait]
        impl<T: CloudProvider + ?Sized> CloudProvider for $ptr<T> {
            fn add_defaults(
                &self,
                spec: serde_json::Value,
            ) -> Result<DefaultedSpec, ProviderError> {
                (**self).add_defaults(spec)
            }
            async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
                (**self).validate(spec).await
            }
            async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError> {
                (**self).get(machine).await
            }
            async fn create(
                &self,
                machine: &MachineView,
                intent: &CreateIntent,
                user_data: &str,
                progress: &DynProgressHandle,
            ) -> Result<Instance, ProviderError> {
                (**self).create(machine, intent, user_data, progress).await
            }
            async fn cleanup(
                &self,
                machine: &MachineView,
                progress: &DynProgressHandle,
            ) -> Result<CleanupProgress, ProviderError> {
                (**self).cleanup(machine, progress).await
            }
            async fn migrate_uid(
                &self,
                machine: &MachineView,
                new_uid: &str,
            ) -> Result<(), ProviderError> {
                (**self).migrate_uid(machine, new_uid).await
            }
            fn metrics_labels(
                &self,
                machine: &MachineView,
            ) -> Result<BTreeMap<String, String>, ProviderError> {
                (**self).metrics_labels(machine)
            }
            fn idempotent_create(&self) -> bool {
                (**self).idempotent_create()
            }
        }
    };
}

use std::sync::Arc;
forward_cloud_provider!(Box);
forward_cloud_provider!(Arc);
