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

/// The mockall mocks of provkit's provider traits, in one place (feature `mock`).
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub mod mocks {
    pub use provkit_lifecycle::MockProvisioningProvider;
    #[cfg(feature = "machines")]
    pub use provkit_machines::cloud::MockCloudProvider;
    #[cfg(feature = "machines")]
    pub use provkit_machines::set::MockMachineSetProvider;
}
