//! The state one [`AapClient`](crate::AapClient) shares across clones: the HTTP pool, where the
//! API lives, credentials, limits and the template cache. Behaviour lives in the modules layered
//! on top (`call` → `transport` → `discovery` → `session` → `pagination` → `client`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use provkit_core::Clock;

use crate::auth::Authenticator;
use crate::circuit::Breaker;
use crate::gateway_token::GatewayMinter;
use crate::key_scan::KeyScans;
use crate::rate_limit::RateLimiter;
use crate::retry::RetryConfig;
use crate::telemetry::Telemetry;
use crate::template_miss::Miss;
use crate::types::Template;

/// Where the controller API lives under the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ApiRoot {
    /// A known base path such as `/api/v2/` or `/api/controller/v2/`.
    Fixed(String),
    /// Discover from this API index path (normally `/api/`).
    Discover(String),
}

/// What discovery found: the controller API base and, behind an AAP 2.5+ platform gateway, the
/// gateway's API root (`/api/gateway/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Controller API base (`/api/v2/`, `/api/controller/v2/`).
    pub(crate) base: String,
    /// The platform gateway's root, when the controller is reached through one.
    pub(crate) gateway: Option<String>,
}

/// Template cache key: (name, organization).
pub(crate) type TemplateKey = (String, Option<String>);

/// Limits on what the client reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_body_bytes: usize,
    pub(crate) max_stdout_bytes: usize,
    pub(crate) max_list_items: usize,
    pub(crate) max_lookup_items: usize,
    pub(crate) lookup_pages_per_call: u32,
}

/// What the websocket of module `push` needs besides the credentials: the same TLS trust as the
/// HTTP pool (ALPN `http/1.1`), the user agent and the connect timeout.
#[derive(Clone, Debug)]
pub(crate) struct PushSettings {
    pub(crate) tls: Arc<rustls::ClientConfig>,
    pub(crate) user_agent: String,
    pub(crate) connect_timeout: std::time::Duration,
}

/// Shared client state.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) http: reqwest::Client,
    pub(crate) origin: String,
    pub(crate) root: ApiRoot,
    pub(crate) layout: tokio::sync::OnceCell<Layout>,
    /// The gateway's controller path, probed once for the "wrong base path" hint.
    pub(crate) gateway_hint: tokio::sync::OnceCell<Option<String>>,
    pub(crate) auth: Authenticator,
    /// Gateway token minting from username/password, when enabled.
    pub(crate) minter: Option<GatewayMinter>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) retry: RetryConfig,
    pub(crate) limiter: Option<RateLimiter>,
    /// The circuit breaker all clones share (and the metrics' state gauge reads).
    pub(crate) breaker: Arc<Breaker>,
    /// Metrics (feature `metrics`).
    pub(crate) telemetry: Telemetry,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_stdout_bytes: usize,
    pub(crate) max_list_items: usize,
    pub(crate) max_lookup_items: usize,
    pub(crate) lookup_pages_per_call: u32,
    pub(crate) organization: Option<String>,
    pub(crate) templates: RwLock<HashMap<TemplateKey, Template>>,
    /// Failed lookups (not found, forbidden, ambiguous) remembered for `template_miss_ttl`.
    pub(crate) template_misses: RwLock<HashMap<TemplateKey, Miss>>,
    /// How long a failed lookup is remembered (zero: not at all).
    pub(crate) template_miss_ttl: std::time::Duration,
    /// Single-flight for cold template lookups: one async lock per key being fetched.
    pub(crate) template_fetches:
        std::sync::Mutex<HashMap<TemplateKey, Arc<tokio::sync::Mutex<()>>>>,
    /// What idempotency-key lookups that failed part-way had read.
    pub(crate) key_scans: KeyScans,
    /// The websocket's connection settings (module `push`).
    pub(crate) push: PushSettings,
}

/// Everything [`Inner::new`] needs besides the HTTP pool.
#[derive(Debug)]
pub(crate) struct Parts {
    pub(crate) origin: String,
    pub(crate) root: ApiRoot,
    pub(crate) auth: Authenticator,
    pub(crate) minter: Option<GatewayMinter>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) retry: RetryConfig,
    pub(crate) limiter: Option<RateLimiter>,
    pub(crate) breaker: Arc<Breaker>,
    pub(crate) telemetry: Telemetry,
    pub(crate) limits: Limits,
    pub(crate) organization: Option<String>,
    pub(crate) template_miss_ttl: std::time::Duration,
    pub(crate) push: PushSettings,
}

impl Inner {
    pub(crate) fn new(http: reqwest::Client, parts: Parts) -> Self {
        Self {
            http,
            origin: parts.origin,
            root: parts.root,
            layout: tokio::sync::OnceCell::new(),
            gateway_hint: tokio::sync::OnceCell::new(),
            auth: parts.auth,
            minter: parts.minter,
            clock: parts.clock,
            retry: parts.retry,
            limiter: parts.limiter,
            breaker: parts.breaker,
            telemetry: parts.telemetry,
            max_body_bytes: parts.limits.max_body_bytes,
            max_stdout_bytes: parts.limits.max_stdout_bytes,
            max_list_items: parts.limits.max_list_items,
            max_lookup_items: parts.limits.max_lookup_items,
            lookup_pages_per_call: parts.limits.lookup_pages_per_call,
            organization: parts.organization,
            templates: RwLock::new(HashMap::new()),
            template_misses: RwLock::new(HashMap::new()),
            template_miss_ttl: parts.template_miss_ttl,
            template_fetches: std::sync::Mutex::new(HashMap::new()),
            key_scans: KeyScans::default(),
            push: parts.push,
        }
    }
}
