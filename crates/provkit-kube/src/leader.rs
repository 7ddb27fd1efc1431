//! Lease-based leader election (`coordination.k8s.io/v1` Lease), so that only one replica of
//! an operator launches jobs.
//!
//! # The single-active-replica rule
//! The stale-cache check and the conflict-safe status flush protect against *one* controller
//! seeing its own stale cache. They do **not** protect against two replicas reconciling the
//! same object at the same time: both can read "no job", both launch, and AAP runs the
//! playbook twice. **Run exactly one active replica per controller**: either a single
//! replica, or several with leader election, where only the holder of the Lease runs the
//! controller and a replica that loses (or cannot renew) the Lease stops reconciling before
//! the lease expires.
//!
//! [`LeaderElector`] is the client-go `leaderelection` algorithm on one Lease object:
//! - no Lease → create it holding it (a concurrent create gets 409: not leader);
//! - we hold it → renew (`renewTime = now`);
//! - someone else holds it and `renewTime + leaseDurationSeconds` has passed, or nobody holds
//!   it → take it over (`leaseTransitions + 1`);
//! - otherwise → not leader.
//!
//! Every write is a PUT carrying the `resourceVersion` just read, so two candidates racing for
//! the same Lease cannot both win: the loser gets 409 Conflict and reports "not leader".
//!
//! Timing rule (as in client-go): renew every `lease_duration / 3` or so, and stop reconciling
//! when a renewal has not succeeded for `lease_duration` minus a safety margin — the other
//! replicas take over only once the full duration has passed since the last renewal.
//! Clocks of the replicas are assumed to be roughly in sync (the lease stores wall time).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use provkit_core::Clock;
use tracing::{debug, info};

use crate::time::{from_k8s_micro_time, to_k8s_micro_time};

/// A leader-election request that failed (other than losing the race, which is `Ok(false)`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderError {
    /// The Lease API call failed.
    #[error("{operation} of lease {lease} failed")]
    Api {
        /// `get`, `create` or `replace`.
        operation: &'static str,
        /// Lease name.
        lease: String,
        /// The kube error.
        #[source]
        source: kube::Error,
    },
    /// The clock is outside the range a Kubernetes timestamp can hold.
    #[error("the clock cannot be written to a Lease")]
    Time(#[source] crate::time::TimeConversionError),
}

/// Competes for one Lease. Cheap to clone (shares the clock).
#[derive(Debug, Clone)]
pub struct LeaderElector {
    api: Api<Lease>,
    lease_name: String,
    identity: String,
    lease_duration: Duration,
    clock: Arc<dyn Clock>,
}

impl LeaderElector {
    /// An elector for Lease `lease_name` in `api`'s namespace, as candidate `identity`
    /// (usually the pod name), with the given lease duration (15 s in client-go).
    pub fn new(
        api: Api<Lease>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
        lease_duration: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            api,
            lease_name: lease_name.into(),
            identity: identity.into(),
            lease_duration,
            clock,
        }
    }

    /// This candidate's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The lease duration.
    #[must_use]
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    fn duration_secs(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    fn api_err(&self, operation: &'static str) -> impl FnOnce(kube::Error) -> LeaderError + '_ {
        move |source| LeaderError::Api {
            operation,
            lease: self.lease_name.clone(),
            source,
        }
    }

    /// One round of the election: acquire, renew or observe. Returns whether this candidate
    /// holds the Lease afterwards.
    ///
    /// # Errors
    /// [`LeaderError`] for API failures other than losing a race (409), which is `Ok(false)`.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, LeaderError> {
        let now = self.clock.now();
        let now_k8s = to_k8s_micro_time(now).map_err(LeaderError::Time)?;
        let current = self
            .api
            .get_opt(&self.lease_name)
            .await
            .map_err(self.api_err("get"))?;
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.lease_name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(self.duration_secs()),
                    acquire_time: Some(now_k8s.clone()),
                    renew_time: Some(now_k8s),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    info!(lease = %self.lease_name, identity = %self.identity, "acquired new lease");
                    Ok(true)
                }
                Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => Ok(false),
                Err(e) => Err(self.api_err("create")(e)),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if holder == self.identity {
            spec.renew_time = Some(now_k8s);
            spec.lease_duration_seconds = Some(self.duration_secs());
        } else if holder.is_empty() || expired(spec, now) {
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(now_k8s.clone());
            spec.renew_time = Some(now_k8s);
            spec.lease_duration_seconds = Some(self.duration_secs());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
            info!(lease = %self.lease_name, identity = %self.identity, previous = %holder, "taking over lease");
        } else {
            debug!(lease = %self.lease_name, holder = %holder, "lease held by another candidate");
            return Ok(false);
        }
        self.replace_lease(&lease).await
    }

    /// Writes `lease` back; a conflict (another candidate wrote it first) is `Ok(false)`.
    async fn replace_lease(&self, lease: &Lease) -> Result<bool, LeaderError> {
        match self
            .api
            .replace(&self.lease_name, &PostParams::default(), lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
            Err(e) => Err(self.api_err("replace")(e)),
        }
    }

    /// Gives the Lease up (clears the holder) if this candidate holds it, so another replica
    /// can take over without waiting for expiry. Returns whether it was released.
    ///
    /// # Errors
    /// [`LeaderError`] for API failures other than a conflict.
    pub async fn step_down(&self) -> Result<bool, LeaderError> {
        let Some(mut lease) = self
            .api
            .get_opt(&self.lease_name)
            .await
            .map_err(self.api_err("get"))?
        else {
            return Ok(false);
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(false);
        }
        spec.holder_identity = None;
        self.replace_lease(&lease).await
    }
}

fn expired(spec: &LeaseSpec, now: DateTime<Utc>) -> bool {
    let Some(renew) = spec.renew_time.as_ref().map(from_k8s_micro_time) else {
        return true;
    };
    let secs = i64::from(spec.lease_duration_seconds.unwrap_or(0).max(0));
    renew + chrono::TimeDelta::seconds(secs) < now
}
