//! Running a controller only while this replica holds the Lease: [`LeaderElector::run`].
//!
//! # The loop (client-go's `leaderelection.LeaderElector.Run`)
//! 1. **Acquire**: one election round every `retry_period` until this candidate holds the
//!    Lease (API errors are logged with their cause and retried).
//! 2. **Lead**: start the work (e.g. `Controller::run`) and renew every `retry_period`.
//!    A failed renewal (API server down, 5xx, a lost write race) is logged and retried; only
//!    when no renewal has succeeded for `renew_deadline` — measured from the start of the last
//!    successful one — does leadership end. Then the work future is **dropped at once**, which
//!    cancels every in-flight reconcile (kube-runtime runs them inside the controller
//!    stream), so this replica makes no write after its renew deadline. Each renewal attempt is
//!    itself cut off at the deadline, so a hanging request cannot stretch it.
//! 3. **Taken**: a round that finds another live holder ends leadership the same way.
//! 4. **Shutdown** (`SIGTERM`/`SIGINT`, see [`shutdown_signal`]): the work is told to stop
//!    through its [`CancellationToken`] (hand `token.cancelled_owned()` to
//!    `Controller::graceful_shutdown_on`), renewals go on while in-flight reconciles finish,
//!    and then the Lease is **released** (holder cleared), so a standby takes over at its
//!    next retry instead of waiting for the lease to expire.
//!
//! # Timing
//! Another candidate takes over only when `renewTime + lease_duration` has passed, while the
//! old leader stops at `last renewal start + renew_deadline`. `lease_duration -
//! renew_deadline` (5 s with the client-go defaults 15 s / 10 s / 2 s) is therefore the margin
//! for clock skew between replicas and for requests already on the wire.
//!
//! The durations use tokio's clock (so tests can pause time); the Lease's timestamps use the
//! elector's [`Clock`](provkit_core::Clock).

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, sleep_until, timeout_at};
pub use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::error_chain::ErrorChain;
use crate::leader::{LeaderElectionConfig, LeaderElector, LeaderError, Round};

/// Why leadership ended while leading.
#[derive(Debug)]
#[non_exhaustive]
pub enum LeadershipLost {
    /// An election round found another live holder.
    Taken {
        /// Its identity.
        holder: String,
    },
    /// No renewal succeeded within the renew deadline.
    RenewDeadlineExceeded {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The last renewal error, if a renewal failed (rather than hung).
        last_error: Option<LeaderError>,
    },
}

impl fmt::Display for LeadershipLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Taken { holder } => write!(f, "the lease is held by {holder}"),
            Self::RenewDeadlineExceeded {
                renew_deadline,
                last_error,
            } => {
                write!(f, "no lease renewal succeeded within {renew_deadline:?}")?;
                match last_error {
                    Some(e) => write!(f, "; last error: {}", ErrorChain(e)),
                    None => f.write_str("; the last attempt timed out"),
                }
            }
        }
    }
}

/// How [`LeaderElector::run`] ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum LeadershipEnd {
    /// Shutdown was requested before this candidate became leader; the work never ran.
    ShutdownBeforeLeading,
    /// Shutdown was requested while leading; the work finished and the Lease was given up
    /// (`released` is whether the release write succeeded).
    Shutdown {
        /// Whether the Lease was released.
        released: bool,
    },
    /// The work finished by itself while leading; the Lease was given up.
    WorkFinished {
        /// Whether the Lease was released.
        released: bool,
    },
    /// Leadership was lost; the work was cancelled. The process should exit (non-zero) or
    /// compete again.
    Lost(LeadershipLost),
}

impl LeaderElector {
    /// Waits for leadership, runs `work` while leading, and releases the Lease on shutdown
    /// (see the [module docs](self)). `shutdown` is usually [`shutdown_signal`]; `work` gets a
    /// token that is cancelled when shutdown is requested and should then finish its
    /// in-flight work and return.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use futures::StreamExt;
    /// # use kube::runtime::{Controller, controller::Action, watcher};
    /// # use k8s_openapi::api::coordination::v1::Lease;
    /// # use provkit_kube::{ProvisionedResource, Provisioner};
    /// # async fn reconcile<K: ProvisionedResource>(_: Arc<K>, _: Arc<Provisioner<K>>) -> Result<Action, provkit_kube::ReconcileError> { Ok(Action::await_change()) }
    /// # async fn demo<K: ProvisionedResource>(client: kube::Client, provisioner: Provisioner<K>) {
    /// use provkit_kube::{LeaderElectionConfig, LeaderElector, LeadershipEnd, default_identity, shutdown_signal};
    ///
    /// let elector = LeaderElector::with_config(
    ///     kube::Api::<Lease>::default_namespaced(client.clone()),
    ///     "my-operator",
    ///     default_identity(),
    ///     LeaderElectionConfig::default(),
    ///     Arc::new(provkit_core::SystemClock),
    /// );
    /// let api = kube::Api::<K>::all(client);
    /// let end = elector
    ///     .run(shutdown_signal(), |token| async move {
    ///         Controller::new(api, watcher::Config::default())
    ///             .graceful_shutdown_on(token.cancelled_owned())
    ///             .run(reconcile, provkit_kube::error_policy, Arc::new(provisioner))
    ///             .for_each(|_| async {})
    ///             .await;
    ///     })
    ///     .await;
    /// if matches!(end, LeadershipEnd::Lost(_)) {
    ///     std::process::exit(1);
    /// }
    /// # }
    /// ```
    pub async fn run<S, W, Fut>(&self, shutdown: S, work: W) -> LeadershipEnd
    where
        S: Future<Output = ()>,
        W: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let config = *self.config();
        tokio::pin!(shutdown);
        let acquired_at = loop {
            let started = Instant::now();
            tokio::select! {
                biased;
                () = &mut shutdown => {
                    // A round cut short may have just taken the Lease: give it back.
                    self.release().await;
                    return LeadershipEnd::ShutdownBeforeLeading;
                }
                round = self.round() => match round {
                    Ok(Round::Leading) => break started,
                    Ok(Round::HeldBy(holder)) => debug!(%holder, "not leader yet"),
                    Ok(Round::LostRace) => debug!("lost an election race; not leader yet"),
                    Err(e) => warn!(error = %ErrorChain(&e), "leader election attempt failed"),
                }
            }
            tokio::select! {
                biased;
                () = &mut shutdown => return LeadershipEnd::ShutdownBeforeLeading,
                () = sleep_until(started + config.retry_period()) => {}
            }
        };
        info!(
            identity = self.identity(),
            lease = self.lease_name(),
            renew_deadline = ?config.renew_deadline(),
            "became leader"
        );

        let token = CancellationToken::new();
        let led = {
            let work = work(token.clone());
            let hold = self.hold(acquired_at, &config);
            tokio::pin!(work, hold);
            let mut draining = false;
            loop {
                tokio::select! {
                    biased;
                    lost = &mut hold => break Err(lost),
                    () = &mut work => break Ok(draining),
                    () = &mut shutdown, if !draining => {
                        info!("shutdown requested; finishing in-flight reconciles before releasing the lease");
                        draining = true;
                        token.cancel();
                    }
                }
            }
            // Leaving this block drops the work: on `Err`, in-flight reconciles are cancelled.
        };
        match led {
            Err(lost) => {
                error!(reason = %lost, "lost leadership; in-flight reconciles cancelled");
                LeadershipEnd::Lost(lost)
            }
            Ok(draining) => {
                let released = self.release().await;
                if draining {
                    LeadershipEnd::Shutdown { released }
                } else {
                    LeadershipEnd::WorkFinished { released }
                }
            }
        }
    }

    /// [`step_down`](Self::step_down), bounded by the renew deadline, logging failures.
    async fn release(&self) -> bool {
        let deadline = Instant::now() + self.config().renew_deadline();
        match timeout_at(deadline, self.step_down()).await {
            Ok(Ok(released)) => released,
            Ok(Err(e)) => {
                warn!(error = %ErrorChain(&e), "releasing the lease failed; it expires by itself");
                false
            }
            Err(_) => {
                warn!("releasing the lease timed out; it expires by itself");
                false
            }
        }
    }

    /// Renews until leadership is lost; `last_renew` is when the last successful round
    /// started.
    async fn hold(&self, mut last_renew: Instant, config: &LeaderElectionConfig) -> LeadershipLost {
        let mut last_error = None;
        loop {
            let deadline = last_renew + config.renew_deadline();
            sleep_until((Instant::now() + config.retry_period()).min(deadline)).await;
            let started = Instant::now();
            let exceeded = |last_error| LeadershipLost::RenewDeadlineExceeded {
                renew_deadline: config.renew_deadline(),
                last_error,
            };
            if started >= deadline {
                return exceeded(last_error);
            }
            match timeout_at(deadline, self.round()).await {
                Err(_) => return exceeded(last_error),
                Ok(Ok(Round::Leading)) => {
                    last_renew = started;
                    last_error = None;
                    debug!("lease renewed");
                }
                Ok(Ok(Round::HeldBy(holder))) => return LeadershipLost::Taken { holder },
                Ok(Ok(Round::LostRace)) => {
                    warn!("lease renewal lost a write race; retrying until the renew deadline");
                }
                Ok(Err(e)) => {
                    warn!(
                        error = %ErrorChain(&e),
                        remaining = ?deadline.saturating_duration_since(Instant::now()),
                        "lease renewal failed; retrying until the renew deadline"
                    );
                    last_error = Some(e);
                }
            }
        }
    }
}

/// Resolves on the first `SIGTERM` or `SIGINT` (Ctrl-C; only Ctrl-C off Unix). If the
/// handlers cannot be installed, logs an error and never resolves.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    r = tokio::signal::ctrl_c() => if let Err(e) = r {
                        error!(error = %e, "cannot listen for SIGINT");
                        term.recv().await;
                    },
                    _ = term.recv() => {}
                }
                info!("shutdown signal received");
                return;
            }
            Err(e) => error!(error = %e, "cannot listen for SIGTERM"),
        }
    }
    match tokio::signal::ctrl_c().await {
        Ok(()) => info!("shutdown signal received"),
        Err(e) => {
            error!(error = %e, "cannot listen for Ctrl-C; shutdown only by SIGKILL");
            std::future::pending::<()>().await;
        }
    }
}
