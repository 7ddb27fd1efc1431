//! Leader election for the operator: only the Lease holder runs the controller.
//!
//! The rule (see provkit-kube's README, "High availability"): exactly one active replica. A
//! replica waits until it holds the Lease, runs the controller while renewing every
//! `renew_every`, and **stops reconciling** as soon as a renewal is refused or no renewal has
//! succeeded for `lease_duration - renew_every` — before another replica may take over.

use std::time::Duration;

use provkit_kube::{LeaderElector, LeaderError};
use tokio::time::{Instant, sleep};

/// Why leadership ended.
#[derive(Debug)]
pub enum LeadershipLost {
    /// Another candidate holds the Lease now.
    Taken,
    /// Renewals kept failing for too long; the last error.
    RenewalFailed(LeaderError),
}

/// Waits until `elector` holds the Lease, retrying every `retry`.
///
/// # Errors
/// Never returns an error: API errors are logged and retried.
pub async fn acquire(elector: &LeaderElector, retry: Duration) {
    loop {
        match elector.try_acquire_or_renew().await {
            Ok(true) => {
                tracing::info!(identity = elector.identity(), "became leader");
                return;
            }
            Ok(false) => tracing::debug!("not leader yet"),
            Err(error) => tracing::warn!(%error, "leader election attempt failed"),
        }
        sleep(retry).await;
    }
}

/// Renews the Lease every `renew_every` until leadership is lost; returns why.
pub async fn hold(elector: &LeaderElector, renew_every: Duration) -> LeadershipLost {
    let deadline_after = elector.lease_duration().saturating_sub(renew_every);
    let mut last_ok = Instant::now();
    loop {
        sleep(renew_every).await;
        match elector.try_acquire_or_renew().await {
            Ok(true) => last_ok = Instant::now(),
            Ok(false) => return LeadershipLost::Taken,
            Err(error) => {
                tracing::warn!(%error, "lease renewal failed");
                if last_ok.elapsed() >= deadline_after {
                    return LeadershipLost::RenewalFailed(error);
                }
            }
        }
    }
}
