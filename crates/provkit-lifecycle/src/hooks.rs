//! Caller-supplied callbacks: the stale-cache check, the status flush, and the poll callbacks.

use std::fmt;
use std::future::Future;

use provkit_core::JobStatus;

use crate::error::BoxError;
use crate::intent::IntentStore;
use crate::provider::ProvisionStatus;

/// Reads the resource's job history **directly from the API server** (an uncached read), so the engine
/// can tell whether its cached copy is stale before it launches (Go's
/// `CheckAPIServerForNonTerminalProvisionJob`). provkit-kube implements it with a `kube::Client`.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait StaleCacheCheck: Send + Sync {
    /// The job array of the fresh copy of the object.
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError>;
}

/// Persists the job history right after a launch, so a reconcile that starts before the end-of-reconcile
/// status write still sees the new job (Go's `statusFlush`). Errors are logged and not fatal.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait StatusFlush: Send + Sync {
    /// Writes `jobs` into the object's status.
    async fn flush(&self, jobs: &[JobStatus]) -> Result<(), BoxError>;
}

/// A [`StaleCacheCheck`] from an async closure.
///
/// ```
/// use provkit_lifecycle::{stale_check_fn, StaleCacheCheck};
/// let check = stale_check_fn(|| async { Ok(Vec::new()) });
/// # let _ = &check as &dyn StaleCacheCheck;
/// ```
pub fn stale_check_fn<F, Fut>(f: F) -> impl StaleCacheCheck
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<JobStatus>, BoxError>> + Send,
{
    FnStaleCheck(f)
}

/// A [`StatusFlush`] from an async closure that receives a copy of the jobs.
///
/// ```
/// use provkit_lifecycle::{status_flush_fn, StatusFlush};
/// let flush = status_flush_fn(|jobs| async move { let _ = jobs.len(); Ok(()) });
/// # let _ = &flush as &dyn StatusFlush;
/// ```
pub fn status_flush_fn<F, Fut>(f: F) -> impl StatusFlush
where
    F: Fn(Vec<JobStatus>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), BoxError>> + Send,
{
    FnFlush(f)
}

struct FnStaleCheck<F>(F);

#[async_trait::async_trait]
impl<F, Fut> StaleCacheCheck for FnStaleCheck<F>
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<JobStatus>, BoxError>> + Send,
{
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError> {
        (self.0)().await
    }
}

struct FnFlush<F>(F);

#[async_trait::async_trait]
impl<F, Fut> StatusFlush for FnFlush<F>
where
    F: Fn(Vec<JobStatus>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), BoxError>> + Send,
{
    async fn flush(&self, jobs: &[JobStatus]) -> Result<(), BoxError> {
        (self.0)(jobs.to_vec()).await
    }
}

/// The setters of the hooks every lifecycle call shares: the stale-cache check, the status flush
/// and the durable launch-intent store, each with its documentation (one implementation for
/// [`ProvisionHooks`], [`DeprovisionHooks`] and [`MultiTargetHooks`](crate::MultiTargetHooks)).
macro_rules! shared_hook_setters {
    (stale_check: $stale:literal, status_flush: $flush:literal, intents: $intents:literal $(,)?) => {
        #[doc = $stale]
        #[must_use]
        pub fn stale_check(mut self, check: &'a dyn $crate::hooks::StaleCacheCheck) -> Self {
            self.stale_check = Some(check);
            self
        }

        #[doc = $flush]
        #[must_use]
        pub fn status_flush(mut self, flush: &'a dyn $crate::hooks::StatusFlush) -> Self {
            self.status_flush = Some(flush);
            self
        }

        #[doc = $intents]
        #[must_use]
        pub fn intents(mut self, store: &'a dyn $crate::intent::IntentStore) -> Self {
            self.intents = Some(store);
            self
        }
    };
}
pub(crate) use shared_hook_setters;

type OnFailed<'a> = Box<dyn FnMut(&str) + Send + Sync + 'a>;
type OnSuccess<'a> = Box<dyn FnMut(&ProvisionStatus) + Send + Sync + 'a>;

/// The hooks of a provisioning call. All are optional.
///
/// - `stale_check`: without it the cache is assumed fresh (Go requires the check; provide it in
///   controllers).
/// - `status_flush`: called right after a job is recorded.
/// - `on_failed(message)`: a poll observed a change to `Failed` (Go's `OnFailed`).
/// - `on_success(status)`: a poll observed a terminal, successful job (Go's `OnSuccess`).
/// - `intents`: the durable launch intent ([`IntentStore`]). With it, every launch is preceded
///   by a persisted intent and a pending intent is resolved (looked up, adopted) before anything
///   new is launched — exactly-once across crashes and refused status writes for providers with
///   lookups. Without it, the engine falls back to its in-memory journal (see
///   [`LookupBeforeLaunch`](crate::LookupBeforeLaunch)).
///
/// ```
/// use provkit_lifecycle::ProvisionHooks;
/// let mut failures = Vec::new();
/// let hooks = ProvisionHooks::new().on_failed(|m| failures.push(m.to_owned()));
/// drop(hooks);
/// ```
#[derive(Default)]
pub struct ProvisionHooks<'a> {
    pub(crate) stale_check: Option<&'a dyn StaleCacheCheck>,
    pub(crate) status_flush: Option<&'a dyn StatusFlush>,
    pub(crate) on_failed: Option<OnFailed<'a>>,
    pub(crate) on_success: Option<OnSuccess<'a>>,
    pub(crate) intents: Option<&'a dyn IntentStore>,
}

impl<'a> ProvisionHooks<'a> {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    shared_hook_setters! {
        stale_check: "Sets the stale-cache check.",
        status_flush: "Sets the status flush.",
        intents: "Sets the durable launch-intent store.",
    }

    /// Sets the on-failed callback.
    #[must_use]
    pub fn on_failed(mut self, f: impl FnMut(&str) + Send + Sync + 'a) -> Self {
        self.on_failed = Some(Box::new(f));
        self
    }

    /// Sets the on-success callback.
    #[must_use]
    pub fn on_success(mut self, f: impl FnMut(&ProvisionStatus) + Send + Sync + 'a) -> Self {
        self.on_success = Some(Box::new(f));
        self
    }
}

impl fmt::Debug for ProvisionHooks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvisionHooks")
            .field("stale_check", &self.stale_check.is_some())
            .field("status_flush", &self.status_flush.is_some())
            .field("on_failed", &self.on_failed.is_some())
            .field("on_success", &self.on_success.is_some())
            .field("intents", &self.intents.is_some())
            .finish()
    }
}

/// The hooks of a deprovisioning call: an optional status flush after a launch (Go has none; with it a
/// deprovision launch is as crash-safe as a provision launch), and an optional stale-cache check run
/// before a deprovision launch (Go has none: a deletion reconcile on a cached copy that does not yet
/// show the deprovision job launched by the previous reconcile would launch a second one).
#[derive(Default)]
pub struct DeprovisionHooks<'a> {
    pub(crate) status_flush: Option<&'a dyn StatusFlush>,
    pub(crate) stale_check: Option<&'a dyn StaleCacheCheck>,
    pub(crate) intents: Option<&'a dyn IntentStore>,
}

impl<'a> DeprovisionHooks<'a> {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    shared_hook_setters! {
        stale_check: "Sets the stale-cache check: before launching a deprovision job, the engine reads the fresh job history and, when it shows a deprovision job newer than the cached latest one, requeues without launching ([`DeprovisionStep::StaleCache`](crate::DeprovisionStep::StaleCache)).",
        status_flush: "Sets the status flush.",
        intents: "Sets the durable launch-intent store (as [`ProvisionHooks::intents`]).",
    }
}

impl fmt::Debug for DeprovisionHooks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeprovisionHooks")
            .field("status_flush", &self.status_flush.is_some())
            .field("stale_check", &self.stale_check.is_some())
            .field("intents", &self.intents.is_some())
            .finish()
    }
}
