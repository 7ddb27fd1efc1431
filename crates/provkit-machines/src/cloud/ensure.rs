//! The two drivers that call a [`CloudProvider`] with a [`ProgressHandle`] in the order that
//! neither orphans nor duplicates instances: [`ensure_instance`] and [`cleanup_instance`].
//!
//! Hand-written: the write ordering is provkit's exactly-once contract; the decisions are the
//! pure [`pending_create_step`], these functions only sequence the I/O.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use provkit_core::Clock;

use super::error::ProviderError;
use super::instance::Instance;
use super::machine_view::MachineView;
use super::progress::{CreateIntent, DynProgressHandle, MachineProgress, ProgressError};
use super::provider::{CleanupProgress, CloudProvider};
use super::steps::{
    DEFAULT_VISIBILITY_DEADLINE, PendingCreate, PendingCreateStep, VISIBILITY_POLL,
    pending_create_step,
};

/// Settings of [`ensure_instance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnsureConfig {
    /// How long after a recorded intent a not-found `get` means "not visible yet".
    pub visibility_deadline: Duration,
}

impl Default for EnsureConfig {
    fn default() -> Self {
        Self {
            visibility_deadline: DEFAULT_VISIBILITY_DEADLINE,
        }
    }
}

/// The result of [`ensure_instance`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnsureOutcome {
    /// `get` found the instance (its id is recorded).
    Found(Instance),
    /// The instance was created in this call (the intent was recorded first).
    Created(Instance),
    /// A recorded create is not visible yet; call again after `retry_after`.
    NotVisibleYet {
        /// Suggested delay.
        retry_after: Duration,
        /// When waiting ends with [`EnsureError::NotVisibleAfterDeadline`].
        deadline: DateTime<Utc>,
    },
}

/// Errors of [`ensure_instance`] and [`cleanup_instance`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnsureError {
    /// The provider failed (`get`, `create` or `cleanup`).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// Reading or writing the progress record failed.
    #[error(transparent)]
    Progress(#[from] ProgressError),
    /// A recorded create never became visible: no second instance is created. Check the
    /// cloud for an instance tagged with the machine UID, then remove `createIntent` from the
    /// progress record (annotation
    /// [`PROGRESS_ANNOTATION`](super::PROGRESS_ANNOTATION) on Kubernetes) to allow a new create.
    #[error(
        "instance of machine {machine} is still not visible {waited:?} after the create intent recorded at {recorded_at}; refusing to create a second one"
    )]
    NotVisibleAfterDeadline {
        /// The machine UID.
        machine: String,
        /// When the intent was recorded.
        recorded_at: DateTime<Utc>,
        /// Time since.
        waited: Duration,
    },
    /// The provider reported cleanup done with sub-resource finalizers left (a provider bug:
    /// those sub-resources may be orphaned).
    #[error("cleanup of machine {machine} reported done but finalizers {finalizers:?} are left")]
    LeftoverFinalizers {
        /// The machine UID.
        machine: String,
        /// The finalizers left.
        finalizers: Vec<String>,
    },
}

impl EnsureError {
    /// Whether retrying without a change will not help (a terminal provider error, or a create
    /// that stayed invisible past its deadline).
    ///
    /// ```
    /// use provkit_machines::cloud::{EnsureError, ProviderError};
    /// assert!(!EnsureError::from(ProviderError::transient("503")).is_terminal());
    /// ```
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Provider(e) => e.is_terminal(),
            Self::NotVisibleAfterDeadline { .. } | Self::LeftoverFinalizers { .. } => true,
            Self::Progress(_) => false,
        }
    }
}

fn age(clock: &dyn Clock, since: DateTime<Utc>) -> Duration {
    clock
        .now()
        .signed_duration_since(since)
        .to_std()
        .unwrap_or(Duration::ZERO)
}

/// Finds or creates the one instance of `machine`, persisting progress through `progress` so a
/// crash at any point neither duplicates nor orphans it:
///
/// 1. `get` (by UID); found → record its id, [`EnsureOutcome::Found`];
/// 2. not found and no intent recorded → record a [`CreateIntent`] (durably), then `create`
///    with it, then record the instance id → [`EnsureOutcome::Created`];
/// 3. not found with an intent recorded ([`pending_create_step`]): re-issue the create with the
///    same intent if the provider deduplicates by its token; else, until
///    `config.visibility_deadline` after the intent, [`EnsureOutcome::NotVisibleYet`]; after
///    it, [`EnsureError::NotVisibleAfterDeadline`]. Never a second create.
///
/// A `create` error keeps the intent (the instance may exist although create failed, PR #811).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_core::SystemClock;
/// use provkit_machines::cloud::{ensure_instance, EnsureConfig, EnsureOutcome, MachineView, ProgressHandle};
/// use provkit_testing::machines::{FakeCloudProvider, InMemoryProgress};
///
/// let cloud = FakeCloudProvider::default();
/// let progress = InMemoryProgress::default();
/// let m = MachineView::new("uid-1", "worker-1", serde_json::json!({}));
/// let first = ensure_instance(&cloud, &m, "#cloud-config", &progress, &SystemClock, EnsureConfig::default()).await.unwrap();
/// assert!(matches!(first, EnsureOutcome::Created(_)));
/// let again = ensure_instance(&cloud, &m, "#cloud-config", &progress, &SystemClock, EnsureConfig::default()).await.unwrap();
/// assert!(matches!(again, EnsureOutcome::Found(_)));
/// assert_eq!(cloud.create_calls(), 1);
/// assert!(progress.load().await.unwrap().instance_id.is_some());
/// # });
/// ```
///
/// # Errors
/// [`EnsureError`]: provider and progress failures, and the visibility deadline.
pub async fn ensure_instance(
    provider: &dyn CloudProvider,
    machine: &MachineView,
    user_data: &str,
    progress: &DynProgressHandle,
    clock: &dyn Clock,
    config: EnsureConfig,
) -> Result<EnsureOutcome, EnsureError> {
    let recorded = progress.load().await?;
    match provider.get(machine).await {
        Ok(instance) => {
            record_id(progress, &recorded, &instance).await?;
            return Ok(EnsureOutcome::Found(instance));
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let pending = recorded.create_intent.as_ref().map(|i| PendingCreate {
        age: age(clock, i.recorded_at),
        deadline: config.visibility_deadline,
        idempotent_create: provider.idempotent_create(),
    });
    let intent = match (pending_create_step(pending), recorded.create_intent) {
        (PendingCreateStep::CreateNew, _) | (_, None) => {
            let fresh = CreateIntent::new(&machine.uid, clock.now());
            let stored = progress
                .update(&|p: &mut MachineProgress| {
                    p.create_intent.get_or_insert_with(|| fresh.clone());
                })
                .await?;
            // A concurrent writer's intent wins; it was recorded first.
            stored.create_intent.unwrap_or(fresh)
        }
        (PendingCreateStep::Reissue, Some(intent)) => intent,
        (PendingCreateStep::WaitForVisibility { retry_after }, Some(intent)) => {
            let deadline = TimeDelta::from_std(config.visibility_deadline)
                .ok()
                .and_then(|d| intent.recorded_at.checked_add_signed(d))
                .unwrap_or(DateTime::<Utc>::MAX_UTC);
            return Ok(EnsureOutcome::NotVisibleYet {
                retry_after,
                deadline,
            });
        }
        (PendingCreateStep::GiveUp { waited }, Some(intent)) => {
            return Err(EnsureError::NotVisibleAfterDeadline {
                machine: machine.uid.clone(),
                recorded_at: intent.recorded_at,
                waited,
            });
        }
    };
    let instance = provider
        .create(machine, &intent, user_data, progress)
        .await?;
    progress.set_instance_id(&instance.id).await?;
    Ok(EnsureOutcome::Created(instance))
}

async fn record_id(
    progress: &DynProgressHandle,
    recorded: &MachineProgress,
    instance: &Instance,
) -> Result<(), ProgressError> {
    if recorded.instance_id.as_deref() != Some(instance.id.as_str()) {
        progress.set_instance_id(&instance.id).await?;
    }
    Ok(())
}

/// Runs [`CloudProvider::cleanup`] with `progress`; when it is done, checks that no
/// sub-resource finalizer is left and clears the record (intent and instance id), so the
/// machine's instance finalizer can go.
///
/// A recorded create whose instance was never seen (no instance id) may still appear: until
/// `config.visibility_deadline` after the intent, a `Done` from the provider is reported as
/// [`CleanupProgress::InProgress`], so a late-appearing instance is not orphaned.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_core::SystemClock;
/// use provkit_machines::cloud::{cleanup_instance, ensure_instance, CleanupProgress, EnsureConfig, MachineView, ProgressHandle};
/// use provkit_testing::machines::{FakeCloudProvider, InMemoryProgress};
///
/// let cloud = FakeCloudProvider::default();
/// let progress = InMemoryProgress::default();
/// let m = MachineView::new("uid-1", "worker-1", serde_json::json!({}));
/// let config = EnsureConfig::default();
/// ensure_instance(&cloud, &m, "", &progress, &SystemClock, config).await.unwrap();
/// while cleanup_instance(&cloud, &m, &progress, &SystemClock, config).await.unwrap() != CleanupProgress::Done {}
/// assert!(progress.load().await.unwrap().is_empty());
/// assert_eq!(cloud.live_instances("uid-1"), 0);
/// # });
/// ```
///
/// # Errors
/// Provider and progress failures; [`EnsureError::LeftoverFinalizers`] when the provider
/// reported done too early.
pub async fn cleanup_instance(
    provider: &dyn CloudProvider,
    machine: &MachineView,
    progress: &DynProgressHandle,
    clock: &dyn Clock,
    config: EnsureConfig,
) -> Result<CleanupProgress, EnsureError> {
    let result = provider.cleanup(machine, progress).await?;
    if result == CleanupProgress::Done {
        let stored = progress.load().await?;
        if let (Some(intent), None) = (&stored.create_intent, &stored.instance_id)
            && age(clock, intent.recorded_at) < config.visibility_deadline
        {
            return Ok(CleanupProgress::InProgress {
                retry_after: Some(VISIBILITY_POLL),
            });
        }
        if !stored.finalizers.is_empty() {
            return Err(EnsureError::LeftoverFinalizers {
                machine: machine.uid.clone(),
                finalizers: stored.finalizers.into_iter().collect(),
            });
        }
        if !stored.is_empty() {
            progress
                .update(&|p: &mut MachineProgress| {
                    p.create_intent = None;
                    p.instance_id = None;
                })
                .await?;
        }
    }
    Ok(result)
}
