//! One test per "Semantics to reproduce exactly" bullet of the issue (over loopback sockets).

use std::time::Duration;

use provkit_testing::fake_aap::{
    InventorySpec, JobScript, JobTemplateSpec, Mode, SurveyQuestion, SurveySpec,
    WorkflowJobTemplateSpec,
};
use serde_json::json;

use crate::common::{ADMIN, Auth, READ, assert_subset, client, observed_fixtures, send, start};

#[tokio::test]
async fn pagination_envelope_default_cap_and_invalid_page() {
    let mut fx = observed_fixtures(Mode::Awx);
    for i in 0..230 {
        fx.job_templates
            .push(JobTemplateSpec::new(format!("bulk-{i:03}"), "osac"));
    }
    let (server, _) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/?name__icontains=bulk"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.json["count"], 230);
    assert_eq!(r.json["results"].as_array().unwrap().len(), 25);
    assert_eq!(
        r.json["next"],
        "/api/v2/job_templates/?name__icontains=bulk&page=2"
    );
    assert_eq!(r.json["previous"], serde_json::Value::Null);
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/?page_size=1000&name__icontains=bulk"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.json["results"].as_array().unwrap().len(), 200);
    assert_eq!(
        r.json["next"],
        "/api/v2/job_templates/?name__icontains=bulk&page=2&page_size=200"
    );
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/?page_size=200&page=2&name__icontains=bulk"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.json["results"].as_array().unwrap().len(), 30);
    assert_eq!(r.json["next"], serde_json::Value::Null);
    assert_eq!(
        r.json["previous"],
        "/api/v2/job_templates/?name__icontains=bulk&page=1&page_size=200"
    );
    for bad in ["page=3&page_size=200", "page=0", "page=x"] {
        let r = send(
            &c,
            "GET",
            &format!("{b}/api/v2/job_templates/?name__icontains=bulk&{bad}"),
            Auth::Bearer(ADMIN),
            None,
        )
        .await;
        assert_eq!(
            (r.status, r.json.clone()),
            (404, json!({"detail": "Invalid page."})),
            "{bad}"
        );
    }
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/?name__icontains=bulk&count_disabled=1&page_size=2"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(
        r.json.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["results"]
    );
}

#[tokio::test]
async fn links_follow_the_request_prefix() {
    let (server, _) = start(observed_fixtures(Mode::Both)).await;
    let c = client();
    let b = server.base_url();
    for prefix in ["/api/v2/", "/api/controller/v2/"] {
        let r = send(
            &c,
            "GET",
            &format!("{b}{prefix}job_templates/9/"),
            Auth::Bearer(ADMIN),
            None,
        )
        .await;
        assert_eq!(r.json["url"], format!("{prefix}job_templates/9/"));
        assert_eq!(
            r.json["related"]["launch"],
            format!("{prefix}job_templates/9/launch/")
        );
        assert_eq!(
            r.json["related"]["named_url"],
            format!("{prefix}job_templates/osac-create-virtual-network++osac/")
        );
        let r = send(
            &c,
            "GET",
            &format!("{b}{prefix}job_templates/?page_size=1"),
            Auth::Bearer(ADMIN),
            None,
        )
        .await;
        assert_eq!(
            r.json["next"],
            format!("{prefix}job_templates/?page=2&page_size=1")
        );
    }
    let r = send(&c, "GET", &format!("{b}/api/controller/"), Auth::None, None).await;
    assert_eq!(r.json["current_version"], "/api/controller/v2/");
    assert!(r.json.get("oauth2").is_none());
}

#[tokio::test]
async fn gateway_mode_discovery_and_404_on_old_prefix() {
    let (server, _) = start(observed_fixtures(Mode::Gateway)).await;
    let c = client();
    let b = server.base_url();
    let r = send(&c, "GET", &format!("{b}/api/"), Auth::None, None).await;
    assert_eq!(r.json["apis"]["controller"], "/api/controller/");
    let r = send(&c, "GET", &format!("{b}/api/controller/"), Auth::None, None).await;
    assert_eq!(r.json["current_version"], "/api/controller/v2/");
    for path in ["/api/v2/ping/", "/api/v2/job_templates/", "/api/v2/tokens/"] {
        let r = send(&c, "GET", &format!("{b}{path}"), Auth::Bearer(ADMIN), None).await;
        assert_eq!(
            (r.status, r.json.clone()),
            (
                404,
                json!({"detail": "The requested resource could not be found."})
            ),
            "{path}"
        );
    }
    assert_eq!(server.api_base(), format!("{b}/api/controller/v2/"));
    // Gateway tokens: Basic → 201 with the token once; it then works as Bearer; DELETE revokes.
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/gateway/v1/tokens/"),
        Auth::Basic("admin", "secret"),
        Some(r#"{"description":"ci","application":null,"scope":"write"}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_subset(
        &json!({"refresh_token": null, "application": null, "scope": "write", "description": "ci", "user": 1}),
        &r.json,
        "token",
    );
    assert!(r.json["expires"].as_str().is_some());
    let token = r.json["token"].as_str().unwrap().to_owned();
    let id = r.json["id"].as_u64().unwrap();
    let me = send(
        &c,
        "GET",
        &format!("{b}/api/controller/v2/me/"),
        Auth::Bearer(&token),
        None,
    )
    .await;
    assert_eq!(me.status, 200);
    let del = send(
        &c,
        "DELETE",
        &format!("{b}/api/gateway/v1/tokens/{id}/"),
        Auth::Basic("admin", "secret"),
        None,
    )
    .await;
    assert_eq!(del.status, 204);
    let me = send(
        &c,
        "GET",
        &format!("{b}/api/controller/v2/me/"),
        Auth::Bearer(&token),
        None,
    )
    .await;
    assert_eq!(me.status, 401);
    assert_eq!(
        me.header("x-api-product-name"),
        Some("Red Hat Ansible Automation Platform")
    );
}

#[tokio::test]
async fn trailing_slash_rule_redirects_get_and_post() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let cases = [
        ("GET", "/api/v2/ping", "/api/v2/ping/"),
        ("GET", "/api/v2/jobs/15", "/api/v2/jobs/15/"),
        (
            "GET",
            "/api/v2/job_templates?name=osac-create-virtual-network",
            "/api/v2/job_templates/?name=osac-create-virtual-network",
        ),
        (
            "POST",
            "/api/v2/job_templates/9/launch",
            "/api/v2/job_templates/9/launch/",
        ),
        ("POST", "/api/v2/jobs/17/cancel", "/api/v2/jobs/17/cancel/"),
    ];
    for (method, path, location) in cases {
        let r = send(
            &c,
            method,
            &format!("{b}{path}"),
            Auth::Bearer(ADMIN),
            Some("{}"),
        )
        .await;
        assert_eq!(
            (r.status, r.header("location")),
            (301, Some(location)),
            "{method} {path}"
        );
    }
    assert!(
        server.aap().jobs().is_empty(),
        "a slashless POST must not launch"
    );
}

#[tokio::test]
async fn auth_bearer_basic_scope_and_expiry() {
    let (server, clock) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let url = format!("{b}/api/v2/job_templates/");
    for auth in [
        Auth::None,
        Auth::Bearer("unknown"),
        Auth::Basic("admin", "bad"),
    ] {
        let r = send(&c, "GET", &url, auth, None).await;
        assert_eq!(r.status, 401);
        assert_eq!(
            r.json,
            json!({"detail": "Authentication credentials were not provided. To establish a login session, visit /api/login/."})
        );
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer realm=api authorization_url=/api/o/authorize/")
        );
        assert!(r.header("x-api-product-version").is_none());
    }
    assert_eq!(
        send(&c, "GET", &url, Auth::Basic("admin", "secret"), None)
            .await
            .status,
        200
    );
    assert_eq!(
        send(&c, "GET", &url, Auth::Bearer(READ), None).await.status,
        200
    );
    let launch = format!("{b}/api/v2/job_templates/9/launch/");
    let r = send(&c, "POST", &launch, Auth::Bearer(READ), Some("{}")).await;
    assert_eq!(
        (r.status, r.json),
        (
            403,
            json!({"detail": "You do not have permission to perform this action."})
        )
    );
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/jobs/1/cancel/"),
        Auth::Bearer(READ),
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    // Token expiry at a time.
    server
        .aap()
        .set_token_expiry(ADMIN, clock_now(&server) + chrono::TimeDelta::seconds(10));
    assert_eq!(
        send(&c, "GET", &url, Auth::Bearer(ADMIN), None)
            .await
            .status,
        200
    );
    clock.advance(Duration::from_secs(11));
    assert_eq!(
        send(&c, "GET", &url, Auth::Bearer(ADMIN), None)
            .await
            .status,
        401
    );
}

fn clock_now(server: &provkit_testing::fake_aap::FakeAapServer) -> chrono::DateTime<chrono::Utc> {
    server.aap().now()
}

#[tokio::test]
async fn visibility_and_execute_permission() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].executable_by = Some(vec!["admin".into()]);
    fx.job_templates[1].visible_to = Some(vec!["admin".into()]);
    let (server, _) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let viewer = Auth::Basic("viewer", "viewer");
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/10/"),
        viewer,
        None,
    )
    .await;
    assert_eq!(r.status, 404);
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/9/"),
        viewer,
        None,
    )
    .await;
    assert_eq!(
        r.json["summary_fields"]["user_capabilities"]["start"],
        false
    );
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        viewer,
        Some("{}"),
    )
    .await;
    assert_eq!(r.status, 403);
    let r = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/?name=osac-no-ask-vars"),
        viewer,
        None,
    )
    .await;
    assert_eq!(r.json["count"], 0);
}

#[tokio::test]
async fn launch_response_shape_and_location() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":"b: 1\na: [x, y]\n"}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.header("location"), Some("/api/v2/jobs/1/"));
    assert_subset(
        &json!({"job": 1, "id": 1, "type": "job", "status": "pending", "ignored_fields": {},
        "extra_vars": "{\"b\": 1, \"a\": [\"x\", \"y\"]}", "url": "/api/v2/jobs/1/"}),
        &r.json,
        "yaml launch",
    );
    assert!(r.json["extra_vars"].is_string());
    for empty in [
        r#"{}"#,
        "",
        r#"{"extra_vars": ""}"#,
        r#"{"extra_vars": "---"}"#,
        r#"{"extra_vars": "\"\""}"#,
    ] {
        let r = send(
            &c,
            "POST",
            &format!("{b}/api/v2/job_templates/9/launch/"),
            Auth::Bearer(ADMIN),
            Some(empty),
        )
        .await;
        assert_eq!(
            (r.status, r.json["extra_vars"].clone()),
            (201, json!("{}")),
            "{empty:?}"
        );
    }
}

#[tokio::test]
async fn workflow_templates_reject_unprompted_fields() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.workflow_job_templates[0].ask_variables_on_launch = false;
    fx.workflow_job_templates[0].extra_vars = "keep: same".into();
    let (server, _) = start(fx).await;
    let c = client();
    let url = format!(
        "{}/api/v2/workflow_job_templates/11/launch/",
        server.base_url()
    );
    let r = send(
        &c,
        "POST",
        &url,
        Auth::Bearer(ADMIN),
        Some(r#"{"limit":"web","extra_vars":{"foo":1,"keep":"same"}}"#),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json,
        json!({
            "limit": ["Field is not configured to prompt on launch."],
            "extra_vars": ["Variables foo are not allowed on launch. Check the Prompt on Launch setting on the Workflow Job Template to include Extra Variables."],
        })
    );
    let r = send(
        &c,
        "POST",
        &url,
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"keep":"same"}}"#),
    )
    .await;
    assert_eq!(r.status, 201, "identical values are dropped silently");
    assert!(server.aap().jobs().len() == 1);
}

fn survey_fixtures() -> provkit_testing::fake_aap::Fixtures {
    let mut fx = observed_fixtures(Mode::Awx);
    let q = |kind: &str, var: &str, required: bool| SurveyQuestion {
        kind: kind.into(),
        variable: var.into(),
        question_name: var.into(),
        required,
        ..SurveyQuestion::default()
    };
    let mut size = q("multiplechoice", "size", false);
    size.choices = json!(["small", "large"]);
    size.default = json!("small");
    fx.job_templates[1].survey_enabled = true;
    fx.job_templates[1].survey_spec = Some(SurveySpec {
        name: "net".into(),
        description: String::new(),
        spec: vec![q("integer", "vlan", true), size],
    });
    fx
}

#[tokio::test]
async fn survey_validation_gives_variables_needed_to_start() {
    let (server, _) = start(survey_fixtures()).await;
    let c = client();
    let b = server.base_url();
    let url = format!("{b}/api/v2/job_templates/10/launch/");
    let info = send(&c, "GET", &url, Auth::Bearer(ADMIN), None).await;
    assert_subset(
        &json!({"survey_enabled": true, "variables_needed_to_start": ["vlan"], "can_start_without_user_input": false}),
        &info.json,
        "info",
    );
    let cases = [
        (
            r#"{}"#,
            json!({"variables_needed_to_start": ["'vlan' value missing"]}),
        ),
        (
            r#"{"extra_vars":{"vlan":"5"}}"#,
            json!({"variables_needed_to_start": ["Value 5 for 'vlan' expected to be an integer."]}),
        ),
        (
            r#"{"extra_vars":{"vlan":5,"size":"huge"}}"#,
            json!({"variables_needed_to_start": ["Value huge for 'size' expected to be one of ['small', 'large']."]}),
        ),
    ];
    for (body, want) in cases {
        let r = send(&c, "POST", &url, Auth::Bearer(ADMIN), Some(body)).await;
        assert_eq!((r.status, r.json), (400, want), "{body}");
    }
    // Valid answers; the survey default is merged; a non-survey key is ignored (no ask flag).
    let r = send(
        &c,
        "POST",
        &url,
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"vlan":5,"other":1}}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.json["extra_vars"], "{\"size\": \"small\", \"vlan\": 5}");
    assert_eq!(
        r.json["ignored_fields"],
        json!({"extra_vars": {"other": 1}})
    );
    let spec = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/10/survey_spec/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(spec.json["spec"][0]["variable"], "vlan");
    let spec = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/9/survey_spec/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(spec.json, json!({}));
}

#[tokio::test]
async fn survey_password_answers_show_as_encrypted_in_the_job_record_but_reach_the_playbook() {
    // aap-api.md: password answers are replaced by `$encrypted$` in the job's extra_vars display;
    // the playbook gets the real value.
    let mut fx = observed_fixtures(Mode::Awx);
    let q = |kind: &str, var: &str| SurveyQuestion {
        kind: kind.into(),
        variable: var.into(),
        question_name: var.into(),
        ..SurveyQuestion::default()
    };
    fx.job_templates[1].survey_enabled = true;
    fx.job_templates[1].survey_spec = Some(SurveySpec {
        name: "creds".into(),
        description: String::new(),
        spec: vec![q("password", "db_password"), q("text", "db_user")],
    });
    fx.job_templates[1].reads = vec!["db_password".into(), "db_user".into()];
    let (server, _) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/10/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"db_password":"hunter2-s3cret","db_user":"app"}}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.json);
    let shown = |text: &serde_json::Value| -> serde_json::Value {
        serde_json::from_str(text.as_str().unwrap()).unwrap()
    };
    let want = json!({"db_password": "$encrypted$", "db_user": "app"});
    assert_eq!(shown(&r.json["extra_vars"]), want, "launch response");
    let id = r.json["id"].as_u64().unwrap();
    let detail = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/{id}/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(shown(&detail.json["extra_vars"]), want, "job detail");
    assert!(!detail.text.contains("hunter2-s3cret"), "{}", detail.text);
    let info = server.aap().job(id).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&info.extra_vars).unwrap(),
        want
    );
    assert_eq!(
        info.reads,
        [
            ("db_password".to_owned(), Ok(json!("hunter2-s3cret"))),
            ("db_user".to_owned(), Ok(json!("app"))),
        ],
        "the playbook saw the real answer"
    );
}

#[tokio::test]
async fn a_workflow_survey_password_is_encrypted_in_the_workflow_and_its_node_jobs() {
    let mut fx = observed_fixtures(Mode::Awx);
    let wf = &mut fx.workflow_job_templates[0];
    wf.stuck_pending = false;
    wf.survey_enabled = true;
    wf.survey_spec = Some(SurveySpec {
        name: "creds".into(),
        description: String::new(),
        spec: vec![SurveyQuestion {
            kind: "password".into(),
            variable: "wf_secret".into(),
            question_name: "wf_secret".into(),
            ..SurveyQuestion::default()
        }],
    });
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/workflow_job_templates/11/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"wf_secret":"wf-s3cret-value"}}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.json);
    let wf_id = r.json["id"].as_u64().unwrap();
    for _ in 0..20 {
        if server.aap().jobs().len() > 1 {
            break;
        }
        clock.advance(std::time::Duration::from_secs(1));
        let _ = send(
            &c,
            "GET",
            &format!("{b}/api/v2/workflow_jobs/{wf_id}/"),
            Auth::Bearer(ADMIN),
            None,
        )
        .await;
    }
    let jobs = server.aap().jobs();
    assert_eq!(jobs.len(), 2, "the workflow and its node job");
    for job in jobs {
        let vars: serde_json::Value = serde_json::from_str(&job.extra_vars).unwrap();
        assert_eq!(
            vars["wf_secret"], "$encrypted$",
            "{} {}",
            job.kind, job.extra_vars
        );
    }
}

#[tokio::test]
async fn passwords_and_missing_inventory_block_the_launch() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].passwords_needed_to_start = vec!["ssh_password".into()];
    fx.job_templates[1].inventory = None;
    let (server, _) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    assert_eq!(
        (r.status, r.json),
        (400, json!({"passwords_needed_to_start": ["ssh_password"]}))
    );
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"credential_passwords":{"ssh_password":"x"}}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/10/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    assert_eq!(
        (r.status, r.json),
        (
            400,
            json!({"resources_needed_to_start": ["Job Template inventory is missing or undefined."]})
        )
    );
    let info = send(
        &c,
        "GET",
        &format!("{b}/api/v2/job_templates/10/launch/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(info.json["inventory_needed_to_start"], true);
}

#[tokio::test]
async fn sliced_job_template_launches_a_workflow_job() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.inventories.push(InventorySpec {
        id: Some(3),
        name: "big".into(),
        organization: "osac".into(),
        hosts: 4,
    });
    fx.job_templates[0].job_slice_count = 3;
    fx.job_templates[0].inventory = Some("big".into());
    fx.job_templates[0].script = Some(JobScript::successful(Duration::from_secs(1)));
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    assert_eq!(r.status, 201);
    assert!(r.json.get("job").is_none());
    assert_subset(
        &json!({"type": "workflow_job", "workflow_job": 1, "id": 1, "is_sliced_job": true, "job_template": 9, "ignored_fields": {}}),
        &r.json,
        "sliced",
    );
    assert_eq!(r.header("location"), Some("/api/v2/workflow_jobs/1/"));
    clock.advance(Duration::from_secs(10));
    let nodes = send(
        &c,
        "GET",
        &format!("{b}/api/v2/workflow_jobs/1/workflow_nodes/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(nodes.json["count"], 3);
    let kids = send(
        &c,
        "GET",
        &format!("{b}/api/v2/unified_jobs/?unified_job_node__workflow_job=1&order_by=id"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(kids.json["count"], 3);
    let slices: Vec<u64> = kids.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_slice_number"].as_u64().unwrap())
        .collect();
    assert_eq!(slices, vec![1, 2, 3]);
    let wf = send(
        &c,
        "GET",
        &format!("{b}/api/v2/workflow_jobs/1/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(wf.json["status"], "successful");
}

#[tokio::test]
async fn non_simultaneous_template_queues_the_second_job() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].script = Some(JobScript::successful(Duration::from_secs(10)));
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    for _ in 0..2 {
        send(
            &c,
            "POST",
            &format!("{b}/api/v2/job_templates/9/launch/"),
            Auth::Bearer(ADMIN),
            Some("{}"),
        )
        .await;
    }
    let status = |id: u64| {
        let c = c.clone();
        let b = b.clone();
        async move {
            send(
                &c,
                "GET",
                &format!("{b}/api/v2/jobs/{id}/"),
                Auth::Bearer(ADMIN),
                None,
            )
            .await
            .json
        }
    };
    clock.advance(Duration::from_secs(5));
    assert_eq!(status(1).await["status"], "running");
    assert_eq!(status(2).await["status"], "pending");
    clock.advance(Duration::from_secs(8)); // job 1 ends at t=11 (0.5 + 0.5 + 10)
    assert_eq!(status(1).await["status"], "successful");
    let j2 = status(2).await;
    assert_ne!(j2["status"], "pending");
    assert!(j2["started"].as_str().unwrap() > status(1).await["finished"].as_str().unwrap());
    clock.advance(Duration::from_secs(20));
    assert_eq!(status(2).await["status"], "successful");
}

#[tokio::test]
async fn job_fields_are_consistent_and_lists_omit_detail_fields() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].allow_simultaneous = true;
    fx.job_templates[0].script = Some(
        JobScript::ending(
            provkit_testing::fake_aap::Outcome::Failed,
            Duration::from_secs(4),
        )
        .with_explanation("boom")
        .with_traceback("tb")
        .with_artifacts(json!({"k": "v"}))
        .with_event_processing_lag(Some(Duration::from_secs(3)))
        // Written against the fake's former default phases.
        .legacy_timing(),
    );
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    let get = || {
        let (c, url) = (c.clone(), format!("{b}/api/v2/jobs/1/"));
        async move { send(&c, "GET", &url, Auth::Bearer(ADMIN), None).await }
    };
    clock.advance(Duration::from_millis(600));
    assert_subset(
        &json!({"status": "waiting", "started": null, "elapsed": 0.0, "failed": false}),
        &get().await.json,
        "waiting",
    );
    clock.advance(Duration::from_millis(1400)); // running for 1 s
    let j = get().await.json;
    assert_subset(
        &json!({"status": "running", "finished": null, "elapsed": 1.0, "failed": false, "job_explanation": "", "artifacts": {}}),
        &j,
        "running",
    );
    clock.advance(Duration::from_secs(4));
    let j = get().await.json;
    assert_subset(
        &json!({"status": "failed", "failed": true, "elapsed": 4.0, "job_explanation": "boom", "result_traceback": "tb",
        "artifacts": {"k": "v"}, "event_processing_finished": false}),
        &j,
        "failed",
    );
    let started = chrono::DateTime::parse_from_rfc3339(j["started"].as_str().unwrap()).unwrap();
    let finished = chrono::DateTime::parse_from_rfc3339(j["finished"].as_str().unwrap()).unwrap();
    assert_eq!((finished - started).num_milliseconds(), 4000);
    clock.advance(Duration::from_secs(3));
    assert_eq!(get().await.json["event_processing_finished"], true);
    let list = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    let item = &list.json["results"][0];
    for k in [
        "result_traceback",
        "event_processing_finished",
        "job_args",
        "job_cwd",
        "job_env",
    ] {
        assert!(item.get(k).is_none(), "list must omit {k}");
    }
    assert_eq!(item["extra_vars"], "{}");
}

#[tokio::test]
async fn cancel_waits_the_configured_delay() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.settings.cancel_delay = Duration::from_secs(3);
    fx.job_templates[0].script = Some(JobScript::run_until_canceled());
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    clock.advance(Duration::from_secs(2));
    assert_eq!(
        send(
            &c,
            "POST",
            &format!("{b}/api/v2/jobs/1/cancel/"),
            Auth::Bearer(ADMIN),
            None
        )
        .await
        .status,
        202
    );
    assert_eq!(
        send(
            &c,
            "POST",
            &format!("{b}/api/v2/jobs/1/cancel/"),
            Auth::Bearer(ADMIN),
            None
        )
        .await
        .status,
        202,
        "second POST while canceling"
    );
    assert_eq!(
        send(
            &c,
            "GET",
            &format!("{b}/api/v2/jobs/1/"),
            Auth::Bearer(ADMIN),
            None
        )
        .await
        .json["status"],
        "running"
    );
    clock.advance(Duration::from_secs(3));
    let j = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/1/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await
    .json;
    assert_subset(
        &json!({"status": "canceled", "failed": true}),
        &j,
        "canceled",
    );
    let r = send(
        &c,
        "POST",
        &format!("{b}/api/v2/jobs/1/cancel/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET, POST, HEAD, OPTIONS"))
    );
}

#[tokio::test]
async fn not_found_bodies_have_detail() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let b = server.base_url();
    let cases = [
        (
            "/api/v2/doesnotexist/",
            "The requested resource could not be found.",
        ),
        ("/nothing/", "The requested resource could not be found."),
        ("/api/v2/jobs/5/", "No Job matches the given query."),
        (
            "/api/v2/workflow_jobs/5/",
            "No WorkflowJob matches the given query.",
        ),
        (
            "/api/v2/job_templates/77/",
            "No JobTemplate matches the given query.",
        ),
        (
            "/api/v2/workflow_job_templates/9/",
            "No WorkflowJobTemplate matches the given query.",
        ),
        ("/api/v2/jobs/5/stdout/", "No Job matches the given query."),
    ];
    for (path, detail) in cases {
        let r = send(&c, "GET", &format!("{b}{path}"), Auth::Bearer(ADMIN), None).await;
        assert_eq!(
            (r.status, r.json),
            (404, json!({ "detail": detail })),
            "{path}"
        );
    }
}

#[tokio::test]
async fn request_id_and_product_headers() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let url = format!("{}/api/v2/ping/", server.base_url());
    let valid = "3f2b8c1e-9a4d-4e7b-8c2d-1a2b3c4d5e6f";
    let r = c
        .get(&url)
        .header("x-api-request-id", valid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-api-request-id"], valid);
    for bad in ["not-a-uuid", "3f2b8c1e-9a4d-1e7b-8c2d-1a2b3c4d5e6f"] {
        let r = c
            .get(&url)
            .header("x-api-request-id", bad)
            .send()
            .await
            .unwrap();
        let id = r.headers()["x-api-request-id"].to_str().unwrap().to_owned();
        assert_ne!(id, bad);
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    let r = c.get(&url).send().await.unwrap();
    assert_eq!(r.headers()["x-api-product-name"], "AWX");
    assert!(r.headers().get("x-api-product-version").is_none());
    assert_eq!(r.headers()["x-api-node"], "awx-1");
    assert!(
        r.headers()["x-api-total-time"]
            .to_str()
            .unwrap()
            .ends_with('s')
    );
    let r = c.get(&url).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(
        r.headers()["x-api-product-version"],
        "24.6.2.dev145+ge21dd0a093"
    );
}

#[tokio::test]
async fn bad_bodies_get_awx_400s() {
    let (server, _) = start(observed_fixtures(Mode::Awx)).await;
    let c = client();
    let url = format!("{}/api/v2/job_templates/9/launch/", server.base_url());
    let cases = [
        (
            "[1]",
            json!({"detail": "JSON parse error - not a JSON object"}),
        ),
        (
            "\"x\"",
            json!({"detail": "JSON parse error - not a JSON object"}),
        ),
        (
            r#"{"a": 1,}"#,
            json!({"detail": "JSON parse error - Expecting property name enclosed in double quotes: line 1 column 9 (char 8)\nPossible cause: trailing comma."}),
        ),
        (
            r#"{"extra_vars": null}"#,
            json!({"extra_vars": ["This field may not be null."]}),
        ),
        (
            r#"{"limit": null}"#,
            json!({"limit": ["This field may not be null."]}),
        ),
        (
            r#"{"extra_vars": 5}"#,
            json!({"extra_vars": ["Cannot parse as JSON (error: the JSON object must be str, bytes or bytearray, not int) or YAML (error: 'int' object has no attribute 'read')."]}),
        ),
        (
            r#"{"extra_vars": "[1, 2]"}"#,
            json!({"extra_vars": ["Cannot parse as JSON (error: Input type `list` is not a dictionary) or YAML (error: Input type `list` is not a dictionary)."]}),
        ),
        (
            r#"{"verbosity": 7}"#,
            json!({"verbosity": ["\"7\" is not a valid choice."]}),
        ),
        (
            r#"{"inventory": 999}"#,
            json!({"inventory": ["Invalid pk \"999\" - object does not exist."]}),
        ),
        (
            r#"{"credentials": {"a": 1}}"#,
            json!({"credentials": ["Cannot use dictionary for credentials"]}),
        ),
    ];
    for (body, want) in cases {
        let r = send(&c, "POST", &url, Auth::Bearer(ADMIN), Some(body)).await;
        assert_eq!((r.status, r.json), (400, want), "{body}");
    }
    let r = send(
        &c,
        "POST",
        &url,
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars": "{unclosed"}"#),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json["extra_vars"][0]
            .as_str()
            .unwrap()
            .starts_with("Cannot parse as JSON (error: ")
    );
    let r = c
        .post(&url)
        .bearer_auth(ADMIN)
        .header("content-type", "text/plain")
        .body("x=1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    assert!(server.aap().jobs().is_empty());
}

#[tokio::test]
async fn filters_on_lists() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].allow_simultaneous = true;
    fx.job_templates[0].script = Some(JobScript::successful(Duration::from_secs(1)));
    fx.organizations
        .push(provkit_testing::fake_aap::OrganizationSpec {
            name: "other".into(),
            ..Default::default()
        });
    fx.job_templates
        .push(JobTemplateSpec::new("osac-create-virtual-network", "other"));
    fx.workflow_job_templates.push(WorkflowJobTemplateSpec::new(
        "osac-no-ask-vars",
        "osac",
        &[],
    ));
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    let get = |q: &str| {
        let (c, url) = (c.clone(), format!("{b}/api/v2/{q}"));
        async move { send(&c, "GET", &url, Auth::Bearer(ADMIN), None).await }
    };
    assert_eq!(
        get("job_templates/?name=osac-create-virtual-network")
            .await
            .json["count"],
        2
    );
    assert_eq!(
        get("job_templates/?name=osac-create-virtual-network&organization__name=osac")
            .await
            .json["count"],
        1
    );
    assert_eq!(
        get("job_templates/?name=osac-create-virtual-network&organization=2")
            .await
            .json["results"][0]["id"],
        9
    );
    assert_eq!(
        get("job_templates/?id=10").await.json["results"][0]["name"],
        "osac-no-ask-vars"
    );
    let u =
        get("unified_job_templates/?name=osac-no-ask-vars&type=job_template,workflow_job_template")
            .await
            .json;
    assert_eq!(u["count"], 2, "JT/WFJT name clash in one organization");
    assert_eq!(
        get("unified_job_templates/?name=osac-no-ask-vars&type=workflow_job_template")
            .await
            .json["count"],
        1
    );
    assert_eq!(get("job_templates/?bogus=1").await.status, 400);
    let t0 = server.aap().now();
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    clock.advance(Duration::from_secs(60));
    let t1 = server.aap().now();
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"marker":"m2"}}"#),
    )
    .await;
    let since = t1.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let r = get(&format!(
        "jobs/?job_template=9&created__gte={since}&order_by=-id&page_size=5"
    ))
    .await
    .json;
    assert_eq!(r["count"], 1);
    assert_eq!(r["results"][0]["extra_vars"], "{\"marker\": \"m2\"}");
    let before = (t0 - chrono::TimeDelta::seconds(1))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    assert_eq!(
        get(&format!("jobs/?created__gt={before}")).await.json["count"],
        2
    );
    assert_eq!(get("jobs/?status=successful").await.json["count"], 1);
    assert_eq!(
        get("jobs/?status__in=pending,waiting,running,successful")
            .await
            .json["count"],
        2
    );
    assert_eq!(get("jobs/?order_by=-id").await.json["results"][0]["id"], 2);
    assert_eq!(get("jobs/?or__id=1&or__id=2").await.json["count"], 2);
    assert_eq!(get("jobs/?not__id=1").await.json["count"], 1);
    assert_eq!(get("workflow_jobs/").await.json["count"], 0);
    assert_eq!(get("job_templates/9/jobs/").await.json["count"], 2);
    // A leading `id=` / `job_template=` term is answered from the index; results and errors
    // are those of evaluating every term in order.
    let by_id = get("unified_jobs/?id=2").await.json;
    assert_eq!(by_id["count"], 1);
    assert_eq!(by_id["results"][0]["id"], 2);
    assert_eq!(get("jobs/?id=99").await.json["count"], 0);
    assert_eq!(get("jobs/?id=abc").await.status, 400);
    assert_eq!(
        get("jobs/?id=2&not__status=successful").await.json["count"],
        1
    );
    assert_eq!(get("jobs/?job_template=9&id=1").await.json["count"], 1);
    let rejected_first = get("jobs/?job_template=9999&created__gt=garbage").await;
    assert_eq!(rejected_first.status, 200);
    assert_eq!(rejected_first.json["count"], 0);
    assert_eq!(
        get("jobs/?created__gt=garbage&job_template=9999")
            .await
            .status,
        400
    );
    // A `created__gt` list reads only the newest jobs while ids follow creation time; once the
    // clock went back (job 3 created before job 2), every job is read again.
    let t1_gte = format!("jobs/?job_template=9&created__gte={since}&order_by=-id");
    assert_eq!(get(&t1_gte).await.json["count"], 1);
    clock.set(t0 - chrono::TimeDelta::seconds(30));
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"marker":"m3"}}"#),
    )
    .await;
    clock.set(t1 + chrono::TimeDelta::seconds(5));
    let r = get(&t1_gte).await.json;
    assert_eq!(r["count"], 1, "job 3 was created before t1: {r}");
    assert_eq!(r["results"][0]["id"], 2);
    assert_eq!(
        get(&format!("jobs/?job_template=9&created__gt={before}"))
            .await
            .json["count"],
        2,
        "jobs 1 and 2 (job 3, the newest id, was created before both)"
    );
    // An error in a term before `created__gt` is still answered when no job is newer.
    let future = (t1 + chrono::TimeDelta::days(1))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    assert_eq!(
        get(&format!("jobs/?id=abc&created__gt={future}"))
            .await
            .status,
        400
    );
}
