//! The real AWX 24.6 exchanges of `aap-observed.md`, replayed in order against the fake and
//! compared field by field (table test).

use provkit_testing::fake_aap::Mode;
use serde_json::{Value, json};

use crate::common::{ADMIN, Auth, READ, assert_subset, client, observed_fixtures, send, start};

const UNAUTH: &str = "Authentication credentials were not provided. To establish a login session, visit /api/login/.";
const WWW: &str = "Bearer realm=api authorization_url=/api/o/authorize/";

struct Step {
    what: &'static str,
    method: &'static str,
    path: &'static str,
    auth: Auth<'static>,
    body: Option<&'static str>,
    status: u16,
    expect: Value,
    absent: &'static [&'static str],
}

fn step(
    what: &'static str,
    method: &'static str,
    path: &'static str,
    status: u16,
    expect: Value,
) -> Step {
    Step {
        what,
        method,
        path,
        auth: Auth::Bearer(ADMIN),
        body: None,
        status,
        expect,
        absent: &[],
    }
}

fn steps() -> Vec<Step> {
    let no_auth = |mut s: Step| {
        s.auth = Auth::None;
        s
    };
    let with_body = |mut s: Step, b: &'static str| {
        s.body = Some(b);
        s
    };
    let with_auth = |mut s: Step, a: Auth<'static>| {
        s.auth = a;
        s
    };
    let absent = |mut s: Step, keys: &'static [&'static str]| {
        s.absent = keys;
        s
    };
    vec![
        no_auth(step(
            "§2 ping",
            "GET",
            "/api/v2/ping/",
            200,
            json!({
            "ha": false, "version": "24.6.2.dev145+ge21dd0a093", "active_node": "awx-1",
            "instance_groups": [{"name": "controlplane", "capacity": 220, "instances": ["awx-1"]},
                                {"name": "default", "capacity": 220, "instances": ["awx-1"]}]}),
        )),
        no_auth(step(
            "§3 me without credentials",
            "GET",
            "/api/v2/me/",
            401,
            json!({"detail": UNAUTH}),
        )),
        with_auth(
            step(
                "§3 me wrong basic password",
                "GET",
                "/api/v2/me/",
                401,
                json!({"detail": UNAUTH}),
            ),
            Auth::Basic("admin", "wrong"),
        ),
        with_auth(
            step(
                "§3 me unknown bearer",
                "GET",
                "/api/v2/me/",
                401,
                json!({"detail": UNAUTH}),
            ),
            Auth::Bearer("nope"),
        ),
        with_auth(
            step(
                "§3 me basic",
                "GET",
                "/api/v2/me/",
                200,
                json!({"count": 1, "results": [{"id": 1, "username": "admin", "is_superuser": true}]}),
            ),
            Auth::Basic("admin", "secret"),
        ),
        with_auth(
            with_body(
                step(
                    "§3 personal token",
                    "POST",
                    "/api/v2/users/1/personal_tokens/",
                    201,
                    json!({"type": "o_auth2_access_token", "user": 1, "refresh_token": null, "application": null, "scope": "write"}),
                ),
                r#"{"description":"rust-client","application":null,"scope":"write"}"#,
            ),
            Auth::Basic("admin", "secret"),
        ),
        step(
            "§3 me bearer",
            "GET",
            "/api/v2/me/",
            200,
            json!({"count": 1, "results": [{"id": 1, "username": "admin"}]}),
        ),
        step(
            "§5 JT by name",
            "GET",
            "/api/v2/job_templates/?name=osac-create-virtual-network",
            200,
            json!({
            "count": 1, "next": null, "previous": null,
            "results": [{"id": 9, "type": "job_template", "name": "osac-create-virtual-network",
                         "ask_variables_on_launch": true, "status": "never updated", "url": "/api/v2/job_templates/9/"}]}),
        ),
        step(
            "§5 no match",
            "GET",
            "/api/v2/job_templates/?name=does-not-exist",
            200,
            json!({"count": 0, "next": null, "previous": null, "results": []}),
        ),
        step(
            "§5 unified WFJT by name",
            "GET",
            "/api/v2/unified_job_templates/?name=osac-workflow",
            200,
            json!({
            "count": 1, "results": [{"id": 11, "type": "workflow_job_template", "name": "osac-workflow",
                                     "status": "never updated", "url": "/api/v2/workflow_job_templates/11/"}]}),
        ),
        step(
            "§5 named URL",
            "GET",
            "/api/v2/job_templates/osac-create-virtual-network++osac/",
            200,
            json!({"id": 9, "name": "osac-create-virtual-network", "url": "/api/v2/job_templates/9/"}),
        ),
        step(
            "§5 named URL launch",
            "GET",
            "/api/v2/job_templates/osac-create-virtual-network++osac/launch/",
            200,
            json!({"ask_variables_on_launch": true, "can_start_without_user_input": false}),
        ),
        step(
            "§6.1 launch requirements",
            "GET",
            "/api/v2/job_templates/9/launch/",
            200,
            json!({
            "ask_variables_on_launch": true, "can_start_without_user_input": false,
            "passwords_needed_to_start": [], "variables_needed_to_start": [], "survey_enabled": false,
            "defaults": {"extra_vars": ""}}),
        ),
        absent(
            with_body(
                step(
                    "§6.2 launch with object",
                    "POST",
                    "/api/v2/job_templates/9/launch/",
                    201,
                    json!({
            "job": 1, "id": 1, "type": "job", "status": "pending", "ignored_fields": {},
            "extra_vars": "{\"network_name\": \"net-a\", \"cidr\": \"10.0.0.0/24\"}",
            "launch_type": "manual", "failed": false}),
                ),
                r#"{"extra_vars":{"network_name":"net-a","cidr":"10.0.0.0/24"}}"#,
            ),
            &["can_cancel", "cancel_flag"],
        ),
        with_body(
            step(
                "§6.3 launch with JSON string",
                "POST",
                "/api/v2/job_templates/9/launch/",
                201,
                json!({
            "job": 2, "id": 2, "type": "job", "status": "pending", "ignored_fields": {},
            "extra_vars": "{\"network_name\": \"net-b\"}", "launch_type": "manual", "failed": false}),
            ),
            r#"{"extra_vars":"{\"network_name\": \"net-b\"}"}"#,
        ),
        with_body(
            step(
                "§6.4 ignored extra_vars",
                "POST",
                "/api/v2/job_templates/10/launch/",
                201,
                json!({
            "job": 3, "id": 3, "type": "job", "status": "pending",
            "ignored_fields": {"extra_vars": {"network_name": "net-c"}}, "extra_vars": "{}",
            "launch_type": "manual", "failed": false}),
            ),
            r#"{"extra_vars":{"network_name":"net-c"}}"#,
        ),
        step(
            "§5 unified JT status pending",
            "GET",
            "/api/v2/unified_job_templates/?name=osac-create-virtual-network",
            200,
            json!({
            "count": 1, "next": null, "previous": null,
            "results": [{"id": 9, "type": "job_template", "name": "osac-create-virtual-network", "status": "pending",
                         "url": "/api/v2/job_templates/9/", "related": {"launch": "/api/v2/job_templates/9/launch/"}}]}),
        ),
        with_body(
            step(
                "§6.6 unknown template",
                "POST",
                "/api/v2/job_templates/99999/launch/",
                404,
                json!({"detail": "No JobTemplate matches the given query."}),
            ),
            r#"{"extra_vars":{}}"#,
        ),
        with_body(
            step(
                "§6.6 truncated JSON",
                "POST",
                "/api/v2/job_templates/9/launch/",
                400,
                json!({"detail": "JSON parse error - Expecting value: line 1 column 16 (char 15)\nPossible cause: trailing comma."}),
            ),
            "{\"extra_vars\": ",
        ),
        with_body(
            step(
                "§6.6 extra_vars list",
                "POST",
                "/api/v2/job_templates/9/launch/",
                400,
                json!({"extra_vars": ["Cannot parse as JSON (error: the JSON object must be str, bytes or bytearray, not list) or YAML (error: 'list' object has no attribute 'read')."]}),
            ),
            r#"{"extra_vars":[1,2]}"#,
        ),
        absent(
            step(
                "§6.7 pending job detail",
                "GET",
                "/api/v2/jobs/1/",
                200,
                json!({
            "id": 1, "type": "job", "name": "osac-create-virtual-network", "status": "pending", "failed": false,
            "started": null, "finished": null, "elapsed": 0.0, "job_explanation": "", "launch_type": "manual",
            "extra_vars": "{\"network_name\": \"net-a\", \"cidr\": \"10.0.0.0/24\"}", "execution_node": "",
            "controller_node": "", "instance_group": null, "job_template": 9, "unified_job_template": 9}),
            ),
            &["can_cancel", "cancel_flag"],
        ),
        with_auth(
            with_body(
                step(
                    "§6.8 read token launch",
                    "POST",
                    "/api/v2/job_templates/9/launch/",
                    403,
                    json!({"detail": "You do not have permission to perform this action."}),
                ),
                r#"{"extra_vars":{}}"#,
            ),
            Auth::Bearer(READ),
        ),
        step(
            "§6.9 can_cancel pending",
            "GET",
            "/api/v2/jobs/1/cancel/",
            200,
            json!({"can_cancel": true}),
        ),
        step(
            "§6.9 cancel pending",
            "POST",
            "/api/v2/jobs/1/cancel/",
            202,
            Value::Null,
        ),
        step(
            "§6.9 canceled synchronously",
            "GET",
            "/api/v2/jobs/1/",
            200,
            json!({"id": 1, "status": "canceled", "failed": true, "job_explanation": ""}),
        ),
        step(
            "§6.9 can_cancel after",
            "GET",
            "/api/v2/jobs/1/cancel/",
            200,
            json!({"can_cancel": false}),
        ),
        step(
            "§6.9 cancel again",
            "POST",
            "/api/v2/jobs/1/cancel/",
            405,
            json!({"detail": "Method \"POST\" not allowed."}),
        ),
        step(
            "§6.10 unknown job",
            "GET",
            "/api/v2/jobs/99999/",
            404,
            json!({"detail": "No Job matches the given query."}),
        ),
        step(
            "§6.10 cancel unknown job",
            "POST",
            "/api/v2/jobs/99999/cancel/",
            404,
            json!({"detail": "No Job matches the given query."}),
        ),
        step(
            "§7 WFJT launch requirements",
            "GET",
            "/api/v2/workflow_job_templates/11/launch/",
            200,
            json!({
            "ask_variables_on_launch": true, "can_start_without_user_input": true, "variables_needed_to_start": [],
            "node_templates_missing": [], "node_prompts_rejected": [], "survey_enabled": false}),
        ),
        absent(
            with_body(
                step(
                    "§7 WFJT launch",
                    "POST",
                    "/api/v2/workflow_job_templates/11/launch/",
                    201,
                    json!({
            "workflow_job": 4, "id": 4, "type": "workflow_job", "status": "pending", "ignored_fields": {},
            "extra_vars": "{\"network_name\": \"wf-net\"}", "failed": false, "launch_type": "manual"}),
                ),
                r#"{"extra_vars":{"network_name":"wf-net"}}"#,
            ),
            &["job"],
        ),
        absent(
            step(
                "§7 workflow job pending",
                "GET",
                "/api/v2/workflow_jobs/4/",
                200,
                json!({
            "id": 4, "type": "workflow_job", "name": "osac-workflow", "status": "pending", "failed": false,
            "started": null, "finished": null, "elapsed": 0.0, "job_explanation": "",
            "extra_vars": "{\"network_name\": \"wf-net\"}", "workflow_job_template": 11, "is_sliced_job": false}),
            ),
            &["can_cancel"],
        ),
        step(
            "§7 workflow nodes pending",
            "GET",
            "/api/v2/workflow_jobs/4/workflow_nodes/",
            200,
            json!({
            "count": 1, "results": [{"job": null, "unified_job_template": 9, "do_not_run": false,
                                     "identifier": "caa5e7b6-0efc-4d25-bec6-b4051ccc9a7d"}]}),
        ),
        with_body(
            step(
                "§7 WFJT launch 2",
                "POST",
                "/api/v2/workflow_job_templates/11/launch/",
                201,
                json!({"workflow_job": 5, "status": "pending"}),
            ),
            r#"{"extra_vars":{"network_name":"wf-cancel"}}"#,
        ),
        step(
            "§7 WF can_cancel",
            "GET",
            "/api/v2/workflow_jobs/5/cancel/",
            200,
            json!({"can_cancel": true, "job_explanation": ""}),
        ),
        step(
            "§7 WF cancel",
            "POST",
            "/api/v2/workflow_jobs/5/cancel/",
            202,
            Value::Null,
        ),
        step(
            "§7 WF canceled",
            "GET",
            "/api/v2/workflow_jobs/5/",
            200,
            json!({"id": 5, "status": "canceled", "failed": true, "job_explanation": ""}),
        ),
        step(
            "§7 unknown workflow job",
            "GET",
            "/api/v2/workflow_jobs/99999/",
            404,
            json!({"detail": "No WorkflowJob matches the given query."}),
        ),
        step(
            "§8.1 unified jobs",
            "GET",
            "/api/v2/unified_jobs/?order_by=id",
            200,
            json!({
            "count": 5, "results": [
                {"id": 1, "type": "job", "name": "osac-create-virtual-network", "status": "canceled"},
                {"id": 2, "type": "job", "name": "osac-create-virtual-network", "status": "pending"},
                {"id": 3, "type": "job", "name": "osac-no-ask-vars", "status": "pending"},
                {"id": 4, "type": "workflow_job", "name": "osac-workflow", "status": "pending"},
                {"id": 5, "type": "workflow_job", "name": "osac-workflow", "status": "canceled"}]}),
        ),
        step(
            "§8.2 pagination",
            "GET",
            "/api/v2/jobs/?page_size=2&order_by=id",
            200,
            json!({
            "count": 3, "next": "/api/v2/jobs/?order_by=id&page=2&page_size=2", "previous": null,
            "results": [{"id": 1, "status": "canceled"}, {"id": 2, "status": "pending"}]}),
        ),
        with_body(
            step(
                "§8.5 POST ping",
                "POST",
                "/api/v2/ping/",
                405,
                json!({"detail": "Method \"POST\" not allowed."}),
            ),
            "{}",
        ),
        step(
            "lost launch: extra_vars filter refused (403 with production settings, §13.3)",
            "GET",
            "/api/v2/jobs/?extra_vars__icontains=net-a",
            403,
            json!({"detail": "Filtering on extra_vars is not allowed."}),
        ),
        step(
            "lost launch: search ignores extra_vars",
            "GET",
            "/api/v2/jobs/?search=net-a",
            200,
            json!({"count": 0}),
        ),
    ]
}

#[tokio::test]
async fn observed_exchanges_are_reproduced_field_for_field() {
    let (server, _clock) = start(observed_fixtures(Mode::Both)).await;
    let c = client();
    for s in steps() {
        let r = send(
            &c,
            s.method,
            &format!("{}{}", server.base_url(), s.path),
            s.auth,
            s.body,
        )
        .await;
        assert_eq!(
            r.status, s.status,
            "{}: {} {} → {}",
            s.what, s.method, s.path, r.text
        );
        if s.expect.is_null() {
            assert!(
                r.text.is_empty(),
                "{}: expected empty body, got {}",
                s.what,
                r.text
            );
        } else {
            assert_subset(&s.expect, &r.json, s.what);
        }
        for key in s.absent {
            assert!(
                r.json.get(key).is_none(),
                "{}: key {key} must be absent",
                s.what
            );
        }
        if s.status == 401 {
            assert_eq!(r.header("www-authenticate"), Some(WWW), "{}", s.what);
        }
    }
    // Observed headers: product name always, version only when authenticated.
    let anon = send(
        &c,
        "GET",
        &format!("{}/api/v2/ping/", server.base_url()),
        Auth::None,
        None,
    )
    .await;
    assert_eq!(anon.header("x-api-product-name"), Some("AWX"));
    assert_eq!(anon.header("x-api-product-version"), None);
    let authed = send(
        &c,
        "GET",
        &format!("{}/api/v2/ping/", server.base_url()),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(
        authed.header("x-api-product-version"),
        Some("24.6.2.dev145+ge21dd0a093")
    );
    // §3 version root: 53 keys.
    let root = send(
        &c,
        "GET",
        &format!("{}/api/v2/", server.base_url()),
        Auth::None,
        None,
    )
    .await;
    assert_eq!(root.json.as_object().map(serde_json::Map::len), Some(53));
    // §9: the same ids and bodies under /api/controller/v2/, with prefixed links.
    let r = send(
        &c,
        "GET",
        &format!(
            "{}/api/controller/v2/job_templates/?name=osac-create-virtual-network",
            server.base_url()
        ),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"count": 1, "results": [{"id": 9, "url": "/api/controller/v2/job_templates/9/",
        "related": {"launch": "/api/controller/v2/job_templates/9/launch/"}}]}),
        &r.json,
        "§9 list",
    );
    let r = send(
        &c,
        "POST",
        &format!(
            "{}/api/controller/v2/job_templates/9/launch/",
            server.base_url()
        ),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"network_name":"net-prefixed"}}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_subset(
        &json!({"job": 6, "id": 6, "status": "pending", "ignored_fields": {}, "url": "/api/controller/v2/jobs/6/"}),
        &r.json,
        "§9 launch",
    );
    assert_eq!(r.header("location"), Some("/api/controller/v2/jobs/6/"));
    let r = send(
        &c,
        "GET",
        &format!(
            "{}/api/controller/v2/workflow_jobs/99999/",
            server.base_url()
        ),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"detail": "No WorkflowJob matches the given query."}),
        &r.json,
        "§9 404",
    );
}

#[tokio::test]
async fn observed_limit_is_ignored_and_template_status_follows_jobs() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].script = Some(provkit_testing::fake_aap::JobScript::error_before_start(
        std::time::Duration::from_millis(500),
    ));
    let (server, clock) = start(fx).await;
    let c = client();
    let base = server.base_url();
    // §6.5
    let r = send(
        &c,
        "POST",
        &format!("{base}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"network_name":"net-e"},"limit":"localhost"}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_subset(
        &json!({"status": "pending", "ignored_fields": {"limit": "localhost"},
        "extra_vars": "{\"network_name\": \"net-e\"}", "limit": ""}),
        &r.json,
        "§6.5",
    );
    assert_eq!(r.header("location"), Some("/api/v2/jobs/1/"));
    // §6.11 / §8.4: ends in error with a traceback; the template shows `failed`.
    clock.advance(std::time::Duration::from_secs(2));
    let job = send(
        &c,
        "GET",
        &format!("{base}/api/v2/jobs/1/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"id": 1, "status": "error", "failed": true, "job_explanation": "", "event_processing_finished": true}),
        &job.json,
        "§6.11",
    );
    assert!(
        job.json["result_traceback"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    let out = send(
        &c,
        "GET",
        &format!("{base}/api/v2/jobs/1/stdout/?format=json"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(
        out.json,
        json!({"range": {"start": 0, "end": 0, "absolute_end": 0}, "content": ""})
    );
    let jt = send(
        &c,
        "GET",
        &format!("{base}/api/v2/job_templates/9/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"id": 9, "status": "failed", "last_job_failed": true,
        "summary_fields": {"last_job": {"id": 1, "name": "osac-create-virtual-network", "description": "", "status": "error", "failed": true}}}),
        &jt.json,
        "§8.4",
    );
    assert_eq!(
        jt.json["last_job_run"],
        jt.json["summary_fields"]["last_job"]["finished"]
    );
    // §8.3 filter by template and status
    let list = send(
        &c,
        "GET",
        &format!("{base}/api/v2/jobs/?job_template=9&status=error&order_by=-id&page_size=3"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"count": 1, "results": [{"id": 1, "status": "error", "failed": true}]}),
        &list.json,
        "§8.3",
    );
}

#[tokio::test]
async fn observed_workflow_failure_and_running_cancel() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].script = Some(provkit_testing::fake_aap::JobScript::error_before_start(
        std::time::Duration::from_millis(300),
    ));
    fx.workflow_job_templates[0].stuck_pending = false;
    // Written against the fake's former immediate cancel of a running job (now 2 s, §13.1).
    fx.settings.cancel_delay = std::time::Duration::ZERO;
    let (server, clock) = start(fx).await;
    let c = client();
    let base = server.base_url();
    let r = send(
        &c,
        "POST",
        &format!("{base}/api/v2/workflow_job_templates/11/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"network_name":"wf-net"}}"#),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.header("location"), Some("/api/v2/workflow_jobs/1/"));
    clock.advance(std::time::Duration::from_secs(30));
    let wf = send(
        &c,
        "GET",
        &format!("{base}/api/v2/workflow_jobs/1/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"id": 1, "status": "failed", "failed": true,
        "job_explanation": "No error handling paths found, marking workflow as failed"}),
        &wf.json,
        "§7 failed",
    );
    let nodes = send(
        &c,
        "GET",
        &format!("{base}/api/v2/workflow_jobs/1/workflow_nodes/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"count": 1, "results": [{"job": 2, "do_not_run": false,
        "summary_fields": {"job": {"id": 2, "name": "osac-create-virtual-network", "description": "", "status": "error", "failed": true, "type": "job"}}}]}),
        &nodes.json,
        "§7 nodes",
    );
    let child = send(
        &c,
        "GET",
        &format!("{base}/api/v2/jobs/2/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"id": 2, "status": "error", "failed": true, "launch_type": "workflow",
        "extra_vars": "{\"network_name\": \"wf-net\"}", "job_explanation": "",
        "summary_fields": {"source_workflow_job": {"id": 1, "name": "osac-workflow", "description": "", "status": "failed", "failed": true}}}),
        &child.json,
        "§7 child",
    );
    // §6.12 running job canceled; §7 running workflow canceled cancels its child.
    server
        .aap()
        .set_template_script(
            9,
            provkit_testing::fake_aap::JobScript::run_until_canceled(),
        )
        .unwrap();
    let r = send(
        &c,
        "POST",
        &format!("{base}/api/v2/workflow_job_templates/11/launch/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"extra_vars":{"network_name":"wf-hold"}}"#),
    )
    .await;
    let wf_id = r.json["workflow_job"].as_u64().unwrap();
    clock.advance(std::time::Duration::from_secs(5));
    let wf = send(
        &c,
        "GET",
        &format!("{base}/api/v2/workflow_jobs/{wf_id}/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"status": "running", "failed": false, "finished": null, "job_explanation": ""}),
        &wf.json,
        "running wf",
    );
    let nodes = send(
        &c,
        "GET",
        &format!("{base}/api/v2/workflow_jobs/{wf_id}/workflow_nodes/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    let child_id = nodes.json["results"][0]["job"].as_u64().unwrap();
    assert_eq!(
        nodes.json["results"][0]["summary_fields"]["job"]["status"],
        "running"
    );
    let child = send(
        &c,
        "GET",
        &format!("{base}/api/v2/jobs/{child_id}/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert!(
        child.json["work_unit_id"]
            .as_str()
            .is_some_and(|w| w.len() == 8)
    );
    assert_eq!(child.json["execution_node"], "awx-1");
    let r = send(
        &c,
        "POST",
        &format!("{base}/api/v2/workflow_jobs/{wf_id}/cancel/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_eq!(r.status, 202);
    let wf = send(
        &c,
        "GET",
        &format!("{base}/api/v2/workflow_jobs/{wf_id}/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"status": "canceled", "failed": true, "job_explanation": ""}),
        &wf.json,
        "canceled wf",
    );
    let nodes = send(
        &c,
        "GET",
        &format!("{base}/api/v2/workflow_jobs/{wf_id}/workflow_nodes/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"count": 1, "results": [{"job": child_id, "summary_fields": {"job": {"id": child_id, "status": "canceled", "failed": true}}}]}),
        &nodes.json,
        "canceled child",
    );
    let child = send(
        &c,
        "GET",
        &format!("{base}/api/v2/jobs/{child_id}/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await;
    assert_subset(
        &json!({"status": "canceled", "failed": true, "job_explanation": "", "result_traceback": ""}),
        &child.json,
        "§6.12",
    );
    assert!(child.json["work_unit_id"].as_str().is_some());
}
