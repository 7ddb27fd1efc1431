//! The negative template cache over loopback: not found, forbidden and ambiguous lookups are
//! answered from memory for the TTL (on the client's clock), then asked again; server errors are
//! never remembered.

use std::sync::Arc;
use std::time::Duration;

use provkit_aap::{AapClient, Error};
use provkit_core::{Clock, ManualClock};
use provkit_testing::fake_aap::{FakeAapServer, Fault, FaultAction, JobTemplateSpec, Mode};

use crate::support::{builder, requests_to, server, server_with};

const LOOKUPS: &str = "/unified_job_templates/";

fn client_at(server: &FakeAapServer, clock: &Arc<ManualClock>, ttl: Duration) -> AapClient {
    builder(server)
        .clock(clock.clone())
        .template_miss_ttl(ttl)
        .retry(provkit_aap::RetryConfig::disabled())
        .build()
        .unwrap()
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(provkit_core::SystemClock.now()))
}

#[tokio::test]
async fn not_found_forbidden_and_ambiguous_are_remembered_for_the_ttl() {
    let server = server_with(Mode::Awx, |b| {
        b.organization("other")
            .job_template(JobTemplateSpec::new("twin", "osac"))
            .job_template(JobTemplateSpec::new("twin", "other"))
    })
    .await;
    let clock = clock();
    let client = client_at(&server, &clock, Duration::from_secs(10));
    type Check = fn(&Error) -> bool;
    let cases: [(&str, Option<FaultAction>, Check); 3] = [
        ("no-such-template", None, |e| {
            matches!(e, Error::TemplateNotFound { .. })
        }),
        (
            "provision-job",
            Some(FaultAction::json(
                403,
                &serde_json::json!({"detail": "You do not have permission to perform this action."}),
            )),
            |e| matches!(e, Error::Forbidden { .. }),
        ),
        ("twin", None, |e| {
            matches!(e, Error::AmbiguousTemplate { .. })
        }),
    ];
    for (name, fault, check) in cases {
        let fault = fault.map(|f| {
            server
                .aap()
                .add_fault(Fault::new("GET", "*/unified_job_templates/", f))
        });
        let asked = |s: &FakeAapServer| {
            requests_to(s, LOOKUPS)
                .iter()
                .filter(|q| q.query.contains(&format!("name={name}&")))
                .count()
        };
        let first = client.get_template(name).await.unwrap_err();
        assert!(check(&first), "{name}: {first:?}");
        if let Some(id) = fault {
            server.aap().remove_fault(id); // the answer changed, but the miss is remembered
        }
        clock.advance(Duration::from_secs(9));
        for _ in 0..5 {
            let again = client.clone().get_template(name).await.unwrap_err();
            assert_eq!(again.to_string(), first.to_string(), "{name}");
        }
        assert_eq!(
            asked(&server),
            1,
            "{name}: answered from the negative cache"
        );
        clock.advance(Duration::from_secs(1));
        let after = client.get_template(name).await;
        assert_eq!(asked(&server), 2, "{name}: asked again after the TTL");
        if name == "provision-job" {
            assert!(after.is_ok(), "{after:?}");
        } else {
            assert!(after.is_err_and(|e| check(&e)), "{name}");
        }
    }
    // `clear_template_cache` forgets misses too.
    client.clear_template_cache();
    client.get_template("no-such-template").await.unwrap_err();
    assert_eq!(
        requests_to(&server, LOOKUPS)
            .iter()
            .filter(|q| q.query.contains("name=no-such-template&"))
            .count(),
        3
    );
}

#[tokio::test]
async fn server_errors_are_never_remembered_and_a_zero_ttl_turns_the_cache_off() {
    let server = server(Mode::Awx).await;
    let clock = clock();
    let client = client_at(&server, &clock, Duration::from_secs(10));
    let fault = server.aap().add_fault(Fault::new(
        "GET",
        "*/unified_job_templates/",
        FaultAction::server_error(),
    ));
    assert!(matches!(
        client.get_template("provision-job").await.unwrap_err(),
        Error::Server { .. }
    ));
    server.aap().remove_fault(fault);
    assert!(client.get_template("provision-job").await.is_ok());

    let off = client_at(&server, &clock, Duration::ZERO);
    for _ in 0..3 {
        off.get_template("no-such-template").await.unwrap_err();
    }
    assert_eq!(
        requests_to(&server, LOOKUPS)
            .iter()
            .filter(|q| q.query.contains("name=no-such-template&"))
            .count(),
        3
    );
}
