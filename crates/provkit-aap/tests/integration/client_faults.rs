//! aap-api.md test cases 29, 39, 41 and the fault-injection modes, before and after the state change.

use std::time::{Duration, SystemTime};

use provkit_aap::{Error, JobKind, LaunchRequest};
use provkit_testing::fake_aap::{Fault, FaultAction, Mode, RetryAfter, Trigger};

use crate::support::{builder, client, requests_to, server};

async fn launched_job(server: &provkit_testing::fake_aap::FakeAapServer) -> u64 {
    let c = client(server);
    let t = c.get_template("provision-job").await.unwrap();
    c.launch(&t, &LaunchRequest::default()).await.unwrap().id
}

#[tokio::test]
async fn case29_transient_gateway_errors_and_resets_are_retried_for_gets() {
    let actions = [
        FaultAction::gateway_html(502),
        FaultAction::gateway_html(503),
        FaultAction::gateway_html(504),
        FaultAction::ConnectionReset,
        FaultAction::too_many_requests(RetryAfter::Seconds(0)),
        FaultAction::too_many_requests(RetryAfter::Date(SystemTime::now())),
    ];
    for action in actions {
        let server = server(Mode::Awx).await;
        let id = launched_job(&server).await;
        let client = client(&server);
        let fault = server
            .aap()
            .add_fault(Fault::new("GET", "*/jobs/*", action.clone()).trigger(Trigger::FirstN(2)));
        let job = client
            .get_job(id)
            .await
            .unwrap_or_else(|e| panic!("{action:?}: {e}"));
        assert_eq!(job.id, id);
        assert_eq!(server.aap().fault_hits(fault), 2, "{action:?}");
        assert_eq!(
            requests_to(&server, &format!("/jobs/{id}/")).len(),
            3,
            "{action:?}: two failures then success"
        );
    }
}

#[tokio::test]
async fn case29_retry_after_seconds_is_honoured() {
    let server = server(Mode::Awx).await;
    let id = launched_job(&server).await;
    let client = builder(&server)
        .retry(crate::support::fast_retry().max_backoff(Duration::from_secs(5)))
        .build()
        .unwrap();
    server.aap().add_fault(
        Fault::new(
            "GET",
            "*/jobs/*",
            FaultAction::too_many_requests(RetryAfter::Seconds(1)),
        )
        .trigger(Trigger::Nth(1)),
    );
    client.get_job(id).await.unwrap();
    let hits = requests_to(&server, &format!("/jobs/{id}/"));
    assert_eq!(hits.len(), 2);
    let waited = hits[1].at - hits[0].at;
    assert!(
        waited >= chrono::Duration::milliseconds(900),
        "waited only {waited}"
    );
}

#[tokio::test]
async fn case29_retry_after_beyond_the_budget_gives_up_with_the_rate_limit() {
    let server = server(Mode::Awx).await;
    let id = launched_job(&server).await;
    let client = client(&server);
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::too_many_requests(RetryAfter::Seconds(120)),
    ));
    let err = client.get_job(id).await.unwrap_err();
    assert!(matches!(err, Error::RateLimited { .. }), "{err:?}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(120)));
    assert_eq!(requests_to(&server, &format!("/jobs/{id}/")).len(), 1);
}

#[tokio::test]
async fn case29_gives_up_after_the_retry_limit_with_the_last_error_summarised() {
    let server = server(Mode::Awx).await;
    let id = launched_job(&server).await;
    let client = client(&server);
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::gateway_html(502),
    ));
    let err = client.get_job(id).await.unwrap_err();
    assert!(matches!(err, Error::Server { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("502 Bad Gateway") && !text.contains("<html>"),
        "{text}"
    );
    assert_eq!(
        requests_to(&server, &format!("/jobs/{id}/")).len(),
        5,
        "1 + 4 retries"
    );
}

#[tokio::test]
async fn timeouts_are_retried_for_gets() {
    let server = server(Mode::Awx).await;
    let id = launched_job(&server).await;
    let client = builder(&server)
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    server.aap().add_fault(
        Fault::new(
            "GET",
            "*/jobs/*",
            FaultAction::Latency(Duration::from_secs(2)),
        )
        .trigger(Trigger::Nth(1)),
    );
    assert_eq!(client.get_job(id).await.unwrap().id, id);
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::Latency(Duration::from_secs(2)),
    ));
    let err = builder(&server)
        .timeout(Duration::from_millis(100))
        .retry(provkit_aap::RetryConfig::disabled())
        .build()
        .unwrap()
        .get_job(id)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
}

#[tokio::test]
async fn launch_is_never_retried_and_outcome_certainty_matches_the_fault() {
    // (action, strike after?, job created?, outcome unknown?)
    let cases: Vec<(FaultAction, bool, u64, bool)> = vec![
        (FaultAction::gateway_html(502), false, 0, true),
        (FaultAction::gateway_html(503), false, 0, true),
        (
            FaultAction::too_many_requests(RetryAfter::Seconds(1)),
            false,
            0,
            false,
        ),
        (FaultAction::ConnectionReset, false, 0, true),
        (FaultAction::server_error(), false, 0, true),
        (FaultAction::migrating(), false, 0, false),
        (FaultAction::gateway_html(504), true, 1, true),
        (FaultAction::ConnectionReset, true, 1, true),
        (FaultAction::MalformedJson, true, 1, true),
        (FaultAction::TruncatedJson, true, 1, true),
        (FaultAction::Latency(Duration::from_secs(2)), true, 1, true),
    ];
    for (action, after, created, unknown) in cases {
        let server = server(Mode::Awx).await;
        let client = builder(&server)
            .timeout(Duration::from_millis(500))
            .build()
            .unwrap();
        let t = client.get_template("provision-job").await.unwrap();
        let fault = Fault::new("POST", "*/launch/", action.clone());
        server
            .aap()
            .add_fault(if after { fault.after() } else { fault });
        let err = client
            .launch(&t, &LaunchRequest::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.is_outcome_unknown(),
            unknown,
            "{action:?} after={after}: {err:?}"
        );
        // "After" faults create a job per request, so a retry would show as a second job; "before"
        // faults are visible in the request log (which records a request once it is answered).
        crate::support::eventually(|| async { server.aap().launch_count(t.id) == created }).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            server.aap().launch_count(t.id),
            created,
            "{action:?}: a launch POST is never retried"
        );
        let logged = requests_to(&server, "/launch/").len();
        assert!(
            if after { logged <= 1 } else { logged == 1 },
            "{action:?}: {logged} launch requests"
        );
    }
}

#[tokio::test]
async fn malformed_json_on_a_get_is_a_decode_error() {
    let server = server(Mode::Awx).await;
    let id = launched_job(&server).await;
    let client = client(&server);
    server
        .aap()
        .add_fault(Fault::new("GET", "*/jobs/*", FaultAction::MalformedJson));
    let err = client.get_unified(JobKind::Job, id).await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert!(err.to_string().len() < 600);
}

#[tokio::test]
async fn case39_errors_name_status_method_path_and_request_id() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    client.api_base().await.unwrap();
    let err = client.get_job(424_242).await.unwrap_err();
    let ctx = err.context().unwrap();
    assert_eq!(ctx.method, http::Method::GET);
    assert_eq!(ctx.path, "/api/v2/jobs/424242/");
    assert_eq!(err.status().map(|s| s.as_u16()), Some(404));
    let request_id = err
        .request_id()
        .expect("the fake sends X-API-Request-Id")
        .to_owned();
    let text = err.to_string();
    for part in ["GET", "/api/v2/jobs/424242/", "404", request_id.as_str()] {
        assert!(text.contains(part), "{part:?} missing from {text}");
    }
}

#[tokio::test]
async fn case41_migration_redirect_is_detected() {
    let server = server(Mode::Awx).await;
    let id = launched_job(&server).await;
    let client = client(&server);
    server
        .aap()
        .add_fault(Fault::new("GET", "*/jobs/*", FaultAction::migrating()));
    let err = client.get_job(id).await.unwrap_err();
    assert!(matches!(err, Error::Migrating { .. }), "{err:?}");
    server.aap().clear_faults();
    server.aap().add_fault(Fault::new(
        "GET",
        "*/jobs/*",
        FaultAction::Respond {
            status: 200,
            body: "<html><head><title>Upgrading</title></head><body>AWX is migrating its database</body></html>".into(),
            content_type: "text/html".into(),
            headers: vec![],
        },
    ));
    assert!(matches!(
        client.get_job(id).await.unwrap_err(),
        Error::Migrating { .. }
    ));
}

#[tokio::test]
async fn cancel_is_idempotent_and_retried_on_transient_errors() {
    let server = server(Mode::Awx).await;
    // A job that cannot finish before the cancel arrives, however slow the machine.
    let template = server
        .aap()
        .template_id("provision-job", Some("osac"))
        .unwrap();
    server
        .aap()
        .set_template_script(
            template,
            provkit_testing::fake_aap::JobScript::run_until_canceled(),
        )
        .unwrap();
    let id = launched_job(&server).await;
    let client = client(&server);
    server.aap().add_fault(
        Fault::new("POST", "*/cancel/", FaultAction::gateway_html(503)).trigger(Trigger::FirstN(1)),
    );
    assert_eq!(
        client.cancel_job(id).await.unwrap(),
        provkit_aap::CancelOutcome::Accepted
    );
    assert_eq!(requests_to(&server, "/cancel/").len(), 2);
}
