//! aap-api.md test cases 1–5: discovery, base-path override, trailing slashes, link joining.

use provkit_aap::{AapClient, Error, JobKind, LaunchRequest};
use provkit_testing::fake_aap::{Fault, FaultAction, Mode};

use crate::support::{builder, client, requests_to, server};

#[tokio::test]
async fn case1_awx_discovery_finds_api_v2() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    assert_eq!(client.api_base().await.unwrap(), "/api/v2/");
    client.ping().await.unwrap();
    let paths: Vec<String> = server
        .aap()
        .requests()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, vec!["/api/".to_owned(), "/api/v2/ping/".to_owned()]);
}

#[tokio::test]
async fn case2_gateway_discovery_follows_apis_controller_and_never_calls_api_v2() {
    let server = server(Mode::Gateway).await;
    let client = client(&server);
    assert_eq!(client.api_base().await.unwrap(), "/api/controller/v2/");
    let template = client
        .get_template("osac-create-virtual-network")
        .await
        .unwrap();
    let launched = client
        .launch(&template, &LaunchRequest::default())
        .await
        .unwrap();
    client
        .get_unified(launched.kind, launched.id)
        .await
        .unwrap();
    let paths: Vec<String> = server
        .aap()
        .requests()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(
        &paths[..2],
        &["/api/".to_owned(), "/api/controller/".to_owned()]
    );
    assert!(
        paths.iter().all(|p| !p.starts_with("/api/v2/")),
        "{paths:?}"
    );
    // The discovered base is cached: discovery ran once.
    assert_eq!(
        requests_to(&server, "/api/controller/")
            .iter()
            .filter(|r| r.path == "/api/controller/")
            .count(),
        1
    );
}

#[tokio::test]
async fn case3_explicit_base_path_wins_and_wrong_path_on_gateway_says_so() {
    let awx = server(Mode::Awx).await;
    let explicit = builder(&awx).base_path("/api/v2").build().unwrap();
    explicit.ping().await.unwrap();
    assert!(
        requests_to(&awx, "/api/").iter().all(|r| r.path != "/api/"),
        "no discovery request"
    );

    let gateway = server(Mode::Gateway).await;
    let wrong = builder(&gateway).base_path("/api/v2/").build().unwrap();
    let err = wrong
        .get_template("osac-create-virtual-network")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("gateway") && text.contains("/api/controller/"),
        "{text}"
    );

    // The Go operator's URL form works on the gateway without discovery.
    let go_style = AapClient::builder(format!("{}/api/controller", gateway.base_url()))
        .token(gateway.token())
        .build()
        .unwrap();
    assert_eq!(go_style.api_base().await.unwrap(), "/api/controller/v2/");
    go_style
        .get_template("osac-create-virtual-network")
        .await
        .unwrap();
}

#[tokio::test]
async fn case3_discovery_on_a_non_aap_host_is_a_clear_error() {
    let server = server(Mode::Awx).await;
    let client = builder(&server).build().unwrap();
    server.aap().add_fault(Fault::new(
        "GET",
        "/api/",
        FaultAction::json(200, &serde_json::json!({"hello": "world"})),
    ));
    let err = client.api_base().await.unwrap_err();
    assert!(matches!(err, Error::Discovery { .. }), "{err:?}");
    assert!(err.to_string().contains("current_version"), "{err}");
}

#[tokio::test]
async fn case4_every_request_path_ends_with_a_slash() {
    for mode in [Mode::Awx, Mode::Gateway] {
        let server = server(mode).await;
        let client = client(&server);
        let template = client
            .get_template("osac-create-virtual-network")
            .await
            .unwrap();
        let launched = client
            .launch(&template, &LaunchRequest::default())
            .await
            .unwrap();
        client.get_job(launched.id).await.unwrap();
        client.can_cancel(JobKind::Job, launched.id).await.unwrap();
        client.cancel_job(launched.id).await.unwrap();
        client.job_stdout(launched.id).await.unwrap();
        client.find_job_kind(launched.id).await.unwrap();
        for r in server.aap().requests() {
            assert!(r.path.ends_with('/'), "{} {}?{}", r.method, r.path, r.query);
            assert!(r.status != 301, "{} {} was redirected", r.method, r.path);
        }
    }
}

#[tokio::test]
async fn case4_a_redirect_on_post_is_an_error_never_a_get() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let template = client
        .get_template("osac-create-virtual-network")
        .await
        .unwrap();
    server.aap().add_fault(Fault::new(
        "POST",
        "*/launch/",
        FaultAction::Respond {
            status: 301,
            body: String::new(),
            content_type: "text/html".into(),
            headers: vec![(
                "Location".into(),
                format!("/api/v2/job_templates/{}/launch/", template.id),
            )],
        },
    ));
    let err = client
        .launch(&template, &LaunchRequest::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Redirect { .. }), "{err:?}");
    assert!(!err.is_outcome_unknown());
    assert!(
        requests_to(&server, "/launch/")
            .iter()
            .all(|r| r.method == "POST"),
        "no GET follow-up"
    );
    assert_eq!(
        requests_to(&server, "/launch/").len(),
        1,
        "launch is not retried"
    );
    assert_eq!(server.aap().launch_count(template.id), 0);
}

#[tokio::test]
async fn case5_next_links_are_joined_with_the_host_only_under_both_prefixes() {
    for (mode, prefix) in [
        (Mode::Awx, "/api/v2/"),
        (Mode::Gateway, "/api/controller/v2/"),
    ] {
        let server = server(mode).await;
        let client = client(&server);
        let template = client.get_template("provision-job").await.unwrap();
        for _ in 0..5 {
            client
                .launch(&template, &LaunchRequest::default())
                .await
                .unwrap();
        }
        let id = template.id.to_string();
        let jobs = client
            .list(
                "jobs",
                &[
                    ("job_template", &id),
                    ("page_size", "2"),
                    ("order_by", "id"),
                ],
            )
            .await
            .unwrap();
        assert_eq!(jobs.len(), 5);
        let pages = requests_to(&server, "/jobs/");
        assert_eq!(pages.len(), 3, "three pages of two");
        for page in pages {
            assert!(page.path.starts_with(prefix), "{}", page.path);
            assert!(!page.path.contains("/api/v2/api/"), "{}", page.path);
        }
        for job in &jobs {
            let url = job["url"].as_str().unwrap();
            assert!(url.starts_with(prefix), "{url}");
        }
    }
}

#[tokio::test]
async fn case14_an_invalid_first_page_is_an_error_not_an_empty_list() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let err = client.list("jobs", &[("page", "99")]).await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert!(err.to_string().contains("Invalid page."), "{err}");
}
