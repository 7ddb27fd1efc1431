//! Throughput of the fake AAP server for `GET /api/v2/jobs/<id>/` over loopback with
//! keep-alive, at several concurrencies. Prints figures; asserts nothing about timing.
//!
//! ```sh
//! cargo run --release -p provkit-testing --example fake_aap_throughput
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use provkit_testing::fake_aap::{FakeAap, JobScript, JobTemplateSpec};

fn client() -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(config)
        .pool_max_idle_per_host(256)
        .build()
        .unwrap()
}

#[tokio::main]
async fn main() {
    let server = FakeAap::builder()
        .request_log_capacity(0)
        .job_template(JobTemplateSpec {
            allow_simultaneous: true,
            script: Some(JobScript::run_until_canceled()),
            ..JobTemplateSpec::new("bench", "Default")
        })
        .start()
        .await
        .unwrap();
    let token = server.token();
    let c = client();
    // A few hundred jobs so lookups are not trivially on a tiny table.
    for i in 0..500 {
        let r = c
            .post(format!(
                "{}job_templates/bench++Default/launch/",
                server.api_base()
            ))
            .bearer_auth(&token)
            .json(&serde_json::json!({"extra_vars": {"i": i}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }
    let url = format!("{}jobs/250/", server.api_base());
    let per_run = Duration::from_secs(3);
    println!(
        "GET /api/v2/jobs/<id>/ on {} (keep-alive, {} s per run)",
        server.base_url(),
        per_run.as_secs()
    );
    for concurrency in [1usize, 16, 64] {
        let c = client();
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (c, url, token) = (c.clone(), url.clone(), token.clone());
            tasks.push(tokio::spawn(async move {
                let mut n = 0u64;
                while start.elapsed() < per_run {
                    let r = c.get(&url).bearer_auth(&token).send().await.unwrap();
                    let _ = r.bytes().await.unwrap();
                    n += 1;
                }
                n
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "concurrency {concurrency:>3}: {total:>8} requests in {secs:.2} s = {:>9.0} req/s",
            total as f64 / secs
        );
    }
    server.shutdown().await;
}
