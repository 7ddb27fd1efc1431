//! In-memory machine providers, [`MachineInfo`](provkit_machines::MachineInfo) builders and the
//! conformance suites of `provkit-machines`' two traits.
//!
//! - [`InMemoryMachineSetProvider`]: a `MachineSetProvider` over a vector of machines, with a
//!   call log and a scripted stale-snapshot mode (reproduces the duplicate-replacement bug the
//!   executor's uncached re-check exists for).
//! - [`MachineInfoBuilder`] with the upstream archetypes (updated, pending, outdated,
//!   outdated-not-ready, deleting).
//! - [`FakeCloudProvider`]: a `CloudProvider` keyed by machine UID with knobs for validation,
//!   error injection, eventual consistency, asynchronous deletion and address delays.
//! - [`InMemoryProgress`]: a `ProgressHandle` in memory (clones share the record).
//! - [`CrashSwitch`], [`CrashingCloud`], [`CrashingProgress`]: crash injection for
//!   exactly-once tests (drop the reconcile at any await point of the cloud or the handle).
//! - [`conformance`]: `pub async fn`s taking `&dyn Trait`, run by the fakes, every decorator
//!   and downstream implementations.

mod builders;
pub mod conformance;
mod crash;
mod fake_cloud;
mod in_memory_set;
mod progress;

pub use builders::{MachineInfoBuilder, machine_gvr, node_gvr};
pub use crash::{CrashSwitch, CrashingCloud, CrashingProgress};
pub use fake_cloud::{FakeCloudConfig, FakeCloudProvider, Method};
pub use in_memory_set::{Call, InMemoryMachineSetProvider};
pub use progress::InMemoryProgress;
/// The mockall mocks of both traits (features `machines` + `mock`).
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use provkit_machines::{
    cloud::{MockCloudProvider, MockTypedCloudProvider},
    set::MockMachineSetProvider,
};
