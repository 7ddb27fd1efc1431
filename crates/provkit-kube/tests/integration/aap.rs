//! Scenarios 1, 2 and 6 end to end over the wire: the kube side on the mocked API server, the
//! AAP side through `AapProvider` + `AapClient` (reqwest) against the fake AAP server on
//! 127.0.0.1. The fake AAP shares the manual clock, so job progress is deterministic.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, ManualClock};
use provkit_kube::{NoCallbacks, Provisioner};
use provkit_lifecycle::Lifecycle;
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};
use serde_json::{Value, json};

use crate::fixtures::*;
use crate::scenarios::{Phases, job_json, stored, version};

struct AapHarness {
    server: FakeAapServer,
    clock: ManualClock,
    lifecycle: Lifecycle,
}

impl AapHarness {
    async fn start(create: JobScript) -> Self {
        let clock = ManualClock::new(t(0));
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let server = FakeAap::builder()
            .clock(dyn_clock.clone())
            .organization("osac")
            .job_template(JobTemplateSpec {
                script: Some(create),
                ..JobTemplateSpec::new("osac-create-network", "osac")
            })
            .job_template(JobTemplateSpec {
                script: Some(JobScript::successful(Duration::from_secs(10))),
                ..JobTemplateSpec::new("osac-delete-network", "osac")
            })
            .start()
            .await
            .unwrap();
        let client = AapClient::builder(server.base_url())
            .token(server.token())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let provider = AapProvider::builder(client)
            .template_prefix("osac")
            .clock(dyn_clock.clone())
            .build();
        let lifecycle = Lifecycle::new(Arc::new(provider), dyn_clock);
        Self {
            server,
            clock,
            lifecycle,
        }
    }

    fn aap(&self) -> FakeAap {
        self.server.aap().clone()
    }

    async fn reconcile(
        &self,
        obj: Network,
        script: Vec<Exchange>,
    ) -> Result<Action, provkit_kube::ReconcileError> {
        let (client, verifier) = testcontext();
        let server = verifier.run(script);
        let p = Provisioner::new(client, self.lifecycle.clone(), FINALIZER);
        let result = p.reconcile(Arc::new(obj), &Phases).await;
        timeout_after_1s(server).await;
        result
    }

    /// Launches (POST …/launch/) the fake AAP received so far.
    fn launches(&self) -> Vec<String> {
        self.aap()
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/launch/"))
            .map(|r| r.path)
            .collect()
    }
}

/// A status PATCH whose expected body needs the AAP job ids, known only once the fake AAP
/// launched them: `expect(ids)` builds it when the request arrives.
fn patch_status_with_ids(
    aap: FakeAap,
    rv: &str,
    expect: impl Fn(&[String]) -> Value + Send + 'static,
    reply: &Network,
) -> Exchange {
    let rv = rv.to_owned();
    Exchange {
        method: http::Method::PATCH,
        uri: status_uri(),
        body: BodyCheck::Check(Box::new(move |got: &Value| {
            let ids: Vec<String> = aap.jobs().iter().map(|j| j.id.to_string()).collect();
            let want = json!({"metadata": {"resourceVersion": rv}, "status": expect(&ids)});
            assert_json_diff::assert_json_eq!(got.clone(), want);
        })),
        status: http::StatusCode::OK,
        reply: reply.json(),
    }
}

fn status_with(base: &Network, rv: &str, status: Value) -> Network {
    stored(base, rv, &status)
}

#[tokio::test]
async fn aap_trigger_poll_succeed_then_quiet() {
    let h = AapHarness::start(JobScript::successful(Duration::from_secs(10)).with_phases(
        Duration::from_secs(1),
        Duration::from_secs(1),
        Duration::from_secs(10),
    ))
    .await;
    let base = Network::test().finalized().with_rv("2");
    let v = version(&base);

    // 1. exactly one AAP launch, flushed with its AAP job id
    let v1 = v.clone();
    let flushed = move |ids: &[String]| json!({"provisioningJobs": [job_json(&ids[0], "provision", "Pending", 0, "Provisioning job triggered", &v1)], "desiredConfigVersion": v1, "launchIntent": null});
    let v2 = v.clone();
    let full = move |ids: &[String]| json!({"phase": "Progressing", "provisioningJobs": [job_json(&ids[0], "provision", "Pending", 0, "Provisioning job triggered", &v2)], "desiredConfigVersion": v2});
    let r = h
        .reconcile(
            base.clone(),
            vec![
                get_object(&base),
                patch_intent("2", "provision", &base),
                patch_status_with_ids(h.aap(), "2", flushed, &base.clone().with_rv("3")),
                patch_status_with_ids(h.aap(), "3", full, &base.clone().with_rv("4")),
            ],
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(30)));
    let template = h
        .aap()
        .template_id("osac-create-network", Some("osac"))
        .unwrap();
    assert_eq!(
        h.launches(),
        [format!("/api/v2/job_templates/{template}/launch/")]
    );
    assert_eq!(h.aap().jobs().len(), 1);
    let id = h.aap().jobs()[0].id.to_string();
    let extra: Value = serde_json::from_str(&h.aap().jobs()[0].extra_vars).unwrap();
    // The builder's default envelope: the neutral `provkit_job_vars`.
    assert_eq!(
        extra["provkit_job_vars"]["resource"]["metadata"]["name"],
        NAME
    );
    assert_eq!(extra["provkit_job_vars"]["resource"]["kind"], "Network");

    // 2. 5 s later AAP says running
    h.clock.advance(Duration::from_secs(5));
    let cached = status_with(
        &base,
        "4",
        json!({"phase": "Progressing", "provisioningJobs": [job_json(&id, "provision", "Pending", 0, "Provisioning job triggered", &v)], "desiredConfigVersion": v}),
    );
    let s2 = json!({"phase": "Progressing", "provisioningJobs": [job_json(&id, "provision", "Running", 0, "running", &v)], "desiredConfigVersion": v});
    let r = h
        .reconcile(
            cached,
            vec![patch_status(
                "4",
                s2.clone(),
                &status_with(&base, "5", s2.clone()),
            )],
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(30)));

    // 3. a minute later: successful → Ready
    h.clock.advance(Duration::from_secs(60));
    let s3 = json!({"phase": "Ready", "provisioningJobs": [job_json(&id, "provision", "Succeeded", 0, "successful", &v)], "desiredConfigVersion": v});
    let r = h
        .reconcile(
            status_with(&base, "5", s2),
            vec![patch_status(
                "5",
                s3.clone(),
                &status_with(&base, "6", s3.clone()),
            )],
        )
        .await;
    assert_resync(&r.unwrap());

    // 4. no further AAP call until the spec changes
    let before = h.aap().requests().len();
    for _ in 0..3 {
        h.clock.advance(Duration::from_secs(600));
        let r = h
            .reconcile(status_with(&base, "6", s3.clone()), vec![])
            .await;
        assert_resync(&r.unwrap());
    }
    assert_eq!(h.aap().requests().len(), before);
    assert_eq!(h.launches().len(), 1);
}

#[tokio::test]
async fn aap_deletion_cancels_running_job_then_deprovisions_and_removes_finalizer() {
    let h = AapHarness::start(JobScript::run_until_canceled()).await;
    let base = Network::test().finalized().with_rv("2");
    let v = version(&base);
    let (v0, v00) = (v.clone(), v.clone());
    let r = h
        .reconcile(
            base.clone(),
            vec![
                get_object(&base),
                patch_intent("2", "provision", &base),
                patch_status_with_ids(h.aap(), "2", move |ids| json!({"provisioningJobs": [job_json(&ids[0], "provision", "Pending", 0, "Provisioning job triggered", &v0)], "desiredConfigVersion": v0, "launchIntent": null}), &base.clone().with_rv("3")),
                patch_status_with_ids(h.aap(), "3", move |ids| json!({"phase": "Progressing", "provisioningJobs": [job_json(&ids[0], "provision", "Pending", 0, "Provisioning job triggered", &v00)], "desiredConfigVersion": v00}), &base.clone().with_rv("4")),
            ],
        )
        .await;
    assert_eq!(r.unwrap(), Action::requeue(Duration::from_secs(30)));
    let pid = h.aap().jobs()[0].id.to_string();
    h.clock.advance(Duration::from_secs(30)); // running now

    // 1. deletion: uncached read (no deprovision job on the server either), AAP says
    //    running → cancel POST → Waiting; finalizer kept
    let deleting = base.clone().needs_delete();
    let cached = status_with(
        &deleting,
        "4",
        json!({"phase": "Progressing", "provisioningJobs": [job_json(&pid, "provision", "Pending", 0, "Provisioning job triggered", &v)], "desiredConfigVersion": v}),
    );
    let s1 = json!({"phase": "Deleting", "provisioningJobs": [job_json(&pid, "provision", "Running", 0, "running", &v)], "desiredConfigVersion": v});
    let action = h
        .reconcile(
            cached.clone(),
            vec![
                get_object(&cached),
                patch_intent("4", "deprovision", &cached),
                // the provider waits for the cancel: no job, the intent is resolved and cleared
                patch_status(
                    "4",
                    clearing_intent(s1.clone()),
                    &status_with(&deleting, "5", s1.clone()),
                ),
            ],
        )
        .await
        .unwrap();
    assert_eq!(action, Action::requeue(Duration::from_secs(30)));
    let cancels = h
        .aap()
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/cancel/"))
        .count();
    assert_eq!(cancels, 1);
    assert!(
        h.launches().len() == 1,
        "no deprovision launch while the provision job is still running"
    );

    // 2. the provision job is canceled → deprovision job launched and flushed
    h.clock.advance(Duration::from_secs(30));
    let v2 = v.clone();
    let pid2 = pid.clone();
    let flushed = move |ids: &[String]| {
        let did = ids
            .iter()
            .find(|i| **i != pid2)
            .cloned()
            .unwrap_or_default();
        json!({"provisioningJobs": [
            job_json(&pid2, "provision", "Canceled", 0, "canceled", &v2),
            job_json(&did, "deprovision", "Pending", 1, "Deprovision job triggered", "")
        ], "desiredConfigVersion": v2, "launchIntent": null})
    };
    let after = status_with(&deleting, "6", json!({}));
    let action = h
        .reconcile(
            status_with(&deleting, "5", s1.clone()),
            vec![
                get_object(&status_with(&deleting, "5", s1.clone())),
                patch_intent("5", "deprovision", &status_with(&deleting, "5", s1)),
                patch_status_with_ids(h.aap(), "5", flushed, &after),
            ],
        )
        .await
        .unwrap();
    assert_ne!(action, Action::await_change(), "finalizer kept");
    assert_eq!(h.launches().len(), 2);
    assert_eq!(
        h.aap()
            .jobs()
            .iter()
            .find(|j| j.id.to_string() == pid)
            .map(|j| j.status),
        Some("canceled")
    );
    let did = h
        .aap()
        .jobs()
        .iter()
        .map(|j| j.id.to_string())
        .find(|i| *i != pid)
        .unwrap();

    // 3. deprovision job successful → status written, finalizer removed
    h.clock.advance(Duration::from_secs(60));
    let cached = status_with(
        &deleting,
        "6",
        json!({"phase": "Deleting", "provisioningJobs": [
        job_json(&pid, "provision", "Canceled", 0, "canceled", &v),
        job_json(&did, "deprovision", "Pending", 1, "Deprovision job triggered", "")
    ], "desiredConfigVersion": v}),
    );
    let s3 = json!({"phase": "Deleting", "provisioningJobs": [
        job_json(&pid, "provision", "Canceled", 0, "canceled", &v),
        job_json(&did, "deprovision", "Succeeded", 1, "successful", "")
    ], "desiredConfigVersion": v});
    let r = h
        .reconcile(
            cached,
            vec![
                patch_status("6", s3.clone(), &status_with(&deleting, "7", s3.clone())),
                remove_finalizer(&status_with(&deleting, "8", s3)),
            ],
        )
        .await;
    assert_eq!(r.unwrap(), Action::await_change());
    assert_eq!(h.launches().len(), 2);
}

/// A `Controller` needs a `Send` reconcile future; this fails to compile otherwise.
#[tokio::test]
async fn reconcile_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let h = AapHarness::start(JobScript::successful(Duration::from_secs(1))).await;
    let (client, _verifier) = testcontext();
    let p = Provisioner::new(client, h.lifecycle.clone(), FINALIZER);
    let fut = p.reconcile(Arc::new(Network::test()), &NoCallbacks);
    assert_send(&fut);
}
