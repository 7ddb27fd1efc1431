//! The reconcile helper: [`Provisioner::reconcile`] wires the provisioning lifecycle into a
//! kube-runtime controller, on top of kube-runtime's [`finalizer`](kube::runtime::finalizer()).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::controller::Action;
use kube::{Api, Client, ResourceExt};
use provkit_core::{ConfigHasher, JobStatus};
use provkit_lifecycle::{
    DeprovisionHooks, DeprovisionStep, LaunchContext, Lifecycle, LifecycleError, ProvisionHooks,
    ProvisionStatus, ProvisionStep, ResourceView,
};

use crate::adapters::{
    SessionFlush, SessionIntents, SessionStaleCheck, display_name, resource_view,
};
use crate::backoff::{ErrorBackoff, ErrorBackoffConfig};
use crate::error::{FinalizerStep, ReconcileError};
use crate::error_chain::ErrorChain;
use crate::events::{EventPublisher, JobEvent};
use crate::events::{latest_failed_deprovision, newly_failed_deprovision_job};
use crate::flush::{StatusSession, StatusWriteConfig};
use crate::management::{ManagementHook, ManagementStatePolicy};
use crate::own_writes::OwnWrites;
use crate::removed_finalizers::RemovedFinalizers;
use crate::resource::{NamespaceScope, ProvisionedResource};

/// User callbacks of [`Provisioner::reconcile`]: phase, conditions and the per-launch context.
/// Every method has a no-op default.
///
/// Callbacks mutate the working copy of the object; whatever they change in its status is
/// written once at the end of the reconcile (only when the status changed).
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait ProvisioningCallbacks<K: Send + Sync + 'static>: Send + Sync {
    /// Before the lifecycle runs on apply. `config_applied` is whether the latest provision
    /// job succeeded with the desired config version (A-B-A safe). Go sets the phase to
    /// `Progressing` when it is empty, or when it is `Ready` and the config is not applied.
    ///
    /// [`on_succeeded`](Self::on_succeeded) fires once, in the reconcile that saw the job
    /// succeed; once the success is recorded, later reconciles skip and never call it again.
    /// Should the phase it set not have been persisted, nothing would set it again: derive a
    /// `Ready` phase from `config_applied` here too (the example operator turns `Progressing`
    /// or `Failed` into `Ready` when the config is applied — seen lost for 39 of 10,000
    /// objects in a chaos run with crashes, and for one whose relaunch after a purged job
    /// succeeded).
    fn on_apply(&self, obj: &mut K, config_applied: bool) {
        let _ = (obj, config_applied);
    }
    /// A poll saw the provision job fail (Go `OnFailed`).
    fn on_failed(&self, obj: &mut K, message: &str) {
        let _ = (obj, message);
    }
    /// A poll saw the provision job succeed (Go `OnSuccess`).
    fn on_succeeded(&self, obj: &mut K, status: &ProvisionStatus) {
        let _ = (obj, status);
    }
    /// Before the lifecycle runs on deletion (Go sets the phase to `Deleting`).
    fn on_deleting(&self, obj: &mut K) {
        let _ = obj;
    }
    /// After the lifecycle ran on deletion, when the latest deprovision job failed or was
    /// canceled (`message` is its message). Called on every deletion reconcile while that
    /// holds, after [`on_deleting`](Self::on_deleting), so a condition set here stays: with
    /// `blockDeletionOnFailure` the finalizer is kept until someone intervenes, and without
    /// this the object would go on saying what `on_deleting` set. Once another deprovision
    /// job is launched, it is no longer called.
    fn on_deprovision_failed(&self, obj: &mut K, message: &str) {
        let _ = (obj, message);
    }
    /// The launch context for this object's launches (tenant storage classes, extra fields…).
    fn launch_context(&self, obj: &K) -> LaunchContext {
        let _ = obj;
        LaunchContext::new()
    }
}

/// Callbacks that do nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCallbacks;

impl<K: Send + Sync + 'static> ProvisioningCallbacks<K> for NoCallbacks {}

/// Everything a controller needs to provision objects of type `K`: the lifecycle engine, the
/// finalizer name, the management-state hook, the event publisher and status-write settings.
/// Build one at start-up, put it in the controller context, and call
/// [`reconcile`](Self::reconcile) from the controller's reconcile function.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use provkit_kube::{Provisioner, ProvisionedResource, NoCallbacks, ReconcileError};
/// # use kube::runtime::controller::Action;
/// async fn reconcile<K: ProvisionedResource>(
///     obj: Arc<K>,
///     ctx: Arc<Provisioner<K>>,
/// ) -> Result<Action, ReconcileError> {
///     ctx.reconcile(obj, &NoCallbacks).await
/// }
/// ```
pub struct Provisioner<K> {
    pub(crate) client: Client,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) finalizer: String,
    pub(crate) management: Arc<dyn ManagementHook>,
    pub(crate) events: EventPublisher,
    pub(crate) status: StatusWriteConfig,
    pub(crate) hasher: ConfigHasher,
    pub(crate) removed: RemovedFinalizers,
    pub(crate) own_writes: OwnWrites,
    pub(crate) own_write_window: std::time::Duration,
    resync: Option<std::time::Duration>,
    pub(crate) backoff: ErrorBackoff,
    /// Push wake-ups (see [`crate::push`]).
    pub(crate) push: Option<crate::push::PushWakeups>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::KubeMetrics>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for Provisioner<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provisioner")
            .field("lifecycle", &self.lifecycle)
            .field("finalizer", &self.finalizer)
            .field("management", &self.management)
            .field("events", &self.events)
            .field("status", &self.status)
            .field("hasher", &self.hasher)
            .field("error_backoff", self.backoff.config())
            .finish_non_exhaustive()
    }
}

impl<K: ProvisionedResource> Provisioner<K> {
    /// A provisioner with neutral defaults: every object managed (no management annotation; OSAC
    /// operators add `.with_management(ManagementStatePolicy::osac())`), no events, FNV-1a config
    /// versions, status writes with the lifecycle's history cap.
    pub fn new(client: Client, lifecycle: Lifecycle, finalizer: impl Into<String>) -> Self {
        let status = StatusWriteConfig::default().with_max_history(lifecycle.policy().max_history);
        Self {
            client,
            lifecycle,
            finalizer: finalizer.into(),
            management: Arc::new(ManagementStatePolicy::default()),
            events: EventPublisher::disabled(),
            status,
            hasher: ConfigHasher::default(),
            removed: RemovedFinalizers::default(),
            own_writes: OwnWrites::default(),
            own_write_window: Self::OWN_WRITE_WINDOW,
            resync: Some(Self::DEFAULT_RESYNC),
            backoff: ErrorBackoff::new(ErrorBackoffConfig::default()),
            push: None,
            #[cfg(feature = "metrics")]
            metrics: None,
            _kind: PhantomData,
        }
    }

    /// The default of [`with_own_write_window`](Self::with_own_write_window): 5 s.
    pub const OWN_WRITE_WINDOW: std::time::Duration = std::time::Duration::from_secs(5);

    /// How long after its status writes a reconcile of the object exactly as written (one of
    /// the `resourceVersion`s those writes returned) is taken for the watch echo of those
    /// writes and answered with the requeue already asked for, without running the lifecycle
    /// (which would poll AAP a second time within milliseconds of the poll the write recorded);
    /// default [`OWN_WRITE_WINDOW`](Self::OWN_WRITE_WINDOW). Any other change — a spec edit, a
    /// deletion, another writer, a finalizer patch — carries another `resourceVersion` and
    /// reconciles normally, and a restarted controller reconciles everything once.
    ///
    /// The window bounds what an extra trigger that does not change the object
    /// (`Controller::reconcile_on`, a push notification) can miss: a job that ends within it
    /// after a poll is seen at the next poll instead. `Duration::ZERO` turns this off (every
    /// reconcile runs the lifecycle: about one extra poll per job state change). Scale it with
    /// the other durations when running in scaled time.
    #[must_use]
    pub fn with_own_write_window(mut self, window: std::time::Duration) -> Self {
        self.own_write_window = window;
        self
    }

    /// The default of [`with_resync`](Self::with_resync): 10 minutes.
    pub const DEFAULT_RESYNC: std::time::Duration = std::time::Duration::from_secs(600);

    /// Reconciles a converged object again after `period` (less up to a tenth, at random, so a
    /// fleet converged at once does not come back at once), where the lifecycle asked for
    /// nothing (`await_change`), like controller-runtime's sync period. **On by default**
    /// ([`DEFAULT_RESYNC`](Self::DEFAULT_RESYNC)); [`without_resync`](Self::without_resync)
    /// turns it off.
    ///
    /// Why: after a watch is told `410 Gone`, kube-runtime's `Controller` reconciles every
    /// object of the relist as its pages arrive, but reads each one from the reflector's store,
    /// which takes the relist's state only when its last page is in; an object whose change was
    /// lost with the old watch (a deletion, a spec edit) is reconciled as it was before, and
    /// nothing triggers it again. The fleet's 10,000-resource outage run left 79 to 612 deleted
    /// objects unreconciled this way — their finalizers held until something else touched them.
    /// A period bounds how long such a change goes unseen; the reconcile of a converged object
    /// makes no AAP request and writes nothing. The same applies to
    /// [`MultiTargetProvisioner`](crate::MultiTargetProvisioner).
    #[must_use]
    pub fn with_resync(mut self, period: std::time::Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// No resync: a converged object waits for a change (`Action::await_change`). Only safe
    /// where something else re-triggers objects after a relist (see
    /// [`with_resync`](Self::with_resync)).
    #[must_use]
    pub fn without_resync(mut self) -> Self {
        self.resync = None;
        self
    }

    /// Wakes the reconcile of an object at once when the provider's backend pushes a final
    /// status of its job, and polls in-flight jobs at the long interval of `wakeups`' cadence
    /// while the push stream is healthy (see [`crate::push`]). Off by default: without a running
    /// [`PushWakeups::run`](crate::push::PushWakeups::run) nothing changes.
    #[must_use]
    pub fn with_push(mut self, wakeups: crate::push::PushWakeups) -> Self {
        self.push = Some(wakeups);
        self
    }

    /// The push wake-ups, when set.
    pub fn push(&self) -> Option<&crate::push::PushWakeups> {
        self.push.as_ref()
    }

    /// The action for a reconcile whose lifecycle asked for `requeue_after`.
    pub(crate) fn action(&self, requeue_after: Option<std::time::Duration>) -> Action {
        match (requeue_after, self.resync) {
            (Some(after), _) => Action::requeue(after),
            (None, Some(period)) => Action::requeue(resync_delay(period, fastrand::f64())),
            (None, None) => Action::await_change(),
        }
    }

    /// Records reconciles, status writes and finalizer holds in `metrics` (feature `metrics`,
    /// see [`crate::metrics`]).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn with_metrics(mut self, metrics: crate::metrics::KubeMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    pub(crate) fn record_reconcile(&self, ok: bool, started: tokio::time::Instant) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.reconciled(ok, started.elapsed());
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (ok, started);
    }

    pub(crate) fn record_writes(&self, session: &StatusSession<K>) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            let (writes, conflicts) = session.write_counts();
            m.status_writes(writes, conflicts);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = session;
    }

    fn record_finalizer_hold(&self) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.finalizer_held();
        }
    }

    /// Replaces the per-object error backoff (default: 1 s doubling to 5 min, jitter 0.5)
    /// that [`error_policy`](Self::error_policy) requeues failed reconciles with. Failure
    /// counts restart from zero.
    #[must_use]
    pub fn with_error_backoff(mut self, config: ErrorBackoffConfig) -> Self {
        self.backoff = ErrorBackoff::new(config);
        self
    }

    /// The error policy of a failed reconcile of `obj`: logs `error` with its cause chain
    /// ([`ErrorChain`]) as a warning and returns a requeue after the object's next backoff
    /// step — or after the rate limit the chain carries, when that is longer (a `429` or `503`
    /// with `Retry-After` on a call the engine does not requeue for itself, such as the
    /// lookup by idempotency key, or an open circuit breaker;
    /// [`find_rate_limit`](provkit_lifecycle::find_rate_limit)) or after the wait of an answer
    /// the provider cannot give yet ([`RetryLater`](provkit_lifecycle::RetryLater): a lookup
    /// waiting for a launch window to close; [`reconcile`](Self::reconcile) itself returns such a
    /// wait as `Ok` with a requeue, see [`ReconcileError::deferral`], but an error of your own
    /// reconciler may carry one). The free
    /// [`error_policy`](crate::error_policy()) calls this; call it from your own error policy
    /// when you wrap it.
    pub fn error_policy(&self, obj: &K, error: &ReconcileError) -> Action {
        let key = backoff_key(obj);
        // [`reconcile`](Self::reconcile) counted the failure and chose the delay when it failed
        // (the echo of its writes keeps that delay); a failure of another reconcile is
        // counted here.
        let (delay, failures) = self
            .backoff
            .take_decided(&key)
            .unwrap_or_else(|| self.failure_delay(&key, error));
        tracing::warn!(
            error = %ErrorChain(error),
            failures,
            retry_in = ?delay,
            "reconcile failed"
        );
        Action::requeue(delay)
    }

    /// Counts one more failure of the object with backoff key `key` and returns the delay
    /// before its next reconcile (the backoff step, or the longer rate limit or wait `error`
    /// carries) and the failure count.
    pub(crate) fn failure_delay(
        &self,
        key: &str,
        error: &ReconcileError,
    ) -> (std::time::Duration, u32) {
        let (backoff, failures) = self.backoff.failed(key);
        // A deferral's wait is the soonest of its targets'; any other error's, the first
        // `RetryLater` in its chain.
        let delay = provkit_lifecycle::find_rate_limit(error)
            .or_else(|| error.deferral())
            .or_else(|| provkit_lifecycle::find_retry_later(error))
            .map_or(backoff, |w| w.max(backoff));
        (delay, failures)
    }

    /// How many reconciles of `obj` failed in a row (0 after a successful one).
    #[must_use]
    pub fn consecutive_failures(&self, obj: &K) -> u32 {
        self.backoff.failures(&backoff_key(obj))
    }

    /// Replaces the management-state hook.
    #[must_use]
    pub fn with_management(mut self, hook: impl ManagementHook + 'static) -> Self {
        self.management = Arc::new(hook);
        self
    }

    /// Publishes Kubernetes Events for job milestones.
    #[must_use]
    pub fn with_events(mut self, events: EventPublisher) -> Self {
        self.events = events;
        self
    }

    /// Replaces the status-write settings.
    #[must_use]
    pub fn with_status_writes(mut self, config: StatusWriteConfig) -> Self {
        self.status = config;
        self
    }

    /// Sends `field_manager` (usually the controller name) as the `fieldManager` of every
    /// status patch, so `managedFields` names this controller. kube-runtime's finalizer
    /// patches and Event writes take no field manager: give the client a User-Agent naming
    /// the controller as well ([`user_agent()`](crate::user_agent())).
    #[must_use]
    pub fn with_field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.status.field_manager = Some(field_manager.into());
        self
    }

    /// Replaces the config-version hasher (switching an existing fleet re-provisions every
    /// resource once).
    #[must_use]
    pub fn with_hasher(mut self, hasher: ConfigHasher) -> Self {
        self.hasher = hasher;
        self
    }

    /// The Event publisher ([`with_events`](Self::with_events); disabled by default), e.g. to
    /// rebuild it with another TTL: `p.events().clone().with_ttl(ttl)`.
    #[must_use]
    pub fn events(&self) -> &EventPublisher {
        &self.events
    }

    /// The lifecycle engine.
    #[must_use]
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// The finalizer name.
    #[must_use]
    pub fn finalizer(&self) -> &str {
        &self.finalizer
    }

    pub(crate) fn api_for(&self, obj: &K) -> Api<K> {
        K::Scope::api(self.client.clone(), obj.namespace().as_deref())
    }

    /// One reconcile of `obj`.
    ///
    /// # Expected flow
    /// 1. Skipped objects (management-state hook) return `await_change` with no request.
    /// 2. kube-runtime's `finalizer` adds the finalizer (JSON patch with a `test` op) and
    ///    returns; the resulting watch event brings the object back.
    /// 3. Apply: compute the desired config version, [`ProvisioningCallbacks::on_apply`], run
    ///    the provisioning lifecycle with the uncached stale-cache check and the status flush,
    ///    apply `on_failed` / `on_succeeded`, publish events, write the status if it changed.
    ///    The lifecycle's outcome becomes the `Action` (e.g. requeue after the poll interval).
    /// 4. Cleanup (deletion): `on_deleting`, run the deprovisioning lifecycle with the same
    ///    uncached stale-cache check (before a deprovision launch: when the API server's latest
    ///    deprovision job differs from the cached one, requeue without launching and without a
    ///    status write) and the status flush (the provider cancels a running provision job
    ///    first), write the status, then:
    ///    - the outcome allows removal → kube-runtime removes the finalizer, `await_change`;
    ///    - otherwise → `Ok(Action::requeue(d))` with the lifecycle's delay, and the finalizer
    ///      stays. An unfinished deletion is not an error.
    /// 5. A deleting object whose finalizer this `Provisioner` already removed (a stale
    ///    cached copy that still shows it) → `await_change` with no request and no Event.
    /// 6. The object exactly as this `Provisioner`'s last status write left it (same
    ///    `resourceVersion`: the watch event of that write) while the requeue that reconcile
    ///    asked for is still ahead → that requeue (the time left), with no request: running
    ///    the lifecycle again would only poll AAP a second time
    ///    ([`with_own_write_window`](Self::with_own_write_window)).
    ///
    /// # Guarantees
    /// - At most one launch per reconcile; a launched job is persisted (flush) before anything
    ///   else can observe the object.
    /// - Status writes never drop a job another writer persisted (see [`crate::flush`]).
    /// - Requests run inside a `provkit.reconcile` span (child of kube-runtime's
    ///   `reconciling object` span) with `object.ref`, `object.kind`, `action` (the lifecycle's
    ///   `Skip` / `Poll` / `Backoff` / `Trigger` / `Requeue`, `Deprovision` on deletion,
    ///   `Unmanaged` for a skipped object, `OwnWrite` for the echo of its own write) and
    ///   `job_id` once known.
    ///
    /// # Errors
    /// [`ReconcileError`], for failures only.
    pub async fn reconcile<C>(&self, obj: Arc<K>, callbacks: &C) -> Result<Action, ReconcileError>
    where
        C: ProvisioningCallbacks<K> + ?Sized,
    {
        self.run_finalized(
            obj,
            |api, o| async move {
                self.apply(&api, &o, callbacks)
                    .await
                    .map_err(FinalizerStep::Failed)
            },
            |api, o| async move { self.cleanup(&api, &o, callbacks).await },
        )
        .await
    }

    async fn apply<C>(&self, api: &Api<K>, obj: &K, callbacks: &C) -> Result<Action, ReconcileError>
    where
        C: ProvisioningCallbacks<K> + ?Sized,
    {
        let object = display_name(obj);
        let mut working = obj.clone();
        let desired = self
            .hasher
            .compute(&working.config_source())
            .map_err(|source| ReconcileError::ConfigVersion {
                object: object.clone(),
                source,
            })?;
        working
            .provisioning_status_mut()
            .desired_config_version
            .clone_from(&desired);
        let applied = self
            .lifecycle
            .policy()
            .is_config_applied(working.provisioning_jobs(), &desired);
        callbacks.on_apply(&mut working, applied);

        let session = self.session(api, obj, &object)?;
        let (view, ctx, mut jobs) =
            lifecycle_inputs(&mut working, &object, |o| callbacks.launch_context(o))?;
        let stale = SessionStaleCheck::new(api.clone(), &session, obj.name_any());
        let flush = SessionFlush::new(&session, desired.clone());
        let intents = SessionIntents::new(&session);

        let mut failed: Option<String> = None;
        let mut succeeded: Option<ProvisionStatus> = None;
        let result = {
            let mut hooks = ProvisionHooks::new()
                .stale_check(&stale)
                .status_flush(&flush)
                .intents(&intents)
                .on_failed(|m| failed = Some(m.to_owned()))
                .on_success(|s| succeeded = Some(s.clone()));
            self.lifecycle
                .run_provisioning_lifecycle(&view, &mut jobs, &desired, &ctx, &mut hooks)
                .await
        };
        working.provisioning_status_mut().provisioning_jobs = jobs;
        show_launch_blocked(&mut working, result.as_ref().err(), &self.lifecycle);
        if let Some(message) = &failed {
            callbacks.on_failed(&mut working, message);
        }
        if let Some(status) = &succeeded {
            callbacks.on_succeeded(&mut working, status);
        }
        // Persist what changed even when the lifecycle failed (desired version, phase) — but
        // not when the cache proved stale: the next reconcile works on the fresh object.
        let stale_cache = matches!(&result, Ok(o) if o.step == ProvisionStep::StaleCache);
        self.persist(&session, obj, &working, &object, stale_cache)
            .await?;
        let outcome = result.map_err(|source| lifecycle_error(&object, source))?;
        tracing::Span::current().record("action", tracing::field::display(&outcome.action));
        let requeue = self.push_requeue(
            outcome.requeue_after(),
            crate::push::provision_in_flight(&outcome.step),
        );
        let action = self.conclude(obj, &session, working.provisioning_jobs(), requeue);
        self.publish_provision_step(&outcome.step, failed.as_deref(), &obj.object_ref(&()))
            .await;
        Ok(action)
    }

    /// `Ok` lets kube-runtime remove the finalizer; [`FinalizerStep::Keep`] keeps it.
    async fn cleanup<C>(
        &self,
        api: &Api<K>,
        obj: &K,
        callbacks: &C,
    ) -> Result<Action, FinalizerStep>
    where
        C: ProvisioningCallbacks<K> + ?Sized,
    {
        let object = display_name(obj);
        let mut working = obj.clone();
        callbacks.on_deleting(&mut working);
        let desired = working
            .provisioning_status()
            .map(|s| s.desired_config_version.clone())
            .unwrap_or_default();
        let session = self.session(api, obj, &object)?;
        let (view, ctx, mut jobs) =
            lifecycle_inputs(&mut working, &object, |o| callbacks.launch_context(o))?;
        let stale = SessionStaleCheck::new(api.clone(), &session, obj.name_any());
        let flush = SessionFlush::new(&session, desired.clone());
        let intents = SessionIntents::new(&session);
        let result = {
            let mut hooks = DeprovisionHooks::new()
                .stale_check(&stale)
                .status_flush(&flush)
                .intents(&intents);
            self.lifecycle
                .run_deprovisioning_lifecycle(&view, &mut jobs, &ctx, &mut hooks)
                .await
        };
        working.provisioning_status_mut().provisioning_jobs = jobs;
        if let Some(failed) = latest_failed_deprovision(working.provisioning_jobs(), None) {
            callbacks.on_deprovision_failed(&mut working, &failed);
        }
        show_launch_blocked(&mut working, result.as_ref().err(), &self.lifecycle);
        // As on apply: no status write when the cache proved stale (the API server already
        // holds a newer deprovision job); the next reconcile works on the fresh object.
        let stale_cache = matches!(&result, Ok(o) if o.step == DeprovisionStep::StaleCache);
        self.persist(&session, obj, &working, &object, stale_cache)
            .await?;
        let outcome = result.map_err(|source| lifecycle_error(&object, source))?;
        tracing::Span::current().record("action", "Deprovision");
        self.push_ended(obj, working.provisioning_jobs());

        let regarding = obj.object_ref(&());
        self.publish_deprovision_step(&outcome.step, &regarding)
            .await;
        self.publish_deprovision_failure(
            newly_failed_deprovision_job(
                obj.provisioning_jobs(),
                working.provisioning_jobs(),
                None,
            ),
            &regarding,
        )
        .await;
        if outcome.may_remove_finalizer() {
            tracing::info!(step = ?outcome.step, "deprovisioning finished; removing finalizer");
            return Ok(self.release(&regarding).await);
        }
        let requeue_after = self
            .push_requeue(
                outcome.requeue_after(),
                crate::push::deprovision_in_flight(&outcome.step),
            )
            .unwrap_or(self.lifecycle.policy().poll_interval);
        tracing::debug!(step = ?outcome.step, "deprovisioning not finished");
        Err(self.keep_finalizer(obj, &session, requeue_after))
    }

    // ---- The steps every reconcile body shares (single- and multi-target alike), so that a
    // fix to one reaches both: persisting the status, concluding an apply, releasing or
    // keeping the finalizer.

    /// Writes the working copy's status when it changed (not when the cache proved stale:
    /// the next reconcile works on the fresh object) and counts the session's writes.
    pub(crate) async fn persist(
        &self,
        session: &StatusSession<K>,
        obj: &K,
        working: &K,
        object: &str,
        stale_cache: bool,
    ) -> Result<(), ReconcileError> {
        let written = if stale_cache {
            Ok(())
        } else {
            self.write_if_changed(session, obj, working, object).await
        };
        self.record_writes(session);
        // Until the reconcile's outcome is known (`conclude` / `keep_finalizer` on success, the
        // error backoff on failure), its writes are noted, not yet an echo.
        self.own_writes.note_unsettled(
            obj.meta().uid.as_deref().unwrap_or_default(),
            session.own_write_versions(),
        );
        written
    }

    /// The end of an apply: push bookkeeping for the jobs now recorded, the own-write echo
    /// window, and the action (the lifecycle's requeue, or the resync for a converged object).
    /// The single-target path calls it right after its status write, before publishing Events
    /// (as it always did); the multi-target path after its Events, as before.
    pub(crate) fn conclude(
        &self,
        obj: &K,
        session: &StatusSession<K>,
        jobs: &[JobStatus],
        requeue: Option<std::time::Duration>,
    ) -> Action {
        self.push_ended(obj, jobs);
        self.remember_own_write(obj, session, requeue);
        self.action(requeue)
    }

    /// Deprovisioning finished: the `Deprovisioned` Event; kube-runtime removes the finalizer.
    pub(crate) async fn release(&self, regarding: &ObjectReference) -> Action {
        self.events
            .publish(&JobEvent::Deprovisioned, regarding)
            .await;
        Action::await_change()
    }

    /// Deprovisioning not finished: the finalizer stays, the object comes back after
    /// `requeue_after` (the echo of this reconcile's writes keeps that requeue).
    pub(crate) fn keep_finalizer(
        &self,
        obj: &K,
        session: &StatusSession<K>,
        requeue_after: std::time::Duration,
    ) -> FinalizerStep {
        self.remember_own_write(obj, session, Some(requeue_after));
        tracing::debug!(?requeue_after, "keeping the finalizer");
        self.record_finalizer_hold();
        FinalizerStep::Keep(Action::requeue(requeue_after))
    }

    /// Publishes the Event of a failed reconcile (lifecycle errors only), once per failed
    /// reconcile, i.e. once per backoff step. The Event's action carries a fingerprint of its
    /// note, so a new error is a new Event while a repeat of the same error only bumps that
    /// Event's series count ([`crate::EventRecorder`], see [`crate::events`]).
    pub(crate) async fn publish_error(&self, error: &ReconcileError, regarding: &ObjectReference) {
        if let ReconcileError::Lifecycle { source, .. } = error {
            self.events
                .publish(
                    &JobEvent::for_lifecycle_error(source, &self.lifecycle),
                    regarding,
                )
                .await;
        }
    }

    pub(crate) fn session(
        &self,
        api: &Api<K>,
        obj: &K,
        object: &str,
    ) -> Result<StatusSession<K>, ReconcileError> {
        StatusSession::new(api.clone(), obj, self.status.clone()).map_err(|source| {
            ReconcileError::Status {
                object: object.to_owned(),
                source,
            }
        })
    }

    /// After a successful reconcile of `obj` that asked to come back after `requeue`: the
    /// versions its status writes produced (since its last read) come back as watch events,
    /// and a reconcile of one of them keeps this requeue (see `own_writes`).
    pub(crate) fn remember_own_write(
        &self,
        obj: &K,
        session: &StatusSession<K>,
        requeue: Option<std::time::Duration>,
    ) {
        let uid = obj.meta().uid.as_deref().unwrap_or_default();
        let written = session.own_write_versions();
        match requeue {
            Some(after) if !written.is_empty() => {
                self.own_writes
                    .record(uid, written, after, self.own_write_window);
            }
            _ => self.own_writes.forget(uid),
        }
    }

    /// Writes `working`'s status unless it equals what the API server is known to hold: the
    /// original status with the job list and desired version a flush may have persisted, or
    /// the status of a fresher copy the session read. A launch intent the engine resolved
    /// without recording a job is cleared by a write even when nothing else changed.
    pub(crate) async fn write_if_changed(
        &self,
        session: &StatusSession<K>,
        original: &K,
        working: &K,
        object: &str,
    ) -> Result<(), ReconcileError> {
        let server_jobs = session.server_jobs();
        let mut baseline = original.clone();
        if let Some(flushed) = session.flushed_desired_config_version() {
            let s = baseline.provisioning_status_mut();
            s.provisioning_jobs.clone_from(&server_jobs);
            s.desired_config_version = flushed;
        }
        let status_of = |k: &K| {
            serde_json::to_value(k)
                .map(|v| v.get("status").cloned().unwrap_or_default())
                .map_err(|source| ReconcileError::Serialize {
                    object: object.to_owned(),
                    source,
                })
        };
        let merged_jobs = crate::flush::merge_job_histories(
            &server_jobs,
            working.provisioning_jobs(),
            self.status.max_history,
        );
        let mut target = working.clone();
        target.provisioning_status_mut().provisioning_jobs = merged_jobs;
        let target = status_of(&target)?;
        // Nothing to write when the API server holds it already: as of the copy the reconcile
        // started from, or of a fresher copy this reconcile read (a lagging cache would
        // otherwise rewrite what the previous reconcile wrote) — unless it still holds a launch
        // intent the engine resolved, which the write clears.
        let unchanged =
            target == status_of(&baseline)? || session.read_status().is_some_and(|s| s == target);
        if unchanged && !session.holds_resolved_intent() {
            return Ok(());
        }
        session
            .write_status(working)
            .await
            .map(drop)
            .map_err(|source| ReconcileError::Status {
                object: object.to_owned(),
                source,
            })
    }
}

/// The key of `obj`'s error backoff: its uid (a re-created object starts afresh), else its name.
pub(crate) fn backoff_key<K: ProvisionedResource>(obj: &K) -> String {
    match &obj.meta().uid {
        Some(uid) if !uid.is_empty() => uid.clone(),
        _ => display_name(obj),
    }
}

impl<K> AsRef<Provisioner<K>> for Provisioner<K> {
    fn as_ref(&self) -> &Provisioner<K> {
        self
    }
}

/// The condition type set while a launch is blocked because the idempotency lookup could not
/// prove that the pending attempt's job does not exist (status `True`, reason
/// `IdempotencyLookupFailed` — or `IdempotencyLookupDeferred` while the lookup waits for the
/// launch window of another process's intent to close ([`RetryLater`](provkit_lifecycle::RetryLater)),
/// message: the error chain without request ids, so it stays the same
/// — and writes no status — while the same error repeats). Removed once the attempt is resolved.
/// A `LaunchBlocked` Warning Event accompanies it (see [`crate::events`]), except while the
/// lookup only waits ([`ReconcileError::deferral`](crate::ReconcileError::deferral): the reconcile
/// then returns `Ok` with a requeue).
pub const LAUNCH_BLOCKED_CONDITION: &str = "LaunchBlocked";

/// Sets or removes the [`LAUNCH_BLOCKED_CONDITION`] on the working copy.
pub(crate) fn show_launch_blocked<K: ProvisionedResource>(
    working: &mut K,
    error: Option<&LifecycleError>,
    lifecycle: &Lifecycle,
) {
    let now = lifecycle.clock().now();
    let conditions = &mut working.provisioning_status_mut().conditions;
    match error {
        Some(e @ LifecycleError::IdempotencyLookup { .. }) => {
            let message = lifecycle.error_status_text(e);
            let reason = if provkit_lifecycle::find_retry_later(e).is_some() {
                "IdempotencyLookupDeferred"
            } else {
                "IdempotencyLookupFailed"
            };
            crate::status::set_condition(
                conditions,
                crate::status::NewCondition {
                    type_: LAUNCH_BLOCKED_CONDITION,
                    status: crate::status::ConditionStatus::True,
                    reason,
                    message: &message,
                    observed_generation: None,
                },
                now,
            );
        }
        Some(_) => {}
        None => conditions.retain(|c| c.type_ != LAUNCH_BLOCKED_CONDITION),
    }
}

/// The lifecycle's inputs from the working copy: its resource view, its launch context and its
/// job history (taken out of `working`; the caller puts it back after the lifecycle ran).
pub(crate) fn lifecycle_inputs<K: ProvisionedResource>(
    working: &mut K,
    object: &str,
    launch_context: impl FnOnce(&K) -> LaunchContext,
) -> Result<(ResourceView, LaunchContext, Vec<JobStatus>), ReconcileError> {
    let view = resource_view(working).map_err(|source| ReconcileError::Serialize {
        object: object.to_owned(),
        source,
    })?;
    let ctx = launch_context(working);
    let jobs = std::mem::take(&mut working.provisioning_status_mut().provisioning_jobs);
    Ok((view, ctx, jobs))
}

pub(crate) fn lifecycle_error(object: &str, source: LifecycleError) -> ReconcileError {
    ReconcileError::Lifecycle {
        object: object.to_owned(),
        source,
    }
}

/// A resync `period` shortened by up to a tenth: `roll` in `0.0..1.0` picks how much.
fn resync_delay(period: std::time::Duration, roll: f64) -> std::time::Duration {
    provkit_core::backoff::Jitter::Shorten { max_fraction: 0.1 }.apply_with(period, || roll)
}

#[cfg(test)]
mod resync_tests {
    use super::resync_delay;

    #[test]
    fn a_resync_comes_back_within_the_last_tenth_of_its_period() {
        let period = std::time::Duration::from_secs(600);
        assert_eq!(resync_delay(period, 0.0), period);
        assert_eq!(
            resync_delay(period, 0.5),
            std::time::Duration::from_secs(570)
        );
        assert_eq!(
            resync_delay(period, 1.0),
            std::time::Duration::from_secs(540)
        );
        assert_eq!(
            resync_delay(period, 7.0),
            std::time::Duration::from_secs(540)
        );
    }
}
