//! Prometheus metrics of the reconcile helper (feature `metrics`), on a [`prometheus_client`]
//! [`Registry`] you own and serve (the example operator serves it at `/metrics`).
//!
//! | name | type | labels | what |
//! |---|---|---|---|
//! | `provkit_reconciles_total` | counter | `outcome` (`ok`, `error`) | reconciles of [`Provisioner::reconcile`](crate::Provisioner::reconcile) |
//! | `provkit_reconcile_duration_seconds` | histogram | | their duration |
//! | `provkit_status_writes_total` | counter | | status patches the API server accepted (flush, launch intent, end of reconcile) |
//! | `provkit_status_conflicts_total` | counter | | status patches it refused with 409 Conflict (each re-read and retried, see [`crate::flush`]) |
//! | `provkit_finalizer_holds_total` | counter | | cleanup reconciles that kept the finalizer (deprovisioning not finished) |
//!
//! The engine's launches and polls are provkit-lifecycle's (`provkit_launches_total`,
//! `provkit_poll_duration_seconds`, its feature `metrics`); register both in one registry:
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use provkit_kube::metrics::KubeMetrics;
//!
//! let mut registry = Registry::default();
//! let kube_metrics = KubeMetrics::register(&mut registry);
//! // Provisioner::new(client, lifecycle, FINALIZER).with_metrics(kube_metrics)
//! # let _ = kube_metrics;
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains("provkit_status_writes_total 0"), "{text}");
//! ```

use std::fmt;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Outcome = [(&'static str, &'static str); 1];

/// The reconcile helper's metrics; clones share the same series. Pass it to
/// [`Provisioner::with_metrics`](crate::Provisioner::with_metrics).
#[derive(Clone)]
pub struct KubeMetrics {
    reconciles: Family<Outcome, Counter>,
    duration: Histogram,
    status_writes: Counter,
    status_conflicts: Counter,
    finalizer_holds: Counter,
}

impl fmt::Debug for KubeMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeMetrics").finish_non_exhaustive()
    }
}

impl KubeMetrics {
    /// Registers the reconcile helper's metrics in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            reconciles: Family::default(),
            // 1 ms doubling to about 33 s.
            duration: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            status_writes: Counter::default(),
            status_conflicts: Counter::default(),
            finalizer_holds: Counter::default(),
        };
        registry.register(
            "provkit_reconciles",
            "Reconciles by outcome (ok, error)",
            metrics.reconciles.clone(),
        );
        registry.register(
            "provkit_reconcile_duration_seconds",
            "Duration of reconciles",
            metrics.duration.clone(),
        );
        registry.register(
            "provkit_status_writes",
            "Status patches the API server accepted",
            metrics.status_writes.clone(),
        );
        registry.register(
            "provkit_status_conflicts",
            "Status patches refused with 409 Conflict",
            metrics.status_conflicts.clone(),
        );
        registry.register(
            "provkit_finalizer_holds",
            "Cleanup reconciles that kept the finalizer",
            metrics.finalizer_holds.clone(),
        );
        metrics
    }

    pub(crate) fn reconciled(&self, ok: bool, elapsed: Duration) {
        let outcome = if ok { "ok" } else { "error" };
        self.reconciles.get_or_create(&[("outcome", outcome)]).inc();
        self.duration.observe(elapsed.as_secs_f64());
    }

    pub(crate) fn status_writes(&self, writes: u64, conflicts: u64) {
        self.status_writes.inc_by(writes);
        self.status_conflicts.inc_by(conflicts);
    }

    pub(crate) fn finalizer_held(&self) {
        self.finalizer_holds.inc();
    }
}
