//! The fake AAP server's request handling: a fresh in-process fake (AWX, gateway or both
//! layouts) receives up to four fuzzer-built requests through `tower::ServiceExt::oneshot` on
//! its axum router: method, path (templated around real routes or raw), auth and content-type
//! headers, and body are all fuzzer-chosen, with the server clock moving between requests.
//! Nothing may panic; no fault is installed, so nothing may answer 5xx; every JSON answer parses.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use chrono::DateTime;
use libfuzzer_sys::fuzz_target;
use provkit_core::{Clock, ManualClock};
use provkit_testing::fake_aap::{
    FakeAap, JobScript, JobTemplateSpec, Mode, WorkflowJobTemplateSpec,
};
use tower::ServiceExt as _;

const METHODS: [&str; 8] = [
    "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "LAUNCH",
];

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        first
    }
    fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = usize::from(self.byte()).min(max).min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn text(&mut self, max: usize) -> String {
        String::from_utf8_lossy(self.bytes(max)).into_owned()
    }
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

fn path(c: &mut Cursor<'_>, prefix: &str) -> String {
    let id = u64::from(c.byte() % 12);
    let which = c.byte();
    let word = encode(&c.text(24));
    let p = prefix;
    match which % 20 {
        0 => format!("{p}job_templates/"),
        1 => format!("{p}job_templates/{id}/"),
        2 => format!("{p}job_templates/{id}/launch/"),
        3 => format!("{p}job_templates/{word}/launch/"),
        4 => format!("{p}job_templates/{word}++Default/launch/"),
        5 => format!("{p}workflow_job_templates/{id}/launch/"),
        6 => format!("{p}jobs/{id}/"),
        7 => format!("{p}jobs/{id}/cancel/"),
        8 => format!("{p}workflow_jobs/{id}/"),
        9 => format!("{p}workflow_jobs/{id}/cancel/"),
        10 => {
            format!("{p}unified_job_templates/?name={word}&type=job_template,workflow_job_template")
        }
        11 => format!("{p}unified_jobs/?id={id}"),
        12 => format!("{p}jobs/?job_template={id}&created__gt={word}&order_by=-id&page_size={id}"),
        13 => format!("{p}jobs/{id}/stdout/?format={word}"),
        14 => format!("{p}ping/"),
        15 => format!("{p}me/"),
        16 => "/api/".to_owned(),
        17 => "/api/gateway/v1/tokens/".to_owned(),
        18 => format!("{p}{word}/?page={id}"),
        _ => c.text(64), // raw: often not even a valid URI
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor(data);
    let mode = match c.byte() % 3 {
        0 => Mode::Awx,
        1 => Mode::Gateway,
        _ => Mode::Both,
    };
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_800_000_000, 0).expect("time"),
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
        .expect("fixtures are valid");
    let prefix = aap.api_prefix();
    let token = aap.admin_token();

    for _ in 0..4 {
        if c.0.is_empty() {
            break;
        }
        let method = METHODS[usize::from(c.byte() % 8)];
        let uri = path(&mut c, prefix);
        let flags = c.byte();
        let mut req = http::Request::builder().method(method).uri(uri.as_str());
        req = match flags & 0x3 {
            0 => req.header("authorization", format!("Bearer {token}")),
            1 => req.header("authorization", "Bearer not-a-token"),
            2 => req.header("authorization", "Basic YWRtaW46cGFzc3dvcmQ="), // admin:password
            _ => req,
        };
        req = match (flags >> 2) & 0x3 {
            0 => req.header("content-type", "application/json"),
            1 => req.header("content-type", "application/x-www-form-urlencoded"),
            2 => req.header("content-type", c.text(16)),
            _ => req,
        };
        let body = c.bytes(255).to_vec();
        let Ok(request) = req.body(Body::from(body)) else {
            continue;
        };
        let response = runtime()
            .block_on(aap.router().oneshot(request))
            .expect("the router is infallible");
        let status = response.status();
        assert!(
            !status.is_server_error(),
            "{method} {uri} answered {status} without any fault installed"
        );
        let json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let bytes = runtime()
            .block_on(axum::body::to_bytes(response.into_body(), 64 << 20))
            .expect("body");
        if json && method != "HEAD" && !bytes.is_empty() {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&bytes).is_ok(),
                "{method} {uri}: invalid JSON body {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        clock.advance(Duration::from_secs(u64::from(flags >> 4) * 5));
    }
});
