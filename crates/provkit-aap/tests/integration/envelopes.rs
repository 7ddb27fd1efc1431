//! The extra_vars envelopes against the fake AAP: what a playbook reads, what the job record
//! keeps (AWX stores a launch's variables whole, secrets included), and where the idempotency
//! key sits for templates with a survey or `ask_variables_on_launch`.

use std::time::Duration;

use provkit_aap::AapProvider;
use provkit_aap::provider::{Envelope, IDEMPOTENCY_KEY_VAR, TemplateNames};
use provkit_core::{JobState, JobType};
use provkit_lifecycle::{
    BackendConnection, IdempotencyKey, LaunchContext, ProvisioningProvider, ResourceMeta,
    ResourceView, SecretText,
};
use provkit_testing::fake_aap::{FakeAapServer, JobTemplateSpec, Mode, SurveyQuestion, SurveySpec};
use serde_json::{Value, json};

use crate::support::{client, server_with};

fn subnet() -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "subnet-a".into(),
            namespace: Some("tenant-a".into()),
            uid: "uid-subnet-a".into(),
            ..Default::default()
        },
        json!({"apiVersion": "osac.openshift.io/v1alpha1", "kind": "Subnet",
               "metadata": {"name": "subnet-a", "namespace": "tenant-a", "uid": "uid-subnet-a",
                            "annotations": {"osac.openshift.io/implementation-strategy": "cudn_net"}},
               "spec": {"virtualNetwork": "vn-1", "ipv4CIDR": "10.0.1.0/24"}}),
    )
}

/// `osac-create-subnet` as the current osac-aap playbook reads it.
fn current_playbook() -> JobTemplateSpec {
    JobTemplateSpec::new("osac-create-subnet", "osac").reading([
        "osac_job_vars.resource.spec",
        "osac_job_vars.resource.metadata.name",
    ])
}

fn provider(server: &FakeAapServer, envelope: Envelope) -> AapProvider {
    AapProvider::builder(client(server))
        .templates(TemplateNames::osac())
        .envelope(envelope)
        .build()
}

async fn finished(server: &FakeAapServer, p: &AapProvider, job_id: &str) -> JobState {
    for _ in 0..400 {
        let st = p.provision_status(&subnet(), job_id).await.unwrap();
        if st.state.is_terminal() {
            return st.state;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("job {job_id} of {} did not finish", server.base_url());
}

fn job(server: &FakeAapServer, job_id: &str) -> provkit_testing::fake_aap::JobInfo {
    server.aap().job(job_id.parse().unwrap()).expect("the job")
}

#[tokio::test]
async fn the_osac_preset_feeds_a_playbook_that_reads_osac_job_vars_resource_spec() {
    let server = server_with(Mode::Gateway, |b| b.job_template(current_playbook())).await;
    let p = AapProvider::osac(client(&server));
    assert_eq!(p.envelope(), Envelope::OsacJobVars);
    let mut connections = std::collections::BTreeMap::new();
    connections.insert(
        "backend-1".to_owned(),
        BackendConnection {
            endpoint: "https://san-1".into(),
            username: "admin".into(),
            password: SecretText::new("s4n-p4ssw0rd"),
        },
    );
    let ctx = LaunchContext::new()
        .with_admin_kubeconfig("apiVersion: v1\nusers:\n- user: {token: kc-t0ken}\n")
        .with_storage_backend_connections(connections)
        .with_idempotency_key(IdempotencyKey::new("pk1-uid-subnet-a-p-00000000000000aa"));
    let launched = p.trigger_provision(&subnet(), &ctx).await.unwrap();
    assert_eq!(
        finished(&server, &p, &launched.job_id).await,
        JobState::Succeeded
    );

    let info = job(&server, &launched.job_id);
    assert_eq!(
        info.reads,
        vec![
            (
                "osac_job_vars.resource.spec".to_owned(),
                Ok(json!({"virtualNetwork": "vn-1", "ipv4CIDR": "10.0.1.0/24"}))
            ),
            (
                "osac_job_vars.resource.metadata.name".to_owned(),
                Ok(json!("subnet-a"))
            ),
        ]
    );
    // The job record keeps the variables as AWX stores them: everything, secrets included.
    let record: Value = serde_json::from_str(&info.extra_vars).unwrap();
    assert_eq!(
        record,
        json!({
            "osac_job_vars": {
                "resource": subnet().json().unwrap().clone(),
                "admin_kubeconfig": "apiVersion: v1\nusers:\n- user: {token: kc-t0ken}\n",
                "storage_backend_connections": {"backend-1": {"endpoint": "https://san-1", "username": "admin", "password": "s4n-p4ssw0rd"}}
            },
            IDEMPOTENCY_KEY_VAR: "pk1-uid-subnet-a-p-00000000000000aa"
        })
    );
    let snapshot = server.aap().snapshot_jobs();
    assert!(snapshot.jobs[0].extra_vars.contains("s4n-p4ssw0rd"));
}

#[tokio::test]
async fn the_legacy_envelope_runs_a_migrated_playbook_on_nothing() {
    // What issue 31 is about: an operator still sending ansible_eda to the current playbooks.
    let server = server_with(Mode::Awx, |b| {
        b.job_template(current_playbook()).job_template(
            JobTemplateSpec::new("osac-delete-subnet", "osac")
                .reading(["ansible_eda.event.payload.spec"]),
        )
    })
    .await;
    let legacy = provider(&server, Envelope::AnsibleEda);
    let launched = legacy
        .trigger_provision(&subnet(), &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(
        finished(&server, &legacy, &launched.job_id).await,
        JobState::Failed
    );
    let status = legacy
        .provision_status(&subnet(), &launched.job_id)
        .await
        .unwrap();
    assert!(
        status
            .message_with_details()
            .contains("The task includes an option with an undefined variable. The error was: 'osac_job_vars' is undefined"),
        "{}",
        status.message_with_details()
    );
    // A playbook not yet migrated (here the delete one) keeps working with the legacy envelope…
    let d = legacy
        .trigger_deprovision(&subnet(), &[], &LaunchContext::new())
        .await
        .unwrap();
    let d_id = d.job_id.unwrap();
    assert_eq!(finished(&server, &legacy, &d_id).await, JobState::Succeeded);
    assert_eq!(
        job(&server, &d_id).reads[0].1,
        Ok(json!({"virtualNetwork": "vn-1", "ipv4CIDR": "10.0.1.0/24"}))
    );
    // …and fails with the current one.
    let current = provider(&server, Envelope::OsacJobVars);
    let d = current
        .trigger_deprovision(&subnet(), &[], &LaunchContext::new())
        .await
        .unwrap();
    let d_id = d.job_id.unwrap();
    assert_eq!(finished(&server, &current, &d_id).await, JobState::Failed);
    assert_eq!(
        job(&server, &d_id).reads[0].1,
        Err("'ansible_eda' is undefined".to_owned())
    );
}

#[tokio::test]
async fn the_builder_default_is_the_neutral_envelope() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(
            JobTemplateSpec::new("acme-create-subnet", "osac")
                .reading(["provkit_job_vars.resource.spec.ipv4CIDR"]),
        )
    })
    .await;
    let p = AapProvider::with_prefix(client(&server), "acme");
    assert_eq!(p.envelope(), Envelope::Neutral);
    let launched = p
        .trigger_provision(&subnet(), &LaunchContext::new())
        .await
        .unwrap();
    assert_eq!(
        finished(&server, &p, &launched.job_id).await,
        JobState::Succeeded
    );
    let info = job(&server, &launched.job_id);
    assert_eq!(info.reads[0].1, Ok(json!("10.0.1.0/24")));
    let record: Value = serde_json::from_str(&info.extra_vars).unwrap();
    assert_eq!(
        record["provkit_job_vars"]["resource"],
        *subnet().json().unwrap()
    );
}

fn text_question(variable: &str, required: bool, default: &str) -> SurveyQuestion {
    SurveyQuestion {
        question_name: variable.into(),
        required,
        kind: "text".into(),
        variable: variable.into(),
        min: Some(json!(0)),
        max: Some(json!(1024)),
        default: json!(default),
        ..SurveyQuestion::default()
    }
}

/// A template with a survey; `ask_variables` is `ask_variables_on_launch`.
fn surveyed(name: &str, ask_variables: bool, questions: Vec<SurveyQuestion>) -> JobTemplateSpec {
    let mut t = JobTemplateSpec::new(name, "osac");
    t.ask.variables = ask_variables;
    t.survey_enabled = true;
    t.survey_spec = Some(SurveySpec {
        name: "inputs".into(),
        spec: questions,
        ..SurveySpec::default()
    });
    t
}

#[tokio::test]
async fn templates_with_a_survey_or_ask_variables_accept_the_idempotency_key() {
    let server = server_with(Mode::Gateway, |b| {
        b.job_template(JobTemplateSpec::new("ask-only", "osac"))
            .job_template(surveyed(
                "survey-and-ask",
                true,
                vec![text_question("region", false, "eu-1")],
            ))
            .job_template(surveyed(
                "survey-declares-key",
                true,
                vec![text_question(IDEMPOTENCY_KEY_VAR, false, "")],
            ))
    })
    .await;
    for envelope in Envelope::ALL {
        for template in ["ask-only", "survey-and-ask", "survey-declares-key"] {
            let p = AapProvider::builder(client(&server))
                .templates(TemplateNames::explicit(template, template))
                .envelope(envelope)
                .build();
            let key = IdempotencyKey::new(format!("pk1-uid-subnet-a-p-{envelope}-{template}"));
            let ctx = LaunchContext::new().with_idempotency_key(key.clone());
            let launched = p.trigger_provision(&subnet(), &ctx).await.unwrap();
            assert_eq!(
                launched.initial_state,
                JobState::Pending,
                "{envelope} {template}: {}",
                launched.message
            );
            let record: Value =
                serde_json::from_str(&job(&server, &launched.job_id).extra_vars).unwrap();
            assert_eq!(
                record[IDEMPOTENCY_KEY_VAR],
                key.as_str(),
                "{envelope} {template}"
            );
            assert!(
                record.get(envelope.variable()).is_some(),
                "{envelope} {template}"
            );
            let found = p
                .find_job_by_idempotency_key(&subnet(), &JobType::Provision, &key)
                .await
                .unwrap()
                .expect("found by key");
            assert_eq!(found.job_id, launched.job_id, "{envelope} {template}");
        }
    }
    // The survey default of a question the launch did not answer joins the record too.
    let record: Value = serde_json::from_str(
        &server
            .aap()
            .jobs()
            .into_iter()
            .find(|j| j.name == "survey-and-ask")
            .unwrap()
            .extra_vars,
    )
    .unwrap();
    assert_eq!(record["region"], "eu-1");
}

#[tokio::test]
async fn a_survey_without_ask_variables_keeps_only_the_key_so_the_provider_refuses_it() {
    // A survey question can take the key (a string) but not the envelope (an object), so a
    // survey-only template would run the playbook without its resource: refused before launch.
    let server = server_with(Mode::Awx, |b| {
        b.job_template(surveyed(
            "survey-only",
            false,
            vec![text_question(IDEMPOTENCY_KEY_VAR, false, "")],
        ))
    })
    .await;
    let p = AapProvider::builder(client(&server))
        .templates(TemplateNames::explicit("survey-only", "survey-only"))
        .envelope(Envelope::OsacJobVars)
        .build();
    let ctx = LaunchContext::new().with_idempotency_key(IdempotencyKey::new("pk1-k"));
    let err = p.trigger_provision(&subnet(), &ctx).await.unwrap_err();
    assert!(
        provkit_lifecycle::ErrorChain(&err)
            .to_string()
            .contains("ask_variables_on_launch"),
        "{err}"
    );
    assert!(server.aap().jobs().is_empty());
}
