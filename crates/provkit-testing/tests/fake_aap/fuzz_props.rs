//! Bounded proptest counterpart of the cargo-fuzz target `fake_aap_requests` (see `fuzz/` at the
//! repository root): a fresh in-process fake in each layout receives sequences of generated
//! requests through its router (`oneshot`) while its clock moves. No panic; no 5xx without an
//! installed fault; every JSON answer parses.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use chrono::DateTime;
use proptest::prelude::*;
use provkit_core::{Clock, ManualClock};
use provkit_testing::fake_aap::{
    FakeAap, JobScript, JobTemplateSpec, Mode, WorkflowJobTemplateSpec,
};
use tower::ServiceExt as _;

#[derive(Clone, Debug)]
struct Req {
    method: &'static str,
    route: u8,
    id: u8,
    word: String,
    auth: u8,
    content_type: u8,
    body: Vec<u8>,
    advance_secs: u64,
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn uri(r: &Req, p: &str) -> String {
    let (id, word) = (r.id % 12, encode(&r.word));
    match r.route % 19 {
        0 => format!("{p}job_templates/"),
        1 => format!("{p}job_templates/{id}/"),
        2 => format!("{p}job_templates/{id}/launch/"),
        3 => format!("{p}job_templates/{word}++Default/launch/"),
        4 => format!("{p}workflow_job_templates/{id}/launch/"),
        5 => format!("{p}jobs/{id}/"),
        6 => format!("{p}jobs/{id}/cancel/"),
        7 => format!("{p}workflow_jobs/{id}/"),
        8 => format!("{p}workflow_jobs/{id}/cancel/"),
        9 => {
            format!("{p}unified_job_templates/?name={word}&type=job_template,workflow_job_template")
        }
        10 => format!("{p}unified_jobs/?id={id}"),
        11 => format!("{p}jobs/?job_template={id}&created__gt={word}&order_by=-id&page_size={id}"),
        12 => format!("{p}jobs/{id}/stdout/?format={word}"),
        13 => format!("{p}ping/"),
        14 => format!("{p}me/"),
        15 => "/api/".to_owned(),
        16 => "/api/gateway/v1/tokens/".to_owned(),
        17 => format!("{p}{word}/?page={id}"),
        _ => format!("/{word}"),
    }
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(any::<u8>(), 0..48),
        Just(br#"{"extra_vars": {"cidr": "10.0.0.0/24"}}"#.to_vec()),
        Just(br#"{"extra_vars": "---\nfoo: bar", "limit": "", "verbosity": 9}"#.to_vec()),
        Just(br#"{"description": "t", "application": null, "scope": "write"}"#.to_vec()),
        Just(b"extra_vars=%7B%7D".to_vec()),
    ]
}

fn request() -> impl Strategy<Value = Req> {
    (
        prop::sample::select(vec![
            "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "LAUNCH",
        ]),
        any::<u8>(),
        any::<u8>(),
        prop_oneof![Just(String::from("osac-create-subnet")), any::<String>()],
        0_u8..4,
        0_u8..3,
        body(),
        0_u64..120,
    )
        .prop_map(
            |(method, route, id, word, auth, content_type, body, advance_secs)| Req {
                method,
                route,
                id,
                word,
                auth,
                content_type,
                body,
                advance_secs,
            },
        )
}

async fn run(mode: Mode, requests: Vec<Req>) {
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
    ));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let aap = FakeAap::builder()
        .mode(mode)
        .clock(dyn_clock)
        .job_template(JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(30))),
            ..JobTemplateSpec::new("osac-create-subnet", "Default")
        })
        .job_template(JobTemplateSpec::new("osac-delete-subnet", "Default"))
        .workflow_job_template(WorkflowJobTemplateSpec::new(
            "osac-create-cluster",
            "Default",
            &["osac-create-subnet"],
        ))
        .build()
        .unwrap();
    let token = aap.admin_token();
    for r in requests {
        let uri = uri(&r, aap.api_prefix());
        let mut builder = http::Request::builder().method(r.method).uri(uri.as_str());
        builder = match r.auth {
            0 => builder.header("authorization", format!("Bearer {token}")),
            1 => builder.header("authorization", "Bearer not-a-token"),
            2 => builder.header("authorization", "Basic YWRtaW46cGFzc3dvcmQ="),
            _ => builder,
        };
        builder = match r.content_type {
            0 => builder.header("content-type", "application/json"),
            1 => builder.header("content-type", "application/x-www-form-urlencoded"),
            _ => builder,
        };
        let Ok(req) = builder.body(Body::from(r.body.clone())) else {
            continue;
        };
        let resp = aap.router().oneshot(req).await.unwrap();
        let status = resp.status();
        assert!(
            !status.is_server_error(),
            "{} {uri} answered {status} without any fault",
            r.method
        );
        let json = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let bytes = axum::body::to_bytes(resp.into_body(), 64 << 20)
            .await
            .unwrap();
        if json && r.method != "HEAD" && !bytes.is_empty() {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&bytes).is_ok(),
                "{} {uri}: invalid JSON {:?}",
                r.method,
                String::from_utf8_lossy(&bytes)
            );
        }
        clock.advance(Duration::from_secs(r.advance_secs));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn router_handles_arbitrary_request_sequences(
        mode in prop::sample::select(vec![Mode::Awx, Mode::Gateway, Mode::Both]),
        requests in prop::collection::vec(request(), 1..6),
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(run(mode, requests));
    }
}
