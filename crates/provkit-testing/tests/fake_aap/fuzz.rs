//! Fuzz-style robustness: a few thousand seeded random requests, then the server still serves.

use std::time::Duration;

use provkit_testing::fake_aap::Mode;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::{ADMIN, Auth, client, observed_fixtures, send, start};

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "FOO",
];
const PATHS: &[&str] = &[
    "/api/",
    "/api/v2/",
    "/api/v2/ping/",
    "/api/v2/me/",
    "/api/v2/job_templates/",
    "/api/v2/job_templates/9/",
    "/api/v2/job_templates/9/launch/",
    "/api/v2/job_templates/osac-create-virtual-network++osac/launch/",
    "/api/v2/workflow_job_templates/11/launch/",
    "/api/v2/jobs/",
    "/api/v2/jobs/1/",
    "/api/v2/jobs/1/cancel/",
    "/api/v2/jobs/1/stdout/",
    "/api/v2/workflow_jobs/2/workflow_nodes/",
    "/api/v2/unified_jobs/",
    "/api/v2/unified_job_templates/",
    "/api/v2/tokens/",
    "/api/controller/v2/ping/",
    "/api/gateway/v1/tokens/",
    "/api/v2/jobs/99999999999999999999/",
    "/api/v2/job_templates/%ff%fe++/",
    "/api/v2/job_templates/[+]++[+]/",
];
const QUERIES: &[&str] = &[
    "",
    "?page=2",
    "?page=-1",
    "?page_size=0",
    "?page_size=99999",
    "?order_by=-id,name",
    "?order_by=nope",
    "?name__icontains=%E2%82%AC",
    "?id__in=1,x",
    "?created__gt=yesterday",
    "?status__in=",
    "?format=txt",
    "?extra_vars=1",
    "?or__id=1&not__name=x",
    "?type=job,workflow_job",
    "?%zz=%",
    "?a&b&&c=",
];

fn random_body(rng: &mut fastrand::Rng) -> Vec<u8> {
    let pick = [
        "",
        "{}",
        "null",
        "[]",
        "{\"extra_vars\":",
        "{\"extra_vars\": {\"a\": [1, {\"b\": null}]}}",
        "{\"extra_vars\": \"a: [1, 2\"}",
        "{\"extra_vars\": \"- x\"}",
        "{\"limit\": 5, \"verbosity\": \"x\"}",
        "{\"inventory\": -1, \"credentials\": [\"a\"]}",
        "{\"scope\": 7}",
        "{\"job_slice_count\": 99999999999}",
        "{\"extra_vars\": {\"\\ud800\": 1}}",
        "{\"a\": 1e999}",
    ];
    match rng.u8(0..4) {
        0 => (0..rng.usize(0..64)).map(|_| rng.u8(..)).collect(),
        1 => format!("{}{}", "[".repeat(rng.usize(0..3000)), "]").into_bytes(),
        _ => pick[rng.usize(0..pick.len())].as_bytes().to_vec(),
    }
}

#[tokio::test]
async fn random_requests_never_wedge_the_server() {
    let (server, clock) = start(observed_fixtures(Mode::Both)).await;
    let c = client();
    let base = server.base_url();
    let mut rng = fastrand::Rng::with_seed(20_261_129);
    for i in 0..2500 {
        let method = METHODS[rng.usize(0..METHODS.len())];
        let mut path = PATHS[rng.usize(0..PATHS.len())].to_owned();
        if rng.u8(0..5) == 0 {
            path.pop(); // slashless
        }
        let url = format!("{base}{path}{}", QUERIES[rng.usize(0..QUERIES.len())]);
        let mut rb = c.request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            &url,
        );
        match rng.u8(0..5) {
            0 => rb = rb.bearer_auth(ADMIN),
            1 => rb = rb.header("authorization", "Basic !!!notbase64"),
            2 => rb = rb.header("authorization", "Bearer"),
            3 => rb = rb.basic_auth("admin", Some("secret")),
            _ => {}
        }
        let ct = [
            "application/json",
            "text/plain",
            "application/json; charset=utf-8",
            "",
            "multipart/form-data",
        ];
        let ct = ct[rng.usize(0..ct.len())];
        if !ct.is_empty() {
            rb = rb.header("content-type", ct);
        }
        if rng.bool() {
            rb = rb.header("x-api-request-id", format!("{:x}", rng.u64(..)));
        }
        let resp = rb
            .body(random_body(&mut rng))
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        let resp = resp.unwrap_or_else(|e| panic!("request {i} {method} {url}: {e}"));
        assert!(
            resp.status().as_u16() < 500 || resp.status().as_u16() == 501,
            "request {i}: {method} {url} → {}",
            resp.status()
        );
        if i % 500 == 0 {
            clock.advance(Duration::from_secs(1));
        }
    }
    // Raw garbage on a socket.
    for garbage in [
        &b"\x00\x01\x02 garbage\r\n\r\n"[..],
        b"GET /api/v2/ping/ HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ] {
        let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let _ = s.write_all(garbage).await;
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    }
    // Still serves.
    let r = send(&c, "GET", &format!("{base}/api/v2/ping/"), Auth::None, None).await;
    assert_eq!(r.status, 200);
    let r = send(
        &c,
        "POST",
        &format!("{base}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    assert_eq!(r.status, 201);
}
