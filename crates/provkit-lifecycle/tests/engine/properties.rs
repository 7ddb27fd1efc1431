//! Property tests: invariants of the pure decisions and of the engine over random histories.

use chrono::TimeDelta;
use proptest::prelude::*;
use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::decide::{
    Action, Backoff, LegacyJobs, compute_backoff_from_jobs, compute_deprovision_backoff,
    evaluate_action,
};
use provkit_lifecycle::{LaunchContext, Lifecycle, ProvisionHooks};
use provkit_testing::scripted::{ScriptedProvider, StatusStep, TriggerStep};

use super::support::*;

fn state() -> impl Strategy<Value = JobState> {
    prop_oneof![
        Just(JobState::Pending),
        Just(JobState::Waiting),
        Just(JobState::Running),
        Just(JobState::Succeeded),
        Just(JobState::Failed),
        Just(JobState::Canceled),
        Just(JobState::Unknown),
        "[a-z]{0,4}".prop_map(JobState::from_string),
    ]
}

fn job() -> impl Strategy<Value = JobStatus> {
    (
        "[0-9]{0,3}",
        prop::bool::ANY,
        state(),
        prop_oneof![
            Just(String::new()),
            Just("v1".to_owned()),
            Just("v2".to_owned())
        ],
        -100_000i64..100_000,
        prop::bool::ANY,
    )
        .prop_map(|(id, prov, state, version, offset, block)| {
            let t = if prov {
                JobType::Provision
            } else {
                JobType::Deprovision
            };
            let mut j = JobStatus::new(id, t, state, t0() + TimeDelta::seconds(offset));
            j.config_version = version;
            j.block_deletion_on_failure = block;
            j
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Backoff is always within [base, max], for provision and deprovision histories.
    #[test]
    fn backoff_within_bounds(jobs in prop::collection::vec(job(), 0..30), version in "v[12]?") {
        let b = Backoff::default();
        let d = compute_backoff_from_jobs(&jobs, &version, b);
        prop_assert!(d >= b.base && d <= b.max, "{d:?}");
        let d = compute_deprovision_backoff(&jobs, b);
        prop_assert!(d >= b.base && d <= b.max, "{d:?}");
    }

    /// A Succeeded job with the desired version that is the latest provision job always yields Skip.
    #[test]
    fn succeeded_with_desired_version_skips(mut jobs in prop::collection::vec(job(), 0..20), desired in "v[12]") {
        let latest_t = jobs.iter().filter_map(|j| j.timestamp).max().unwrap_or(t0()) + TimeDelta::seconds(1);
        let mut ok = JobStatus::new("ok", JobType::Provision, JobState::Succeeded, latest_t);
        ok.config_version = desired.clone();
        jobs.push(ok);
        for legacy in [LegacyJobs::Adopt, LegacyJobs::SkipForever] {
            prop_assert_eq!(evaluate_action(&jobs, &desired, legacy).action, Action::Skip);
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Reconcile { desired: u8, advance_secs: u64 },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (0u8..3, 0u64..4000).prop_map(|(desired, advance_secs)| Op::Reconcile {
            desired,
            advance_secs,
        }),
        1..40,
    )
}

fn outcome_step() -> impl Strategy<Value = Vec<StatusStep>> {
    prop::collection::vec(
        prop_oneof![
            Just(StatusStep::State(JobState::Running)),
            Just(StatusStep::State(JobState::Succeeded)),
            Just(StatusStep::State(JobState::Failed)),
            Just(StatusStep::State(JobState::Canceled)),
            Just(StatusStep::NotFound),
            Just(StatusStep::Error("timeout".into())),
        ],
        1..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Over random reconcile sequences: never two non-terminal provision jobs in one history, and the
    /// history never exceeds the cap.
    #[test]
    fn engine_invariants(ops in ops(), cap_n in 1usize..6, scripts in prop::collection::vec(outcome_step(), 0..10), lossy in prop::bool::ANY) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let provider = ScriptedProvider::new();
            for (i, s) in scripts.into_iter().enumerate() {
                provider.push_job_statuses("prop", &JobType::Provision, s);
                if lossy && i % 3 == 0 {
                    provider.push_trigger("prop", TriggerStep::LoseAnswer);
                } else {
                    provider.push_trigger("prop", TriggerStep::launch());
                }
            }
            let (clock, dyn_clock) = clock_at(t0());
            let engine = Lifecycle::new(std::sync::Arc::new(provider), dyn_clock).with_policy(policy(cap_n));
            let r = resource("prop");
            let mut jobs = vec![];
            for op in ops {
                let Op::Reconcile { desired, advance_secs } = op;
                let desired = format!("v{desired}");
                let _ = engine.run_provisioning_lifecycle(&r, &mut jobs, &desired, &LaunchContext::new(), &mut ProvisionHooks::new()).await;
                let live = jobs.iter().filter(|j| j.job_type == JobType::Provision && !j.job_id.is_empty() && !j.state.is_terminal()).count();
                assert!(live <= 1, "two non-terminal provision jobs: {jobs:?}");
                assert!(jobs.len() <= cap_n, "history {} > cap {cap_n}", jobs.len());
                assert!(jobs.iter().all(|j| !j.job_id.is_empty()), "a job without id was recorded");
                clock.advance(std::time::Duration::from_secs(advance_secs));
            }
        });
    }
}
