//! The provkit fleet harness, shared by the `fleet` example program and the CI-sized
//! integration test: the product path end to end, at scale, under chaos.
//!
//! Nothing here re-implements an API server, an informer, a work queue or a status writer.
//! The harness composes library parts ([`harness`]): provkit-testing's `FakeApiServer`
//! (in-process `kube::Client`s) and fake AAP (loopback HTTP), kube-runtime `Controller`s
//! running the example operator's reconcile — provkit-kube's `Provisioner` with the real
//! `Lifecycle`, `AapProvider` and `AapClient` — and provkit-kube's leader election over the
//! fake's Leases. What it adds is the scenario and its faults ([`fleet`], [`backend`]),
//! crashes triggered from the fakes' request observers, the audit ([`audit`]) and the report
//! ([`report`], [`metrics`]). Time is real, with every duration divided by one
//! [`TimeScale`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use provkit_examples::fleet::{FleetConfig, run_fleet};
//!
//! let report = run_fleet(FleetConfig::new(100).everything()).await?;
//! println!("{}", report.render());
//! assert!(report.ok());
//! # Ok(()) }
//! ```

pub mod audit;
pub mod backend;
pub mod fleet;
pub mod harness;
pub mod instrumented;
pub mod measure;
pub mod metrics;
pub mod outage;
pub mod push_demo;
pub mod push_report;
pub mod report;
pub mod stack;
pub mod story;
pub mod throttle;
pub mod trail;

pub use audit::{Audit, PurgeLog};
pub use backend::{Backend, BackendConfig, BackendError, Chaos, KindTemplates};
pub use harness::{CrashPlan, CrashPoint, Harness, HarnessConfig, LaunchStep};
pub use instrumented::{CallRecord, CallStats, Op};
pub use metrics::RunMetrics;
pub use stack::TimeScale;
