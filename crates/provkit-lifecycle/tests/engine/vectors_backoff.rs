//! Spec §3.2 / §7.7 backoff vectors and §7.1 HandleBackoff.

use std::time::Duration;

use provkit_core::JobState;
use provkit_lifecycle::decide::{
    Backoff, backoff_remaining, compute_backoff_from_jobs, compute_deprovision_backoff,
};
use provkit_lifecycle::{Action, LaunchContext, ProvisionHooks, ProvisionStep};

use super::support::*;

#[test]
fn compute_backoff_from_jobs_vectors() {
    use JobState::{Failed as F, Succeeded as S};
    let b = Backoff::default();
    let cases: Vec<(&str, Vec<provkit_core::JobStatus>, &str, Duration)> = vec![
        ("nil jobs", vec![], "v1", mins(2)),
        (
            "single failed",
            vec![pjob("1", F, "v1", t0())],
            "v1",
            mins(2),
        ),
        (
            "gap 5m",
            vec![pjob("1", F, "v1", ago(300)), pjob("2", F, "v1", t0())],
            "v1",
            mins(10),
        ),
        (
            "gap 20m capped",
            vec![pjob("1", F, "v1", ago(1200)), pjob("2", F, "v1", t0())],
            "v1",
            mins(30),
        ),
        (
            "gap 30s floored",
            vec![pjob("1", F, "v1", ago(30)), pjob("2", F, "v1", t0())],
            "v1",
            mins(2),
        ),
        (
            "equal timestamps",
            vec![pjob("1", F, "v1", t0()), pjob("2", F, "v1", t0())],
            "v1",
            mins(2),
        ),
        (
            "other version ignored",
            vec![pjob("1", F, "v1", ago(300)), pjob("2", F, "v2", t0())],
            "v1",
            mins(2),
        ),
        (
            "deprovision ignored",
            vec![
                pjob("1", F, "v1", ago(300)),
                djob("d", F, true, ago(180)),
                pjob("2", F, "v1", t0()),
            ],
            "v1",
            mins(10),
        ),
        (
            "succeeded ignored",
            vec![
                pjob("1", F, "v1", ago(300)),
                pjob("s", S, "v1", ago(180)),
                pjob("2", F, "v1", t0()),
            ],
            "v1",
            mins(10),
        ),
        (
            "reversed order",
            vec![pjob("1", F, "v1", t0()), pjob("2", F, "v1", ago(300))],
            "v1",
            mins(2),
        ),
        (
            "gap 61s",
            vec![pjob("1", F, "v1", ago(61)), pjob("2", F, "v1", t0())],
            "v1",
            Duration::from_secs(122),
        ),
        (
            "legacy empty matches only empty",
            vec![pjob("1", F, "", ago(300)), pjob("2", F, "", t0())],
            "",
            mins(10),
        ),
        (
            "legacy empty vs v1",
            vec![pjob("1", F, "", ago(300)), pjob("2", F, "", t0())],
            "v1",
            mins(2),
        ),
        (
            "only the two most recent by position",
            vec![
                pjob("0", F, "v1", ago(3000)),
                pjob("1", F, "v1", ago(300)),
                pjob("2", F, "v1", t0()),
            ],
            "v1",
            mins(10),
        ),
    ];
    for (name, jobs, version, want) in cases {
        assert_eq!(compute_backoff_from_jobs(&jobs, version, b), want, "{name}");
    }
}

#[test]
fn compute_deprovision_backoff_vectors() {
    use JobState::{Canceled, Failed as F};
    let b = Backoff::default();
    assert_eq!(compute_deprovision_backoff(&[], b), mins(2));
    let jobs = vec![djob("1", F, true, ago(300)), djob("2", F, true, t0())];
    assert_eq!(compute_deprovision_backoff(&jobs, b), mins(10));
    // versions are ignored, provision jobs and canceled jobs are not counted
    let mut d1 = djob("1", F, true, ago(240));
    d1.config_version = "x".into();
    let jobs = vec![
        d1,
        pjob("p", F, "v1", ago(100)),
        djob("c", Canceled, true, ago(50)),
        djob("2", F, false, t0()),
    ];
    assert_eq!(compute_deprovision_backoff(&jobs, b), mins(8));
}

#[test]
fn backoff_remaining_arithmetic() {
    assert_eq!(backoff_remaining(mins(2), Some(ago(180)), t0()), None);
    assert_eq!(
        backoff_remaining(mins(2), Some(ago(120)), t0()),
        None,
        "elapsed == backoff triggers"
    );
    assert_eq!(
        backoff_remaining(mins(2), Some(ago(30)), t0()),
        Some(Duration::from_secs(90))
    );
    assert_eq!(
        backoff_remaining(mins(2), None, t0()),
        None,
        "no timestamp: long ago"
    );
}

/// §7.1 HandleBackoff: failed 3m ago -> trigger called and its result returned; failed 30s ago -> ~90s.
#[tokio::test]
async fn handle_backoff_vectors() {
    let r = resource("hb");
    let (p, _c, engine) = v011_engine(5);

    let mut jobs = vec![pjob("f", JobState::Failed, "v1", ago(180))];
    let latest = jobs[0].clone();
    let out = engine
        .handle_backoff(
            &r,
            &mut jobs,
            "v1",
            Some(&latest),
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(p.triggers(), 1);
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(
        out.step,
        ProvisionStep::Launched {
            job_id: "mock-job".into()
        }
    );

    let mut jobs = vec![pjob("f", JobState::Failed, "v1", ago(30))];
    let latest = jobs[0].clone();
    let out = engine
        .handle_backoff(
            &r,
            &mut jobs,
            "v1",
            Some(&latest),
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(p.triggers(), 1, "not triggered");
    assert_eq!(out.action, Action::Backoff);
    assert_eq!(out.requeue_after(), Some(Duration::from_secs(90)));
    assert_eq!(
        out.step,
        ProvisionStep::BackingOff {
            remaining: Duration::from_secs(90)
        }
    );
}
