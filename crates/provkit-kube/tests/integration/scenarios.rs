//! The reconcile scenarios (1–6) against the mocked API server, with the
//! `ScriptedProvider` on the provider side (the kube requests are the point here; the AAP
//! wire side is covered by `aap.rs`). Every API request is asserted (method, path, body) in
//! order; a missing one times out, an extra one fails the reconcile.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use provkit_core::{Clock, JobState, JobType, ManualClock, compute_desired_config_version};
use provkit_kube::{
    EventPublisher, ManagementStatePolicy, Provisioner, ProvisioningCallbacks, ReconcileError,
};
use provkit_lifecycle::{Lifecycle, ProvisionStatus};
use provkit_testing::scripted::{DeprovisionScript, ProviderCall, ScriptedProvider, StatusStep};
use serde_json::{Value, json};

use crate::fixtures::*;

/// Go's phase handling (osac-provisioning.md §6).
pub struct Phases;

impl ProvisioningCallbacks<Network> for Phases {
    fn on_apply(&self, obj: &mut Network, config_applied: bool) {
        let s = obj.status.get_or_insert_with(Default::default);
        match s.phase.as_deref() {
            None | Some("") => s.phase = Some("Progressing".into()),
            Some("Ready") if !config_applied => s.phase = Some("Progressing".into()),
            _ => {}
        }
    }
    fn on_failed(&self, obj: &mut Network, _message: &str) {
        obj.status.get_or_insert_with(Default::default).phase = Some("Failed".into());
    }
    fn on_succeeded(&self, obj: &mut Network, _status: &ProvisionStatus) {
        obj.status.get_or_insert_with(Default::default).phase = Some("Ready".into());
    }
    fn on_deleting(&self, obj: &mut Network) {
        obj.status.get_or_insert_with(Default::default).phase = Some("Deleting".into());
    }
}

pub struct Harness {
    pub provider: ScriptedProvider,
    pub clock: ManualClock,
    pub lifecycle: Lifecycle,
}

impl Harness {
    pub fn new() -> Self {
        let provider = ScriptedProvider::new();
        let clock = ManualClock::new(t(0));
        let clock_dyn: Arc<dyn Clock> = Arc::new(clock.clone());
        let lifecycle = Lifecycle::new(Arc::new(provider.clone()), clock_dyn);
        Self {
            provider,
            clock,
            lifecycle,
        }
    }

    /// One reconcile of `obj` against a fresh mocked API server playing `script`.
    pub async fn reconcile(
        &self,
        obj: Network,
        script: Vec<Exchange>,
        events: bool,
    ) -> (Result<Action, ReconcileError>, Vec<String>) {
        let (client, verifier) = testcontext();
        let server = verifier.run(script);
        // The OSAC preset: these scenarios are the Go operator's.
        let mut p = Provisioner::new(client.clone(), self.lifecycle.clone(), FINALIZER)
            .with_management(ManagementStatePolicy::osac());
        if events {
            let reporter = Reporter {
                controller: "provkit-test".into(),
                instance: Some("test-0".into()),
            };
            p = p.with_events(EventPublisher::new(client, reporter));
        }
        let result = p.reconcile(Arc::new(obj), &Phases).await;
        let log = timeout_after_1s(server).await;
        (result, log)
    }

    pub fn launches(&self) -> usize {
        self.provider
            .calls()
            .iter()
            .filter(|c| matches!(c, ProviderCall::TriggerProvision { .. }))
            .count()
    }

    pub fn deprovision_launches(&self) -> usize {
        self.provider
            .calls()
            .iter()
            .filter(|c| matches!(c, ProviderCall::TriggerDeprovision { .. }))
            .count()
    }

    pub fn provider_calls(&self) -> usize {
        self.provider.calls().len()
    }
}

pub fn version(obj: &Network) -> String {
    compute_desired_config_version(&obj.spec).unwrap()
}

/// A job as the API server stores it.
pub fn job_json(
    id: &str,
    ty: &str,
    state: &str,
    minute: u32,
    message: &str,
    version: &str,
) -> Value {
    let mut j = json!({
        "jobID": id, "type": ty, "timestamp": format!("2026-06-29T12:{minute:02}:00Z"), "state": state
    });
    if !message.is_empty() {
        j["message"] = message.into();
    }
    if !version.is_empty() {
        j["configVersion"] = version.into();
    }
    if ty == "deprovision" {
        j["blockDeletionOnFailure"] = true.into();
    }
    j
}

/// The object as stored after a status write of `status`.
pub fn stored(base: &Network, rv: &str, status: &Value) -> Network {
    let mut v = base.clone().with_rv(rv).json();
    v["status"] = status.clone();
    serde_json::from_value(v).unwrap()
}

const POLL: Duration = Duration::from_secs(30);

/// Scenario 1: new object → finalizer added (JSON patch with the `test` op) → the next
/// reconcile triggers exactly one job, flushes it, and requeues after the poll interval.
#[tokio::test]
async fn s1_new_object_gets_finalizer_then_exactly_one_job() {
    let h = Harness::new();
    let new = Network::test();
    let finalized = new.clone().finalized().with_rv("2");

    let (result, log) = h
        .reconcile(new.clone(), vec![add_finalizer(&finalized)], false)
        .await;
    assert_eq!(result.unwrap(), Action::await_change());
    assert_eq!(log, [format!("PATCH {}", patch_uri())]);
    assert_eq!(
        h.provider_calls(),
        0,
        "no provider call before the finalizer is in place"
    );

    let v = version(&finalized);
    let job = job_json(
        "1",
        "provision",
        "Pending",
        0,
        "Provisioning job triggered",
        &v,
    );
    let flushed = json!({"provisioningJobs": [job], "desiredConfigVersion": v});
    let after_flush = stored(&finalized, "3", &flushed);
    let full =
        json!({"phase": "Progressing", "provisioningJobs": [job], "desiredConfigVersion": v});
    let (result, log) = h
        .reconcile(
            finalized.clone(),
            vec![
                get_object(&finalized),                     // stale-cache check, uncached
                patch_intent("2", "provision", &finalized), // write-ahead intent
                patch_status("2", clearing_intent(flushed), &after_flush), // flush after the launch
                patch_status("3", full.clone(), &stored(&finalized, "4", &full)), // end-of-reconcile
                event("ProvisionJobTriggered", "1"),
            ],
            true,
        )
        .await;
    assert_eq!(result.unwrap(), Action::requeue(POLL));
    assert_eq!(log.len(), 5);
    assert_eq!(h.launches(), 1);
    assert_eq!(h.provider.jobs_created(UID, &JobType::Provision), 1);
}

/// Scenario 2: poll → running → succeeded → phase Ready; no further provider calls until the
/// spec changes.
#[tokio::test]
async fn s2_poll_running_then_succeeded_then_quiet() {
    let h = Harness::new();
    h.provider.push_job_statuses(
        UID,
        &JobType::Provision,
        [
            StatusStep::State(JobState::Running),
            StatusStep::State(JobState::Succeeded),
        ],
    );
    let base = Network::test().finalized().with_rv("2");
    let v = version(&base);
    let pending = job_json(
        "1",
        "provision",
        "Pending",
        0,
        "Provisioning job triggered",
        &v,
    );
    let s1 = json!({"provisioningJobs": [pending], "desiredConfigVersion": v});
    let s1_full =
        json!({"phase": "Progressing", "provisioningJobs": [pending], "desiredConfigVersion": v});
    let (r, _) = h
        .reconcile(
            base.clone(),
            vec![
                get_object(&base),
                patch_intent("2", "provision", &base),
                patch_status("2", clearing_intent(s1.clone()), &stored(&base, "3", &s1)),
                patch_status("3", s1_full.clone(), &stored(&base, "4", &s1_full)),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));

    // poll: running (status write only, no stale check, no flush)
    let cached = stored(&base, "4", &s1_full);
    let running = job_json("1", "provision", "Running", 0, "running", &v);
    let s2 =
        json!({"phase": "Progressing", "provisioningJobs": [running], "desiredConfigVersion": v});
    let (r, log) = h
        .reconcile(
            cached.clone(),
            vec![patch_status("4", s2.clone(), &stored(&base, "5", &s2))],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log, [format!("PATCH {}", status_uri())]);

    // poll: succeeded → Ready, Event
    let cached = stored(&base, "5", &s2);
    let done = job_json("1", "provision", "Succeeded", 0, "succeeded", &v);
    let s3 = json!({"phase": "Ready", "provisioningJobs": [done], "desiredConfigVersion": v});
    let (r, _) = h
        .reconcile(
            cached,
            vec![
                patch_status("5", s3.clone(), &stored(&base, "6", &s3)),
                event("ProvisionJobSucceeded", "1"),
            ],
            true,
        )
        .await;
    assert_resync(&r.unwrap());
    let calls = h.provider_calls();

    // quiet: no request, no provider call
    let ready = stored(&base, "6", &s3);
    for _ in 0..3 {
        let (r, log) = h.reconcile(ready.clone(), vec![], false).await;
        assert_resync(&r.unwrap());
        assert!(log.is_empty());
    }
    assert_eq!(h.provider_calls(), calls);
    assert_eq!(h.launches(), 1);
}

/// Scenario 3: a spec change → new desired version → new job; reverting it (A-B-A) → another.
#[tokio::test]
async fn s3_spec_change_and_revert_each_launch_a_job() {
    let h = Harness::new();
    let a = Network::test().finalized().with_rv("10");
    let va = version(&a);
    let b = a.clone().with_cidr("10.1.0.0/24");
    let vb = version(&b);
    assert_ne!(va, vb);

    // Ready at A (job "100" succeeded), then the spec changes to B.
    let ok_a = job_json("100", "provision", "Succeeded", 0, "succeeded", &va);
    let ready_a = json!({"phase": "Ready", "provisioningJobs": [ok_a], "desiredConfigVersion": va});
    let cached_b = stored(&b, "11", &ready_a);
    let job_b = job_json(
        "1",
        "provision",
        "Pending",
        0,
        "Provisioning job triggered",
        &vb,
    );
    let flush_b = json!({"provisioningJobs": [ok_a, job_b], "desiredConfigVersion": vb});
    let full_b = json!({"phase": "Progressing", "provisioningJobs": [ok_a, job_b], "desiredConfigVersion": vb});
    let (r, _) = h
        .reconcile(
            cached_b.clone(),
            vec![
                get_object(&cached_b),
                patch_intent("11", "provision", &cached_b),
                patch_status(
                    "11",
                    clearing_intent(flush_b.clone()),
                    &stored(&b, "12", &flush_b),
                ),
                patch_status("12", full_b.clone(), &stored(&b, "13", &full_b)),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(h.launches(), 1);

    // B succeeded (a minute later), then the spec is reverted to A: the old succeeded A job
    // does not count (A-B-A), a new job is launched with A's version.
    h.clock.advance(Duration::from_secs(60));
    let ok_b = job_json("1", "provision", "Succeeded", 0, "succeeded", &vb);
    let ready_b =
        json!({"phase": "Ready", "provisioningJobs": [ok_a, ok_b], "desiredConfigVersion": vb});
    let cached_a = stored(&a, "14", &ready_b);
    let job_a2 = job_json(
        "2",
        "provision",
        "Pending",
        1,
        "Provisioning job triggered",
        &va,
    );
    let flush_a = json!({"provisioningJobs": [ok_a, ok_b, job_a2], "desiredConfigVersion": va});
    let full_a = json!({"phase": "Progressing", "provisioningJobs": [ok_a, ok_b, job_a2], "desiredConfigVersion": va});
    let (r, log) = h
        .reconcile(
            cached_a.clone(),
            vec![
                get_object(&cached_a),
                patch_intent("14", "provision", &cached_a),
                patch_status(
                    "14",
                    clearing_intent(flush_a.clone()),
                    &stored(&a, "15", &flush_a),
                ),
                patch_status("15", full_a.clone(), &stored(&a, "16", &full_a)),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log.len(), 4);
    assert_eq!(h.launches(), 2);
}

/// Scenario 4: the cached object shows no job while the API server has a running one →
/// Requeue after the poll interval, zero launches, no status write.
#[tokio::test]
async fn s4_stale_cache_requeues_without_launching() {
    let h = Harness::new();
    let cached = Network::test().finalized().with_rv("2");
    let v = version(&cached);
    let running = json!({"provisioningJobs": [job_json("77", "provision", "Running", 0, "running", &v)], "desiredConfigVersion": v});
    let fresh = stored(&cached, "3", &running);
    let (r, log) = h.reconcile(cached, vec![get_object(&fresh)], false).await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log, [format!("GET {}", obj_uri())]);
    assert_eq!(h.launches(), 0);
}

/// Scenario 4 on deletion: the cached copy shows no deprovision job while the API server
/// already holds the running one a previous reconcile launched and flushed → the uncached GET,
/// no provider call (no second deprovision launch), no status write, the finalizer kept, and a
/// requeue after the poll interval.
#[tokio::test]
async fn s4_deletion_on_stale_cache_keeps_finalizer_without_launching() {
    let h = Harness::new();
    // Were the check missing, this launch would happen (and its flush would fail the script).
    h.provider
        .push_deprovision(UID, DeprovisionScript::triggered());
    let base = Network::test().finalized().needs_delete();
    let v = "v1";
    let done = job_json("100", "provision", "Succeeded", 0, "succeeded", v);
    let running = job_json("1", "deprovision", "Running", 1, "running", "");
    let cached = stored(
        &base,
        "40",
        &json!({"phase": "Ready", "provisioningJobs": [done], "desiredConfigVersion": v}),
    );
    let fresh = stored(
        &base,
        "41",
        &json!({"phase": "Deleting", "provisioningJobs": [done, running], "desiredConfigVersion": v}),
    );
    let (r, log) = h.reconcile(cached, vec![get_object(&fresh)], true).await;
    // Kept finalizer: a requeue, not an error.
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log, [format!("GET {}", obj_uri())]);
    assert_eq!(h.provider_calls(), 0, "{:?}", h.provider.calls());
}

/// On deletion the stale-cache check follows the same fail-open/closed policy as on apply:
/// closed → the failed read keeps the finalizer with no launch and no write; open → the
/// deprovision job is launched and flushed.
#[tokio::test]
async fn deletion_stale_check_error_fails_open_or_closed_per_policy() {
    let base = Network::test().finalized().needs_delete();
    let cached = stored(&base, "50", &json!({"phase": "Deleting"}));
    let get_fails = || Exchange::get(obj_uri(), Value::Null).fails(500, "InternalError");

    let mut closed = Harness::new();
    closed
        .provider
        .push_deprovision(UID, DeprovisionScript::triggered());
    let mut policy = closed.lifecycle.policy().clone();
    policy.stale_check_fail_open = false;
    closed.lifecycle = closed.lifecycle.clone().with_policy(policy);
    let (r, log) = closed
        .reconcile(cached.clone(), vec![get_fails()], false)
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log.len(), 1);
    assert_eq!(closed.provider_calls(), 0);

    let open = Harness::new();
    open.provider
        .push_deprovision(UID, DeprovisionScript::triggered());
    let deprov = job_json(
        "1",
        "deprovision",
        "Pending",
        0,
        "Deprovision job triggered",
        "",
    );
    let flushed = json!({"provisioningJobs": [deprov], "desiredConfigVersion": null});
    let (r, log) = open
        .reconcile(
            cached.clone(),
            vec![
                get_fails(),
                patch_intent("50", "deprovision", &cached),
                patch_status(
                    "50",
                    clearing_intent(flushed),
                    &stored(
                        &base,
                        "51",
                        &json!({"phase": "Deleting", "provisioningJobs": [deprov]}),
                    ),
                ),
            ],
            false,
        )
        .await;
    assert_ne!(
        r.unwrap(),
        Action::await_change(),
        "finalizer kept: requeued"
    );
    assert_eq!(log.len(), 3);
    assert_eq!(open.deprovision_launches(), 1);
}

/// Scenario 5: the flush hits 409 → re-read, merge by jobID, retry → the other writer's
/// change (a condition and a job it recorded) and our job id are both persisted.
#[tokio::test]
async fn s5_flush_conflict_rereads_merges_and_retries() {
    let h = Harness::new();
    let cached = Network::test().finalized().with_rv("2");
    let v = version(&cached);
    let ours = job_json(
        "1",
        "provision",
        "Pending",
        0,
        "Provisioning job triggered",
        &v,
    );
    let theirs_job = job_json("40", "deprovision", "Succeeded", 0, "imported", "");
    let cond = json!({"type": "Validated", "status": "True", "reason": "Ok", "message": "",
                      "lastTransitionTime": "2026-06-29T11:00:00Z"});
    let theirs = json!({"provisioningJobs": [theirs_job], "conditions": [cond]});
    let other_writer = {
        let mut n = stored(&cached, "3", &theirs);
        n.metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push("feedback.example/finalizer".into());
        n
    };
    let first = json!({"provisioningJobs": [ours], "desiredConfigVersion": v});
    let merged = json!({"provisioningJobs": [theirs_job, ours], "desiredConfigVersion": v});
    let after_retry = {
        let mut n = other_writer.clone().with_rv("4");
        let s = n.status.as_mut().unwrap();
        s.provisioning.provisioning_jobs =
            serde_json::from_value(json!([theirs_job, ours])).unwrap();
        s.provisioning.desired_config_version = v.clone();
        n
    };
    // the end-of-reconcile write keeps the merged jobs and does not touch conditions
    let full = json!({"phase": "Progressing", "provisioningJobs": [theirs_job, ours], "desiredConfigVersion": v});
    let (r, log) = h
        .reconcile(
            cached.clone(),
            vec![
                get_object(&cached),
                patch_intent("2", "provision", &cached),
                patch_status("2", clearing_intent(first), &cached).fails(409, "Conflict"),
                get_object(&other_writer),
                patch_status("3", merged, &after_retry),
                patch_status("4", full, &after_retry.clone().with_rv("5")),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log.len(), 6);
    assert_eq!(h.launches(), 1, "the conflict never causes a second launch");
}

/// Scenario 6a: deletion with a running provision job → the provider cancels it and waits →
/// deprovision job → succeeded → finalizer removed.
#[tokio::test]
async fn s6_deletion_cancels_waits_deprovisions_then_removes_finalizer() {
    let h = Harness::new();
    let v = "v1";
    let running = job_json("100", "provision", "Running", 0, "running", v);
    let base = Network::test().finalized().needs_delete();
    let cached = stored(
        &base,
        "20",
        &json!({"phase": "Ready", "provisioningJobs": [running], "desiredConfigVersion": v}),
    );
    h.provider.push_deprovision(
        UID,
        DeprovisionScript::Waiting {
            provision_status: Some(ProvisionStatus::new("100", JobState::Running, "running")),
        },
    );
    h.provider.push_deprovision(
        UID,
        DeprovisionScript::Triggered {
            block_deletion_on_failure: true,
            provision_status: Some(ProvisionStatus::new("100", JobState::Canceled, "canceled")),
        },
    );
    h.provider.push_job_statuses(
        UID,
        &JobType::Deprovision,
        [StatusStep::State(JobState::Succeeded)],
    );

    // 1. uncached read (the API server agrees with the cache), waiting for the cancel:
    //    phase Deleting written, finalizer kept, poll interval
    let s1 = json!({"phase": "Deleting", "provisioningJobs": [running], "desiredConfigVersion": v});
    let (r, log) = h
        .reconcile(
            cached.clone(),
            vec![
                get_object(&cached),
                patch_intent("20", "deprovision", &cached),
                // the provider waits: no job, so the intent is resolved and cleared
                patch_status("20", clearing_intent(s1.clone()), &stored(&base, "21", &s1)),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log.len(), 3);

    // 2. provision job canceled → deprovision job launched and flushed; finalizer kept
    let canceled = job_json("100", "provision", "Canceled", 0, "canceled", v);
    let deprov = job_json(
        "1",
        "deprovision",
        "Pending",
        0,
        "Deprovision job triggered",
        "",
    );
    let s2 = json!({"provisioningJobs": [canceled, deprov], "desiredConfigVersion": v});
    let s2_stored = json!({"phase": "Deleting", "provisioningJobs": [canceled, deprov], "desiredConfigVersion": v});
    let (r, log) = h
        .reconcile(
            stored(&base, "21", &s1),
            vec![
                get_object(&stored(&base, "21", &s1)),
                patch_intent("21", "deprovision", &stored(&base, "21", &s1)),
                patch_status("21", clearing_intent(s2), &stored(&base, "22", &s2_stored)),
                event("DeprovisionJobTriggered", "1"),
            ],
            true,
        )
        .await;
    assert_ne!(
        r.unwrap(),
        Action::await_change(),
        "finalizer kept: requeued"
    );
    assert_eq!(log.len(), 4);

    // 3. deprovision succeeded → status written, finalizer removed (kube-runtime's JSON patch)
    let deprov_ok = job_json("1", "deprovision", "Succeeded", 0, "succeeded", "");
    let s3 = json!({"phase": "Deleting", "provisioningJobs": [canceled, deprov_ok], "desiredConfigVersion": v});
    let (r, log) = h
        .reconcile(
            stored(&base, "22", &s2_stored),
            vec![
                patch_status("22", s3.clone(), &stored(&base, "23", &s3)),
                event("Deprovisioned", "finalizer"),
                remove_finalizer(&stored(&base, "24", &s3)),
            ],
            true,
        )
        .await;
    assert_eq!(r.unwrap(), Action::await_change());
    assert_eq!(
        log.last().map(String::as_str),
        Some(format!("PATCH {}", patch_uri()).as_str())
    );
    assert_eq!(h.launches(), 0);
}

/// Scenario 6b: a failed deprovision job with blockDeletionOnFailure keeps the finalizer and
/// requeues after the deprovision backoff (2 min base), through `error_policy`.
#[tokio::test]
async fn s6_blocking_deprovision_failure_keeps_finalizer_with_backoff() {
    let h = Harness::new();
    h.provider.push_job_statuses(
        UID,
        &JobType::Deprovision,
        [StatusStep::FailedWith("teardown exploded".into())],
    );
    let base = Network::test().finalized().needs_delete();
    let cached = stored(&base, "30", &json!({"phase": "Deleting"}));
    let deprov = job_json(
        "1",
        "deprovision",
        "Pending",
        0,
        "Deprovision job triggered",
        "",
    );
    let s1_stored = json!({"phase": "Deleting", "provisioningJobs": [deprov]});
    let (r, _) = h
        .reconcile(
            cached.clone(),
            vec![
                get_object(&cached),
                patch_intent("30", "deprovision", &cached),
                patch_status(
                    "30",
                    clearing_intent(
                        json!({"provisioningJobs": [deprov], "desiredConfigVersion": null}),
                    ),
                    &stored(&base, "31", &s1_stored),
                ),
            ],
            false,
        )
        .await;
    assert_ne!(
        r.unwrap(),
        Action::await_change(),
        "finalizer kept: requeued"
    );

    h.clock.advance(Duration::from_secs(30));
    let failed = job_json(
        "1",
        "deprovision",
        "Failed",
        0,
        "failed: teardown exploded",
        "",
    );
    let s2 = json!({"phase": "Deleting", "provisioningJobs": [failed]});
    let (r, log) = h
        .reconcile(
            stored(&base, "31", &s1_stored),
            vec![
                patch_status("31", s2.clone(), &stored(&base, "32", &s2)),
                event("DeprovisionJobFailed", "1"),
            ],
            true,
        )
        .await;
    // base backoff 2 min since the trigger, 30 s of it elapsed
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(90)));
    assert_eq!(log.len(), 2, "no finalizer removal");
}

/// The management-state annotation: an unmanaged object gets no request at all.
#[tokio::test]
async fn unmanaged_objects_are_left_alone() {
    let h = Harness::new();
    let obj = Network::test().with_annotation("osac.openshift.io/management-state", "unmanaged");
    let (r, log) = h.reconcile(obj, vec![], false).await;
    assert_eq!(r.unwrap(), Action::await_change());
    assert!(log.is_empty());
    assert_eq!(h.provider_calls(), 0);
}

/// A poll that observes a failure: phase Failed (callback), a Warning event, and a requeue
/// after the remaining backoff (not "done": Go relied on the status-write event).
#[tokio::test]
async fn failed_poll_sets_failed_and_requeues_after_backoff() {
    let h = Harness::new();
    h.provider.push_job_statuses(
        UID,
        &JobType::Provision,
        [StatusStep::FailedWith("boom".into())],
    );
    let base = Network::test().finalized().with_rv("2");
    let v = version(&base);
    let pending = job_json(
        "1",
        "provision",
        "Pending",
        0,
        "Provisioning job triggered",
        &v,
    );
    let s1 = json!({"provisioningJobs": [pending], "desiredConfigVersion": v});
    let s1_full =
        json!({"phase": "Progressing", "provisioningJobs": [pending], "desiredConfigVersion": v});
    let (r, _) = h
        .reconcile(
            base.clone(),
            vec![
                get_object(&base),
                patch_intent("2", "provision", &base),
                patch_status("2", clearing_intent(s1.clone()), &stored(&base, "3", &s1)),
                patch_status("3", s1_full.clone(), &stored(&base, "4", &s1_full)),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));

    h.clock.advance(Duration::from_secs(20));
    let failed = job_json("1", "provision", "Failed", 0, "failed: boom", &v);
    let s2 = json!({"phase": "Failed", "provisioningJobs": [failed], "desiredConfigVersion": v});
    let (r, log) = h
        .reconcile(
            stored(&base, "4", &s1_full),
            vec![
                patch_status("4", s2.clone(), &stored(&base, "5", &s2)),
                event("ProvisionJobFailed", "failed: boom"),
            ],
            true,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(100)));
    assert_eq!(log.len(), 2);
    assert_eq!(h.launches(), 1);
}

/// The stale-cache check fails open by default (like Go: a warning, then the launch), and
/// fails closed when the lifecycle policy says so (requeue, no launch, no write).
#[tokio::test]
async fn stale_check_error_fails_open_or_closed_per_policy() {
    let base = Network::test().finalized().with_rv("2");
    let v = version(&base);
    let get_fails = || Exchange::get(obj_uri(), Value::Null).fails(500, "InternalError");

    let open = Harness::new();
    let job = job_json(
        "1",
        "provision",
        "Pending",
        0,
        "Provisioning job triggered",
        &v,
    );
    let flushed = json!({"provisioningJobs": [job], "desiredConfigVersion": v});
    let full =
        json!({"phase": "Progressing", "provisioningJobs": [job], "desiredConfigVersion": v});
    let (r, _) = open
        .reconcile(
            base.clone(),
            vec![
                get_fails(),
                patch_intent("2", "provision", &base),
                patch_status(
                    "2",
                    clearing_intent(flushed.clone()),
                    &stored(&base, "3", &flushed),
                ),
                patch_status("3", full.clone(), &stored(&base, "4", &full)),
            ],
            false,
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(open.launches(), 1);

    let mut closed = Harness::new();
    let mut policy = closed.lifecycle.policy().clone();
    policy.stale_check_fail_open = false;
    closed.lifecycle = closed.lifecycle.clone().with_policy(policy);
    let (r, log) = closed
        .reconcile(base.clone(), vec![get_fails()], false)
        .await;
    assert_eq!(r.unwrap(), Action::requeue(POLL));
    assert_eq!(log.len(), 1);
    assert_eq!(closed.launches(), 0);
}
