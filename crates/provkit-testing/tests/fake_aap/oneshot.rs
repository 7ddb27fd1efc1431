//! In-process tests through `tower::ServiceExt::oneshot` (no socket).

use provkit_testing::fake_aap::{FakeAap, Mode};
use tower::ServiceExt as _;

async fn call(
    aap: &FakeAap,
    method: &str,
    path: &str,
    auth: bool,
    body: &str,
) -> (u16, http::HeaderMap, serde_json::Value) {
    let mut req = http::Request::builder().method(method).uri(path);
    if auth {
        req = req.header("authorization", format!("Bearer {}", aap.admin_token()));
    }
    if !body.is_empty() {
        req = req.header("content-type", "application/json");
    }
    let resp = aap
        .router()
        .oneshot(req.body(axum::body::Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    )
}

#[tokio::test]
async fn discovery_documents_in_each_mode() {
    let awx = FakeAap::builder().build().unwrap();
    let (s, _, v) = call(&awx, "GET", "/api/", false, "").await;
    assert_eq!((s, v["current_version"].as_str()), (200, Some("/api/v2/")));
    assert_eq!(v["oauth2"], "/api/o/");
    assert_eq!(
        call(&awx, "GET", "/api/controller/", false, "").await.0,
        404
    );
    let gw = FakeAap::builder().mode(Mode::Gateway).build().unwrap();
    let (_, _, v) = call(&gw, "GET", "/api/", false, "").await;
    assert_eq!(v["apis"]["gateway"], "/api/gateway/");
    assert!(v.get("current_version").is_none());
    let both = FakeAap::builder().mode(Mode::Both).build().unwrap();
    assert_eq!(call(&both, "GET", "/api/v2/ping/", false, "").await.0, 200);
    assert_eq!(
        call(&both, "GET", "/api/controller/v2/ping/", false, "")
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn default_fixtures_and_awx_mode_tokens() {
    let aap = FakeAap::builder().build().unwrap();
    assert_eq!(aap.admin_token(), "fake-aap-admin-token");
    let (s, h, v) = call(
        &aap,
        "POST",
        "/api/v2/tokens/",
        true,
        r#"{"description":"x","application":null,"scope":"read"}"#,
    )
    .await;
    assert_eq!(s, 201);
    assert_eq!(v["scope"], "read");
    assert!(h.get("location").is_some());
    let (_, _, list) = call(&aap, "GET", "/api/v2/tokens/", true, "").await;
    assert_eq!(list["count"], 2);
    assert_eq!(list["results"][1]["token"], "************");
    let (s, _, _) = call(&aap, "DELETE", "/api/v2/tokens/2/", true, "").await;
    assert_eq!(s, 204);
    let (s, _, _) = call(
        &aap,
        "POST",
        "/api/v2/users/admin/personal_tokens/",
        true,
        "{}",
    )
    .await;
    assert_eq!(s, 201);
    let (s, h, v) = call(&aap, "PUT", "/api/v2/ping/", true, "{}").await;
    assert_eq!(
        (s, v["detail"].as_str()),
        (405, Some("Method \"PUT\" not allowed."))
    );
    assert_eq!(h["allow"], "GET, HEAD, OPTIONS");
}

#[tokio::test]
async fn delete_of_running_job_is_refused() {
    let aap = FakeAap::builder()
        .job_template(provkit_testing::fake_aap::JobTemplateSpec::new(
            "t", "Default",
        ))
        .build()
        .unwrap();
    let (s, _, v) = call(&aap, "POST", "/api/v2/job_templates/t/launch/", true, "{}").await;
    assert_eq!(s, 201, "{v}");
    let (s, _, v) = call(&aap, "DELETE", "/api/v2/jobs/1/", true, "").await;
    assert_eq!(
        (s, v["detail"].as_str()),
        (403, Some("Cannot delete running job resource."))
    );
    aap.advance(std::time::Duration::from_secs(60));
    assert_eq!(
        call(&aap, "DELETE", "/api/v2/jobs/1/", true, "").await.0,
        204
    );
    assert_eq!(call(&aap, "GET", "/api/v2/jobs/1/", true, "").await.0, 404);
}
