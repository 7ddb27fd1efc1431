//! AAP response decoding: the real `AapClient` talks over loopback to a raw HTTP/1.1 server that
//! answers every request with fuzzer-chosen status, headers and body; and the public decoders
//! (`Job::from_value`, `provision_status`, `map_status`) run on the same body. Nothing may
//! panic, every call returns, and error statuses never decode as success.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;
use provkit_aap::provider::{find_marked_job, map_status, provision_status};
use provkit_aap::{AapClient, CancelOutcome, Job, JobKind, RetryConfig, TemplateKind};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const STATUSES: [u16; 16] = [
    200, 200, 201, 202, 204, 301, 400, 401, 403, 404, 405, 409, 429, 500, 502, 503,
];
const RETRY_AFTER: [&str; 8] = [
    "0",
    "5",
    "120",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "-1",
    "abc",
    "99999999999999999999",
    "",
];

struct Harness {
    rt: tokio::runtime::Runtime,
    client: AapClient,
    response: Arc<Mutex<Vec<u8>>>,
}

async fn serve(mut stream: TcpStream, response: Arc<Mutex<Vec<u8>>>) {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0_u8; 4096];
    loop {
        // Read one request: headers, then Content-Length bytes of body.
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
        let out = response.lock().map(|r| r.clone()).unwrap_or_default();
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let response = Arc::new(Mutex::new(Vec::new()));
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
        let shared = response.clone();
        rt.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        let client = {
            let _guard = rt.enter();
            AapClient::builder(format!("http://{addr}/api/v2/"))
                .token("fuzz-token")
                .retry(RetryConfig::disabled())
                .timeout(Duration::from_secs(5))
                .build()
                .expect("client")
        };
        Harness {
            rt,
            client,
            response,
        }
    })
}

fn raw_response(
    status: u16,
    content_type: Option<&str>,
    retry_after: Option<&str>,
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len()).into_bytes();
    if let Some(ct) = content_type {
        out.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
    }
    if let Some(ra) = retry_after {
        out.extend_from_slice(format!("Retry-After: {ra}\r\n").as_bytes());
    }
    out.extend_from_slice(b"X-Request-Id: fuzz\r\n\r\n");
    out.extend_from_slice(body);
    out
}

fn decode_directly(body: &[u8]) {
    let _ = map_status(&String::from_utf8_lossy(body));
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let mut jobs = Vec::new();
    let candidates: Vec<&Value> = match &value {
        Value::Object(o) => match o.get("results") {
            Some(Value::Array(items)) => items.iter().chain(std::iter::once(&value)).collect(),
            _ => vec![&value],
        },
        Value::Array(items) => items.iter().collect(),
        _ => vec![&value],
    };
    for v in candidates {
        for kind in [JobKind::Job, JobKind::WorkflowJob] {
            if let Some(job) = Job::from_value(v, kind) {
                let status = provision_status(&job.id.to_string(), &job);
                assert_eq!(status.job_id, job.id.to_string());
                jobs.push(job);
            }
        }
    }
    let _ = find_marked_job(&jobs, "fuzz-key");
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (ctl, body) = (&data[..3], &data[3..]);
    let status = STATUSES[usize::from(ctl[0] & 0x0f)];
    let content_type = match ctl[0] >> 4 & 0x3 {
        0 => Some("application/json"),
        1 => Some("text/html; charset=utf-8"),
        2 => Some("text/plain"),
        _ => None,
    };
    let retry_after = (ctl[0] & 0x40 != 0).then(|| RETRY_AFTER[usize::from(ctl[2] & 0x7)]);
    decode_directly(body);

    let h = harness();
    if let Ok(mut r) = h.response.lock() {
        // A 204 has no body in HTTP/1.1: sending one would desynchronise the connection.
        let sent = if status == 204 { &[][..] } else { body };
        *r = raw_response(status, content_type, retry_after, sent);
    }
    h.client.clear_template_cache();
    let client = &h.client;
    let since = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("time");
    h.rt.block_on(async {
        let failed = status >= 400;
        match ctl[1] % 12 {
            0 => {
                let r = client.get_template("osac-create-subnet").await;
                assert!(
                    !(failed && r.is_ok()),
                    "template lookup succeeded on {status}"
                );
            }
            1 => {
                let r = client
                    .launch_job_template(7, &provkit_aap::LaunchRequest::default())
                    .await;
                assert!(!(failed && r.is_ok()), "launch succeeded on {status}");
            }
            2 => {
                let r = client
                    .launch_workflow_template(7, &provkit_aap::LaunchRequest::default())
                    .await;
                assert!(
                    !(failed && r.is_ok()),
                    "workflow launch succeeded on {status}"
                );
            }
            3 => {
                let r = client.get_job(9).await;
                assert!(!(failed && r.is_ok()), "get_job succeeded on {status}");
                if let Ok(job) = r {
                    let _ = provision_status("9", &job);
                }
            }
            4 => {
                let r = client.get_workflow_job(9).await;
                assert!(
                    !(failed && r.is_ok()),
                    "get_workflow_job succeeded on {status}"
                );
            }
            5 => {
                let _ = client.list("jobs", &[("page_size", "50")]).await;
            }
            6 => {
                let r = client.cancel_job(9).await;
                if let Ok(outcome) = r {
                    assert!(
                        !failed || (status == 405 && outcome == CancelOutcome::AlreadyFinished),
                        "cancel answered {outcome:?} on {status}"
                    );
                }
            }
            7 => {
                let _ = client.can_cancel(JobKind::Job, 9).await;
            }
            8 => {
                let _ = client.find_job_kind(9).await;
            }
            9 => {
                let _ = client
                    .jobs_created_since(JobKind::Job, TemplateKind::JobTemplate, 7, since)
                    .await;
            }
            10 => {
                let _ = client.job_stdout(9).await;
            }
            _ => {
                let _ = client.ping().await;
                let _ = client.me().await;
            }
        }
    });
});
