//! Spec §7.1 EvaluateAction table and §7.7 "EvaluateAction against a real API server".

use std::cell::Cell;

use provkit_core::{JobState, JobStatus};
use provkit_lifecycle::decide::{Action, LegacyJobs, evaluate_action_with_check};
use provkit_lifecycle::{LaunchContext, LifecyclePolicy, ProvisionHooks, ProvisionStep};

use super::support::*;

#[test]
fn evaluate_action_table() {
    struct Case {
        name: &'static str,
        jobs: Vec<JobStatus>,
        desired: &'static str,
        api_has_job: bool,
        want: Action,
        want_latest: Option<&'static str>,
        check_called: bool,
    }
    let t = t0();
    let mut empty_id = pjob("", JobState::Failed, "v1", t);
    empty_id.job_id.clear();
    let cases = vec![
        Case {
            name: "1 no jobs, api none",
            jobs: vec![],
            desired: "v1",
            api_has_job: false,
            want: Action::Trigger,
            want_latest: None,
            check_called: true,
        },
        Case {
            name: "2 no jobs, api has non-terminal",
            jobs: vec![],
            desired: "v1",
            api_has_job: true,
            want: Action::Requeue,
            want_latest: None,
            check_called: true,
        },
        Case {
            name: "3 running",
            jobs: vec![pjob("r", JobState::Running, "v1", t)],
            desired: "v1",
            api_has_job: true,
            want: Action::Poll,
            want_latest: Some("r"),
            check_called: false,
        },
        Case {
            name: "4 succeeded v1/v1",
            jobs: vec![pjob("s", JobState::Succeeded, "v1", t)],
            desired: "v1",
            api_has_job: true,
            want: Action::Skip,
            want_latest: Some("s"),
            check_called: false,
        },
        Case {
            name: "5 failed matching",
            jobs: vec![pjob("f", JobState::Failed, "v1", t)],
            desired: "v1",
            api_has_job: true,
            want: Action::Backoff,
            want_latest: Some("f"),
            check_called: false,
        },
        Case {
            name: "6 failed v1, desired v2",
            jobs: vec![pjob("f", JobState::Failed, "v1", t)],
            desired: "v2",
            api_has_job: false,
            want: Action::Trigger,
            want_latest: Some("f"),
            check_called: true,
        },
        Case {
            name: "7 legacy succeeded",
            jobs: vec![pjob("l", JobState::Succeeded, "", t)],
            desired: "v1",
            api_has_job: true,
            want: Action::Skip,
            want_latest: Some("l"),
            check_called: false,
        },
        Case {
            name: "8 legacy failed, desired v2",
            jobs: vec![pjob("l", JobState::Failed, "", t)],
            desired: "v2",
            api_has_job: false,
            want: Action::Trigger,
            want_latest: Some("l"),
            check_called: true,
        },
        Case {
            name: "9 empty id failed",
            jobs: vec![empty_id],
            desired: "v1",
            api_has_job: false,
            want: Action::Trigger,
            want_latest: Some(""),
            check_called: true,
        },
        // extra rows from §3.4
        Case {
            name: "canceled matching -> backoff",
            jobs: vec![pjob("c", JobState::Canceled, "v1", t)],
            desired: "v1",
            api_has_job: false,
            want: Action::Backoff,
            want_latest: Some("c"),
            check_called: false,
        },
        Case {
            name: "unknown state -> poll",
            jobs: vec![pjob("u", JobState::Unknown, "v1", t)],
            desired: "v1",
            api_has_job: false,
            want: Action::Poll,
            want_latest: Some("u"),
            check_called: false,
        },
        Case {
            name: "empty state -> poll",
            jobs: vec![pjob("e", JobState::from_string(""), "v1", t)],
            desired: "v1",
            api_has_job: false,
            want: Action::Poll,
            want_latest: Some("e"),
            check_called: false,
        },
    ];
    for c in cases {
        // The spec's v0.1.1 table, under the v0.1.1 policy explicitly (and provkit's default,
        // which only differs in what it records for a legacy job).
        for legacy in [
            LifecyclePolicy::go_v0_1_1().legacy_jobs,
            LifecyclePolicy::default().legacy_jobs,
        ] {
            let called = Cell::new(false);
            let e = evaluate_action_with_check(&c.jobs, c.desired, legacy, || {
                called.set(true);
                c.api_has_job
            });
            assert_eq!(e.action, c.want, "{}", c.name);
            assert_eq!(
                e.latest.map(|j| j.job_id.as_str()),
                c.want_latest,
                "{}",
                c.name
            );
            assert_eq!(
                called.get(),
                c.check_called,
                "{}: check called only on the trigger path",
                c.name
            );
        }
    }
}

/// §7.7: the API server shows jobs the (stale) cache does not.
#[tokio::test]
async fn api_server_vectors_through_the_engine() {
    let r = resource("u1");
    // stale empty cache, API server has a Running job -> Requeue, no status change
    let (p, _c, engine) = v011_engine(10);
    let fresh = FixedFresh::jobs(vec![pjob("running", JobState::Running, "v1", t0())]);
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Requeue);
    assert_eq!(out.step, ProvisionStep::StaleCache);
    assert_eq!(out.requeue_after(), Some(POLL));
    assert!(jobs.is_empty() && !out.history_changed);
    assert_eq!(p.triggers(), 0);

    // stale cache shows Succeeded v1, API server has a newer Running job, desired v2 -> Requeue
    let fresh = FixedFresh::jobs(vec![
        pjob("done-job", JobState::Succeeded, "v1", ago(60)),
        pjob("new", JobState::Running, "v2", t0()),
    ]);
    let mut jobs = vec![pjob("done-job", JobState::Succeeded, "v1", ago(60))];
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v2", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Requeue);
    assert_eq!(jobs.len(), 1);
    assert_eq!(p.triggers(), 0);

    // API server shows only the same terminal jobs -> Trigger (the pure evaluation returns the cached job)
    let cached = vec![pjob("done-job", JobState::Succeeded, "v1", ago(60))];
    let fresh = FixedFresh::jobs(cached.clone());
    let e = provkit_lifecycle::decide::evaluate_action(&cached, "v2", LegacyJobs::Adopt);
    assert_eq!(
        (e.action, e.latest.map(|j| j.job_id.as_str())),
        (Action::Trigger, Some("done-job"))
    );
    let mut jobs = cached.clone();
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v2", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Trigger);
    assert_eq!(fresh.count(), 1);
    assert_eq!(p.triggers(), 1);
    assert_eq!(jobs.len(), 2);
}

/// The stale check runs only on the would-trigger path (never on Skip / Poll / backoff wait).
#[tokio::test]
async fn stale_check_only_on_launch_paths() {
    let r = resource("u2");
    let (_p, _c, engine) = v011_engine(10);
    let fresh = FixedFresh::jobs(vec![]);
    for jobs in [
        vec![pjob("s", JobState::Succeeded, "v1", t0())],
        vec![pjob("r", JobState::Running, "v1", t0())],
        vec![pjob("f", JobState::Failed, "v1", ago(10))],
    ] {
        let mut jobs = jobs;
        let mut hooks = ProvisionHooks::new().stale_check(&fresh);
        engine
            .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
            .await
            .unwrap();
    }
    assert_eq!(fresh.count(), 0);
}

/// A failing stale check fails open (Go) by default, and requeues when configured fail-closed.
#[tokio::test]
async fn stale_check_error_fails_open_or_closed() {
    let r = resource("u3");
    let fresh = FixedFresh::error("apiserver unavailable");
    let (p, _c, engine) = v011_engine(10);
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Trigger);
    assert_eq!(p.triggers(), 1);

    let mut pol = policy(10);
    pol.stale_check_fail_open = false;
    let engine = engine.with_policy(pol);
    let mut jobs = vec![];
    let mut hooks = ProvisionHooks::new().stale_check(&fresh);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert_eq!(out.action, Action::Requeue);
    assert_eq!(p.triggers(), 1);
    assert!(jobs.is_empty());
}

/// The newest Go operator (`LifecyclePolicy::go_monorepo()`): the rows where it differs from v0.1.1
/// — the legacy Skip path is gone.
#[test]
fn evaluate_action_newest_go_table() {
    let t = t0();
    let legacy = LifecyclePolicy::go_monorepo().legacy_jobs;
    assert_eq!(legacy, LegacyJobs::Reprovision);
    // (name, jobs, desired, want)
    let cases = [
        (
            "legacy succeeded, desired v1 -> trigger",
            vec![pjob("l", JobState::Succeeded, "", t)],
            "v1",
            Action::Trigger,
        ),
        (
            "legacy succeeded, desired empty -> skip",
            vec![pjob("l", JobState::Succeeded, "", t)],
            "",
            Action::Skip,
        ),
        (
            "legacy failed, desired v2 -> trigger",
            vec![pjob("l", JobState::Failed, "", t)],
            "v2",
            Action::Trigger,
        ),
        (
            "succeeded v1/v1 -> skip",
            vec![pjob("s", JobState::Succeeded, "v1", t)],
            "v1",
            Action::Skip,
        ),
        (
            "failed v1/v1 -> backoff",
            vec![pjob("f", JobState::Failed, "v1", t)],
            "v1",
            Action::Backoff,
        ),
        (
            "running -> poll",
            vec![pjob("r", JobState::Running, "", t)],
            "v1",
            Action::Poll,
        ),
    ];
    for (name, jobs, desired, want) in cases {
        let e = evaluate_action_with_check(&jobs, desired, legacy, || false);
        assert_eq!(e.action, want, "{name}");
        assert!(!e.adopt_legacy, "{name}");
    }
}

/// Through the engine: a resource whose history predates config versions is provisioned once more
/// under the newest Go policy, and left alone under v0.1.1.
#[tokio::test]
async fn legacy_job_under_both_go_policies() {
    for (policy, want_triggers) in [
        (LifecyclePolicy::go_v0_1_1(), 0),
        (LifecyclePolicy::go_monorepo(), 1),
    ] {
        let (p, _c, engine) = v011_engine(10);
        let engine = engine.with_policy(policy.with_poll_interval(POLL));
        let mut jobs = vec![pjob("legacy", JobState::Succeeded, "", ago(3600))];
        engine
            .run_provisioning_lifecycle(
                &resource("lg"),
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut ProvisionHooks::new(),
            )
            .await
            .unwrap();
        assert_eq!(p.triggers(), want_triggers);
    }
}
