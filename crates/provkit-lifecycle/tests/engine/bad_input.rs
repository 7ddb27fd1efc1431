//! Bad input: odd histories and every kind of provider error give a defined outcome, never a panic and
//! never a lost or phantom job.

use std::time::Duration;

use chrono::TimeDelta;
use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    Action, DeprovisionHooks, DeprovisionResult, LaunchContext, LifecycleError, ProviderError,
    ProvisionHooks, ProvisionResult, ProvisionStatus,
};

use super::support::*;

#[tokio::test]
async fn unknown_states_are_polled_not_retriggered() {
    let (p, _c, engine) = table_engine(10);
    p.on_status(|id| {
        Ok(ProvisionStatus::new(
            id,
            JobState::from_string("Exploding"),
            "???",
        ))
    });
    let mut jobs = vec![pjob("1", JobState::from_string("Weird"), "v1", ago(10))];
    let out = engine
        .run_provisioning_lifecycle(
            &resource("u"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.action, Action::Poll);
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs[0].state, JobState::from_string("Exploding"));
    assert_eq!(p.triggers(), 0);
}

#[tokio::test]
async fn empty_ids_future_timestamps_duplicates_and_disorder() {
    let (p, _c, engine) = table_engine(10);
    let r = resource("b");
    // empty id in history -> trigger, the empty-id entry is kept untouched
    let mut empty = pjob("", JobState::Running, "v1", ago(5));
    empty.job_id.clear();
    let mut jobs = vec![empty.clone()];
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
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0], empty);

    // a failed job with a timestamp in the future: the wait never exceeds the backoff
    let mut jobs = vec![pjob(
        "f",
        JobState::Failed,
        "v1",
        t0() + TimeDelta::days(365),
    )];
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
    assert_eq!(out.requeue_after(), Some(mins(2)));

    // duplicate ids: the first is updated, nothing lost
    p.on_status(|id| Ok(ProvisionStatus::new(id, JobState::Succeeded, "successful")));
    let mut jobs = vec![
        pjob("dup", JobState::Running, "v1", ago(20)),
        pjob("dup", JobState::Running, "v1", ago(10)),
    ];
    engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(jobs.len(), 2);

    // out of time order: latest by timestamp decides; backoff by position gives the base
    let mut jobs = vec![
        pjob("new", JobState::Failed, "v1", ago(60)),
        pjob("old", JobState::Failed, "v1", ago(600)),
    ];
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
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(60)));

    // missing timestamps: a failed job without a timestamp is retried
    let mut no_ts = pjob("nots", JobState::Failed, "v1", t0());
    no_ts.timestamp = None;
    let mut jobs = vec![no_ts];
    let before = p.triggers();
    engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(p.triggers(), before + 1);
}

#[tokio::test]
async fn empty_job_id_from_provider_is_not_recorded() {
    let (p, _c, engine) = table_engine(10);
    let r = resource("e");
    p.on_trigger(|_| Ok(ProvisionResult::new("  ", JobState::Pending, "ok")));
    let flush = RecordingFlush::default();
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().status_flush(&flush);
    let err = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap_err();
    assert!(
        matches!(err, LifecycleError::EmptyJobId { ref job_type, .. } if *job_type == JobType::Provision),
        "{err}"
    );
    assert!(err.outcome_unknown());
    assert!(jobs.is_empty());
    assert_eq!(flush.count(), 0);
    assert_eq!(engine.unresolved_launch_keys().len(), 1);

    p.on_deprovision(|_| {
        let mut r = DeprovisionResult::triggered("", true);
        r.job_id = None;
        Ok(r)
    });
    let mut jobs: Vec<JobStatus> = vec![];
    let err = engine
        .run_deprovisioning_lifecycle(
            &r,
            &mut jobs,
            &LaunchContext::new(),
            &mut DeprovisionHooks::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, LifecycleError::EmptyJobId { ref job_type, .. } if *job_type == JobType::Deprovision)
    );
    assert!(jobs.is_empty());
}

#[tokio::test]
async fn every_provider_error_kind_has_a_defined_outcome() {
    let r = resource("k");
    type MakeError = fn() -> ProviderError;
    let kinds: Vec<(&str, MakeError)> = vec![
        ("rate", || {
            ProviderError::rate_limited(Duration::from_secs(7))
        }),
        ("notfound", || {
            ProviderError::not_found("template osac-create-x")
        }),
        ("notmade", || {
            ProviderError::launch_not_made("400 bad request", None)
        }),
        ("unknown", || {
            ProviderError::outcome_unknown("timeout", None)
        }),
        ("unsupported", || {
            ProviderError::unsupported("trigger_provision", "x")
        }),
        ("other", || ProviderError::other("boom")),
        ("wrapped rate", || {
            ProviderError::other_with_source(
                "wrapped",
                ProviderError::rate_limited(Duration::from_secs(3)),
            )
        }),
    ];
    for (name, make) in kinds {
        let (p, _c, engine) = table_engine(10);
        p.on_trigger(move |_| Err(make()));
        p.on_deprovision(move |_| Err(make()));
        p.on_status(move |_| Err(make()));
        p.on_deprovision_status(move |_| Err(make()));
        let mut jobs = vec![];
        let res = engine
            .run_provisioning_lifecycle(
                &r,
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut ProvisionHooks::new(),
            )
            .await;
        assert!(jobs.is_empty(), "{name}: nothing recorded");
        match name {
            // The wait, plus the default rate-limit jitter (up to half of it).
            "rate" => {
                let d = res.unwrap().requeue_after().unwrap();
                assert!(
                    d >= Duration::from_secs(7) && d <= Duration::from_millis(10_500),
                    "{d:?}"
                );
            }
            "wrapped rate" => {
                let d = res.unwrap().requeue_after().unwrap();
                assert!(
                    d >= Duration::from_secs(3) && d <= Duration::from_millis(4_500),
                    "{d:?}"
                );
            }
            "unknown" | "other" => assert!(res.unwrap_err().outcome_unknown(), "{name}"),
            _ => assert!(!res.unwrap_err().outcome_unknown(), "{name}"),
        }
        // polling a running job with that error never loses it
        let mut jobs = vec![pjob("1", JobState::Running, "v1", ago(10))];
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
        assert_eq!(jobs.len(), 1, "{name}");
        assert!(out.requeue_after().is_some(), "{name}");
        // deprovision: never removes the finalizer on an error
        let mut jobs = vec![];
        if let Ok(out) = engine
            .run_deprovisioning_lifecycle(
                &r,
                &mut jobs,
                &LaunchContext::new(),
                &mut DeprovisionHooks::new(),
            )
            .await
        {
            assert!(!out.may_remove_finalizer(), "{name}");
        }
        let mut jobs = vec![djob("d", JobState::Running, true, ago(10))];
        let out = engine
            .run_deprovisioning_lifecycle(
                &r,
                &mut jobs,
                &LaunchContext::new(),
                &mut DeprovisionHooks::new(),
            )
            .await
            .unwrap();
        assert!(!out.may_remove_finalizer(), "{name}");
        assert!(!jobs.is_empty());
    }
}
