//! Instance level: the [`CloudProvider`] port (one cloud instance per machine, identified by the
//! machine UID), its error taxonomy, decorators, and the pure step functions of the machine
//! controller.

mod error;
mod instance;
mod machine_view;
mod provider;
mod steps;
mod validation_cache;
mod visibility_guard;

pub use error::{MachineErrorReason, ProviderError};
pub use instance::{AddressType, Instance, InstanceStatus, NodeAddress};
pub use machine_view::MachineView;
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use provider::MockCloudProvider;
pub use provider::{CleanupProgress, CloudProvider, DefaultedSpec};
pub use steps::{
    AFTER_CREATE_REQUEUE, BOOTSTRAP_SECRET_REQUEUE, CLEANUP_REQUEUE, DELETE_FINALIZER,
    DeletionState, DeletionStep, EnsureState, InstanceStep, NO_ADDRESS_REQUEUE,
    NODE_DELETE_FINALIZER, NODE_JOIN_REQUEUE, after_create_step, deletion_step, next_step,
};
pub use validation_cache::{DEFAULT_VALIDATION_TTL, ValidationCache, spec_digest};
pub use visibility_guard::CreateVisibilityGuard;
