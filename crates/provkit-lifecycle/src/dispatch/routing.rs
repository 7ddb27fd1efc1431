//! Routing a target's jobs to one of several providers ([`RoutedProvider`]) — AAP for one target,
//! another provider for the other — such that a job is always polled, cancelled and deprovisioned
//! by the provider that recorded it, even when the routing changes while it runs or after it ran.
//!
//! # Where the recording provider is kept: in the job id
//!
//! The routes are named ([`ProviderRoutes`]); one of them is the **default**, the provider whose
//! job ids are recorded as they are. Every other provider's ids are recorded as
//! `<route name>:<id>` (and so is a default id that itself contains `:`). Reading a recorded id
//! back gives its provider: no `:` → the default, `name:id` → route `name`, with `id` handed to
//! that provider unchanged. A `JobStatus` thus needs no new field, and every store the job id
//! already survives (status writes, the launch intent, Events) carries the provider along.
//!
//! # Round trip with Go-written status
//!
//! - The Go operator writes bare AAP ids (`"123"`). Make the AAP provider the default route and
//!   those jobs are polled, cancelled and deprovisioned by AAP, as Go did; a resource whose jobs
//!   all ran on the default route has a status byte-identical to Go's.
//! - A job of another route (`"kube:ns/job-7"`) is unknown to Go: should the Go operator take the
//!   resource back, its AAP provider asks AAP for job `kube:ns/job-7`, gets a 404 and, as Go does
//!   for a purged job, polls it forever (provision) or skips the cancel (deprovision). Hand a
//!   resource back to Go only once its non-default jobs are finished.
//! - The default route must stay the provider Go used: renaming or replacing it re-routes every
//!   bare id. Other routes may be added, re-pointed (to another instance of the same backend) or
//!   chosen differently at any time; a route that is removed leaves its jobs unreadable (an error
//!   on every poll, never a relaunch) until it is configured again.
//!
//! # Which provider does what
//!
//! | call | provider |
//! |---|---|
//! | `trigger_provision` | the route the router chooses now |
//! | `provision_status`, `deprovision_status` | the one that recorded the job id |
//! | `trigger_deprovision` | the one that recorded the latest provision job (it cancels it first); the chosen route when there is none. It sees only the jobs it recorded, ids as it issued them |
//! | `find_job_by_idempotency_key*` | the chosen route first, then every other route that supports lookups: a launch whose answer was lost may have gone to a route chosen before a change |

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use provkit_core::{JobStatus, JobType, find_latest_job_by_type};

use crate::error::ProviderError;
use crate::idempotency::{FoundJob, IdempotencyKey, IdempotencySupport};
use crate::launch_context::LaunchContext;
use crate::provider::{DeprovisionResult, ProvisionResult, ProvisionStatus, ProvisioningProvider};
use crate::resource::ResourceView;

/// The separator between a route name and the provider's own job id.
pub const ROUTE_SEPARATOR: char = ':';

/// The route set is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// A route name is empty or contains [`ROUTE_SEPARATOR`].
    #[error("route name {name:?} must be non-empty and must not contain ':'")]
    BadName {
        /// The name.
        name: String,
    },
    /// Two routes share a name.
    #[error("duplicate route name {name:?}")]
    Duplicate {
        /// The name.
        name: String,
    },
}

/// Named providers, one of them the default (see the [module docs](self)).
#[derive(Clone)]
pub struct ProviderRoutes {
    /// `routes[0]` is the default.
    routes: Vec<(String, Arc<dyn ProvisioningProvider>)>,
}

impl fmt::Debug for ProviderRoutes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<(&str, &str)> = self
            .routes
            .iter()
            .map(|(n, p)| (n.as_str(), p.name()))
            .collect();
        f.debug_struct("ProviderRoutes")
            .field("default", &self.default_name())
            .field("routes", &names)
            .finish()
    }
}

fn check_name(name: &str) -> Result<(), RouteError> {
    if name.is_empty() || name.contains(ROUTE_SEPARATOR) {
        return Err(RouteError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

impl ProviderRoutes {
    /// Routes whose default is `provider` under `name` (the provider whose ids are recorded bare:
    /// the one Go used, AAP, for resources Go provisioned).
    ///
    /// # Errors
    /// [`RouteError::BadName`].
    pub fn new(
        name: impl Into<String>,
        provider: Arc<dyn ProvisioningProvider>,
    ) -> Result<Self, RouteError> {
        let name = name.into();
        check_name(&name)?;
        Ok(Self {
            routes: vec![(name, provider)],
        })
    }

    /// Adds route `name`.
    ///
    /// # Errors
    /// [`RouteError::BadName`], [`RouteError::Duplicate`].
    pub fn with_route(
        mut self,
        name: impl Into<String>,
        provider: Arc<dyn ProvisioningProvider>,
    ) -> Result<Self, RouteError> {
        let name = name.into();
        check_name(&name)?;
        if self.get(&name).is_some() {
            return Err(RouteError::Duplicate { name });
        }
        self.routes.push((name, provider));
        Ok(self)
    }

    /// The default route's name.
    pub fn default_name(&self) -> &str {
        self.routes.first().map_or("", |(n, _)| n.as_str())
    }

    /// The route names, the default first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.routes.iter().map(|(n, _)| n.as_str())
    }

    /// The provider of route `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ProvisioningProvider>> {
        self.routes.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }

    /// The job id to record for `id` issued by route `route`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # fn f(aap: Arc<dyn provkit_lifecycle::ProvisioningProvider>, kube: Arc<dyn provkit_lifecycle::ProvisioningProvider>) -> Result<(), provkit_lifecycle::dispatch::RouteError> {
    /// use provkit_lifecycle::dispatch::ProviderRoutes;
    /// let routes = ProviderRoutes::new("aap", aap)?.with_route("kube", kube)?;
    /// assert_eq!(routes.record("aap", "123"), "123");
    /// assert_eq!(routes.record("kube", "ns/job-7"), "kube:ns/job-7");
    /// assert_eq!(routes.recorded_by("kube:ns/job-7"), ("kube", "ns/job-7"));
    /// assert_eq!(routes.recorded_by("123"), ("aap", "123"));
    /// # Ok(()) }
    /// ```
    pub fn record(&self, route: &str, id: &str) -> String {
        if route == self.default_name() && !id.contains(ROUTE_SEPARATOR) {
            id.to_owned()
        } else {
            format!("{route}{ROUTE_SEPARATOR}{id}")
        }
    }

    /// The route that recorded `job_id` and the provider's own id.
    pub fn recorded_by<'a>(&'a self, job_id: &'a str) -> (&'a str, &'a str) {
        match job_id.split_once(ROUTE_SEPARATOR) {
            Some((route, id)) => (route, id),
            None => (self.default_name(), job_id),
        }
    }

    fn provider_for(
        &self,
        route: &str,
        job_id: &str,
    ) -> Result<&Arc<dyn ProvisioningProvider>, ProviderError> {
        self.get(route).ok_or_else(|| {
            ProviderError::other(format!(
                "job {job_id} was recorded by provider route {route:?}, which is not configured (routes: {})",
                self.names().collect::<Vec<_>>().join(", ")
            ))
        })
    }
}

type Choose = dyn Fn(&ResourceView) -> String + Send + Sync;

/// A [`ProvisioningProvider`] that sends new launches to the route it chooses and everything about
/// a recorded job to the route that recorded it (see the [module docs](self)).
///
/// ```
/// # use std::sync::Arc;
/// # fn f(aap: Arc<dyn provkit_lifecycle::ProvisioningProvider>, kube: Arc<dyn provkit_lifecycle::ProvisioningProvider>, clock: Arc<dyn provkit_core::Clock>) -> Result<(), Box<dyn std::error::Error>> {
/// use provkit_lifecycle::dispatch::{ProviderRoutes, RoutedProvider};
/// use provkit_lifecycle::{JobTarget, Lifecycle, MultiTargetLifecycle};
///
/// let routes = Arc::new(ProviderRoutes::new("aap", aap)?.with_route("kube", kube)?);
/// let engine = MultiTargetLifecycle::new([
///     JobTarget::new("fabric", Lifecycle::new(Arc::new(RoutedProvider::fixed(routes.clone(), "aap")), clock.clone())),
///     JobTarget::new("k8s", Lifecycle::new(Arc::new(RoutedProvider::fixed(routes, "kube")), clock)),
/// ])?;
/// # let _ = engine; Ok(()) }
/// ```
#[derive(Clone)]
pub struct RoutedProvider {
    routes: Arc<ProviderRoutes>,
    choose: Arc<Choose>,
}

impl fmt::Debug for RoutedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoutedProvider")
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

impl RoutedProvider {
    /// New launches go to route `route`.
    pub fn fixed(routes: Arc<ProviderRoutes>, route: impl Into<String>) -> Self {
        let route = route.into();
        Self::choosing(routes, move |_| route.clone())
    }

    /// New launches go to the route `choose` names for the resource (read at every launch, so the
    /// choice may change at any time: configuration, an annotation, a feature flag).
    pub fn choosing(
        routes: Arc<ProviderRoutes>,
        choose: impl Fn(&ResourceView) -> String + Send + Sync + 'static,
    ) -> Self {
        Self {
            routes,
            choose: Arc::new(choose),
        }
    }

    /// The routes.
    pub fn routes(&self) -> &Arc<ProviderRoutes> {
        &self.routes
    }

    /// The route a launch of `resource` goes to now, and its provider.
    fn chosen(
        &self,
        resource: &ResourceView,
    ) -> Result<(String, &Arc<dyn ProvisioningProvider>), ProviderError> {
        let route = (self.choose)(resource);
        match self.routes.get(&route) {
            Some(p) => Ok((route, p)),
            None => Err(ProviderError::launch_not_made(
                format!(
                    "no provider route {route:?} for {} (routes: {})",
                    resource.display_name(),
                    self.routes.names().collect::<Vec<_>>().join(", ")
                ),
                None,
            )),
        }
    }

    async fn status(
        &self,
        resource: &ResourceView,
        job_id: &str,
        deprovision: bool,
    ) -> Result<ProvisionStatus, ProviderError> {
        let (route, id) = self.routes.recorded_by(job_id);
        let provider = self.routes.provider_for(route, job_id)?;
        let mut status = if deprovision {
            provider.deprovision_status(resource, id).await?
        } else {
            provider.provision_status(resource, id).await?
        };
        status.job_id = job_id.to_owned();
        Ok(status)
    }
}

impl RoutedProvider {
    /// Every route that supports lookups, the chosen one first, until one finds the job: the
    /// route `marked` names (with its own marker) by its marker, the others by the attempt's
    /// window from `since`.
    async fn lookup_routes(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<DateTime<Utc>>,
        marked: Option<(&str, &str)>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let first = (self.choose)(resource);
        let order = std::iter::once(first.as_str())
            .filter(|r| self.routes.get(r).is_some())
            .chain(self.routes.names().filter(|n| *n != first));
        for route in order {
            let Some(provider) = self.routes.get(route) else {
                continue;
            };
            if provider.idempotency_support() == IdempotencySupport::Unsupported {
                continue;
            }
            let answer = match (marked, since) {
                (Some((r, marker)), Some(since)) if r == route => {
                    provider
                        .find_job_by_marker(resource, job_type, key, since, marker)
                        .await
                }
                _ => {
                    provider
                        .find_job_by_idempotency_key_since(resource, job_type, key, since)
                        .await
                }
            };
            match answer {
                Ok(Some(mut found)) => {
                    found.job_id = self.routes.record(route, &found.job_id);
                    return Ok(Some(found));
                }
                Ok(None) => {}
                Err(e) if e.is_unsupported() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for RoutedProvider {
    /// `"routed"`.
    fn name(&self) -> &str {
        "routed"
    }

    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        let (route, provider) = self.chosen(resource)?;
        let ctx = route_context(ctx, &route);
        let mut result = provider.trigger_provision(resource, &ctx).await?;
        if !result.job_id.trim().is_empty() {
            result.job_id = self.routes.record(&route, &result.job_id);
        }
        Ok(result)
    }

    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(resource, job_id, false).await
    }

    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        let latest = find_latest_job_by_type(jobs, &JobType::Provision)
            .filter(|j| !j.job_id.trim().is_empty());
        let (route, provider) = match latest {
            Some(job) => {
                let (route, _) = self.routes.recorded_by(&job.job_id);
                let provider = self.routes.provider_for(route, &job.job_id)?;
                (route.to_owned(), provider)
            }
            None => self.chosen(resource)?,
        };
        let own: Vec<JobStatus> = jobs
            .iter()
            .filter(|j| self.routes.recorded_by(&j.job_id).0 == route)
            .map(|j| {
                let mut j = j.clone();
                j.job_id = self.routes.recorded_by(&j.job_id).1.to_owned();
                j
            })
            .collect();
        let mut result = provider.trigger_deprovision(resource, &own, ctx).await?;
        if let Some(id) = result.job_id.as_mut().filter(|id| !id.trim().is_empty()) {
            *id = self.routes.record(&route, id);
        }
        if let Some(st) = result.provision_job_status.as_mut()
            && !st.job_id.is_empty()
        {
            st.job_id = self.routes.record(&route, &st.job_id);
        }
        Ok(result)
    }

    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(resource, job_id, true).await
    }

    /// A provision's chosen route's answer; `None` for a deprovision (its route follows the
    /// recorded jobs).
    fn launch_refused_for(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
    ) -> Option<std::time::Duration> {
        match job_type {
            JobType::Provision => self
                .chosen(resource)
                .ok()
                .and_then(|(_, p)| p.launch_refused_for(resource, job_type)),
            _ => None,
        }
    }

    /// [`Unsupported`](IdempotencySupport::Unsupported) when no route supports lookups,
    /// [`CheapLookup`](IdempotencySupport::CheapLookup) when every route's lookup is cheap,
    /// [`Lookup`](IdempotencySupport::Lookup) otherwise.
    fn idempotency_support(&self) -> IdempotencySupport {
        let supports: Vec<IdempotencySupport> = self
            .routes
            .routes
            .iter()
            .map(|(_, p)| p.idempotency_support())
            .collect();
        if supports
            .iter()
            .all(|s| *s == IdempotencySupport::Unsupported)
        {
            IdempotencySupport::Unsupported
        } else if supports
            .iter()
            .all(|s| *s == IdempotencySupport::CheapLookup)
        {
            IdempotencySupport::CheapLookup
        } else {
            IdempotencySupport::Lookup
        }
    }

    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.find_job_by_idempotency_key_since(resource, job_type, key, None)
            .await
    }

    async fn find_job_by_idempotency_key_since(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<DateTime<Utc>>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.lookup_routes(resource, job_type, key, since, None)
            .await
    }

    /// A provision's chosen route's marker, tagged with the route's name (only that route's
    /// provider reads it); `None` for a deprovision (its route follows the recorded jobs).
    async fn launch_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Option<String> {
        if *job_type != JobType::Provision {
            return None;
        }
        let (route, provider) = self.chosen(resource).ok()?;
        let inner = provider.launch_marker(resource, job_type, key).await?;
        Some(format!("{}:{route}{inner}", route.len()))
    }

    /// The route the marker names is looked up by it, every other route by the attempt's
    /// window (as without a marker), in the same order.
    async fn find_job_by_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: DateTime<Utc>,
        marker: &str,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.lookup_routes(resource, job_type, key, Some(since), split_marker(marker))
            .await
    }

    /// Every route's [`error_status_text`](ProvisioningProvider::error_status_text) in turn (each
    /// removes only its own request-scoped details).
    fn error_status_text(&self, error: &ProviderError, text: String) -> String {
        self.routes
            .routes
            .iter()
            .fold(text, |text, (_, p)| p.error_status_text(error, text))
    }
}

/// `ctx` as the route `route` launches it: the attempt's marker unwrapped when it is that
/// route's, none otherwise (the route was chosen anew since the intent; its launch carries no
/// marker, and the lookup reads its window).
fn route_context(ctx: &LaunchContext, route: &str) -> LaunchContext {
    let inner = ctx
        .attempt_marker
        .as_deref()
        .and_then(split_marker)
        .filter(|(r, _)| *r == route)
        .map(|(_, inner)| inner.to_owned());
    ctx.clone().with_attempt_marker(inner)
}

/// A routed marker's route and its route's own marker (`"<len>:<route><marker>"`).
fn split_marker(marker: &str) -> Option<(&str, &str)> {
    let (len, rest) = marker.split_once(':')?;
    let len: usize = len.parse().ok()?;
    let route = rest.get(..len)?;
    Some((route, &rest[len..]))
}

#[cfg(test)]
mod marker_tests {
    use super::split_marker;

    #[test]
    fn a_routed_marker_names_its_route_whatever_the_route_holds() {
        assert_eq!(split_marker("3:aapm-1"), Some(("aap", "m-1")));
        assert_eq!(split_marker("5:a:b:cx"), Some(("a:b:c", "x")));
        assert_eq!(split_marker("0:x"), Some(("", "x")));
        assert_eq!(split_marker("9:short"), None);
        assert_eq!(split_marker("x:y"), None);
        assert_eq!(split_marker("plain"), None);
    }
}
