//! The job status websocket against the fake over loopback: handshake, typed messages as
//! captured (no `waiting`, `error` without `finished`, `canceled` twice), refusals, drops and
//! resubscription, TLS with a custom CA behind the gateway path.

use std::time::Duration;

use futures::StreamExt as _;
use provkit_aap::push::{
    JobStatusStream, PushConfig, PushError, PushEvent, PushSignal, PushTransition,
    ReconnectBackoff, StatusChange,
};
use provkit_aap::{AapClient, AapJobStatus, LaunchRequest};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec, Mode};

use crate::support::{client, quick, server, server_with};

fn fast() -> PushConfig {
    PushConfig::default()
        .backoff(ReconnectBackoff::new(
            Duration::from_millis(20),
            Duration::from_millis(200),
        ))
        .handshake_timeout(Duration::from_secs(5))
}

/// The next event, failing the test after 10 s of nothing.
async fn next(stream: &mut JobStatusStream) -> PushEvent {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an event within 10 s")
        .expect("the stream never ends")
}

/// Waits for the confirmed subscription, returning what came before it.
async fn subscribed(stream: &mut JobStatusStream) -> Vec<PushEvent> {
    let mut before = Vec::new();
    loop {
        match next(stream).await {
            PushEvent::Subscribed => return before,
            other => before.push(other),
        }
    }
}

/// The status changes of `job` until its final one (and `extra` more of it after that).
async fn changes_of(stream: &mut JobStatusStream, job: u64) -> Vec<StatusChange> {
    let mut seen = Vec::new();
    loop {
        if let PushEvent::StatusChanged(change) = next(stream).await
            && change.job_id == job
        {
            let last = change.is_final();
            seen.push(change);
            if last {
                return seen;
            }
        }
    }
}

async fn launch(client: &AapClient, template: &str) -> u64 {
    let t = client.get_template(template).await.unwrap();
    client
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn subscribes_with_the_cookie_handshake_and_types_the_status_changes() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let mut stream = client.job_status_stream_with(fast());
    let before = subscribed(&mut stream).await;
    assert!(
        matches!(before.as_slice(), [PushEvent::Connected { user: Some(1) }]),
        "{before:?}"
    );
    assert_eq!(server.websocket_stats().denied, 0);
    assert_eq!(server.websocket_stats().subscribed, 1);

    let job = launch(&client, "osac-create-virtual-network").await;
    let seen = changes_of(&mut stream, job).await;
    let statuses: Vec<&str> = seen.iter().map(|c| c.status.as_str()).collect();
    assert_eq!(statuses, ["pending", "running", "successful"], "no waiting");
    let last = seen.last().unwrap();
    assert!(last.finished.is_some());
    assert_eq!(
        last.template_id,
        server.template_id("osac-create-virtual-network", Some("osac"))
    );
    // What the job detail says agrees (the message itself decides nothing).
    assert_eq!(
        client.get_job(job).await.unwrap().status,
        AapJobStatus::Successful
    );
}

#[tokio::test]
async fn error_comes_without_finished_and_canceled_twice() {
    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec {
            script: Some(JobScript::error_before_start(Duration::from_millis(50))),
            ..JobTemplateSpec::new("broken", "osac")
        })
        .job_template(JobTemplateSpec {
            script: Some(
                quick(JobScript::run_until_canceled())
                    .with_cancel_delay(Duration::from_millis(100)),
            ),
            ..JobTemplateSpec::new("forever", "osac")
        })
    })
    .await;
    let client = client(&server);
    let mut stream = client.job_status_stream_with(fast());
    subscribed(&mut stream).await;

    let broken = launch(&client, "broken").await;
    let seen = changes_of(&mut stream, broken).await;
    let last = seen.last().unwrap();
    assert_eq!(last.status, AapJobStatus::Error);
    assert!(last.finished.is_none(), "error has no finished");

    let forever = launch(&client, "forever").await;
    // Wait until it runs, then cancel.
    loop {
        if let PushEvent::StatusChanged(c) = next(&mut stream).await
            && c.job_id == forever
            && c.status == AapJobStatus::Running
        {
            break;
        }
    }
    client.cancel_job(forever).await.unwrap();
    let first = changes_of(&mut stream, forever).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].status, AapJobStatus::Canceled);
    assert!(
        first[0].finished.is_none(),
        "the first canceled has no finished"
    );
    let second = changes_of(&mut stream, forever).await;
    assert_eq!(second[0].status, AapJobStatus::Canceled);
    assert!(second[0].finished.is_some(), "the second one has");
}

#[tokio::test]
async fn a_refused_upgrade_is_reported_and_retried_until_accepted() {
    let server = server(Mode::Awx).await;
    server.websocket_refuse(Some(503));
    let client = client(&server);
    let mut stream = client.job_status_stream_with(fast());
    for _ in 0..2 {
        match next(&mut stream).await {
            PushEvent::Dropped {
                error: PushError::Refused { status: 503 },
                ..
            } => {}
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    server.websocket_refuse(None);
    subscribed(&mut stream).await;
}

#[tokio::test]
async fn a_bad_credential_is_a_403_on_the_upgrade() {
    let server = server(Mode::Awx).await;
    let client = AapClient::builder(server.base_url())
        .token("not-a-token")
        .proxy_from_env(false)
        .build()
        .unwrap();
    let mut stream = client.job_status_stream_with(fast());
    let event = next(&mut stream).await;
    assert!(
        matches!(
            &event,
            PushEvent::Dropped {
                error: PushError::Refused { status: 403 },
                ..
            }
        ),
        "{event:?}"
    );
    assert_eq!(
        event.signal(),
        Some(PushSignal::Stream(PushTransition::Dropped))
    );
}

#[tokio::test]
async fn a_dropped_connection_reconnects_and_subscribes_again_without_replay() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let mut stream = client.job_status_stream_with(fast());
    subscribed(&mut stream).await;
    // Keep the stream down while a job runs to its end: nothing of it is replayed.
    server.websocket_refuse(Some(502));
    assert_eq!(server.websocket_drop_connections(), 1);
    match next(&mut stream).await {
        PushEvent::Dropped {
            error: PushError::Lost(_) | PushError::Closed { .. },
            ..
        } => {}
        other => panic!("expected a loss, got {other:?}"),
    }
    let missed = launch(&client, "osac-create-virtual-network").await;
    crate::support::eventually(|| {
        let server = &server;
        async move { server.job(missed).is_some_and(|j| j.status == "successful") }
    })
    .await;
    server.websocket_refuse(None);
    subscribed(&mut stream).await;
    assert_eq!(server.websocket_stats().connections, 2);
    let seen = launch(&client, "osac-create-virtual-network").await;
    loop {
        if let PushEvent::StatusChanged(c) = next(&mut stream).await {
            assert_ne!(
                c.job_id, missed,
                "no replay of what ended while disconnected"
            );
            if c.job_id == seen && c.is_final() {
                break;
            }
        }
    }
}

async fn https_gateway() -> FakeAapServer {
    FakeAap::builder()
        .mode(Mode::Gateway)
        .https(true)
        .default_script(crate::support::quick_success())
        .organization("osac")
        .job_template(JobTemplateSpec::new("osac-create-virtual-network", "osac"))
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn behind_the_gateway_over_tls_with_a_custom_ca() {
    let server = https_gateway().await;
    let ca = server.ca_pem().unwrap().to_owned();
    let client = AapClient::builder(server.base_url())
        .token(server.token())
        .ca_certificate_pem(ca)
        .system_roots(false)
        .proxy_from_env(false)
        .build()
        .unwrap();
    let mut stream = client.job_status_stream_with(fast());
    subscribed(&mut stream).await;
    let job = launch(&client, "osac-create-virtual-network").await;
    let seen = changes_of(&mut stream, job).await;
    assert_eq!(seen.last().unwrap().status, AapJobStatus::Successful);

    // Without the CA the TLS handshake fails (and is retried).
    let untrusted = AapClient::builder(server.base_url())
        .token(server.token())
        .base_path("/api/controller/v2/")
        .system_roots(false)
        .proxy_from_env(false)
        .build()
        .unwrap();
    let mut stream = untrusted.job_status_stream_with(fast());
    let event = next(&mut stream).await;
    assert!(
        matches!(
            event,
            PushEvent::Dropped {
                error: PushError::Tls { .. },
                ..
            }
        ),
        "{event:?}"
    );
}

#[tokio::test]
async fn messages_for_other_users_jobs_arrive_too() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let mut stream = client.job_status_stream_with(fast());
    subscribed(&mut stream).await;
    server.websocket_inject(serde_json::json!({
        "unified_job_id": 9999, "status": "successful", "finished": "2026-12-01T19:24:26.874587Z",
        "type": "job", "group_name": "jobs", "unified_job_template_id": 77
    }));
    let seen = changes_of(&mut stream, 9999).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(
        PushEvent::StatusChanged(seen[0].clone()).signal(),
        Some(PushSignal::JobFinished {
            job_id: "9999".into()
        })
    );
}
