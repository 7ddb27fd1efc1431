//! `provkit-machines`: machine-set and cloud-instance provider traits, rollout planners and
//! failure-domain mapping for Kubernetes machine operators.
//!
//! Two levels, mirroring two upstream Go abstractions:
//!
//! - **Set level** ([`set`], after OpenShift's control-plane machine set): a
//!   [`MachineSetProvider`] reports the machines of a replicated set grouped by replica index and
//!   creates / deletes machines. Pure functions turn its [`MachineInfo`]s into buckets, status,
//!   degradation reasons and a rollout [`Plan`] ([`plan_rolling_update`], [`plan_on_delete`],
//!   or [`set::plan_for_strategy`] to dispatch on the update strategy);
//!   [`execute_plan`] applies a plan with an uncached re-check before every create.
//! - **Instance level** ([`cloud`], after Kubermatic's machine-controller): a [`CloudProvider`]
//!   finds, creates and cleans up the one cloud instance belonging to a machine, identified by
//!   the machine UID. It persists progress (create intent, instance id, sub-resource
//!   finalizers) on the machine object through a [`ProgressHandle`]; the drivers
//!   [`ensure_instance`] and [`cleanup_instance`] call it in the order that neither orphans
//!   nor duplicates instances. Providers with a typed spec implement [`TypedCloudProvider`]
//!   and wrap it in [`Typed`]. Decorators add a [`ValidationCache`] and a
//!   [`CreateVisibilityGuard`]; pure step functions ([`next_step`], [`deletion_step`]) encode
//!   the controller flow.
//!
//! In-memory fakes, builders and conformance suites live in `provkit-testing` (feature
//! `machines`).
//!
//! # Decisions on upstream behaviour marked as likely bugs
//!
//! - **Several indexes share a failure domain** (Go picks one at random while iterating a map):
//!   [`index_for_machine`] picks the lowest such index without a machine, else the lowest index.
//! - **An index missing from the failure-domain mapping**: providers report the indexes they can
//!   create ([`MachineSetProvider::creatable_indexes`]); [`group_by_index`] only adds empty
//!   buckets for creatable indexes, so planners never ask for an index the mapping lacks.
//! - **A deleting replacement counted as updated** (RollingUpdate delete step): the delete step
//!   only counts *live* (not deleting) up-to-date machines as replacements, so a bucket
//!   `[old outdated, new up-to-date but deleting]` keeps the old machine and creates another
//!   replacement instead of deleting the last live machine of the index.
//!
//! ```
//! use provkit_machines::set::{plan_rolling_update, Action, IndexBucket, RollingUpdateConfig};
//! use provkit_core::k8s::{GroupVersionResource, MachineInfo, ObjectRef, UpdateState};
//!
//! let gvr = GroupVersionResource::new("machine.openshift.io", "v1beta1", "machines");
//! let info = |i: i32, outdated: bool| {
//!     let m = MachineInfo::new(ObjectRef::named(gvr.clone(), format!("master-{i}"), None), i)
//!         .with_ready(true);
//!     if outdated { m.with_update(UpdateState::needs_update(["zone"])) } else { m }
//! };
//! let buckets = vec![
//!     IndexBucket::new(0, vec![info(0, false)]),
//!     IndexBucket::new(1, vec![info(1, true)]),
//!     IndexBucket::new(2, vec![info(2, false)]),
//! ];
//! let plan = plan_rolling_update(&buckets, 3, RollingUpdateConfig::default());
//! assert_eq!(plan.actions, vec![Action::CreateIfNoFreshReplacement { index: 1 }]);
//! ```
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod cloud;
pub mod set;

#[doc(inline)]
pub use cloud::{
    CloudProvider, CreateVisibilityGuard, Instance, MachineView, ProgressHandle, ProviderError,
    Typed, TypedCloudProvider, ValidationCache, cleanup_instance, deletion_step, ensure_instance,
    next_step,
};
pub use provkit_core::k8s::{GroupVersionResource, MachineInfo, ObjectRef, UpdateState};
#[doc(inline)]
pub use set::{
    MachineSetError, MachineSetProvider, MappingError, Plan, execute_plan, group_by_index,
    index_for_machine, plan_on_delete, plan_rolling_update,
};

/// The `async_trait` attribute macro, re-exported so that implementing [`MachineSetProvider`]
/// or [`CloudProvider`] needs no `async-trait` dependency of your own:
/// `#[provkit_machines::async_trait]`.
#[doc(no_inline)]
pub use async_trait::async_trait;
