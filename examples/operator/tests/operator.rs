//! The example operator against a mocked API server (tower-test) and the fake AAP server on
//! 127.0.0.1: create → finalizer → one AAP job → Ready; delete → deprovision → finalizer gone.
#![allow(clippy::unwrap_used, clippy::needless_pass_by_value, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use kube::runtime::controller::Action;
use kube::{Client, Resource};
use provkit_aap::provider::Envelope;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, ManualClock, compute_desired_config_version};
use provkit_example_operator::controller::{Context, FINALIZER, reconcile};
use provkit_example_operator::crd::{VirtualNetwork, VirtualNetworkSpec};
use provkit_lifecycle::LifecyclePolicy;
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

const BASE: &str = "/apis/osac.openshift.io/v1alpha1/namespaces/tenant-1/virtualnetworks/net-a";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/tenant-1/events?";
/// Status patches name the controller as field manager.
const FIELD_MANAGER: &str = "&fieldManager=provkit-example-operator";

type Check = Box<dyn Fn(&Value, &[String]) + Send>;

/// (method, uri, body check given the AAP job ids, reply)
struct Step(Method, String, Check, Value);

fn body_eq(want: impl Fn(&[String]) -> Value + Send + 'static) -> Check {
    Box::new(move |got, ids| assert_json_diff::assert_json_eq!(got.clone(), want(ids)))
}

/// The write-ahead launch intent (`status.launchIntent` alone, with the precondition, under the
/// operator's field manager like every status write), answered with `reply` (same
/// resourceVersion, so the next steps keep their numbers).
fn intent(rv: &'static str, job_type: &'static str, reply: Value) -> Step {
    Step(
        Method::PATCH,
        format!("{BASE}/status?{FIELD_MANAGER}"),
        Box::new(move |b, _| {
            assert_eq!(b["metadata"]["resourceVersion"], rv, "{b}");
            assert_eq!(b["status"].as_object().map(|s| s.len()), Some(1), "{b}");
            assert_eq!(b["status"]["launchIntent"]["jobType"], job_type, "{b}");
        }),
        reply,
    )
}

fn event(reason: &'static str) -> Step {
    Step(
        Method::POST,
        EVENTS.into(),
        Box::new(move |b, _| {
            assert_eq!(b["reason"], reason);
            assert_eq!(b["regarding"]["kind"], "VirtualNetwork");
            assert_eq!(b["reportingController"], "provkit-example-operator");
        }),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}),
    )
}

fn serve(aap: FakeAap, steps: Vec<Step>) -> (Client, JoinHandle<()>) {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        for (i, Step(method, uri, check, reply)) in steps.into_iter().enumerate() {
            let (req, send) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("request #{i} never came"));
            assert_eq!(
                (req.method(), req.uri().to_string()),
                (&method, uri),
                "request #{i}"
            );
            let bytes = req.into_body().collect_bytes().await.unwrap();
            let body: Value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).unwrap()
            };
            let ids: Vec<String> = aap.jobs().iter().map(|j| j.id.to_string()).collect();
            check(&body, &ids);
            let status = if method == Method::POST {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            send.send_response(
                Response::builder()
                    .status(status)
                    .body(Body::from(serde_json::to_vec(&reply).unwrap()))
                    .unwrap(),
            );
        }
    });
    (Client::new(svc, "tenant-1"), task)
}

async fn wait(task: JoinHandle<()>) {
    match tokio::time::timeout(Duration::from_secs(2), task).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => std::panic::resume_unwind(e.into_panic()),
        Err(_) => panic!("fewer requests than scripted"),
    }
}

fn vnet(rv: &str, status: Value, finalized: bool, deleting: bool) -> VirtualNetwork {
    let mut n = VirtualNetwork::new(
        "net-a",
        VirtualNetworkSpec {
            cidr: "10.0.0.0/24".into(),
            region: None,
        },
    );
    let m = n.meta_mut();
    m.namespace = Some("tenant-1".into());
    m.uid = Some("uid-1".into());
    m.generation = Some(1);
    m.resource_version = Some(rv.into());
    if finalized {
        m.finalizers = Some(vec![FINALIZER.into()]);
    }
    if deleting {
        m.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1_782_734_400).unwrap(),
        ));
    }
    let mut v = serde_json::to_value(&n).unwrap();
    if !status.is_null() {
        v["status"] = status;
    }
    serde_json::from_value(v).unwrap()
}

fn job(id: &str, ty: &str, state: &str, message: &str, version: &str) -> Value {
    let mut j = json!({"jobID": id, "type": ty, "timestamp": "2026-06-29T12:00:00Z", "state": state, "message": message});
    if !version.is_empty() {
        j["configVersion"] = version.into();
    }
    if ty == "deprovision" {
        j["blockDeletionOnFailure"] = true.into();
    }
    j
}

fn ready(status: &str, reason: &str, message: &str, at: &str) -> Value {
    json!([{"type": "Ready", "status": status, "reason": reason, "message": message,
            "observedGeneration": 1, "lastTransitionTime": at}])
}

struct World {
    server: FakeAapServer,
    clock: ManualClock,
    provider: Arc<AapProvider>,
}

impl World {
    async fn new() -> Self {
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap());
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        // OSAC's current playbooks: a job launched with another envelope fails.
        let template = |name: &str| JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(10))),
            ..JobTemplateSpec::new(name, "osac").reading(["osac_job_vars.resource.spec"])
        };
        let server = FakeAap::builder()
            .clock(dyn_clock.clone())
            .organization("osac")
            .job_template(template("osac-create-virtual-network"))
            .job_template(template("osac-delete-virtual-network"))
            .start()
            .await
            .unwrap();
        let aap = AapClient::builder(server.base_url())
            .token(server.token())
            .build()
            .unwrap();
        let provider = Arc::new(
            AapProvider::builder(aap)
                .template_prefix("osac")
                .envelope(Envelope::OsacJobVars)
                .clock(dyn_clock)
                .build(),
        );
        Self {
            server,
            clock,
            provider,
        }
    }

    async fn reconcile(
        &self,
        obj: VirtualNetwork,
        steps: Vec<Step>,
    ) -> Result<Action, provkit_kube::ReconcileError> {
        let (client, task) = serve(self.server.aap().clone(), steps);
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        let ctx = Context::new(
            client,
            self.provider.clone(),
            LifecyclePolicy::default(),
            clock,
            "test-0",
            "provkit-example-operator",
        );
        let r = reconcile(Arc::new(obj), Arc::new(ctx)).await;
        wait(task).await;
        r
    }
}

#[tokio::test]
async fn create_provision_ready_then_delete() {
    let w = World::new().await;
    let v = compute_desired_config_version(&VirtualNetworkSpec {
        cidr: "10.0.0.0/24".into(),
        region: None,
    })
    .unwrap();

    // finalizer
    let r = w
        .reconcile(
            vnet("1", Value::Null, false, false),
            vec![Step(
                Method::PATCH,
                format!("{BASE}?"),
                body_eq(|_| json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                                   {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}])),
                serde_json::to_value(vnet("2", Value::Null, true, false)).unwrap(),
            )],
        )
        .await;
    assert_eq!(r.unwrap(), Action::await_change());

    // one AAP job, flushed, Progressing + Ready=False, event
    let cached = vnet("2", Value::Null, true, false);
    let fresh = serde_json::to_value(&cached).unwrap();
    let (v1, v2) = (v.clone(), v.clone());
    let r = w
        .reconcile(
            cached,
            vec![
                Step(Method::GET, BASE.into(), Box::new(|b, _| assert!(b.is_null())), fresh.clone()),
                intent("2", "provision", fresh.clone()),
                Step(
                    Method::PATCH,
                    format!("{BASE}/status?{FIELD_MANAGER}"),
                    body_eq(move |ids| json!({"metadata": {"resourceVersion": "2"}, "status": {
                        "provisioningJobs": [job(&ids[0], "provision", "Pending", "Provisioning job triggered", &v1)],
                        "desiredConfigVersion": v1, "launchIntent": null}})),
                    serde_json::to_value(vnet("3", Value::Null, true, false)).unwrap(),
                ),
                Step(
                    Method::PATCH,
                    format!("{BASE}/status?{FIELD_MANAGER}"),
                    body_eq(move |ids| json!({"metadata": {"resourceVersion": "3"}, "status": {
                        "phase": "Progressing",
                        "provisioningJobs": [job(&ids[0], "provision", "Pending", "Provisioning job triggered", &v2)],
                        "desiredConfigVersion": v2,
                        "conditions": ready("False", "Provisioning", "provisioning the current spec", "2026-06-29T12:00:00Z")}})),
                    serde_json::to_value(vnet("4", Value::Null, true, false)).unwrap(),
                ),
                event("ProvisionJobTriggered"),
            ],
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(30)));
    assert_eq!(w.server.aap().jobs().len(), 1);
    let id = w.server.aap().jobs()[0].id.to_string();
    assert_eq!(w.server.aap().jobs()[0].name, "osac-create-virtual-network");

    // a minute later: successful → Ready=True
    w.clock.advance(Duration::from_secs(60));
    let progressing = json!({"phase": "Progressing",
        "provisioningJobs": [job(&id, "provision", "Pending", "Provisioning job triggered", &v)],
        "desiredConfigVersion": v,
        "conditions": ready("False", "Provisioning", "provisioning the current spec", "2026-06-29T12:00:00Z")});
    let done = json!({"phase": "Ready",
        "provisioningJobs": [job(&id, "provision", "Succeeded", "successful", &v)],
        "desiredConfigVersion": v,
        "conditions": ready("True", "Provisioned", "the current spec is provisioned", "2026-06-29T12:01:00Z")});
    let d2 = done.clone();
    let r = w
        .reconcile(
            vnet("4", progressing, true, false),
            vec![
                Step(
                    Method::PATCH,
                    format!("{BASE}/status?{FIELD_MANAGER}"),
                    body_eq(move |_| json!({"metadata": {"resourceVersion": "4"}, "status": d2})),
                    serde_json::to_value(vnet("5", done.clone(), true, false)).unwrap(),
                ),
                event("ProvisionJobSucceeded"),
            ],
        )
        .await;
    // Ready: nothing more to do until a change, but the default resync brings it back within
    // ten minutes (a relist's lost events cannot strand it).
    let resync = format!("{:?}", r.unwrap());
    let secs: f64 = resync
        .trim_start_matches("Action { requeue_after: Some(")
        .trim_end_matches("s) }")
        .parse()
        .unwrap_or_else(|_| panic!("a resync requeue: {resync}"));
    assert!(
        (540.0..=600.0).contains(&secs),
        "the resync requeue: {resync}"
    );

    // delete: the provision job is terminal → uncached read (stale-cache check before a
    // deprovision launch) → delete template launched at once
    let deleting = vnet("6", done.clone(), true, true);
    let fresh_deleting = serde_json::to_value(&deleting).unwrap();
    let (id2, v3) = (id.clone(), v.clone());
    let r = w
        .reconcile(
            deleting,
            vec![
                Step(Method::GET, BASE.into(), Box::new(|b, _| assert!(b.is_null())), fresh_deleting.clone()),
                intent("6", "deprovision", fresh_deleting),
                Step(
                    Method::PATCH,
                    format!("{BASE}/status?{FIELD_MANAGER}"),
                    body_eq(move |ids| json!({"metadata": {"resourceVersion": "6"}, "status": {
                        "provisioningJobs": [
                            job(&id2, "provision", "Succeeded", "successful", &v3),
                            {"jobID": ids[1], "type": "deprovision", "timestamp": "2026-06-29T12:01:00Z",
                             "state": "Pending", "message": "Deprovision job triggered", "blockDeletionOnFailure": true}
                        ],
                        "desiredConfigVersion": v3, "launchIntent": null}})),
                    serde_json::to_value(vnet("7", done.clone(), true, true)).unwrap(),
                ),
                Step(
                    Method::PATCH,
                    format!("{BASE}/status?{FIELD_MANAGER}"),
                    Box::new(|b, _| {
                        assert_eq!(b["status"]["phase"], "Deleting");
                        let ready = &b["status"]["conditions"][0];
                        assert_eq!((&ready["status"], &ready["reason"]), (&json!("False"), &json!("Deleting")));
                    }),
                    serde_json::to_value(vnet("8", done, true, true)).unwrap(),
                ),
                event("DeprovisionJobTriggered"),
            ],
        )
        .await;
    // An unfinished deletion is a requeue, not an error.
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(30)));
    let names: Vec<String> = w
        .server
        .aap()
        .jobs()
        .iter()
        .map(|j| j.name.clone())
        .collect();
    assert_eq!(
        names,
        ["osac-create-virtual-network", "osac-delete-virtual-network"]
    );
}
