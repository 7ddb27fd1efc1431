//! Feature `metrics`: a scripted run against the fake AAP over loopback, then the encoded
//! registry is scraped and its values checked.

use std::time::Duration;

use provkit_aap::metrics::{AapMetrics, Registry};
use provkit_aap::{CircuitBreakerConfig, CircuitState, LaunchRequest};
use provkit_testing::fake_aap::{Fault, FaultAction, Mode, RetryAfter, Trigger};

use crate::support::{builder, server};

/// The value of the sample `series` (name and labels exactly as encoded), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

#[tokio::test]
async fn requests_latency_retries_rate_limits_and_the_circuit_are_scraped() {
    let server = server(Mode::Awx).await;
    let mut registry = Registry::default();
    let client = builder(&server)
        .metrics(AapMetrics::register(&mut registry))
        .circuit_breaker(
            CircuitBreakerConfig::default()
                .failure_threshold(3)
                .cool_down(Duration::from_secs(600)),
        )
        .build()
        .unwrap();
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            r#"provkit_aap_circuit_breaker_state{state="closed"}"#
        ),
        Some(1.0)
    );

    // One lookup, one launch, three polls.
    let t = client.get_template("provision-job").await.unwrap();
    let id = client
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap()
        .id;
    for _ in 0..3 {
        client.get_job(id).await.unwrap();
    }
    // A 503 with `Retry-After: 0`, retried once.
    server.aap().add_fault(
        Fault::new(
            "GET",
            "*/jobs/*",
            FaultAction::service_unavailable(RetryAfter::Seconds(0)),
        )
        .trigger(Trigger::Nth(1)),
    );
    client.get_job(id).await.unwrap();
    server.aap().clear_faults();
    let text = scrape(&registry);
    let checks = [
        (
            r#"provkit_aap_requests_total{endpoint="template_lookup",method="GET",status="200"}"#,
            1.0,
        ),
        (
            r#"provkit_aap_requests_total{endpoint="launch",method="POST",status="201"}"#,
            1.0,
        ),
        (
            r#"provkit_aap_requests_total{endpoint="job",method="GET",status="200"}"#,
            4.0,
        ),
        (
            r#"provkit_aap_requests_total{endpoint="job",method="GET",status="503"}"#,
            1.0,
        ),
        (
            r#"provkit_aap_request_duration_seconds_count{endpoint="job"}"#,
            5.0,
        ),
        (
            r#"provkit_aap_request_duration_seconds_count{endpoint="launch"}"#,
            1.0,
        ),
        (r#"provkit_aap_retries_total{endpoint="job"}"#, 1.0),
        (r#"provkit_aap_rate_limited_total{endpoint="job"}"#, 1.0),
    ];
    for (series, want) in checks {
        assert_eq!(sample(&text, series), Some(want), "{series} in\n{text}");
    }
    assert_eq!(
        sample(&text, r#"provkit_aap_circuit_breaker_state{state="open"}"#),
        Some(0.0)
    );

    // An outage: three failed attempts open the circuit; the fourth is refused, as are later calls.
    server
        .aap()
        .add_fault(Fault::any_method("*", FaultAction::gateway_html(502)));
    assert!(client.get_job(id).await.unwrap_err().is_circuit_open());
    assert!(client.get_job(id).await.unwrap_err().is_circuit_open());
    let text = scrape(&registry);
    let checks = [
        (
            r#"provkit_aap_requests_total{endpoint="job",method="GET",status="502"}"#,
            3.0,
        ),
        (r#"provkit_aap_retries_total{endpoint="job"}"#, 4.0),
        (
            r#"provkit_aap_circuit_rejections_total{endpoint="job"}"#,
            2.0,
        ),
        (r#"provkit_aap_circuit_breaker_state{state="open"}"#, 1.0),
        (r#"provkit_aap_circuit_breaker_state{state="closed"}"#, 0.0),
        (
            r#"provkit_aap_circuit_breaker_transitions_total{state="open"}"#,
            1.0,
        ),
        (
            r#"provkit_aap_request_duration_seconds_count{endpoint="job"}"#,
            8.0,
        ),
    ];
    for (series, want) in checks {
        assert_eq!(sample(&text, series), Some(want), "{series} in\n{text}");
    }
    // Labels never carry ids or names.
    assert!(!text.contains(&format!("=\"{id}\"")));
    assert!(!text.contains("provision-job"));
}

#[tokio::test]
async fn two_registries_in_one_process_do_not_share_counts() {
    let server = server(Mode::Awx).await;
    let (mut a, mut b) = (Registry::default(), Registry::default());
    let ca = builder(&server)
        .metrics(AapMetrics::register(&mut a))
        .build()
        .unwrap();
    let _cb = builder(&server)
        .metrics(AapMetrics::register(&mut b))
        .build()
        .unwrap();
    ca.ping().await.unwrap();
    let series = r#"provkit_aap_requests_total{endpoint="ping",method="GET",status="200"}"#;
    assert_eq!(sample(&scrape(&a), series), Some(1.0));
    assert_eq!(sample(&scrape(&b), series), None);
}

#[tokio::test]
async fn the_breaker_gauge_is_the_state_at_scrape_time_not_at_the_last_request() {
    let server = server(Mode::Awx).await;
    let mut registry = Registry::default();
    let client = builder(&server)
        .metrics(AapMetrics::register(&mut registry))
        .circuit_breaker(
            CircuitBreakerConfig::default()
                .failure_threshold(1)
                .cool_down(Duration::from_millis(200))
                .probe_interval(Duration::from_secs(600)),
        )
        .build()
        .unwrap();
    let state = |text: &str, state: &str| {
        sample(
            text,
            &format!(r#"provkit_aap_circuit_breaker_state{{state="{state}"}}"#),
        )
    };
    let transitions = |text: &str, state: &str| {
        sample(
            text,
            &format!(r#"provkit_aap_circuit_breaker_transitions_total{{state="{state}"}}"#),
        )
    };
    server
        .aap()
        .add_fault(Fault::any_method("*", FaultAction::ConnectionReset));
    client.ping().await.unwrap_err();
    assert_eq!(client.circuit_state(), CircuitState::Open);
    let text = scrape(&registry);
    assert_eq!(state(&text, "open"), Some(1.0), "{text}");
    let sent = server.aap().counters().total();

    // No request is made: the cool-down running out alone turns the gauge half-open.
    crate::support::eventually(|| async { state(&scrape(&registry), "half_open") == Some(1.0) })
        .await;
    let text = scrape(&registry);
    assert_eq!(state(&text, "open"), Some(0.0), "{text}");
    assert_eq!(state(&text, "closed"), Some(0.0), "{text}");
    assert_eq!(client.circuit_state(), CircuitState::HalfOpen);
    assert_eq!(server.aap().counters().total(), sent, "nothing was sent");
    assert_eq!(transitions(&text, "half_open"), None, "no probe yet");

    // The probe succeeds: closed.
    server.aap().clear_faults();
    client.ping().await.unwrap();
    let text = scrape(&registry);
    assert_eq!(state(&text, "closed"), Some(1.0), "{text}");
    assert_eq!(transitions(&text, "half_open"), Some(1.0), "{text}");
    assert_eq!(transitions(&text, "closed"), Some(1.0), "{text}");

    // The client gone, the gauge keeps the state it last entered.
    drop(client);
    assert_eq!(state(&scrape(&registry), "closed"), Some(1.0));
}

/// A launch whose send-by time passed in the client's rate limiter is counted with status
/// `not_sent` and no latency: it never reached AAP.
#[tokio::test]
async fn a_launch_not_sent_for_its_send_by_time_is_counted_as_not_sent() {
    let server = server(Mode::Awx).await;
    let mut registry = Registry::default();
    let client = builder(&server)
        .metrics(AapMetrics::register(&mut registry))
        .rate_limit(provkit_aap::RateLimit::new(2.0, 1))
        .build()
        .unwrap();
    let t = client.get_template("provision-job").await.unwrap();
    let request =
        LaunchRequest::default().send_by(tokio::time::Instant::now() + Duration::from_millis(100));
    let err = client.launch(&t, &request).await.unwrap_err();
    assert!(
        matches!(err, provkit_aap::Error::SendByPassed { .. }),
        "{err:?}"
    );
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            r#"provkit_aap_requests_total{endpoint="launch",method="POST",status="not_sent"}"#,
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"provkit_aap_request_duration_seconds_count{endpoint="launch"}"#
        )
        .unwrap_or(0.0),
        0.0,
        "{text}"
    );
}
