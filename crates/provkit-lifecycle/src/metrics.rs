//! Prometheus metrics of the lifecycle engine (feature `metrics`), on a
//! [`prometheus_client`] [`Registry`] you own and serve.
//!
//! | name | type | labels | what |
//! |---|---|---|---|
//! | `provkit_launches_total` | counter | `job_type`, `result` | launch attempts by outcome: `made`, `not_made` (certainly no job, including rate limits), `unknown` (a job may exist), `recovered` (an earlier attempt's job found by its idempotency key) |
//! | `provkit_poll_duration_seconds` | histogram | `job_type` | one sample per job-status poll, whatever its answer; timed with the engine's `Clock` |
//!
//! `job_type` is `provision` or `deprovision`: the job template the provider runs for it (AAP:
//! `<prefix>-create-…` / `<prefix>-delete-…`). A per-instance registry (not a process-global
//! recorder) keeps parallel tests apart and pulls in no HTTP or TLS stack.
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use provkit_core::JobType;
//! use provkit_lifecycle::metrics::{LaunchResult, LifecycleMetrics};
//!
//! let mut registry = Registry::default();
//! let metrics = LifecycleMetrics::register(&mut registry);
//! // Lifecycle::new(provider, clock).with_metrics(metrics.clone()); the engine then counts:
//! metrics.launch(&JobType::Provision, LaunchResult::Made);
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! // A family is exposed once it has a sample.
//! assert!(text.contains("# TYPE provkit_launches counter"));
//! assert!(text.contains(r#"result="made""#));
//! ```

use std::fmt;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use provkit_core::JobType;

/// What a launch attempt came to (the `result` label of `provkit_launches_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LaunchResult {
    /// A job was launched and recorded.
    Made,
    /// The provider is certain no job was made (a rejected launch, a rate limit).
    NotMade,
    /// The outcome is unknown: a job may exist (lost answer, empty job id).
    Unknown,
    /// An earlier attempt's job was found by its idempotency key and recorded instead.
    Recovered,
}

impl LaunchResult {
    /// The label value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Made => "made",
            Self::NotMade => "not_made",
            Self::Unknown => "unknown",
            Self::Recovered => "recovered",
        }
    }
}

type Labels2 = [(&'static str, &'static str); 2];
type Labels1 = [(&'static str, &'static str); 1];

/// The engine's metrics; clones share the same series. Pass it to
/// [`Lifecycle::with_metrics`](crate::Lifecycle::with_metrics).
#[derive(Clone)]
pub struct LifecycleMetrics {
    launches: Family<Labels2, Counter>,
    polls: Family<Labels1, Histogram>,
}

impl fmt::Debug for LifecycleMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LifecycleMetrics").finish_non_exhaustive()
    }
}

/// Poll latency buckets: 5 ms doubling to about 41 s.
fn poll_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The label value of a job type (`other` for any custom one, to bound the series).
fn job_type_label(job_type: &JobType) -> &'static str {
    match job_type {
        JobType::Provision => "provision",
        JobType::Deprovision => "deprovision",
        JobType::Other(_) => "other",
    }
}

impl LifecycleMetrics {
    /// Registers the engine's metrics in `registry` and returns the handle that records them.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            launches: Family::default(),
            polls: Family::new_with_constructor(poll_histogram),
        };
        registry.register(
            "provkit_launches",
            "Launch attempts by job type and result (made, not_made, unknown, recovered)",
            metrics.launches.clone(),
        );
        registry.register(
            "provkit_poll_duration_seconds",
            "Duration of job-status polls by job type",
            metrics.polls.clone(),
        );
        metrics
    }

    /// Counts one launch attempt.
    pub fn launch(&self, job_type: &JobType, result: LaunchResult) {
        self.launches
            .get_or_create(&[
                ("job_type", job_type_label(job_type)),
                ("result", result.as_str()),
            ])
            .inc();
    }

    /// Records one job-status poll that took `elapsed`.
    pub fn poll(&self, job_type: &JobType, elapsed: Duration) {
        self.polls
            .get_or_create(&[("job_type", job_type_label(job_type))])
            .observe(elapsed.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap_or_default();
        text
    }

    #[test]
    fn launches_and_polls_are_exposed_with_their_labels() {
        let mut registry = Registry::default();
        let m = LifecycleMetrics::register(&mut registry);
        m.launch(&JobType::Provision, LaunchResult::Made);
        m.launch(&JobType::Provision, LaunchResult::Made);
        m.launch(&JobType::Deprovision, LaunchResult::Recovered);
        m.poll(&JobType::Provision, Duration::from_millis(3));
        let text = text(&registry);
        assert!(
            text.contains(r#"provkit_launches_total{job_type="provision",result="made"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"provkit_launches_total{job_type="deprovision",result="recovered"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"provkit_poll_duration_seconds_count{job_type="provision"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"provkit_poll_duration_seconds_bucket{le="0.005",job_type="provision"} 1"#
            ),
            "{text}"
        );
    }
}
