//! Where the transport reports what happened to each request: to the metrics of feature
//! `metrics` when the client has them, to nothing otherwise (this module keeps the `cfg`s out of
//! the transport).

use std::time::Duration;

use crate::call::Call;
use crate::circuit::{Breaker, CircuitState};
use crate::error::{Error, Result};
use crate::response::RawResponse;

/// The client's metrics sink (empty without feature `metrics`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Telemetry {
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::AapMetrics>,
}

/// The `status` label of an attempt's result.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
fn status_label(result: &Result<RawResponse>) -> String {
    match result {
        Ok(resp) => resp.status.as_u16().to_string(),
        Err(err) => match (err.status(), err) {
            (Some(status), _) => status.as_u16().to_string(),
            (None, Error::Transport { connect: true, .. }) => "connect_error".into(),
            (None, Error::Transport { .. }) => "transport_error".into(),
            (None, Error::Timeout { .. }) => "timeout".into(),
            (None, Error::SendByPassed { .. }) => "not_sent".into(),
            (None, _) => "error".into(),
        },
    }
}

#[cfg_attr(not(feature = "metrics"), allow(unused_variables, clippy::unused_self))]
impl Telemetry {
    /// The client being built shares `breaker`: the state gauge reads it at scrape time.
    pub(crate) fn bind(&self, breaker: &std::sync::Arc<Breaker>) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.bind(breaker);
        }
    }

    /// An attempt that was sent (or failed before an answer), with its latency.
    pub(crate) fn attempt(&self, call: &Call, result: &Result<RawResponse>, elapsed: Duration) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            let endpoint = crate::metrics::endpoint_class(&call.method, &call.path);
            let sent = match result {
                // Never written: no latency to observe.
                Err(
                    Error::Config { .. } | Error::TokenFile { .. } | Error::SendByPassed { .. },
                ) => None,
                _ => Some(elapsed),
            };
            m.request(endpoint, &call.method, status_label(result), sent);
            if let Err(err) = result
                && err.throttle(Duration::ZERO).is_some()
            {
                m.rate_limited(endpoint);
            }
        }
    }

    /// A retry of `call` is about to be made.
    pub(crate) fn retry(&self, call: &Call) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.retry(crate::metrics::endpoint_class(&call.method, &call.path));
        }
    }

    /// The open circuit refused `call`.
    pub(crate) fn rejected(&self, call: &Call) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.rejected(crate::metrics::endpoint_class(&call.method, &call.path));
        }
    }

    /// The circuit breaker entered `state`.
    pub(crate) fn circuit(&self, state: CircuitState) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.transition(state);
        }
    }
}
