//! What the issue-17 scenarios ([`outage`](crate::outage), [`throttle`](crate::throttle)) measure
//! with, composed from library parts:
//!
//! - [`Taps`]: extra request observers the [`Harness`](crate::Harness) calls before its own on
//!   every request either fake sees (provkit-testing's observers take one observer per fake);
//! - [`PerSecond`]: a count per second of **scenario** time (wall time divided by the run's
//!   [`TimeScale`]);
//! - [`BreakerSettings`]: provkit-aap's circuit breaker in scenario durations, scaled into a
//!   [`CircuitBreakerConfig`] (the config has no duration getters, so the scenario keeps them);
//! - [`AapCounters`]: provkit-aap's own Prometheus metrics ([`AapMetrics`]) of every client the
//!   run builds, read back from the registry's text encoding (circuit transitions, rejections,
//!   rate-limited answers).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use provkit_aap::CircuitBreakerConfig;
use provkit_aap::metrics::{AapMetrics, Registry};
use provkit_testing::observe::{ObservedRequest, Phase, RequestObserver};
use tokio::time::Instant;

use crate::stack::TimeScale;

/// Extra request observers ("taps") called by the harness's own observers before they decide;
/// a tap only looks (its verdict is ignored).
#[derive(Clone, Default)]
pub struct Taps {
    /// Sees every fake API server request.
    pub api: Option<RequestObserver>,
    /// Sees every fake AAP request.
    pub aap: Option<RequestObserver>,
}

impl std::fmt::Debug for Taps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taps")
            .field("api", &self.api.is_some())
            .field("aap", &self.aap.is_some())
            .finish()
    }
}

impl Taps {
    /// Calls the API tap, if any.
    pub fn on_api(&self, req: &ObservedRequest<'_>, phase: Phase) {
        if let Some(t) = &self.api {
            let _ = t(req, phase);
        }
    }

    /// Calls the AAP tap, if any.
    pub fn on_aap(&self, req: &ObservedRequest<'_>, phase: Phase) {
        if let Some(t) = &self.aap {
            let _ = t(req, phase);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Events counted per second of scenario time from a start (the first event, or
/// [`start`](Self::start)).
#[derive(Debug)]
pub struct PerSecond {
    scale: TimeScale,
    start: Mutex<Option<Instant>>,
    buckets: Mutex<Vec<u32>>,
}

/// What a [`PerSecond`] counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateSummary {
    /// Events.
    pub total: u64,
    /// Scenario seconds from the start to the last event (inclusive).
    pub seconds: usize,
    /// The most events in one scenario second.
    pub max: u32,
    /// The scenario second (from the start) of the first maximum.
    pub max_at: usize,
    /// Seconds with at least one event.
    pub busy: usize,
    /// Seconds with more events than the limit asked about.
    pub above: usize,
    /// The longest run of consecutive seconds above the limit.
    pub longest_above: usize,
}

impl PerSecond {
    /// A counter in `scale`'s scenario seconds.
    pub fn new(scale: TimeScale) -> Self {
        Self {
            scale,
            start: Mutex::new(None),
            buckets: Mutex::new(Vec::new()),
        }
    }

    /// Starts (or restarts, clearing the counts) the clock now.
    pub fn start(&self) {
        *lock(&self.start) = Some(Instant::now());
        lock(&self.buckets).clear();
    }

    /// Counts one event now.
    pub fn hit(&self) {
        let start = *lock(&self.start).get_or_insert_with(Instant::now);
        let secs = self.scale.production(start.elapsed()).as_secs();
        let i = usize::try_from(secs).unwrap_or(usize::MAX).min(10_000_000);
        let mut b = lock(&self.buckets);
        if b.len() <= i {
            b.resize(i + 1, 0);
        }
        b[i] = b[i].saturating_add(1);
    }

    /// The counts, with `limit` per second deciding what is "above".
    pub fn summary(&self, limit: f64) -> RateSummary {
        let b = lock(&self.buckets);
        let mut s = RateSummary {
            seconds: b.len(),
            ..RateSummary::default()
        };
        let mut run = 0;
        for (i, &k) in b.iter().enumerate() {
            s.total += u64::from(k);
            s.busy += usize::from(k > 0);
            if k > s.max {
                s.max = k;
                s.max_at = i;
            }
            if f64::from(k) > limit {
                s.above += 1;
                run += 1;
                s.longest_above = s.longest_above.max(run);
            } else {
                run = 0;
            }
        }
        s
    }
}

/// provkit-aap's circuit breaker in **scenario** durations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerSettings {
    /// Failed attempts in a row that open the circuit (0: no breaker).
    pub threshold: u32,
    /// How long the circuit stays open.
    pub cool_down: Duration,
    /// At most one probe per interval.
    pub probe_interval: Duration,
    /// After a failure, how long a request waits for a place among those that could open it.
    pub admission_wait: Duration,
}

impl Default for BreakerSettings {
    /// [`CircuitBreakerConfig::default`]'s values: 5 failures, 10 s open, one probe per second,
    /// 1 s admission wait.
    fn default() -> Self {
        Self {
            threshold: 5,
            cool_down: Duration::from_secs(10),
            probe_interval: Duration::from_secs(1),
            admission_wait: Duration::from_secs(1),
        }
    }
}

impl BreakerSettings {
    /// The client's config, durations scaled.
    pub fn config(&self, scale: TimeScale) -> CircuitBreakerConfig {
        if self.threshold == 0 {
            return CircuitBreakerConfig::disabled();
        }
        CircuitBreakerConfig::default()
            .failure_threshold(self.threshold)
            .cool_down(scale.of(self.cool_down))
            .probe_interval(scale.of(self.probe_interval))
            .admission_wait(scale.of(self.admission_wait))
    }
}

/// provkit-aap's metrics of every client of a run, in one registry.
#[derive(Clone)]
pub struct AapCounters {
    registry: Arc<Registry>,
    metrics: AapMetrics,
}

impl std::fmt::Debug for AapCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AapCounters").finish_non_exhaustive()
    }
}

impl Default for AapCounters {
    fn default() -> Self {
        Self::new()
    }
}

/// A snapshot of [`AapCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AapSnapshot {
    /// Request attempts sent (every status).
    pub attempts: f64,
    /// Times the circuit opened (first opening and re-openings after a failed probe).
    pub opened: f64,
    /// Times the circuit went half-open (probes).
    pub half_open: f64,
    /// Times it closed.
    pub closed: f64,
    /// Requests refused by the open circuit (not sent).
    pub rejections: f64,
    /// Answers asking to wait (429s, 503s with `Retry-After`).
    pub rate_limited: f64,
    /// Retries of idempotent requests.
    pub retries: f64,
}

impl AapSnapshot {
    /// `self - earlier`.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            attempts: self.attempts - earlier.attempts,
            opened: self.opened - earlier.opened,
            half_open: self.half_open - earlier.half_open,
            closed: self.closed - earlier.closed,
            rejections: self.rejections - earlier.rejections,
            rate_limited: self.rate_limited - earlier.rate_limited,
            retries: self.retries - earlier.retries,
        }
    }
}

impl AapCounters {
    /// A registry with provkit-aap's metrics in it.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let metrics = AapMetrics::register(&mut registry);
        Self {
            registry: Arc::new(registry),
            metrics,
        }
    }

    /// The metrics to hand to every client ([`provkit_aap::AapClientBuilder::metrics`]).
    pub fn metrics(&self) -> AapMetrics {
        self.metrics.clone()
    }

    /// The registry's text (Prometheus exposition format).
    pub fn text(&self) -> String {
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// The current values.
    pub fn snapshot(&self) -> AapSnapshot {
        let text = self.text();
        AapSnapshot {
            attempts: sum(&text, "provkit_aap_requests_total", ""),
            opened: sum(
                &text,
                "provkit_aap_circuit_breaker_transitions_total",
                "state=\"open\"",
            ),
            half_open: sum(
                &text,
                "provkit_aap_circuit_breaker_transitions_total",
                "state=\"half_open\"",
            ),
            closed: sum(
                &text,
                "provkit_aap_circuit_breaker_transitions_total",
                "state=\"closed\"",
            ),
            rejections: sum(&text, "provkit_aap_circuit_rejections_total", ""),
            rate_limited: sum(&text, "provkit_aap_rate_limited_total", ""),
            retries: sum(&text, "provkit_aap_retries_total", ""),
        }
    }
}

/// The sum of the samples of `name` whose labels contain `label` (empty: all).
fn sum(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, labels) = series.split_once('{').unwrap_or((series, ""));
            (metric == name && labels.contains(label))
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_counts_runs_above_a_limit() {
        let p = PerSecond::new(TimeScale::new(1.0));
        *lock(&p.buckets) = vec![3, 9, 9, 2, 9, 0];
        let s = p.summary(8.0);
        assert_eq!(s.total, 32);
        assert_eq!((s.max, s.max_at), (9, 1));
        assert_eq!((s.above, s.longest_above, s.seconds, s.busy), (3, 2, 6, 5));
    }

    #[test]
    fn sums_samples_by_label() {
        let text = "# HELP x\nprovkit_aap_circuit_breaker_transitions_total{state=\"open\"} 3\n\
                    provkit_aap_circuit_breaker_transitions_total{state=\"closed\"} 1\n\
                    provkit_aap_requests_total{endpoint=\"job\",method=\"GET\",status=\"200\"} 7\n\
                    provkit_aap_requests_total{endpoint=\"launch\",method=\"POST\",status=\"201\"} 2\n";
        assert_eq!(
            sum(
                text,
                "provkit_aap_circuit_breaker_transitions_total",
                "state=\"open\""
            ),
            3.0
        );
        assert_eq!(sum(text, "provkit_aap_requests_total", ""), 9.0);
    }

    #[test]
    fn breaker_settings_scale() {
        let c = BreakerSettings::default().config(TimeScale::new(0.1));
        assert_eq!(c.get_failure_threshold(), 5);
        assert_eq!(c.get_admission_wait(), Duration::from_millis(100));
        let off = BreakerSettings {
            threshold: 0,
            ..BreakerSettings::default()
        };
        assert_eq!(off.config(TimeScale::new(0.1)).get_failure_threshold(), 0);
        let b = TimeScale::new(0.1).error_backoff(provkit_kube::ErrorBackoffConfig::default());
        assert_eq!(b.initial, Duration::from_millis(100));
        assert_eq!(b.max, Duration::from_secs(30));
    }

    #[test]
    fn the_event_series_ttl_scales() {
        assert_eq!(TimeScale::new(0.1).event_ttl(), Duration::from_secs(36));
        assert_eq!(
            TimeScale::new(1.0).event_ttl(),
            provkit_kube::recorder::DEFAULT_EVENT_TTL
        );
    }
}
