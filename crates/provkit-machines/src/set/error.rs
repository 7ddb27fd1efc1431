//! Errors of the set level.

/// A boxed, thread-safe error used as the source of provider failures.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of a [`MachineSetProvider`](super::MachineSetProvider) and of plan execution.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MachineSetError {
    /// A reference of another kind was passed where a machine reference was expected; nothing
    /// was deleted.
    #[error("{name}: expected a {expected} reference, got {actual}")]
    WrongGvr {
        /// The provider's machine GVR.
        expected: Box<provkit_core::k8s::GroupVersionResource>,
        /// The GVR of the rejected reference.
        actual: Box<provkit_core::k8s::GroupVersionResource>,
        /// The rejected object's name.
        name: String,
    },
    /// The provider cannot create a machine for this index (e.g. the failure-domain mapping
    /// lacks it).
    #[error("cannot create a machine for index {index}: {reason}")]
    IndexNotCreatable {
        /// The requested index.
        index: i32,
        /// Why.
        reason: String,
    },
    /// Reading the machines failed (no partial results).
    #[error("reading machines failed")]
    Read {
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// Re-reading a fresh snapshot failed.
    #[error("refreshing the machine snapshot failed")]
    Refresh {
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// Creating a machine failed.
    #[error("error creating new Machine for index {index}")]
    Create {
        /// The requested index.
        index: i32,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// Deleting a machine failed.
    #[error("error deleting Machine {namespace}/{name}")]
    Delete {
        /// Namespace of the machine (empty when none).
        namespace: String,
        /// Name of the machine.
        name: String,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// The failure-domain mapping could not be computed.
    #[error(transparent)]
    Mapping(#[from] MappingError),
}

/// Errors of the failure-domain mapping and index determination.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MappingError {
    /// Replicas must be at least 1 when failure domains are configured.
    #[error("spec.replicas is unset: replicas is required")]
    ReplicasUnset,
    /// No failure domains were given to a function that needs some.
    #[error("no failure domains configured")]
    NoFailureDomains,
    /// Neither the name nor the failure domain of the machine identify its index.
    #[error("could not determine Machine index from name or failure domain: {machine}")]
    IndexUndeterminable {
        /// The machine's name.
        machine: String,
    },
    /// The base mapping has fewer entries than the machine mapping (a caller error).
    #[error("base mapping has {base} entries but the machines map {machines} indexes")]
    BaseSmallerThanMachines {
        /// Entries in the base mapping.
        base: usize,
        /// Entries in the machine mapping.
        machines: usize,
    },
}
