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
//! Timing rule (as in client-go): renew every retry period, tolerate failed renewals until the
//! renew deadline, which is shorter than the lease duration, then stop reconciling — the
//! other replicas take over only once the full duration has passed since the last renewal.
//! Clocks of the replicas are assumed to be roughly in sync (the lease stores wall time); the
//! difference between the two durations is the margin for clock skew. The loop that does this
//! (and releases the Lease on shutdown) is [`crate::leadership`].
//!
//! # Identity
//! Every candidate must have its **own** identity: two candidates with the same identity both
//! believe they hold the Lease and both reconcile. [`default_identity`] is
//! `<pod or host name>_<random UUID>`, as controller-runtime does (`POD_NAME`, else
//! `HOSTNAME`, else the system host name), so a pod restarted under the same name, or two
//! containers that share a name, are still distinct candidates.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use provkit_core::Clock;
use tracing::{debug, info};

use crate::time::{from_k8s_micro_time, to_k8s_micro_time};

/// `<base>_<random UUID v4>`: a candidate identity no other process shares.
///
/// ```
/// let a = provkit_kube::unique_identity("operator-0");
/// let b = provkit_kube::unique_identity("operator-0");
/// assert!(a.starts_with("operator-0_") && a.len() == "operator-0_".len() + 36);
/// assert_ne!(a, b);
/// ```
#[must_use]
pub fn unique_identity(base: &str) -> String {
    format!("{base}_{}", uuid::Uuid::new_v4())
}

/// The default candidate identity: [`unique_identity`] of `$POD_NAME`, else `$HOSTNAME`,
/// else the system host name, else `provkit`.
#[must_use]
pub fn default_identity() -> String {
    let from_env = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let base = from_env("POD_NAME")
        .or_else(|| from_env("HOSTNAME"))
        .or_else(|| {
            hostname::get()
                .ok()
                .and_then(|h| h.into_string().ok())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "provkit".to_owned());
    unique_identity(&base)
}

/// What one election round saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Round {
    /// This candidate holds the Lease (created, renewed or taken over).
    Leading,
    /// Another live candidate holds it.
    HeldBy(String),
    /// Our write lost a race (409): someone else wrote the Lease since we read it.
    LostRace,
}

/// Lease duration, renew deadline and retry period of a [`LeaderElector`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl Default for LeaderElectionConfig {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period.
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// A [`LeaderElectionConfig`] that breaks `retry_period < renew_deadline < lease_duration`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "leader election needs retry period ({retry_period:?}) < renew deadline ({renew_deadline:?}) < lease duration ({lease_duration:?}), and a lease of at least 1 s"
)]
pub struct InvalidLeaderElectionConfig {
    /// The requested lease duration.
    pub lease_duration: Duration,
    /// The requested renew deadline.
    pub renew_deadline: Duration,
    /// The requested retry period.
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// A configuration; `retry_period < renew_deadline < lease_duration` is required.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_kube::LeaderElectionConfig;
    ///
    /// let s = Duration::from_secs;
    /// assert!(LeaderElectionConfig::new(s(15), s(10), s(2)).is_ok());
    /// assert!(LeaderElectionConfig::new(s(15), s(15), s(2)).is_err()); // no skew margin
    /// ```
    ///
    /// # Errors
    /// [`InvalidLeaderElectionConfig`].
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Self, InvalidLeaderElectionConfig> {
        if retry_period.is_zero()
            || retry_period >= renew_deadline
            || renew_deadline >= lease_duration
            || lease_duration < Duration::from_secs(1)
        {
            return Err(InvalidLeaderElectionConfig {
                lease_duration,
                renew_deadline,
                retry_period,
            });
        }
        Ok(Self {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }

    /// The lease duration other candidates wait for after the last renewal.
    #[must_use]
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// How long the leader keeps trying to renew before it stops.
    #[must_use]
    pub fn renew_deadline(&self) -> Duration {
        self.renew_deadline
    }

    /// The pause between election rounds and between renewals.
    #[must_use]
    pub fn retry_period(&self) -> Duration {
        self.retry_period
    }

    /// The client-go ratios for a lease duration: renew deadline 2/3, retry period 2/15.
    pub(crate) fn for_lease_duration(lease_duration: Duration) -> Self {
        let lease_duration = lease_duration.max(Duration::from_secs(1));
        Self {
            lease_duration,
            renew_deadline: lease_duration * 2 / 3,
            retry_period: lease_duration * 2 / 15,
        }
    }
}

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
    config: LeaderElectionConfig,
    clock: Arc<dyn Clock>,
    field_manager: Option<String>,
}

impl LeaderElector {
    /// An elector for Lease `lease_name` in `api`'s namespace, as candidate `identity`
    /// (use [`default_identity`]: it must be unique per process), with the given lease
    /// duration (15 s in client-go) and client-go's ratios for the renew deadline (2/3 of it)
    /// and retry period (2/15).
    pub fn new(
        api: Api<Lease>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
        lease_duration: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let config = LeaderElectionConfig::for_lease_duration(lease_duration);
        Self::with_config(api, lease_name, identity, config, clock)
    }

    /// An elector with explicit durations (see [`LeaderElectionConfig`]).
    pub fn with_config(
        api: Api<Lease>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
        config: LeaderElectionConfig,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            api,
            lease_name: lease_name.into(),
            identity: identity.into(),
            config,
            clock,
            field_manager: None,
        }
    }

    /// The durations.
    #[must_use]
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// Sends `field_manager` (usually the controller name) as the `fieldManager` of every
    /// Lease write.
    #[must_use]
    pub fn with_field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = Some(field_manager.into());
        self
    }

    fn post_params(&self) -> PostParams {
        PostParams {
            field_manager: self.field_manager.clone(),
            ..PostParams::default()
        }
    }

    /// The Lease name.
    #[must_use]
    pub fn lease_name(&self) -> &str {
        &self.lease_name
    }

    /// This candidate's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The lease duration.
    #[must_use]
    pub fn lease_duration(&self) -> Duration {
        self.config.lease_duration()
    }

    fn duration_secs(&self) -> i32 {
        i32::try_from(self.lease_duration().as_secs().max(1)).unwrap_or(i32::MAX)
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
        Ok(self.round().await? == Round::Leading)
    }

    /// One round, telling a live holder apart from a lost write race.
    pub(crate) async fn round(&self) -> Result<Round, LeaderError> {
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
            return match self.api.create(&self.post_params(), &lease).await {
                Ok(_) => {
                    info!(lease = %self.lease_name, identity = %self.identity, "acquired new lease");
                    Ok(Round::Leading)
                }
                Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => {
                    Ok(Round::LostRace)
                }
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
            return Ok(Round::HeldBy(holder));
        }
        Ok(if self.replace_lease(&lease).await? {
            Round::Leading
        } else {
            Round::LostRace
        })
    }

    /// Writes `lease` back; a conflict (another candidate wrote it first) is `Ok(false)`.
    async fn replace_lease(&self, lease: &Lease) -> Result<bool, LeaderError> {
        match self
            .api
            .replace(&self.lease_name, &self.post_params(), lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
            Err(e) => Err(self.api_err("replace")(e)),
        }
    }

    /// Gives the Lease up if this candidate holds it, so another replica can take over
    /// without waiting for expiry: clears the holder (a Lease without holder is free, for
    /// provkit and client-go candidates alike). A conflict (our own renewal landed in
    /// between) is retried after a re-read, up to three times. Returns whether it was
    /// released.
    ///
    /// # Errors
    /// [`LeaderError`] for API failures.
    pub async fn step_down(&self) -> Result<bool, LeaderError> {
        for _ in 0..3 {
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
            if self.replace_lease(&lease).await? {
                info!(lease = %self.lease_name, identity = %self.identity, "released the lease");
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn expired(spec: &LeaseSpec, now: DateTime<Utc>) -> bool {
    let Some(renew) = spec.renew_time.as_ref().map(from_k8s_micro_time) else {
        return true;
    };
    let secs = i64::from(spec.lease_duration_seconds.unwrap_or(0).max(0));
    renew + chrono::TimeDelta::seconds(secs) < now
}
