//! What the example operator got wrong on a real cluster (issue 16, problems 4–8), on the
//! path users run: `Provisioner::reconcile` / `EventPublisher` over a `kube::Client`, against
//! the scripted API server of `fixtures.rs` (every request asserted in order).

use std::io::Write;
use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use provkit_kube::{
    ErrorBackoffConfig, EventPublisher, JobEvent, Provisioner, ProvisioningCallbacks, error_policy,
};
use serde_json::{Value, json};

use crate::fixtures::*;
use crate::scenarios::{Harness, Phases, job_json, stored, version};

const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

// ---- problem 4: one Event per job, with its own note --------------------------------------

fn event_post(note: &'static str) -> Exchange {
    Exchange::post(
        format!("{EVENTS}?"),
        BodyCheck::Check(Box::new(move |b: &Value| {
            assert_eq!(b["note"], note, "{b}");
            assert!(b["series"].is_null(), "a new Event, not a series: {b}");
        })),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "metadata": {"name": "e", "namespace": NS}}),
    )
}

fn regarding() -> ObjectReference {
    Network::test().object_ref(&())
}

#[tokio::test]
async fn two_jobs_are_two_events_with_their_own_notes_and_a_repeat_is_one_series() {
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![
        event_post("provision job 1 launched"),
        event_post("provision job 2 launched"),
        event_post("provision job 2 failed: playbook failed"),
        // job 2's failure observed again: the same series, count 2 — not a third Event
        Exchange {
            method: Method::PATCH,
            // the name generated for the first Event of the series
            uri: format!("{EVENTS}/net-a.*"),
            body: BodyCheck::Check(Box::new(|b: &Value| {
                assert_eq!(b["series"]["count"], 2, "{b}");
                assert!(b["series"]["lastObservedTime"].is_string(), "{b}");
                // A merge patch of `series` only: the Event keeps its first note (the repeat's
                // note is not sent; kube-runtime's Recorder re-sent the first one).
                assert_eq!(b.as_object().map(|o| o.len()), Some(1), "{b}");
            })),
            status: StatusCode::OK,
            reply: json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                          "metadata": {"name": "e", "namespace": NS}}),
        },
    ]);
    let reporter = Reporter {
        controller: "provkit-test".into(),
        instance: Some("test-0".into()),
    };
    let events = EventPublisher::new(client, reporter);
    let launched = |id: &str| JobEvent::ProvisionTriggered { job_id: id.into() };
    let failed = JobEvent::ProvisionFailed {
        job_id: "2".into(),
        message: "failed: playbook failed".into(),
    };
    events.publish(&launched("1"), &regarding()).await;
    events.publish(&launched("2"), &regarding()).await;
    events.publish(&failed, &regarding()).await;
    events.publish(&failed, &regarding()).await;
    timeout_after_1s(server).await;
}

// ---- problem 5: the API server's answer reaches the log -----------------------------------

/// A `tracing` writer into a shared buffer (plain text).
#[derive(Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    /// Installs a subscriber writing here for the current thread (the tests' runtime is
    /// single-threaded, so the reconcile's logs land here).
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let sub = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(sub)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(
            &self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_owned()
    }
}

const FORBIDDEN: &str = "networks.test.provkit.dev \"net-a\" is forbidden: User \"system:serviceaccount:ops:provkit\" cannot patch resource \"networks/status\"";

fn forbidden(mut ex: Exchange) -> Exchange {
    ex.status = StatusCode::FORBIDDEN;
    ex.reply = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": FORBIDDEN, "reason": "Forbidden", "code": 403});
    ex
}

fn assert_logged_403(log: &str) {
    let line = log
        .lines()
        .find(|l| l.contains("reconcile failed"))
        .unwrap_or_else(|| panic!("no reconcile-failed line in {log}"));
    assert!(line.contains(FORBIDDEN), "{line}");
    assert!(line.contains("Forbidden") && line.contains("403"), "{line}");
}

/// A provisioner for the error policy alone (it sends no request), without jitter.
fn policy_context(h: &Harness) -> Arc<Provisioner<Network>> {
    let (client, _verifier) = testcontext();
    Arc::new(
        Provisioner::new(client, h.lifecycle.clone(), FINALIZER)
            .with_error_backoff(ErrorBackoffConfig::default().with_jitter(0.0)),
    )
}

#[tokio::test]
async fn a_forbidden_status_patch_logs_the_403_and_its_message() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let h = Harness::new();
    let base = Network::test().finalized().with_rv("5");
    let v = version(&base);
    let running = job_json("job-1", "provision", "Succeeded", 0, "succeeded", &v);
    let cached = stored(
        &base,
        "5",
        &json!({"provisioningJobs": [running], "desiredConfigVersion": v}),
    );
    let status =
        json!({"phase": "Progressing", "provisioningJobs": [running], "desiredConfigVersion": v});
    let (r, _) = h
        .reconcile(
            cached.clone(),
            vec![forbidden(patch_status("5", status, &cached))],
            false,
        )
        .await;
    let err = r.unwrap_err();
    let action = error_policy(Arc::new(cached), &err, policy_context(&h));
    assert_eq!(action, Action::requeue(std::time::Duration::from_secs(1)));
    assert_logged_403(&logs.text());
}

#[tokio::test]
async fn a_forbidden_finalizer_patch_logs_the_403_and_the_object() {
    let logs = LogBuffer::default();
    let _guard = logs.install();
    let h = Harness::new();
    let (r, _) = h
        .reconcile(
            Network::test(),
            vec![forbidden(add_finalizer(&Network::test()))],
            false,
        )
        .await;
    let err = r.unwrap_err();
    assert!(err.to_string().contains("default/net-a"), "{err}");
    error_policy(Arc::new(Network::test()), &err, policy_context(&h));
    assert_logged_403(&logs.text());
}

// ---- problem 6: a field manager on provkit-kube's writes ----------------------------------

/// A cached copy whose provision job succeeded (resourceVersion 5), and the status patch its
/// reconcile writes (the phase).
fn converged() -> (Network, Exchange) {
    let base = Network::test().finalized().with_rv("5");
    let v = version(&base);
    let done = job_json("job-1", "provision", "Succeeded", 0, "succeeded", &v);
    let cached = stored(
        &base,
        "5",
        &json!({"provisioningJobs": [done], "desiredConfigVersion": v}),
    );
    let status =
        json!({"phase": "Progressing", "provisioningJobs": [done], "desiredConfigVersion": v});
    let write = patch_status("5", status, &cached.clone().with_rv("6"));
    (cached, write)
}

#[tokio::test]
async fn status_patches_carry_the_field_manager() {
    let h = Harness::new();
    let (cached, mut write) = converged();
    write.uri = format!("{BASE}/{NAME}/status?&fieldManager=provkit-test");
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![write]);
    let p =
        Provisioner::new(client, h.lifecycle.clone(), FINALIZER).with_field_manager("provkit-test");
    let r = p.reconcile(Arc::new(cached), &Phases).await;
    timeout_after_1s(server).await;
    assert_resync(&r.unwrap());
}

/// Issue 27 (6): the management hook and the callbacks have mockall mocks (feature `mock`). A
/// hook answering `Skip` keeps the reconcile from the object (no request, no callback); a
/// managed converged object gets `on_apply` once, with its config applied, and no write.
#[cfg(feature = "mock")]
#[tokio::test]
async fn the_management_and_callback_mocks_see_a_reconcile() {
    use provkit_kube::MockProvisioningCallbacks;
    use provkit_kube::management::{Management, MockManagementHook};
    let h = Harness::new();
    let (cached, _) = converged();

    let (client, verifier) = testcontext();
    let server = verifier.run(vec![]);
    let mut skip = MockManagementHook::new();
    skip.expect_management()
        .times(1)
        .return_const(Management::Skip);
    // No expectation: any callback would fail the test.
    let untouched = MockProvisioningCallbacks::<Network>::new();
    let p = Provisioner::new(client, h.lifecycle.clone(), FINALIZER).with_management(skip);
    p.reconcile(Arc::new(cached.clone()), &untouched)
        .await
        .unwrap();
    timeout_after_1s(server).await;
    assert_eq!(h.provider_calls(), 0);

    let (client, verifier) = testcontext();
    let server = verifier.run(vec![]);
    let mut managed = MockManagementHook::new();
    managed
        .expect_management()
        .times(1)
        .return_const(Management::Managed);
    let mut callbacks = MockProvisioningCallbacks::<Network>::new();
    callbacks
        .expect_on_apply()
        .times(1)
        .withf(|_, applied| *applied)
        .return_const(());
    callbacks
        .expect_launch_context()
        .returning(|_| provkit_lifecycle::LaunchContext::new());
    let p = Provisioner::new(client, h.lifecycle.clone(), FINALIZER).with_management(managed);
    p.reconcile(Arc::new(cached), &callbacks).await.unwrap();
    timeout_after_1s(server).await;
    assert_eq!(
        h.provider_calls(),
        0,
        "a converged object needs no provider call"
    );
}

/// A converged object comes back after the resync period (less up to a tenth, at random)
/// instead of waiting for a change: a change a relist's reconcile missed (kube-runtime reads the
/// reflector's store, which takes the relist's state only at its end) is seen then. On by
/// default (issue 27: deletions were lost after a relist with the default settings); a period
/// of its own and `without_resync` are honoured.
#[tokio::test]
async fn a_converged_object_comes_back_after_the_resync_period() {
    let h = Harness::new();
    for (configure, want) in [
        (
            None,
            Some(Provisioner::<Network>::DEFAULT_RESYNC.as_secs_f64()),
        ),
        (Some(Some(std::time::Duration::from_secs(60))), Some(60.0)),
        (Some(None), None),
    ] {
        let (cached, write) = converged();
        let (client, verifier) = testcontext();
        let server = verifier.run(vec![write]);
        let p = Provisioner::new(client, h.lifecycle.clone(), FINALIZER);
        let p = match configure {
            None => p,
            Some(Some(period)) => p.with_resync(period),
            Some(None) => p.without_resync(),
        };
        let action = p.reconcile(Arc::new(cached), &Phases).await.unwrap();
        timeout_after_1s(server).await;
        match want {
            Some(period) => {
                let secs = requeue_secs(&action)
                    .unwrap_or_else(|| panic!("a requeue for {configure:?}: {action:?}"));
                assert!(
                    (period * 0.9..=period).contains(&secs),
                    "{configure:?}: {action:?}"
                );
            }
            None => assert_eq!(action, Action::await_change(), "without_resync"),
        }
    }
}

// ---- problem 7: no second cleanup from a stale cached copy --------------------------------

#[tokio::test]
async fn a_stale_copy_after_the_finalizer_removal_does_nothing() {
    let h = Harness::new();
    let base = Network::test().finalized().needs_delete();
    let done = json!({"phase": "Deleting", "provisioningJobs": [
        job_json("job-1", "deprovision", "Succeeded", 0, "succeeded", "")]});
    let cached = stored(&base, "30", &done);
    let (client, verifier) = testcontext();
    // Exactly one cleanup: one Event, one finalizer removal — and nothing for the second
    // reconcile of the same (stale) copy.
    let server = verifier.run(vec![
        event("Deprovisioned", "finalizer"),
        remove_finalizer(&cached),
    ]);
    let reporter = Reporter {
        controller: "provkit-test".into(),
        instance: Some("test-0".into()),
    };
    let p = Provisioner::new(client.clone(), h.lifecycle.clone(), FINALIZER)
        .with_events(EventPublisher::new(client, reporter));
    let first = p.reconcile(Arc::new(cached.clone()), &Phases).await;
    assert_eq!(first.unwrap(), Action::await_change());
    let calls = h.provider_calls();
    let second = p.reconcile(Arc::new(cached), &Phases).await;
    assert_eq!(second.unwrap(), Action::await_change());
    assert_eq!(h.provider_calls(), calls, "no second deprovisioning");
    let log = timeout_after_1s(server).await;
    assert_eq!(log.len(), 2, "{log:?}");
}

// ---- status writes clear what this controller removed, and only that ----------------------

/// Clears the phase (a field this controller wrote last time).
struct ClearsPhase;

impl ProvisioningCallbacks<Network> for ClearsPhase {
    fn on_apply(&self, obj: &mut Network, _config_applied: bool) {
        obj.status.get_or_insert_with(Default::default).phase = None;
    }
}

#[tokio::test]
async fn a_removed_field_is_cleared_and_unknown_fields_are_left_alone() {
    let h = Harness::new();
    let base = Network::test().finalized();
    let v = version(&base);
    let running = job_json("job-1", "provision", "Succeeded", 0, "succeeded", &v);
    // As the API server returns it: our phase, plus a Go-written field the Rust type lacks.
    let mut server_json = base.clone().with_rv("7").json();
    server_json["status"] = json!({"phase": "Progressing", "provisioningJobs": [running],
                                   "desiredConfigVersion": v, "goOnlyField": {"keep": true}});
    let cached: Network = serde_json::from_value(server_json).unwrap();
    let (client, verifier) = testcontext();
    let server = verifier.run(vec![patch_status(
        "7",
        // `phase: null` clears ours; `goOnlyField` is not mentioned, so it survives.
        json!({"phase": null, "provisioningJobs": [running], "desiredConfigVersion": v}),
        &cached.clone().with_rv("8"),
    )]);
    let p = Provisioner::new(client, h.lifecycle.clone(), FINALIZER);
    let r = p.reconcile(Arc::new(cached), &ClearsPhase).await;
    timeout_after_1s(server).await;
    assert_resync(&r.unwrap());
}

/// Reads one HTTP/1.1 request from `stream` (head and `Content-Length` body) and returns
/// its head.
async fn read_request(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-request");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_owned();
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return head;
            }
        }
    }
}

#[tokio::test]
async fn kube_runtime_finalizer_writes_carry_the_controller_user_agent() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let head = read_request(&mut stream).await;
        let body = serde_json::to_vec(&Network::test().finalized().with_rv("2")).unwrap();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(reply.as_bytes()).await.unwrap();
        stream.write_all(&body).await.unwrap();
        head
    });
    let mut config = kube::Config::new(url.parse().unwrap());
    config.default_namespace = NS.into();
    provkit_kube::user_agent(&mut config, "provkit-test", "1.2.3").unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let h = Harness::new();
    let p = Provisioner::new(client, h.lifecycle.clone(), FINALIZER);
    // A new object: kube-runtime's finalizer helper adds the finalizer (no field manager of
    // its own), so the API server can only name the manager from the User-Agent.
    let r = p.reconcile(Arc::new(Network::test()), &Phases).await;
    assert_eq!(r.unwrap(), Action::await_change());
    let head = tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
    assert!(
        head.starts_with("PATCH /apis/test.provkit.dev/v1/namespaces/default/networks/net-a"),
        "{head}"
    );
    let agent = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("user-agent: ")
                .or_else(|| l.strip_prefix("User-Agent: "))
        })
        .unwrap_or_else(|| panic!("no User-Agent in {head}"));
    assert_eq!(agent, "provkit-test/1.2.3");
}
