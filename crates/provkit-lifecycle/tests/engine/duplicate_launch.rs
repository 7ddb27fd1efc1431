//! Duplicate-launch tests in kube-runtime's model: reconciles of one object never overlap, but each may
//! read a randomly stale cached copy; status writes are optimistic (a write based on a stale copy
//! conflicts). With the stale-cache check and the flush wired, every needed attempt launches exactly one
//! job, also when launch answers are lost or the controller crashes between launch and flush.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::decide::{Action, LegacyJobs, evaluate_action};
use provkit_lifecycle::{
    BoxError, DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext,
    Lifecycle, LifecyclePolicy, ProviderError, ProvisionHooks, ProvisionResult, ProvisionStatus,
    ProvisionStep, ProvisioningProvider, ResourceView, StaleCacheCheck, StatusFlush,
};
use provkit_testing::scripted::{ScriptedProvider, StatusStep, TriggerStep};

use super::support::*;

/// The API server: every successful write is a new version (index = resourceVersion).
#[derive(Default)]
struct Server {
    versions: Mutex<Vec<Vec<JobStatus>>>,
}

impl Server {
    fn latest_index(&self) -> usize {
        self.versions.lock().unwrap().len() - 1
    }
    fn get(&self, i: usize) -> Vec<JobStatus> {
        self.versions.lock().unwrap()[i].clone()
    }
    /// Compare-and-swap write based on version `base`; returns the new version or a conflict.
    fn write(&self, base: usize, jobs: &[JobStatus]) -> Result<usize, ()> {
        let mut v = self.versions.lock().unwrap();
        if base + 1 != v.len() {
            return Err(());
        }
        v.push(jobs.to_vec());
        Ok(v.len() - 1)
    }
}

struct Fresh<'a>(&'a Server);

#[async_trait::async_trait]
impl StaleCacheCheck for Fresh<'_> {
    async fn read_fresh_jobs(&self) -> Result<Vec<JobStatus>, BoxError> {
        Ok(self.0.get(self.0.latest_index()))
    }
}

struct CasFlush<'a> {
    server: &'a Server,
    base: Mutex<usize>,
    crash: bool,
    crashed: AtomicBool,
}

#[async_trait::async_trait]
impl StatusFlush for CasFlush<'_> {
    async fn flush(&self, jobs: &[JobStatus]) -> Result<(), BoxError> {
        if self.crash {
            self.crashed.store(true, Ordering::SeqCst);
            return Err("controller crashed before the flush".into());
        }
        let mut base = self.base.lock().unwrap();
        match self.server.write(*base, jobs) {
            Ok(v) => {
                *base = v;
                Ok(())
            }
            Err(()) => Err("conflict".into()),
        }
    }
}

/// Wraps the scripted provider: checks at every launch that no earlier job of the resource is still
/// live, and can hide a lost job from the next lookup (a backend that indexes with a delay).
#[derive(Debug)]
struct Checking {
    inner: ScriptedProvider,
    violations: Mutex<Vec<String>>,
    hide_next_lookup: AtomicBool,
    hide_after_loss: bool,
}

impl Checking {
    fn check_no_live_job(&self, uid: &str, job_type: &JobType) {
        for j in self.inner.jobs() {
            if j.uid == uid && &j.job_type == job_type && j.exists && !j.state.is_terminal() {
                self.violations
                    .lock()
                    .unwrap()
                    .push(format!("launch while {} is {:?}", j.job_id, j.state));
            }
        }
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for Checking {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn trigger_provision(
        &self,
        r: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        self.check_no_live_job(&r.uid, &JobType::Provision);
        let res = self.inner.trigger_provision(r, ctx).await;
        if res.is_err() && self.hide_after_loss {
            self.hide_next_lookup.store(true, Ordering::SeqCst);
        }
        res
    }
    async fn provision_status(
        &self,
        r: &ResourceView,
        id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.inner.provision_status(r, id).await
    }
    async fn trigger_deprovision(
        &self,
        r: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        self.inner.trigger_deprovision(r, jobs, ctx).await
    }
    async fn deprovision_status(
        &self,
        r: &ResourceView,
        id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.inner.deprovision_status(r, id).await
    }
    fn idempotency_support(&self) -> IdempotencySupport {
        self.inner.idempotency_support()
    }
    async fn find_job_by_idempotency_key(
        &self,
        r: &ResourceView,
        t: &JobType,
        k: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        if self.hide_next_lookup.swap(false, Ordering::SeqCst) {
            return Ok(None);
        }
        self.inner.find_job_by_idempotency_key(r, t, k).await
    }
}

#[derive(Clone, Copy, Debug)]
struct Variant {
    support: IdempotencySupport,
    lose_answers: bool,
    crash: bool,
    hide_after_loss: bool,
    change_versions: bool,
    policy_go: bool,
}

#[derive(Default)]
struct Report {
    violations: Vec<String>,
    stale_reads: usize,
    stale_requeues: usize,
    recovered: usize,
    crashes: usize,
    launch_errors: usize,
}

async fn run_sequence(seed: u64, v: Variant) -> Report {
    let mut rng = fastrand::Rng::with_seed(seed);
    let uid = format!("dup-{seed}");
    let scripted = ScriptedProvider::new().with_idempotency_support(v.support);
    // scripts: a few launches (some lost, some failing cleanly), random job outcomes
    for _ in 0..rng.usize(3..8) {
        let step = match rng.u8(0..10) {
            0 | 1 if v.lose_answers => TriggerStep::LoseAnswer,
            2 => TriggerStep::RateLimited(Duration::from_secs(rng.u64(0..60))),
            3 => TriggerStep::FailNotMade("400".into()),
            _ => TriggerStep::launch(),
        };
        scripted.push_trigger(&uid, step);
        let mut steps = vec![];
        for _ in 0..rng.usize(0..3) {
            steps.push(StatusStep::State(if rng.bool() {
                JobState::Pending
            } else {
                JobState::Running
            }));
        }
        steps.push(StatusStep::State(if rng.u8(0..3) == 0 {
            JobState::Failed
        } else {
            JobState::Succeeded
        }));
        scripted.push_job_statuses(&uid, &JobType::Provision, steps);
    }
    let provider = Arc::new(Checking {
        inner: scripted.clone(),
        violations: Mutex::new(Vec::new()),
        hide_next_lookup: AtomicBool::new(false),
        hide_after_loss: v.hide_after_loss,
    });
    let (clock, dyn_clock) = clock_at(t0());
    let mut pol = if v.policy_go {
        LifecyclePolicy::go_compatible()
    } else {
        LifecyclePolicy::default()
    };
    pol.max_history = cap(100);
    let make_engine =
        || Lifecycle::new(provider.clone(), dyn_clock.clone()).with_policy(pol.clone());
    let mut engine = make_engine();
    let server = Server::default();
    server.versions.lock().unwrap().push(vec![]);
    let r = resource(&uid);
    let mut desired = "v1".to_owned();

    let mut report = Report::default();
    let main_steps = 40;
    for step in 0..(main_steps + 400) {
        let settling = step >= main_steps;
        if v.change_versions && !settling && rng.u8(0..12) == 0 {
            desired = format!("v{}", rng.u8(1..4));
        }
        let latest = server.latest_index();
        let base = if settling {
            latest
        } else {
            latest - rng.usize(0..=latest.min(3))
        };
        let mut jobs = server.get(base);
        if jobs != server.get(latest) {
            report.stale_reads += 1;
        }
        if settling && evaluate_action(&jobs, &desired, LegacyJobs::Adopt).action == Action::Skip {
            break;
        }
        let crash = v.crash && !settling && rng.u8(0..8) == 0;
        let fresh = Fresh(&server);
        let flush = CasFlush {
            server: &server,
            base: Mutex::new(base),
            crash,
            crashed: AtomicBool::new(false),
        };
        let result = {
            let mut hooks = ProvisionHooks::new()
                .stale_check(&fresh)
                .status_flush(&flush);
            engine
                .run_provisioning_lifecycle(
                    &r,
                    &mut jobs,
                    &desired,
                    &LaunchContext::new(),
                    &mut hooks,
                )
                .await
        };
        if flush.crashed.load(Ordering::SeqCst) {
            report.crashes += 1;
            engine = make_engine(); // the process restarts: in-memory state is gone
            clock.advance(Duration::from_secs(rng.u64(1..120)));
            continue;
        }
        let wait = match result {
            Ok(out) => {
                match out.step {
                    ProvisionStep::StaleCache => report.stale_requeues += 1,
                    ProvisionStep::Recovered { .. } => report.recovered += 1,
                    _ => {}
                }
                let base = *flush.base.lock().unwrap();
                if jobs != server.get(base) {
                    let _ = server.write(base, &jobs); // a conflict just means "requeue"
                }
                out.requeue_after().unwrap_or(Duration::from_secs(60))
            }
            Err(_) => {
                report.launch_errors += 1;
                Duration::from_secs(5)
            }
        };
        let wait = if settling {
            wait
        } else {
            Duration::from_secs(rng.u64(0..=wait.as_secs().max(1)))
        };
        clock.advance(wait);
    }

    let mut violations = provider.violations.lock().unwrap().clone();
    let jobs = scripted.jobs();
    let keys: Vec<_> = jobs.iter().filter_map(|j| j.key.clone()).collect();
    let distinct: HashSet<_> = keys.iter().collect();
    if distinct.len() != keys.len() {
        violations.push(format!("two jobs for one attempt: {keys:?}"));
    }
    let recorded: HashSet<String> = server
        .get(server.latest_index())
        .into_iter()
        .map(|j| j.job_id)
        .collect();
    for j in &jobs {
        if !recorded.contains(&j.job_id) {
            violations.push(format!("job {} was launched but never recorded", j.job_id));
        }
    }
    let final_jobs = server.get(server.latest_index());
    if evaluate_action(&final_jobs, &desired, LegacyJobs::Adopt).action != Action::Skip {
        violations.push("did not converge".into());
    }
    report.violations = violations;
    report
}

/// Failures per seed, plus totals of the situations exercised (stale reads, stale requeues,
/// recoveries by key, crashes, launch errors).
async fn run_many(
    variant: Variant,
    seeds: std::ops::Range<u64>,
) -> (Vec<(u64, Vec<String>)>, [usize; 5]) {
    let mut failures = vec![];
    let mut totals = [0; 5];
    for seed in seeds {
        let report = run_sequence(seed, variant).await;
        totals[0] += report.stale_reads;
        totals[1] += report.stale_requeues;
        totals[2] += report.recovered;
        totals[3] += report.crashes;
        totals[4] += report.launch_errors;
        if !report.violations.is_empty() {
            failures.push((seed, report.violations));
        }
    }
    (failures, totals)
}

const BASE: Variant = Variant {
    support: IdempotencySupport::CheapLookup,
    lose_answers: false,
    crash: false,
    hide_after_loss: false,
    change_versions: false,
    policy_go: false,
};

#[tokio::test]
async fn stale_copies_never_launch_twice_without_any_lookup() {
    let v = Variant {
        support: IdempotencySupport::Unsupported,
        change_versions: true,
        ..BASE
    };
    let (failures, [stale_reads, stale_requeues, ..]) = run_many(v, 0..400).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert!(
        stale_reads > 1000 && stale_requeues > 100,
        "exercised: {stale_reads} stale reads, {stale_requeues} stale requeues"
    );
}

#[tokio::test]
async fn lost_answers_and_crashes_with_cheap_lookup_launch_once() {
    let v = Variant {
        lose_answers: true,
        crash: true,
        ..BASE
    };
    let (failures, [_, _, recovered, crashes, _]) = run_many(v, 1000..1400).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert!(
        recovered > 100 && crashes > 40,
        "exercised: {recovered} recoveries, {crashes} crashes"
    );
}

#[tokio::test]
async fn lost_answers_with_delayed_lookup_launch_once() {
    let v = Variant {
        support: IdempotencySupport::Lookup,
        lose_answers: true,
        hide_after_loss: true,
        ..BASE
    };
    let (failures, [_, _, recovered, _, launch_errors]) = run_many(v, 2000..2200).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert!(
        recovered > 50 && launch_errors > 50,
        "exercised: {recovered} recoveries after {launch_errors} errors"
    );
}

/// The harness can fail: Go's behaviour (no lookup, stale check only before plain triggers and only for
/// non-terminal jobs) launches duplicates in the same model.
#[tokio::test]
async fn go_behaviour_launches_duplicates_in_this_model() {
    let v = Variant {
        support: IdempotencySupport::Unsupported,
        lose_answers: true,
        policy_go: true,
        ..BASE
    };
    let (failures, _) = run_many(v, 3000..3200).await;
    assert!(
        !failures.is_empty(),
        "expected the model to catch Go's duplicate launches"
    );
}

/// Without lost answers, Go's stale check alone (non-terminal jobs, plain triggers only) still lets a
/// reconcile on a stale copy retry a failed job a second time; the extended check does not.
#[tokio::test]
async fn go_stale_check_alone_lets_stale_backoff_retries_through() {
    let v = Variant {
        support: IdempotencySupport::Unsupported,
        change_versions: true,
        policy_go: true,
        ..BASE
    };
    let (failures, _) = run_many(v, 0..400).await;
    assert!(
        !failures.is_empty(),
        "expected duplicate retries from stale copies under Go's rule"
    );
}
