//! What push wake-ups (issue 28) change in a fleet run, measured: AAP job `GET`s per job, AAP
//! requests per resource, the completion latency (a provision job finished in the fake AAP →
//! the status write recording it `Succeeded` accepted by the API server, in scenario time), and
//! the push stream's own counters (wake-ups, unknown jobs dropped, re-poll bursts after each
//! reconnect, connections dropped by the run).

use std::fmt::Write as _;
use std::time::Duration;

use provkit_kube::push::PushStats;
use provkit_testing::fake_aap::{Endpoint, WebsocketStats};

use crate::harness::Harness;
use crate::report::EndpointCounts;

/// Targets of issue 28 (10,000 resources, no chaos).
const GETS_PER_JOB_TARGET: f64 = 1.1;
const REQUESTS_PER_RESOURCE_TARGET: f64 = 6.3;
const MEDIAN_LATENCY_TARGET: Duration = Duration::from_secs(1);

/// Completion latencies in scenario time.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Latency {
    /// Provision jobs measured.
    pub count: usize,
    /// The median.
    pub median: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

/// The push figures of a fleet run.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PushReport {
    /// Whether the run used push wake-ups.
    pub on: bool,
    /// The safety-net poll interval while the stream was healthy (scenario time).
    pub safety_net: Option<Duration>,
    /// `GET jobs/<id>/` requests per AAP job.
    pub job_gets_per_job: f64,
    /// AAP requests per resource.
    pub requests_per_resource: f64,
    /// Completion latency.
    pub latency: Latency,
    /// The wake-ups' counters, summed over every incarnation of every replica.
    pub stats: PushStats,
    /// The fake AAP's websocket counters.
    pub websocket: WebsocketStats,
    /// Connections the run dropped on purpose (without a close frame).
    pub drops_injected: u64,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn sum(a: PushStats, b: &PushStats) -> PushStats {
    let mut s = a;
    s.woken += b.woken;
    s.unknown += b.unknown;
    s.late += b.late;
    s.bursts += b.bursts;
    s.repolled += b.repolled;
    s.largest_burst = s.largest_burst.max(b.largest_burst);
    s.last_burst = b.last_burst;
    s.drops += b.drops;
    s.spread += b.spread;
    s.tracked += b.tracked;
    s.health = b.health;
    s
}

impl PushReport {
    /// Measures a finished run: `requests` the fake AAP counted, `jobs` AAP jobs, `resources`.
    pub fn measure(
        h: &Harness,
        requests: &EndpointCounts,
        jobs: usize,
        resources: usize,
        drops_injected: u64,
    ) -> Self {
        let scale = h.config.scale;
        let aap = h.backend.aap();
        let finished: std::collections::HashMap<String, chrono::DateTime<chrono::Utc>> = aap
            .jobs()
            .into_iter()
            .filter_map(|j| Some((j.id.to_string(), j.finished?)))
            .collect();
        let mut latencies: Vec<Duration> = h
            .records
            .succeeded_at()
            .iter()
            .filter_map(|(id, written)| {
                let ended = finished.get(id)?;
                let wall = (*written - *ended).to_std().unwrap_or_default();
                Some(scale.production(wall))
            })
            .collect();
        latencies.sort();
        let latency = Latency {
            count: latencies.len(),
            median: percentile(&latencies, 0.5),
            p99: percentile(&latencies, 0.99),
            max: latencies.last().copied().unwrap_or_default(),
        };
        let stats = h
            .push
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(provkit_kube::push::PushWakeups::stats)
            .fold(PushStats::default(), |a, b| sum(a, &b));
        #[allow(clippy::cast_precision_loss)]
        Self {
            on: h.config.push.is_some(),
            safety_net: h.config.push,
            job_gets_per_job: requests.get(Endpoint::JobDetail) as f64 / jobs.max(1) as f64,
            requests_per_resource: requests.total() as f64 / resources.max(1) as f64,
            latency,
            stats,
            websocket: aap.websocket_stats(),
            drops_injected,
        }
    }

    /// The report's lines.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let met = |ok: bool| if ok { "met" } else { "MISSED" };
        let l = &self.latency;
        let _ = writeln!(
            out,
            "\njob completion: push wake-ups {} · AAP job GETs per job {:.2}{} · AAP requests per resource {:.2}{}",
            if self.on { "ON" } else { "off (polling only)" },
            self.job_gets_per_job,
            if self.on {
                format!(
                    " (target ≤ {GETS_PER_JOB_TARGET}: {})",
                    met(self.job_gets_per_job <= GETS_PER_JOB_TARGET)
                )
            } else {
                String::new()
            },
            self.requests_per_resource,
            if self.on {
                format!(
                    " (target ≤ {REQUESTS_PER_RESOURCE_TARGET}: {})",
                    met(self.requests_per_resource <= REQUESTS_PER_RESOURCE_TARGET)
                )
            } else {
                String::new()
            },
        );
        let _ = writeln!(
            out,
            "  completion latency (provision job finished in AAP → status Succeeded written, scenario time, {} jobs): median {:.2} s{} · p99 {:.2} s · max {:.2} s",
            l.count,
            l.median.as_secs_f64(),
            if self.on {
                format!(
                    " (target ≤ 1 s: {})",
                    met(l.median <= MEDIAN_LATENCY_TARGET)
                )
            } else {
                String::new()
            },
            l.p99.as_secs_f64(),
            l.max.as_secs_f64(),
        );
        if self.on {
            let s = &self.stats;
            let w = &self.websocket;
            #[allow(clippy::cast_precision_loss)]
            let mean_burst = s.repolled as f64 / s.bursts.max(1) as f64;
            let _ = writeln!(
                out,
                "  push: {} objects woken by a final status ({} of them recorded after it arrived) · {} final statuses of unknown jobs dropped · safety-net poll {} s while healthy",
                s.woken,
                s.late,
                s.unknown,
                self.safety_net.map_or(0, |d| d.as_secs()),
            );
            let _ = writeln!(
                out,
                "  stream: {} connections ({} refused), {} dropped by the run without a close frame, {} status messages sent · {} (re)subscriptions, re-poll burst per (re)subscription {:.1} objects mean, {} max ({} re-polls in all) · {} drops spread {} wake-ups over one normal interval",
                w.connections,
                w.refused,
                self.drops_injected,
                w.messages,
                s.bursts,
                mean_burst,
                s.largest_burst,
                s.repolled,
                s.drops,
                s.spread,
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_secs).collect();
        assert_eq!(percentile(&d, 0.5), Duration::from_secs(50));
        assert_eq!(percentile(&d, 0.99), Duration::from_secs(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
        assert_eq!(
            percentile(&[Duration::from_secs(3)], 0.99),
            Duration::from_secs(3)
        );
    }
}
