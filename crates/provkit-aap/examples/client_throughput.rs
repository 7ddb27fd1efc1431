//! Throughput of `AapClient::get_job` against the fake AAP server on loopback, next to a raw
//! baseline on the same endpoint in the same run (`wrk` when installed, else a bare reqwest loop
//! with no retries, rate limiting, error mapping or decoding).
//!
//! ```sh
//! cargo run --release -p provkit-aap --example client_throughput -- 3   # seconds per measurement
//! ```
//!
//! Prints requests/s at concurrency 1 and 16 and the client/raw ratio, then checks connection
//! reuse through a counting TCP relay (one connection per concurrent stream, not per request).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use provkit_aap::{AapClient, LaunchRequest};
use provkit_testing::fake_aap::{FakeAap, JobScript, JobTemplateSpec};
use tokio::time::Instant;

async fn measure<F, Fut>(concurrency: usize, duration: Duration, op: F) -> f64
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (op, count) = (op.clone(), count.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                op().await;
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn wrk(url: &str, token: &str, concurrency: usize, duration: Duration) -> Option<f64> {
    let out = std::process::Command::new("wrk")
        .args([
            "-t",
            &concurrency.min(4).to_string(),
            "-c",
            &concurrency.to_string(),
        ])
        .args(["-d", &format!("{}s", duration.as_secs().max(1))])
        .args(["-H", &format!("Authorization: Bearer {token}"), url])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A TCP relay that counts the connections it accepts.
async fn counting_relay(target: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, accepted)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let duration = Duration::from_secs(secs);
    let server = FakeAap::builder()
        .organization("bench")
        .request_log_capacity(0)
        .job_template(JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_millis(10))),
            ..JobTemplateSpec::new("bench", "bench")
        })
        .start()
        .await
        .unwrap();
    let client = AapClient::builder(server.base_url())
        .token(server.token())
        .proxy_from_env(false)
        .build()
        .unwrap();
    let template = client.get_template("bench").await.unwrap();
    let id = client
        .launch(&template, &LaunchRequest::default())
        .await
        .unwrap()
        .id;
    let url = format!("{}/api/v2/jobs/{id}/", server.base_url());
    let token = server.token();
    let use_wrk = std::process::Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok();
    println!(
        "GET job detail ({url}), {secs} s per measurement; baseline: {}",
        if use_wrk { "wrk" } else { "raw reqwest loop" }
    );
    println!(
        "{:>12} {:>14} {:>14} {:>8}",
        "concurrency", "client req/s", "raw req/s", "ratio"
    );
    for concurrency in [1usize, 16] {
        let c = client.clone();
        let client_rps = measure(concurrency, duration, move || {
            let c = c.clone();
            async move {
                c.get_job(id).await.unwrap();
            }
        })
        .await;
        let raw_rps = match use_wrk
            .then(|| wrk(&url, &token, concurrency, duration))
            .flatten()
        {
            Some(rps) => rps,
            None => {
                // reqwest is built without a TLS provider: hand it a ring config (plain HTTP here).
                let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
                let raw = reqwest::Client::builder()
                    .use_preconfigured_tls(tls)
                    .no_proxy()
                    .build()
                    .unwrap();
                let (url, auth) = (url.clone(), format!("Bearer {token}"));
                measure(concurrency, duration, move || {
                    let req = raw
                        .get(&url)
                        .header("authorization", &auth)
                        .header("accept", "application/json");
                    async move {
                        let resp = req.send().await.unwrap();
                        assert!(resp.status().is_success());
                        resp.bytes().await.unwrap();
                    }
                })
                .await
            }
        };
        println!(
            "{concurrency:>12} {client_rps:>14.0} {raw_rps:>14.0} {:>8.2}",
            client_rps / raw_rps
        );
    }

    // Connection reuse: 200 sequential requests, then 16 streams × 50 requests, through a relay.
    let (relay, accepted) = counting_relay(server.addr()).await;
    let relayed = AapClient::builder(format!("http://{relay}"))
        .token(server.token())
        .base_path("/api/v2/")
        .proxy_from_env(false)
        .build()
        .unwrap();
    for _ in 0..200 {
        relayed.get_job(id).await.unwrap();
    }
    let sequential = accepted.load(Ordering::Relaxed);
    let mut streams = Vec::new();
    for _ in 0..16 {
        let c = relayed.clone();
        streams.push(tokio::spawn(async move {
            for _ in 0..50 {
                c.get_job(id).await.unwrap();
            }
        }));
    }
    for s in streams {
        s.await.unwrap();
    }
    let total = accepted.load(Ordering::Relaxed);
    println!(
        "connections: {sequential} for 200 sequential requests, {total} after 16 concurrent streams × 50 requests"
    );
    // hyper returns a connection to the pool asynchronously after the body is read, so a request
    // sent at once occasionally opens a new one: a few extra, never one per request.
    assert!(
        sequential <= 5 && total <= 16 + 5,
        "connection reuse is broken"
    );
}
