//! Dispatch targets: per-target launch views (OSAC's dual-dispatch decorator) and routing targets
//! to different providers.

use std::sync::{Arc, Mutex};

use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::dispatch::osac::{
    DispatchPlan, IMPLEMENTATION_STRATEGY_ANNOTATION, Managers, deprovision_job_targets,
};
use provkit_lifecycle::dispatch::{ProviderRoutes, RoutedProvider, SetAnnotation};
use provkit_lifecycle::{
    DeprovisionHooks, DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, JobTarget,
    LaunchContext, Lifecycle, MultiTargetHooks, MultiTargetLifecycle, ProviderError,
    ProvisionHooks, ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceMeta,
    ResourceView,
};
use provkit_testing::scripted::{ProviderCall, ScriptedProvider, StatusStep, TriggerStep};
use serde_json::{Value, json};

use super::support::*;

/// What a provider call saw: the operation, the job id (if any) and the object's JSON.
type Seen = (&'static str, String, Value);

/// A [`ScriptedProvider`] that also records the JSON each call was given.
#[derive(Debug)]
struct Recording {
    inner: ScriptedProvider,
    seen: Mutex<Vec<Seen>>,
}

impl Recording {
    fn new(name: &str) -> Arc<Self> {
        Arc::new(Self {
            inner: ScriptedProvider::new().with_name(name),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn record(&self, op: &'static str, job_id: &str, resource: &ResourceView) {
        let json = resource.json().cloned().unwrap_or(Value::Null);
        self.seen
            .lock()
            .unwrap()
            .push((op, job_id.to_owned(), json));
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn ops(&self) -> Vec<(&'static str, String)> {
        self.seen()
            .into_iter()
            .map(|(op, id, _)| (op, id))
            .collect()
    }
}

#[provkit_lifecycle::async_trait]
impl ProvisioningProvider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        self.record("trigger_provision", "", resource);
        self.inner.trigger_provision(resource, ctx).await
    }
    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.record("provision_status", job_id, resource);
        self.inner.provision_status(resource, job_id).await
    }
    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        let ids: Vec<&str> = jobs.iter().map(|j| j.job_id.as_str()).collect();
        self.record("trigger_deprovision", &ids.join(","), resource);
        self.inner.trigger_deprovision(resource, jobs, ctx).await
    }
    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.record("deprovision_status", job_id, resource);
        self.inner.deprovision_status(resource, job_id).await
    }
    fn idempotency_support(&self) -> IdempotencySupport {
        self.inner.idempotency_support()
    }
    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.record("find_job", "", resource);
        self.inner
            .find_job_by_idempotency_key(resource, job_type, key)
            .await
    }
}

fn subnet() -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "subnet-a".into(),
            namespace: Some("tenant".into()),
            uid: "uid-subnet".into(),
            ..Default::default()
        },
        json!({"kind": "Subnet", "metadata": {"name": "subnet-a", "uid": "uid-subnet"},
               "spec": {"ipv4CIDR": "10.0.1.0/24"}}),
    )
}

fn strategy(json: &Value) -> Option<&str> {
    json.pointer("/metadata/annotations")
        .and_then(|a| a.get(IMPLEMENTATION_STRATEGY_ANNOTATION))
        .and_then(Value::as_str)
}

#[tokio::test]
async fn two_targets_each_launch_with_their_own_manager_and_the_object_carries_none() {
    let shared = Recording::new("aap");
    let (_clock, dyn_clock) = clock_at(t0());
    let lifecycle = Lifecycle::new(shared.clone(), dyn_clock).with_policy(policy(10));
    let engine = MultiTargetLifecycle::new([
        JobTarget::new(
            "fabric",
            lifecycle.clone().with_launch_view(SetAnnotation::new(
                IMPLEMENTATION_STRATEGY_ANNOTATION,
                "netris",
            )),
        ),
        JobTarget::new(
            "k8s",
            lifecycle.with_launch_view(SetAnnotation::new(
                IMPLEMENTATION_STRATEGY_ANNOTATION,
                "cudn_net",
            )),
        ),
    ])
    .unwrap();
    let object = subnet();
    let before = object.json().unwrap().clone();
    let mut jobs = Vec::new();
    let ctx = LaunchContext::new();

    // Provision: one launch per target, each payload with its own manager.
    let out = engine
        .run_provisioning_lifecycle(&object, &mut jobs, "v1", &ctx, &mut MultiTargetHooks::new())
        .await;
    out.into_result().unwrap();
    let launches: Vec<Option<String>> = shared
        .seen()
        .iter()
        .filter(|(op, ..)| *op == "trigger_provision")
        .map(|(_, _, json)| strategy(json).map(str::to_owned))
        .collect();
    assert_eq!(
        launches,
        [Some("netris".to_owned()), Some("cudn_net".to_owned())]
    );
    // The stored object is unchanged.
    assert_eq!(object.json().unwrap(), &before);
    assert_eq!(strategy(object.json().unwrap()), None);

    // Polls see the object as it is: no annotation.
    let out = engine
        .run_provisioning_lifecycle(&object, &mut jobs, "v1", &ctx, &mut MultiTargetHooks::new())
        .await;
    out.into_result().unwrap();
    let polls: Vec<Seen> = shared
        .seen()
        .into_iter()
        .filter(|(op, ..)| *op == "provision_status")
        .collect();
    assert_eq!(polls.len(), 2);
    assert!(polls.iter().all(|(_, _, json)| strategy(json).is_none()));
    assert!(jobs.iter().all(|j| j.state == JobState::Succeeded));

    // Deprovision: each target's teardown launch carries its manager too.
    let out = engine
        .run_deprovisioning_lifecycle(&object, &mut jobs, &ctx, &mut DeprovisionHooks::new())
        .await;
    out.into_result().unwrap();
    let teardowns: Vec<Option<String>> = shared
        .seen()
        .iter()
        .filter(|(op, ..)| *op == "trigger_deprovision")
        .map(|(_, _, json)| strategy(json).map(str::to_owned))
        .collect();
    assert_eq!(
        teardowns,
        [Some("netris".to_owned()), Some("cudn_net".to_owned())]
    );
    assert_eq!(object.json().unwrap(), &before);
}

#[tokio::test]
async fn a_view_replaces_an_existing_annotation_in_the_copy_only() {
    let shared = Recording::new("aap");
    let (_clock, dyn_clock) = clock_at(t0());
    let engine = Lifecycle::new(shared.clone(), dyn_clock).with_launch_view(SetAnnotation::new(
        IMPLEMENTATION_STRATEGY_ANNOTATION,
        "cudn_net",
    ));
    let object = ResourceView::new(
        subnet().meta(),
        json!({"metadata": {"name": "s", "annotations": {IMPLEMENTATION_STRATEGY_ANNOTATION: "netris", "other": "kept"}}}),
    );
    let mut jobs = Vec::new();
    engine
        .run_provisioning_lifecycle(
            &object,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    let (_, _, sent) = shared.seen().remove(0);
    assert_eq!(
        sent["metadata"]["annotations"],
        json!({IMPLEMENTATION_STRATEGY_ANNOTATION: "cudn_net", "other": "kept"})
    );
    assert_eq!(strategy(object.json().unwrap()), Some("netris"));
    // The decorated provider keeps the inner provider's name (Go's decorator does too).
    assert_eq!(engine.provider().name(), "aap");
}

#[tokio::test]
async fn the_osac_plan_builds_dual_dispatch_targets() {
    let shared = Recording::new("aap");
    let (_clock, dyn_clock) = clock_at(t0());
    let lifecycle = Lifecycle::new(shared.clone(), dyn_clock).with_policy(policy(10));
    let plan = DispatchPlan::resolve("Subnet", &Managers::new(Some("netris"), Some("cudn_net")))
        .unwrap()
        .unwrap();
    let targets = plan.job_targets(&lifecycle).unwrap();
    assert_eq!(
        targets
            .iter()
            .map(|t| (t.name(), t.absorbs_legacy()))
            .collect::<Vec<_>>(),
        [("fabric", true), ("k8s", false)]
    );
    let engine = MultiTargetLifecycle::new(targets).unwrap();
    // A Subnet provisioned before the dispatcher: its untagged job becomes the fabric target's.
    let mut jobs = vec![pjob("7", JobState::Succeeded, "v1", ago(600))];
    let out = engine
        .run_provisioning_lifecycle(
            &subnet(),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut MultiTargetHooks::new(),
        )
        .await;
    assert_eq!(out.backfilled, 1);
    out.into_result().unwrap();
    // Only the new k8s target launched, with its manager.
    let launches: Vec<Option<String>> = shared
        .seen()
        .iter()
        .filter(|(op, ..)| *op == "trigger_provision")
        .map(|(_, _, json)| strategy(json).map(str::to_owned))
        .collect();
    assert_eq!(launches, [Some("cudn_net".to_owned())]);
    assert_eq!(
        jobs.iter()
            .map(|j| (j.job_id.as_str(), j.target.as_str()))
            .collect::<Vec<_>>(),
        [("7", "fabric"), ("1", "k8s")]
    );

    // Without a fabric target (Kubernetes-only plan) or without a plan: the single-target path.
    let k8s_only = DispatchPlan::resolve("Subnet", &Managers::new(None, Some("cudn_net")))
        .unwrap()
        .unwrap();
    assert!(k8s_only.job_targets(&lifecycle).is_none());

    // Deletion reads the stamped annotations.
    let stamped = json!({"metadata": {"annotations": {
        IMPLEMENTATION_STRATEGY_ANNOTATION: "netris",
        "osac.openshift.io/k8s-implementation-strategy": "cudn_net"}}});
    let names: Vec<String> = deprovision_job_targets(&stamped, &lifecycle)
        .unwrap()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["fabric", "k8s"]);
    let fabric_only =
        json!({"metadata": {"annotations": {IMPLEMENTATION_STRATEGY_ANNOTATION: "netris"}}});
    assert_eq!(
        deprovision_job_targets(&fabric_only, &lifecycle)
            .unwrap()
            .len(),
        1
    );
}

/// Routes `a` (default) and `b`, and a switch saying where new launches go.
struct Routed {
    a: Arc<Recording>,
    b: Arc<Recording>,
    choice: Arc<Mutex<String>>,
    engine: Lifecycle,
}

fn routed() -> Routed {
    let a = Recording::new("a");
    let b = Recording::new("b");
    let routes = Arc::new(
        ProviderRoutes::new("a", a.clone())
            .unwrap()
            .with_route("b", b.clone())
            .unwrap(),
    );
    let choice = Arc::new(Mutex::new("a".to_owned()));
    let chosen = choice.clone();
    let provider = RoutedProvider::choosing(routes, move |_| chosen.lock().unwrap().clone());
    let (_clock, dyn_clock) = clock_at(t0());
    let engine = Lifecycle::new(Arc::new(provider), dyn_clock).with_policy(policy(10));
    Routed {
        a,
        b,
        choice,
        engine,
    }
}

impl Routed {
    fn route_to(&self, name: &str) {
        *self.choice.lock().unwrap() = name.to_owned();
    }

    async fn provision(&self, jobs: &mut Vec<JobStatus>, desired: &str) {
        self.engine
            .run_provisioning_lifecycle(
                &subnet(),
                jobs,
                desired,
                &LaunchContext::new(),
                &mut ProvisionHooks::new(),
            )
            .await
            .unwrap();
    }

    async fn deprovision(&self, jobs: &mut Vec<JobStatus>) {
        self.engine
            .run_deprovisioning_lifecycle(
                &subnet(),
                jobs,
                &LaunchContext::new(),
                &mut DeprovisionHooks::new(),
            )
            .await
            .unwrap();
    }
}

fn op(name: &'static str, id: &str) -> (&'static str, String) {
    (name, id.to_owned())
}

#[tokio::test]
async fn a_routing_change_while_a_job_runs_leaves_the_job_with_its_provider() {
    let r = routed();
    r.a.inner.set_default_statuses([
        StatusStep::State(JobState::Running),
        StatusStep::State(JobState::Succeeded),
    ]);
    let mut jobs = Vec::new();
    r.provision(&mut jobs, "v1").await;
    assert_eq!(
        jobs[0].job_id, "1",
        "the default route records bare ids (Go's)"
    );

    // The routing changes while a's job runs.
    r.route_to("b");
    r.provision(&mut jobs, "v1").await; // Running
    r.provision(&mut jobs, "v1").await; // Succeeded
    assert_eq!(jobs[0].state, JobState::Succeeded);
    assert_eq!(
        r.a.ops(),
        [
            op("trigger_provision", ""),
            op("provision_status", "1"),
            op("provision_status", "1"),
        ]
    );
    assert!(r.b.ops().is_empty(), "b never saw a's job: {:?}", r.b.ops());

    // A spec change launches on the new route; its id records the route.
    r.provision(&mut jobs, "v2").await;
    assert_eq!(jobs.last().unwrap().job_id, "b:1");
    r.route_to("a");
    r.provision(&mut jobs, "v2").await;
    assert_eq!(r.b.ops().last().unwrap(), &op("provision_status", "1"));
    assert_eq!(jobs.last().unwrap().state, JobState::Succeeded);

    // Deletion: the provider that recorded the latest provision job tears down (b, though the
    // route says a), seeing only its own jobs under its own ids.
    r.deprovision(&mut jobs).await;
    assert_eq!(r.b.ops().last().unwrap(), &op("trigger_deprovision", "1"));
    let deprov = jobs.last().unwrap();
    assert_eq!(deprov.job_type, JobType::Deprovision);
    assert_eq!(deprov.job_id, "b:2");
    r.deprovision(&mut jobs).await;
    assert_eq!(r.b.ops().last().unwrap(), &op("deprovision_status", "2"));
    assert!(
        !r.a.ops().iter().any(|(o, _)| o.contains("deprovision")),
        "{:?}",
        r.a.ops()
    );
}

#[tokio::test]
async fn go_written_bare_ids_belong_to_the_default_route() {
    let r = routed();
    r.route_to("b");
    // A history the Go operator wrote: AAP's bare id, still running.
    let mut jobs = vec![pjob("123", JobState::Running, "v1", ago(60))];
    r.provision(&mut jobs, "v1").await;
    assert_eq!(r.a.ops(), [op("provision_status", "123")]);
    assert!(r.b.ops().is_empty());
    assert_eq!(jobs[0].job_id, "123", "ids are recorded as they were");
}

#[tokio::test]
async fn a_job_of_a_route_no_longer_configured_is_an_error_never_a_relaunch() {
    let r = routed();
    let mut jobs = vec![pjob("gone:9", JobState::Running, "v1", ago(60))];
    r.provision(&mut jobs, "v1").await;
    assert!(
        jobs[0]
            .message
            .contains("recorded by provider route \"gone\", which is not configured"),
        "{}",
        jobs[0].message
    );
    assert_eq!(jobs.len(), 1);
    assert!(r.a.ops().is_empty() && r.b.ops().is_empty());
}

#[tokio::test]
async fn a_lost_launch_answer_is_found_on_the_route_it_went_to_after_the_routing_changed() {
    let r = routed();
    r.a.inner
        .push_trigger("uid-subnet", TriggerStep::LoseAnswer);
    let mut jobs = Vec::new();
    // a created the job but its answer was lost; the engine's lookup (route a first) finds it.
    r.provision(&mut jobs, "v1").await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].job_id, "1");

    // Again, but the routing changes before the lookup: b is asked first, then a.
    let r = routed();
    r.a.inner
        .push_trigger("uid-subnet", TriggerStep::LoseAnswer);
    r.a.inner.push_trigger(
        "uid-subnet",
        TriggerStep::FailNotMade("no lookup this time".into()),
    );
    let provider = r.engine.provider().clone();
    let key = IdempotencyKey::for_attempt("uid-subnet", &JobType::Provision, "v1", None);
    let ctx = LaunchContext::new().with_idempotency_key(key.clone());
    assert!(provider.trigger_provision(&subnet(), &ctx).await.is_err());
    r.route_to("b");
    let found = provider
        .find_job_by_idempotency_key(&subnet(), &JobType::Provision, &key)
        .await
        .unwrap()
        .expect("found on a");
    assert_eq!(found.job_id, "1");
    assert_eq!(r.b.ops(), [op("find_job", "")], "b was asked first");
    assert!(r.b.inner.calls().iter().all(|c| !c.is_trigger()));
    assert!(matches!(
        r.a.inner.calls().last(),
        Some(ProviderCall::FindJob { .. })
    ));
}
