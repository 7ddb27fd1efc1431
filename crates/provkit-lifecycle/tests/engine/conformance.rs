//! The provkit-testing conformance suite, run against `ScriptedProvider` (directly, boxed, and without
//! lookup support), plus checks of the scripted provider itself.

use std::time::Duration;

use provkit_core::{JobState, JobType};
use provkit_lifecycle::{
    IdempotencyKey, IdempotencySupport, LaunchContext, ProvisioningProvider, ResourceView,
};
use provkit_testing::conformance::{self, Capabilities};
use provkit_testing::scripted::{ProviderCall, ScriptedProvider, StatusStep, TriggerStep};

use super::support::resource;

fn factory(uid: &str) -> ResourceView {
    resource(uid)
}

#[tokio::test]
async fn scripted_provider_passes_conformance() {
    let provider = ScriptedProvider::new();
    conformance::run_all(&provider, &factory, Capabilities::default()).await;
}

#[tokio::test]
async fn boxed_scripted_provider_passes_conformance() {
    let provider: Box<dyn ProvisioningProvider> = Box::new(ScriptedProvider::new());
    provider
        .trigger_provision(&resource("warm"), &LaunchContext::new())
        .await
        .unwrap();
    conformance::run_all(provider.as_ref(), &factory, Capabilities::default()).await;
}

#[tokio::test]
async fn scripted_provider_without_lookup_passes_conformance() {
    let provider =
        ScriptedProvider::new().with_idempotency_support(IdempotencySupport::Unsupported);
    conformance::run_all(
        &provider,
        &factory,
        Capabilities::default().with_idempotency_lookup(false),
    )
    .await;
}

#[tokio::test]
async fn scripted_provider_with_running_jobs_passes_polling() {
    let provider = ScriptedProvider::new();
    provider.set_default_statuses([
        StatusStep::State(JobState::Pending),
        StatusStep::State(JobState::Running),
        StatusStep::State(JobState::Succeeded),
    ]);
    conformance::run_all(
        &provider,
        &factory,
        Capabilities::default().with_polling(5, Duration::ZERO),
    )
    .await;
}

#[tokio::test]
#[should_panic(expected = "did not reach a terminal state")]
async fn conformance_catches_jobs_that_never_finish() {
    let provider = ScriptedProvider::new();
    provider.set_default_statuses([StatusStep::State(JobState::Running)]);
    conformance::provision_launch_and_poll(
        &provider,
        &resource("stuck"),
        Capabilities::default().with_polling(3, Duration::ZERO),
    )
    .await;
}

#[tokio::test]
#[should_panic(expected = "provider with lookup must report it")]
async fn conformance_catches_a_false_capability_claim() {
    let provider =
        ScriptedProvider::new().with_idempotency_support(IdempotencySupport::Unsupported);
    conformance::idempotency_lookup(&provider, &resource("claim"), Capabilities::default()).await;
}

#[tokio::test]
async fn scripted_provider_records_calls_and_plays_scripts() {
    let p = ScriptedProvider::new();
    let r = resource("rec");
    p.push_trigger("rec", TriggerStep::Fail("connection refused".into()));
    p.push_trigger("rec", TriggerStep::LoseAnswer);
    p.push_job_statuses(
        "rec",
        &JobType::Provision,
        [StatusStep::State(JobState::Running), StatusStep::NotFound],
    );
    let key = IdempotencyKey::new("k1");
    let ctx = LaunchContext::new().with_idempotency_key(key.clone());
    let e = p.trigger_provision(&r, &ctx).await.unwrap_err();
    assert!(e.to_string().contains("connection refused"));
    let e = p.trigger_provision(&r, &ctx).await.unwrap_err();
    assert_eq!(
        e.launch_certainty(),
        provkit_lifecycle::LaunchCertainty::Unknown
    );
    let found = p
        .find_job_by_idempotency_key(&r, &JobType::Provision, &key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        p.provision_status(&r, &found.job_id).await.unwrap().state,
        JobState::Running
    );
    assert!(
        p.provision_status(&r, &found.job_id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        p.find_job_by_idempotency_key(&r, &JobType::Provision, &key)
            .await
            .unwrap()
            .is_none(),
        "purged job not found"
    );
    let calls = p.calls_for("rec");
    assert_eq!(calls.len(), 6);
    assert!(
        matches!(&calls[0], ProviderCall::TriggerProvision { ctx, .. } if ctx.idempotency_key.as_ref() == Some(&key))
    );
    assert_eq!(p.jobs_created("rec", &JobType::Provision), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_provider_is_usable_from_concurrent_reconciles() {
    let p = ScriptedProvider::new();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            let r = resource(&format!("c{i}"));
            for _ in 0..10 {
                let job = p
                    .trigger_provision(&r, &LaunchContext::new())
                    .await
                    .unwrap();
                p.provision_status(&r, &job.job_id).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(p.jobs().len(), 160);
    assert_eq!(p.calls().len(), 320);
    let mut ids: Vec<_> = p.jobs().into_iter().map(|j| j.job_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 160, "unique job ids");
}
