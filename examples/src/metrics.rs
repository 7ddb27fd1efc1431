//! Run metrics: reconcile counts and CPU, peak RSS, process CPU.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// A future wrapper that adds up the time spent inside `poll` (the CPU the wrapped code used on
/// its thread, not the time it waited for IO).
#[derive(Debug)]
pub struct Timed<F> {
    inner: Pin<Box<F>>,
    spent: Duration,
}

impl<F: Future> Timed<F> {
    /// Wraps `fut`.
    pub fn new(fut: F) -> Self {
        Self {
            inner: Box::pin(fut),
            spent: Duration::ZERO,
        }
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = (F::Output, Duration);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let t0 = Instant::now();
        let r = self.inner.as_mut().poll(cx);
        let spent = self.spent + t0.elapsed();
        self.spent = spent;
        r.map(|out| (out, spent))
    }
}

/// Counters of one run (the harness's; the engine's own figures come from the fakes).
#[derive(Debug, Default)]
pub struct RunMetrics {
    /// Reconciles run (every replica and incarnation).
    pub reconciles: AtomicU64,
    /// Reconciles that returned an error (requeued by the error policy).
    pub errors: AtomicU64,
    /// Finalizer removals the API server accepted.
    pub finalizers_released: AtomicU64,
    /// Finalizer removals while AAP did not show the deprovision job the object's status last
    /// recorded as successful.
    pub early_releases: AtomicU64,
    /// AAP launches received for an object whose status writes were being refused.
    pub launches_while_refused: AtomicU64,
    /// Nanoseconds spent inside the reconcile futures' `poll` (engine, provider, client).
    pub reconcile_cpu_nanos: AtomicU64,
    /// The largest single-reconcile CPU, in nanoseconds.
    pub reconcile_cpu_max_nanos: AtomicU64,
    /// Details of early releases and launches while refused (for the report).
    pub details: Mutex<Vec<String>>,
    /// The last reconciles of each object, when `FLEET_DEBUG` is set (see [`Trail`]).
    pub trail: Trail,
}

/// The last few reconciles of each object (when it ran, the version and deletion it saw, what
/// it returned), kept only when the `FLEET_DEBUG` environment variable is set: the reports
/// print them for objects that did not get where they should.
#[derive(Debug)]
pub struct Trail {
    on: bool,
    started: Instant,
    by_object: Mutex<std::collections::HashMap<String, std::collections::VecDeque<String>>>,
}

impl Default for Trail {
    fn default() -> Self {
        Self {
            on: std::env::var_os("FLEET_DEBUG").is_some(),
            started: Instant::now(),
            by_object: Mutex::default(),
        }
    }
}

impl Trail {
    /// Entries kept per object.
    const KEEP: usize = 8;

    /// Whether the trail is kept.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Records one reconcile of `object` (a no-op unless the trail is on).
    pub fn record(&self, object: &str, entry: impl FnOnce() -> String) {
        if !self.on {
            return;
        }
        let line = format!(
            "[{:.1} s wall] {}",
            self.started.elapsed().as_secs_f64(),
            entry()
        );
        let mut map = self
            .by_object
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let q = map.entry(object.to_owned()).or_default();
        if q.len() == Self::KEEP {
            q.pop_front();
        }
        q.push_back(line);
    }

    /// The last reconciles of `object`, oldest first.
    pub fn of(&self, object: &str) -> Vec<String> {
        self.by_object
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(object)
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl RunMetrics {
    /// Adds one reconcile's CPU.
    pub fn add_cpu(&self, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.reconcile_cpu_nanos.fetch_add(n, Ordering::Relaxed);
        self.reconcile_cpu_max_nanos.fetch_max(n, Ordering::Relaxed);
    }

    /// Mean CPU per reconcile.
    pub fn cpu_per_reconcile(&self) -> Duration {
        let n = self.reconciles.load(Ordering::Relaxed).max(1);
        Duration::from_nanos(self.reconcile_cpu_nanos.load(Ordering::Relaxed) / n)
    }

    /// A counter's value.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Counts `counter` and keeps `detail` (the first 20).
    pub fn violation(&self, counter: &AtomicU64, detail: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        let mut d = self
            .details
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if d.len() < 20 {
            d.push(detail);
        }
    }
}

/// Peak resident set size (`VmHWM` of `/proc/self/status`), in bytes; `None` off Linux.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|k| k * 1024)
}

/// Current resident set size (`VmRSS`), in bytes.
pub fn rss_bytes() -> Option<u64> {
    proc_status_kib("VmRSS:").map(|k| k * 1024)
}

fn proc_status_kib(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU time of the whole process (`/proc/self/stat`, assuming the usual 100 ticks/s).
pub fn process_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// Formats bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let m = bytes as f64 / (1024.0 * 1024.0);
    format!("{m:.1} MiB")
}

/// Formats a duration compactly (`850 µs`, `12.3 ms`, `4.56 s`, `2m05s`).
pub fn fmt_duration(d: Duration) -> String {
    let us = d.as_micros();
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else if d.as_secs() < 60 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        if s >= 3600 {
            format!("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
        } else {
            format!("{}m{:02}s", s / 60, s % 60)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn proc_readers_work_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().unwrap() >= rss_bytes().unwrap() / 2);
            assert!(process_cpu().is_some());
        }
    }

    #[test]
    fn durations_format() {
        assert_eq!(fmt_duration(Duration::from_micros(850)), "850 µs");
        assert_eq!(fmt_duration(Duration::from_millis(12)), "12.0 ms");
        assert_eq!(fmt_duration(Duration::from_secs(125)), "2m05s");
    }
}
