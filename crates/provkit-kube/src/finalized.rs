//! The frame of every reconcile, shared by [`Provisioner`] and
//! [`MultiTargetProvisioner`](crate::MultiTargetProvisioner): the `provkit.reconcile` span, the
//! management-state hook, the stale copy of an object whose finalizer this controller already
//! removed, and kube-runtime's [`finalizer`](kube::runtime::finalizer()) around the apply and
//! cleanup steps.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::{Api, ResourceExt};
use tracing::Instrument;

use crate::adapters::display_name;
use crate::error::{FinalizerStep, ReconcileError};
use crate::management::Management;
use crate::reconcile::Provisioner;
use crate::resource::ProvisionedResource;

impl<K: ProvisionedResource> Provisioner<K> {
    /// Runs `apply` (the object is live) or `cleanup` (it is being deleted) inside the frame
    /// described in the module docs. `cleanup` returning `Ok` lets kube-runtime remove the
    /// finalizer; [`FinalizerStep::Keep`] keeps it and becomes `Ok(action)`.
    pub(crate) async fn run_finalized<A, FA, C, FC>(
        &self,
        obj: Arc<K>,
        apply: A,
        cleanup: C,
    ) -> Result<Action, ReconcileError>
    where
        A: FnOnce(Api<K>, Arc<K>) -> FA,
        FA: Future<Output = Result<Action, FinalizerStep>>,
        C: FnOnce(Api<K>, Arc<K>) -> FC,
        FC: Future<Output = Result<Action, FinalizerStep>>,
    {
        let object = display_name(obj.as_ref());
        let span = tracing::info_span!(
            "provkit.reconcile",
            object.ref = %object,
            object.kind = %K::kind(&()),
            action = tracing::field::Empty,
            job_id = tracing::field::Empty,
        );
        // Only for the duration metric; no decision reads it.
        let started = tokio::time::Instant::now();
        let result = async move {
            if self
                .management
                .management(obj.annotations(), obj.meta().deletion_timestamp.is_some())
                == Management::Skip
            {
                tracing::Span::current().record("action", "Unmanaged");
                tracing::debug!("skipping object per management-state policy");
                return Ok(Action::await_change());
            }
            let uid = obj.meta().uid.clone().unwrap_or_default();
            let key = crate::reconcile::backoff_key(obj.as_ref());
            let regarding = obj.object_ref(&());
            let deleting = obj.meta().deletion_timestamp.is_some();
            if deleting && !uid.is_empty() {
                if !obj.finalizers().contains(&self.finalizer) {
                    self.removed.forget(&uid);
                } else if self.removed.contains(&uid) {
                    tracing::debug!(
                        "finalizer already removed by this controller; ignoring a stale cached copy"
                    );
                    return Ok(Action::await_change());
                }
            }
            let pushed = self.push_started(obj.as_ref());
            if !pushed
                && let Some(left) = self
                    .own_writes
                    .pending(&uid, obj.meta().resource_version.as_deref())
            {
                tracing::Span::current().record("action", "OwnWrite");
                tracing::debug!(
                    ?left,
                    "the object is as this controller's last status write left it; keeping that reconcile's requeue"
                );
                return Ok(Action::requeue(left));
            }
            // Whatever an earlier reconcile left is not this one's to settle.
            self.own_writes.forget(&uid);
            let api = self.api_for(&obj);
            let removing = AtomicBool::new(false);
            let result = finalizer(&api, &self.finalizer, obj, |event| async {
                match event {
                    FinalizerEvent::Apply(o) => apply(api.clone(), o).await,
                    FinalizerEvent::Cleanup(o) => {
                        let step = cleanup(api.clone(), o).await;
                        removing.store(step.is_ok(), Ordering::Relaxed);
                        step
                    }
                }
            })
            .await;
            if result.is_ok() && removing.load(Ordering::Relaxed) && !uid.is_empty() {
                self.removed.record(&uid);
            }
            let result = ReconcileError::from_finalizer(&object, result);
            // A lookup waiting for a launch window to close is a wait, not a failure: the
            // object shows it (`LaunchBlocked`, `IdempotencyLookupDeferred`), no Warning Event
            // or error is reported, and the reconcile comes back once the window has closed —
            // but no sooner than the error backoff's next step, as before: spread like that,
            // the lookups of attempts deferred together come back after more of their windows
            // have closed, and one shared read can answer more of them (coming back exactly at
            // the window's end was tried and not found cheaper: docs/performance.md, stop 44).
            if let Err(error) = &result
                && error.deferral().is_some()
            {
                let (delay, _) = self.failure_delay(&key, error);
                tracing::Span::current().record("action", "LookupDeferred");
                tracing::debug!(
                    reason = %crate::ErrorChain(error),
                    retry_in = ?delay,
                    "idempotency lookup deferred"
                );
                self.own_writes.settle(&uid, delay, self.own_write_window);
                return Ok(Action::requeue(delay));
            }
            match &result {
                Ok(_) => self.backoff.succeeded(&key),
                Err(error) => {
                    // The failure is counted now, so the echo of this reconcile's writes
                    // (which comes back at once) keeps the backoff's delay instead of running
                    // the failing step again; the error policy requeues after the same delay.
                    let (delay, _) = self.failure_delay(&key, error);
                    self.backoff.decide(&key, delay);
                    self.own_writes.settle(&uid, delay, self.own_write_window);
                    self.publish_error(error, &regarding).await;
                }
            }
            result
        }
        .instrument(span)
        .await;
        self.record_reconcile(result.is_ok(), started);
        result
    }
}
