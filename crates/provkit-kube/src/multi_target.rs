//! Multi-target resources in a controller: [`MultiTargetProvisioner`] runs a
//! [`MultiTargetLifecycle`] (one resource provisioned through several targets, e.g. a cluster and
//! its storage, each with its own provider) inside kube-runtime's `Controller`, with everything
//! [`Provisioner`] does for a single target.
//!
//! # What is shared with [`Provisioner`]
//! The reconcile frame (management-state hook, finalizer, stale cached copies), the status
//! session (flush after each launch, conflict-safe end-of-reconcile write), the uncached
//! stale-cache check, the durable launch intent (one `status.launchIntent` slot for all targets,
//! see [`MultiTargetLifecycle`]'s module docs) and the Events are the single-target code; only
//! the engine call and the per-target results differ.
//!
//! # Rules
//! - Every job carries its target (`status.provisioningJobs[].target`); untagged jobs of a
//!   resource that had one target go to the target that absorbs the legacy history, and the
//!   backfill is written with the next status write.
//! - Every target runs in every reconcile; failures of some targets are reported together
//!   ([`ReconcileError::Targets`]) after the status write, so nothing another target recorded
//!   is lost.
//! - The controller comes back at the soonest requeue of all targets; the finalizer goes only
//!   when every target allows it.
//! - The end-of-reconcile write is skipped when a target found the cache stale and no target
//!   changed the history (as for a single target: the next reconcile works on the fresh copy).

use std::fmt;
use std::sync::Arc;

use kube::runtime::controller::Action;
use kube::{Api, Client, ResourceExt};
use provkit_lifecycle::{
    DeprovisionHooks, DeprovisionStep, LaunchContext, LifecycleError, MultiTargetHooks,
    MultiTargetLifecycle, MultiTargetOutcome, Outcome, ProvisionStatus, ProvisionStep,
};

use crate::adapters::{SessionFlush, SessionIntents, SessionStaleCheck, display_name};
use crate::error::{FinalizerStep, ReconcileError};
use crate::events::{latest_failed_deprovision, newly_failed_deprovision_job};
use crate::flush::StatusWriteConfig;
use crate::reconcile::{NoCallbacks, Provisioner, lifecycle_inputs, show_launch_blocked};
use crate::resource::ProvisionedResource;

/// User callbacks of [`MultiTargetProvisioner::reconcile`]: [`ProvisioningCallbacks`]
/// with the target's name on the per-job callbacks. Every method has a no-op default.
///
/// [`ProvisioningCallbacks`]: crate::ProvisioningCallbacks
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait MultiTargetCallbacks<K: Send + Sync + 'static>: Send + Sync {
    /// Before the targets run on apply; `config_applied` is true when **every** target's latest
    /// provision job applied the desired config version.
    fn on_apply(&self, obj: &mut K, config_applied: bool) {
        let _ = (obj, config_applied);
    }
    /// A poll saw `target`'s provision job fail.
    fn on_failed(&self, obj: &mut K, target: &str, message: &str) {
        let _ = (obj, target, message);
    }
    /// A poll saw `target`'s provision job succeed; `status.outputs` holds the job's outputs.
    fn on_succeeded(&self, obj: &mut K, target: &str, status: &ProvisionStatus) {
        let _ = (obj, target, status);
    }
    /// Before the targets run on deletion.
    fn on_deleting(&self, obj: &mut K) {
        let _ = obj;
    }
    /// After the targets ran on deletion, for each target whose latest deprovision job failed
    /// or was canceled (`message` is its message): as
    /// [`ProvisioningCallbacks::on_deprovision_failed`](crate::ProvisioningCallbacks::on_deprovision_failed),
    /// with the target's name.
    fn on_deprovision_failed(&self, obj: &mut K, target: &str, message: &str) {
        let _ = (obj, target, message);
    }
    /// The launch context of this object's launches (all targets).
    fn launch_context(&self, obj: &K) -> LaunchContext {
        let _ = obj;
        LaunchContext::new()
    }
}

impl<K: Send + Sync + 'static> MultiTargetCallbacks<K> for NoCallbacks {}

/// [`Provisioner`] for a resource whose spec drives several targets, each with its own provider
/// and its own jobs in the shared history. Build one at start-up, put it in the controller
/// context, and call [`reconcile`](Self::reconcile) from the controller's reconcile function.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use provkit_kube::{MultiTargetProvisioner, NoCallbacks, ProvisionedResource, ReconcileError};
/// # use provkit_lifecycle::{JobTarget, Lifecycle, MultiTargetLifecycle};
/// # fn build<K: ProvisionedResource>(client: kube::Client, cluster: Lifecycle, storage: Lifecycle) -> Result<MultiTargetProvisioner<K>, provkit_lifecycle::TargetError> {
/// let targets = MultiTargetLifecycle::new([
///     JobTarget::new("cluster", cluster).absorbs_legacy_history(),
///     JobTarget::new("storage", storage),
/// ])?;
/// Ok(MultiTargetProvisioner::new(client, targets, "example.com/cluster-finalizer"))
/// # }
/// async fn reconcile<K: ProvisionedResource>(
///     obj: Arc<K>,
///     ctx: Arc<MultiTargetProvisioner<K>>,
/// ) -> Result<kube::runtime::controller::Action, ReconcileError> {
///     ctx.reconcile(obj, &NoCallbacks).await
/// }
/// ```
pub struct MultiTargetProvisioner<K> {
    /// The shared settings (finalizer, management, events, status writes, hasher); its engine is
    /// the first target's, used only for its clock.
    base: Provisioner<K>,
    targets: MultiTargetLifecycle,
}

impl<K> fmt::Debug for MultiTargetProvisioner<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiTargetProvisioner")
            .field("base", &self.base)
            .field("targets", &self.targets)
            .finish()
    }
}

impl<K: ProvisionedResource> MultiTargetProvisioner<K> {
    /// A provisioner for `targets` with [`Provisioner::new`]'s neutral defaults; status writes
    /// cap the shared history at the largest of the targets' caps.
    pub fn new(
        client: Client,
        targets: MultiTargetLifecycle,
        finalizer: impl Into<String>,
    ) -> Self {
        let status = StatusWriteConfig::default().with_max_history(targets.max_history());
        let base = Provisioner::new(client, targets.primary().clone(), finalizer)
            .with_status_writes(status);
        Self { base, targets }
    }

    /// Changes the shared settings with [`Provisioner`]'s builder methods
    /// (`with_management`, `with_events`, `with_status_writes`, `with_field_manager`,
    /// `with_hasher`).
    ///
    /// ```no_run
    /// # fn f<K: provkit_kube::ProvisionedResource>(p: provkit_kube::MultiTargetProvisioner<K>) {
    /// use provkit_kube::ManagementStatePolicy;
    /// let p = p.configure(|p| p.with_management(ManagementStatePolicy::osac()).with_field_manager("cluster-operator"));
    /// # }
    /// ```
    #[must_use]
    pub fn configure(mut self, f: impl FnOnce(Provisioner<K>) -> Provisioner<K>) -> Self {
        self.base = f(self.base);
        self
    }

    /// The multi-target engine.
    #[must_use]
    pub fn targets(&self) -> &MultiTargetLifecycle {
        &self.targets
    }

    /// The finalizer name.
    #[must_use]
    pub fn finalizer(&self) -> &str {
        self.base.finalizer()
    }

    /// One reconcile of `obj`: [`Provisioner::reconcile`]'s flow with every target run (see the
    /// module docs for the rules).
    ///
    /// # Errors
    /// [`ReconcileError`], for failures only; [`ReconcileError::Targets`] when some targets
    /// failed (after the status write).
    pub async fn reconcile<C>(&self, obj: Arc<K>, callbacks: &C) -> Result<Action, ReconcileError>
    where
        C: MultiTargetCallbacks<K> + ?Sized,
    {
        self.base
            .run_finalized(
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
        C: MultiTargetCallbacks<K> + ?Sized,
    {
        let object = display_name(obj);
        let mut working = obj.clone();
        let desired = self
            .base
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
            .targets
            .is_config_applied(working.provisioning_jobs(), &desired);
        callbacks.on_apply(&mut working, applied);

        let session = self.base.session(api, obj, &object)?;
        let (view, ctx, mut jobs) =
            lifecycle_inputs(&mut working, &object, |o| callbacks.launch_context(o))?;
        let stale = SessionStaleCheck::new(api.clone(), &session, obj.name_any());
        let flush = SessionFlush::new(&session, desired.clone());
        let intents = SessionIntents::new(&session);

        let mut failed: Vec<(String, String)> = Vec::new();
        let mut succeeded: Vec<(String, ProvisionStatus)> = Vec::new();
        let out = {
            let mut hooks = MultiTargetHooks::new()
                .stale_check(&stale)
                .status_flush(&flush)
                .intents(&intents)
                .on_failed(|t, m| failed.push((t.to_owned(), m.to_owned())))
                .on_success(|t, s| succeeded.push((t.to_owned(), s.clone())));
            self.targets
                .run_provisioning_lifecycle(&view, &mut jobs, &desired, &ctx, &mut hooks)
                .await
        };
        working.provisioning_status_mut().provisioning_jobs = jobs;
        self.show_launch_blocked(&mut working, &out);
        for (target, message) in &failed {
            callbacks.on_failed(&mut working, target, message);
        }
        for (target, status) in &succeeded {
            callbacks.on_succeeded(&mut working, target, status);
        }
        let stale_cache = out
            .targets
            .iter()
            .any(|t| matches!(&t.result, Ok(o) if o.step == ProvisionStep::StaleCache));
        self.base
            .persist(
                &session,
                obj,
                &working,
                &object,
                stale_cache && !out.history_changed,
            )
            .await?;
        let regarding = obj.object_ref(&());
        for t in &out.targets {
            if let Ok(o) = &t.result {
                let message = failed
                    .iter()
                    .find(|(name, _)| *name == t.target)
                    .map(|(_, m)| m.as_str());
                self.base
                    .publish_provision_step(&o.step, message, &regarding)
                    .await;
            }
        }
        let stretched = self.push_requeue(&out, |o| {
            (o.requeue_after(), crate::push::provision_in_flight(&o.step))
        });
        let requeue = stretched(self.outcome_of(&object, out)?).requeue_after();
        Ok(self
            .base
            .conclude(obj, &session, working.provisioning_jobs(), requeue))
    }

    /// `Ok` lets kube-runtime remove the finalizer; [`FinalizerStep::Keep`] keeps it.
    async fn cleanup<C>(
        &self,
        api: &Api<K>,
        obj: &K,
        callbacks: &C,
    ) -> Result<Action, FinalizerStep>
    where
        C: MultiTargetCallbacks<K> + ?Sized,
    {
        let object = display_name(obj);
        let mut working = obj.clone();
        callbacks.on_deleting(&mut working);
        let desired = working
            .provisioning_status()
            .map(|s| s.desired_config_version.clone())
            .unwrap_or_default();
        let session = self.base.session(api, obj, &object)?;
        let (view, ctx, mut jobs) =
            lifecycle_inputs(&mut working, &object, |o| callbacks.launch_context(o))?;
        let stale = SessionStaleCheck::new(api.clone(), &session, obj.name_any());
        let flush = SessionFlush::new(&session, desired.clone());
        let intents = SessionIntents::new(&session);
        let out = {
            let mut hooks = DeprovisionHooks::new()
                .stale_check(&stale)
                .status_flush(&flush)
                .intents(&intents);
            self.targets
                .run_deprovisioning_lifecycle(&view, &mut jobs, &ctx, &mut hooks)
                .await
        };
        working.provisioning_status_mut().provisioning_jobs = jobs;
        for t in &out.targets {
            if let Some(failed) =
                latest_failed_deprovision(working.provisioning_jobs(), Some(&t.target))
            {
                callbacks.on_deprovision_failed(&mut working, &t.target, &failed);
            }
        }
        self.show_launch_blocked(&mut working, &out);
        let stale_cache = out
            .targets
            .iter()
            .any(|t| matches!(&t.result, Ok(o) if o.step == DeprovisionStep::StaleCache));
        self.base
            .persist(
                &session,
                obj,
                &working,
                &object,
                stale_cache && !out.history_changed,
            )
            .await?;
        let regarding = obj.object_ref(&());
        for t in &out.targets {
            if let Ok(o) = &t.result {
                self.base
                    .publish_deprovision_step(&o.step, &regarding)
                    .await;
            }
            let failed = newly_failed_deprovision_job(
                obj.provisioning_jobs(),
                working.provisioning_jobs(),
                Some(&t.target),
            );
            self.base
                .publish_deprovision_failure(failed, &regarding)
                .await;
        }
        self.base.push_ended(obj, working.provisioning_jobs());
        if out.may_remove_finalizer() {
            tracing::info!("every target finished deprovisioning; removing finalizer");
            return Ok(self.base.release(&regarding).await);
        }
        let stretched = self.push_requeue(&out, |o| {
            (
                o.requeue_after(),
                crate::push::deprovision_in_flight(&o.step),
            )
        });
        let outcome = stretched(self.outcome_of(&object, out)?);
        let requeue_after = match outcome {
            Outcome::RequeueAfter(d) => d,
            Outcome::Done => self.targets.primary().policy().poll_interval,
        };
        tracing::debug!("deprovisioning not finished for every target");
        Err(self.base.keep_finalizer(obj, &session, requeue_after))
    }

    /// Shows the first target's blocked launch (or clears the condition when no target failed).
    fn show_launch_blocked<T>(&self, working: &mut K, out: &MultiTargetOutcome<T>) {
        let errors: Vec<&LifecycleError> = out
            .targets
            .iter()
            .filter_map(|t| t.result.as_ref().err())
            .collect();
        let shown = errors
            .iter()
            .find(|e| matches!(e, LifecycleError::IdempotencyLookup { .. }))
            .or(errors.first())
            .copied();
        show_launch_blocked(working, shown, self.targets.primary());
    }

    /// With push wake-ups: the soonest requeue of the targets once each target whose job is in
    /// flight comes back at the long interval while the stream is healthy (`requeue_of`: a
    /// target's requeue and whether its job is in flight); to be applied to the outcome of
    /// `out` (unchanged when it is `Done`).
    fn push_requeue<T>(
        &self,
        out: &MultiTargetOutcome<T>,
        requeue_of: impl Fn(&T) -> (Option<std::time::Duration>, bool),
    ) -> impl FnOnce(Outcome) -> Outcome + 'static {
        let soonest: Option<std::time::Duration> = out
            .targets
            .iter()
            .filter_map(|t| t.result.as_ref().ok())
            .filter_map(|o| {
                let (requeue, in_flight) = requeue_of(o);
                self.base.push_requeue(requeue, in_flight)
            })
            .min();
        move |outcome| match (outcome, soonest) {
            (Outcome::RequeueAfter(_), Some(after)) => Outcome::RequeueAfter(after),
            (other, _) => other,
        }
    }

    fn outcome_of<T>(
        &self,
        object: &str,
        out: MultiTargetOutcome<T>,
    ) -> Result<Outcome, ReconcileError> {
        out.into_result().map_err(|source| ReconcileError::Targets {
            object: object.to_owned(),
            source,
        })
    }
}

/// The shared frame's [`Provisioner`]: the free [`error_policy`](crate::error_policy()) finds
/// the per-object error backoff through it.
impl<K> AsRef<Provisioner<K>> for MultiTargetProvisioner<K> {
    fn as_ref(&self) -> &Provisioner<K> {
        &self.base
    }
}
