//! Issue 15: no error message of provkit-aap repeats its `source()`. Each case provokes a real
//! failure against the fake AAP over loopback, prints the whole error chain and checks that no
//! message contains the message of an error further down its chain.

use std::error::Error as StdError;
use std::time::Duration;

use provkit_aap::{AapClient, AapProvider, CircuitBreakerConfig, RetryConfig};
use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    ErrorChain, IdempotencyKey, LaunchContext, ProvisioningProvider, ResourceMeta, ResourceView,
};
use provkit_testing::fake_aap::{FakeAapServer, Fault, FaultAction, JobScript, Mode};

use crate::support::{builder, server, template_id};

/// Every message of `err`'s chain, outermost first.
fn messages(err: &(dyn StdError + 'static)) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        out.push(e.to_string());
        current = e.source();
    }
    out
}

/// Prints the chain and fails when a message repeats one below it.
fn assert_no_repeats(case: &str, err: &(dyn StdError + 'static)) {
    let chain = messages(err);
    println!("{case}: {}", ErrorChain(err));
    assert!(chain.len() >= 2, "{case}: a chain to check: {chain:?}");
    for (i, outer) in chain.iter().enumerate() {
        for inner in &chain[i + 1..] {
            assert!(
                inner.is_empty() || !outer.contains(inner.as_str()),
                "{case}: {outer:?} repeats its source {inner:?}\n{}",
                ErrorChain(err)
            );
        }
    }
}

fn resource() -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "chain".into(),
            namespace: Some("default".into()),
            uid: "uid-chain".into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "Subnet", "metadata": {"name": "chain", "uid": "uid-chain"}, "spec": {}}),
    )
}

fn quiet_client(server: &FakeAapServer) -> AapClient {
    builder(server)
        .retry(RetryConfig::disabled())
        .circuit_breaker(CircuitBreakerConfig::disabled())
        .build()
        .unwrap()
}

fn provider(server: &FakeAapServer) -> AapProvider {
    AapProvider::with_templates(quiet_client(server), "provision-job", "deprovision-job")
}

async fn running_job(server: &FakeAapServer, p: &AapProvider) -> String {
    server
        .aap()
        .set_template_script(
            template_id(server, "provision-job"),
            JobScript::run_until_canceled(),
        )
        .unwrap();
    p.trigger_provision(&resource(), &LaunchContext::new())
        .await
        .unwrap()
        .job_id
}

#[tokio::test]
async fn no_message_in_an_error_chain_repeats_its_source() {
    let r = resource();
    let ctx = LaunchContext::new();

    // Provider errors.
    let server = server(Mode::Awx).await;
    let missing = AapProvider::with_templates(quiet_client(&server), "no-such-template", "x");
    let err = missing.trigger_provision(&r, &ctx).await.unwrap_err();
    assert_no_repeats("missing template", &err);

    let p = provider(&server);
    let id = running_job(&server, &p).await;
    let cases = [
        (
            "launch 400",
            "POST",
            "*/launch/",
            FaultAction::json(400, &serde_json::json!({"extra_vars": ["bad"]})),
        ),
        (
            "launch 502",
            "POST",
            "*/launch/",
            FaultAction::gateway_html(502),
        ),
        (
            "launch reset",
            "POST",
            "*/launch/",
            FaultAction::ConnectionReset,
        ),
    ];
    for (case, method, path, action) in cases {
        let fault = server.aap().add_fault(Fault::new(method, path, action));
        let err = p.trigger_provision(&r, &ctx).await.unwrap_err();
        assert_no_repeats(case, &err);
        server.aap().remove_fault(fault);
    }
    let cases = [
        ("poll 500", FaultAction::server_error()),
        ("poll undecodable", FaultAction::MalformedJson),
        (
            "poll 404 page",
            FaultAction::proxied_json(404, &serde_json::json!({"detail": "Not found."})),
        ),
    ];
    for (case, action) in cases {
        let fault = server
            .aap()
            .add_fault(Fault::new("GET", "*/jobs/*/", action));
        let err = p.provision_status(&r, &id).await.unwrap_err();
        assert_no_repeats(case, &err);
        // The status of a running job read during the deprovision fails the same way.
        let jobs = [JobStatus::new(
            id.clone(),
            JobType::Provision,
            JobState::Running,
            chrono::DateTime::UNIX_EPOCH,
        )];
        let err = p.trigger_deprovision(&r, &jobs, &ctx).await.unwrap_err();
        assert_no_repeats(&format!("deprovision after {case}"), &err);
        server.aap().remove_fault(fault);
    }
    let purged = p.provision_status(&r, "987654").await.unwrap_err();
    assert_no_repeats("purged job", &purged);
    let fault =
        server
            .aap()
            .add_fault(Fault::new("POST", "*/cancel/", FaultAction::server_error()));
    let jobs = [JobStatus::new(
        id.clone(),
        JobType::Provision,
        JobState::Running,
        chrono::DateTime::UNIX_EPOCH,
    )];
    let err = p.trigger_deprovision(&r, &jobs, &ctx).await.unwrap_err();
    assert_no_repeats("cancel 500", &err);
    server.aap().remove_fault(fault);

    // The idempotency lookup stopped by the list cap.
    let capped = AapProvider::with_templates(
        builder(&server).max_lookup_items(1).build().unwrap(),
        "provision-job",
        "deprovision-job",
    );
    let key = IdempotencyKey::new("pk1-uid-chain-p-00000000000000aa");
    for _ in 0..2 {
        p.trigger_provision(&r, &ctx).await.unwrap();
    }
    let err = capped
        .find_job_by_idempotency_key(&r, &JobType::Provision, &key)
        .await
        .unwrap_err();
    assert_no_repeats("lookup at the list cap", &err);

    // AAP unreachable.
    let unreachable = AapProvider::with_templates(
        AapClient::builder("http://127.0.0.1:9")
            .base_path("/api/v2/")
            .retry(RetryConfig::disabled())
            .timeout(Duration::from_secs(5))
            .proxy_from_env(false)
            .build()
            .unwrap(),
        "provision-job",
        "deprovision-job",
    );
    let err = unreachable.provision_status(&r, "5").await.unwrap_err();
    assert_no_repeats("unreachable poll", &err);
    let err = unreachable.trigger_provision(&r, &ctx).await.unwrap_err();
    assert_no_repeats("unreachable launch", &err);

    // Client errors.
    let client = quiet_client(&server);
    server
        .aap()
        .add_fault(Fault::new("GET", "*/jobs/*/", FaultAction::TruncatedJson));
    let err = client.get_job(id.parse().unwrap()).await.unwrap_err();
    assert_no_repeats("client decode", &err);
    server.aap().clear_faults();
    let fresh = quiet_client(&server);
    server.aap().add_fault(Fault::new(
        "GET",
        "/api/",
        FaultAction::json(404, &serde_json::json!({"detail": "Not found."})),
    ));
    let err = fresh.ping().await.unwrap_err();
    assert_no_repeats("discovery", &err);
}
