//! Fault injection: before/after the state change, N-th call, seeded fractions, every action.

use std::time::{Duration, SystemTime};

use provkit_testing::fake_aap::{Fault, FaultAction, Mode, RetryAfter, Trigger};
use serde_json::json;

use crate::common::{ADMIN, Auth, client, observed_fixtures, send, start};

const LAUNCH: &str = "/api/*/job_templates/*/launch/";

async fn post_launch(c: &reqwest::Client, base: &str) -> Result<reqwest::Response, reqwest::Error> {
    c.post(format!("{base}/api/v2/job_templates/9/launch/"))
        .bearer_auth(ADMIN)
        .header("content-type", "application/json")
        .body(r#"{"extra_vars":{"marker":"x1"}}"#)
        .send()
        .await
}

#[tokio::test]
async fn before_faults_change_nothing_after_faults_lose_the_response() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let aap = server.aap();
    // Before: 503 HTML, no job.
    let f = aap.add_fault(Fault::new("POST", LAUNCH, FaultAction::gateway_html(503)));
    let r = post_launch(&c, &b).await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(r.text().await.unwrap().contains("503 Service Unavailable"));
    assert!(aap.jobs().is_empty());
    assert_eq!(aap.launch_count(9), 0);
    aap.remove_fault(f);
    // After + reset: the job exists, the client sees a connection error.
    let f = aap.add_fault(Fault::new("POST", LAUNCH, FaultAction::ConnectionReset).after());
    let err = post_launch(&c, &b).await.unwrap_err();
    assert!(!err.is_status(), "{err}");
    assert_eq!(aap.jobs().len(), 1);
    assert_eq!(aap.launch_count(9), 1);
    assert_eq!(aap.jobs()[0].extra_vars, "{\"marker\": \"x1\"}");
    assert_eq!(aap.fault_hits(f), 1);
    assert_eq!(aap.counters().resets(), 1);
    aap.clear_faults();
    // After + 500: job created, the response is a JSON 500.
    aap.add_fault(Fault::new("POST", LAUNCH, FaultAction::server_error()).after());
    let r = post_launch(&c, &b).await.unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap(),
        json!({"detail": "A server error has occurred."})
    );
    assert_eq!(aap.jobs().len(), 2);
    aap.clear_faults();
    // After + malformed JSON: job created, body unparsable.
    aap.add_fault(Fault::new("POST", LAUNCH, FaultAction::MalformedJson).after());
    let r = post_launch(&c, &b).await.unwrap();
    assert_eq!(r.status(), 201);
    assert!(serde_json::from_str::<serde_json::Value>(&r.text().await.unwrap()).is_err());
    assert_eq!(aap.jobs().len(), 3);
    aap.clear_faults();
    // After + truncated: body is a prefix of valid JSON.
    aap.add_fault(Fault::new("GET", "/api/v2/jobs/1/", FaultAction::TruncatedJson).after());
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/1/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.json.is_null() && r.text.starts_with("{\""));
    aap.clear_faults();
    // The server still serves normally; the lost launch is findable by template and time.
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/?job_template=9&order_by=-id"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.json["count"], 3);
}

#[tokio::test]
async fn retry_after_in_seconds_and_http_date() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let aap = server.aap();
    aap.add_fault(
        Fault::new(
            "GET",
            "/api/v2/jobs/*",
            FaultAction::too_many_requests(RetryAfter::Seconds(7)),
        )
        .trigger(Trigger::Nth(1)),
    );
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    aap.add_fault(Fault::new(
        "GET",
        "/api/v2/ping/",
        FaultAction::too_many_requests(RetryAfter::Date(when)),
    ));
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!((r.status, r.header("retry-after")), (429, Some("7")));
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "only the first call");
    let r = send(&c, "GET", &format!("{b}/api/v2/ping/"), Auth::None, None).await;
    assert_eq!(r.status, 429);
    assert_eq!(
        httpdate::parse_http_date(r.header("retry-after").unwrap()).unwrap(),
        when
    );
}

#[tokio::test]
async fn first_n_fraction_latency_and_migration_redirect() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let aap = server.aap();
    let f = aap.add_fault(
        Fault::new("GET", "/api/v2/me/", FaultAction::gateway_html(502))
            .trigger(Trigger::FirstN(2)),
    );
    let codes: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(
                send(
                    &c,
                    "GET",
                    &format!("{b}/api/v2/me/"),
                    Auth::Bearer(ADMIN),
                    None,
                )
                .await
                .status,
            );
        }
        v
    };
    assert_eq!(codes, vec![502, 502, 200, 200]);
    assert_eq!(aap.fault_hits(f), 2);
    aap.clear_faults();
    // A seeded fraction: the same seed gives the same pattern.
    let pattern = |seed: u64| async move {
        let (server, _) = start({
            let mut fx = observed_fixtures(Mode::Awx);
            fx.settings.seed = seed;
            fx
        })
        .await;
        server.aap().add_fault(
            Fault::new("GET", "/api/v2/ping/", FaultAction::gateway_html(504))
                .trigger(Trigger::Fraction(0.5)),
        );
        let c = client();
        let mut v = Vec::new();
        for _ in 0..40 {
            v.push(
                send(
                    &c,
                    "GET",
                    &format!("{}/api/v2/ping/", server.base_url()),
                    Auth::None,
                    None,
                )
                .await
                .status
                    == 504,
            );
        }
        v
    };
    let a = pattern(42).await;
    assert_eq!(a, pattern(42).await);
    let hits = a.iter().filter(|x| **x).count();
    assert!((5..=35).contains(&hits), "{hits}");
    // Latency (before) still answers normally.
    aap.add_fault(Fault::new(
        "GET",
        "/api/v2/ping/",
        FaultAction::Latency(Duration::from_millis(50)),
    ));
    assert_eq!(
        send(&c, "GET", &format!("{b}/api/v2/ping/"), Auth::None, None)
            .await
            .status,
        200
    );
    aap.clear_faults();
    aap.add_fault(Fault::new("GET", "/api/v2/ping/", FaultAction::migrating()));
    let r = send(&c, "GET", &format!("{b}/api/v2/ping/"), Auth::None, None).await;
    assert_eq!(
        (r.status, r.header("location")),
        (302, Some("/migrations_notran/"))
    );
}

#[tokio::test]
async fn purge_and_request_log() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let aap = server.aap();
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"a":1}}"#),
    )
    .await;
    let id = r.json["id"].as_u64().unwrap();
    aap.purge_job(id).unwrap();
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/{id}/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    assert!(aap.purge_job(id).is_err());
    let log = aap.requests();
    let launch = log.iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(launch.path, "/api/v2/job_templates/9/launch/");
    assert_eq!(launch.body, r#"{"extra_vars":{"a":1}}"#);
    assert_eq!(launch.status, 201);
    let auth = launch
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .unwrap();
    assert_eq!(auth.1, "Bearer <redacted>");
    assert!(!format!("{log:?}").contains(ADMIN));
    // Bounded ring, and off.
    aap.set_request_log_capacity(3);
    for _ in 0..10 {
        send(
            &c,
            "GET",
            &format!("{b}/api/v2/ping/?n=1"),
            Auth::None,
            None,
        )
        .await;
    }
    assert_eq!(aap.requests().len(), 3);
    assert_eq!(aap.requests()[2].query, "n=1");
    aap.set_request_log_capacity(0);
    aap.clear_requests();
    send(&c, "GET", &format!("{b}/api/v2/ping/"), Auth::None, None).await;
    assert!(aap.requests().is_empty());
    let counters = aap.counters();
    assert_eq!(
        counters.endpoint(provkit_testing::fake_aap::Endpoint::Launch),
        1
    );
    assert!(counters.endpoint(provkit_testing::fake_aap::Endpoint::Ping) >= 11);
    assert_eq!(counters.status_class(4), 1);
}

/// The request observer sees a launch at each phase; abandoning it once handled leaves the
/// job created and the client without an answer (a client that died waiting), abandoning it
/// once received creates nothing.
#[tokio::test]
async fn the_observer_sees_each_phase_and_abandons_a_request() {
    use provkit_testing::observe::{Phase, Verdict};
    use std::sync::{Arc, Mutex};

    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let aap = server.aap();
    type Seen = Vec<(String, Phase, Option<u16>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let abandon_at: Arc<Mutex<Option<Phase>>> = Arc::default();
    let (s, a) = (seen.clone(), abandon_at.clone());
    aap.observe(Arc::new(move |req, phase| {
        s.lock()
            .unwrap()
            .push((req.method.to_owned(), phase, req.status));
        if req.path.ends_with("/launch/") && req.method == "POST" {
            assert!(String::from_utf8_lossy(req.body).contains("x1"));
            if *a.lock().unwrap() == Some(phase) {
                return Verdict::Abandon;
            }
        }
        Verdict::Continue
    }));
    let c = client();
    let b = server.base_url();
    assert_eq!(post_launch(&c, &b).await.unwrap().status(), 201);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("POST".to_owned(), Phase::Received, None),
            ("POST".to_owned(), Phase::Handled, Some(201)),
            ("POST".to_owned(), Phase::Answered, Some(201)),
        ]
    );
    let within = |f| tokio::time::timeout(Duration::from_millis(300), f);
    *abandon_at.lock().unwrap() = Some(Phase::Received);
    assert!(within(post_launch(&c, &b)).await.is_err());
    assert_eq!(aap.jobs().len(), 1, "abandoned when received: no job");
    *abandon_at.lock().unwrap() = Some(Phase::Handled);
    assert!(within(post_launch(&client(), &b)).await.is_err());
    assert_eq!(
        aap.jobs().len(),
        2,
        "abandoned when handled: the job exists"
    );
    aap.clear_observer();
    assert_eq!(post_launch(&client(), &b).await.unwrap().status(), 201);
}

/// AWX (uWSGI behind nginx) runs a view to the end after its client left; the fake too: a
/// launch held up longer than the client waits still creates its job.
#[tokio::test]
async fn a_launch_whose_client_gave_up_still_creates_its_job() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let aap = server.aap();
    aap.add_fault(Fault::new(
        "POST",
        LAUNCH,
        FaultAction::Latency(Duration::from_millis(600)),
    ));
    let gave_up = tokio::time::timeout(
        Duration::from_millis(150),
        post_launch(&client(), &server.base_url()),
    )
    .await;
    assert!(gave_up.is_err(), "the client gave up before the answer");
    assert!(aap.jobs().is_empty(), "not yet handled");
    // The request is handled once its delay is over, without a client.
    let mut waited = Duration::ZERO;
    while aap.jobs().is_empty() && waited < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
    assert_eq!(aap.jobs().len(), 1, "the launch created its job");
    assert_eq!(aap.launch_count(9), 1);
}
