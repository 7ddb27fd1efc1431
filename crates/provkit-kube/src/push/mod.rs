//! Push wake-ups: a job's final status, pushed by the provider's backend, wakes the reconcile of
//! the object waiting for it at once; polling stays the safety net.
//!
//! [`PushWakeups`] keeps a map job id → object, fed by every reconcile of a
//! [`Provisioner`](crate::Provisioner) or [`MultiTargetProvisioner`](crate::MultiTargetProvisioner)
//! built [`with_push`](crate::Provisioner::with_push): the in-flight jobs of the object's status
//! as the reconcile starts (so the jobs read at start-up are known after the first reconcile of
//! each object) and as it ends (a launch adds its job). [`PushWakeups::run`] consumes a stream
//! of [`PushSignal`]s (for AAP: `provkit_aap::AapClient::job_status_stream().signals()`):
//!
//! - a final status of a known job wakes that object ([`PushWakeups::triggers`]); the reconcile
//!   confirms the outcome with one read of the job (the message decides nothing: it has no
//!   artifacts and may arrive twice). A wake-up is never taken for the watch echo of this
//!   controller's own status write ([`with_own_write_window`](crate::Provisioner::with_own_write_window));
//! - a final status of an unknown job (every user's jobs are announced) wakes nothing; it is
//!   remembered for a while, since a job can end before the reconcile that launched it has
//!   recorded it;
//! - while the stream is [`Healthy`](PushHealth::Healthy), in-flight jobs are polled at the long
//!   interval of the [`PollCadence`]; every confirmed (re)subscription re-polls every in-flight
//!   job once (nothing is replayed); when the stream drops, every waiting object gets a wake-up
//!   within one normal poll interval and polls at the normal interval from then on.
//!
//! **Only the leader subscribes**: run [`PushWakeups::run`] inside the future the
//! [`LeaderElector`](crate::LeaderElector) runs while leading, beside the controller, and give
//! each leadership term a new `PushWakeups` (its trigger stream is taken once).
//!
//! The trigger stream goes into the controller: `Controller::reconcile_on` needs kube's
//! unstable feature `unstable-runtime-reconcile-on` (this crate does not enable it);
//! [`WakeupController`] builds the same controller on kube-runtime's stable
//! [`applier`](kube::runtime::applier()).

mod controller;
mod registry;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt as _};
use kube::runtime::reflector::ObjectRef;
use provkit_core::JobStatus;
use provkit_lifecycle::push::{PollCadence, PushHealth, PushSignal};
use provkit_lifecycle::{DeprovisionStep, ProvisionStep};
use tokio::sync::mpsc;
use tokio::time::Instant;

pub use controller::WakeupController;
use registry::{Key, Registry};

/// How long the final status of a job nobody waits for is remembered (its launching reconcile
/// may still be running).
const RECENT_WINDOW: Duration = Duration::from_secs(300);
/// At most this many such statuses are remembered.
const RECENT_CAP: usize = 100_000;

/// Counters of a [`PushWakeups`], for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushStats {
    /// The stream's health now.
    pub health: PushHealth,
    /// Objects waiting for a job now.
    pub tracked: usize,
    /// Objects woken by a final status of their job.
    pub woken: u64,
    /// Final statuses of jobs nobody here waited for (dropped).
    pub unknown: u64,
    /// Objects woken when their job was recorded after its final status had arrived.
    pub late: u64,
    /// Confirmed (re)subscriptions, each re-polling every in-flight job once.
    pub bursts: u64,
    /// Objects re-polled by those bursts, in all.
    pub repolled: u64,
    /// The largest burst.
    pub largest_burst: u64,
    /// The last burst.
    pub last_burst: u64,
    /// Times the stream stopped being healthy.
    pub drops: u64,
    /// Objects woken to resume the normal poll cadence after a drop.
    pub spread: u64,
}

#[derive(Debug)]
struct Shared {
    registry: Mutex<Registry>,
    cadence: PollCadence,
    tx: mpsc::UnboundedSender<Key>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Key>>>,
}

/// The job id → object map and the push stream's state for one controller (one kind of object)
/// during one leadership term. Cheap to clone (shared). See the [module docs](self).
#[derive(Clone, Debug)]
pub struct PushWakeups {
    shared: Arc<Shared>,
}

impl PushWakeups {
    /// Wake-ups with this poll cadence: `cadence.normal` should be the lifecycle's poll interval
    /// (the cadence when the stream is down), `cadence.while_healthy` the safety net.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_kube::push::PushWakeups;
    /// use provkit_lifecycle::push::PollCadence;
    /// let wakeups = PushWakeups::new(
    ///     PollCadence::new(Duration::from_secs(30)).with_while_healthy(Duration::from_secs(900)),
    /// );
    /// assert_eq!(wakeups.stats().tracked, 0);
    /// ```
    pub fn new(cadence: PollCadence) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            shared: Arc::new(Shared {
                registry: Mutex::new(Registry::new(RECENT_WINDOW, RECENT_CAP)),
                cadence,
                tx,
                rx: Mutex::new(Some(rx)),
            }),
        }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.shared
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The poll cadence.
    pub fn cadence(&self) -> PollCadence {
        self.shared.cadence
    }

    /// The stream's health now.
    pub fn health(&self) -> PushHealth {
        self.registry().health()
    }

    /// The counters.
    pub fn stats(&self) -> PushStats {
        let r = self.registry();
        let c = r.counts;
        PushStats {
            health: r.health(),
            tracked: r.tracked(),
            woken: c.woken,
            unknown: c.unknown,
            late: c.late,
            bursts: c.bursts,
            repolled: c.repolled,
            largest_burst: c.largest_burst,
            last_burst: c.last_burst,
            drops: c.drops,
            spread: c.spread,
        }
    }

    /// The objects to reconcile now, for the controller (`Controller::reconcile_on`, or
    /// [`WakeupController`]). Taken once: a second call gets an empty stream.
    pub fn triggers<K>(&self) -> impl Stream<Item = ObjectRef<K>> + Send + use<K>
    where
        K: kube::Resource<DynamicType = ()> + 'static,
    {
        let rx = self
            .shared
            .rx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        futures::stream::unfold(rx, |rx| async move {
            let mut rx = rx?;
            let key = rx.recv().await?;
            let mut r = ObjectRef::<K>::new(&key.name);
            if let Some(ns) = &key.namespace {
                r = r.within(ns);
            }
            Some((r, Some(rx)))
        })
    }

    fn wake(&self, keys: Vec<Key>) {
        for key in keys {
            let _ = self.shared.tx.send(key);
        }
    }

    /// Consumes `signals` until the stream ends: wakes objects on final statuses, re-polls
    /// after each confirmed (re)subscription, spreads wake-ups over one normal interval after a
    /// drop. Run it while leading, beside the controller.
    pub async fn run<S>(&self, signals: S)
    where
        S: Stream<Item = PushSignal> + Send,
    {
        let mut signals = std::pin::pin!(signals);
        loop {
            let next_spread = self.registry().next_spread();
            let signal = match next_spread {
                Some(at) => tokio::select! {
                    signal = signals.next() => signal,
                    () = tokio::time::sleep_until(at) => {
                        let due = self.registry().due_spread(Instant::now());
                        self.wake(due);
                        continue;
                    }
                },
                None => signals.next().await,
            };
            let Some(signal) = signal else { return };
            self.apply(signal);
        }
    }

    /// Applies one signal (what [`run`](Self::run) does with each).
    pub fn apply(&self, signal: PushSignal) {
        let now = Instant::now();
        let keys = match signal {
            PushSignal::JobFinished { job_id } => {
                let woken = self.registry().finished(&job_id, now);
                if woken.is_none() {
                    tracing::trace!(job_id, "final status of a job no object waits for");
                }
                woken.into_iter().collect()
            }
            PushSignal::Stream(transition) => {
                let normal = self.shared.cadence.normal;
                let keys = self
                    .registry()
                    .transition(transition, now, normal, fastrand::f64);
                if !keys.is_empty() {
                    tracing::info!(
                        objects = keys.len(),
                        "push stream (re)subscribed; polling every in-flight job once"
                    );
                }
                keys
            }
        };
        self.wake(keys);
    }

    /// Records the in-flight jobs of `obj` (replacing what it waited for). True when one of
    /// them was announced final already; the object is then woken when `wake` is set.
    pub(crate) fn track<K: kube::Resource>(&self, obj: &K, jobs: &[JobStatus], wake: bool) -> bool {
        let uid = obj.meta().uid.as_deref().unwrap_or_default();
        let in_flight: Vec<String> = jobs
            .iter()
            .filter(|j| !j.state.is_terminal() && !j.job_id.is_empty())
            .map(|j| j.job_id.clone())
            .collect();
        let key = Key {
            name: obj.meta().name.clone().unwrap_or_default(),
            namespace: obj.meta().namespace.clone(),
        };
        let late = self.registry().track(uid, key.clone(), in_flight);
        if late && wake {
            self.wake(vec![key]);
        }
        late
    }

    /// Records that `obj` waits for the in-flight (non-final) jobs of `jobs`, replacing what it
    /// waited for, as a [`Provisioner`](crate::Provisioner) built `with_push` does at the start
    /// and end of every reconcile (for a controller of your own). Wakes the object at once when
    /// one of them was announced final already.
    pub fn record_jobs<K: kube::Resource>(&self, obj: &K, jobs: &[JobStatus]) {
        self.track(obj, jobs, true);
    }

    /// Whether the object with `uid` was woken by push since its last reconcile started.
    pub(crate) fn take_woken(&self, uid: &str) -> bool {
        !uid.is_empty() && self.registry().take_woken(uid)
    }

    /// The requeue after a step that left a job in flight (launched, recovered, polled and still
    /// running): the long interval while the stream is healthy.
    pub(crate) fn stretch(&self, requeue: Duration) -> Duration {
        if self.health() == PushHealth::Healthy {
            requeue.max(self.shared.cadence.while_healthy)
        } else {
            requeue
        }
    }
}

/// Whether a provisioning step leaves a job in flight that push will announce (its requeue is a
/// poll that push makes unnecessary while healthy).
pub(crate) fn provision_in_flight(step: &ProvisionStep) -> bool {
    match step {
        ProvisionStep::Launched { .. } | ProvisionStep::Recovered { .. } => true,
        ProvisionStep::Polled { state, .. } => !state.is_terminal(),
        _ => false,
    }
}

/// As [`provision_in_flight`] for deprovisioning.
pub(crate) fn deprovision_in_flight(step: &DeprovisionStep) -> bool {
    match step {
        DeprovisionStep::Launched { .. } | DeprovisionStep::Recovered { .. } => true,
        DeprovisionStep::Polled { state, .. } => !state.is_terminal(),
        _ => false,
    }
}
