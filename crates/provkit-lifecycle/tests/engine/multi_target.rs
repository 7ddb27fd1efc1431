//! Multi-target lifecycles: one table per rule of the newest Go operator's
//! `RunMultiTargetProvisioningLifecycle` / `RunMultiTargetDeprovisioningLifecycle`.

use std::sync::{Arc, Mutex};

use provkit_core::{JobState, JobStatus, JobType, find_latest_job_by_type_and_target};
use provkit_lifecycle::decide::Action;
use provkit_lifecycle::{
    DeprovisionHooks, DeprovisionResult, JobTarget, LaunchContext, Lifecycle, MultiTargetHooks,
    MultiTargetLifecycle, Outcome, ProviderError, ProvisionStatus, ProvisionStep, TargetError,
};

use super::support::*;

fn tagged(mut j: JobStatus, target: &str) -> JobStatus {
    j.target = target.to_owned();
    j
}

struct Two {
    cluster: Arc<TableProvider>,
    storage: Arc<TableProvider>,
    clock: provkit_core::ManualClock,
    engine: MultiTargetLifecycle,
}

/// Two targets, `cluster` (absorbs legacy history when `legacy`) and `storage`, each with its own
/// provider answering distinct job ids.
fn two(legacy: bool) -> Two {
    let (clock, dyn_clock) = clock_at(t0());
    let cluster = TableProvider::new();
    let storage = TableProvider::new();
    cluster.on_trigger(|_| {
        Ok(provkit_lifecycle::ProvisionResult::new(
            "c-1",
            JobState::Pending,
            "triggered",
        ))
    });
    storage.on_trigger(|_| {
        Ok(provkit_lifecycle::ProvisionResult::new(
            "s-1",
            JobState::Pending,
            "triggered",
        ))
    });
    let mk = |p: &Arc<TableProvider>| {
        Lifecycle::new(p.clone(), dyn_clock.clone()).with_policy(policy(10))
    };
    let mut c = JobTarget::new("cluster", mk(&cluster));
    if legacy {
        c = c.absorbs_legacy_history();
    }
    let engine = MultiTargetLifecycle::new([c, JobTarget::new("storage", mk(&storage))]).unwrap();
    Two {
        cluster,
        storage,
        clock,
        engine,
    }
}

fn targets_of(jobs: &[JobStatus]) -> Vec<(&str, &str)> {
    jobs.iter()
        .map(|j| (j.job_id.as_str(), j.target.as_str()))
        .collect()
}

#[test]
fn target_lists_are_validated() {
    let (_c, clock) = clock_at(t0());
    let l = || Lifecycle::new(TableProvider::new(), clock.clone());
    let cases: Vec<(&str, Vec<JobTarget>, TargetError)> = vec![
        ("empty list", vec![], TargetError::NoTargets),
        (
            "empty name",
            vec![JobTarget::new("", l())],
            TargetError::EmptyName,
        ),
        (
            "duplicate",
            vec![JobTarget::new("a", l()), JobTarget::new("a", l())],
            TargetError::Duplicate { name: "a".into() },
        ),
        (
            "two legacy owners",
            vec![
                JobTarget::new("a", l()).absorbs_legacy_history(),
                JobTarget::new("b", l()).absorbs_legacy_history(),
            ],
            TargetError::SeveralLegacyOwners {
                first: "a".into(),
                second: "b".into(),
            },
        ),
    ];
    for (name, targets, want) in cases {
        assert_eq!(
            MultiTargetLifecycle::new(targets).unwrap_err(),
            want,
            "{name}"
        );
    }
    let ok = MultiTargetLifecycle::new([
        JobTarget::new("a", l()).absorbs_legacy_history(),
        JobTarget::new("b", l()),
    ])
    .unwrap();
    assert_eq!(ok.legacy_owner(), Some("a"));
}

#[tokio::test]
async fn each_target_launches_and_polls_its_own_jobs() {
    let t = two(false);
    let r = resource("mt-1");
    let mut jobs = Vec::new();
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut MultiTargetHooks::new(),
        )
        .await;
    assert_eq!(targets_of(&jobs), [("c-1", "cluster"), ("s-1", "storage")]);
    assert!(out.history_changed);
    assert_eq!((t.cluster.triggers(), t.storage.triggers()), (1, 1));
    assert!(jobs.iter().all(|j| j.config_version == "v1"));

    // Next reconcile: cluster still running, storage succeeded with an output.
    t.cluster
        .on_status(|id| Ok(ProvisionStatus::new(id, JobState::Running, "running")));
    t.storage.on_status(|id| {
        Ok(
            ProvisionStatus::new(id, JobState::Succeeded, "successful").with_outputs(
                [("pool".to_owned(), serde_json::json!("gold"))]
                    .into_iter()
                    .collect(),
            ),
        )
    });
    let seen = Mutex::new(Vec::new());
    let mut hooks = MultiTargetHooks::new().on_success(|target, s| {
        seen.lock()
            .unwrap()
            .push((target.to_owned(), s.outputs.clone()));
    });
    let out = t
        .engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await;
    drop(hooks);
    let step = |name| match out.target(name).unwrap() {
        Ok(o) => o.step.clone(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        step("cluster"),
        ProvisionStep::Polled {
            job_id: "c-1".into(),
            state: JobState::Running
        }
    );
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "storage");
    assert_eq!(seen[0].1["pool"], "gold");
    assert_eq!(jobs[1].state, JobState::Succeeded);
    assert_eq!(jobs[0].state, JobState::Running);
    // Soonest requeue: the running cluster's poll interval (storage is done).
    assert_eq!(out.outcome, Outcome::RequeueAfter(POLL));
    assert_eq!((t.cluster.triggers(), t.storage.triggers()), (1, 1));
}

#[tokio::test]
async fn legacy_history_backfill_table() {
    // An untagged succeeded v1 job from the single-target days.
    struct Case {
        name: &'static str,
        legacy_owner: bool,
        want_backfilled: usize,
        want_cluster_triggers: usize,
    }
    let cases = [
        Case {
            name: "cluster absorbs: no second provisioning",
            legacy_owner: true,
            want_backfilled: 1,
            want_cluster_triggers: 0,
        },
        Case {
            name: "no owner: the untagged job belongs to no target",
            legacy_owner: false,
            want_backfilled: 0,
            want_cluster_triggers: 1,
        },
    ];
    for c in cases {
        let t = two(c.legacy_owner);
        let mut jobs = vec![pjob("legacy", JobState::Succeeded, "v1", ago(3600))];
        let out = t
            .engine
            .run_provisioning_lifecycle(
                &resource("mt-2"),
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut MultiTargetHooks::new(),
            )
            .await;
        assert_eq!(out.backfilled, c.want_backfilled, "{}", c.name);
        assert_eq!(t.cluster.triggers(), c.want_cluster_triggers, "{}", c.name);
        assert_eq!(t.storage.triggers(), 1, "{}", c.name);
        let legacy_target = jobs[0].target.as_str();
        assert_eq!(
            legacy_target,
            if c.legacy_owner { "cluster" } else { "" },
            "{}",
            c.name
        );
        // A second call backfills nothing more.
        let again = t
            .engine
            .run_provisioning_lifecycle(
                &resource("mt-2"),
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut MultiTargetHooks::new(),
            )
            .await;
        assert_eq!(again.backfilled, 0, "{}", c.name);
    }
}

#[tokio::test]
async fn soonest_requeue_of_all_targets_table() {
    // (cluster history, storage history, expected outcome)
    let cases: Vec<(&str, Vec<JobStatus>, Outcome)> = vec![
        (
            "both applied -> done",
            vec![
                tagged(pjob("c", JobState::Succeeded, "v1", ago(60)), "cluster"),
                tagged(pjob("s", JobState::Succeeded, "v1", ago(60)), "storage"),
            ],
            Outcome::Done,
        ),
        (
            "cluster backing off 90s, storage applied -> 90s",
            vec![
                tagged(pjob("c", JobState::Failed, "v1", ago(30)), "cluster"),
                tagged(pjob("s", JobState::Succeeded, "v1", ago(60)), "storage"),
            ],
            Outcome::RequeueAfter(mins(2) - std::time::Duration::from_secs(30)),
        ),
        (
            "cluster backing off 90s, storage running (poll 30s) -> 30s",
            vec![
                tagged(pjob("c", JobState::Failed, "v1", ago(30)), "cluster"),
                tagged(pjob("s", JobState::Running, "v1", ago(60)), "storage"),
            ],
            Outcome::RequeueAfter(POLL),
        ),
    ];
    for (name, mut jobs, want) in cases {
        let t = two(false);
        t.storage
            .on_status(|id| Ok(ProvisionStatus::new(id, JobState::Running, "running")));
        let out = t
            .engine
            .run_provisioning_lifecycle(
                &resource("mt-3"),
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut MultiTargetHooks::new(),
            )
            .await;
        assert_eq!(out.outcome, want, "{name}");
        assert_eq!(t.cluster.triggers() + t.storage.triggers(), 0, "{name}");
    }
}

#[tokio::test]
async fn errors_are_joined_and_never_stop_other_targets() {
    let t = two(false);
    t.cluster
        .on_trigger(|_| Err(ProviderError::launch_not_made("template missing", None)));
    let mut jobs = Vec::new();
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &resource("mt-4"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut MultiTargetHooks::new(),
        )
        .await;
    // storage ran after cluster failed, and its job is recorded.
    assert_eq!(targets_of(&jobs), [("s-1", "storage")]);
    assert!(out.history_changed);
    assert_eq!(out.outcome, Outcome::RequeueAfter(POLL));
    let err = out.into_result().unwrap_err();
    let failed: Vec<&str> = err.errors().map(|(t, _)| t).collect();
    assert_eq!(failed, ["cluster"]);
    assert_eq!(err.to_string(), r#"1 job target(s) failed: "cluster""#);
    let source =
        provkit_lifecycle::ErrorChain(std::error::Error::source(&err).unwrap()).to_string();
    assert!(source.contains("template missing"), "{source}");

    // Both failing: both listed, in target order.
    let t = two(false);
    for p in [&t.cluster, &t.storage] {
        p.on_trigger(|_| Err(ProviderError::launch_not_made("down", None)));
    }
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &resource("mt-4b"),
            &mut Vec::new(),
            "v1",
            &LaunchContext::new(),
            &mut MultiTargetHooks::new(),
        )
        .await;
    let err = out.into_result().unwrap_err();
    assert_eq!(
        err.errors().map(|(t, _)| t).collect::<Vec<_>>(),
        ["cluster", "storage"]
    );
}

#[tokio::test]
async fn stale_cache_check_is_per_target() {
    let t = two(true);
    // The API server already shows a running storage job (and an untagged running job, which
    // belongs to the legacy owner `cluster`); the cache shows nothing.
    let fresh = FixedFresh::jobs(vec![tagged(
        pjob("s-0", JobState::Running, "v1", t0()),
        "storage",
    )]);
    let mut jobs = Vec::new();
    let mut hooks = MultiTargetHooks::new().stale_check(&fresh);
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &resource("mt-5"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut hooks,
        )
        .await;
    let action = |n| out.target(n).unwrap().as_ref().unwrap().action;
    assert_eq!(action("cluster"), Action::Trigger);
    assert_eq!(action("storage"), Action::Requeue);
    assert_eq!((t.cluster.triggers(), t.storage.triggers()), (1, 0));
    assert_eq!(targets_of(&jobs), [("c-1", "cluster")]);

    // Untagged fresh jobs count for the legacy owner only.
    let t = two(true);
    let fresh = FixedFresh::jobs(vec![pjob("old", JobState::Running, "v1", t0())]);
    let mut hooks = MultiTargetHooks::new().stale_check(&fresh);
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &resource("mt-5b"),
            &mut Vec::new(),
            "v1",
            &LaunchContext::new(),
            &mut hooks,
        )
        .await;
    let action = |n| out.target(n).unwrap().as_ref().unwrap().action;
    assert_eq!(
        (action("cluster"), action("storage")),
        (Action::Requeue, Action::Trigger)
    );
}

#[tokio::test]
async fn flush_sees_the_whole_merged_history() {
    let t = two(false);
    let flush = RecordingFlush::default();
    let mut jobs = vec![tagged(
        pjob("old-s", JobState::Succeeded, "v0", ago(600)),
        "storage",
    )];
    let mut hooks = MultiTargetHooks::new().status_flush(&flush);
    t.engine
        .run_provisioning_lifecycle(
            &resource("mt-6"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut hooks,
        )
        .await
        .into_result()
        .unwrap();
    let calls = flush.calls.lock().unwrap();
    assert_eq!(calls.len(), 2, "one flush per launch");
    assert_eq!(
        targets_of(&calls[0]),
        [("old-s", "storage"), ("c-1", "cluster")]
    );
    assert_eq!(
        targets_of(&calls[1]),
        [("old-s", "storage"), ("c-1", "cluster"), ("s-1", "storage")]
    );
    assert_eq!(calls[1], jobs);
}

#[tokio::test]
async fn idempotency_keys_differ_per_target() {
    let t = two(false);
    let keys = Arc::new(Mutex::new(Vec::new()));
    for (p, id) in [(&t.cluster, "c-1"), (&t.storage, "s-1")] {
        let keys = keys.clone();
        p.on_trigger(move |ctx| {
            keys.lock()
                .unwrap()
                .push(ctx.idempotency_key.clone().unwrap());
            Ok(provkit_lifecycle::ProvisionResult::new(
                id,
                JobState::Pending,
                "",
            ))
        });
    }
    t.engine
        .run_provisioning_lifecycle(
            &resource("mt-7"),
            &mut Vec::new(),
            "v1",
            &LaunchContext::new(),
            &mut MultiTargetHooks::new(),
        )
        .await;
    let keys = keys.lock().unwrap();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
}

#[tokio::test]
async fn deprovision_provider_sees_only_its_targets_jobs() {
    let t = two(false);
    t.cluster
        .on_deprovision(|_| Ok(DeprovisionResult::triggered("cd-1", true)));
    t.storage
        .on_deprovision(|_| Ok(DeprovisionResult::triggered("sd-1", true)));
    let mut jobs = vec![
        tagged(pjob("c-1", JobState::Running, "v1", ago(60)), "cluster"),
        tagged(pjob("s-1", JobState::Succeeded, "v1", ago(60)), "storage"),
    ];
    let out = t
        .engine
        .run_deprovisioning_lifecycle(
            &resource("mt-8"),
            &mut jobs,
            &LaunchContext::new(),
            &mut DeprovisionHooks::new(),
        )
        .await;
    let seen_by = |p: &TableProvider| -> Vec<String> {
        p.received_jobs.lock().unwrap()[0]
            .iter()
            .map(|j| j.job_id.clone())
            .collect()
    };
    assert_eq!(seen_by(&t.cluster), ["c-1"]);
    assert_eq!(seen_by(&t.storage), ["s-1"]);
    assert!(!out.may_remove_finalizer());
    for (target, id) in [("cluster", "cd-1"), ("storage", "sd-1")] {
        let d = find_latest_job_by_type_and_target(&jobs, &JobType::Deprovision, target).unwrap();
        assert_eq!(d.job_id, id);
    }

    // cluster's teardown succeeds, storage's is still running: the finalizer stays.
    t.storage
        .on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Running, "running")));
    let out = t
        .engine
        .run_deprovisioning_lifecycle(
            &resource("mt-8"),
            &mut jobs,
            &LaunchContext::new(),
            &mut DeprovisionHooks::new(),
        )
        .await;
    assert!(!out.may_remove_finalizer());
    assert_eq!(out.outcome, Outcome::RequeueAfter(POLL));
    // Both done: now it may go.
    t.storage
        .on_deprovision_status(|id| Ok(ProvisionStatus::new(id, JobState::Succeeded, "ok")));
    t.clock.advance(std::time::Duration::from_secs(30));
    let out = t
        .engine
        .run_deprovisioning_lifecycle(
            &resource("mt-8"),
            &mut jobs,
            &LaunchContext::new(),
            &mut DeprovisionHooks::new(),
        )
        .await;
    assert!(out.may_remove_finalizer());
    assert_eq!(out.outcome, Outcome::Done);
    assert_eq!(t.cluster.deprovisions() + t.storage.deprovisions(), 2);
}

#[tokio::test]
async fn config_applied_only_when_every_target_applied_it() {
    let t = two(false);
    let c = tagged(pjob("c", JobState::Succeeded, "v1", ago(60)), "cluster");
    let s_old = tagged(pjob("s", JobState::Succeeded, "v0", ago(60)), "storage");
    let s_new = tagged(pjob("s2", JobState::Succeeded, "v1", ago(30)), "storage");
    assert!(
        !t.engine
            .is_config_applied(&[c.clone(), s_old.clone()], "v1")
    );
    assert!(t.engine.is_config_applied(&[c, s_old, s_new], "v1"));
}

/// A [`MemoryIntentStore`](provkit_lifecycle::MemoryIntentStore) that also records every write.
#[derive(Default)]
struct RecordingIntents {
    store: provkit_lifecycle::MemoryIntentStore,
    written: Mutex<Vec<provkit_core::LaunchIntent>>,
}

impl RecordingIntents {
    /// The target of every intent written, in order.
    fn targets_written(&self) -> Vec<String> {
        self.written
            .lock()
            .unwrap()
            .iter()
            .map(|i| i.target.clone())
            .collect()
    }
}

#[provkit_lifecycle::async_trait]
impl provkit_lifecycle::IntentStore for RecordingIntents {
    fn pending(&self) -> Option<provkit_core::LaunchIntent> {
        self.store.pending()
    }
    async fn write(
        &self,
        intent: &provkit_core::LaunchIntent,
    ) -> Result<(), provkit_lifecycle::BoxError> {
        self.written.lock().unwrap().push(intent.clone());
        self.store.write(intent).await
    }
    fn resolve(&self, key: &str) {
        self.store.resolve(key);
    }
}

#[tokio::test]
async fn launch_intents_carry_their_target_and_never_replace_another_targets() {
    use provkit_lifecycle::IntentStore as _;
    // Both targets launch: each writes its own intent, tagged with its name, and resolves it.
    let t = two(false);
    let intents = RecordingIntents::default();
    let mut jobs = Vec::new();
    let mut hooks = MultiTargetHooks::new().intents(&intents);
    t.engine
        .run_provisioning_lifecycle(
            &resource("mt-i1"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut hooks,
        )
        .await
        .into_result()
        .unwrap();
    let written = intents.targets_written();
    assert_eq!(written, ["cluster", "storage"]);
    assert!(intents.pending().is_none(), "both intents resolved");
    assert_eq!(targets_of(&jobs), [("c-1", "cluster"), ("s-1", "storage")]);

    // The cluster's intent is unresolved (a crash after its write) while the cluster has nothing
    // to do: storage must neither see nor replace it, so its launch is refused and retried later.
    let t = two(false);
    let held = provkit_core::LaunchIntent::new("k-cluster", JobType::Provision, "v1", ago(5))
        .with_target("cluster");
    let intents = RecordingIntents {
        store: provkit_lifecycle::MemoryIntentStore::with_pending(Some(held.clone())),
        ..RecordingIntents::default()
    };
    let mut jobs = vec![tagged(
        pjob("c-0", JobState::Succeeded, "v1", ago(60)),
        "cluster",
    )];
    let mut hooks = MultiTargetHooks::new().intents(&intents);
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &resource("mt-i2"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut hooks,
        )
        .await;
    let storage = out.target("storage").unwrap().as_ref().unwrap_err();
    let held_by = provkit_lifecycle::ErrorChain(storage).to_string();
    assert!(held_by.contains("\"cluster\""), "{held_by}");
    assert_eq!(t.storage.triggers(), 0, "nothing launched for storage");
    assert_eq!(
        intents.pending(),
        Some(held),
        "the cluster's intent is kept"
    );
    assert!(intents.written.lock().unwrap().is_empty());
}

/// Issue 33 on the multi-target path: a target's launch the provider is certain made no job
/// (rate-limited) resolves that target's intent, exactly as on the single-target path: the next
/// target of the same reconcile is not held by it, writes its own intent and launches.
#[tokio::test]
async fn a_targets_launch_certainly_not_made_resolves_its_intent_and_holds_no_other_target() {
    use provkit_lifecycle::IntentStore as _;
    let t = two(false);
    t.cluster.on_trigger(|_| {
        Err(ProviderError::rate_limited(std::time::Duration::from_secs(
            5,
        )))
    });
    let intents = RecordingIntents::default();
    let mut jobs = Vec::new();
    let mut hooks = MultiTargetHooks::new().intents(&intents);
    let out = t
        .engine
        .run_provisioning_lifecycle(
            &resource("mt-i3"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut hooks,
        )
        .await;
    let written = intents.targets_written();
    assert_eq!(
        written,
        ["cluster", "storage"],
        "both attempts had an intent"
    );
    assert!(
        out.target("storage").unwrap().is_ok(),
        "storage was not held by the cluster's refused attempt"
    );
    assert!(intents.pending().is_none(), "nothing left to look up");
    assert_eq!(targets_of(&jobs), [("s-1", "storage")]);
    assert_eq!(t.storage.triggers(), 1);
}
