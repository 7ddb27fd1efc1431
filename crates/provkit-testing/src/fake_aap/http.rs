//! The request pipeline: faults, trailing-slash rule, authentication, dispatch, common headers,
//! request log and counters.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;
use tokio::time::Instant;

use axum::body::Body;
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
use serde_json::json;

use super::app::{
    App, Ctx, FORBIDDEN, NOT_FOUND, ResetConnection, Resp, UNAUTHENTICATED, WWW_AUTHENTICATE,
};
use super::faults::{FaultAction, Installed, Strike};
use super::request_log::{LoggedRequest, redact};
use super::routes::{self, Route};
use super::spec::Scope;
use crate::observe::{ObservedRequest, Phase, Verdict, verdict};

impl App {
    fn matching_faults(&self, method: &str, path: &str) -> Vec<Arc<Installed>> {
        if !self.faults_on.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let list = self
            .faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        list.iter()
            .filter(|f| f.hits_call(method, path))
            .cloned()
            .collect()
    }

    /// Handles one request (the whole pipeline).
    pub(crate) async fn handle(self: Arc<Self>, req: Request<Body>) -> Response<Body> {
        let t0 = Instant::now();
        let (parts, body) = req.into_parts();
        let method = parts.method.as_str().to_owned();
        let path = parts.uri.path().to_owned();
        let query = parts.uri.query().unwrap_or("").to_owned();
        let now = self.clock.now();
        let (bytes, too_large) = match axum::body::to_bytes(body, self.max_body).await {
            Ok(b) => (b, false),
            Err(_) => (axum::body::Bytes::new(), true),
        };
        let observer = self.observer.get();
        let ua = parts
            .headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map_or("", |ua| ua.split('/').next().unwrap_or_default().trim())
            .to_owned();
        let mut observed = ObservedRequest {
            method: &method,
            path: &path,
            query: &query,
            client: &ua,
            body: &bytes,
            status: None,
        };
        if verdict(observer.as_ref(), &observed, Phase::Received) == Verdict::Abandon {
            return std::future::pending().await;
        }
        let faults = self.matching_faults(&method, &path);
        let (mut reset, resp) = match first_fault_action(&faults, Strike::Before).await {
            Some(FaultAction::ConnectionReset) => (true, None),
            Some(action) => (false, Some(fault_response(action, None))),
            None => (false, None),
        };
        let mut authenticated = false;
        let mut allow = "";
        let route_for_counter;
        let mut resp = match (reset, resp) {
            (true, _) => {
                route_for_counter = Route::NotFound;
                Resp::empty(0)
            }
            (false, Some(r)) => {
                route_for_counter = Route::NotFound;
                r
            }
            (false, None) if too_large => {
                route_for_counter = Route::NotFound;
                Resp::text(
                    413,
                    "<html><body><h1>413 Request Entity Too Large</h1></body></html>".into(),
                    "text/html",
                )
            }
            (false, None) => {
                let (r, route, authed) =
                    self.dispatch(&method, &path, &query, &parts.headers, &bytes, now);
                authenticated = authed;
                allow = route.allow();
                route_for_counter = route;
                r
            }
        };
        if !reset {
            match first_fault_action(&faults, Strike::After).await {
                Some(FaultAction::ConnectionReset) => reset = true,
                Some(action) => resp = fault_response(action, Some(resp)),
                None => {}
            }
        }
        let status = if reset { 0 } else { resp.status };
        self.counters
            .record(route_for_counter.endpoint(&method), status);
        if self.ring.enabled() {
            self.ring.push(LoggedRequest {
                at: now,
                method: method.clone(),
                path: path.clone(),
                query: query.clone(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_owned(),
                            redact(k.as_str(), &String::from_utf8_lossy(v.as_bytes())),
                        )
                    })
                    .collect(),
                body: String::from_utf8_lossy(&bytes).into_owned(),
                status,
            });
        }
        observed.status = Some(status);
        if verdict(observer.as_ref(), &observed, Phase::Handled) == Verdict::Abandon {
            return std::future::pending().await;
        }
        // Called before the answer is built; the transport writes it right after.
        verdict(observer.as_ref(), &observed, Phase::Answered);
        if reset {
            self.counters.record_reset();
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r.extensions_mut().insert(ResetConnection);
            return r;
        }
        self.finish(resp, &parts.headers, allow, authenticated, t0)
    }

    fn finish(
        &self,
        resp: Resp,
        req_headers: &HeaderMap,
        allow: &str,
        authenticated: bool,
        t0: Instant,
    ) -> Response<Body> {
        let status = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut out = Response::new(Body::from(resp.body));
        *out.status_mut() = status;
        let h = out.headers_mut();
        let mut set = |name: &str, value: &str| {
            if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
                h.insert(n, v);
            }
        };
        if resp.status != 204 && (resp.django || (resp.status != 301 && resp.status != 302)) {
            set("content-type", resp.content_type);
        }
        let request_id = req_headers
            .get("x-api-request-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| is_uuid4(v))
            .map_or_else(new_request_id, str::to_owned);
        set("x-api-request-id", &request_id);
        if !resp.django {
            set("x-api-node", &self.node);
        }
        let elapsed = format!("{:.3}s", t0.elapsed().as_secs_f64());
        set("x-api-time", &elapsed);
        set("x-api-total-time", &elapsed);
        if !resp.django {
            set("x-api-product-name", self.product_name());
        }
        if authenticated {
            set("x-api-product-version", &self.version);
        }
        if !allow.is_empty() {
            set("allow", allow);
        }
        if resp.status == 401 {
            set("www-authenticate", WWW_AUTHENTICATE);
        }
        // AWX's nginx writes `Date` from the host clock, the clock `created` is read from; the
        // fake's clock, not hyper's default (the system clock), so a test's `ManualClock` holds.
        let date = SystemTime::from(self.clock.now());
        if date >= SystemTime::UNIX_EPOCH {
            set("date", &httpdate::fmt_http_date(date));
        }
        set("vary", "Accept, Accept-Language, Origin, Cookie");
        for (name, value) in &resp.headers {
            set(name, value);
        }
        out
    }

    /// Routes and handles a request under the state lock; returns the response, the route and
    /// whether the caller was authenticated.
    fn dispatch(
        &self,
        method: &str,
        path: &str,
        query: &str,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> (Resp, Route, bool) {
        // Trailing-slash rule: 301 to the slashed path when that path exists (also for POST).
        if !path.ends_with('/') {
            let slashed = format!("{path}/");
            let route = routes::route(self.mode, &slashed);
            if route != Route::NotFound {
                let location = if query.is_empty() {
                    slashed
                } else {
                    format!("{slashed}?{query}")
                };
                // Django's redirect: an empty text/html body.
                return (
                    Resp::text(301, String::new(), "text/html; charset=utf-8")
                        .header("location", location)
                        .django_level(),
                    Route::NotFound,
                    false,
                );
            }
            return (
                Resp::detail(404, NOT_FOUND).django_level(),
                Route::NotFound,
                false,
            );
        }
        let route = routes::route(self.mode, path);
        if route == Route::NotFound {
            return (Resp::detail(404, NOT_FOUND).django_level(), route, false);
        }
        let caller = self.authenticate(headers, now, matches!(route, Route::Api { .. }));
        let authed = caller.is_some();
        if caller.is_none() && !route.anonymous_ok() {
            return (Resp::detail(401, UNAUTHENTICATED), route, false);
        }
        let allowed = route.allow();
        if method == "OPTIONS" {
            return (
                Resp::json(200, &routes::options::metadata(&route)),
                route,
                authed,
            );
        }
        let effective = if method == "HEAD" { "GET" } else { method };
        if !allowed.split(", ").any(|m| m == effective) {
            return (Resp::method_not_allowed(method), route, authed);
        }
        if !matches!(effective, "GET") && caller.as_ref().is_some_and(|c| c.scope == Scope::Read) {
            return (Resp::detail(403, FORBIDDEN), route, authed);
        }
        let ctx = Ctx {
            method: effective,
            path,
            query,
            headers,
            body,
            now,
            caller,
        };
        let resp = match &route {
            Route::ApiRoot => routes::root::api_root(self),
            Route::ControllerRoot => routes::root::controller_root(),
            Route::GatewayRoot => routes::root::gateway_root(),
            Route::GatewayTokens => routes::tokens::tokens(self, &ctx, "/api/gateway/v1/", None),
            Route::GatewayToken(id) => {
                routes::tokens::token_detail(self, &ctx, "/api/gateway/v1/", *id)
            }
            Route::Api { prefix, api } => routes::api(self, &ctx, prefix, api),
            Route::NotFound => Resp::detail(404, NOT_FOUND),
        };
        (resp, route, authed)
    }
}

/// Sleeps through the latencies of the `strike` faults up to the first other action, which it
/// returns.
async fn first_fault_action(faults: &[Arc<Installed>], strike: Strike) -> Option<&FaultAction> {
    for f in faults.iter().filter(|f| f.fault.strike == strike) {
        match &f.fault.action {
            FaultAction::Latency(d) => tokio::time::sleep(*d).await,
            action => return Some(action),
        }
    }
    None
}

/// A fault's `Content-Type` as the fake sends it.
fn content_type_of(content_type: &str) -> &'static str {
    match content_type {
        "application/json" => "application/json",
        "text/html" => "text/html",
        "text/plain" => "text/plain",
        _ => "text/html; charset=utf-8",
    }
}

fn fault_response(action: &FaultAction, real: Option<Resp>) -> Resp {
    match action {
        FaultAction::Respond {
            status,
            body,
            content_type,
            headers,
        } => {
            let mut r = Resp::text(*status, body.clone(), content_type_of(content_type));
            for (k, v) in headers {
                let name: &'static str = match k.to_ascii_lowercase().as_str() {
                    "retry-after" => "retry-after",
                    "location" => "location",
                    _ => "x-fake-aap-fault",
                };
                r.headers.push((name, v.clone()));
            }
            r
        }
        FaultAction::Proxied {
            status,
            body,
            content_type,
        } => Resp::text(*status, body.clone(), content_type_of(content_type)).django_level(),
        FaultAction::TruncatedJson => {
            let mut r =
                real.unwrap_or_else(|| Resp::json(200, &json!({"count": 0, "results": []})));
            let keep = r.body.len() / 2;
            r.body.truncate(keep.max(1).min(r.body.len()));
            r.content_type = "application/json";
            r
        }
        FaultAction::MalformedJson => {
            let status = real.as_ref().map_or(200, |r| r.status);
            Resp::text(
                status,
                "{\"id\": 1, \"status\": \"pend".into(),
                "application/json",
            )
        }
        FaultAction::Latency(_) | FaultAction::ConnectionReset => {
            real.unwrap_or_else(|| Resp::empty(500))
        }
    }
}

/// A valid UUID4 (hyphenated or 32 hex digits) as django-guid accepts it.
pub(crate) fn is_uuid4(s: &str) -> bool {
    let hex: String = if s.len() == 36 {
        let b = s.as_bytes();
        if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
            return false;
        }
        s.chars().filter(|c| *c != '-').collect()
    } else if s.len() == 32 {
        s.to_owned()
    } else {
        return false;
    };
    hex.len() == 32
        && hex.bytes().all(|c| c.is_ascii_hexdigit())
        && hex.as_bytes()[12] == b'4'
        && matches!(
            hex.as_bytes()[16].to_ascii_lowercase(),
            b'8' | b'9' | b'a' | b'b'
        )
}

fn new_request_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    use super::is_uuid4;

    #[test]
    fn uuid4_validation() {
        assert!(is_uuid4("3f2b8c1e-9a4d-4e7b-8c2d-1a2b3c4d5e6f"));
        assert!(is_uuid4("3f2b8c1e9a4d4e7b8c2d1a2b3c4d5e6f"));
        assert!(!is_uuid4("3f2b8c1e-9a4d-1e7b-8c2d-1a2b3c4d5e6f"));
        assert!(!is_uuid4("3f2b8c1e-9a4d-4e7b-cc2d-1a2b3c4d5e6f"));
        assert!(!is_uuid4("not-a-uuid"));
        assert!(!is_uuid4("3f2b8c1e-9a4d-4e7b-8c2d-1a2b3c4d5e6g"));
    }
}
