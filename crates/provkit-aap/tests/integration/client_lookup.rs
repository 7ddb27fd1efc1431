//! aap-api.md test cases 10–13 and the template cache (spec §5.4, fixed).

use provkit_aap::{Error, LaunchRequest, TemplateKind};
use provkit_testing::fake_aap::{
    Fault, FaultAction, JobTemplateSpec, Mode, WorkflowJobTemplateSpec,
};

use crate::support::{builder, client, requests_to, server, server_with};

#[tokio::test]
async fn case10_no_match_names_the_template() {
    let server = server(Mode::Awx).await;
    let err = client(&server)
        .get_template("does-not-exist")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TemplateNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("does-not-exist"));
    assert!(err.is_not_found());
}

#[tokio::test]
async fn case11_same_name_in_two_organizations_is_ambiguous_until_an_organization_is_given() {
    let server = server_with(Mode::Awx, |b| {
        b.organization("other")
            .job_template(JobTemplateSpec::new("osac-create-virtual-network", "other"))
    })
    .await;
    let client = client(&server);
    let err = client
        .get_template("osac-create-virtual-network")
        .await
        .unwrap_err();
    let Error::AmbiguousTemplate { candidates, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(candidates.len(), 2);
    let text = err.to_string();
    assert!(
        text.contains("\"osac\"") && text.contains("\"other\""),
        "{text}"
    );
    let exact = client
        .get_template_in("osac-create-virtual-network", Some("other"))
        .await
        .unwrap();
    assert_eq!(
        Some(exact.id),
        server
            .aap()
            .template_id("osac-create-virtual-network", Some("other"))
    );
    let scoped = builder(&server).organization("osac").build().unwrap();
    let t = scoped
        .get_template("osac-create-virtual-network")
        .await
        .unwrap();
    assert_eq!(t.organization_name.as_deref(), Some("osac"));
}

#[tokio::test]
async fn case12_one_request_finds_either_kind_and_a_kind_clash_is_ambiguous() {
    let server = server_with(Mode::Gateway, |b| {
        b.workflow_job_template(WorkflowJobTemplateSpec::new(
            "osac-create-virtual-network",
            "osac",
            &["provision-job"],
        ))
    })
    .await;
    let client = client(&server);
    let jt = client.get_template("provision-job").await.unwrap();
    assert_eq!(jt.kind, TemplateKind::JobTemplate);
    let wf = client.get_template("provision-workflow").await.unwrap();
    assert_eq!(wf.kind, TemplateKind::WorkflowJobTemplate);
    let lookups = requests_to(&server, "unified_job_templates");
    assert_eq!(lookups.len(), 2, "one request per name");
    assert!(
        lookups.iter().all(|r| r
            .query
            .contains("type=job_template%2Cworkflow_job_template")),
        "{:?}",
        lookups[0].query
    );
    let err = client
        .get_template("osac-create-virtual-network")
        .await
        .unwrap_err();
    let Error::AmbiguousTemplate { candidates, .. } = &err else {
        panic!("{err:?}")
    };
    let kinds: Vec<&str> = candidates.iter().map(|c| c.kind.as_str()).collect();
    assert!(
        kinds.contains(&"job_template") && kinds.contains(&"workflow_job_template"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn case13_names_with_reserved_and_non_ascii_characters() {
    let names = [
        "deploy cluster",
        "a+b",
        "x&y=z",
        "with/slash",
        "hash#tag",
        "ünïcødé ✓",
        "50% off?",
    ];
    let server = server_with(Mode::Awx, |mut b| {
        for name in names {
            b = b.job_template(JobTemplateSpec::new(name, "osac"));
        }
        b
    })
    .await;
    let client = client(&server);
    for name in names {
        let t = client
            .get_template(name)
            .await
            .unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_eq!(t.name, name);
        assert_eq!(Some(t.id), server.aap().template_id(name, Some("osac")));
    }
}

#[tokio::test]
async fn cache_hits_make_no_request_and_a_launch_404_invalidates() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    let t = client.get_template("provision-job").await.unwrap();
    client.get_template("provision-job").await.unwrap();
    assert_eq!(requests_to(&server, "unified_job_templates").len(), 1);
    let fault = server.aap().add_fault(Fault::new(
        "POST",
        "*/launch/",
        FaultAction::json(404, &serde_json::json!({"detail": "Not found."})),
    ));
    let err = client
        .launch(&t, &LaunchRequest::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    server.aap().remove_fault(fault);
    client.get_template("provision-job").await.unwrap();
    assert_eq!(
        requests_to(&server, "unified_job_templates").len(),
        2,
        "cache entry dropped after the 404"
    );
    client.clear_template_cache();
    client.get_template("provision-job").await.unwrap();
    assert_eq!(requests_to(&server, "unified_job_templates").len(), 3);
}

#[tokio::test]
async fn lookup_errors_are_not_reported_as_not_found() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    server.aap().add_fault(Fault::new(
        "GET",
        "*/unified_job_templates/",
        FaultAction::server_error(),
    ));
    let err = client.get_template("provision-job").await.unwrap_err();
    assert!(matches!(err, Error::Server { .. }), "{err:?}");
    assert!(!err.is_not_found());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_cold_lookups_of_one_template_make_one_request() {
    let server = server(Mode::Awx).await;
    let client = client(&server);
    // Warm discovery and auth so only template lookups remain to be counted.
    client.get_template("provision-workflow").await.unwrap();
    let before = requests_to(&server, "unified_job_templates").len();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let client = client.clone();
        tasks.spawn(async move { client.get_template("provision-job").await });
    }
    let mut ids = Vec::new();
    while let Some(done) = tasks.join_next().await {
        ids.push(done.unwrap().unwrap().id);
    }
    assert_eq!(ids.len(), 16);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(
        requests_to(&server, "unified_job_templates").len() - before,
        1,
        "one request for 16 concurrent cold lookups"
    );
    // A failed lookup is not shared: each later caller still gets its own answer.
    let err = client.get_template("missing").await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
}
