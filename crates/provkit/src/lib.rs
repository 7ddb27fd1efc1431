//! # provkit
//!
//! Reusable building blocks for Kubernetes operators that provision infrastructure by running
//! jobs — Ansible Automation Platform (AAP) / AWX job templates in particular — written for
//! kube-rs controllers and wire-compatible with the Go OSAC operator's status fields.
//!
//! **Writing a kube-rs controller?** Start at [`Provisioner`] (feature `kube`): call its
//! `reconcile` from the function you give kube-runtime's `Controller::run`, and it runs the
//! whole provisioning lifecycle of your custom resource — finalizer, config version, launch,
//! poll, backoff, conflict-safe status writes, teardown.
//!
//! This crate re-exports the member crates behind features, the way `kube` re-exports
//! `kube-client`, `kube-runtime` and friends. Depend on `provkit` with the features you need, or
//! on the member crates directly; the two are interchangeable.
//!
//! | Module | Crate | Feature | What it holds |
//! |---|---|---|---|
//! | [`core`] | `provkit-core` | always | the job-status types with the Go operator's JSON, job-history operations, config-version hashing, [`Clock`] |
//! | [`lifecycle`] | `provkit-lifecycle` | `lifecycle` (default) | the [`ProvisioningProvider`] trait, the pure decisions and the [`Lifecycle`] engine that decides, launches, polls, backs off and tears down |
//! | [`aap`] | `provkit-aap` | `aap` | the AAP / AWX REST client ([`AapClient`]) and the provider that launches job templates ([`AapProvider`]) |
//! | [`machines`] | `provkit-machines` | `machines` | machine-set and cloud-instance provider traits, rollout planners, failure-domain mapping |
//! | [`kube`] | `provkit-kube` | `kube` | kube-rs integration: [`Provisioner`], status writes, the uncached stale-cache check, leader election |
//! | [`testing`] | `provkit-testing` | `testing` | a faithful fake AAP server, a scripted provider, in-memory machine providers and the conformance suites |
//!
//! With `aap` and `kube`, [`osac::provisioner`] is the Go OSAC operator's naming and
//! management-state annotation in one call (provkit's defaults are neutral).
//!
//! The most used items are also re-exported at the top level ([`JobStatus`],
//! [`compute_desired_config_version`], [`Lifecycle`], [`ProvisioningProvider`], [`AapClient`],
//! [`Provisioner`], …).
//!
//! # Quick start
//!
//! One provisioning reconcile of one resource against AAP: decide from the job history in the
//! status, launch or poll, and get back what to persist and when to come back.
//!
//! ```no_run
//! # #[cfg(feature = "aap")]
//! # async fn reconcile() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use provkit::aap::{AapClient, AapProvider};
//! use provkit::core::{JobStatus, SystemClock, compute_desired_config_version};
//! use provkit::lifecycle::{LaunchContext, Lifecycle, ProvisionHooks, ResourceMeta, ResourceView};
//!
//! // Once per controller: client (URL, token and TLS from the AAP_* variables, or the Go
//! // operator's OSAC_AAP_* ones when the AAP_* ones are unset), provider, engine.
//! let client = AapClient::from_env()?;
//! let provider = AapProvider::with_prefix(client, "osac"); // osac-create-subnet, osac-delete-subnet
//! let engine = Lifecycle::new(Arc::new(provider), Arc::new(SystemClock));
//!
//! // Per reconcile: the object, its spec hash and its job history (status.provisioningJobs).
//! let spec = serde_json::json!({ "cidr": "10.0.1.0/24", "network": "net-a" });
//! let object = serde_json::json!({
//!     "apiVersion": "osac.openshift.io/v1alpha1", "kind": "Subnet",
//!     "metadata": { "name": "subnet-a", "namespace": "tenant-a", "uid": "0b1c…" },
//!     "spec": spec,
//! });
//! let meta = ResourceMeta {
//!     kind: "Subnet".into(),
//!     api_version: "osac.openshift.io/v1alpha1".into(),
//!     name: "subnet-a".into(),
//!     namespace: Some("tenant-a".into()),
//!     uid: "0b1c…".into(),
//! };
//! let resource = ResourceView::new(meta, object);
//! let desired = compute_desired_config_version(&spec)?;
//! let mut jobs: Vec<JobStatus> = Vec::new();
//!
//! let outcome = engine
//!     .run_provisioning_lifecycle(&resource, &mut jobs, &desired, &LaunchContext::new(), &mut ProvisionHooks::new())
//!     .await?;
//! // Persist `jobs` and `desired` into the status, then requeue as told.
//! println!("{} -> requeue after {:?}", outcome.action, outcome.requeue_after());
//! # Ok(()) }
//! ```
//!
//! In a real controller, [`Provisioner`] (feature `kube`) does all of
//! this plus the stale-cache check, the status write right after a launch, and the finalizer
//! around deprovisioning; [`testing`] (feature `testing`) tests the controller against a fake AAP
//! server.
//!
//! # Guides
//!
//! The repository's [`docs/`](https://github.com/provkit/provkit/tree/main/docs) directory holds
//! the long-form guides:
//!
//! - [Implement your own `ProvisioningProvider`](https://github.com/provkit/provkit/blob/main/docs/implementing-a-provider.md):
//!   a complete provider, run through the conformance suite and the engine.
//! - [Status, conditions and phases](https://github.com/provkit/provkit/blob/main/docs/status-conditions-phases.md):
//!   what provkit writes into your status, and a `Ready` condition and phase column on top.
//! - [Testing your operator](https://github.com/provkit/provkit/blob/main/docs/testing-your-operator.md):
//!   the fake AAP server, the scripted provider, mocks, conformance suites, virtual time.
//! - [AAP](https://github.com/provkit/provkit/blob/main/docs/aap.md): AWX vs the AAP 2.5+
//!   gateway, tokens, [TLS](https://github.com/provkit/provkit/blob/main/docs/aap.md#tls)
//!   (rustls with ring, never a process-wide crypto provider), template naming, extra_vars.
//! - [The lifecycle](https://github.com/provkit/provkit/blob/main/docs/lifecycle.md) (decision
//!   table, backoff), [architecture](https://github.com/provkit/provkit/blob/main/docs/architecture.md)
//!   (crate map, the path of one job id), [machines](https://github.com/provkit/provkit/blob/main/docs/machines.md),
//!   [migrating from Go](https://github.com/provkit/provkit/blob/main/docs/migrating-from-go.md),
//!   [performance](https://github.com/provkit/provkit/blob/main/docs/performance.md) and
//!   [versioning](https://github.com/provkit/provkit/blob/main/docs/versioning.md).
//!
//! # Features
//!
//! - `lifecycle` (default): the engine ([`lifecycle`]).
//! - `aap`: the AAP client and provider ([`aap`]; implies `lifecycle`).
//! - `machines`: machine providers ([`machines`]).
//! - `kube`: kube-rs integration ([`kube`]; implies `lifecycle`).
//! - `testing`: test fakes and conformance suites ([`testing`]; implies `lifecycle`); use it from
//!   `[dev-dependencies]`.
//! - `mock`: the mockall mocks of the provider traits of the enabled modules
//!   (`lifecycle::MockProvisioningProvider`, with `aap` `aap::MockAapApi`, with `machines`
//!   `machines::set::MockMachineSetProvider` and `machines::cloud::MockCloudProvider`).
//!
//! `machines` and `kube` pull in k8s-openapi, which needs exactly one Kubernetes version: select
//! it in your binary with k8s-openapi's `latest` (or a `v1_*`) feature, or set
//! `K8S_OPENAPI_ENABLED_VERSION` for commands that build no binary (`cargo doc`, `cargo check`).
//!
//! MSRV: Rust 1.89. All provkit crates share one version and are released together.
// The module table links every module; with some features off those links have no target.
#![cfg_attr(
    not(all(
        feature = "aap",
        feature = "machines",
        feature = "kube",
        feature = "testing"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use provkit_core as core;

#[cfg(feature = "lifecycle")]
#[cfg_attr(docsrs, doc(cfg(feature = "lifecycle")))]
#[doc(inline)]
pub use provkit_lifecycle as lifecycle;

#[cfg(feature = "aap")]
#[cfg_attr(docsrs, doc(cfg(feature = "aap")))]
#[doc(inline)]
pub use provkit_aap as aap;

#[cfg(feature = "machines")]
#[cfg_attr(docsrs, doc(cfg(feature = "machines")))]
#[doc(inline)]
pub use provkit_machines as machines;

#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
#[doc(inline)]
pub use provkit_kube as kube;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
#[doc(inline)]
pub use provkit_testing as testing;

#[cfg(all(feature = "aap", feature = "kube"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "aap", feature = "kube"))))]
pub mod osac;

#[doc(inline)]
pub use provkit_core::{
    Clock, JobState, JobStatus, JobType, ManualClock, SystemClock, compute_desired_config_version,
};

#[cfg(feature = "lifecycle")]
#[doc(inline)]
pub use provkit_lifecycle::{
    Action, Lifecycle, LifecyclePolicy, Outcome, ProviderError, ProvisioningProvider, ResourceMeta,
    ResourceView,
};

#[cfg(feature = "aap")]
#[doc(inline)]
pub use provkit_aap::{AapClient, AapProvider};

#[cfg(feature = "kube")]
#[doc(inline)]
pub use provkit_kube::{
    ProvisionedResource, Provisioner, ProvisioningCallbacks, ProvisioningStatus,
};

/// The Rust code blocks of the repository's `docs/` guides, compiled and run as doctests so they
/// cannot rot. Not part of the API (only exists under `cargo test --doc`).
#[cfg(all(doctest, feature = "aap", feature = "testing", feature = "machines"))]
pub mod guides {
    #[doc = include_str!("../../../docs/architecture.md")]
    pub struct Architecture;
    #[doc = include_str!("../../../docs/aap.md")]
    pub struct Aap;
    #[doc = include_str!("../../../docs/testing-your-operator.md")]
    pub struct TestingYourOperator;
    #[doc = include_str!("../../../docs/migrating-from-go.md")]
    pub struct MigratingFromGo;
    #[doc = include_str!("../../../docs/migrating-from-go.lifecycle.md")]
    pub struct MigratingFromGoLifecycle;
    #[doc = include_str!("../../../docs/lifecycle.md")]
    pub struct Lifecycle;
    #[doc = include_str!("../../../docs/machines.md")]
    pub struct Machines;
    #[doc = include_str!("../../../docs/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../../../docs/versioning.md")]
    pub struct Versioning;
    #[doc = include_str!("../../../docs/implementing-a-provider.md")]
    pub struct ImplementingAProvider;
    #[cfg(feature = "kube")]
    #[doc = include_str!("../../../docs/status-conditions-phases.md")]
    pub struct StatusConditionsPhases;
}
