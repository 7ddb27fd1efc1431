//! Pure step functions of the machine-controller flow (§B.6): given the machine's state and a
//! provider result, what to do next. No I/O; the controller performs the step.

use std::time::Duration;

use super::error::{MachineErrorReason, ProviderError};
use super::instance::Instance;
use super::provider::CleanupProgress;

/// Finalizer guarding the cloud instance (removed only after cleanup is done).
pub const DELETE_FINALIZER: &str = "machine-delete-finalizer";
/// Finalizer guarding the Node objects (removed only after the instance finalizer is gone).
pub const NODE_DELETE_FINALIZER: &str = "machine-node-delete-finalizer";
/// Requeue while waiting for the bootstrap secret: 3 s.
pub const BOOTSTRAP_SECRET_REQUEUE: Duration = Duration::from_secs(3);
/// Requeue after a successful create "to notice silent failures": 30 s.
pub const AFTER_CREATE_REQUEUE: Duration = Duration::from_secs(30);
/// Requeue while the instance has no addresses yet: 15 s.
pub const NO_ADDRESS_REQUEUE: Duration = Duration::from_secs(15);
/// Requeue while waiting for the node to join: 1 min.
pub const NODE_JOIN_REQUEUE: Duration = Duration::from_secs(60);
/// Requeue while cleanup is in progress: 10 s.
pub const CLEANUP_REQUEUE: Duration = Duration::from_secs(10);

/// How often a not-yet-visible instance is looked up again: 10 s.
pub const VISIBILITY_POLL: Duration = Duration::from_secs(10);
/// Default time after a recorded create intent during which a not-found `get` means "not
/// visible yet": 10 minutes (AWS's own fix waits up to 5 minutes; clouds with eventually
/// consistent tags, like Vultr, need more). After it, a typed error — never a second create.
pub const DEFAULT_VISIBILITY_DEADLINE: Duration = Duration::from_secs(10 * 60);

/// The state of the bootstrap data (user-data secret) of the machine's revision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BootstrapData {
    /// Not there yet (its producer has not written it): wait.
    #[default]
    NotYetAvailable,
    /// Reading it failed (API error, timeout, …): a transient error, retried with backoff —
    /// never a terminal machine failure (OCPBUGS-34158).
    ReadFailed,
    /// Read and ready to use.
    Available,
}

/// A create intent recorded on the machine while `get` does not find the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingCreate {
    /// Time since the intent was recorded.
    pub age: Duration,
    /// How long not-found means "not visible yet" (usually [`DEFAULT_VISIBILITY_DEADLINE`]).
    pub deadline: Duration,
    /// Whether the provider deduplicates creates by the intent token
    /// ([`CloudProvider::idempotent_create`](super::CloudProvider::idempotent_create)).
    pub idempotent_create: bool,
}

/// What to do when `get` says not-found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingCreateStep {
    /// No intent recorded: record one, then create.
    CreateNew,
    /// Re-issue the create with the recorded intent (the cloud deduplicates by its token).
    Reissue,
    /// A create was issued and is not visible yet: look again after `retry_after`.
    WaitForVisibility {
        /// Delay before the next look.
        retry_after: Duration,
    },
    /// The deadline passed: report a typed error; never create a second instance.
    GiveUp {
        /// Time since the intent.
        waited: Duration,
    },
}

/// The decision for a not-found `get`, given the recorded intent (if any). Pure; shared by
/// [`next_step`] and [`ensure_instance`](super::ensure_instance).
///
/// ```
/// use std::time::Duration;
/// use provkit_machines::cloud::{pending_create_step, PendingCreate, PendingCreateStep, VISIBILITY_POLL};
/// assert_eq!(pending_create_step(None), PendingCreateStep::CreateNew);
/// let young = PendingCreate { age: Duration::from_secs(5), deadline: Duration::from_secs(600), idempotent_create: false };
/// assert_eq!(pending_create_step(Some(young)), PendingCreateStep::WaitForVisibility { retry_after: VISIBILITY_POLL });
/// let old = PendingCreate { age: Duration::from_secs(600), ..young };
/// assert_eq!(pending_create_step(Some(old)), PendingCreateStep::GiveUp { waited: Duration::from_secs(600) });
/// assert_eq!(pending_create_step(Some(PendingCreate { idempotent_create: true, ..old })), PendingCreateStep::Reissue);
/// ```
#[must_use]
pub fn pending_create_step(pending: Option<PendingCreate>) -> PendingCreateStep {
    match pending {
        None => PendingCreateStep::CreateNew,
        Some(p) if p.idempotent_create => PendingCreateStep::Reissue,
        Some(p) if p.age < p.deadline => PendingCreateStep::WaitForVisibility {
            retry_after: VISIBILITY_POLL.min(p.deadline.saturating_sub(p.age)),
        },
        Some(p) => PendingCreateStep::GiveUp { waited: p.age },
    }
}

/// What the controller knows when ensuring the instance of a machine without a (ready) node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnsureState {
    /// The bootstrap data of the right revision.
    pub bootstrap: BootstrapData,
    /// The create intent recorded on the machine, if any (see [`PendingCreate`]).
    pub pending_create: Option<PendingCreate>,
    /// Whether both finalizers are on the machine.
    pub finalizers_present: bool,
    /// Whether a Node matching the instance was found.
    pub node_found: bool,
    /// Whether the join timeout has elapsed since creation.
    pub join_timeout_elapsed: bool,
    /// Whether a MachineSet owns the machine (and would replace it).
    pub owned_by_machine_set: bool,
}

/// The next step when ensuring an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstanceStep {
    /// Requeue after the delay, without error.
    Requeue {
        /// The delay.
        after: Duration,
        /// Why.
        reason: &'static str,
    },
    /// Add both finalizers (before creating, so a failed create is still cleaned up).
    AddFinalizers,
    /// Create the instance.
    Create,
    /// Write `status.errorReason` / `errorMessage` and return an error (retried with backoff).
    SetError {
        /// The stage reason (`CreateError`).
        reason: MachineErrorReason,
        /// The message, including the provider's own reason text.
        message: String,
    },
    /// Return the error for a rate-limited retry (transient).
    RetryWithBackoff {
        /// The error text.
        message: String,
    },
    /// A recorded create is still not visible after its deadline: write a `CreateError`
    /// status and stop. Never create a second instance; an operator checks the cloud and
    /// clears the intent.
    CreateNotVisible {
        /// Time since the intent was recorded.
        waited: Duration,
    },
    /// Write the instance's addresses (and provider ID) to the machine and adopt the node.
    AdoptNode,
    /// Delete the machine: its node never joined and its MachineSet will replace it.
    DeleteMachine,
}

fn error_step(stage: MachineErrorReason, err: &ProviderError) -> InstanceStep {
    if err.is_terminal() {
        InstanceStep::SetError {
            reason: stage,
            message: err.to_string(),
        }
    } else {
        InstanceStep::RetryWithBackoff {
            message: err.to_string(),
        }
    }
}

/// The next step given the state and the result of `get`.
///
/// - not found: wait for the bootstrap data (3 s; a read failure is retried with backoff,
///   never terminal), else add finalizers first, else — by [`pending_create_step`] — create,
///   re-issue the recorded create, wait for visibility, or give up
///   ([`InstanceStep::CreateNotVisible`]);
/// - terminal error: `CreateError` status + error; other errors: retry with backoff;
/// - found: ensure finalizers; no addresses → requeue 15 s; node found → adopt it; node not
///   found and join timeout elapsed for a MachineSet-owned machine → delete the machine; else
///   requeue 1 min.
///
/// ```
/// use provkit_machines::cloud::{next_step, EnsureState, InstanceStep, ProviderError};
/// use provkit_machines::cloud::BootstrapData;
/// let state = EnsureState { bootstrap: BootstrapData::Available, ..EnsureState::default() };
/// assert_eq!(next_step(&state, &Err(ProviderError::NotFound)), InstanceStep::AddFinalizers);
/// let state = EnsureState { finalizers_present: true, ..state };
/// assert_eq!(next_step(&state, &Err(ProviderError::NotFound)), InstanceStep::Create);
/// ```
#[must_use]
pub fn next_step(state: &EnsureState, get: &Result<Instance, ProviderError>) -> InstanceStep {
    match get {
        Err(e) if e.is_not_found() => match state.bootstrap {
            BootstrapData::NotYetAvailable => InstanceStep::Requeue {
                after: BOOTSTRAP_SECRET_REQUEUE,
                reason: "waiting for the bootstrap secret",
            },
            BootstrapData::ReadFailed => InstanceStep::RetryWithBackoff {
                message: "reading the bootstrap data failed (transient)".to_owned(),
            },
            BootstrapData::Available if !state.finalizers_present => InstanceStep::AddFinalizers,
            BootstrapData::Available => match pending_create_step(state.pending_create) {
                PendingCreateStep::CreateNew | PendingCreateStep::Reissue => InstanceStep::Create,
                PendingCreateStep::WaitForVisibility { retry_after } => InstanceStep::Requeue {
                    after: retry_after,
                    reason: "waiting for the created instance to become visible",
                },
                PendingCreateStep::GiveUp { waited } => InstanceStep::CreateNotVisible { waited },
            },
        },
        Err(e) => error_step(MachineErrorReason::CreateError, e),
        Ok(instance) => {
            if !state.finalizers_present {
                InstanceStep::AddFinalizers
            } else if instance.addresses.is_empty() {
                InstanceStep::Requeue {
                    after: NO_ADDRESS_REQUEUE,
                    reason: "instance has no addresses yet",
                }
            } else if state.node_found {
                InstanceStep::AdoptNode
            } else if state.join_timeout_elapsed && state.owned_by_machine_set {
                InstanceStep::DeleteMachine
            } else {
                InstanceStep::Requeue {
                    after: NODE_JOIN_REQUEUE,
                    reason: "waiting for the node to join",
                }
            }
        }
    }
}

/// The step after `create` returned.
///
/// ```
/// use provkit_machines::cloud::{after_create_step, InstanceStep, ProviderError, AFTER_CREATE_REQUEUE};
/// use provkit_machines::cloud::{Instance, InstanceStatus};
/// let ok = Ok(Instance::new("n", "i", InstanceStatus::Creating));
/// assert_eq!(after_create_step(&ok), InstanceStep::Requeue { after: AFTER_CREATE_REQUEUE, reason: "created; watching for silent failures" });
/// assert!(matches!(after_create_step(&Err(ProviderError::transient("x"))), InstanceStep::RetryWithBackoff { .. }));
/// ```
#[must_use]
pub fn after_create_step(result: &Result<Instance, ProviderError>) -> InstanceStep {
    match result {
        Ok(_) => InstanceStep::Requeue {
            after: AFTER_CREATE_REQUEUE,
            reason: "created; watching for silent failures",
        },
        Err(e) => error_step(MachineErrorReason::CreateError, e),
    }
}

/// The finalizers of a machine being deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletionState {
    /// [`DELETE_FINALIZER`] present.
    pub instance_finalizer: bool,
    /// [`NODE_DELETE_FINALIZER`] present.
    pub node_finalizer: bool,
    /// The provider is `external`: an admin removes the instance finalizer.
    pub external_provider: bool,
}

/// The next deletion step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletionStep {
    /// Call `cleanup` (its result is the `cleanup` argument of the next call).
    RunCleanup,
    /// Requeue after the delay.
    Requeue {
        /// The delay.
        after: Duration,
    },
    /// Write `DeleteError` status and return the error.
    SetError {
        /// `DeleteError`.
        reason: MachineErrorReason,
        /// The message, asking the admin to remove the finalizer manually.
        message: String,
    },
    /// Retry with backoff (transient cleanup error).
    RetryWithBackoff {
        /// The error text.
        message: String,
    },
    /// Remove [`DELETE_FINALIZER`] (cleanup is done).
    RemoveInstanceFinalizer,
    /// Cleanup is done but the provider is external: leave the finalizer to an admin.
    WaitForAdmin,
    /// Delete the Node objects, then remove [`NODE_DELETE_FINALIZER`].
    DeleteNodesAndRemoveNodeFinalizer,
    /// Nothing left to do.
    Done,
}

/// The deletion step: the instance finalizer is removed only after `cleanup` reported
/// [`CleanupProgress::Done`], and the node finalizer only after the instance finalizer is gone.
///
/// `cleanup` is `None` when cleanup has not been called in this reconcile.
///
/// ```
/// use provkit_machines::cloud::{deletion_step, CleanupProgress, DeletionState, DeletionStep};
/// let both = DeletionState { instance_finalizer: true, node_finalizer: true, external_provider: false };
/// assert_eq!(deletion_step(&both, None), DeletionStep::RunCleanup);
/// assert_eq!(deletion_step(&both, Some(&Ok(CleanupProgress::Done))), DeletionStep::RemoveInstanceFinalizer);
/// let node_only = DeletionState { instance_finalizer: false, ..both };
/// assert_eq!(deletion_step(&node_only, None), DeletionStep::DeleteNodesAndRemoveNodeFinalizer);
/// ```
#[must_use]
pub fn deletion_step(
    state: &DeletionState,
    cleanup: Option<&Result<CleanupProgress, ProviderError>>,
) -> DeletionStep {
    if state.instance_finalizer {
        return match cleanup {
            None => DeletionStep::RunCleanup,
            Some(Ok(CleanupProgress::Done)) if state.external_provider => {
                DeletionStep::WaitForAdmin
            }
            Some(Ok(CleanupProgress::Done)) => DeletionStep::RemoveInstanceFinalizer,
            Some(Ok(CleanupProgress::InProgress { retry_after })) => DeletionStep::Requeue {
                after: retry_after.unwrap_or(CLEANUP_REQUEUE),
            },
            Some(Err(e)) if e.is_terminal() => DeletionStep::SetError {
                reason: MachineErrorReason::DeleteError,
                message: format!(
                    "{e}. Please manually delete {DELETE_FINALIZER} finalizer from the machine object."
                ),
            },
            Some(Err(e)) => DeletionStep::RetryWithBackoff {
                message: e.to_string(),
            },
        };
    }
    if state.node_finalizer {
        DeletionStep::DeleteNodesAndRemoveNodeFinalizer
    } else {
        DeletionStep::Done
    }
}
