//! [`ProgressHandle`]: how a [`CloudProvider`](super::CloudProvider) persists its progress on the
//! machine object while it works, so that a crash loses nothing the next reconcile needs.
//!
//! Hand-written: the record is provkit's own contract (no crate models it); the storage lives
//! behind the trait (`provkit-kube` stores it in an annotation, `provkit-testing` in memory).

use std::collections::BTreeSet;
use std::error::Error as StdError;
use std::fmt::Debug;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The annotation under which Kubernetes-backed handles store the [`MachineProgress`] JSON.
pub const PROGRESS_ANNOTATION: &str = "machines.provkit.dev/provider-progress";

/// The record that a create is about to happen, persisted **before** the cloud call.
///
/// While it is recorded, a not-found `get` means "not visible yet", never "create another"
/// (see [`pending_create_step`](super::pending_create_step)). The `token` is the idempotency
/// key a provider passes to clouds that deduplicate creates (AWS `ClientToken`, GCP
/// `requestId`, a deterministic Azure resource name).
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_machines::cloud::CreateIntent;
/// let at = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
/// let intent = CreateIntent::new("6b1c", at);
/// assert_eq!(intent.token, "6b1c-1700000000000");
/// assert_eq!(intent.recorded_at, at);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateIntent {
    /// Idempotency token: `<machine uid>-<recorded_at in ms>` (at most 64 ASCII characters for
    /// a 36-character UID).
    pub token: String,
    /// When the intent was recorded (start of the visibility deadline).
    pub recorded_at: DateTime<Utc>,
}

impl CreateIntent {
    /// An intent for the machine `uid`, recorded at `at`.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_machines::cloud::CreateIntent;
    /// let i = CreateIntent::new("u", Utc.timestamp_opt(0, 5_000_000).unwrap());
    /// assert_eq!(i.token, "u-5");
    /// ```
    #[must_use]
    pub fn new(uid: &str, at: DateTime<Utc>) -> Self {
        Self {
            token: format!("{uid}-{}", at.timestamp_millis()),
            recorded_at: at,
        }
    }
}

/// What a provider recorded on the machine object: the create intent, the instance id once
/// known, and the finalizers of sub-resources (public IP, NIC, disk, …) that exist or may exist.
///
/// Ordering rules that prevent orphans (every provider follows them; the drivers
/// [`ensure_instance`](super::ensure_instance) and [`cleanup_instance`](super::cleanup_instance)
/// do the intent and the instance id):
/// - the create intent is recorded before the cloud create;
/// - a sub-resource finalizer is recorded before the sub-resource is created, and removed only
///   after the sub-resource is verifiably gone;
/// - `cleanup` reports `Done` only when no finalizer is left.
///
/// ```
/// use provkit_machines::cloud::MachineProgress;
/// let p: MachineProgress = serde_json::from_str(r#"{"instanceId":"i-1","finalizers":["nic"]}"#).unwrap();
/// assert_eq!(p.instance_id.as_deref(), Some("i-1"));
/// assert!(p.finalizers.contains("nic"));
/// assert_eq!(serde_json::to_string(&MachineProgress::default()).unwrap(), "{}");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineProgress {
    /// Recorded before the cloud create; cleared when cleanup is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_intent: Option<CreateIntent>,
    /// The provider-native instance id, once a create returned or a `get` found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Sub-resource finalizers (provider-chosen names).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub finalizers: BTreeSet<String>,
}

impl MachineProgress {
    /// Whether nothing is recorded.
    ///
    /// ```
    /// assert!(provkit_machines::cloud::MachineProgress::default().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// Errors of a [`ProgressHandle`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProgressError {
    /// The machine object no longer exists.
    #[error("machine {machine} no longer exists")]
    Gone {
        /// The machine.
        machine: String,
    },
    /// Every attempt to write hit a concurrent change.
    #[error("progress of machine {machine} changed concurrently on {attempts} attempts in a row")]
    Conflict {
        /// The machine.
        machine: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The stored record is not a valid [`MachineProgress`].
    #[error("progress record of machine {machine} is not valid")]
    Corrupt {
        /// The machine.
        machine: String,
        /// The decode error.
        #[source]
        source: serde_json::Error,
    },
    /// The backend (API server, …) failed.
    #[error("could not read or write the progress of machine {machine}")]
    Backend {
        /// The machine.
        machine: String,
        /// The backend error.
        #[source]
        source: Box<dyn StdError + Send + Sync + 'static>,
    },
}

impl From<ProgressError> for super::ProviderError {
    /// A progress failure is transient for the provider: the call is retried.
    fn from(e: ProgressError) -> Self {
        Self::Transient {
            message: "persisting the machine's progress failed".to_owned(),
            source: Some(std::sync::Arc::new(e)),
        }
    }
}

/// The progress handle as [`CloudProvider`](super::CloudProvider) methods take it:
/// `&DynProgressHandle` is `&dyn ProgressHandle` over a `'static` handle type (a named alias
/// so that mockall can mock the methods taking it).
pub type DynProgressHandle = dyn ProgressHandle + 'static;

/// A change to the stored progress, as [`ProgressHandle::update`] takes it: every
/// `Fn(&mut MachineProgress) + Send + Sync` closure is one (a trait of its own rather than a
/// `dyn Fn` so that mockall can mock the handle).
pub trait ApplyProgress: Send + Sync {
    /// Applies the change to `progress`.
    fn apply(&self, progress: &mut MachineProgress);
}

impl<F: Fn(&mut MachineProgress) + Send + Sync> ApplyProgress for F {
    fn apply(&self, progress: &mut MachineProgress) {
        self(progress);
    }
}

/// A change applied to the stored progress (a closure, as a trait object).
pub type ProgressChange<'a> = &'a (dyn ApplyProgress + 'a);

/// Durable storage of one machine's [`MachineProgress`], handed to
/// [`CloudProvider::create`](super::CloudProvider::create) and
/// [`cleanup`](super::CloudProvider::cleanup).
///
/// Contract:
/// - [`load`](Self::load) reads the **persisted** state (never a possibly stale cache: a stale
///   read that misses a recorded intent would create a duplicate);
/// - [`update`](Self::update) applies `change` to the latest persisted state and returns only
///   once the result is durable; concurrent writers never lose each other's changes (retry on
///   conflict); a change that alters nothing writes nothing.
///
/// The provided methods are the writes providers need.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_machines::cloud::ProgressHandle;
/// use provkit_testing::machines::InMemoryProgress;
/// let store = InMemoryProgress::default();
/// let handle: &dyn ProgressHandle = &store;
/// handle.add_finalizer("public-ip").await.unwrap();
/// handle.set_instance_id("i-1").await.unwrap();
/// let p = handle.load().await.unwrap();
/// assert!(p.finalizers.contains("public-ip"));
/// handle.remove_finalizer("public-ip").await.unwrap();
/// assert!(handle.load().await.unwrap().finalizers.is_empty());
/// # });
/// ```
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait ProgressHandle: Send + Sync + Debug {
    /// The persisted progress.
    async fn load(&self) -> Result<MachineProgress, ProgressError>;

    /// Applies `change` to the persisted progress; returns the stored result. (The lifetime is
    /// named, not elided, so that mockall can mock the method.)
    async fn update<'c>(
        &self,
        change: ProgressChange<'c>,
    ) -> Result<MachineProgress, ProgressError>;

    /// Records a sub-resource finalizer (before creating the sub-resource).
    async fn add_finalizer(&self, name: &str) -> Result<MachineProgress, ProgressError> {
        self.update(&|p: &mut MachineProgress| {
            p.finalizers.insert(name.to_owned());
        })
        .await
    }

    /// Removes a sub-resource finalizer (after the sub-resource is gone).
    async fn remove_finalizer(&self, name: &str) -> Result<MachineProgress, ProgressError> {
        self.update(&|p: &mut MachineProgress| {
            p.finalizers.remove(name);
        })
        .await
    }

    /// Records the provider-native instance id.
    async fn set_instance_id(&self, id: &str) -> Result<MachineProgress, ProgressError> {
        self.update(&|p: &mut MachineProgress| p.instance_id = Some(id.to_owned()))
            .await
    }
}
