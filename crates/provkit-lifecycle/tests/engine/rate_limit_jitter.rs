//! The requeue after a rate limit (a provider's `RateLimited`, e.g. AAP's `Retry-After` or its
//! open circuit breaker) carries proportional jitter, so a fleet refused together comes back
//! spread out — and never before the wait the rate limit asked for.

use std::collections::BTreeSet;
use std::time::Duration;

use provkit_core::JobState;
use provkit_lifecycle::{
    DeprovisionHooks, Jitter, LaunchContext, LifecyclePolicy, ProviderError, ProvisionHooks,
};

use super::support::*;

const WAIT: Duration = Duration::from_secs(10);
const OBJECTS: usize = 64;

/// The requeues of `OBJECTS` objects whose launch, poll, deprovision launch and deprovision poll
/// were all refused with a rate limit of `WAIT`.
async fn requeues(policy: Option<LifecyclePolicy>) -> Vec<Duration> {
    let (p, _c, engine) = table_engine(10);
    let engine = match policy {
        Some(policy) => engine.with_policy(policy),
        None => engine,
    };
    p.on_trigger(|_| Err(ProviderError::rate_limited(WAIT)));
    p.on_status(|_| Err(ProviderError::rate_limited(WAIT)));
    p.on_deprovision(|_| Err(ProviderError::rate_limited(WAIT)));
    p.on_deprovision_status(|_| Err(ProviderError::rate_limited(WAIT)));
    let ctx = LaunchContext::new();
    let mut out = Vec::new();
    for i in 0..OBJECTS {
        let r = resource(&format!("rl-{i}"));
        let launch = engine
            .run_provisioning_lifecycle(&r, &mut vec![], "v1", &ctx, &mut ProvisionHooks::new())
            .await
            .unwrap();
        let mut jobs = vec![pjob("1", JobState::Running, "v1", ago(10))];
        let poll = engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &ctx, &mut ProvisionHooks::new())
            .await
            .unwrap();
        let deprovision = engine
            .run_deprovisioning_lifecycle(&r, &mut vec![], &ctx, &mut DeprovisionHooks::new())
            .await
            .unwrap();
        let mut jobs = vec![djob("d1", JobState::Running, false, ago(10))];
        let deprovision_poll = engine
            .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut DeprovisionHooks::new())
            .await
            .unwrap();
        assert!(!deprovision.may_remove_finalizer() && !deprovision_poll.may_remove_finalizer());
        out.extend(
            [
                launch.requeue_after(),
                poll.requeue_after(),
                deprovision.requeue_after(),
                deprovision_poll.requeue_after(),
            ]
            .map(|d| d.expect("a rate limit is a timed requeue")),
        );
    }
    out
}

#[tokio::test]
async fn a_rate_limited_fleet_requeues_spread_over_half_the_wait_and_never_early() {
    let requeues = requeues(None).await;
    assert_eq!(requeues.len(), 4 * OBJECTS);
    for d in &requeues {
        assert!(*d >= WAIT, "a rate limit is honoured: {d:?}");
        assert!(
            *d <= WAIT.mul_f64(1.5),
            "at most half the wait added: {d:?}"
        );
    }
    // Spread: not one instant — the requeues fall into more than half of ten equal buckets
    // of the jitter range (256 uniform draws leave a bucket empty with probability ~1e-11).
    let buckets: BTreeSet<u128> = requeues
        .iter()
        .map(|d| (*d - WAIT).as_millis() * 10 / (WAIT / 2).as_millis())
        .collect();
    assert!(buckets.len() > 5, "{buckets:?}");
}

#[tokio::test]
async fn without_rate_limit_jitter_every_object_requeues_after_exactly_the_wait() {
    let exact = policy(10).with_rate_limit_jitter(Jitter::None);
    let requeues = requeues(Some(exact)).await;
    assert!(requeues.iter().all(|d| *d == WAIT), "{requeues:?}");
    // Go's policy requeues after exactly the wait too.
    let go = LifecyclePolicy::go_v0_1_1().rate_limit_jitter;
    assert_eq!(go, Jitter::None);
    assert_eq!(
        LifecyclePolicy::default().rate_limit_jitter,
        Jitter::Proportional { max_fraction: 0.5 }
    );
}
