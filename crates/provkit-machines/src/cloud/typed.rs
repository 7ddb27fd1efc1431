//! [`TypedCloudProvider`]: a cloud provider with a typed spec, and [`Typed`], the adapter to
//! the untyped, dyn-compatible [`CloudProvider`].
//!
//! Hand-written: a thin adapter; decoding and encoding are serde's.

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{MachineErrorReason, ProviderError};
use super::instance::Instance;
use super::machine_view::MachineView;
use super::progress::{CreateIntent, DynProgressHandle};
use super::provider::{CleanupProgress, CloudProvider, DefaultedSpec};

/// A [`CloudProvider`] whose provider spec is a Rust type: the adapter [`Typed`] decodes
/// `machine.provider_spec` once per call, so provider code never re-parses JSON. The contract
/// of every method is the one of the same-named [`CloudProvider`] method.
///
/// `cleanup` and `migrate_uid` get `None` when the spec does not decode: deletion must never
/// be blocked by an invalid spec (Kubermatic #131, #2017).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::collections::BTreeMap;
/// use provkit_machines::cloud::*;
///
/// #[derive(Debug, serde::Deserialize, serde::Serialize)]
/// struct Spec { size: String, #[serde(default)] zone: Option<String> }
///
/// #[derive(Debug)]
/// struct MyCloud;
///
/// #[async_trait::async_trait]
/// impl TypedCloudProvider for MyCloud {
///     type Spec = Spec;
///     fn add_defaults(&self, mut spec: Spec) -> Result<Spec, ProviderError> {
///         spec.zone.get_or_insert_with(|| "a".into());
///         Ok(spec)
///     }
///     async fn validate(&self, spec: &Spec) -> Result<(), ProviderError> {
///         if spec.size.is_empty() {
///             return Err(ProviderError::terminal(MachineErrorReason::InvalidConfiguration, "size"));
///         }
///         Ok(())
///     }
///     async fn get(&self, _: &MachineView, _: &Spec) -> Result<Instance, ProviderError> {
///         Err(ProviderError::NotFound)
///     }
///     async fn create(&self, m: &MachineView, spec: &Spec, _: &CreateIntent, _: &str, _: &DynProgressHandle) -> Result<Instance, ProviderError> {
///         Ok(Instance::new(m.name.clone(), spec.size.clone(), InstanceStatus::Creating))
///     }
///     async fn cleanup(&self, _: &MachineView, _: Option<Spec>, _: &DynProgressHandle) -> Result<CleanupProgress, ProviderError> {
///         Ok(CleanupProgress::Done)
///     }
///     async fn migrate_uid(&self, _: &MachineView, _: Option<Spec>, _: &str) -> Result<(), ProviderError> { Ok(()) }
///     fn metrics_labels(&self, _: &MachineView, spec: &Spec) -> Result<BTreeMap<String, String>, ProviderError> {
///         Ok(BTreeMap::from([("size".into(), spec.size.clone())]))
///     }
/// }
///
/// let p: &dyn CloudProvider = &Typed::new(MyCloud);
/// let defaulted = p.add_defaults(serde_json::json!({"size": "m"})).unwrap().into_inner();
/// assert_eq!(defaulted["zone"], "a");
/// let bad = p.validate(&serde_json::json!({"size": 3})).await.unwrap_err();
/// assert_eq!(bad.terminal_reason(), Some(&MachineErrorReason::InvalidConfiguration));
/// # });
/// ```
#[cfg_attr(feature = "mock", mockall::automock(type Spec = serde_json::Value;))]
#[async_trait::async_trait]
pub trait TypedCloudProvider: Send + Sync + Debug {
    /// The provider spec.
    type Spec: DeserializeOwned + Serialize + Send + Sync + Debug;

    /// Applies defaults.
    fn add_defaults(&self, spec: Self::Spec) -> Result<Self::Spec, ProviderError>;

    /// Validates a spec.
    async fn validate(&self, spec: &Self::Spec) -> Result<(), ProviderError>;

    /// The instance of `machine`.
    async fn get(
        &self,
        machine: &MachineView,
        spec: &Self::Spec,
    ) -> Result<Instance, ProviderError>;

    /// Creates the instance (see [`CloudProvider::create`]).
    async fn create(
        &self,
        machine: &MachineView,
        spec: &Self::Spec,
        intent: &CreateIntent,
        user_data: &str,
        progress: &DynProgressHandle,
    ) -> Result<Instance, ProviderError>;

    /// Tears down the instance; `spec` is `None` when the machine's spec does not decode.
    async fn cleanup(
        &self,
        machine: &MachineView,
        spec: Option<Self::Spec>,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError>;

    /// Re-tags resources to `new_uid`; `spec` is `None` when it does not decode.
    async fn migrate_uid(
        &self,
        machine: &MachineView,
        spec: Option<Self::Spec>,
        new_uid: &str,
    ) -> Result<(), ProviderError>;

    /// Metrics labels (no I/O).
    fn metrics_labels(
        &self,
        machine: &MachineView,
        spec: &Self::Spec,
    ) -> Result<BTreeMap<String, String>, ProviderError>;

    /// See [`CloudProvider::idempotent_create`].
    fn idempotent_create(&self) -> bool {
        false
    }
}

/// Adapts a [`TypedCloudProvider`] to the untyped [`CloudProvider`] (usable as
/// `&dyn CloudProvider`, under the decorators). A spec that does not decode is a terminal
/// [`MachineErrorReason::InvalidConfiguration`] error, except for `cleanup` / `migrate_uid`,
/// which get `None`.
///
/// ```
/// use provkit_machines::cloud::Typed;
/// let t = Typed::new(5_u8);
/// assert_eq!(*t.inner(), 5);
/// ```
#[derive(Debug)]
pub struct Typed<P>(P);

impl<P> Typed<P> {
    /// Wraps a typed provider.
    ///
    /// ```
    /// assert_eq!(provkit_machines::cloud::Typed::new("p").into_inner(), "p");
    /// ```
    #[must_use]
    pub fn new(inner: P) -> Self {
        Self(inner)
    }

    /// The typed provider.
    ///
    /// ```
    /// assert_eq!(*provkit_machines::cloud::Typed::new(1).inner(), 1);
    /// ```
    pub fn inner(&self) -> &P {
        &self.0
    }

    /// Unwraps the typed provider.
    ///
    /// ```
    /// assert_eq!(provkit_machines::cloud::Typed::new(2).into_inner(), 2);
    /// ```
    pub fn into_inner(self) -> P {
        self.0
    }
}

/// Decodes a provider spec into `S` (a terminal `InvalidConfiguration` error when it does not).
///
/// ```
/// use provkit_machines::cloud::decode_spec;
/// let n: u32 = decode_spec(&serde_json::json!(3)).unwrap();
/// assert_eq!(n, 3);
/// assert!(decode_spec::<u32>(&serde_json::json!("x")).unwrap_err().is_terminal());
/// ```
///
/// # Errors
/// A terminal [`ProviderError`] naming the decode failure.
pub fn decode_spec<S: DeserializeOwned>(spec: &serde_json::Value) -> Result<S, ProviderError> {
    S::deserialize(spec).map_err(|e| {
        ProviderError::terminal(
            MachineErrorReason::InvalidConfiguration,
            format!(
                "provider spec is not a valid {}: {e}",
                std::any::type_name::<S>()
            ),
        )
    })
}

#[async_trait::async_trait]
impl<P: TypedCloudProvider> CloudProvider for Typed<P> {
    fn add_defaults(&self, spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError> {
        let typed = self.0.add_defaults(decode_spec(&spec)?)?;
        let value = serde_json::to_value(typed).map_err(|e| {
            ProviderError::terminal(
                MachineErrorReason::InvalidConfiguration,
                format!("defaulted provider spec does not encode: {e}"),
            )
        })?;
        Ok(DefaultedSpec::new(value))
    }

    async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
        self.0.validate(&decode_spec(spec)?).await
    }

    async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError> {
        let spec: P::Spec = decode_spec(&machine.provider_spec)?;
        self.0.get(machine, &spec).await
    }

    async fn create(
        &self,
        machine: &MachineView,
        intent: &CreateIntent,
        user_data: &str,
        progress: &DynProgressHandle,
    ) -> Result<Instance, ProviderError> {
        let spec: P::Spec = decode_spec(&machine.provider_spec)?;
        self.0
            .create(machine, &spec, intent, user_data, progress)
            .await
    }

    async fn cleanup(
        &self,
        machine: &MachineView,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError> {
        let spec: Option<P::Spec> = decode_spec(&machine.provider_spec).ok();
        self.0.cleanup(machine, spec, progress).await
    }

    async fn migrate_uid(&self, machine: &MachineView, new_uid: &str) -> Result<(), ProviderError> {
        let spec: Option<P::Spec> = decode_spec(&machine.provider_spec).ok();
        self.0.migrate_uid(machine, spec, new_uid).await
    }

    fn metrics_labels(
        &self,
        machine: &MachineView,
    ) -> Result<BTreeMap<String, String>, ProviderError> {
        let spec: P::Spec = decode_spec(&machine.provider_spec)?;
        self.0.metrics_labels(machine, &spec)
    }

    fn idempotent_create(&self) -> bool {
        self.0.idempotent_create()
    }
}
