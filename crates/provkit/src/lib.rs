//! # provkit
//!
//! Reusable building blocks for Kubernetes operators that provision infrastructure by running
//! jobs — Ansible Automation Platform (AAP) / AWX job templates in particular — written for
//! kube-rs controllers and wire-compatible with the Go OSAC operator's status fields.
//!
//! This crate re-exports the member crates behind features, the way `kube` re-exports
//! `kube-client`, `kube-runtime` and friends. Depend on `provkit` with the features you need, or
//! on the member crates directly; the two are interchangeable.
//!
//! | Module | Crate | Feature | What it holds |
//! |---|---|---|---|
//! | [`core`] | `provkit-core` | always | `JobStatus` / `JobState` / `JobType`, job-history operations, config-version hashing, `Clock` |
//! | `lifecycle` | `provkit-lifecycle` | `lifecycle` (default) | the `ProvisioningProvider` trait, pure decisions, the `Lifecycle` engine |
//! | `aap` | `provkit-aap` | `aap` | the AAP / AWX REST client and `AapProvider` |
//! | `machines` | `provkit-machines` | `machines` | machine-set and cloud-instance provider traits, rollout planners |
//! | `kube` | `provkit-kube` | `kube` | finalizers, status patching, stale-cache check, `Action` conversion |
//! | `testing` | `provkit-testing` | `testing` | fake AAP server, scripted provider, fakes, conformance suites |
//!
//! The most used items are also re-exported at the top level ([`JobStatus`],
//! [`compute_desired_config_version`], `Lifecycle`, `ProvisioningProvider`, `AapClient`, …).
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
//! // Once per controller: client (token, TLS and URL from OSAC_AAP_* variables), provider, engine.
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
//! let resource = ResourceView::new(ResourceMeta { kind: "Subnet".into(), name: "subnet-a".into(), namespace: Some("tenant-a".into()), uid: "0b1c…".into(), ..Default::default() }, object);
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
//! In a real controller, use `provkit::kube` (feature `kube`) for the stale-cache check, the
//! status write right after a launch, and the finalizer around deprovisioning; and
//! `provkit::testing` (feature `testing`) to test the controller against a fake AAP server.
//!
//! # Guides
//!
//! The repository's `docs/` directory holds the long-form guides: `architecture.md` (crate map
//! and the path of one job id), `lifecycle.md` (decision table, backoff), `aap.md` (AWX vs the
//! AAP 2.5+ gateway, tokens, TLS, template naming, extra_vars), `testing-your-operator.md`,
//! `migrating-from-go.md` (every Go name and changed behaviour) and `machines.md`.
//!
//! # Features
//!
//! - `lifecycle` (default): the engine (`provkit::lifecycle`).
//! - `aap`: the AAP client and provider (implies `lifecycle`).
//! - `machines`: machine providers (enables `provkit-core/k8s`, which pulls in k8s-openapi; the
//!   final binary selects the Kubernetes version with k8s-openapi's `latest` or `v1_*` feature).
//! - `kube`: kube-rs integration (implies `lifecycle` and `machines`).
//! - `testing`: test fakes (implies `lifecycle`); use it from `[dev-dependencies]`.
//!
//! MSRV: Rust 1.89. All provkit crates share one version and are released together.
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
}
