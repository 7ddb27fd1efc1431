//! Request log (bounded ring, credentials redacted) and lock-free per-endpoint counters.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};

/// One logged request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Server clock at arrival.
    pub at: DateTime<Utc>,
    /// HTTP method.
    pub method: String,
    /// Path (no query).
    pub path: String,
    /// Raw query string (`""` when none).
    pub query: String,
    /// Headers; `Authorization`, `Cookie` and `X-DAB-JW-TOKEN` values are replaced by `<redacted>`.
    pub headers: Vec<(String, String)>,
    /// Body (lossy UTF-8).
    pub body: String,
    /// Response status (0 when the connection was reset).
    pub status: u16,
}

/// Endpoint kinds counted by [`Counters`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// `/api/`, `/api/controller/`, version roots.
    Root,
    /// `ping/`
    Ping,
    /// `me/`
    Me,
    /// Template lists (`job_templates/`, `workflow_job_templates/`, `unified_job_templates/`).
    TemplateList,
    /// Template detail and `survey_spec/`.
    TemplateDetail,
    /// `GET …/launch/`
    LaunchInfo,
    /// `POST …/launch/`
    Launch,
    /// Job lists (`jobs/`, `workflow_jobs/`, `unified_jobs/`).
    JobList,
    /// `GET jobs/<id>/` and `GET workflow_jobs/<id>/`.
    JobDetail,
    /// `…/cancel/`
    Cancel,
    /// `stdout/`
    Stdout,
    /// `workflow_nodes/`
    WorkflowNodes,
    /// `job_events/`
    JobEvents,
    /// Token endpoints.
    Tokens,
    /// Anything else (404s, redirects, …).
    Other,
}

impl Endpoint {
    const ALL: [Endpoint; 15] = [
        Endpoint::Root,
        Endpoint::Ping,
        Endpoint::Me,
        Endpoint::TemplateList,
        Endpoint::TemplateDetail,
        Endpoint::LaunchInfo,
        Endpoint::Launch,
        Endpoint::JobList,
        Endpoint::JobDetail,
        Endpoint::Cancel,
        Endpoint::Stdout,
        Endpoint::WorkflowNodes,
        Endpoint::JobEvents,
        Endpoint::Tokens,
        Endpoint::Other,
    ];

    fn index(self) -> usize {
        Endpoint::ALL
            .iter()
            .position(|e| *e == self)
            .unwrap_or(Endpoint::ALL.len() - 1)
    }
}

/// Request counters: one atomic per endpoint kind and per status class (no locks).
#[derive(Debug, Default)]
pub struct Counters {
    by_endpoint: [AtomicU64; 15],
    by_class: [AtomicU64; 6],
    total: AtomicU64,
    resets: AtomicU64,
}

impl Counters {
    pub(crate) fn record(&self, endpoint: Endpoint, status: u16) {
        self.total.fetch_add(1, Ordering::Relaxed);
        self.by_endpoint[endpoint.index()].fetch_add(1, Ordering::Relaxed);
        let class = usize::from(status / 100).min(5);
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_reset(&self) {
        self.resets.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests to an endpoint kind.
    pub fn endpoint(&self, endpoint: Endpoint) -> u64 {
        self.by_endpoint[endpoint.index()].load(Ordering::Relaxed)
    }

    /// Responses with a status in `class`xx (1–5; 0 counts connection resets).
    pub fn status_class(&self, class: u16) -> u64 {
        self.by_class[usize::from(class).min(5)].load(Ordering::Relaxed)
    }

    /// All requests.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Connections reset by fault injection.
    pub fn resets(&self) -> u64 {
        self.resets.load(Ordering::Relaxed)
    }
}

/// The bounded request ring (capacity 0 = off: nothing is stored and no lock is taken).
#[derive(Debug)]
pub(crate) struct RequestRing {
    capacity: AtomicU64,
    ring: Mutex<VecDeque<LoggedRequest>>,
}

impl RequestRing {
    pub(crate) fn new(capacity: usize) -> Self {
        RequestRing {
            capacity: AtomicU64::new(capacity as u64),
            ring: Mutex::new(VecDeque::new()),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity as u64, Ordering::Relaxed);
        let mut ring = self
            .ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while ring.len() > capacity {
            ring.pop_front();
        }
    }

    pub(crate) fn push(&self, entry: LoggedRequest) {
        let cap = usize::try_from(self.capacity.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        if cap == 0 {
            return;
        }
        let mut ring = self
            .ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while ring.len() >= cap {
            ring.pop_front();
        }
        ring.push_back(entry);
    }

    pub(crate) fn snapshot(&self) -> Vec<LoggedRequest> {
        self.ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    pub(crate) fn clear(&self) {
        self.ring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}

/// Redacts credential headers.
pub(crate) fn redact(name: &str, value: &str) -> String {
    match name.to_ascii_lowercase().as_str() {
        "authorization" | "cookie" | "x-dab-jw-token" | "proxy-authorization" => {
            match value.split_once(' ') {
                Some((scheme, _)) => format!("{scheme} <redacted>"),
                None => "<redacted>".to_owned(),
            }
        }
        _ => value.to_owned(),
    }
}
