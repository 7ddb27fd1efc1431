//! Instance level: the [`CloudProvider`] port (one cloud instance per machine, identified by the
//! machine UID), its error taxonomy, the [`ProgressHandle`] through which providers persist
//! progress on the machine object, the typed-spec adapter, decorators, the drivers
//! ([`ensure_instance`], [`cleanup_instance`]) and the pure step functions of the machine
//! controller.

mod ensure;
mod error;
mod instance;
mod machine_view;
mod progress;
mod provider;
mod steps;
mod typed;
mod validation_cache;
mod visibility_guard;

pub use ensure::{EnsureConfig, EnsureError, EnsureOutcome, cleanup_instance, ensure_instance};
pub use error::{MachineErrorReason, ProviderError};
pub use instance::{AddressType, Instance, InstanceStatus, NodeAddress};
pub use machine_view::MachineView;
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use progress::MockProgressHandle;
pub use progress::{
    ApplyProgress, CreateIntent, DynProgressHandle, MachineProgress, PROGRESS_ANNOTATION,
    ProgressChange, ProgressError, ProgressHandle,
};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use provider::MockCloudProvider;
pub use provider::{CleanupProgress, CloudProvider, DefaultedSpec};
pub use steps::{
    AFTER_CREATE_REQUEUE, BOOTSTRAP_SECRET_REQUEUE, BootstrapData, CLEANUP_REQUEUE,
    DEFAULT_VISIBILITY_DEADLINE, DELETE_FINALIZER, DeletionState, DeletionStep, EnsureState,
    InstanceStep, NO_ADDRESS_REQUEUE, NODE_DELETE_FINALIZER, NODE_JOIN_REQUEUE, PendingCreate,
    PendingCreateStep, VISIBILITY_POLL, after_create_step, deletion_step, next_step,
    pending_create_step,
};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use typed::MockTypedCloudProvider;
pub use typed::{Typed, TypedCloudProvider, decode_spec};
pub use validation_cache::{DEFAULT_VALIDATION_TTL, ValidationCache, spec_digest};
pub use visibility_guard::CreateVisibilityGuard;
