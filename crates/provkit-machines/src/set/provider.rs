//! The [`MachineSetProvider`] port.

use std::collections::BTreeSet;
use std::fmt::Debug;

use provkit_core::k8s::{MachineInfo, ObjectRef};

use super::error::MachineSetError;

/// Which indexes a provider can create machines for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreatableIndexes {
    /// Any index (no failure-domain mapping: every index uses the template unchanged).
    Any,
    /// Only these indexes (the keys of the failure-domain mapping).
    Only(BTreeSet<i32>),
}

impl CreatableIndexes {
    /// Whether `index` can be created.
    ///
    /// ```
    /// use std::collections::BTreeSet;
    /// use provkit_machines::set::CreatableIndexes;
    /// assert!(CreatableIndexes::Any.contains(7));
    /// assert!(!CreatableIndexes::Only(BTreeSet::from([0, 1])).contains(2));
    /// ```
    #[must_use]
    pub fn contains(&self, index: i32) -> bool {
        match self {
            Self::Any => true,
            Self::Only(s) => s.contains(&index),
        }
    }
}

/// A set-level machine provider: reports the machines of a replicated set (grouped by replica
/// index), creates one at an index, deletes one.
///
/// Contract:
/// - [`machine_infos`](Self::machine_infos) reads the provider's snapshot (taken when the
///   provider was built or refreshed); any per-machine failure fails the whole call.
/// - [`refresh`](Self::refresh) does not change the receiver; it returns a new provider over a
///   fresh, **uncached** snapshot (and a recomputed failure-domain mapping). The provider owns
///   its fresh-read capability (e.g. an uncached `kube::Client`), so the trait stays
///   dyn-compatible and free of kube types.
/// - [`create_machine`](Self::create_machine) creates exactly one new machine whose name ends in
///   `-<index>`; it is not idempotent (duplicate prevention is the caller's job, see
///   [`execute_plan`](super::execute_plan)) and does not update the snapshot.
/// - [`delete_machine`](Self::delete_machine) is idempotent: a missing machine is success; a
///   reference whose GVR is not the provider's machine GVR is rejected
///   ([`MachineSetError::WrongGvr`]) and nothing is deleted.
/// - [`creatable_indexes`](Self::creatable_indexes) tells planners which indexes may be asked for.
///
/// ```
/// # #[cfg(feature = "mock")]
/// # {
/// use provkit_machines::set::{CreatableIndexes, MachineSetProvider, MockMachineSetProvider};
/// let mut mock = MockMachineSetProvider::new();
/// mock.expect_creatable_indexes().return_const(CreatableIndexes::Any);
/// let provider: &dyn MachineSetProvider = &mock;
/// assert_eq!(provider.creatable_indexes(), CreatableIndexes::Any);
/// # }
/// ```
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait MachineSetProvider: Send + Sync + Debug {
    /// The machines of the set as of this provider's snapshot.
    async fn machine_infos(&self) -> Result<Vec<MachineInfo>, MachineSetError>;

    /// A new provider over a fresh, uncached snapshot.
    async fn refresh(&self) -> Result<Box<dyn MachineSetProvider>, MachineSetError>;

    /// Creates one machine for the replica slot `index`.
    async fn create_machine(&self, index: i32) -> Result<(), MachineSetError>;

    /// Requests deletion of the referenced machine (not found is success).
    async fn delete_machine(&self, machine: &ObjectRef) -> Result<(), MachineSetError>;

    /// The indexes this provider can create machines for.
    fn creatable_indexes(&self) -> CreatableIndexes;
}

macro_rules! forward_machine_set_provider {
    ($ptr:ident) => {
        #[async_trait::async_trait]
        impl<T: MachineSetProvider + ?Sized> MachineSetProvider for $ptr<T> {
            async fn machine_infos(&self) -> Result<Vec<MachineInfo>, MachineSetError> {
                (**self).machine_infos().await
            }
            async fn refresh(&self) -> Result<Box<dyn MachineSetProvider>, MachineSetError> {
                (**self).refresh().await
            }
            async fn create_machine(&self, index: i32) -> Result<(), MachineSetError> {
                (**self).create_machine(index).await
            }
            async fn delete_machine(&self, machine: &ObjectRef) -> Result<(), MachineSetError> {
                (**self).delete_machine(machine).await
            }
            fn creatable_indexes(&self) -> CreatableIndexes {
                (**self).creatable_indexes()
            }
        }
    };
}

use std::sync::Arc;
forward_machine_set_provider!(Box);
forward_machine_set_provider!(Arc);
