//! Dispatch targets (issue 31): each target's launches see their own view of the object; polls
//! and the stored object are unchanged; OSAC's dual-dispatch plan.

use std::sync::{Arc, Mutex};

use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::dispatch::{
    DispatchError, IMPLEMENTATION_STRATEGY_ANNOTATION, OSAC_FABRIC_TARGET, OSAC_KUBERNETES_TARGET,
    OsacDispatchPlan,
};
use provkit_lifecycle::{
    DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, JobTarget, LaunchContext,
    Lifecycle, MultiTargetHooks, MultiTargetLifecycle, ProviderError, ProvisionResult,
    ProvisionStatus, ProvisioningProvider, ResourceView,
};
use serde_json::Value;

use super::support::*;

/// A provider that records the object JSON each call was given; jobs are numbered, every job is
/// running.
#[derive(Debug, Default)]
struct Recorder {
    launches: Mutex<Vec<Value>>,
    polls: Mutex<Vec<Value>>,
}

impl Recorder {
    fn strategy_of(json: &Value) -> Option<String> {
        json["metadata"]["annotations"][IMPLEMENTATION_STRATEGY_ANNOTATION]
            .as_str()
            .map(str::to_owned)
    }
    fn launched_strategies(&self) -> Vec<Option<String>> {
        let mut s: Vec<_> = self
            .launches
            .lock()
            .unwrap()
            .iter()
            .map(Self::strategy_of)
            .collect();
        s.sort();
        s
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn trigger_provision(
        &self,
        r: &ResourceView,
        _: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        let mut l = self.launches.lock().unwrap();
        l.push(r.json().unwrap().clone());
        Ok(ProvisionResult::new(
            format!("{}", l.len()),
            JobState::Pending,
            "triggered",
        ))
    }
    async fn provision_status(
        &self,
        r: &ResourceView,
        id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.polls.lock().unwrap().push(r.json().unwrap().clone());
        Ok(ProvisionStatus::new(id, JobState::Running, "running"))
    }
    async fn trigger_deprovision(
        &self,
        _: &ResourceView,
        _: &[JobStatus],
        _: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        Ok(DeprovisionResult::skipped())
    }
    async fn deprovision_status(
        &self,
        _: &ResourceView,
        id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        Ok(ProvisionStatus::new(id, JobState::Succeeded, "done"))
    }
    fn idempotency_support(&self) -> IdempotencySupport {
        IdempotencySupport::Unsupported
    }
    async fn find_job_by_idempotency_key(
        &self,
        _: &ResourceView,
        _: &JobType,
        _: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        Err(ProviderError::unsupported(
            "find_job_by_idempotency_key",
            "recorder",
        ))
    }
}

fn engine(
    plan: Option<&OsacDispatchPlan>,
    kind: &str,
    shared: &Arc<Recorder>,
) -> MultiTargetLifecycle {
    let (_c, clock) = clock_at(t0());
    let shared: Arc<dyn ProvisioningProvider> = shared.clone();
    let targets = OsacDispatchPlan::targets(plan, kind, &shared, "cluster").unwrap();
    MultiTargetLifecycle::new(targets.into_iter().map(|t| {
        JobTarget::new(
            t.name,
            Lifecycle::new(t.provider, clock.clone()).with_policy(policy(10)),
        )
    }))
    .unwrap()
}

/// Two targets over one shared provider: each launch's payload carries its own manager, the
/// polls and the stored object carry none.
#[tokio::test]
async fn each_target_launches_with_its_own_manager_and_the_object_is_never_changed() {
    let shared = Arc::new(Recorder::default());
    let plan = OsacDispatchPlan::new(Some("fabric-mgr"), Some("k8s-mgr"));
    let e = engine(Some(&plan), "Subnet", &shared);
    let r = resource("uid-d");
    let before = r.json().unwrap().clone();
    let mut jobs = Vec::new();
    for _ in 0..2 {
        // First pass launches on both targets, second pass polls both.
        let _ = e
            .run_provisioning_lifecycle(
                &r,
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut MultiTargetHooks::new(),
            )
            .await;
    }
    assert_eq!(
        shared.launched_strategies(),
        [Some("fabric-mgr".to_owned()), Some("k8s-mgr".to_owned())]
    );
    let polls = shared.polls.lock().unwrap().clone();
    assert_eq!(polls.len(), 2, "both targets polled once");
    assert!(
        polls.iter().all(|p| Recorder::strategy_of(p).is_none()),
        "{polls:?}"
    );
    assert_eq!(r.json().unwrap(), &before, "the object is never mutated");
    let mut targets: Vec<&str> = jobs.iter().map(|j| j.target.as_str()).collect();
    targets.sort_unstable();
    assert_eq!(targets, [OSAC_FABRIC_TARGET, OSAC_KUBERNETES_TARGET]);
}

/// OSAC's plan rules: no plan → one legacy target with the object as it is; fabric only → the
/// fabric target; no fabric manager → the Kubernetes-side target for the fallback kinds, an
/// error for the others.
#[tokio::test]
async fn osac_plan_rules() {
    let shared: Arc<dyn ProvisioningProvider> = Arc::new(Recorder::default());
    let names = |plan: Option<&OsacDispatchPlan>, kind: &str| {
        OsacDispatchPlan::targets(plan, kind, &shared, "cluster")
            .map(|t| t.into_iter().map(|t| t.name).collect::<Vec<_>>())
    };
    assert_eq!(names(None, "Subnet"), Ok(vec!["cluster".to_owned()]));
    let fabric_only = OsacDispatchPlan::new(Some("f"), None::<String>);
    assert_eq!(
        names(Some(&fabric_only), "Subnet"),
        Ok(vec![OSAC_FABRIC_TARGET.to_owned()])
    );
    let k8s_only = OsacDispatchPlan::new(None::<String>, Some("k"));
    for kind in ["VirtualNetwork", "SecurityGroup"] {
        assert_eq!(
            names(Some(&k8s_only), kind),
            Ok(vec![OSAC_KUBERNETES_TARGET.to_owned()]),
            "{kind}"
        );
    }
    assert_eq!(
        names(Some(&k8s_only), "Subnet"),
        Err(DispatchError::NoManager {
            kind: "Subnet".into()
        })
    );
    let empty = OsacDispatchPlan::new(Some(""), Some(""));
    assert!(
        names(Some(&empty), "VirtualNetwork").is_err(),
        "empty names are no managers"
    );

    // Without a plan the legacy annotation value reaches the provider unchanged.
    let rec = Arc::new(Recorder::default());
    let e = engine(None, "VirtualNetwork", &rec);
    let mut json = resource("uid-l").json().unwrap().clone();
    json["metadata"]["annotations"] =
        serde_json::json!({IMPLEMENTATION_STRATEGY_ANNOTATION: "legacy"});
    let r = ResourceView::new(resource("uid-l").meta(), json);
    let mut jobs = Vec::new();
    let _ = e
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut MultiTargetHooks::new(),
        )
        .await;
    assert_eq!(rec.launched_strategies(), [Some("legacy".to_owned())]);
}
