//! The provkit simulation harness, shared by the `demo` and `fleet` example programs.
//!
//! One harness drives the **real** lifecycle engine ([`provkit_lifecycle::Lifecycle`]) and the **real**
//! [`provkit_aap::AapProvider`] / [`provkit_aap::AapClient`] over loopback HTTP against the in-process
//! fake AAP server ([`provkit_testing::fake_aap`]), with everything that depends on time running on one
//! [`VirtualClock`]:
//!
//! - [`WorkQueue`]: a controller work queue with kube-runtime's guarantees (bounded concurrency, at most
//!   one reconcile per object at a time, earliest requeue wins) whose requeues are honoured on the
//!   virtual clock, and which moves the clock to the next due time when there is no ready work;
//! - [`ApiServer`]: an in-memory API server holding each resource's spec, status and finalizer, with
//!   a lagging informer-cache copy so a fraction of reconciles read a deliberately stale status, and
//!   conflict-safe status writes ([`StatusSession`]) used for the engine's status flush, while the
//!   engine's stale-cache check reads the API-server copy;
//! - [`Backend`]: the fake AAP server (templates, job scripts, [`Chaos`] faults) with the real client
//!   and provider pointed at it;
//! - [`Sim`]: the controller's reconcile function and workers;
//! - [`Audit`]: duplicate launches, lost job ids and launches per resource, from AAP's own records;
//! - [`RunMetrics`], [`report`]: counters, CPU per reconcile, peak RSS, tables.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use provkit_examples::{Backend, BackendConfig, KindTemplates, Observer, ReconcileReport, Sim, SimConfig, VirtualClock};
//!
//! struct Print;
//! impl Observer for Print {
//!     fn reconciled(&self, _sim: &Arc<Sim>, r: &ReconcileReport) {
//!         println!("{:?}", r.describe());
//!     }
//! }
//!
//! let clock = VirtualClock::new();
//! let kinds = vec![KindTemplates::new("VirtualNetwork", Duration::from_secs(40), Duration::from_secs(20))];
//! let backend = Backend::start(&BackendConfig::new(kinds), &clock, 1).await?;
//! let sim = Sim::new(SimConfig::new(1), clock.clone(), &backend);
//! sim.create(0, "VirtualNetwork", "net-a", serde_json::json!({"cidr": "10.0.0.0/24"}));
//! sim.run(Arc::new(Print), clock.after(Duration::from_secs(3600))).await;
//! # Ok(()) }
//! ```

pub mod audit;
pub mod backend;
pub mod clock;
pub mod fleet;
pub mod instrumented;
pub mod metrics;
pub mod queue;
pub mod report;
pub mod sim;
pub mod stack;
pub mod store;
pub mod story;

pub use audit::{Audit, PurgeLog};
pub use backend::{Backend, BackendConfig, BackendError, Chaos, KindTemplates};
pub use clock::VirtualClock;
pub use instrumented::{CallRecord, CallStats, Op};
pub use metrics::RunMetrics;
pub use queue::{Advance, DriveEnd, WorkQueue};
pub use sim::{EngineResult, Observer, ReconcileReport, Sim, SimConfig, is_converged};
pub use store::{ApiServer, Object, StatusSession};
