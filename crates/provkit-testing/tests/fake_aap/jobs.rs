//! Job scripts under a manual clock: thousands of jobs, stdout, retries, approval, event lag.

use std::sync::Arc;
use std::time::Duration;

use provkit_testing::fake_aap::{
    FakeAap, JobScript, JobTemplateSpec, Mode, Outcome, ScriptRule, WorkflowNodeSpec,
};
use serde_json::json;

use crate::common::{ADMIN, Auth, client, observed_fixtures, send, start};

#[tokio::test]
async fn thousands_of_jobs_move_when_the_clock_advances() {
    let clock =
        provkit_core::ManualClock::new(chrono::DateTime::from_timestamp(1_795_000_000, 0).unwrap());
    let aap = FakeAap::builder()
        .clock(Arc::new(clock.clone()))
        .request_log_capacity(0)
        .job_template(JobTemplateSpec {
            allow_simultaneous: true,
            script: Some(JobScript::successful(Duration::from_secs(30))),
            ..JobTemplateSpec::new("bulk", "Default")
        })
        .build()
        .unwrap();
    let server_aap = aap.clone();
    let server = FakeAap::builder().build().unwrap(); // an unrelated instance does not interfere
    drop(server);
    let router = server_aap.router();
    use tower::ServiceExt as _;
    for i in 0..2000 {
        let req = http::Request::post("/api/v2/job_templates/bulk++Default/launch/")
            .header("authorization", format!("Bearer {}", aap.admin_token()))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(format!(
                r#"{{"extra_vars":{{"i":{i}}}}}"#
            )))
            .unwrap();
        assert_eq!(router.clone().oneshot(req).await.unwrap().status(), 201);
    }
    assert!(aap.jobs().iter().all(|j| j.status == "pending"));
    clock.advance(Duration::from_secs(5));
    assert!(aap.jobs().iter().all(|j| j.status == "running"));
    aap.advance(Duration::from_secs(60));
    let jobs = aap.jobs();
    assert_eq!(jobs.len(), 2000);
    assert!(jobs.iter().all(|j| j.status == "successful"));
    assert_eq!(jobs[1999].extra_vars, "{\"i\": 1999}");
    // The footprint counts what `jobs()` copies, without copying it.
    let footprint = aap.jobs_footprint();
    assert_eq!(footprint.jobs, 2000);
    assert_eq!(
        footprint.extra_vars_bytes,
        jobs.iter().map(|j| j.extra_vars.len()).sum::<usize>()
    );
    assert_eq!(
        aap.launch_count(aap.template_id("bulk", Some("Default")).unwrap()),
        2000
    );
}

#[tokio::test]
async fn fail_n_times_then_succeed_and_rules_by_extra_var() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].allow_simultaneous = true;
    fx.job_templates[0].script = Some(JobScript::successful(Duration::from_secs(1)));
    fx.job_templates[0].scripts = vec![
        ScriptRule::when_extra_var(
            "name",
            json!("doomed"),
            JobScript::error_before_start(Duration::from_secs(1)).with_explanation("no capacity"),
        ),
        ScriptRule::fail_times(2),
    ];
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    for body in [
        r#"{"extra_vars":{"name":"a"}}"#,
        r#"{"extra_vars":{"name":"a"}}"#,
        r#"{"extra_vars":{"name":"doomed"}}"#,
        r#"{"extra_vars":{"name":"a"}}"#,
    ] {
        assert_eq!(
            send(
                &c,
                "POST",
                &format!("{b}/api/v2/job_templates/9/launch/"),
                Auth::Bearer(ADMIN),
                Some(body)
            )
            .await
            .status,
            201
        );
    }
    clock.advance(Duration::from_secs(30));
    let statuses: Vec<&str> = server.aap().jobs().iter().map(|j| j.status).collect();
    assert_eq!(statuses, vec!["failed", "failed", "error", "successful"]);
    let j = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/3/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await
    .json;
    assert_eq!(
        (j["job_explanation"].clone(), j["started"].clone()),
        (json!("no capacity"), json!(null))
    );
    // Per-launch script pushed through the inspection API.
    server
        .aap()
        .push_script(
            9,
            ScriptRule::once(JobScript::ending(Outcome::Canceled, Duration::from_secs(1))),
        )
        .unwrap();
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/9/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    clock.advance(Duration::from_secs(30));
    assert_eq!(server.aap().job(5).unwrap().status, "canceled");
}

#[tokio::test]
async fn stdout_is_progressive_stripped_and_limited() {
    let mut fx = observed_fixtures(Mode::Awx);
    let text: String = (0..10)
        .map(|i| format!("\u{1b}[0;32mline {i}\u{1b}[0m\n"))
        .collect();
    fx.job_templates[0].script = Some(
        JobScript::successful(Duration::from_secs(10))
            .with_phases(Duration::ZERO, Duration::ZERO, Duration::from_secs(10))
            .with_stdout(text.clone()),
    );
    let big = "x".repeat(1_048_577);
    fx.job_templates[1].script =
        Some(JobScript::successful(Duration::from_secs(1)).with_stdout(big.clone()));
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
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/job_templates/10/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    let txt = |id: u64, fmt: &'static str| {
        let (c, url) = (
            c.clone(),
            format!("{b}/api/v2/jobs/{id}/stdout/?format={fmt}"),
        );
        async move { send(&c, "GET", &url, Auth::Bearer(ADMIN), None).await }
    };
    clock.advance(Duration::from_secs(5));
    let half = txt(1, "txt").await;
    assert_eq!(half.header("content-type"), Some("text/plain"));
    assert!(
        half.text.starts_with("line 0\n")
            && half.text.lines().count() < 10
            && half.text.lines().count() >= 4,
        "{:?}",
        half.text
    );
    clock.advance(Duration::from_secs(10));
    let full = txt(1, "txt").await.text;
    assert_eq!(full.lines().count(), 10);
    assert!(!full.contains('\u{1b}'));
    assert_eq!(txt(1, "ansi").await.text, text);
    let json_out = txt(1, "json").await.json;
    assert_eq!(json_out["range"]["end"], 10);
    assert_eq!(
        txt(2, "txt").await.text,
        "Standard Output too large to display (1048577 bytes), only download supported for sizes over 1048576 bytes."
    );
    let dl = txt(2, "txt_download").await;
    assert_eq!(dl.text.len(), big.len());
    assert!(
        dl.header("content-disposition")
            .unwrap()
            .contains("job_2.txt")
    );
}

#[tokio::test]
async fn approval_keeps_workflow_running_and_event_processing_may_never_finish() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].script =
        Some(JobScript::error_before_start(Duration::from_secs(1)).with_event_processing_lag(None));
    fx.workflow_job_templates[0].stuck_pending = false;
    fx.workflow_job_templates[0].nodes[0].failure_handled = true;
    fx.workflow_job_templates[0].nodes.push(WorkflowNodeSpec {
        approval: true,
        ..WorkflowNodeSpec::default()
    });
    let (server, clock) = start(fx).await;
    let c = client();
    let b = server.base_url();
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/workflow_job_templates/11/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    clock.advance(Duration::from_secs(3600));
    let wf = send(
        &c,
        "GET",
        &format!("{b}/api/v2/workflow_jobs/1/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await
    .json;
    assert_eq!(wf["status"], "running", "approval pending forever");
    let child = send(
        &c,
        "GET",
        &format!("{b}/api/v2/jobs/2/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await
    .json;
    assert_eq!(
        (
            child["status"].clone(),
            child["event_processing_finished"].clone()
        ),
        (json!("error"), json!(false))
    );
    let nodes = send(
        &c,
        "GET",
        &format!("{b}/api/v2/workflow_jobs/1/workflow_nodes/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await
    .json;
    assert_eq!(nodes["count"], 2);
    assert_eq!(nodes["results"][1]["job"], json!(null));
}

#[tokio::test]
async fn canceling_a_queued_predecessor_moves_a_waiting_workflow() {
    let mut fx = observed_fixtures(Mode::Awx);
    fx.job_templates[0].script = Some(JobScript::successful(Duration::from_secs(1)));
    fx.job_templates[0].scripts = vec![ScriptRule::once(JobScript::successful(
        Duration::from_secs(100),
    ))];
    fx.workflow_job_templates[0].stuck_pending = false;
    fx.workflow_job_templates[0].pending = Duration::ZERO;
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
    send(
        &c,
        "POST",
        &format!("{b}/api/v2/workflow_job_templates/11/launch/"),
        Auth::Bearer(ADMIN),
        Some("{}"),
    )
    .await;
    clock.advance(Duration::from_secs(5));
    let child = server
        .aap()
        .jobs()
        .into_iter()
        .find(|j| j.launch_type == "workflow")
        .unwrap();
    assert_eq!(
        child.status, "pending",
        "queued behind job 1 (allow_simultaneous false)"
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
        202
    );
    clock.advance(Duration::from_secs(5));
    let wf = send(
        &c,
        "GET",
        &format!("{b}/api/v2/workflow_jobs/2/"),
        Auth::Bearer(ADMIN),
        None,
    )
    .await
    .json;
    assert_eq!(wf["status"], "successful");
    assert_eq!(server.aap().job(child.id).unwrap().status, "successful");
}

/// `snapshot_jobs` → JSON → `restore_jobs` into a new fake with the same templates: the same
/// jobs (ids, extra_vars, creation times, status as the clock moves, a cancel), and the next
/// launch gets the next id.
#[tokio::test]
async fn jobs_survive_a_snapshot_and_restore_into_a_new_fake() {
    use tower::ServiceExt as _;
    let clock =
        provkit_core::ManualClock::new(chrono::DateTime::from_timestamp(1_795_000_000, 0).unwrap());
    let build = || {
        FakeAap::builder()
            .clock(Arc::new(clock.clone()))
            .job_template(JobTemplateSpec {
                allow_simultaneous: true,
                script: Some(JobScript::successful(Duration::from_secs(30))),
                ..JobTemplateSpec::new("create", "Default")
            })
            .build()
            .unwrap()
    };
    let launch = |aap: &FakeAap, i: u32| {
        let router = aap.router();
        let req = http::Request::post("/api/v2/job_templates/create++Default/launch/")
            .header("authorization", format!("Bearer {}", aap.admin_token()))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(format!(
                r#"{{"extra_vars":{{"i":{i}}}}}"#
            )))
            .unwrap();
        async move { router.oneshot(req).await.unwrap().status() }
    };
    let before = build();
    for i in 0..3 {
        assert_eq!(launch(&before, i).await, 201);
    }
    before.purge_job(2).unwrap();
    let cancel = http::Request::post("/api/v2/jobs/3/cancel/")
        .header("authorization", format!("Bearer {}", before.admin_token()))
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(before.router().oneshot(cancel).await.unwrap().status(), 202);
    clock.advance(Duration::from_secs(10));
    let text = serde_json::to_string(&before.snapshot_jobs()).unwrap();

    let after = build();
    after
        .restore_jobs(&serde_json::from_str(&text).unwrap())
        .unwrap();
    assert_eq!(after.jobs(), before.jobs());
    assert_eq!(after.jobs().len(), 2, "the purged job stays purged");
    clock.advance(Duration::from_secs(60));
    assert_eq!(after.jobs(), before.jobs());
    let status: Vec<&str> = after.jobs().iter().map(|j| j.status).collect();
    assert_eq!(status, ["successful", "canceled"]);
    assert_eq!(launch(&after, 9).await, 201);
    assert_eq!(after.jobs().last().unwrap().id, 4);
    assert!(
        after.restore_jobs(&before.snapshot_jobs()).is_err(),
        "only into an empty fake"
    );
}
