//! The client's typed errors.
//!
//! Every HTTP error carries a [`RequestContext`]: method, root-relative path (never the host's
//! credentials or headers), status and the server's `X-API-Request-Id` when present. Bodies are
//! summarised, never dumped: JSON `detail` and field errors are rendered, HTML pages reduced to
//! their title, everything capped.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was asked and what came back, attached to every HTTP error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestContext {
    /// HTTP method.
    pub method: http::Method,
    /// Root-relative path and query (no host, no credentials).
    pub path: String,
    /// Response status, when a response arrived.
    pub status: Option<http::StatusCode>,
    /// The server's `X-API-Request-Id`, when present.
    pub request_id: Option<String>,
    /// The server's `X-API-Product-Name` (`AWX`, …), when present. AWX's API views set it on
    /// every answer, errors included; Django-level 404s (an unknown path) and answers made by a
    /// proxy or load balancer in front of AWX do not carry it.
    pub product: Option<String>,
}

impl RequestContext {
    pub(crate) fn new(method: http::Method, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            status: None,
            request_id: None,
            product: None,
        }
    }
}

impl fmt::Display for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if let Some(status) = self.status {
            write!(f, " -> {}", status.as_u16())?;
        }
        if let Some(id) = &self.request_id {
            write!(f, " (request id {id})")?;
        }
        Ok(())
    }
}

/// One candidate of an ambiguous template lookup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateCandidate {
    /// Template id.
    pub id: u64,
    /// `job_template` or `workflow_job_template`.
    pub kind: String,
    /// Organization name, when the server reported it.
    pub organization: Option<String>,
}

impl fmt::Display for TemplateCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.id)?;
        if let Some(org) = &self.organization {
            write!(f, " in organization {org:?}")?;
        }
        Ok(())
    }
}

fn fmt_candidates(list: &[TemplateCandidate]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn fmt_detail(detail: &Option<String>) -> String {
    detail
        .as_deref()
        .map(|d| format!(": {d}"))
        .unwrap_or_default()
}

/// `field: messages; …` then the detail, without empty parts (a detail-only 400 renders as
/// `bad request: <detail>`).
fn fmt_bad_request(fields: &BTreeMap<String, Vec<String>>, detail: &Option<String>) -> String {
    fields
        .iter()
        .map(|(field, errors)| format!("{field}: {}", errors.join(" ")))
        .chain(detail.iter().cloned())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn fmt_retry_after(after: &Option<Duration>) -> String {
    after
        .map(|d| format!(", retry after {d:?}"))
        .unwrap_or_default()
}

/// Whole seconds, rounded up (so a message does not change with every millisecond).
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn fmt_hint(hint: &Option<String>) -> String {
    hint.as_deref()
        .map(|h| format!(" ({h})"))
        .unwrap_or_default()
}

/// Errors of the AAP client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 401: no, invalid or expired credentials.
    #[error(
        "{ctx}: unauthorized: the token is missing, invalid or expired (AAP 2.5+ gateway tokens expire; mint a new one) or the username/password is wrong{}",
        fmt_detail(detail)
    )]
    Unauthorized {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The server's `detail`.
        detail: Option<String>,
    },
    /// 401 from the controller reached through an AAP platform gateway, with credentials that
    /// are not a gateway token minted by this client (Basic auth, or a configured token). AAP 2.7
    /// refuses basic auth, sessions and controller-issued tokens at the component APIs; only
    /// gateway-issued tokens work. Detected from where the 401 came from, not from its text.
    #[error(
        "{ctx}: unauthorized at the controller behind the AAP platform gateway: AAP 2.7 accepts only gateway-issued tokens there (basic auth, sessions and controller-issued tokens are refused); mint one at /api/gateway/v1/tokens/ (AapClient::mint_gateway_token, or basic_auth with AapClientBuilder::mint_gateway_token), or replace an expired gateway token{}",
        fmt_detail(detail)
    )]
    GatewayTokenRequired {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The server's `detail`.
        detail: Option<String>,
    },
    /// 403: authenticated but not permitted (e.g. no execute permission, read-scoped token).
    #[error(
        "{ctx}: forbidden: the credentials are valid but not permitted to do this{}",
        fmt_detail(detail)
    )]
    Forbidden {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The server's `detail`.
        detail: Option<String>,
    },
    /// 404.
    #[error("{ctx}: not found{}{}", fmt_detail(detail), fmt_hint(hint))]
    NotFound {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The server's `detail`.
        detail: Option<String>,
        /// Why it may be a configuration problem (e.g. `/api/v2/` on an AAP 2.5+ gateway).
        hint: Option<String>,
    },
    /// 405 (e.g. cancelling a finished job).
    #[error("{ctx}: method not allowed{}", fmt_detail(detail))]
    MethodNotAllowed {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The server's `detail`.
        detail: Option<String>,
    },
    /// 429 (from a proxy or gateway in front of AAP).
    #[error("{ctx}: rate limited{}", fmt_retry_after(retry_after))]
    RateLimited {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The parsed `Retry-After` (seconds or HTTP-date).
        retry_after: Option<Duration>,
    },
    /// 5xx.
    #[error("{ctx}: server error: {summary}{}", fmt_retry_after(retry_after))]
    Server {
        /// Request context.
        ctx: Box<RequestContext>,
        /// Body summary (JSON detail, HTML title, or truncated text).
        summary: String,
        /// A `Retry-After` sent with a 503.
        retry_after: Option<Duration>,
    },
    /// 400 with the server's validation errors.
    #[error("{ctx}: bad request: {}", fmt_bad_request(fields, detail))]
    BadRequest {
        /// Request context.
        ctx: Box<RequestContext>,
        /// `detail` / `error` text, if any.
        detail: Option<String>,
        /// Field name → messages (`__all__` for non-field errors).
        fields: BTreeMap<String, Vec<String>>,
    },
    /// The server refuses a query filter (AWX: `Filtering on extra_vars is not allowed.`, a 403
    /// under production settings, a 400 under development settings). A request error, not an
    /// authorization failure.
    #[error("{ctx}: the server refuses this filter{}", fmt_detail(detail))]
    FilterRefused {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The server's `detail`.
        detail: Option<String>,
    },
    /// A search over a list stopped at the configured item cap
    /// ([`max_lookup_items`](crate::AapClientBuilder::max_lookup_items)) before it could finish, so
    /// the absence of a match is not proven.
    #[error(
        "{ctx}: the search stopped at the {cap}-item list cap without reaching the end; absence is not proven"
    )]
    ListIncomplete {
        /// Request context of the first page.
        ctx: Box<RequestContext>,
        /// The cap.
        cap: usize,
    },
    /// One call of a bounded idempotency lookup read its page budget
    /// ([`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call)) without
    /// reaching the end of the attempt's window: the absence of a match is not proven yet, and
    /// the next call continues after the last job this one read.
    #[error(
        "{ctx}: read {pages} pages of the attempt's window without reaching its end; the next lookup continues from there"
    )]
    LookupUnfinished {
        /// Request context of the call's first page.
        ctx: Box<RequestContext>,
        /// Pages this call read.
        pages: u32,
    },
    /// The job template does not prompt for variables on launch: AAP would accept a launch,
    /// drop its `extra_vars` (echoing them under `ignored_fields`) and run the playbook without
    /// the payload. Enable "Prompt on launch" for Variables (`ask_variables_on_launch: true`).
    #[error(
        "{} {name:?} (id {id}) does not prompt for variables on launch (ask_variables_on_launch is false), so AAP would run it without the payload; enable \"Prompt on launch\" for Variables on the template",
        kind.as_str()
    )]
    TemplateIgnoresExtraVars {
        /// Template name.
        name: String,
        /// Template id.
        id: u64,
        /// Template kind.
        kind: crate::types::TemplateKind,
    },
    /// The controller is migrating its database (302 to `/migrations_notran/` or an HTML page
    /// instead of JSON).
    #[error("{ctx}: the AAP server is upgrading or migrating its database; try again later")]
    Migrating {
        /// Request context.
        ctx: Box<RequestContext>,
    },
    /// A redirect the client refuses to follow (a `POST` is never re-sent as a `GET`).
    #[error("{ctx}: unexpected redirect to {location:?}; not followed")]
    Redirect {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The `Location` header.
        location: Option<String>,
    },
    /// Any other unexpected status (409, 413, 415, …).
    #[error("{ctx}: unexpected status: {summary}")]
    Status {
        /// Request context.
        ctx: Box<RequestContext>,
        /// Body summary.
        summary: String,
    },
    /// Not sent: the client's circuit breaker is open after a run of failed requests
    /// (connection errors, timeouts, 5xx) — or, after a failure, enough requests are already on
    /// their way to open it. Certainly not sent, so certainly no job was created; try again after
    /// `retry_after` (see [`CircuitBreakerConfig`](crate::CircuitBreakerConfig)).
    #[error(
        "{ctx}: not sent: the AAP circuit breaker is open after repeated failures; retry after {}s",
        ceil_secs(*retry_after)
    )]
    CircuitOpen {
        /// The request that was not sent (no status).
        ctx: Box<RequestContext>,
        /// When the breaker lets the next request (a probe) through.
        retry_after: Duration,
    },
    /// Not sent: the request's send-by time ([`LaunchRequest::send_by`](crate::LaunchRequest::send_by))
    /// passed while it waited in this client (circuit breaker admission, rate limiter). Certainly
    /// not sent, so certainly no job was created.
    #[error("{ctx}: not sent: its send-by time passed while it waited in the client")]
    SendByPassed {
        /// The request that was not sent (no status).
        ctx: Box<RequestContext>,
    },
    /// The request timed out.
    #[error("{ctx}: timed out")]
    Timeout {
        /// Request context.
        ctx: Box<RequestContext>,
        /// Underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// Connection-level failure (refused, reset, TLS).
    #[error("{ctx}: transport error{}", if *connect { " (could not connect)" } else { "" })]
    Transport {
        /// Request context.
        ctx: Box<RequestContext>,
        /// True when no connection was established (the request certainly was not sent).
        connect: bool,
        /// Underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// The response body could not be decoded.
    #[error("{ctx}: could not decode the response: {message}")]
    Decode {
        /// Request context.
        ctx: Box<RequestContext>,
        /// What was wrong (a truncated summary of the body, never the whole body).
        message: String,
        /// Underlying JSON error, if any.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// The response body exceeded the configured cap.
    #[error("{ctx}: response body larger than the {limit}-byte cap")]
    BodyTooLarge {
        /// Request context.
        ctx: Box<RequestContext>,
        /// The cap.
        limit: usize,
    },
    /// No template with that name.
    #[error("template {name:?} not found{}", organization.as_deref().map(|o| format!(" in organization {o:?}")).unwrap_or_default())]
    TemplateNotFound {
        /// Template name.
        name: String,
        /// Organization filter, if any.
        organization: Option<String>,
    },
    /// Several templates match the name.
    #[error(
        "template name {name:?} is ambiguous: {}; set an organization to choose",
        fmt_candidates(candidates)
    )]
    AmbiguousTemplate {
        /// Template name.
        name: String,
        /// The matches.
        candidates: Vec<TemplateCandidate>,
    },
    /// API root discovery failed.
    #[error("API discovery at {url} failed: {message}")]
    Discovery {
        /// The URL probed.
        url: String,
        /// What was wrong.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<Box<Error>>,
    },
    /// Invalid client configuration.
    #[error("invalid AAP client configuration: {message}")]
    Config {
        /// What is wrong.
        message: String,
        /// Underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The token file could not be read.
    #[error("cannot read the AAP token file {path}")]
    TokenFile {
        /// File path.
        path: std::path::PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The request context of an HTTP-level error.
    pub fn context(&self) -> Option<&RequestContext> {
        match self {
            Self::Unauthorized { ctx, .. }
            | Self::GatewayTokenRequired { ctx, .. }
            | Self::Forbidden { ctx, .. }
            | Self::NotFound { ctx, .. }
            | Self::MethodNotAllowed { ctx, .. }
            | Self::RateLimited { ctx, .. }
            | Self::Server { ctx, .. }
            | Self::BadRequest { ctx, .. }
            | Self::Migrating { ctx }
            | Self::Redirect { ctx, .. }
            | Self::Status { ctx, .. }
            | Self::Timeout { ctx, .. }
            | Self::CircuitOpen { ctx, .. }
            | Self::SendByPassed { ctx }
            | Self::Transport { ctx, .. }
            | Self::Decode { ctx, .. }
            | Self::FilterRefused { ctx, .. }
            | Self::ListIncomplete { ctx, .. }
            | Self::LookupUnfinished { ctx, .. }
            | Self::BodyTooLarge { ctx, .. } => Some(ctx),
            Self::Discovery {
                source: Some(inner),
                ..
            } => inner.context(),
            _ => None,
        }
    }

    /// HTTP status, when a response arrived.
    pub fn status(&self) -> Option<http::StatusCode> {
        self.context().and_then(|c| c.status)
    }

    /// The server's `X-API-Request-Id`, when present.
    pub fn request_id(&self) -> Option<&str> {
        self.context().and_then(|c| c.request_id.as_deref())
    }

    /// 404 (or a template that does not exist).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. } | Self::TemplateNotFound { .. })
    }

    /// The authoritative "no such object" of a detail endpoint (a purged or never-existing
    /// job): a 404 that AWX's API itself answered — it carries `X-API-Product-Name`, which AWX's
    /// API views set and Django-level 404s and proxies do not — with a JSON `detail`, to a
    /// request without a query string (a detail or action path: a list's `Invalid page.` 404
    /// answers a `?page=` query). The message text is not read: AWX says
    /// `No Job matches the given query.`, but Django REST framework versions that replace the
    /// message answer `Not found.` for the same condition. Other 404s (an HTML page, a
    /// gateway's or proxy's answer, an unknown path) are not proof that the object is gone.
    pub fn is_no_match(&self) -> bool {
        match self {
            Self::NotFound {
                ctx,
                detail: Some(_),
                ..
            } => ctx.product.is_some() && !ctx.path.contains('?'),
            _ => false,
        }
    }

    /// 405.
    pub fn is_method_not_allowed(&self) -> bool {
        matches!(self, Self::MethodNotAllowed { .. })
    }

    /// 401 / 403 (including [`Error::GatewayTokenRequired`]).
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            Self::Unauthorized { .. } | Self::GatewayTokenRequired { .. } | Self::Forbidden { .. }
        )
    }

    /// A 401 at the controller behind the platform gateway: use a gateway token (AAP 2.7).
    pub fn is_gateway_token_required(&self) -> bool {
        matches!(self, Self::GatewayTokenRequired { .. })
    }

    /// The `Retry-After` the server sent, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Server { retry_after, .. } => {
                *retry_after
            }
            Self::CircuitOpen { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// What went wrong in a few words, without the request (method, path, request id) or the
    /// server's text: what a caller puts after its own context ("failed to get job 5: server
    /// error (503)"), leaving the details to this error's own message, one step down the error
    /// chain. Stable across repeats of the same failure.
    ///
    /// ```
    /// let err = provkit_aap::Error::TemplateNotFound { name: "t".into(), organization: None };
    /// assert_eq!(err.brief(), "template not found");
    /// ```
    pub fn brief(&self) -> String {
        let code = || {
            self.status()
                .map(|s| format!(" ({})", s.as_u16()))
                .unwrap_or_default()
        };
        match self {
            Self::Unauthorized { .. } => format!("unauthorized{}", code()),
            Self::GatewayTokenRequired { .. } => "a gateway token is required (401)".into(),
            Self::Forbidden { .. } => format!("forbidden{}", code()),
            Self::NotFound { .. } => format!("not found{}", code()),
            Self::MethodNotAllowed { .. } => format!("method not allowed{}", code()),
            Self::RateLimited { .. } => format!("rate limited{}", code()),
            Self::Server { .. } => format!("server error{}", code()),
            Self::BadRequest { .. } => format!("bad request{}", code()),
            Self::FilterRefused { .. } => "the server refuses the filter".into(),
            Self::ListIncomplete { cap, .. } => {
                format!("list cap of {cap} items reached")
            }
            Self::LookupUnfinished { pages, .. } => {
                format!("lookup continues after {pages} pages")
            }
            Self::TemplateIgnoresExtraVars { .. } => {
                "the template does not prompt for variables on launch".into()
            }
            Self::Migrating { .. } => "AAP is migrating its database".into(),
            Self::Redirect { .. } => format!("unexpected redirect{}", code()),
            Self::Status { .. } => format!("unexpected status{}", code()),
            Self::CircuitOpen { .. } => "not sent: the AAP circuit breaker is open".into(),
            Self::SendByPassed { .. } => "not sent: its send-by time passed".into(),
            Self::Timeout { .. } => "timed out".into(),
            Self::Transport { connect: true, .. } => "could not connect".into(),
            Self::Transport { .. } => "the connection failed".into(),
            Self::Decode { .. } => "undecodable response".into(),
            Self::BodyTooLarge { .. } => "response body too large".into(),
            Self::TemplateNotFound { .. } => "template not found".into(),
            Self::AmbiguousTemplate { .. } => "ambiguous template name".into(),
            Self::Discovery { .. } => "API discovery failed".into(),
            Self::Config { .. } => "invalid client configuration".into(),
            Self::TokenFile { .. } => "cannot read the token file".into(),
        }
    }

    /// The circuit breaker refused to send the request ([`Error::CircuitOpen`]).
    pub fn is_circuit_open(&self) -> bool {
        matches!(self, Self::CircuitOpen { .. })
    }

    /// How long AAP asks callers to hold off, when it does: a 429 (its `Retry-After`, or
    /// `default` without one), a 503 carrying `Retry-After`, or an open circuit breaker. This is
    /// what the provider reports to the engine as a rate limit.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # fn check(err: &provkit_aap::Error) {
    /// if let Some(wait) = err.throttle(Duration::from_secs(10)) {
    ///     println!("AAP asks us to wait {wait:?}");
    /// }
    /// # }
    /// ```
    pub fn throttle(&self, default: Duration) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } => Some(retry_after.unwrap_or(default)),
            Self::Server {
                ctx,
                retry_after: Some(after),
                ..
            } if ctx.status.map(|s| s.as_u16()) == Some(503) => Some(*after),
            Self::CircuitOpen { retry_after, .. } => Some(*retry_after),
            Self::Discovery {
                source: Some(inner),
                ..
            } => inner.throttle(default),
            _ => None,
        }
    }

    /// Transient: worth retrying an **idempotent** request (429, 502, 503, 504, timeouts,
    /// connection errors).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. } | Self::Timeout { .. } | Self::Transport { .. } => true,
            Self::Server { ctx, .. } => matches!(ctx.status.map(|s| s.as_u16()), Some(502..=504)),
            _ => false,
        }
    }

    /// For a non-idempotent request (a launch): true when the server may have acted although no
    /// usable answer came back (timeout, reset after connecting, 5xx, undecodable 2xx). False
    /// when the request was certainly refused or never sent.
    pub fn is_outcome_unknown(&self) -> bool {
        match self {
            Self::Timeout { .. } | Self::Decode { .. } | Self::BodyTooLarge { .. } => true,
            Self::Transport { connect, .. } => !connect,
            Self::Server { .. } => true,
            Self::Status { ctx, .. } => ctx.status.is_some_and(|s| s.is_success()),
            _ => false,
        }
    }
}
