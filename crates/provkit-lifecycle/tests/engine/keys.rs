//! Idempotency keys: stable for a retried attempt, distinct across attempts, unaffected by trimming.

use std::collections::HashSet;

use chrono::TimeDelta;
use provkit_core::{JobState, JobType, append_job, find_latest_job_by_type};
use provkit_lifecycle::{IdempotencyKey, Jitter, LaunchContext, ProvisionHooks};

use super::support::*;

fn next_key(jobs: &[provkit_core::JobStatus], version: &str) -> IdempotencyKey {
    IdempotencyKey::for_attempt(
        "uid-k",
        &JobType::Provision,
        version,
        find_latest_job_by_type(jobs, &JobType::Provision),
    )
}

#[test]
fn keys_never_collide_across_attempts_even_after_trimming() {
    let mut trimmed = vec![];
    let mut full = vec![];
    let mut seen = HashSet::new();
    for i in 0..40 {
        let version = if i % 7 < 4 { "v1" } else { "v2" };
        let k_trimmed = next_key(&trimmed, version);
        let k_full = next_key(&full, version);
        assert_eq!(
            k_trimmed, k_full,
            "trimming does not change the current attempt's key"
        );
        assert!(
            seen.insert(k_trimmed.clone()),
            "attempt {i} reuses an older key {k_trimmed}"
        );
        assert_eq!(
            next_key(&trimmed, version),
            k_trimmed,
            "a retried attempt keeps its key"
        );
        let job = pjob(
            &format!("{}", 100 + i),
            JobState::Failed,
            version,
            t0() + TimeDelta::seconds(i),
        );
        append_job(&mut trimmed, job.clone(), cap(3));
        append_job(&mut full, job, cap(1000));
        // deprovision noise does not change provision keys
        append_job(
            &mut trimmed,
            djob(&format!("d{i}"), JobState::Failed, true, t0()),
            cap(3),
        );
    }
    assert!(next_key(&[], "v1").as_str().starts_with("pk1-uid-k-p-"));
    assert_ne!(
        next_key(&[], "v1"),
        next_key(&[], "v2"),
        "the desired version is part of the key"
    );
    let other = IdempotencyKey::for_attempt("uid-other", &JobType::Provision, "v1", None);
    assert_ne!(other, next_key(&[], "v1"), "the uid is part of the key");
    let deprov = IdempotencyKey::for_attempt("uid-k", &JobType::Deprovision, "v1", None);
    assert_ne!(
        deprov,
        next_key(&[], "v1"),
        "the job type is part of the key"
    );
}

/// The engine passes the derived key to the provider on every launch.
#[tokio::test]
async fn the_engine_passes_the_attempt_key_to_the_provider() {
    let (p, _c, engine) = table_engine(10);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    p.on_trigger(move |ctx: &LaunchContext| {
        s.lock().unwrap().push(ctx.idempotency_key.clone());
        Ok(provkit_lifecycle::ProvisionResult::new(
            "j1",
            JobState::Pending,
            "ok",
        ))
    });
    let r = resource("uid-k");
    let mut jobs = vec![pjob("0", JobState::Succeeded, "v0", ago(60))];
    let want = next_key(&jobs, "v1");
    let ctx = LaunchContext::new().with_extra("caller", serde_json::json!(1));
    engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &ctx, &mut ProvisionHooks::new())
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().as_slice(), [Some(want)]);
}

#[test]
fn jitter_only_delays_within_the_fraction() {
    let d = mins(10);
    let j = Jitter::Proportional { max_fraction: 0.25 };
    assert_eq!(j.apply_with(d, || 0.0), d);
    assert_eq!(j.apply_with(d, || 1.0), d + d / 4);
    assert_eq!(j.apply_with(d, || f64::NAN), d);
    assert_eq!(
        Jitter::Proportional { max_fraction: 7.0 }.apply_with(d, || 1.0),
        d * 2,
        "fraction capped at 1"
    );
    assert_eq!(Jitter::None.apply_with(d, || 1.0), d);
    for _ in 0..100 {
        let x = j.apply(d);
        assert!(x >= d && x <= d + d / 4);
    }
}
