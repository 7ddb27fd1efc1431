//! The differences between the fake and real AWX found by the second capture
//! (`aap-observed.md` §13), each replayed from the observed exchange.

use std::time::Duration;

use provkit_testing::fake_aap::{JobScript, JobTemplateSpec, Mode};
use serde_json::{Value, json};

use crate::common::{ADMIN, Auth, assert_subset, client, observed_fixtures, send, start};

/// Observed fixtures plus `timed` (id 20): a template with the fake's default (observed) timing.
fn fixtures() -> provkit_testing::fake_aap::Fixtures {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates.push(JobTemplateSpec {
        id: Some(20),
        allow_simultaneous: true,
        ..JobTemplateSpec::new("timed", "osac")
    });
    fx
}

async fn launch(c: &reqwest::Client, base: &str, template: u64) -> Value {
    let r = send(
        c,
        "POST",
        &format!("{base}/api/v2/job_templates/{template}/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"network_name":"net-a"}}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.json
}

async fn get(c: &reqwest::Client, url: &str) -> crate::common::Reply {
    send(c, "GET", url, Auth::Bearer(ADMIN), None).await
}

/// §13.1: `pending → waiting → running → successful` with `waiting` visible; a cancel of a
/// running job takes ~2 s (status stays `running`, a second cancel is 202 again); a job that
/// went to `error` within a second answers a cancel with 405.
#[tokio::test]
async fn default_timing_reaches_waiting_fast_and_cancel_takes_effect_later() {
    let mut fx = fixtures();
    fx.job_templates.push(JobTemplateSpec {
        id: Some(21),
        allow_simultaneous: true,
        script: Some(JobScript::error_before_start(Duration::from_millis(300))),
        ..JobTemplateSpec::new("cannot-start", "osac")
    });
    fx.job_templates.push(JobTemplateSpec {
        id: Some(22),
        allow_simultaneous: true,
        script: Some(JobScript::run_until_canceled().with_cancel_delay(Duration::from_secs(5))),
        ..JobTemplateSpec::new("slow-cancel", "osac")
    });
    fx.job_templates.push(JobTemplateSpec {
        id: Some(23),
        allow_simultaneous: true,
        script: Some(JobScript::run_until_canceled()),
        ..JobTemplateSpec::new("holds-running", "osac")
    });
    let (server, clock) = start(fx).await;
    let (c, b) = (client(), server.base_url());
    let job = launch(&c, &b, 20).await;
    assert_eq!(job["status"], "pending");
    let url = format!("{b}/api/v2/jobs/{}/", job["id"]);
    let mut seen = vec![];
    for _ in 0..12 {
        clock.advance(Duration::from_millis(250));
        let status = get(&c, &url).await.json["status"]
            .as_str()
            .unwrap()
            .to_owned();
        if seen.last() != Some(&status) {
            seen.push(status);
        }
    }
    assert_eq!(
        seen,
        ["waiting", "running", "successful"],
        "polls every 0.25 s"
    );

    // Cancel of a running job: 202, still running, 202 again, canceled ~2 s after the first.
    let job = launch(&c, &b, 23).await;
    let id = job["id"].as_u64().unwrap();
    let url = format!("{b}/api/v2/jobs/{id}/");
    clock.advance(Duration::from_millis(500));
    assert_eq!(get(&c, &url).await.json["status"], "running");
    let cancel = format!("{url}cancel/");
    assert_eq!(
        send(&c, "POST", &cancel, Auth::Bearer(ADMIN), Some("{}"))
            .await
            .status,
        202
    );
    clock.advance(Duration::from_millis(1000));
    assert_eq!(get(&c, &url).await.json["status"], "running");
    assert_eq!(
        send(&c, "POST", &cancel, Auth::Bearer(ADMIN), Some("{}"))
            .await
            .status,
        202
    );
    clock.advance(Duration::from_millis(1000));
    assert_subset(
        &json!({"status": "canceled", "failed": true}),
        &get(&c, &url).await.json,
        "canceled",
    );

    // A job that could not start is `error` within a second: the cancel right after is 405.
    let job = launch(&c, &b, 21).await;
    let cancel = format!("{b}/api/v2/jobs/{}/cancel/", job["id"]);
    clock.advance(Duration::from_millis(400));
    let r = send(&c, "POST", &cancel, Auth::Bearer(ADMIN), Some("{}")).await;
    assert_eq!(
        (r.status, r.json.clone()),
        (405, json!({"detail": "Method \"POST\" not allowed."}))
    );

    // The cancel delay is scriptable per template.
    let job = launch(&c, &b, 22).await;
    let url = format!("{b}/api/v2/jobs/{}/", job["id"]);
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        send(
            &c,
            "POST",
            &format!("{url}cancel/"),
            Auth::Bearer(ADMIN),
            Some("{}")
        )
        .await
        .status,
        202
    );
    clock.advance(Duration::from_secs(3));
    assert_eq!(get(&c, &url).await.json["status"], "running");
    clock.advance(Duration::from_secs(2));
    assert_eq!(get(&c, &url).await.json["status"], "canceled");
}

/// §13.2 / §13.3: launch body keys, `elapsed` float, `work_unit_id` null, filter errors.
#[tokio::test]
async fn launch_body_elapsed_work_unit_and_filter_errors() {
    let (server, clock) = start(fixtures()).await;
    let (c, b) = (client(), server.base_url());
    let job = launch(&c, &b, 9).await; // stays pending
    let launched = job.as_object().unwrap();
    for key in ["custom_virtualenv", "host_status_counts", "playbook_counts"] {
        assert!(!launched.contains_key(key), "launch 201 has {key}");
    }
    let detail = get(&c, &format!("{b}/api/v2/jobs/{}/", job["id"])).await;
    for key in ["custom_virtualenv", "host_status_counts", "playbook_counts"] {
        assert!(detail.json.get(key).is_some(), "detail lacks {key}");
    }
    assert!(detail.text.contains(r#""elapsed":0.0"#), "{}", detail.text);
    assert_eq!(detail.json["work_unit_id"], Value::Null);
    // A job that ran has a float elapsed and a work unit.
    let ran = launch(&c, &b, 20).await;
    clock.advance(Duration::from_secs(5));
    let done = get(&c, &format!("{b}/api/v2/jobs/{}/", ran["id"]))
        .await
        .json;
    assert!(
        done["elapsed"].is_f64() && done["work_unit_id"].is_string(),
        "{done}"
    );

    let cases = [
        (
            "jobs/?extra_vars__contains=net-a",
            403,
            json!({"detail": "Filtering on extra_vars is not allowed."}),
        ),
        (
            "jobs/?extra_vars__icontains=net-a",
            403,
            json!({"detail": "Filtering on extra_vars is not allowed."}),
        ),
        (
            "jobs/?no_such_field=1",
            400,
            json!({"detail": "Job has no field named 'no_such_field'"}),
        ),
        (
            "jobs/?page_size=10&page=9999",
            404,
            json!({"detail": "Invalid page."}),
        ),
    ];
    for (path, status, body) in cases {
        let r = get(&c, &format!("{b}/api/v2/{path}")).await;
        assert_eq!((r.status, r.json), (status, body), "{path}");
    }
    let r = get(&c, &format!("{b}/api/v2/jobs/?created__gt=bad")).await;
    assert_eq!(r.status, 400);
    let detail = r.json["detail"].as_str().unwrap();
    let list: Vec<String> = serde_json::from_str(detail).expect("detail is a JSON-encoded list");
    assert!(
        list[0].starts_with("“bad” value has an invalid"),
        "{detail}"
    );
    let r = get(
        &c,
        &format!("{b}/api/v2/jobs/?job_template=20&created__gt=2026-11-30T18%3A55%3A31.587536Z&order_by=-id&page_size=200"),
    )
    .await;
    assert_eq!(r.status, 200);
}

/// §13.3: Django-level 404 and the trailing-slash 301 carry no AWX headers; the 301 is HTML.
#[tokio::test]
async fn django_level_answers_have_no_awx_headers() {
    let (server, _) = start(fixtures()).await;
    let (c, b) = (client(), server.base_url());
    let r = get(&c, &format!("{b}/api/v2/doesnotexist/")).await;
    assert_eq!(r.status, 404);
    let r301 = get(&c, &format!("{b}/api/v2/ping")).await;
    assert_eq!(
        (r301.status, r301.header("location")),
        (301, Some("/api/v2/ping/"))
    );
    assert!(
        r301.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    );
    for resp in [&r, &r301] {
        assert!(resp.header("x-api-product-name").is_none() && resp.header("x-api-node").is_none());
    }
    let ok = get(&c, &format!("{b}/api/v2/ping/")).await;
    assert_eq!(ok.header("x-api-product-name"), Some("AWX"));
    assert_eq!(ok.header("x-api-node"), Some("awx-1"));
}

/// §13.3: `summary_fields`, `/api/`'s `swagger`, and `me`.
#[tokio::test]
async fn summary_fields_api_root_and_me() {
    let mut fx = fixtures();
    fx.workflow_job_templates[0].stuck_pending = false;
    let (server, clock) = start(fx).await;
    let (c, b) = (client(), server.base_url());
    let job = launch(&c, &b, 20).await;
    clock.advance(Duration::from_secs(1));
    let detail = get(&c, &format!("{b}/api/v2/jobs/{}/", job["id"]))
        .await
        .json;
    let summary = detail["summary_fields"].as_object().unwrap();
    assert!(summary.contains_key("modified_by") && !summary.contains_key("instance_group"));
    let wf = send(
        &c,
        "POST",
        &format!("{b}/api/v2/workflow_job_templates/11/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await
    .json;
    let wf = get(&c, &format!("{b}/api/v2/workflow_jobs/{}/", wf["id"]))
        .await
        .json;
    let summary = wf["summary_fields"].as_object().unwrap();
    assert!(
        !summary.contains_key("inventory") && !summary.contains_key("job_template"),
        "{wf}"
    );
    let root = send(&c, "GET", &format!("{b}/api/"), Auth::None, None)
        .await
        .json;
    assert!(root.get("swagger").is_some(), "{root}");
    let me = get(&c, &format!("{b}/api/v2/me/")).await.json;
    let user = me["results"][0].as_object().unwrap();
    assert_eq!(user["modified"], Value::Null);
    for key in ["auth", "external_account", "ldap_dn"] {
        assert!(!user.contains_key(key), "me has {key}");
    }
}

/// §13.3: list `Allow` header and object creation; `OPTIONS` with `actions`.
#[tokio::test]
async fn organizations_are_created_and_options_have_actions() {
    let (server, _) = start(fixtures()).await;
    let (c, b) = (client(), server.base_url());
    let list = get(&c, &format!("{b}/api/v2/organizations/")).await;
    assert_eq!(list.header("allow"), Some("GET, POST, HEAD, OPTIONS"));
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/organizations/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"name":"osac-2","description":"OSAC org"}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_subset(
        &json!({"type": "organization", "name": "osac-2"}),
        &r.json,
        "created org",
    );
    let again = send(
        &c,
        "POST",
        &format!("{b}/api/v2/organizations/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"name":"osac-2"}"#),
    )
    .await;
    assert_eq!(again.status, 400);
    let names: Vec<Value> = get(&c, &format!("{b}/api/v2/organizations/")).await.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].clone())
        .collect();
    assert!(names.contains(&json!("osac-2")), "{names:?}");

    for (path, method, field) in [
        ("job_templates/", "GET", "name"),
        ("jobs/", "GET", "status"),
        ("organizations/", "POST", "name"),
        ("job_templates/9/launch/", "POST", "extra_vars"),
    ] {
        let r = send(
            &c,
            "OPTIONS",
            &format!("{b}/api/v2/{path}"),
            Auth::Bearer(ADMIN),
            None,
        )
        .await;
        assert_eq!(r.status, 200);
        for key in ["name", "description", "renders", "parses", "actions"] {
            assert!(r.json.get(key).is_some(), "{path}: no {key}");
        }
        let meta = &r.json["actions"][method][field];
        assert!(
            meta["type"].is_string(),
            "{path}: {method} {field}: {}",
            r.json
        );
    }
}
