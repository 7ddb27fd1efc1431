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

/// Waits until `elector` holds the Lease, retrying every `retry`; API errors are logged and
/// retried.
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    use chrono::{TimeZone, Utc};
    use http::{Method, Request, Response};
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::client::Body;
    use kube::{Api, Client};
    use provkit_core::{Clock, ManualClock};
    use serde_json::{Value, json};

    const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/op";

    fn lease(holder: &str, renew: &str) -> Value {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "op", "namespace": "default", "resourceVersion": "1"},
               "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renew}})
    }

    #[tokio::test(start_paused = true)]
    async fn hold_renews_until_another_replica_holds_the_lease() {
        let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let script = vec![
            (
                Method::GET,
                LEASE.to_owned(),
                lease("me", "2026-06-29T12:00:00.000000Z"),
            ),
            (
                Method::PUT,
                format!("{LEASE}?"),
                lease("me", "2026-06-29T12:00:00.000000Z"),
            ),
            (
                Method::GET,
                LEASE.to_owned(),
                lease("other", "2026-06-29T12:00:00.000000Z"),
            ),
        ];
        let server = tokio::spawn(async move {
            for (method, uri, reply) in script {
                let (req, send) = handle.next_request().await.unwrap();
                assert_eq!((req.method(), req.uri().to_string()), (&method, uri));
                if method == Method::PUT {
                    let body: Value =
                        serde_json::from_slice(&req.into_body().collect_bytes().await.unwrap())
                            .unwrap();
                    assert_eq!(body["spec"]["holderIdentity"], "me");
                }
                send.send_response(Response::new(Body::from(
                    serde_json::to_vec(&reply).unwrap(),
                )));
            }
        });
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(
            Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 5).unwrap(),
        ));
        let api: Api<Lease> = Api::namespaced(Client::new(svc, "default"), "default");
        let elector = LeaderElector::new(api, "op", "me", Duration::from_secs(15), clock);
        let lost = hold(&elector, Duration::from_secs(5)).await;
        assert!(matches!(lost, LeadershipLost::Taken), "{lost:?}");
        server.await.unwrap();
    }
}
