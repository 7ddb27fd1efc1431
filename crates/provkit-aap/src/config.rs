//! [`AapClientBuilder`]: credentials, timeouts, TLS, proxy, retries, rate limit, circuit
//! breaker; `from_env`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use provkit_core::{Clock, SystemClock};

use crate::auth::{Authenticator, Credentials};
use crate::circuit::{Breaker, CircuitBreakerConfig};
use crate::error::{Error, Result};
use crate::gateway_token::{GatewayMinter, GatewayToken, GatewayTokenOptions};
use crate::inner::{ApiRoot, Inner, Limits, Parts};
use crate::rate_limit::{RateLimit, RateLimiter};
use crate::retry::RetryConfig;
use crate::telemetry::Telemetry;
use crate::tls::{TlsSettings, client_config};

fn normalize_base(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        format!("/{trimmed}/")
    }
}

/// Default [`AapClientBuilder::lookup_pages_per_call`]: 4 pages (800 jobs).
pub const DEFAULT_LOOKUP_PAGES_PER_CALL: u32 = 4;
/// Splits a configured URL into its origin and API root.
///
/// - `https://host` or `https://host/api/` → discovery through `/api/`;
/// - `https://host/api/controller` (the Go operator's `OSAC_AAP_URL` form) → `/api/controller/v2/`;
/// - a path ending in a version segment (`/api/v2`, `/api/controller/v2/`) → used as is;
/// - any other path prefix `P` → discovery through `P/api/`.
pub(crate) fn split_url(url: &Url) -> Result<(String, ApiRoot)> {
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Error::Config {
            message: format!(
                "AAP URL must be http(s)://host[...], got {:?}",
                url.as_str()
            ),
            source: None,
        });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::Config {
            message: "credentials in the AAP URL are not supported; use token or basic_auth".into(),
            source: None,
        });
    }
    let origin = url.origin().ascii_serialization();
    let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
    let path = normalize_base(&segments.join("/"));
    let last = segments.last().copied().unwrap_or_default();
    let is_version =
        last.len() > 1 && last.starts_with('v') && last[1..].bytes().all(|b| b.is_ascii_digit());
    let root = if is_version {
        ApiRoot::Fixed(path)
    } else if segments.ends_with(&["api", "controller"]) {
        ApiRoot::Fixed(format!("{path}v2/"))
    } else if last == "api" {
        ApiRoot::Discover(path)
    } else if segments.is_empty() {
        ApiRoot::Discover("/api/".into())
    } else {
        ApiRoot::Discover(format!("{path}api/"))
    };
    Ok((origin, root))
}

/// Builds an [`AapClient`](crate::AapClient).
///
/// ```no_run
/// # async fn run() -> Result<(), provkit_aap::Error> {
/// use std::time::Duration;
/// use provkit_aap::{AapClient, RateLimit, RetryConfig};
/// let client = AapClient::builder("https://aap.example.com")
///     .token("my-token")
///     .timeout(Duration::from_secs(30))
///     .retry(RetryConfig::default().max_retries(3))
///     .rate_limit(RateLimit::new(10.0, 20))
///     .build()?;
/// let template = client.get_template("osac-create-virtual-network").await?;
/// # let _ = template; Ok(()) }
/// ```
#[derive(Debug)]
#[must_use]
pub struct AapClientBuilder {
    url: String,
    base_path: Option<String>,
    credentials: Credentials,
    connect_timeout: Duration,
    timeout: Duration,
    tls: TlsSettings,
    proxy_from_env: bool,
    proxy: Option<String>,
    user_agent: String,
    retry: RetryConfig,
    rate_limit: Option<RateLimit>,
    circuit_breaker: CircuitBreakerConfig,
    telemetry: Telemetry,
    token_reload_interval: Duration,
    max_body_bytes: usize,
    max_stdout_bytes: usize,
    max_list_items: usize,
    max_lookup_items: usize,
    lookup_pages_per_call: u32,
    organization: Option<String>,
    template_miss_ttl: Duration,
    gateway_minting: Option<GatewayTokenOptions>,
    clock: Option<Arc<dyn Clock>>,
}

impl AapClientBuilder {
    pub(crate) fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            base_path: None,
            credentials: Credentials::None,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            tls: TlsSettings {
                system_roots: true,
                ..TlsSettings::default()
            },
            proxy_from_env: true,
            proxy: None,
            user_agent: concat!("provkit-aap/", env!("CARGO_PKG_VERSION")).to_owned(),
            retry: RetryConfig::default(),
            rate_limit: None,
            circuit_breaker: CircuitBreakerConfig::default(),
            telemetry: Telemetry::default(),
            token_reload_interval: Duration::from_secs(1),
            max_body_bytes: 16 * 1024 * 1024,
            max_stdout_bytes: 64 * 1024 * 1024,
            max_list_items: 10_000,
            max_lookup_items: 100_000,
            lookup_pages_per_call: DEFAULT_LOOKUP_PAGES_PER_CALL,
            organization: None,
            template_miss_ttl: Duration::from_secs(10),
            gateway_minting: None,
            clock: None,
        }
    }

    /// Bearer token (`Authorization: Bearer …`).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.credentials = Credentials::Token(SecretString::from(token.into()));
        self
    }

    /// Authenticate with a gateway token minted by
    /// [`AapClient::mint_gateway_token`](crate::AapClient::mint_gateway_token) (bearer).
    pub fn gateway_token(mut self, token: &GatewayToken) -> Self {
        self.credentials = Credentials::Token(token.secret().clone());
        self
    }

    /// Bearer token read from a file and re-read when the file changes (checked at most every
    /// [`token_reload_interval`](Self::token_reload_interval), and again after any 401).
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.credentials = Credentials::TokenFile(path.into());
        self
    }

    /// HTTP Basic credentials.
    pub fn basic_auth(mut self, username: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Credentials::Basic {
            username: username.into(),
            password: SecretString::from(password.into()),
        };
        self
    }

    /// Any [`Credentials`].
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// Use this API base path (`/api/v2/`, `/api/controller/v2/`) instead of discovery.
    pub fn base_path(mut self, path: impl AsRef<str>) -> Self {
        self.base_path = Some(normalize_base(path.as_ref()));
        self
    }

    /// TCP/TLS connect timeout (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Whole-request timeout (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Trust this CA bundle (PEM) in addition to the system roots.
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls.extra_ca_pem.push(pem.into());
        self
    }

    /// Whether to trust the system's CA roots (default true).
    pub fn system_roots(mut self, on: bool) -> Self {
        self.tls.system_roots = on;
        self
    }

    /// **Insecure**: accept any server certificate. An explicit opt-in for labs only.
    pub fn danger_accept_invalid_certs(mut self, on: bool) -> Self {
        self.tls.insecure_skip_verify = on;
        self
    }

    /// Use `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` from the environment (default true).
    pub fn proxy_from_env(mut self, on: bool) -> Self {
        self.proxy_from_env = on;
        self
    }

    /// Send every request through this proxy URL.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// `User-Agent` header.
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }

    /// Retry policy for idempotent calls (launches are never retried).
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// Client-side request-rate limit (token bucket) shared by every request of this client.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// The fleet-wide circuit breaker shared by every clone of this client (default
    /// [`CircuitBreakerConfig::default`]: open after 5 failed attempts in a row, 10 s cool-down,
    /// one probe per second; [`CircuitBreakerConfig::disabled`] turns it off). While it is open,
    /// requests fail fast with [`Error::CircuitOpen`], which the provider reports to the engine as
    /// a rate limit.
    pub fn circuit_breaker(mut self, config: CircuitBreakerConfig) -> Self {
        self.circuit_breaker = config;
        self
    }

    /// Record this client's requests, retries, rate limits and circuit breaker state in `metrics`
    /// (feature `metrics`; see [`crate::metrics`]).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: crate::metrics::AapMetrics) -> Self {
        self.telemetry.metrics = Some(metrics);
        self
    }

    /// How often a token file is checked for changes (default 1 s; zero = every request).
    pub fn token_reload_interval(mut self, interval: Duration) -> Self {
        self.token_reload_interval = interval;
        self
    }

    /// Cap on JSON response bodies (default 16 MiB).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Cap on job stdout downloads (default 64 MiB).
    pub fn max_stdout_bytes(mut self, bytes: usize) -> Self {
        self.max_stdout_bytes = bytes;
        self
    }

    /// Cap on items collected from a paginated list (default 10 000).
    pub fn max_list_items(mut self, items: usize) -> Self {
        self.max_list_items = items;
        self
    }

    /// Cap on items a search through a paginated list reads (the lookup by idempotency key,
    /// default 100 000). Such a search keeps one page at a time, so the cap bounds requests,
    /// not memory: a mass deletion launches thousands of jobs of one template within the
    /// lookup's window, and a search that stops short cannot prove the attempt's job absent
    /// ([`Error::ListIncomplete`](crate::Error::ListIncomplete): the engine launches nothing).
    pub fn max_lookup_items(mut self, items: usize) -> Self {
        self.max_lookup_items = items;
        self
    }

    /// Pages one call of a bounded idempotency lookup (one attempt's window,
    /// [`AapClient::first_job_with_key_between`](crate::AapClient::first_job_with_key_between))
    /// reads at most (default [`DEFAULT_LOOKUP_PAGES_PER_CALL`], at least 1). A window holding
    /// more jobs is read over several calls, each continuing after the last id the previous one
    /// read (the window is fixed, so nothing read is read again); a call that stops there
    /// answers [`Error::LookupUnfinished`](crate::Error::LookupUnfinished) and the engine
    /// launches nothing until a later call reaches the window's end. It bounds what one
    /// reconcile asks of AAP, and how long a walk is exposed to faults.
    pub fn lookup_pages_per_call(mut self, pages: u32) -> Self {
        self.lookup_pages_per_call = pages.max(1);
        self
    }

    /// Default organization (name) for template lookups by name.
    pub fn organization(mut self, name: impl Into<String>) -> Self {
        self.organization = Some(name.into());
        self
    }

    /// How long a failed template lookup — not found, forbidden, ambiguous — is remembered and
    /// answered without a request (default 10 s; zero turns the negative cache off). Server and
    /// connection errors are never remembered. Measured with the [`clock`](Self::clock).
    pub fn template_miss_ttl(mut self, ttl: Duration) -> Self {
        self.template_miss_ttl = ttl;
        self
    }

    /// With [`basic_auth`](Self::basic_auth) credentials: on an AAP 2.5+ deployment (the
    /// controller behind the platform gateway, as discovered or configured) mint a gateway token
    /// with these options on first use and authenticate with it instead of Basic auth (AAP 2.7
    /// accepts nothing else at the controller); renew it before it expires (mint the new one,
    /// then revoke the old one) and re-mint once after a 401. Plain AWX keeps Basic auth.
    ///
    /// ```
    /// use provkit_aap::{AapClient, GatewayTokenOptions};
    /// let client = AapClient::builder("https://aap.example.com")
    ///     .basic_auth("admin", "password")
    ///     .mint_gateway_token(GatewayTokenOptions::new("osac-operator"))
    ///     .build()?;
    /// # let _ = client; Ok::<(), provkit_aap::Error>(())
    /// ```
    pub fn mint_gateway_token(mut self, options: GatewayTokenOptions) -> Self {
        self.gateway_minting = Some(options);
        self
    }

    /// The clock gateway token renewal and the negative template cache are decided by (default:
    /// the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The shared client state (see `AapClientBuilder::build` in `client`).
    pub(crate) fn into_inner(self) -> Result<Inner> {
        let url = Url::parse(self.url.trim()).map_err(|e| Error::Config {
            message: format!("invalid AAP URL {:?}", self.url),
            source: Some(Box::new(e)),
        })?;
        let (origin, mut root) = split_url(&url)?;
        if let Some(base) = self.base_path {
            root = ApiRoot::Fixed(base);
        }
        let auth = Authenticator::new(&self.credentials, self.token_reload_interval)?;
        let minter = match (self.gateway_minting, &self.credentials) {
            (None, _) => None,
            (Some(options), Credentials::Basic { username, password }) => Some(GatewayMinter::new(
                username.clone(),
                password.clone(),
                options,
            )),
            (Some(_), _) => {
                return Err(Error::Config {
                    message: "gateway token minting needs basic_auth(username, password)".into(),
                    source: None,
                });
            }
        };
        let tls = client_config(&self.tls)?;
        // The websocket (module `push`) speaks HTTP/1.1 over the same trust settings.
        let mut push_tls = tls.clone();
        push_tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let push = crate::inner::PushSettings {
            tls: Arc::new(push_tls),
            user_agent: self.user_agent.clone(),
            connect_timeout: self.connect_timeout,
        };
        let mut http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.connect_timeout)
            .timeout(self.timeout)
            .user_agent(self.user_agent)
            .tcp_nodelay(true);
        if !self.proxy_from_env {
            http = http.no_proxy();
        }
        if let Some(proxy) = &self.proxy {
            let proxy = reqwest::Proxy::all(proxy.as_str()).map_err(|e| Error::Config {
                message: "invalid proxy URL".into(),
                source: Some(Box::new(e)),
            })?;
            http = http.proxy(proxy);
        }
        let http = http.build().map_err(|e| Error::Config {
            message: "cannot build the HTTP client".into(),
            source: Some(Box::new(e)),
        })?;
        let breaker = Arc::new(Breaker::new(self.circuit_breaker));
        self.telemetry.bind(&breaker);
        Ok(Inner::new(
            http,
            Parts {
                origin,
                root,
                auth,
                minter,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                retry: self.retry,
                limiter: self.rate_limit.map(RateLimiter::new),
                breaker,
                telemetry: self.telemetry,
                limits: Limits {
                    max_body_bytes: self.max_body_bytes,
                    max_stdout_bytes: self.max_stdout_bytes,
                    max_list_items: self.max_list_items,
                    max_lookup_items: self.max_lookup_items,
                    lookup_pages_per_call: self.lookup_pages_per_call,
                },
                organization: self.organization,
                template_miss_ttl: self.template_miss_ttl,
                push,
            },
        ))
    }
}

fn parse_bool(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Ok(true),
        "0" | "false" | "no" | "off" | "n" | "f" | "" => Ok(false),
        other => Err(Error::Config {
            message: format!("{name}={other:?} is not a boolean"),
            source: None,
        }),
    }
}

/// Builds a client builder from environment-like lookups (see [`AapClient::from_env`]).
pub(crate) fn builder_from_lookup(
    get: impl Fn(&str) -> Option<String>,
) -> Result<AapClientBuilder> {
    let get = |key: &str| get(key).filter(|v| !v.trim().is_empty());
    let host = get("AAP_HOSTNAME")
        .or_else(|| get("AAP_HOST"))
        .or_else(|| get("OSAC_AAP_URL"))
        .ok_or_else(|| Error::Config {
            message: "set AAP_HOSTNAME (or AAP_HOST, or OSAC_AAP_URL) to the AAP URL".into(),
            source: None,
        })?;
    let host = if host.contains("://") {
        host
    } else {
        format!("https://{host}")
    };
    let mut builder = AapClientBuilder::new(host);
    if let Some(token) = get("AAP_TOKEN").or_else(|| get("OSAC_AAP_TOKEN")) {
        builder = builder.token(token);
    } else if let Some(path) = get("AAP_TOKEN_FILE") {
        builder = builder.token_file(path);
    } else if let Some(user) = get("AAP_USERNAME") {
        builder = builder.basic_auth(user, get("AAP_PASSWORD").unwrap_or_default());
        if let Some(v) = get("AAP_MINT_GATEWAY_TOKEN")
            && parse_bool("AAP_MINT_GATEWAY_TOKEN", &v)?
        {
            builder = builder.mint_gateway_token(GatewayTokenOptions::default());
        }
    }
    let mut insecure = false;
    if let Some(v) = get("AAP_VALIDATE_CERTS") {
        insecure |= !parse_bool("AAP_VALIDATE_CERTS", &v)?;
    }
    for key in ["AAP_INSECURE_SKIP_VERIFY", "OSAC_AAP_INSECURE_SKIP_VERIFY"] {
        if let Some(v) = get(key) {
            insecure |= parse_bool(key, &v)?;
        }
    }
    builder = builder.danger_accept_invalid_certs(insecure);
    if let Some(v) = get("AAP_REQUEST_TIMEOUT").or_else(|| get("AAP_TIMEOUT")) {
        let secs: f64 = v.trim().parse().map_err(|_| Error::Config {
            message: format!("AAP_REQUEST_TIMEOUT={v:?} is not a number of seconds"),
            source: None,
        })?;
        let timeout = Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| Error::Config {
                message: format!("AAP_REQUEST_TIMEOUT={v:?} must be positive"),
                source: None,
            })?;
        builder = builder.timeout(timeout);
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn url_forms() {
        let cases = [
            (
                "https://aap.example.com",
                "https://aap.example.com",
                ApiRoot::Discover("/api/".into()),
            ),
            (
                "https://aap.example.com/",
                "https://aap.example.com",
                ApiRoot::Discover("/api/".into()),
            ),
            (
                "https://aap.example.com/api",
                "https://aap.example.com",
                ApiRoot::Discover("/api/".into()),
            ),
            (
                "https://aap.example.com/api/",
                "https://aap.example.com",
                ApiRoot::Discover("/api/".into()),
            ),
            (
                "https://aap.example.com/api/controller",
                "https://aap.example.com",
                ApiRoot::Fixed("/api/controller/v2/".into()),
            ),
            (
                "http://osac-aap/api/controller/",
                "http://osac-aap",
                ApiRoot::Fixed("/api/controller/v2/".into()),
            ),
            (
                "https://h:8443/api/v2",
                "https://h:8443",
                ApiRoot::Fixed("/api/v2/".into()),
            ),
            (
                "https://h/api/controller/v2/",
                "https://h",
                ApiRoot::Fixed("/api/controller/v2/".into()),
            ),
            (
                "https://h/awx",
                "https://h",
                ApiRoot::Discover("/awx/api/".into()),
            ),
        ];
        for (raw, origin, root) in cases {
            let (o, r) = split_url(&Url::parse(raw).unwrap()).unwrap();
            assert_eq!((o.as_str(), r), (origin, root), "{raw}");
        }
        assert!(split_url(&Url::parse("https://user:pw@h/").unwrap()).is_err());
        assert!(split_url(&Url::parse("ftp://h/").unwrap()).is_err());
    }

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn env_variables() {
        let b = builder_from_lookup(lookup(&[
            ("AAP_HOSTNAME", "aap.example.com"),
            ("AAP_TOKEN", "t0k3n"),
            ("AAP_VALIDATE_CERTS", "false"),
            ("AAP_REQUEST_TIMEOUT", "12.5"),
        ]))
        .unwrap();
        assert_eq!(b.url, "https://aap.example.com");
        assert!(matches!(b.credentials, Credentials::Token(_)));
        assert!(b.tls.insecure_skip_verify);
        assert_eq!(b.timeout, Duration::from_millis(12_500));
        assert!(!format!("{b:?}").contains("t0k3n"));

        let go = builder_from_lookup(lookup(&[
            ("OSAC_AAP_URL", "http://osac-aap/api/controller"),
            ("OSAC_AAP_TOKEN", "x"),
            ("OSAC_AAP_INSECURE_SKIP_VERIFY", "true"),
        ]))
        .unwrap();
        assert_eq!(go.url, "http://osac-aap/api/controller");
        assert!(go.tls.insecure_skip_verify);
        assert!(matches!(go.credentials, Credentials::Token(_)));

        let basic = builder_from_lookup(lookup(&[
            ("AAP_HOST", "https://h"),
            ("AAP_USERNAME", "admin"),
            ("AAP_PASSWORD", "pw"),
        ]))
        .unwrap();
        assert!(matches!(basic.credentials, Credentials::Basic { .. }));
        assert!(!basic.tls.insecure_skip_verify);
        assert_eq!(basic.timeout, Duration::from_secs(30));

        let preferred = builder_from_lookup(lookup(&[
            ("AAP_HOSTNAME", "a"),
            ("AAP_HOST", "b"),
            ("OSAC_AAP_URL", "c"),
        ]))
        .unwrap();
        assert_eq!(preferred.url, "https://a");

        assert!(builder_from_lookup(lookup(&[])).is_err());
        assert!(
            builder_from_lookup(lookup(&[
                ("AAP_HOSTNAME", "h"),
                ("AAP_VALIDATE_CERTS", "maybe")
            ]))
            .is_err()
        );
        assert!(
            builder_from_lookup(lookup(&[
                ("AAP_HOSTNAME", "h"),
                ("AAP_REQUEST_TIMEOUT", "-1")
            ]))
            .is_err()
        );
    }
}
