//! The behaviours changed from Go, each with a test that fails on Go's behaviour (and, where the
//! change is switchable, a check that `LifecyclePolicy::go_compatible()` restores Go's behaviour).

use std::time::Duration;

use provkit_core::{JobState, JobType, find_latest_job_by_type};
use provkit_lifecycle::{
    Action, DeprovisionHooks, DeprovisionResult, DeprovisionStep, LaunchContext, LegacyJobs,
    LifecyclePolicy, ProviderError, ProvisionHooks, ProvisionStatus, ProvisionStep,
};

use super::support::*;

/// 1a. A provision job the provider no longer knows becomes Failed (Go: polled forever).
#[tokio::test]
async fn change1_purged_provision_job_fails_and_backs_off() {
    let r = resource("c1");
    let (p, clock, engine) = table_engine(10);
    p.on_status(|id| Err(ProviderError::not_found(format!("job {id}"))));
    let mut jobs = vec![pjob("77", JobState::Running, "v1", ago(30))];
    let mut failed = Vec::new();
    let out = {
        let mut hooks = ProvisionHooks::new().on_failed(|m| failed.push(m.to_owned()));
        engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
            .await
            .unwrap()
    };
    assert_eq!(jobs[0].state, JobState::Failed, "Go keeps it Running");
    assert!(
        jobs[0].message.contains("no longer exists")
            && jobs[0].message.contains("job 77 not found"),
        "{}",
        jobs[0].message
    );
    assert_eq!(
        out.step,
        ProvisionStep::PurgedJobFailed {
            job_id: "77".into()
        }
    );
    assert_eq!(
        out.requeue_after(),
        Some(Duration::from_secs(90)),
        "remaining backoff"
    );
    assert_eq!(failed.len(), 1);
    // the next reconcile after the backoff re-triggers
    clock.advance(Duration::from_secs(90));
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
    assert_eq!(out.action, Action::Backoff);
    assert_eq!(p.triggers(), 1);

    // Go's behaviour with the switch: still Running, message only, poll again.
    let engine = engine.with_policy(LifecyclePolicy::go_compatible().with_poll_interval(POLL));
    let mut jobs = vec![pjob("78", JobState::Running, "v1", ago(30))];
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
    assert_eq!(jobs[0].state, JobState::Running);
    assert!(jobs[0].message.starts_with("Failed to get job status: "));
    assert_eq!(out.requeue_after(), Some(POLL));
}

/// 1b. A purged deprovision job becomes Failed; blocking -> retried, and deletion completes once a retry
/// succeeds (Go: deletion blocked forever).
#[tokio::test]
async fn change1_purged_deprovision_job_does_not_block_forever() {
    let r = resource("c1d");
    let (p, clock, engine) = table_engine(10);
    p.on_deprovision_status(|id| Err(ProviderError::not_found(format!("job {id}"))));
    let mut jobs = vec![djob("d1", JobState::Running, true, ago(10))];
    let mut hooks = DeprovisionHooks::new();
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(jobs[0].state, JobState::Failed);
    assert_eq!(
        out.step,
        DeprovisionStep::PurgedJobFailed {
            job_id: "d1".into()
        }
    );
    assert!(!out.may_remove_finalizer());
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(110)));

    clock.advance(Duration::from_secs(110));
    p.on_deprovision(|_| Ok(DeprovisionResult::triggered("d2", true)));
    p.on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Succeeded, "successful")));
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(
        out.step,
        DeprovisionStep::Launched {
            job_id: "d2".into()
        }
    );
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert!(out.may_remove_finalizer());

    // A purged non-blocking deprovision job: done.
    p.on_deprovision_status(|id| Err(ProviderError::not_found(format!("job {id}"))));
    let mut jobs = vec![djob("d9", JobState::Running, false, ago(10))];
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut jobs, &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert!(out.may_remove_finalizer());
}

/// 2. After a poll observes Failed, the outcome requeues after the remaining backoff (Go: no requeue).
#[tokio::test]
async fn change2_failed_poll_requeues_after_backoff() {
    let r = resource("c2");
    let (p, _c, engine) = table_engine(10);
    p.on_status(|id| Ok(ProvisionStatus::new(id, JobState::Failed, "failed")));
    let mut jobs = vec![pjob("1", JobState::Running, "v1", ago(30))];
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
    assert_eq!(
        out.requeue_after(),
        Some(Duration::from_secs(90)),
        "Go returns Result{{}} here"
    );

    // a failed job whose version is no longer desired: the retry is due at once (minimum requeue)
    let mut jobs = vec![pjob("1", JobState::Running, "v0", ago(30))];
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
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(1)));

    let go = engine.with_policy(LifecyclePolicy::go_compatible());
    let mut jobs = vec![pjob("1", JobState::Running, "v1", ago(30))];
    let out = go
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert!(out.outcome.is_done());
}

/// 3. A legacy succeeded job with an empty version is adopted, so a later spec change re-provisions
/// (Go: Skip forever).
#[tokio::test]
async fn change3_legacy_job_adopted() {
    let r = resource("c3");
    let (p, _c, engine) = table_engine(10);
    let mut jobs = vec![pjob("legacy", JobState::Succeeded, "", ago(3600))];
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
    assert_eq!(out.action, Action::Skip);
    assert_eq!(out.adopted_legacy_job.as_deref(), Some("legacy"));
    assert!(out.history_changed);
    assert_eq!(jobs[0].config_version, "v1");
    // second look: plain skip, nothing more to adopt
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
    assert_eq!(
        (
            out.action,
            out.adopted_legacy_job.clone(),
            out.history_changed
        ),
        (Action::Skip, None, false)
    );
    // spec change -> re-provision
    let out = engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v2",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.action, Action::Trigger);
    assert_eq!(p.triggers(), 1);

    // Go's behaviour on request: skip forever, nothing stamped
    let go = engine.with_policy(policy(10).with_legacy_jobs(LegacyJobs::SkipForever));
    let mut jobs = vec![pjob("legacy", JobState::Succeeded, "", ago(3600))];
    for desired in ["v1", "v2", "v3"] {
        let out = go
            .run_provisioning_lifecycle(
                &r,
                &mut jobs,
                desired,
                &LaunchContext::new(),
                &mut ProvisionHooks::new(),
            )
            .await
            .unwrap();
        assert_eq!((out.action, out.history_changed), (Action::Skip, false));
    }
    assert_eq!(jobs[0].config_version, "");
    assert_eq!(p.triggers(), 1);
}

/// 4. Skipped and a zero retry-after rate limit are not confused: Skipped allows finalizer removal, a
/// rate limit never does (Go removes the finalizer for RetryAfter == 0).
#[tokio::test]
async fn change4_skipped_vs_zero_rate_limit() {
    let r = resource("c4");
    let (p, _c, engine) = table_engine(10);
    let mut hooks = DeprovisionHooks::new();
    p.on_deprovision(|_| Ok(DeprovisionResult::skipped()));
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut vec![], &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert!(out.may_remove_finalizer());
    assert!(out.outcome.is_done());

    p.on_deprovision(|_| Err(ProviderError::rate_limited(Duration::ZERO)));
    let out = engine
        .run_deprovisioning_lifecycle(&r, &mut vec![], &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert!(
        !out.may_remove_finalizer(),
        "Go: RequeueAfter 0 -> finalizer removed"
    );
    let requeue = out.requeue_after().unwrap();
    assert!(
        requeue >= Duration::from_secs(1) && requeue <= Duration::from_millis(1500),
        "never a zero requeue (min_requeue plus the rate-limit jitter): {requeue:?}"
    );
    assert_eq!(
        out.step,
        DeprovisionStep::RateLimited {
            retry_after: Duration::ZERO
        }
    );
}

/// 5. Deprovision retries never evict the latest provision job from the capped history (Go: after ten
/// retries the provision job is gone and the provider skips its cancel check).
#[tokio::test]
async fn change5_deprovision_cap_keeps_latest_provision_job() {
    let r = resource("c5");
    let (p, clock, engine) = table_engine(10);
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = counter.clone();
    p.on_deprovision(move |_| {
        let n = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(DeprovisionResult::triggered(format!("d{n}"), true))
    });
    p.on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Failed, "failed")));
    let mut jobs = vec![pjob("prov", JobState::Succeeded, "v1", ago(7200))];
    let mut hooks = DeprovisionHooks::new();
    for _ in 0..60 {
        let out = engine
            .run_deprovisioning_lifecycle(&r, &mut jobs, &LaunchContext::new(), &mut hooks)
            .await
            .unwrap();
        assert!(!out.may_remove_finalizer());
        assert!(jobs.len() <= 10);
        clock.advance(out.requeue_after().unwrap());
    }
    assert!(
        p.deprovisions() >= 11,
        "enough retries to overflow the cap: {}",
        p.deprovisions()
    );
    assert_eq!(
        find_latest_job_by_type(&jobs, &JobType::Provision)
            .unwrap()
            .job_id,
        "prov"
    );
    let last_seen = p.received_jobs.lock().unwrap().last().cloned().unwrap();
    assert!(
        find_latest_job_by_type(&last_seen, &JobType::Provision).is_some(),
        "provider still sees the provision job"
    );
}

/// Extra change: the stale-cache check also guards backoff retries, and a newer terminal job on the API
/// server counts as stale (Go launches a second retry from a stale copy in both cases).
#[tokio::test]
async fn extra_stale_check_guards_backoff_retries() {
    let r = resource("cx");
    let (p, _c, engine) = table_engine(10);
    let cached = vec![pjob("f1", JobState::Failed, "v1", ago(600))];
    // the API server already has the retry, Running
    let fresh = FixedFresh::jobs(vec![
        cached[0].clone(),
        pjob("f2", JobState::Running, "v1", ago(300)),
    ]);
    let mut jobs = cached.clone();
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(
        (out.action, out.step.clone()),
        (Action::Requeue, ProvisionStep::StaleCache)
    );
    assert_eq!(p.triggers(), 0);

    // the API server has the retry already Failed (terminal): still stale
    let fresh = FixedFresh::jobs(vec![
        cached[0].clone(),
        pjob("f2", JobState::Failed, "v1", ago(300)),
    ]);
    let mut jobs = cached.clone();
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Requeue);
    assert_eq!(p.triggers(), 0);

    // Go's behaviour launches in both cases
    let go = engine.with_policy(LifecyclePolicy::go_compatible());
    let mut jobs = cached.clone();
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = go
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Backoff);
    assert_eq!(p.triggers(), 1);
}
