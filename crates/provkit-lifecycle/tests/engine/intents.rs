//! The durable launch intent at the engine level (`IntentStore` hook, `ScriptedProvider` with
//! its production-like `Lookup` support): the intent is written before the launch, a refused
//! write launches nothing. (Crash and restart paths run in provkit-kube's `exactly_once` tests,
//! with the intent persisted on the object.)

use std::sync::Arc;

use provkit_core::{JobType, LaunchIntent};
use provkit_lifecycle::{
    BoxError, IntentStore, LaunchContext, Lifecycle, LifecycleError, MemoryIntentStore,
    ProvisionHooks, ProvisionStep,
};
use provkit_testing::scripted::ScriptedProvider;

use super::support::*;

struct Refusing;

#[async_trait::async_trait]
impl IntentStore for Refusing {
    fn pending(&self) -> Option<LaunchIntent> {
        None
    }
    async fn write(&self, _: &LaunchIntent) -> Result<(), BoxError> {
        Err("403 Forbidden: cannot patch resource networks/status".into())
    }
    fn resolve(&self, _: &str) {}
}

fn engine() -> (ScriptedProvider, Lifecycle) {
    let provider = ScriptedProvider::new();
    let (_, clock) = clock_at(t0());
    (provider.clone(), Lifecycle::new(Arc::new(provider), clock))
}

#[tokio::test]
async fn a_refused_intent_write_launches_nothing() {
    let (provider, engine) = engine();
    let r = resource("uid-1");
    let mut jobs = Vec::new();
    let store = Refusing;
    let mut hooks = ProvisionHooks::new().intents(&store);
    let err = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap_err();
    assert!(matches!(err, LifecycleError::IntentWrite { .. }), "{err:?}");
    assert_eq!(provider.jobs_created("uid-1", &JobType::Provision), 0);
    assert!(jobs.is_empty());
}

#[tokio::test]
async fn the_intent_is_written_before_the_launch_and_resolved_by_it() {
    let (provider, engine) = engine();
    let r = resource("uid-1");
    let mut jobs = Vec::new();
    let store = MemoryIntentStore::default();
    let mut hooks = ProvisionHooks::new().intents(&store);
    let out = engine
        .run_provisioning_lifecycle(&r, &mut jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
        .unwrap();
    assert!(
        matches!(out.step, ProvisionStep::Launched { .. }),
        "{out:?}"
    );
    assert!(
        store.pending().is_none(),
        "resolved once the job is recorded"
    );
    assert_eq!(jobs.len(), 1);
    let key = provider.jobs()[0].key.clone();
    assert!(key.is_some(), "the launch carried the attempt's key");
}
