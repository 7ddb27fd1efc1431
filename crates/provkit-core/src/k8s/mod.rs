//! Kubernetes-facing value types shared by the machine-provider crates.
//!
//! - [`GroupVersionResource`]: the (group, version, plural resource) triple a dynamic client
//!   needs to build a REST path; also used as a type guard ("is this reference a Machine?").
//! - [`ObjectRef`]: a [`GroupVersionResource`] plus the object's last observed k8s-openapi
//!   [`ObjectMeta`](k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta). Deletion state
//!   and age are read from the metadata; there is no separate "deleting" flag.
//! - [`MachineInfo`]: one existing machine of a replicated set, with its replica index,
//!   readiness and [`UpdateState`]. A field diff can only exist together with "needs update":
//!   the combination "diff without needs-update" is not representable.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use provkit_core::k8s::{GroupVersionResource, MachineInfo, ObjectRef, UpdateState};
//!
//! let machine = ObjectRef::new(
//!     GroupVersionResource::new("machine.openshift.io", "v1beta1", "machines"),
//!     ObjectMeta { name: Some("cluster-master-1".into()), ..ObjectMeta::default() },
//! );
//! let info = MachineInfo::new(machine, 1)
//!     .with_ready(true)
//!     .with_update(UpdateState::needs_update(["Zone: us-east-1b != us-east-1a"]));
//! assert!(info.needs_update());
//! assert_eq!(info.diff(), ["Zone: us-east-1b != us-east-1a"]);
//! assert!(!info.is_deleting());
//! ```

mod gvr;
mod machine_info;
mod object_ref;

pub use gvr::GroupVersionResource;
pub use machine_info::{MachineInfo, UpdateState};
pub use object_ref::ObjectRef;
