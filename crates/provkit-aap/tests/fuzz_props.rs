//! Bounded proptest counterpart of the cargo-fuzz target `aap_responses` (see `fuzz/` at the
//! repository root): the real client, over loopback, against a raw HTTP server answering with
//! arbitrary status, headers and body; and the public decoders on arbitrary JSON. Nothing may
//! panic, every call returns, and error statuses never decode as success.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use provkit_aap::provider::{find_marked_job, map_status, provision_status};
use provkit_aap::{AapClient, CancelOutcome, Job, JobKind, LaunchRequest, RetryConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const STATUSES: [u16; 14] = [
    200, 201, 202, 204, 301, 400, 401, 403, 404, 405, 429, 500, 502, 503,
];

/// Answers every request on a connection with the current canned response (keep-alive).
async fn serve(mut stream: TcpStream, response: Arc<Mutex<Vec<u8>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let body_len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buf.len() < head_end + body_len {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..head_end + body_len);
        let out = response.lock().unwrap().clone();
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn raw_response(
    status: u16,
    content_type: Option<&str>,
    retry_after: Option<&str>,
    body: &[u8],
) -> Vec<u8> {
    let body = if status == 204 { &[][..] } else { body };
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len()).into_bytes();
    if let Some(ct) = content_type {
        out.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
    }
    if let Some(ra) = retry_after {
        out.extend_from_slice(format!("Retry-After: {ra}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        prop_oneof![
            Just("successful"),
            Just("running"),
            Just("2026-06-29T12:00:00.123456Z"),
            Just("{\"a\": 1}"),
            Just("<!DOCTYPE html><title>502</title>"),
            Just("job"),
            Just("workflow_job"),
            Just("/api/v2/jobs/?page=2"),
        ]
        .prop_map(Value::from),
    ]
}

/// AAP-shaped objects: known keys (`id`, `type`, `status`, `results`, …) with values of any type.
fn aap_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("id"),
        Just("job"),
        Just("workflow_job"),
        Just("type"),
        Just("name"),
        Just("status"),
        Just("extra_vars"),
        Just("artifacts"),
        Just("started"),
        Just("elapsed"),
        Just("count"),
        Just("next"),
        Just("results"),
        Just("summary_fields"),
        Just("ignored_fields"),
        Just("detail"),
    ]
    .prop_map(str::to_owned);
    leaf().prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..64),
        4 => aap_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => Just(b"<html><head><title>Upgrade in progress</title></head></html>".to_vec()),
    ]
}

fn decode_directly(body: &[u8]) {
    let _ = map_status(&String::from_utf8_lossy(body));
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let mut jobs = Vec::new();
    let items: Vec<&Value> = match value.get("results") {
        Some(Value::Array(items)) => items.iter().chain([&value]).collect(),
        _ => vec![&value],
    };
    for v in items {
        for kind in [JobKind::Job, JobKind::WorkflowJob] {
            if let Some(job) = Job::from_value(v, kind) {
                assert_eq!(
                    provision_status(&job.id.to_string(), &job).job_id,
                    job.id.to_string()
                );
                jobs.push(job);
            }
        }
    }
    let _ = find_marked_job(&jobs, "key");
}

async fn exercise(client: &AapClient, op: u8, status: u16) {
    let failed = status >= 400;
    match op % 8 {
        0 => assert!(!(failed && client.get_template("osac-create-subnet").await.is_ok())),
        1 => assert!(
            !(failed
                && client
                    .launch_job_template(7, &LaunchRequest::default())
                    .await
                    .is_ok())
        ),
        2 => assert!(
            !(failed
                && client
                    .launch_workflow_template(7, &LaunchRequest::default())
                    .await
                    .is_ok())
        ),
        3 => assert!(!(failed && client.get_job(9).await.is_ok())),
        4 => assert!(!(failed && client.get_workflow_job(9).await.is_ok())),
        5 => {
            let _ = client.list("jobs", &[("page_size", "50")]).await;
        }
        6 => {
            if let Ok(outcome) = client.cancel_job(9).await {
                assert!(!failed || (status == 405 && outcome == CancelOutcome::AlreadyFinished));
            }
        }
        _ => {
            let _ = client.find_job_kind(9).await;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn aap_decoders_accept_any_json(value in aap_value()) {
        decode_directly(&serde_json::to_vec(&value).unwrap());
    }
}

#[test]
fn client_survives_arbitrary_responses() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let response = Arc::new(Mutex::new(Vec::new()));
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let shared = response.clone();
    let server = rt.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, shared.clone()));
        }
    });
    let client = {
        let _guard = rt.enter();
        AapClient::builder(format!("http://{addr}/api/v2/"))
            .token("t")
            .retry(RetryConfig::disabled())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap()
    };
    // The harness really reaches the client's decoders: a well-formed job decodes, a 404 is typed.
    *response.lock().unwrap() = raw_response(
        200,
        Some("application/json"),
        None,
        br#"{"id": 9, "status": "running"}"#,
    );
    let job = rt.block_on(client.get_job(9)).unwrap();
    assert_eq!((job.id, job.status.as_str()), (9, "running"));
    *response.lock().unwrap() = raw_response(
        404,
        Some("application/json"),
        None,
        br#"{"detail": "Not found."}"#,
    );
    assert!(rt.block_on(client.get_job(9)).unwrap_err().is_not_found());

    let strategy = (
        0..STATUSES.len(),
        prop_oneof![
            Just(Some("application/json")),
            Just(Some("text/html")),
            Just(None)
        ],
        prop_oneof![
            Just(None),
            Just(Some("5")),
            Just(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            Just(Some("soon"))
        ],
        any::<u8>(),
        body(),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 128,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &strategy,
            |(status, content_type, retry_after, op, body)| {
                let status = STATUSES[status];
                decode_directly(&body);
                *response.lock().unwrap() = raw_response(status, content_type, retry_after, &body);
                client.clear_template_cache();
                rt.block_on(exercise(&client, op, status));
                Ok(())
            },
        )
        .unwrap();
    server.abort();
}
