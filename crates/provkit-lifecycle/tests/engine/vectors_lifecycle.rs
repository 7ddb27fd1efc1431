//! Spec §7.1 RunProvisioningLifecycle (maxHistory 5, poll 30s) and PollJob semantics (§3.7).

use std::time::Duration;

use provkit_core::{JobState, JobType};
use provkit_lifecycle::{
    Action, FlushReport, LaunchContext, ProviderError, ProvisionHooks, ProvisionStatus,
    ProvisionStep,
};

use super::support::*;

#[tokio::test]
async fn run_provisioning_lifecycle_table() {
    let r = resource("rpl");

    // 1. no jobs -> flush called, 30s, one job
    let (_p, _c, engine) = v011_engine(5);
    let flush = RecordingFlush::default();
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs.len(), 1);
    assert_eq!(flush.count(), 1);
    assert_eq!(
        flush.calls.lock().unwrap()[0],
        jobs,
        "flush receives the new history"
    );
    assert_eq!(out.flush, FlushReport::Flushed);
    let j = &jobs[0];
    assert_eq!(
        (
            j.job_id.as_str(),
            &j.job_type,
            &j.state,
            j.config_version.as_str()
        ),
        ("mock-job", &JobType::Provision, &JobState::Pending, "v1")
    );
    assert_eq!(j.message, "triggered");
    assert_eq!(j.timestamp, Some(t0()));

    // 2. flush error -> still no error, 30s, one job
    let flush = RecordingFlush::failing();
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs.len(), 1);
    assert!(matches!(out.flush, FlushReport::Failed(ref m) if m.contains("conflict")));

    // 3. backoff retry (Failed v1, 3m old) -> flush called, 30s
    let flush = RecordingFlush::default();
    let mut jobs = vec![pjob("old", JobState::Failed, "v1", ago(180))];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Backoff);
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(flush.count(), 1);
    assert_eq!(jobs.len(), 2);

    // 4. skip -> no flush
    let flush = RecordingFlush::default();
    let mut jobs = vec![pjob("s", JobState::Succeeded, "v1", ago(10))];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(
        (out.action, out.outcome),
        (Action::Skip, provkit_lifecycle::Outcome::Done)
    );
    assert_eq!(flush.count(), 0);

    // 5. poll (running job) -> no flush
    let mut jobs = vec![pjob("r", JobState::Running, "v1", ago(10))];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Poll);
    assert_eq!(flush.count(), 0);

    // 6. rate-limited (45s) -> 45s, no flush, jobs still empty
    let (p, _c, engine) = v011_engine(5);
    p.on_trigger(|_| Err(ProviderError::rate_limited(Duration::from_secs(45))));
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(45)));
    assert_eq!(
        out.step,
        ProvisionStep::RateLimited {
            retry_after: Duration::from_secs(45)
        }
    );
    assert!(jobs.is_empty());
    assert_eq!(flush.count(), 0);

    // 7. no flush hook -> works, 30s, one job
    let (_p, _c, engine) = v011_engine(5);
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
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs.len(), 1);
    assert_eq!(out.flush, FlushReport::NoHook);
}

#[tokio::test]
async fn trigger_error_is_returned_with_go_prefix_and_records_nothing() {
    let r = resource("err");
    let (p, _c, engine) = v011_engine(5);
    p.on_trigger(|_| {
        Err(ProviderError::launch_not_made(
            "dial tcp: connection refused",
            None,
        ))
    });
    let flush = RecordingFlush::default();
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let err = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap_err();
    // Go's `fmt.Errorf("failed to trigger provision: %w", err)` is the rendered chain.
    let chain = provkit_lifecycle::ErrorChain(&err).to_string();
    assert!(
        chain.starts_with("failed to trigger provision: "),
        "{chain}"
    );
    assert!(chain.contains("connection refused"), "{chain}");
    assert!(!err.outcome_unknown());
    assert!(jobs.is_empty());
    assert_eq!(flush.count(), 0);
}

#[tokio::test]
async fn poll_updates_state_and_message_and_calls_callbacks() {
    let r = resource("poll");
    let (p, _c, engine) = v011_engine(10);

    // running -> requeue poll interval, state updated
    p.on_status(|id| Ok(ProvisionStatus::new(id, JobState::Running, "running")));
    let mut jobs = vec![pjob("1", JobState::Pending, "v1", ago(10))];
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
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(
        (jobs[0].state.clone(), jobs[0].message.as_str()),
        (JobState::Running, "running")
    );
    assert!(out.history_changed);

    // failed with details -> on_failed(message with details)
    p.on_status(|id| {
        Ok(ProvisionStatus::new(id, JobState::Failed, "failed")
            .with_error_details("Error: Connection timeout"))
    });
    let mut failed = Vec::new();
    let mut succeeded = Vec::new();
    {
        let mut hooks = ProvisionHooks::new()
            .on_failed(|m| failed.push(m.to_owned()))
            .on_success(|s| succeeded.push(s.job_id.clone()));
        engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
            .await
            .unwrap();
    }
    assert_eq!(failed, ["failed: Error: Connection timeout"]);
    assert!(succeeded.is_empty());
    assert_eq!(jobs[0].message, "failed: Error: Connection timeout");

    // succeeded -> on_success, Done
    p.on_status(|id| Ok(ProvisionStatus::new(id, JobState::Succeeded, "successful")));
    let mut jobs = vec![pjob("2", JobState::Running, "v1", ago(10))];
    let mut failed = Vec::new();
    let mut succeeded = Vec::new();
    let out = {
        let mut hooks = ProvisionHooks::new()
            .on_failed(|m| failed.push(m.to_owned()))
            .on_success(|s| succeeded.push(s.job_id.clone()));
        engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
            .await
            .unwrap()
    };
    assert!(out.outcome.is_done());
    assert_eq!(succeeded, ["2"]);
    assert!(failed.is_empty());

    // canceled -> no callback at all
    p.on_status(|id| Ok(ProvisionStatus::new(id, JobState::Canceled, "canceled")));
    let mut jobs = vec![pjob("3", JobState::Running, "v1", ago(10))];
    let calls = std::sync::atomic::AtomicUsize::new(0);
    {
        let mut hooks = ProvisionHooks::new()
            .on_failed(|_| {
                calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
            .on_success(|_| {
                calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
            .await
            .unwrap();
    }
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(jobs[0].state, JobState::Canceled);

    // status error -> message "Failed to get job status: ...", state unchanged, poll interval
    p.on_status(|_| Err(ProviderError::other("timeout")));
    let mut jobs = vec![pjob("4", JobState::Running, "v1", ago(10))];
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
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs[0].state, JobState::Running);
    assert_eq!(jobs[0].message, "Failed to get job status: timeout");
    assert_eq!(
        out.step,
        ProvisionStep::StatusReadFailed { job_id: "4".into() }
    );
}

/// §7.7 ComputeInstance handleProvisioning: RateLimitError(5s) -> 5s and no job; a trigger error
/// propagates; poll and complete paths work; on_failed lets the caller decide the phase.
#[tokio::test]
async fn compute_instance_vectors() {
    let r = resource("ci");
    let (p, _c, engine) = v011_engine(10);
    p.on_trigger(|_| Err(ProviderError::rate_limited(Duration::from_secs(5))));
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
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(5)));
    assert!(jobs.is_empty());

    p.on_trigger(|_| Err(ProviderError::other("template not found")));
    let err = engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap_err();
    assert!(
        provkit_lifecycle::ErrorChain(&err)
            .to_string()
            .contains("template not found")
    );

    p.on_trigger(|_| {
        Ok(provkit_lifecycle::ProvisionResult::new(
            "ci-1",
            JobState::Pending,
            "Provisioning job triggered",
        ))
    });
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
    assert_eq!(out.requeue_after(), Some(POLL));
    p.on_status(|id| Ok(ProvisionStatus::new(id, JobState::Failed, "failed")));
    let vm_exists = true;
    let mut phase = "Progressing";
    {
        let mut hooks = ProvisionHooks::new().on_failed(|_| {
            if !vm_exists {
                phase = "Failed";
            }
        });
        engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
            .await
            .unwrap();
    }
    assert_eq!(phase, "Progressing", "a VM exists: the phase is left alone");
}

/// The flows' futures are `Send` (usable from a multi-threaded kube controller).
#[test]
fn futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (_p, _c, engine) = v011_engine(10);
    let r = resource("send");
    let mut jobs = vec![];
    let ctx = LaunchContext::new();
    let mut hooks = ProvisionHooks::new();
    let fut = engine.run_provisioning_lifecycle(&r, &mut jobs, "v1", &ctx, &mut hooks);
    assert_send(&fut);
    drop(fut);
    let mut jobs = vec![];
    let mut dh = provkit_lifecycle::DeprovisionHooks::new();
    let fut = engine.run_deprovisioning_lifecycle(&r, &mut jobs, &ctx, &mut dh);
    assert_send(&fut);
}
