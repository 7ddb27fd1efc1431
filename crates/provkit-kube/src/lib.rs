//! `provkit-kube`: kube-rs integration for the provkit provisioning lifecycle.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod adapters;
pub mod error;
pub mod events;
pub mod flush;
pub mod leader;
pub mod management;
pub mod reconcile;
pub mod resource;
pub mod stale_check;
pub mod status;
pub mod time;

#[doc(inline)]
pub use adapters::{
    ApiServerJobs, SessionFlush, SessionIntents, SessionStaleCheck, gvr_of, object_ref,
    resource_view,
};
#[doc(inline)]
pub use error::{DEFAULT_ERROR_REQUEUE, ReconcileError, error_action, error_policy};
#[doc(inline)]
pub use events::{EventPublisher, JobEvent};
#[doc(inline)]
pub use flush::{StatusSession, StatusWriteConfig, StatusWriteError};
#[doc(inline)]
pub use leader::{LeaderElector, LeaderError};
#[doc(inline)]
pub use management::{Management, ManagementHook, ManagementStatePolicy};
#[doc(inline)]
pub use reconcile::{LAUNCH_BLOCKED_CONDITION, NoCallbacks, Provisioner, ProvisioningCallbacks};
#[doc(inline)]
pub use resource::NamespaceScope;
#[doc(inline)]
pub use resource::ProvisionedResource;
#[doc(inline)]
pub use stale_check::{OnStaleCheckError, api_server_has_non_terminal_provision_job};
#[doc(inline)]
pub use status::ProvisioningStatus;
