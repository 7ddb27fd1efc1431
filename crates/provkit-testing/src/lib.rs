//! `provkit-testing`: see the crate README.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod conformance;
pub mod fake_aap;
pub mod observe;
pub mod scripted;

#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub mod fake_apiserver;

#[cfg(feature = "machines")]
#[cfg_attr(docsrs, doc(cfg(feature = "machines")))]
pub mod machines;

#[cfg(feature = "operator")]
#[cfg_attr(docsrs, doc(cfg(feature = "operator")))]
pub mod operator_env;

/// The mockall mocks of provkit's traits, in one place (feature `mock`): the providers, the
/// engine's hooks (stale-cache check, status flush, intent store), the clock, and with
/// `operator` the kube callbacks and management hook, with `machines` the progress handle.
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub mod mocks {
    pub use provkit_core::MockClock;
    #[cfg(feature = "operator")]
    pub use provkit_kube::management::MockManagementHook;
    #[cfg(feature = "operator")]
    pub use provkit_kube::{MockMultiTargetCallbacks, MockProvisioningCallbacks};
    pub use provkit_lifecycle::{
        MockIntentStore, MockProvisioningProvider, MockStaleCacheCheck, MockStatusFlush,
    };
    #[cfg(feature = "machines")]
    pub use provkit_machines::cloud::{MockCloudProvider, MockProgressHandle};
    #[cfg(feature = "machines")]
    pub use provkit_machines::set::MockMachineSetProvider;
}
