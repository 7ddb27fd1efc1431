//! Shared helpers: fake server setups and fast-retrying clients.

use std::time::Duration;

use provkit_aap::{AapClient, AapClientBuilder, AapProvider, RetryConfig};
use provkit_lifecycle::{LaunchContext, ProvisioningProvider, ResourceView};
use provkit_testing::fake_aap::{
    FakeAap, FakeAapServer, JobScript, JobTemplateSpec, LoggedRequest, Mode,
    WorkflowJobTemplateSpec,
};

/// Job phases short enough for real-time tests.
pub fn quick(outcome_script: JobScript) -> JobScript {
    outcome_script.with_phases(
        Duration::from_millis(30),
        Duration::from_millis(30),
        Duration::from_millis(120),
    )
}

pub fn quick_success() -> JobScript {
    quick(JobScript::successful(Duration::from_millis(120)))
}

/// A fake with the templates most tests use.
pub async fn server(mode: Mode) -> FakeAapServer {
    server_with(mode, |b| b).await
}

pub async fn server_with(
    mode: Mode,
    f: impl FnOnce(
        provkit_testing::fake_aap::FakeAapBuilder,
    ) -> provkit_testing::fake_aap::FakeAapBuilder,
) -> FakeAapServer {
    let builder = FakeAap::builder()
        .mode(mode)
        .organization("osac")
        .default_script(quick_success())
        .job_template(JobTemplateSpec::new("osac-create-virtual-network", "osac"))
        .job_template(JobTemplateSpec::new("osac-delete-virtual-network", "osac"))
        .job_template(JobTemplateSpec::new("provision-job", "osac"))
        .job_template(JobTemplateSpec::new("deprovision-job", "osac"))
        .workflow_job_template(WorkflowJobTemplateSpec {
            ask_variables_on_launch: true,
            ..WorkflowJobTemplateSpec::new("provision-workflow", "osac", &["provision-job"])
        });
    f(builder).start().await.expect("fake AAP starts")
}

pub fn fast_retry() -> RetryConfig {
    RetryConfig::default()
        .initial_backoff(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(100))
        .max_elapsed(Duration::from_secs(10))
        .max_retries(4)
}

pub fn builder(server: &FakeAapServer) -> AapClientBuilder {
    AapClient::builder(server.base_url())
        .token(server.token())
        .retry(fast_retry())
        .timeout(Duration::from_secs(5))
        .proxy_from_env(false)
}

pub fn client(server: &FakeAapServer) -> AapClient {
    builder(server).build().unwrap()
}

/// Requests the fake logged whose path contains `needle`.
pub fn requests_to(server: &FakeAapServer, needle: &str) -> Vec<LoggedRequest> {
    server
        .aap()
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(needle))
        .collect()
}

pub fn template_id(server: &FakeAapServer, name: &str) -> u64 {
    server
        .aap()
        .template_id(name, Some("osac"))
        .expect("template exists")
}

/// Polls until `check` holds (real time, bounded).
pub async fn eventually<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("condition not reached in time");
}

/// Launches `r`'s provision job through `p` and waits until AAP runs it; its id.
pub async fn provision_running(p: &AapProvider, r: &ResourceView) -> String {
    let id = p
        .trigger_provision(r, &LaunchContext::new())
        .await
        .unwrap()
        .job_id;
    eventually(|| async {
        p.provision_status(r, &id).await.unwrap().state == provkit_core::JobState::Running
    })
    .await;
    id
}

/// A `Subnet` in namespace `default` with uid `uid-<name>` (the idempotency tests' object).
pub fn subnet(name: &str) -> ResourceView {
    ResourceView::new(
        provkit_lifecycle::ResourceMeta {
            kind: "Subnet".into(),
            name: name.into(),
            namespace: Some("default".into()),
            uid: format!("uid-{name}"),
            ..Default::default()
        },
        serde_json::json!({
            "apiVersion": "osac.openshift.io/v1alpha1", "kind": "Subnet",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {},
        }),
    )
}

/// Looks the provision job of intent `(key, intent)` up until the provider answers, sleeping
/// through each deferral (at most 20 calls); the answer and how many calls it took.
pub async fn lookup_until_answered(
    provider: &AapProvider,
    resource: &ResourceView,
    key: &provkit_lifecycle::IdempotencyKey,
    intent: chrono::DateTime<chrono::Utc>,
) -> (Option<provkit_lifecycle::FoundJob>, u32) {
    until_answered(|| {
        provider.find_job_by_idempotency_key_since(
            resource,
            &provkit_core::JobType::Provision,
            key,
            Some(intent),
        )
    })
    .await
}

/// [`lookup_until_answered`] for an intent whose launch carried `marker`.
pub async fn marked_lookup_until_answered(
    provider: &AapProvider,
    resource: &ResourceView,
    key: &provkit_lifecycle::IdempotencyKey,
    intent: chrono::DateTime<chrono::Utc>,
    marker: &str,
) -> (Option<provkit_lifecycle::FoundJob>, u32) {
    until_answered(|| {
        provider.find_job_by_marker(
            resource,
            &provkit_core::JobType::Provision,
            key,
            intent,
            marker,
        )
    })
    .await
}

/// Calls `lookup` until it answers, sleeping through each deferral (at most 20 calls).
async fn until_answered<F, Fut>(mut lookup: F) -> (Option<provkit_lifecycle::FoundJob>, u32)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<
            Output = Result<Option<provkit_lifecycle::FoundJob>, provkit_lifecycle::ProviderError>,
        >,
{
    let mut lookups = 0;
    loop {
        lookups += 1;
        assert!(lookups <= 20, "the lookup did not end");
        match lookup().await {
            Ok(found) => return (found, lookups),
            Err(e) => {
                let wait = provkit_lifecycle::find_retry_later(&e).unwrap_or_else(|| panic!("{e}"));
                tokio::time::sleep(wait).await;
            }
        }
    }
}
