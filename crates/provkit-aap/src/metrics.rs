//! Prometheus metrics of the AAP requests (feature `metrics`), kept in a
//! [`prometheus_client`] registry you create, pass in and serve — one registry per operator (or per
//! test), no process-global recorder.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `provkit_aap_requests_total` | counter | `endpoint`, `method`, `status` (HTTP code, `connect_error`, `timeout`, `transport_error`, `not_sent`: a launch whose send-by time passed in the client) |
//! | `provkit_aap_request_duration_seconds` | histogram | `endpoint` |
//! | `provkit_aap_retries_total` | counter | `endpoint` |
//! | `provkit_aap_rate_limited_total` | counter | `endpoint` (429s and 503s with `Retry-After`) |
//! | `provkit_aap_circuit_rejections_total` | counter | `endpoint` (requests refused by the open circuit) |
//! | `provkit_aap_circuit_breaker_state` | gauge | `state` (`closed`, `open`, `half_open`: 1 for the current one) |
//! | `provkit_aap_circuit_breaker_transitions_total` | counter | `state` (entered) |
//!
//! `endpoint` is a small fixed set of classes ([`endpoint_class`]): `launch`,
//! `launch_requirements`, `job`, `job_list`, `job_kind`, `job_events`, `stdout`, `cancel`,
//! `template_lookup`, `gateway_token`, `ping`, `me`, `discovery`, `other` — never an id or a name.
//! Each request attempt is counted (a retried `GET` counts once per attempt).
//!
//! The breaker gauge is read from the breaker when the registry is encoded (at scrape time), not
//! when a request was last made: once the cool-down is over it says `half_open` (the next request
//! would be sent as the probe) although no request has met the breaker since it opened. It reads
//! the breaker of the client most recently built with these metrics; once that client and all its
//! clones are dropped, it shows the state that client last entered. `transitions_total` counts
//! what requests met: `half_open` once per probe admitted, `open` when the circuit opens and
//! again after each failed probe, `closed` when a probe succeeds. Use one `AapMetrics` per client
//! (its clones share it).
//!
//! ```
//! use provkit_aap::AapClient;
//! use provkit_aap::metrics::{AapMetrics, Registry};
//! let mut registry = Registry::default();
//! let metrics = AapMetrics::register(&mut registry);
//! let client = AapClient::builder("https://aap.example.com").metrics(metrics).build()?;
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).expect("encodes");
//! assert!(text.contains("provkit_aap_circuit_breaker_state{state=\"closed\"} 1"));
//! # let _ = client; Ok::<(), provkit_aap::Error>(())
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

pub use prometheus_client::registry::Registry;

use crate::circuit::{Breaker, CircuitState};

/// Labels of one request attempt.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: &'static str,
    method: String,
    status: String,
}

/// An endpoint class.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

/// A circuit breaker state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

type Histograms = Family<EndpointLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 5 ms … ~41 s: AAP's reference p99 is 1.5 s; job launches can take several seconds.
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

struct Metrics {
    requests: Family<RequestLabels, Counter>,
    latency: Histograms,
    retries: Family<EndpointLabels, Counter>,
    rate_limited: Family<EndpointLabels, Counter>,
    rejections: Family<EndpointLabels, Counter>,
    state: Arc<StateGauge>,
    transitions: Family<StateLabels, Counter>,
}

/// `circuit_breaker_state`, computed at scrape time from the bound client's breaker.
#[derive(Debug)]
struct StateGauge {
    /// The breaker of the client most recently built with these metrics.
    breaker: Mutex<Weak<Breaker>>,
    /// The state last entered: shown when no live client is bound.
    last: Mutex<CircuitState>,
}

impl StateGauge {
    fn current(&self) -> CircuitState {
        let breaker = self
            .breaker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upgrade();
        match breaker {
            Some(breaker) => breaker.state(),
            None => *self.last.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }
}

impl Collector for StateGauge {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let current = self.current();
        let mut family = encoder.encode_descriptor(
            "circuit_breaker_state",
            "The AAP circuit breaker's state at scrape time (1 for the current one)",
            None,
            MetricType::Gauge,
        )?;
        for state in STATES {
            let labels = StateLabels {
                state: state.as_str(),
            };
            ConstGauge::new(i64::from(state == current)).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// The AAP client's metrics, registered in a registry of yours; hand them to
/// [`AapClientBuilder::metrics`](crate::AapClientBuilder::metrics). Cheap to clone.
#[derive(Clone)]
pub struct AapMetrics {
    inner: Arc<Metrics>,
}

impl fmt::Debug for AapMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AapMetrics").finish_non_exhaustive()
    }
}

const STATES: [CircuitState; 3] = [
    CircuitState::Closed,
    CircuitState::Open,
    CircuitState::HalfOpen,
];

impl AapMetrics {
    /// Creates the metrics and registers them in `registry` under the `provkit_aap_` prefix.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Metrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            retries: Family::default(),
            rate_limited: Family::default(),
            rejections: Family::default(),
            state: Arc::new(StateGauge {
                breaker: Mutex::new(Weak::new()),
                last: Mutex::new(CircuitState::Closed),
            }),
            transitions: Family::default(),
        };
        let sub = registry.sub_registry_with_prefix("provkit_aap");
        sub.register(
            "requests",
            "AAP request attempts by endpoint class, method and status",
            metrics.requests.clone(),
        );
        sub.register(
            "request_duration_seconds",
            "Latency of AAP request attempts that were sent, by endpoint class",
            metrics.latency.clone(),
        );
        sub.register(
            "retries",
            "Retries of idempotent AAP requests after a transient failure",
            metrics.retries.clone(),
        );
        sub.register(
            "rate_limited",
            "AAP answers asking to wait: 429s and 503s with Retry-After",
            metrics.rate_limited.clone(),
        );
        sub.register(
            "circuit_rejections",
            "Requests not sent because the AAP circuit breaker was open",
            metrics.rejections.clone(),
        );
        sub.register_collector(Box::new(metrics.state.clone()));
        sub.register(
            "circuit_breaker_transitions",
            "Changes of the AAP circuit breaker's state, by the state entered",
            metrics.transitions.clone(),
        );
        Self {
            inner: Arc::new(metrics),
        }
    }

    /// The state gauge reads `breaker` from now on (the client being built with these metrics).
    pub(crate) fn bind(&self, breaker: &Arc<Breaker>) {
        *self
            .inner
            .state
            .breaker
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(breaker);
    }

    pub(crate) fn request(
        &self,
        endpoint: &'static str,
        method: &http::Method,
        status: String,
        sent: Option<Duration>,
    ) {
        self.inner
            .requests
            .get_or_create(&RequestLabels {
                endpoint,
                method: method.as_str().to_owned(),
                status,
            })
            .inc();
        if let Some(elapsed) = sent {
            self.inner
                .latency
                .get_or_create(&EndpointLabels { endpoint })
                .observe(elapsed.as_secs_f64());
        }
    }

    pub(crate) fn retry(&self, endpoint: &'static str) {
        self.inner
            .retries
            .get_or_create(&EndpointLabels { endpoint })
            .inc();
    }

    pub(crate) fn rate_limited(&self, endpoint: &'static str) {
        self.inner
            .rate_limited
            .get_or_create(&EndpointLabels { endpoint })
            .inc();
    }

    pub(crate) fn rejected(&self, endpoint: &'static str) {
        self.inner
            .rejections
            .get_or_create(&EndpointLabels { endpoint })
            .inc();
    }

    pub(crate) fn transition(&self, state: CircuitState) {
        self.inner
            .transitions
            .get_or_create(&StateLabels {
                state: state.as_str(),
            })
            .inc();
        *self
            .inner
            .state
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = state;
    }
}

/// The endpoint class of a request, from its method and root-relative path (a fixed, small set
/// of values, so the label never carries ids or names).
///
/// ```
/// use provkit_aap::metrics::endpoint_class;
/// use http::Method;
/// assert_eq!(endpoint_class(&Method::POST, "/api/v2/job_templates/7/launch/"), "launch");
/// assert_eq!(endpoint_class(&Method::GET, "/api/controller/v2/jobs/42/"), "job");
/// assert_eq!(endpoint_class(&Method::GET, "/api/v2/jobs/?job_template=7&page_size=200"), "job_list");
/// ```
pub fn endpoint_class(method: &http::Method, path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let is_version =
        |s: &&str| s.len() > 1 && s.starts_with('v') && s[1..].bytes().all(|b| b.is_ascii_digit());
    let Some(version) = segments.iter().position(is_version) else {
        return "discovery";
    };
    match &segments[version + 1..] {
        [] => "discovery",
        ["ping"] => "ping",
        ["me"] => "me",
        ["unified_job_templates"] => "template_lookup",
        ["unified_jobs"] => "job_kind",
        [_, _, "launch"] if method == http::Method::POST => "launch",
        [_, _, "launch"] => "launch_requirements",
        [_, _, "cancel"] => "cancel",
        ["jobs", _, "job_events"] => "job_events",
        ["jobs", _, "stdout"] => "stdout",
        ["jobs" | "workflow_jobs", _] => "job",
        ["jobs" | "workflow_jobs"] => "job_list",
        ["tokens", ..] => "gateway_token",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn endpoint_classes_table() {
        let cases = [
            (Method::GET, "/api/", "discovery"),
            (Method::GET, "/api/controller/", "discovery"),
            (Method::GET, "/api/v2/", "discovery"),
            (Method::GET, "/api/v2/ping/", "ping"),
            (Method::GET, "/api/v2/me/", "me"),
            (
                Method::GET,
                "/api/v2/unified_job_templates/?name=x&type=job_template",
                "template_lookup",
            ),
            (Method::GET, "/api/v2/unified_jobs/?id=4", "job_kind"),
            (Method::POST, "/api/v2/job_templates/7/launch/", "launch"),
            (
                Method::POST,
                "/api/controller/v2/workflow_job_templates/7/launch/",
                "launch",
            ),
            (
                Method::GET,
                "/api/v2/job_templates/7/launch/",
                "launch_requirements",
            ),
            (Method::POST, "/api/v2/workflow_jobs/3/cancel/", "cancel"),
            (Method::GET, "/api/v2/jobs/3/cancel/", "cancel"),
            (
                Method::GET,
                "/api/v2/jobs/3/job_events/?failed=true",
                "job_events",
            ),
            (Method::GET, "/api/v2/jobs/3/stdout/?format=txt", "stdout"),
            (Method::GET, "/api/v2/jobs/3/", "job"),
            (Method::GET, "/api/v2/workflow_jobs/3/", "job"),
            (Method::GET, "/api/v2/jobs/?created__gt=x", "job_list"),
            (Method::POST, "/api/gateway/v1/tokens/", "gateway_token"),
            (
                Method::DELETE,
                "/api/gateway/v1/tokens/12/",
                "gateway_token",
            ),
            (Method::GET, "/api/v2/inventories/", "other"),
        ];
        for (method, path, want) in cases {
            assert_eq!(endpoint_class(&method, path), want, "{method} {path}");
        }
    }
}
