//! Engine benchmarks: `evaluate_action` on a 10-job history, one full reconcile decision through
//! the real `Lifecycle` with provkit-testing's `ScriptedProvider`, and job-history append/trim.
//!
//! Run: `cargo bench -p provkit-examples --bench engine` (figures in docs/performance.md).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use provkit_core::{
    Clock, DEFAULT_MAX_JOB_HISTORY, JobState, JobStatus, JobType, ManualClock, append_job,
};
use provkit_lifecycle::decide::{LegacyJobs, evaluate_action};
use provkit_lifecycle::{
    LaunchContext, Lifecycle, ProvisionHooks, ProvisioningProvider, ResourceMeta, ResourceView,
};
use provkit_testing::scripted::{ScriptedProvider, StatusStep};

const DESIRED: &str = "90f31220e6080755";

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

/// Ten jobs, oldest first: provision/deprovision alternating, every provision job failed except
/// the last one, which ends with `last_state` at the desired version.
fn history(last_state: &JobState) -> Vec<JobStatus> {
    (0..10)
        .map(|i| {
            let ty = if i % 3 == 2 {
                JobType::Deprovision
            } else {
                JobType::Provision
            };
            let state = if i == 9 {
                last_state.clone()
            } else {
                JobState::Failed
            };
            let mut job = JobStatus::new(
                format!("{}", 100 + i),
                ty,
                state,
                t0() + Duration::minutes(i),
            );
            job.config_version = if i == 9 {
                DESIRED.into()
            } else {
                format!("old-{i}")
            };
            job.message = "failed".into();
            job
        })
        .collect()
}

fn evaluate(c: &mut Criterion) {
    let mut g = c.benchmark_group("evaluate_action");
    for (name, state) in [
        ("10_jobs_skip", JobState::Succeeded),
        ("10_jobs_poll", JobState::Running),
        ("10_jobs_backoff", JobState::Failed),
    ] {
        let jobs = history(&state);
        g.bench_function(name, |b| {
            b.iter(|| {
                evaluate_action(black_box(&jobs), black_box(DESIRED), LegacyJobs::Adopt).action
            });
        });
    }
    let jobs = history(&JobState::Succeeded);
    g.bench_function("10_jobs_trigger_new_version", |b| {
        b.iter(|| {
            evaluate_action(
                black_box(&jobs),
                black_box("ffffffffffffffff"),
                LegacyJobs::Adopt,
            )
            .action
        });
    });
    g.finish();
}

fn engine(provider: &ScriptedProvider) -> Lifecycle {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(t0() + Duration::hours(1)));
    let provider: Arc<dyn ProvisioningProvider> = Arc::new(provider.clone());
    Lifecycle::new(provider, clock)
}

fn reconcile(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let resource = ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "subnet-a".into(),
            namespace: Some("tenant-a".into()),
            uid: "uid-1".into(),
            ..Default::default()
        },
        serde_json::json!({
            "apiVersion": "osac.openshift.io/v1alpha1",
            "kind": "Subnet",
            "metadata": {"name": "subnet-a", "namespace": "tenant-a", "uid": "uid-1"},
            "spec": {"cidr": "10.0.0.0/24", "network": "net-a"},
        }),
    );
    let ctx = LaunchContext::new();
    let mut g = c.benchmark_group("reconcile");

    // Latest job succeeded at the desired version: Skip, no provider call.
    let provider = ScriptedProvider::new();
    let lifecycle = engine(&provider);
    let jobs = history(&JobState::Succeeded);
    g.bench_function("skip_10_jobs", |b| {
        b.iter_batched(
            || jobs.clone(),
            |mut jobs| {
                rt.block_on(lifecycle.run_provisioning_lifecycle(
                    &resource,
                    &mut jobs,
                    DESIRED,
                    &ctx,
                    &mut ProvisionHooks::new(),
                ))
                .unwrap()
                .action
            },
            BatchSize::SmallInput,
        );
    });

    // Latest job running: Poll through the provider, update the job, requeue.
    g.bench_function("poll_10_jobs", |b| {
        b.iter_batched(
            || {
                let provider = ScriptedProvider::new();
                provider.set_default_statuses([StatusStep::State(JobState::Running)]);
                let launched = rt
                    .block_on(provider.trigger_provision(&resource, &ctx))
                    .unwrap();
                let mut jobs = history(&JobState::Running);
                jobs[9].job_id = launched.job_id;
                (engine(&provider), jobs)
            },
            |(lifecycle, mut jobs)| {
                rt.block_on(lifecycle.run_provisioning_lifecycle(
                    &resource,
                    &mut jobs,
                    DESIRED,
                    &ctx,
                    &mut ProvisionHooks::new(),
                ))
                .unwrap()
                .action
            },
            BatchSize::SmallInput,
        );
    });

    // Spec changed: Trigger, launch through the provider, append the job (trimming to 10).
    g.bench_function("trigger_10_jobs", |b| {
        b.iter_batched(
            || {
                (
                    engine(&ScriptedProvider::new()),
                    history(&JobState::Succeeded),
                )
            },
            |(lifecycle, mut jobs)| {
                rt.block_on(lifecycle.run_provisioning_lifecycle(
                    &resource,
                    &mut jobs,
                    "ffffffffffffffff",
                    &ctx,
                    &mut ProvisionHooks::new(),
                ))
                .unwrap()
                .action
            },
            BatchSize::SmallInput,
        );
    });
    g.finish();
}

fn history_ops(c: &mut Criterion) {
    let mut g = c.benchmark_group("job_history");
    let full = history(&JobState::Succeeded);
    let job = JobStatus::new(
        "200",
        JobType::Provision,
        JobState::Pending,
        t0() + Duration::hours(1),
    );
    g.bench_function("append_trim_at_cap_10", |b| {
        b.iter_batched(
            || (full.clone(), job.clone()),
            |(mut jobs, job)| {
                append_job(&mut jobs, job, DEFAULT_MAX_JOB_HISTORY);
                jobs
            },
            BatchSize::SmallInput,
        );
    });
    let half: Vec<_> = full[..5].to_vec();
    g.bench_function("append_below_cap", |b| {
        b.iter_batched(
            || (half.clone(), job.clone()),
            |(mut jobs, job)| {
                append_job(&mut jobs, job, DEFAULT_MAX_JOB_HISTORY);
                jobs
            },
            BatchSize::SmallInput,
        );
    });
    let cap3 = NonZeroUsize::new(3).unwrap();
    g.bench_function("append_trim_10_to_3", |b| {
        b.iter_batched(
            || (full.clone(), job.clone()),
            |(mut jobs, job)| {
                append_job(&mut jobs, job, cap3);
                jobs
            },
            BatchSize::SmallInput,
        );
    });
    g.finish();
}

criterion_group!(benches, evaluate, reconcile, history_ops);
criterion_main!(benches);
