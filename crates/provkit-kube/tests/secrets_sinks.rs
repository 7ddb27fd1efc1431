//! Secrets in extra_vars never leave provkit through its own sinks.
//!
//! A controller (kube-runtime `Controller` + `Provisioner` + the OSAC `AapProvider`) launches with
//! a launch context holding known secrets — an admin kubeconfig, a storage back-end password, a
//! caller field marked secret — against the fake API server and the fake AAP, and AAP echoes them
//! back in every way it can: a playbook failure that prints them, a rejected launch whose 400
//! repeats them, AWX's own survey validation quoting the variables. Then every sink provkit writes
//! is searched: the log and span output (all levels), the Kubernetes Events, the object's status
//! (job messages, conditions), the reconcile errors (`Display` and `Debug`) and the `Debug` output
//! of the launch context, provider and provisioner. The fake AAP's job records, which keep the
//! variables as AWX does, must hold them: the secrets really were sent.
//!
//! One test per binary: the log capture is the process's global subscriber.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;
use common::{FINALIZER, Network, NetworkSpec, eventually};

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use futures::StreamExt;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use provkit_aap::provider::TemplateNames;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, JobState, JobType, ManualClock};
use provkit_kube::{
    ErrorBackoffConfig, EventPublisher, ProvisionedResource, Provisioner, ProvisioningCallbacks,
    ReconcileError,
};
use provkit_lifecycle::{
    BackendConnection, Backoff, LaunchContext, Lifecycle, LifecyclePolicy, SecretText,
};
use provkit_testing::fake_aap::{
    FakeAap, Fault, FaultAction, JobScript, JobTemplateSpec, ScriptRule, SurveyQuestion, SurveySpec,
};
use provkit_testing::fake_apiserver::FakeApiServer;
use serde_json::json;

const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: kc-T0KEN-5ecret-91f2\n";
const KUBE_TOKEN: &str = "kc-T0KEN-5ecret-91f2";
const SAN_PASSWORD: &str = "s4n-P4ssw0rd-77";
const VAULT_TOKEN: &str = "vault-5ecret-tok3n";

/// Every form a secret could leak in: the values, and the kubeconfig as a JSON string escapes it.
fn needles() -> Vec<String> {
    let escaped = serde_json::to_string(KUBECONFIG).unwrap();
    vec![
        KUBE_TOKEN.to_owned(),
        SAN_PASSWORD.to_owned(),
        VAULT_TOKEN.to_owned(),
        KUBECONFIG.to_owned(),
        escaped.trim_matches('"').to_owned(),
    ]
}

fn assert_clean(sink: &str, text: &str) {
    for needle in needles() {
        assert!(
            !text.contains(&needle),
            "{sink} leaks {needle:?}:\n{}",
            &text[text.find(&needle).map_or(0, |i| i.saturating_sub(300))..]
                .chars()
                .take(900)
                .collect::<String>()
        );
    }
}

fn launch_context() -> LaunchContext {
    let mut connections = BTreeMap::new();
    connections.insert(
        "backend-1".to_owned(),
        BackendConnection {
            endpoint: "https://san-1.example.com".into(),
            username: "admin".into(),
            password: SecretText::new(SAN_PASSWORD),
        },
    );
    LaunchContext::new()
        .with_admin_kubeconfig(KUBECONFIG)
        .with_storage_backend_connections(connections)
        .with_secret_extra("vault_token", VAULT_TOKEN)
        .with_extra("cluster_domain", json!("example.com"))
}

/// The user's callbacks: the launch context, and the failure message written into the status
/// as a controller's `Ready` condition would carry it.
struct Callbacks {
    failures: Mutex<Vec<String>>,
}

impl ProvisioningCallbacks<Network> for Callbacks {
    fn on_failed(&self, _obj: &mut Network, message: &str) {
        self.failures.lock().unwrap().push(message.to_owned());
    }
    fn launch_context(&self, _obj: &Network) -> LaunchContext {
        launch_context()
    }
}

struct Ctx {
    provisioner: Provisioner<Network>,
    callbacks: Callbacks,
    errors: Mutex<Vec<String>>,
}

impl AsRef<Provisioner<Network>> for Ctx {
    fn as_ref(&self) -> &Provisioner<Network> {
        &self.provisioner
    }
}

async fn reconcile(
    obj: Arc<Network>,
    ctx: Arc<Ctx>,
) -> Result<kube::runtime::controller::Action, ReconcileError> {
    let result = ctx.provisioner.reconcile(obj, &ctx.callbacks).await;
    if let Err(e) = &result {
        ctx.errors
            .lock()
            .unwrap()
            .push(format!("{e}\n{}\n{e:?}", provkit_lifecycle::ErrorChain(e)));
    }
    result
}

/// The process's log and span output.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn install_capture() -> Capture {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::prelude::*;
    let capture = Capture::default();
    let writer = capture.clone();
    // Everything provkit logs (and kube-runtime, which sees the reconcile errors), at every level,
    // with span fields at their creation and close; the fakes' own logs are not provkit's.
    let targets = Targets::new()
        .with_target("provkit_core", LevelFilter::TRACE)
        .with_target("provkit_lifecycle", LevelFilter::TRACE)
        .with_target("provkit_aap", LevelFilter::TRACE)
        .with_target("provkit_kube", LevelFilter::TRACE)
        .with_target("kube_runtime", LevelFilter::TRACE);
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_span_events(FmtSpan::FULL)
                .with_writer(move || writer.clone())
                .with_filter(targets),
        )
        .init();
    capture
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_context_secrets_never_reach_logs_spans_events_status_errors_or_debug() {
    let logs = install_capture();
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 8, 3, 12, 0, 0).unwrap());
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    // The delete template has a survey asking for `osac_job_vars` as text: AWX rejects the
    // envelope's object and quotes it, secrets and all, in its validation error.
    let mut delete = JobTemplateSpec::new("osac-delete-network", "osac");
    delete.survey_enabled = true;
    delete.survey_spec = Some(SurveySpec {
        name: "inputs".into(),
        spec: vec![SurveyQuestion {
            question_name: "vars".into(),
            kind: "text".into(),
            variable: "osac_job_vars".into(),
            ..SurveyQuestion::default()
        }],
        ..SurveySpec::default()
    });
    let aap = FakeAap::builder()
        .clock(dyn_clock.clone())
        .organization("osac")
        .job_template(JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(10))),
            ..JobTemplateSpec::new("osac-create-network", "osac")
                .reading(["osac_job_vars.admin_kubeconfig"])
        })
        .job_template(delete)
        .start()
        .await
        .unwrap();
    let create = aap.aap().template_id("osac-create-network", None).unwrap();
    // 1. The first job's playbook prints the secrets in its failure.
    aap.aap()
        .push_script(
            create,
            ScriptRule::once(JobScript::playbook_failure(
                "Log in to the storage back end",
                "localhost",
                &format!(
                    "Authentication failed for admin:{SAN_PASSWORD} with vault token {VAULT_TOKEN}; kubeconfig was {KUBECONFIG:?}"
                ),
            )),
        )
        .unwrap();
    let provider = AapProvider::builder(
        AapClient::builder(aap.base_url())
            .token(aap.token())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
    )
    .templates(TemplateNames::osac())
    .envelope(provkit_aap::provider::Envelope::OsacJobVars)
    .clock(dyn_clock.clone())
    .build();
    let provider_debug = format!("{provider:?}");
    let mut policy = LifecyclePolicy::default()
        .with_poll_interval(Duration::from_millis(100))
        .with_backoff(Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(2),
        });
    policy.min_requeue = Duration::from_millis(10);
    let lifecycle = Lifecycle::new(Arc::new(provider), dyn_clock.clone()).with_policy(policy);
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(dyn_clock.clone())
        .build();
    let operator = server.client_with_user_agent("network-operator/0.1");
    let reporter = Reporter {
        controller: "network-operator".into(),
        instance: Some("test-0".into()),
    };
    let provisioner = Provisioner::new(operator.clone(), lifecycle, FINALIZER)
        .with_events(EventPublisher::new(operator.clone(), reporter))
        .with_error_backoff(
            ErrorBackoffConfig::default()
                .with_initial(Duration::from_millis(50))
                .with_max(Duration::from_millis(200)),
        );
    let provisioner_debug = format!("{provisioner:?}");
    let ctx = Arc::new(Ctx {
        provisioner,
        callbacks: Callbacks {
            failures: Mutex::new(Vec::new()),
        },
        errors: Mutex::new(Vec::new()),
    });
    let controller = tokio::spawn(
        Controller::new(
            Api::<Network>::all(operator.clone()),
            watcher::Config::default(),
        )
        .run(reconcile, provkit_kube::error_policy, ctx.clone())
        .for_each(|r| async move {
            // kube-runtime's own report of each reconcile, as an operator would log it.
            if let Err(e) = r {
                tracing::error!(target: "kube_runtime", error = %e, debug = ?e, "reconcile error");
            }
        }),
    );
    let api: Api<Network> = Api::default_namespaced(server.client_named("user"));
    api.create(
        &PostParams::default(),
        &Network::new(
            "net-a",
            NetworkSpec {
                cidr: "10.0.0.0/24".into(),
            },
        ),
    )
    .await
    .unwrap();

    // 1. The job fails, its failure printing the secrets.
    eventually("the first job is launched", || async {
        !aap.aap().jobs().is_empty()
    })
    .await;
    // Every launch from now on (the retry) is refused with a 400 that quotes the variables.
    // Installed before the failure is seen: the retry may be due at once (the backoff counts
    // from the job's end), and a retry launched before the fault was in place made this test
    // fail about one run in fifty.
    let echo = format!(
        "Value {{'admin_kubeconfig': {}, 'storage_backend_connections': {{'backend-1': {{'password': '{SAN_PASSWORD}'}}}}, 'vault_token': '{VAULT_TOKEN}'}} for 'osac_job_vars' expected to be a string.",
        serde_json::to_string(KUBECONFIG).unwrap().replace('"', "'")
    );
    let fault = aap.aap().add_fault(Fault::new(
        "POST",
        "*/launch/",
        FaultAction::json(400, &json!({"extra_vars": [echo]})),
    ));
    clock.advance(Duration::from_secs(30));
    eventually("the failed job is recorded", || async {
        api.get("net-a")
            .await
            .unwrap()
            .provisioning_jobs()
            .first()
            .map(|j| j.state.clone())
            == Some(JobState::Failed)
    })
    .await;
    let failed = api.get("net-a").await.unwrap().provisioning_jobs()[0]
        .message
        .clone();
    assert!(
        failed.contains("Authentication failed for admin:[REDACTED]"),
        "{failed}"
    );

    // 2. (The fault was installed before the failure was seen.) The retry's launch is refused,
    // and refused again after the backoff.
    clock.advance(Duration::from_secs(5));
    eventually("the refused launch is reported", || async {
        aap.aap().fault_hits(fault) >= 2
    })
    .await;
    aap.aap().remove_fault(fault);
    eventually("the retry is launched", || async {
        aap.aap().jobs().len() == 2
    })
    .await;
    clock.advance(Duration::from_secs(30));
    eventually("the second job succeeds", || async {
        api.get("net-a")
            .await
            .unwrap()
            .provisioning_jobs()
            .last()
            .map(|j| j.state.clone())
            == Some(JobState::Succeeded)
    })
    .await;

    // 3. Deletion: AWX's survey validation rejects the envelope and quotes it.
    api.delete("net-a", &DeleteParams::default()).await.unwrap();
    eventually("the survey refusal is seen twice", || async {
        aap.aap()
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/launch/") && r.status == 400)
            .count()
            >= 4
    })
    .await;
    controller.abort();

    // The secrets were sent: AWX's job records keep them (the fake, like AWX, stores them).
    let records: String = aap
        .aap()
        .jobs()
        .iter()
        .map(|j| j.extra_vars.clone())
        .collect();
    for secret in [KUBE_TOKEN, SAN_PASSWORD, VAULT_TOKEN] {
        assert!(records.contains(secret), "the job records hold {secret}");
    }
    assert_eq!(
        aap.aap().jobs()[1].reads[0].1,
        Ok(json!(KUBECONFIG)),
        "the playbook read the kubeconfig"
    );
    // The launches sent them.
    let sent: String = aap
        .aap()
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/launch/"))
        .map(|r| r.body.clone())
        .collect();
    assert!(sent.contains(SAN_PASSWORD) && sent.contains(VAULT_TOKEN));

    // The sinks.
    let log_text = logs.text();
    assert!(
        log_text.contains("aap.request") && log_text.contains("launch"),
        "the capture works"
    );
    assert_clean("the log and span output", &log_text);
    let events = serde_json::to_string(&server.events()).unwrap();
    assert!(
        events.contains("LaunchFailed") || events.contains("ProvisionJobFailed"),
        "{events}"
    );
    assert_clean("the Events", &events);
    let objects =
        serde_json::to_string(&server.objects_json("test.provkit.dev", "networks")).unwrap();
    assert_clean("the stored objects", &objects);
    let errors = ctx.errors.lock().unwrap().join("\n");
    assert!(!errors.is_empty(), "reconciles failed and were recorded");
    assert_clean("the reconcile errors", &errors);
    let failures = ctx.callbacks.failures.lock().unwrap().join("\n");
    assert!(!failures.is_empty());
    assert_clean("the on_failed messages", &failures);
    assert_clean(
        "Debug output",
        &format!(
            "{:?} {provider_debug} {provisioner_debug} {:?}",
            launch_context(),
            api.get("net-a").await.ok()
        ),
    );
    // The echoes reached provkit and were redacted, not dropped.
    let errors = ctx.errors.lock().unwrap().clone();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("expected to be a string") && e.contains("[REDACTED]")),
        "{errors:?}"
    );
    let api_object = api.get("net-a").await.unwrap();
    assert!(
        api_object
            .provisioning_jobs()
            .iter()
            .all(|j| j.job_type != JobType::Deprovision),
        "the refused deprovision launch recorded nothing"
    );
}
