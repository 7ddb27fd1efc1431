//! The durable launch intent at the engine level (`IntentStore` hook, `ScriptedProvider` with
//! its production-like `Lookup` support): the intent is written before the launch, a refused
//! write launches nothing. (Crash and restart paths run in provkit-kube's `exactly_once` tests,
//! with the intent persisted on the object.)

use std::sync::Arc;

use provkit_core::{JobType, LaunchIntent};
use provkit_lifecycle::{
    BoxError, IntentStore, LaunchContext, Lifecycle, LifecycleError, MemoryIntentStore,
    ProvisionHooks, ProvisionStep, ProvisioningProvider as _,
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

/// One provisioning reconcile of `r` at config `v1` with `store` as its intent store.
async fn run(
    engine: &Lifecycle,
    r: &provkit_lifecycle::ResourceView,
    jobs: &mut Vec<provkit_core::JobStatus>,
    store: &dyn IntentStore,
) -> Result<provkit_lifecycle::ProvisionOutcome, LifecycleError> {
    let mut hooks = ProvisionHooks::new().intents(store);
    engine
        .run_provisioning_lifecycle(r, jobs, "v1", &LaunchContext::new(), &mut hooks)
        .await
}

#[tokio::test]
async fn a_refused_intent_write_launches_nothing() {
    let (provider, engine) = engine();
    let r = resource("uid-1");
    let mut jobs = Vec::new();
    let store = Refusing;
    let err = run(&engine, &r, &mut jobs, &store).await.unwrap_err();
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
    let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
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

/// Records every intent written (and keeps the last one pending, as a store does).
#[derive(Default)]
struct Recording {
    inner: MemoryIntentStore,
    written: std::sync::Mutex<Vec<LaunchIntent>>,
}

impl Recording {
    /// The attempt wrote one intent before its launch, and it is pending or not as expected.
    fn assert_one_intent_and_pending(&self, case: &str, pending: bool) {
        assert_eq!(
            self.written.lock().unwrap().len(),
            1,
            "{case}: the intent was written first"
        );
        assert_eq!(
            self.pending().is_some(),
            pending,
            "{case}: {:?}",
            self.pending()
        );
    }
}

#[async_trait::async_trait]
impl IntentStore for Recording {
    fn pending(&self) -> Option<LaunchIntent> {
        self.inner.pending()
    }
    async fn write(&self, intent: &LaunchIntent) -> Result<(), BoxError> {
        self.written.lock().unwrap().push(intent.clone());
        self.inner.write(intent).await
    }
    fn resolve(&self, key: &str) {
        self.inner.resolve(key);
    }
}

/// Issue 33: a pending intent of the very attempt about to launch, whose job provably does not
/// exist, is not reused: the launch first records a fresh intent (same key, the current time),
/// so every launch has an intent time of its own and a lookup may end a launch deadline after
/// it. The provider is told that time (`LaunchContext::attempt_started`).
#[tokio::test]
async fn a_relaunch_after_a_proven_absence_records_a_fresh_intent_first() {
    let provider = ScriptedProvider::new();
    let (clock, dyn_clock) = clock_at(t0());
    let engine = Lifecycle::new(Arc::new(provider.clone()), dyn_clock);
    let r = resource("uid-1");
    let key =
        provkit_lifecycle::IdempotencyKey::for_attempt("uid-1", &JobType::Provision, "v1", None);
    let old = LaunchIntent::new(key.as_str(), JobType::Provision, "v1", t0());
    let store = Recording {
        inner: MemoryIntentStore::with_pending(Some(old)),
        ..Recording::default()
    };
    clock.advance(std::time::Duration::from_secs(100));
    let mut jobs = Vec::new();
    let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
    assert!(
        matches!(out.step, ProvisionStep::Launched { .. }),
        "{out:?}"
    );
    let written = store.written.lock().unwrap().clone();
    assert_eq!(written.len(), 1, "one fresh intent: {written:?}");
    assert_eq!(
        written[0].idempotency_key,
        key.as_str(),
        "same attempt, same key"
    );
    assert_eq!(
        written[0].created_at,
        t0() + chrono::Duration::seconds(100),
        "a time of its own"
    );
    assert_eq!(provider.jobs_created("uid-1", &JobType::Provision), 1);
}

/// Issue 33: with an intent store, the engine's in-memory journal of unknown outcomes no
/// longer triggers a lookup without a window (the template's jobs up to now, unbounded) once no
/// intent is pending: every launch of this engine had a durable intent first, and a pending one
/// is resolved (adopted or proven absent) before anything new is launched. Here the attempt's
/// answer was lost, its immediate lookup found nothing, and its intent was then resolved
/// elsewhere: the next attempt writes its intent and launches without another lookup.
#[tokio::test]
async fn with_an_intent_store_no_unbounded_lookup_follows_an_unknown_outcome() {
    let (provider, engine) = engine();
    let r = resource("uid-1");
    let mut jobs = Vec::new();
    let store = MemoryIntentStore::default();
    provider.push_trigger(
        "uid-1",
        provkit_testing::scripted::TriggerStep::Fail("connection reset".into()),
    );
    let lookups = |p: &ScriptedProvider| {
        p.calls()
            .iter()
            .filter(|c| matches!(c, provkit_testing::scripted::ProviderCall::FindJob { .. }))
            .count()
    };
    let err = run(&engine, &r, &mut jobs, &store).await.unwrap_err();
    assert!(
        matches!(err, LifecycleError::TriggerProvision { .. }),
        "{err:?}"
    );
    assert_eq!(
        lookups(&provider),
        1,
        "the immediate lookup after the lost answer"
    );
    let pending = store.pending().expect("the attempt's intent stays pending");
    store.resolve(&pending.idempotency_key);
    let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
    assert!(
        matches!(out.step, ProvisionStep::Launched { .. }),
        "{out:?}"
    );
    assert_eq!(lookups(&provider), 1, "no lookup before the second launch");
    assert_eq!(provider.jobs_created("uid-1", &JobType::Provision), 1);
}

/// A provider that would refuse the launch unsent (its circuit breaker is open) gets no intent
/// written and no launch call: the reconcile requeues after the provider's wait, as for a
/// rate-limited launch. Once the provider may send again, the next reconcile writes the intent
/// and launches.
#[tokio::test]
async fn a_launch_the_provider_would_refuse_unsent_writes_no_intent() {
    let (provider, engine) = engine();
    let r = resource("uid-1");
    let mut jobs = Vec::new();
    let store = Recording::default();
    let wait = std::time::Duration::from_secs(7);
    provider.set_launch_refused_for(Some(wait));
    let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
    assert!(
        matches!(out.step, ProvisionStep::RateLimited { retry_after } if retry_after == wait),
        "{out:?}"
    );
    assert!(
        store.written.lock().unwrap().is_empty(),
        "no intent written"
    );
    assert!(provider.calls().is_empty(), "{:?}", provider.calls());
    assert!(jobs.is_empty());

    provider.set_launch_refused_for(None);
    let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
    assert!(
        matches!(out.step, ProvisionStep::Launched { .. }),
        "{out:?}"
    );
    assert_eq!(store.written.lock().unwrap().len(), 1);
    assert_eq!(provider.jobs_created("uid-1", &JobType::Provision), 1);
}

/// Issue 33: a launch the provider is certain made no job (rate-limited, refused) resolves its
/// intent, so the store's next write clears it and a process that inherits the object has
/// nothing to look up; a launch whose outcome is unknown keeps its intent pending. The intent
/// was written in every case (the launch was attempted).
#[tokio::test]
async fn a_launch_certainly_not_made_resolves_its_intent_an_unknown_one_keeps_it() {
    use provkit_testing::scripted::TriggerStep;
    let cases: [(&str, TriggerStep, bool); 3] = [
        (
            "rate-limited",
            TriggerStep::RateLimited(std::time::Duration::from_secs(3)),
            false,
        ),
        (
            "refused (400)",
            TriggerStep::FailNotMade("400 Bad Request".into()),
            false,
        ),
        // The immediate lookup after the unknown outcome finds nothing (no job was made).
        (
            "connection reset (unknown)",
            TriggerStep::Fail("connection reset".into()),
            true,
        ),
    ];
    for (name, step, stays_pending) in cases {
        let (provider, engine) = engine();
        let r = resource("uid-1");
        let mut jobs = Vec::new();
        let store = Recording::default();
        provider.push_trigger("uid-1", step);
        let _ = run(&engine, &r, &mut jobs, &store).await;
        store.assert_one_intent_and_pending(name, stays_pending);
        assert!(jobs.is_empty(), "{name}: nothing recorded");
    }
}

/// The same for a deprovision launch: rate-limited resolves the intent, an unknown outcome
/// keeps it.
#[tokio::test]
async fn a_deprovision_launch_certainly_not_made_resolves_its_intent() {
    use provkit_testing::scripted::DeprovisionScript;
    let cases = [
        (
            "rate-limited",
            DeprovisionScript::RateLimited(std::time::Duration::from_secs(3)),
            false,
        ),
        (
            "connection reset (unknown)",
            DeprovisionScript::Fail("connection reset".into()),
            true,
        ),
    ];
    for (name, step, stays_pending) in cases {
        let (provider, engine) = engine();
        let r = resource("uid-1");
        let mut jobs = Vec::new();
        let store = Recording::default();
        provider.push_deprovision("uid-1", step);
        let mut hooks = provkit_lifecycle::DeprovisionHooks::new().intents(&store);
        let _ = engine
            .run_deprovisioning_lifecycle(&r, &mut jobs, &LaunchContext::new(), &mut hooks)
            .await;
        store.assert_one_intent_and_pending(name, stays_pending);
    }
}

/// A provider that promises a marker (`m:<key>`) for every attempt and answers the lookup of a
/// marked intent by the scripted provider's key lookup, noting each marked lookup.
#[derive(Clone, Debug)]
struct Marking {
    inner: ScriptedProvider,
    marked: Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

#[async_trait::async_trait]
impl provkit_lifecycle::ProvisioningProvider for Marking {
    fn name(&self) -> &str {
        "marking"
    }
    async fn trigger_provision(
        &self,
        resource: &provkit_lifecycle::ResourceView,
        ctx: &LaunchContext,
    ) -> Result<provkit_lifecycle::ProvisionResult, provkit_lifecycle::ProviderError> {
        self.inner.trigger_provision(resource, ctx).await
    }
    async fn provision_status(
        &self,
        resource: &provkit_lifecycle::ResourceView,
        job_id: &str,
    ) -> Result<provkit_lifecycle::ProvisionStatus, provkit_lifecycle::ProviderError> {
        self.inner.provision_status(resource, job_id).await
    }
    async fn trigger_deprovision(
        &self,
        resource: &provkit_lifecycle::ResourceView,
        jobs: &[provkit_core::JobStatus],
        ctx: &LaunchContext,
    ) -> Result<provkit_lifecycle::DeprovisionResult, provkit_lifecycle::ProviderError> {
        self.inner.trigger_deprovision(resource, jobs, ctx).await
    }
    async fn deprovision_status(
        &self,
        resource: &provkit_lifecycle::ResourceView,
        job_id: &str,
    ) -> Result<provkit_lifecycle::ProvisionStatus, provkit_lifecycle::ProviderError> {
        self.inner.deprovision_status(resource, job_id).await
    }
    fn idempotency_support(&self) -> provkit_lifecycle::IdempotencySupport {
        self.inner.idempotency_support()
    }
    async fn find_job_by_idempotency_key(
        &self,
        resource: &provkit_lifecycle::ResourceView,
        job_type: &JobType,
        key: &provkit_lifecycle::IdempotencyKey,
    ) -> Result<Option<provkit_lifecycle::FoundJob>, provkit_lifecycle::ProviderError> {
        self.inner
            .find_job_by_idempotency_key(resource, job_type, key)
            .await
    }
    async fn launch_marker(
        &self,
        _resource: &provkit_lifecycle::ResourceView,
        _job_type: &JobType,
        key: &provkit_lifecycle::IdempotencyKey,
    ) -> Option<String> {
        Some(format!("m:{key}"))
    }
    async fn find_job_by_marker(
        &self,
        resource: &provkit_lifecycle::ResourceView,
        job_type: &JobType,
        key: &provkit_lifecycle::IdempotencyKey,
        _since: chrono::DateTime<chrono::Utc>,
        marker: &str,
    ) -> Result<Option<provkit_lifecycle::FoundJob>, provkit_lifecycle::ProviderError> {
        self.marked
            .lock()
            .unwrap()
            .push((key.to_string(), marker.to_owned()));
        self.inner
            .find_job_by_idempotency_key(resource, job_type, key)
            .await
    }
}

fn marking_engine() -> (Marking, Lifecycle) {
    let provider = Marking {
        inner: ScriptedProvider::new(),
        marked: Arc::default(),
    };
    let (_, clock) = clock_at(t0());
    (provider.clone(), Lifecycle::new(Arc::new(provider), clock))
}

/// The provider's marker is recorded in the intent before the launch, and the launch is told
/// to carry it; a launch whose answer is lost is looked up by that marker.
#[tokio::test]
async fn the_intent_records_the_providers_marker_and_its_launch_carries_it() {
    let (provider, engine) = marking_engine();
    let r = resource("uid-1");
    provider
        .inner
        .push_trigger("uid-1", provkit_testing::scripted::TriggerStep::LoseAnswer);
    let store = Recording::default();
    let mut jobs = Vec::new();
    let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
    assert!(
        matches!(out.step, ProvisionStep::Recovered { .. }),
        "{out:?}"
    );
    let written = store.written.lock().unwrap().clone();
    assert_eq!(written.len(), 1);
    let key = written[0].idempotency_key.clone();
    assert_eq!(written[0].marker, format!("m:{key}"));
    let launched: Vec<_> = provider
        .inner
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            provkit_testing::scripted::ProviderCall::TriggerProvision { ctx, .. } => {
                Some(ctx.attempt_marker)
            }
            _ => None,
        })
        .collect();
    assert_eq!(launched, [Some(format!("m:{key}"))]);
    assert_eq!(
        *provider.marked.lock().unwrap(),
        [(key.clone(), format!("m:{key}"))],
        "the lookup after the lost answer went by the marker"
    );
    assert_eq!(provider.inner.jobs_created("uid-1", &JobType::Provision), 1);
}

/// Crash point "intent written, answer lost": a new engine resolving the pending intent looks
/// it up by the marker the intent recorded; an intent without one (an older writer) by its
/// window. Either way the job is adopted, not launched again.
#[tokio::test]
async fn a_pending_intent_is_looked_up_by_the_marker_it_recorded() {
    for marker in ["m:recorded", ""] {
        let (provider, engine) = marking_engine();
        let r = resource("uid-1");
        let key = provkit_lifecycle::IdempotencyKey::for_attempt(
            "uid-1",
            &JobType::Provision,
            "v1",
            None,
        );
        // The crashed process's launch created the job.
        provider
            .inner
            .push_trigger("uid-1", provkit_testing::scripted::TriggerStep::LoseAnswer);
        let _ = provider
            .inner
            .trigger_provision(&r, &LaunchContext::new().with_idempotency_key(key.clone()))
            .await;
        provider.inner.clear_calls();
        let pending =
            LaunchIntent::new(key.as_str(), JobType::Provision, "v1", t0()).with_marker(marker);
        let store = MemoryIntentStore::with_pending(Some(pending));
        let mut jobs = Vec::new();
        let out = run(&engine, &r, &mut jobs, &store).await.unwrap();
        assert!(
            matches!(out.step, ProvisionStep::Recovered { .. }),
            "{marker:?}: {out:?}"
        );
        let marked = provider.marked.lock().unwrap().clone();
        if marker.is_empty() {
            assert!(marked.is_empty(), "no marker: the window lookup");
            assert!(
                provider
                    .inner
                    .calls()
                    .iter()
                    .any(|c| matches!(c, provkit_testing::scripted::ProviderCall::FindJob { .. }))
            );
        } else {
            assert_eq!(marked, [(key.to_string(), marker.to_owned())]);
        }
        assert_eq!(
            provider.inner.jobs_created("uid-1", &JobType::Provision),
            1,
            "{marker:?}: adopted, not launched again"
        );
    }
}
