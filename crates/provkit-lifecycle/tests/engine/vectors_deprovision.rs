//! Spec §7.1 TriggerDeprovisionJob (maxHistory 5) and PollDeprovisionJob (maxHistory 10, poll 30s),
//! plus the §7.7 ClusterOrder deprovision vectors.

use std::time::Duration;

use provkit_core::{JobState, JobType, find_latest_job_by_type};
use provkit_lifecycle::{
    DeprovisionHooks, DeprovisionResult, DeprovisionStep, FinalizerDecision, LaunchContext,
    ProviderError, ProvisionStatus,
};

use super::support::*;

#[tokio::test]
async fn trigger_deprovision_job_table() {
    let r = resource("tdj");
    let ctx = LaunchContext::new();
    let mut hooks = DeprovisionHooks::new();

    // 1. skipped -> Result{}, jobs empty; finalizer may go
    let (p, _c, engine) = v011_engine(5);
    p.on_deprovision(|_| Ok(DeprovisionResult::skipped()));
    let mut jobs = vec![];
    let out = engine
        .trigger_deprovision_job(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(out.outcome.is_done());
    assert!(jobs.is_empty());
    assert_eq!(out.step, DeprovisionStep::Skipped);
    assert!(out.may_remove_finalizer());

    // 2. waiting with provision status Failed/"cancelled" -> 30s; provision job updated
    p.on_deprovision(|_| {
        Ok(
            DeprovisionResult::waiting(true).with_provision_job_status(ProvisionStatus::new(
                "p1",
                JobState::Failed,
                "cancelled",
            )),
        )
    });
    let mut jobs = vec![pjob("p1", JobState::Running, "v1", ago(60))];
    let out = engine
        .trigger_deprovision_job(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(out.finalizer, FinalizerDecision::Keep);
    assert_eq!(
        (jobs[0].state.clone(), jobs[0].message.as_str()),
        (JobState::Failed, "cancelled")
    );
    assert_eq!(jobs.len(), 1);

    // 3. triggered deprov-1 with block -> 30s; deprovision job appended
    p.on_deprovision(|_| Ok(DeprovisionResult::triggered("deprov-1", true)));
    let mut jobs = vec![];
    let out = engine
        .trigger_deprovision_job(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs.len(), 1);
    let d = &jobs[0];
    assert_eq!(
        (
            d.job_id.as_str(),
            &d.job_type,
            &d.state,
            d.block_deletion_on_failure
        ),
        ("deprov-1", &JobType::Deprovision, &JobState::Pending, true)
    );
    assert_eq!(d.message, "Deprovision job triggered");
    assert!(d.config_version.is_empty());
    assert_eq!(d.timestamp, Some(t0()));

    // 4. rate limit 45s -> 45s, no error, finalizer kept
    p.on_deprovision(|_| Err(ProviderError::rate_limited(Duration::from_secs(45))));
    let mut jobs = vec![];
    let out = engine
        .trigger_deprovision_job(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(45)));
    assert!(!out.may_remove_finalizer());

    // 5. other error -> error contains "connection refused"
    p.on_deprovision(|_| {
        Err(ProviderError::other(
            "dial tcp 10.0.0.1:443: connection refused",
        ))
    });
    let err = engine
        .trigger_deprovision_job(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap_err();
    // Go's `fmt.Errorf("failed to trigger deprovision: %w", err)` is the rendered chain.
    let chain = provkit_lifecycle::ErrorChain(&err).to_string();
    assert!(
        chain.starts_with("failed to trigger deprovision: "),
        "{chain}"
    );
    assert!(chain.contains("connection refused"), "{chain}");
    assert!(jobs.is_empty());
}

#[tokio::test]
async fn poll_deprovision_job_table() {
    let r = resource("pdj");
    let ctx = LaunchContext::new();
    let mut hooks = DeprovisionHooks::new();
    let (p, _c, engine) = v011_engine(10);

    // 1. already succeeded -> done, no provider call
    let mut jobs = vec![djob("d1", JobState::Succeeded, true, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(out.may_remove_finalizer() && out.outcome.is_done());
    assert_eq!(
        p.deprov_status_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );

    // 2. already failed with block, triggered just now -> not done, requeue > 0
    let mut jobs = vec![djob("d1", JobState::Failed, true, t0())];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(!out.may_remove_finalizer());
    assert_eq!(out.requeue_after(), Some(mins(2)));
    assert_eq!(p.deprovisions(), 0);

    // 3. failed with block, older than 2m+1s -> provider trigger called, d2 latest, 30s, not done
    p.on_deprovision(|_| Ok(DeprovisionResult::triggered("d2", true)));
    let mut jobs = vec![djob("d1", JobState::Failed, true, ago(121))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(p.deprovisions(), 1);
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Deprovision)
            .unwrap()
            .job_id,
        "d2"
    );
    assert_eq!(out.requeue_after(), Some(POLL));
    assert!(!out.may_remove_finalizer());

    // 4. pending, poll says running/"in progress" -> 30s, job updated
    p.on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Running, "in progress")));
    let mut jobs = vec![djob("d1", JobState::Pending, true, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(
        (jobs[0].state.clone(), jobs[0].message.as_str()),
        (JobState::Running, "in progress")
    );

    // 5. poll says succeeded -> done
    p.on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Succeeded, "successful")));
    let mut jobs = vec![djob("d1", JobState::Running, true, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(out.may_remove_finalizer());
    assert_eq!(jobs[0].state, JobState::Succeeded);

    // 6. poll says failed with block -> not done, 0 < requeue <= 2m
    p.on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Failed, "failed")));
    let mut jobs = vec![djob("d1", JobState::Running, true, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(!out.may_remove_finalizer());
    let d = out.requeue_after().unwrap();
    assert!(d > Duration::ZERO && d <= mins(2), "{d:?}");
    assert_eq!(d, Duration::from_secs(110));

    // 7. poll error "timeout" -> 30s, message contains timeout
    p.on_deprovision_status(|_| Err(ProviderError::other("timeout")));
    let mut jobs = vec![djob("d1", JobState::Running, true, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs[0].message, "Failed to get deprovision status: timeout");
    assert!(!out.may_remove_finalizer());

    // 8. poll says failed without block -> done
    p.on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Failed, "failed")));
    let mut jobs = vec![djob("d1", JobState::Running, false, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(out.may_remove_finalizer());
}

/// §3.10: Canceled with block is retried like Failed; an empty-id deprovision job means "trigger".
#[tokio::test]
async fn canceled_blocking_deprovision_and_empty_id() {
    let r = resource("cx");
    let ctx = LaunchContext::new();
    let mut hooks = DeprovisionHooks::new();
    let (p, _c, engine) = v011_engine(10);
    let mut jobs = vec![djob("d1", JobState::Canceled, true, ago(30))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert!(!out.may_remove_finalizer());
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(90)));

    let mut empty = djob("", JobState::Failed, true, ago(30));
    empty.job_id.clear();
    let mut jobs = vec![empty];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut hooks)
        .await
        .unwrap();
    assert_eq!(p.deprovisions(), 1);
    assert_eq!(
        out.step,
        DeprovisionStep::Launched {
            job_id: "deprov-1".into()
        }
    );
}
