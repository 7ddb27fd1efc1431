//! `provkit-kube`: kube-rs integration for the provkit provisioning lifecycle.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod adapters;
pub mod backoff;
pub mod cutover;
pub mod error;
pub mod error_chain;
mod error_policy;
pub mod events;
mod finalized;
pub mod flush;
pub mod leader;
pub mod leadership;
#[cfg(feature = "machines")]
#[cfg_attr(docsrs, doc(cfg(feature = "machines")))]
pub mod machine_progress;
pub mod management;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
pub mod multi_target;
mod own_writes;
pub mod push;
mod push_hooks;
pub mod reconcile;
pub mod recorder;
mod removed_finalizers;
pub mod resource;
pub mod stale_check;
pub mod status;
mod step_events;
pub mod time;
pub mod user_agent;

#[doc(inline)]
pub use adapters::{
    ApiServerJobs, SessionFlush, SessionIntents, SessionStaleCheck, gvr_of, object_ref,
    resource_view,
};
#[doc(inline)]
pub use backoff::ErrorBackoffConfig;
#[doc(inline)]
pub use cutover::{CutoverError, CutoverReason, CutoverReport, check_cutover, check_cutover_all};
#[doc(inline)]
pub use error::ReconcileError;
#[doc(inline)]
pub use error_chain::ErrorChain;
#[doc(inline)]
pub use error_policy::error_policy;
#[doc(inline)]
pub use events::{EventPublisher, JobEvent};
#[doc(inline)]
pub use flush::{StatusSession, StatusWriteConfig, StatusWriteError};
#[doc(inline)]
pub use leader::{
    InvalidLeaderElectionConfig, LeaderElectionConfig, LeaderElector, LeaderError,
    default_identity, unique_identity,
};
#[doc(inline)]
pub use leadership::{LeadershipEnd, LeadershipLost, shutdown_signal};
#[cfg(feature = "machines")]
#[doc(inline)]
pub use machine_progress::{KubeProgressHandle, MissingResourceVersion, progress_of};
#[doc(inline)]
pub use management::{Management, ManagementHook, ManagementStatePolicy};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use multi_target::MockMultiTargetCallbacks;
#[doc(inline)]
pub use multi_target::{MultiTargetCallbacks, MultiTargetProvisioner};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use reconcile::MockProvisioningCallbacks;
#[doc(inline)]
pub use reconcile::{LAUNCH_BLOCKED_CONDITION, NoCallbacks, Provisioner, ProvisioningCallbacks};
#[doc(inline)]
pub use recorder::EventRecorder;
#[doc(inline)]
pub use resource::NamespaceScope;
#[doc(inline)]
pub use resource::{HasProvisioningStatus, ProvisionedResource};
#[doc(inline)]
pub use stale_check::{OnStaleCheckError, api_server_has_non_terminal_provision_job};
#[doc(inline)]
pub use status::ProvisioningStatus;
#[doc(inline)]
pub use user_agent::{InvalidUserAgent, user_agent};
