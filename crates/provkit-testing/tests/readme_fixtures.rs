//! The README's complete fixture file loads, and a template that does not prompt for variables
//! drops a launch's `extra_vars` as AWX does (`ignored_fields`, the job's `extra_vars` `{}`).
#![allow(clippy::unwrap_used, missing_docs)]

use provkit_testing::fake_aap::{FakeAap, Fixtures};
use serde_json::{Value, json};

fn readme_fixtures() -> Fixtures {
    let readme = include_str!("../README.md");
    let block = readme
        .split("<!-- fixtures example -->\n```yaml\n")
        .nth(1)
        .expect("the README has the fixtures example")
        .split("```")
        .next()
        .unwrap();
    Fixtures::from_yaml(block).unwrap()
}

#[tokio::test]
async fn the_readme_fixture_file_loads_and_a_non_prompting_template_drops_extra_vars() {
    let server = FakeAap::builder()
        .fixtures(readme_fixtures())
        .start()
        .await
        .unwrap();
    let aap = server.aap();
    for name in [
        "osac-create-virtual-network",
        "osac-delete-virtual-network",
        "osac-no-prompt",
    ] {
        assert!(aap.template_id(name, Some("osac")).is_some(), "{name}");
    }
    // Plain HTTP; reqwest's builder still wants a rustls provider (ring, as everywhere here).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let launch = |template: &str| {
        http.post(format!(
            "{}job_templates/{template}++osac/launch/",
            server.api_base()
        ))
        .bearer_auth("operator-token")
        .json(&json!({"extra_vars": {"network_name": "net-a"}}))
        .send()
    };
    let kept: Value = launch("osac-create-virtual-network")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(kept["ignored_fields"], json!({}));
    assert_eq!(kept["extra_vars"], r#"{"network_name": "net-a"}"#);

    let dropped = launch("osac-no-prompt").await.unwrap();
    assert_eq!(dropped.status(), 201);
    let dropped: Value = dropped.json().await.unwrap();
    assert_eq!(
        dropped["ignored_fields"],
        json!({"extra_vars": {"network_name": "net-a"}})
    );
    assert_eq!(dropped["extra_vars"], "{}");
}
