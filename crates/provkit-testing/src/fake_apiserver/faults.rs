//! Injected faults: which requests they hit (verb, resource, name, client) and what they do.

use std::time::Duration;

use super::status::ApiStatus;

/// The API verb of a request, as the server's audit log and RBAC name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// GET of one object (or its `/status`).
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
}

impl Verb {
    /// The lowercase name (`get`, `list`, …).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
        }
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an injected fault does to a request it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultEffect {
    /// 409 `Conflict`, as for a stale `resourceVersion`.
    Conflict,
    /// 429 `TooManyRequests` with `Retry-After` (and `details.retryAfterSeconds`).
    TooManyRequests {
        /// Seconds in `Retry-After`.
        retry_after_secs: u64,
    },
    /// 500 `InternalError`.
    InternalError,
    /// 503 `ServiceUnavailable`, optionally with `Retry-After`.
    ServiceUnavailable {
        /// Seconds in `Retry-After`, if any.
        retry_after_secs: Option<u64>,
    },
    /// 403 `Forbidden`, as RBAC answers.
    Forbidden,
    /// 410 `Expired`: a watch gets an `ERROR` event with it (the client must relist); other
    /// verbs get the status as the response.
    Gone,
    /// The request is answered normally after this delay.
    Latency(Duration),
    /// A watch stream is closed after delivering this many events.
    DropWatch {
        /// Events delivered before the stream ends.
        after_events: usize,
    },
    /// Every event of a matching watch reaches the client this much later than it happened
    /// (a lagging informer cache).
    WatchLag(Duration),
}

/// An injected fault: an effect and the requests it applies to (every unset filter matches).
///
/// ```
/// use provkit_testing::fake_apiserver::{Fault, FaultEffect, Verb};
/// let fault = Fault::new(FaultEffect::Conflict)
///     .verb(Verb::Patch)
///     .resource("virtualnetworks")
///     .client("replica-a")
///     .times(2);
/// # let _ = fault;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub(crate) effect: FaultEffect,
    pub(crate) verb: Option<Verb>,
    pub(crate) resource: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) client: Option<String>,
    pub(crate) subresource: Option<Option<String>>,
    pub(crate) remaining: Option<u32>,
    pub(crate) skip: u32,
    pub(crate) probability: f64,
}

impl Fault {
    /// A fault with `effect` on every request, until removed.
    #[must_use]
    pub fn new(effect: FaultEffect) -> Self {
        Self {
            effect,
            verb: None,
            resource: None,
            name: None,
            client: None,
            subresource: None,
            remaining: None,
            skip: 0,
            probability: 1.0,
        }
    }

    /// Only requests with this verb.
    #[must_use]
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }

    /// Only requests for this resource (plural name, e.g. `leases`).
    #[must_use]
    pub fn resource(mut self, plural: impl Into<String>) -> Self {
        self.resource = Some(plural.into());
        self
    }

    /// Only requests for the object with this name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Only requests from this client: a [`FakeApiServer::client_named`] name, else the
    /// User-Agent up to its first `/`.
    ///
    /// [`FakeApiServer::client_named`]: super::FakeApiServer::client_named
    #[must_use]
    pub fn client(mut self, client: impl Into<String>) -> Self {
        self.client = Some(client.into());
        self
    }

    /// Only requests for this subresource (`Some("status")`), or only for the main resource
    /// (`None`).
    #[must_use]
    pub fn subresource(mut self, sub: Option<&str>) -> Self {
        self.subresource = Some(sub.map(str::to_owned));
        self
    }

    /// Applies to the first `n` matching requests only.
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.remaining = Some(n);
        self
    }

    /// Lets the first `n` matching requests through unaffected (they count neither towards
    /// [`times`](Self::times) nor the probability draw), e.g. `.skip(1)` on status patches
    /// strikes the second write of a reconcile, not the first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_testing::fake_apiserver::{Fault, FaultEffect, Verb};
    /// // Hold the second status patch of `networks` (never answered within a test).
    /// let fault = Fault::new(FaultEffect::Latency(Duration::from_secs(3600)))
    ///     .verb(Verb::Patch)
    ///     .resource("networks")
    ///     .subresource(Some("status"))
    ///     .skip(1)
    ///     .times(1);
    /// # let _ = fault;
    /// ```
    #[must_use]
    pub fn skip(mut self, n: u32) -> Self {
        self.skip = n;
        self
    }

    /// Applies to a matching request with this probability, drawn from the server's seeded
    /// generator ([`FakeApiServerBuilder::seed`](super::FakeApiServerBuilder::seed)).
    #[must_use]
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = p.clamp(0.0, 1.0);
        self
    }

    pub(crate) fn matches(&self, req: &RequestTarget<'_>) -> bool {
        self.remaining != Some(0)
            && self.verb.is_none_or(|v| v == req.verb)
            && self.resource.as_deref().is_none_or(|r| r == req.resource)
            && self.name.as_deref().is_none_or(|n| Some(n) == req.name)
            && self.client.as_deref().is_none_or(|c| c == req.client)
            && self
                .subresource
                .as_ref()
                .is_none_or(|s| s.as_deref() == req.subresource)
    }
}

/// What a fault is matched against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestTarget<'a> {
    pub(crate) verb: Verb,
    pub(crate) resource: &'a str,
    pub(crate) name: Option<&'a str>,
    pub(crate) subresource: Option<&'a str>,
    pub(crate) client: &'a str,
}

/// The combined effect of the faults that hit one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hit {
    pub(crate) latency: Duration,
    pub(crate) refuse: Option<ApiStatus>,
    pub(crate) gone: bool,
    pub(crate) drop_after: Option<usize>,
    pub(crate) lag: Duration,
}

impl Hit {
    pub(crate) fn add(&mut self, effect: &FaultEffect) {
        let refuse = |code, reason: &'static str, msg: &str, retry| {
            let mut s = ApiStatus::new(code, reason, msg);
            s.retry_after = retry;
            s
        };
        match effect {
            FaultEffect::Latency(d) => self.latency += *d,
            FaultEffect::DropWatch { after_events } => self.drop_after = Some(*after_events),
            FaultEffect::WatchLag(d) => self.lag += *d,
            FaultEffect::Gone => self.gone = true,
            other if self.refuse.is_none() => {
                self.refuse = Some(match other {
                    FaultEffect::Conflict => refuse(
                        409,
                        "Conflict",
                        "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected)",
                        None,
                    ),
                    FaultEffect::TooManyRequests { retry_after_secs } => refuse(
                        429,
                        "TooManyRequests",
                        "Too many requests, please try again later. (injected)",
                        Some(*retry_after_secs),
                    ),
                    FaultEffect::ServiceUnavailable { retry_after_secs } => refuse(
                        503,
                        "ServiceUnavailable",
                        "the server is currently unable to handle the request (injected)",
                        *retry_after_secs,
                    ),
                    FaultEffect::Forbidden => refuse(
                        403,
                        "Forbidden",
                        "forbidden: the client may not perform this request (injected)",
                        None,
                    ),
                    _ => refuse(
                        500,
                        "InternalError",
                        "Internal error occurred: injected fault",
                        None,
                    ),
                });
            }
            _ => {}
        }
    }
}
