//! Virtual-time tests with a manual clock: the backoff schedule and blocking deprovision failures.

use std::time::Duration;

use provkit_core::{JobState, JobType};
use provkit_lifecycle::{
    Action, DeprovisionHooks, DeprovisionStep, LaunchContext, ProvisionHooks, ProvisionStep,
};
use provkit_testing::scripted::{DeprovisionScript, ScriptedProvider, StatusStep};

use super::support::*;

/// A job failing five times: launches are 2, 4, 8, 16, 30 minutes apart, and each reconcile after a
/// failure requeues exactly until the retry is due.
#[tokio::test(start_paused = true)]
async fn five_failures_back_off_2_4_8_16_30_minutes() {
    let provider = ScriptedProvider::new();
    provider.set_default_statuses([StatusStep::State(JobState::Failed)]);
    let (clock, dyn_clock) = clock_at(t0());
    let engine =
        provkit_lifecycle::Lifecycle::new(std::sync::Arc::new(provider.clone()), dyn_clock)
            .with_policy(policy(10));
    let r = resource("vt");
    let mut jobs = vec![];
    let mut launches = vec![];
    let mut waits_after_failure = vec![];
    let mut guard = 0;
    while launches.len() < 6 {
        guard += 1;
        assert!(guard < 100, "no progress");
        let out = engine
            .run_provisioning_lifecycle(
                &r,
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut ProvisionHooks::new(),
            )
            .await
            .unwrap();
        match &out.step {
            ProvisionStep::Launched { .. } => launches.push(clock.now_secs()),
            ProvisionStep::Polled { state, .. } if *state == JobState::Failed => {
                waits_after_failure.push(out.requeue_after().unwrap());
            }
            other => panic!("unexpected step {other:?}"),
        }
        let wait = out.requeue_after().expect("always a timed requeue");
        tokio::time::sleep(wait).await; // paused time: advances instantly
        clock.advance(wait);
    }
    let gaps: Vec<u64> = launches
        .windows(2)
        .map(|w| (w[1] - w[0]) as u64 / 60)
        .collect();
    assert_eq!(gaps, [2, 4, 8, 16, 30]);
    // the poll sees the failure 30s after each launch, so the requeue is backoff - 30s
    let want: Vec<Duration> = [2, 4, 8, 16, 30].iter().map(|m| mins(*m) - POLL).collect();
    assert_eq!(waits_after_failure, want);
    assert_eq!(provider.jobs_created("vt", &JobType::Provision), 6);
}

trait NowSecs {
    fn now_secs(&self) -> i64;
}

impl NowSecs for provkit_core::ManualClock {
    fn now_secs(&self) -> i64 {
        use provkit_core::Clock;
        self.now().timestamp()
    }
}

/// A deprovision failing with BlockDeletionOnFailure keeps the finalizer until one succeeds.
#[tokio::test(start_paused = true)]
async fn blocking_deprovision_failure_keeps_finalizer_until_success() {
    let provider = ScriptedProvider::new();
    let uid = "vt-d";
    for _ in 0..3 {
        provider.push_deprovision(uid, DeprovisionScript::triggered());
        provider.push_job_statuses(
            uid,
            &JobType::Deprovision,
            [
                StatusStep::State(JobState::Running),
                StatusStep::FailedWith("host unreachable".into()),
            ],
        );
    }
    provider.push_deprovision(uid, DeprovisionScript::triggered());
    provider.push_job_statuses(
        uid,
        &JobType::Deprovision,
        [
            StatusStep::State(JobState::Running),
            StatusStep::State(JobState::Succeeded),
        ],
    );

    let (clock, dyn_clock) = clock_at(t0());
    let engine =
        provkit_lifecycle::Lifecycle::new(std::sync::Arc::new(provider.clone()), dyn_clock)
            .with_policy(policy(10));
    let r = resource(uid);
    let mut jobs = vec![pjob("p", JobState::Succeeded, "v1", ago(3600))];
    let mut removed_at = None;
    for step in 0..100 {
        let out = engine
            .run_deprovisioning_lifecycle(
                &r,
                &mut jobs,
                &LaunchContext::new(),
                &mut DeprovisionHooks::new(),
            )
            .await
            .unwrap();
        if out.may_remove_finalizer() {
            assert!(
                matches!(
                    out.step,
                    DeprovisionStep::Finished {
                        state: JobState::Succeeded,
                        ..
                    }
                ),
                "{:?}",
                out.step
            );
            removed_at = Some(step);
            break;
        }
        let wait = out.requeue_after().expect("kept finalizer always requeues");
        tokio::time::sleep(wait).await;
        clock.advance(wait);
    }
    assert!(removed_at.is_some(), "finalizer never released");
    assert_eq!(
        provider.jobs_created(uid, &JobType::Deprovision),
        4,
        "three failures, one success"
    );
    let failed = jobs
        .iter()
        .filter(|j| j.job_type == JobType::Deprovision && j.state == JobState::Failed)
        .count();
    assert_eq!(failed, 3);
    assert!(jobs.iter().any(|j| j.message == "failed: host unreachable"));
}

/// Poll jitter only ever delays, within the configured fraction.
#[tokio::test]
async fn poll_jitter_stays_within_bounds() {
    let (_p, _c, engine) = table_engine(10);
    let mut pol = policy(10);
    pol.poll_jitter = provkit_lifecycle::Jitter::Proportional { max_fraction: 0.5 };
    let engine = engine.with_policy(pol);
    let r = resource("jit");
    for _ in 0..50 {
        let mut jobs = vec![];
        let out = engine
            .run_provisioning_lifecycle(
                &r,
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut ProvisionHooks::new(),
            )
            .await
            .unwrap();
        assert_eq!(out.action, Action::Trigger);
        let d = out.requeue_after().unwrap();
        assert!(d >= POLL && d <= POLL + POLL / 2, "{d:?}");
    }
}
