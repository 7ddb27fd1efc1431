//! Fault injection: per path pattern and method, on every call, the N-th call or a seeded
//! fraction of calls, striking before the request changes state or after (response lost).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// When a fault strikes relative to the request's effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strike {
    /// Before the request is handled: no state changes (no job is created).
    Before,
    /// After the request was handled (e.g. the job was created); the real response is lost.
    After,
}

/// Which matching calls a fault hits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// Every matching call.
    Always,
    /// Only the N-th matching call (1-based).
    Nth(u64),
    /// The first N matching calls.
    FirstN(u64),
    /// Every matching call after the first N (which pass untouched): a fault that sets in
    /// once a request got through, e.g. a lookup's first page answered and the next refused.
    AfterFirst(u64),
    /// Each matching call with this probability (seeded, reproducible).
    Fraction(f64),
}

/// The `Retry-After` form of a 429 or 503.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryAfter {
    /// Delta seconds.
    Seconds(u64),
    /// An HTTP-date.
    Date(SystemTime),
}

impl RetryAfter {
    /// The header value: delta seconds or an IMF-fixdate.
    pub fn header_value(&self) -> String {
        match self {
            RetryAfter::Seconds(s) => s.to_string(),
            RetryAfter::Date(t) => httpdate::fmt_http_date(*t),
        }
    }
}

/// What the fault does.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum FaultAction {
    /// Answer with this status, body and content type (and extra headers).
    Respond {
        /// HTTP status.
        status: u16,
        /// Body text.
        body: String,
        /// `Content-Type`.
        content_type: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
    },
    /// Answer with this status, body and content type as a proxy or load balancer in front of
    /// AWX would: without the headers AWX's API views set (`X-API-Product-Name`,
    /// `X-API-Node`), like AWX's own Django-level answers (§13.3 of the observed exchanges).
    Proxied {
        /// HTTP status.
        status: u16,
        /// Body text.
        body: String,
        /// `Content-Type`.
        content_type: String,
    },
    /// Sleep this long, then continue normally (before) or deliver the real response late (after).
    Latency(Duration),
    /// Close the TCP connection abruptly (RST) without a response.
    ConnectionReset,
    /// Send the real response's body cut in half (valid HTTP, invalid JSON).
    TruncatedJson,
    /// Send a syntactically broken JSON body with status 200.
    MalformedJson,
}

impl FaultAction {
    /// A JSON body with the given status.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        FaultAction::Respond {
            status,
            body: body.to_string(),
            content_type: "application/json".into(),
            headers: Vec::new(),
        }
    }

    /// A JSON body with the given status, answered by a proxy in front of AWX
    /// ([`FaultAction::Proxied`]): e.g. a 404 `{"detail": "Not found."}` that is no proof
    /// that a job is gone.
    pub fn proxied_json(status: u16, body: &serde_json::Value) -> Self {
        FaultAction::Proxied {
            status,
            body: body.to_string(),
            content_type: "application/json".into(),
        }
    }

    /// 500 `{"detail": "A server error has occurred."}`.
    pub fn server_error() -> Self {
        FaultAction::json(
            500,
            &serde_json::json!({"detail": "A server error has occurred."}),
        )
    }

    /// A 502, 503 or 504 with an HTML body like an ingress or the gateway sends.
    pub fn gateway_html(status: u16) -> Self {
        let reason = match status {
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Time-out",
            _ => "Error",
        };
        FaultAction::Respond {
            status,
            body: format!(
                "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
            ),
            content_type: "text/html".into(),
            headers: Vec::new(),
        }
    }

    /// 429 with `Retry-After`.
    pub fn too_many_requests(retry_after: RetryAfter) -> Self {
        FaultAction::Respond {
            status: 429,
            body: serde_json::json!({"detail": "Request was throttled."}).to_string(),
            content_type: "application/json".into(),
            headers: vec![("Retry-After".into(), retry_after.header_value())],
        }
    }

    /// 503 with `Retry-After` and the HTML body an ingress or the gateway sends (AAP during
    /// maintenance or overload).
    pub fn service_unavailable(retry_after: RetryAfter) -> Self {
        match FaultAction::gateway_html(503) {
            FaultAction::Respond {
                status,
                body,
                content_type,
                ..
            } => FaultAction::Respond {
                status,
                body,
                content_type,
                headers: vec![("Retry-After".into(), retry_after.header_value())],
            },
            other => other,
        }
    }

    /// 302 to `/migrations_notran/` (database migration in progress).
    pub fn migrating() -> Self {
        FaultAction::Respond {
            status: 302,
            body: String::new(),
            content_type: "text/html; charset=utf-8".into(),
            headers: vec![("Location".into(), "/migrations_notran/".into())],
        }
    }
}

/// A fault rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// HTTP method to match (`None` = any).
    pub method: Option<String>,
    /// Path glob: `*` matches any run of characters (including `/`), e.g. `/api/*/launch/`.
    pub path: String,
    /// Which matching calls it hits.
    pub trigger: Trigger,
    /// Before or after the state change.
    pub strike: Strike,
    /// What happens.
    pub action: FaultAction,
}

impl Fault {
    /// A fault on `method` (e.g. `"POST"`) and path glob, striking every call before the state change.
    pub fn new(method: &str, path: &str, action: FaultAction) -> Self {
        Fault {
            method: Some(method.to_ascii_uppercase()),
            path: path.to_owned(),
            trigger: Trigger::Always,
            strike: Strike::Before,
            action,
        }
    }

    /// A fault on any method and this path glob (e.g. `"*"` for every route), striking every
    /// call before the state change.
    pub fn any_method(path: &str, action: FaultAction) -> Self {
        Fault {
            method: None,
            ..Fault::new("GET", path, action)
        }
    }

    /// Sets the trigger.
    #[must_use]
    pub fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = trigger;
        self
    }

    /// Strikes after the state change (the response is lost).
    #[must_use]
    pub fn after(mut self) -> Self {
        self.strike = Strike::After;
        self
    }

    /// Strikes before the state change.
    #[must_use]
    pub fn before(mut self) -> Self {
        self.strike = Strike::Before;
        self
    }
}

/// Identifier of an installed fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaultId(pub(crate) u64);

#[derive(Debug)]
pub(crate) struct Installed {
    pub id: FaultId,
    pub fault: Fault,
    pub seen: AtomicU64,
    pub hits: AtomicU64,
    pub rng: Mutex<fastrand::Rng>,
}

/// Glob match with `*` wildcards.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p = pattern.as_bytes();
    let t = text.as_bytes();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            pi += 1;
            mark = ti;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

impl Installed {
    /// Whether this call is hit (counts the call when it matches method and path).
    pub(crate) fn hits_call(&self, method: &str, path: &str) -> bool {
        if self.fault.method.as_deref().is_some_and(|m| m != method)
            || !glob(&self.fault.path, path)
        {
            return false;
        }
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        let hit = match self.fault.trigger {
            Trigger::Always => true,
            Trigger::Nth(k) => n == k,
            Trigger::FirstN(k) => n <= k,
            Trigger::AfterFirst(k) => n > k,
            Trigger::Fraction(f) => {
                let mut rng = self
                    .rng
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                rng.f64() < f
            }
        };
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::{Fault, FaultAction, FaultId, Installed, Trigger, glob};

    /// Which of the first `calls` matching calls a fault with `trigger` hits (1-based).
    fn hit_calls(trigger: Trigger, calls: u64) -> Vec<u64> {
        let installed = Installed {
            id: FaultId(1),
            fault: Fault::new("GET", "/x/", FaultAction::server_error()).trigger(trigger),
            seen: Default::default(),
            hits: Default::default(),
            rng: std::sync::Mutex::new(fastrand::Rng::with_seed(1)),
        };
        (1..=calls)
            .filter(|_| installed.hits_call("GET", "/x/"))
            .collect()
    }

    #[test]
    fn triggers_pick_their_calls() {
        assert_eq!(hit_calls(Trigger::Always, 4), [1, 2, 3, 4]);
        assert_eq!(hit_calls(Trigger::Nth(2), 4), [2]);
        assert_eq!(hit_calls(Trigger::FirstN(2), 4), [1, 2]);
        assert_eq!(hit_calls(Trigger::AfterFirst(1), 4), [2, 3, 4]);
        assert_eq!(hit_calls(Trigger::AfterFirst(0), 2), [1, 2]);
    }

    #[test]
    fn globbing() {
        assert!(glob("/api/*/launch/", "/api/v2/job_templates/9/launch/"));
        assert!(glob("*", "/x"));
        assert!(glob("/api/v2/jobs/*/", "/api/v2/jobs/1/"));
        assert!(!glob("/api/v2/jobs/*/", "/api/v2/jobs/1/cancel"));
        assert!(!glob("/api/v2/ping/", "/api/v2/ping/x"));
    }
}
