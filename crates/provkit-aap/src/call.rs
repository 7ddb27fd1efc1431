//! [`Call`]: one request to make, as the transport, the metrics and the operations see it (a
//! leaf module, so the layers above and beside the transport need not import it).

use http::Method;

/// Error bodies are read up to this many bytes (then summarised).
pub(crate) const ERROR_BODY_CAP: usize = 64 * 1024;

/// The `Authorization` header of a call.
#[derive(Clone, Debug)]
pub(crate) enum CallAuth {
    /// The configured credentials (static, or the token file).
    Configured,
    /// None (discovery, ping).
    Anonymous,
    /// This header (a minted gateway token, or the Basic header that mints one).
    Header(http::HeaderValue),
}

/// A request to make.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub(crate) method: Method,
    /// Root-relative path and query.
    pub(crate) path: String,
    pub(crate) body: Option<Vec<u8>>,
    /// Safe to repeat (GET, cancel): retried on transient failures.
    pub(crate) idempotent: bool,
    /// Which `Authorization` header to send.
    pub(crate) auth: CallAuth,
    /// Success-body cap.
    pub(crate) cap: usize,
    /// Accept header.
    pub(crate) accept: &'static str,
    /// The latest time the request may be written (checked after the client's own waits).
    pub(crate) send_by: Option<tokio::time::Instant>,
}

impl Call {
    pub(crate) fn get(path: String, cap: usize) -> Self {
        Self {
            method: Method::GET,
            path,
            body: None,
            idempotent: true,
            auth: CallAuth::Configured,
            cap,
            accept: "application/json",
            send_by: None,
        }
    }

    pub(crate) fn delete(path: String, auth: CallAuth) -> Self {
        Self {
            method: Method::DELETE,
            path,
            body: None,
            idempotent: true,
            auth,
            cap: ERROR_BODY_CAP,
            accept: "application/json",
            send_by: None,
        }
    }

    pub(crate) fn post(path: String, body: Vec<u8>, idempotent: bool, cap: usize) -> Self {
        Self {
            method: Method::POST,
            path,
            body: Some(body),
            idempotent,
            auth: CallAuth::Configured,
            cap,
            accept: "application/json",
            send_by: None,
        }
    }
}
