//! One request: rate limit, auth header, capped body read, error mapping, retries, tracing.

use std::time::SystemTime;

use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, DATE, LOCATION, RETRY_AFTER};
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::call::{Call, CallAuth, ERROR_BODY_CAP};
use crate::circuit::{CircuitState, Verdict};
use crate::error::{Error, RequestContext, Result};
use crate::inner::Inner;
use crate::response::{RawResponse, classify};

/// The request id header AAP sets on every response.
pub(crate) const REQUEST_ID: &str = "x-api-request-id";

/// The product header AWX's API views set on every answer (not Django-level 404s, not proxies).
pub(crate) const PRODUCT_NAME: &str = "x-api-product-name";

fn reqwest_error(ctx: RequestContext, source: reqwest::Error) -> Error {
    let ctx = Box::new(ctx);
    if source.is_connect() {
        Error::Transport {
            ctx,
            connect: true,
            source,
        }
    } else if source.is_timeout() {
        Error::Timeout { ctx, source }
    } else {
        Error::Transport {
            ctx,
            connect: false,
            source,
        }
    }
}

/// What an attempt tells the circuit breaker: connection errors, timeouts and 5xx are failures;
/// any other answer shows the server is up; an error before sending tells nothing.
fn verdict(result: &Result<RawResponse>) -> Verdict {
    match result {
        Ok(_) => Verdict::Healthy,
        Err(Error::Transport { .. } | Error::Timeout { .. }) => Verdict::Failed(None),
        Err(err @ Error::Server { .. }) => Verdict::Failed(err.retry_after()),
        Err(err) if err.status().is_some() => Verdict::Healthy,
        Err(_) => Verdict::Unknown,
    }
}

impl Inner {
    /// Sends `call`, retrying idempotent calls on transient failures; returns 2xx responses only.
    pub(crate) async fn execute(&self, call: &Call) -> Result<RawResponse> {
        let started = Instant::now();
        let mut retries = 0u32;
        let mut refreshed_token = false;
        loop {
            let span = tracing::debug_span!(
                "aap.request",
                otel.kind = "client",
                http.method = %call.method,
                http.path = %call.path,
                http.status_code = tracing::field::Empty,
                aap.request_id = tracing::field::Empty,
                attempt = retries + 1,
            );
            let result = self.attempt(call).instrument(span.clone()).await;
            let err = match result {
                Ok(resp) => {
                    span.record("http.status_code", resp.status.as_u16());
                    if let Some(id) = &resp.ctx.request_id {
                        span.record("aap.request_id", id.as_str());
                    }
                    return Ok(resp);
                }
                Err(err) => err,
            };
            if let Some(ctx) = err.context() {
                if let Some(status) = ctx.status {
                    span.record("http.status_code", status.as_u16());
                }
                if let Some(id) = &ctx.request_id {
                    span.record("aap.request_id", id.as_str());
                }
            }
            // A 401 rejects the request before anything happens, so one more try with a rotated
            // token file is safe even for a launch.
            if matches!(err, Error::Unauthorized { .. })
                && matches!(call.auth, CallAuth::Configured)
                && !refreshed_token
                && self.auth.refresh_after_unauthorized()
            {
                refreshed_token = true;
                tracing::info!(path = %call.path, "AAP token file changed after a 401; retrying once");
                continue;
            }
            if !(call.idempotent && err.is_retryable() && retries < self.retry.max_retries) {
                return Err(err);
            }
            let delay = self
                .retry
                .delay(retries, err.retry_after(), fastrand::f64());
            if err
                .retry_after()
                .is_some_and(|after| after > self.retry.max_backoff)
                || started.elapsed() + delay > self.retry.max_elapsed
            {
                return Err(err);
            }
            tracing::warn!(error = %err, retry_in = ?delay, retry = retries + 1, "transient AAP error; retrying");
            self.telemetry.retry(call);
            tokio::time::sleep(delay).await;
            retries += 1;
        }
    }

    /// One attempt, unless the circuit breaker refuses it; its outcome feeds the breaker (an
    /// attempt dropped before its outcome gives its breaker slot back).
    async fn attempt(&self, call: &Call) -> Result<RawResponse> {
        let permit = match self.breaker.admit().await {
            Ok(permit) => permit,
            Err(wait) => {
                self.telemetry.rejected(call);
                return Err(Error::CircuitOpen {
                    ctx: Box::new(RequestContext::new(call.method.clone(), call.path.clone())),
                    retry_after: wait,
                });
            }
        };
        if permit.is_probe() {
            tracing::info!(path = %call.path, "AAP circuit breaker half-open; this request probes");
            self.telemetry.circuit(CircuitState::HalfOpen);
        }
        let started = Instant::now();
        let result = self.send_once(call).await;
        self.telemetry.attempt(call, &result, started.elapsed());
        if let Some(state) = permit.record(verdict(&result)) {
            self.telemetry.circuit(state);
        }
        result
    }

    async fn send_once(&self, call: &Call) -> Result<RawResponse> {
        if let Some(limiter) = &self.limiter {
            limiter.acquire().await;
        }
        let mut ctx = RequestContext::new(call.method.clone(), call.path.clone());
        if call.send_by.is_some_and(|by| Instant::now() >= by) {
            return Err(Error::SendByPassed { ctx: Box::new(ctx) });
        }
        let url = format!("{}{}", self.origin, call.path);
        let mut req = self
            .http
            .request(call.method.clone(), url)
            .header(ACCEPT, call.accept);
        let header = match &call.auth {
            CallAuth::Configured => self.auth.header()?,
            CallAuth::Anonymous => None,
            CallAuth::Header(header) => Some(header.clone()),
        };
        if let Some(header) = header {
            req = req.header(AUTHORIZATION, header);
        }
        if let Some(body) = &call.body {
            req = req
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| reqwest_error(ctx.clone(), e))?;
        let status = resp.status();
        ctx.status = Some(status);
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        ctx.request_id = header(REQUEST_ID);
        ctx.product = header(PRODUCT_NAME);
        let content_type = header(CONTENT_TYPE.as_str());
        let location = header(LOCATION.as_str());
        let retry_after = header(RETRY_AFTER.as_str());
        let date = header(DATE.as_str());
        let success = status.is_success();
        let cap = if success { call.cap } else { ERROR_BODY_CAP };
        let mut body = Vec::new();
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => return Err(reqwest_error(ctx, e)),
            };
            let room = cap.saturating_sub(body.len());
            if chunk.len() > room {
                if success {
                    return Err(Error::BodyTooLarge {
                        ctx: Box::new(ctx),
                        limit: cap,
                    });
                }
                body.extend_from_slice(&chunk[..room]);
                break;
            }
            body.extend_from_slice(&chunk);
        }
        tracing::debug!(
            status = status.as_u16(),
            request_id = ctx.request_id.as_deref(),
            "AAP response"
        );
        let raw = RawResponse {
            status,
            content_type,
            location,
            retry_after,
            date,
            body,
            ctx,
        };
        if success {
            Ok(raw)
        } else {
            Err(classify(&raw, SystemTime::now()))
        }
    }
}
