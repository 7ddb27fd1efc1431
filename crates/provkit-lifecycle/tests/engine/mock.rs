//! The mockall mock (feature `mock`) works behind `Arc<dyn ProvisioningProvider>`.

#[cfg(feature = "mock")]
#[tokio::test]
async fn mockall_mock_drives_the_engine() {
    use std::sync::Arc;

    use provkit_core::JobState;
    use provkit_lifecycle::{
        IdempotencySupport, LaunchContext, Lifecycle, MockProvisioningProvider, ProviderError,
        ProvisionHooks, ProvisionResult,
    };

    use super::support::*;

    let mut mock = MockProvisioningProvider::new();
    mock.expect_idempotency_support()
        .return_const(IdempotencySupport::Unsupported);
    mock.expect_launch_refused_for().return_const(None);
    mock.expect_name().return_const("mock".to_owned());
    let mut seq = mockall::Sequence::new();
    mock.expect_trigger_provision()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Err(ProviderError::launch_not_made("boom", None)));
    mock.expect_trigger_provision()
        .times(1)
        .in_sequence(&mut seq)
        .withf(|_, ctx| ctx.idempotency_key.is_some())
        .returning(|_, _| Ok(ProvisionResult::new("m-1", JobState::Pending, "ok")));
    let (_c, clock) = clock_at(t0());
    let engine = Lifecycle::new(Arc::new(mock), clock);
    let r = resource("mock");
    let mut jobs = vec![];
    assert!(
        engine
            .run_provisioning_lifecycle(
                &r,
                &mut jobs,
                "v1",
                &LaunchContext::new(),
                &mut ProvisionHooks::new()
            )
            .await
            .is_err()
    );
    let out = engine
        .run_provisioning_lifecycle(
            &r,
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs[0].job_id, "m-1");
}

/// Issue 27 (6): the engine's hooks and the clock have mocks too, and an engine run on them
/// calls each in the order the exactly-once rules require: the fresh read, the durable intent,
/// the launch (with the intent's key), then the flush of the new job; the clock dates it all.
#[cfg(feature = "mock")]
#[tokio::test]
async fn the_hook_and_clock_mocks_drive_a_launch_in_order() {
    use std::sync::Arc;

    use provkit_core::{JobState, MockClock};
    use provkit_lifecycle::{
        IdempotencySupport, LaunchContext, Lifecycle, MockIntentStore, MockProvisioningProvider,
        MockStaleCacheCheck, MockStatusFlush, ProvisionHooks, ProvisionResult,
    };

    use super::support::*;

    let mut seq = mockall::Sequence::new();
    let mut fresh = MockStaleCacheCheck::new();
    fresh
        .expect_read_fresh_jobs()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|| Ok(Vec::new()));
    let mut intents = MockIntentStore::new();
    intents.expect_pending().return_const(None);
    intents
        .expect_write()
        .times(1)
        .in_sequence(&mut seq)
        .withf(|i| i.created_at == t0() && !i.idempotency_key.is_empty())
        .returning(|_| Ok(()));
    let mut provider = MockProvisioningProvider::new();
    provider
        .expect_idempotency_support()
        .return_const(IdempotencySupport::Unsupported);
    provider.expect_launch_refused_for().return_const(None);
    // Asked right before the intent write (a mock must answer it, as any method it reaches).
    provider.expect_launch_marker().return_const(None);
    provider.expect_name().return_const("mock".to_owned());
    provider
        .expect_trigger_provision()
        .times(1)
        .in_sequence(&mut seq)
        .withf(|_, ctx| ctx.idempotency_key.is_some())
        .returning(|_, _| Ok(ProvisionResult::new("m-1", JobState::Pending, "ok")));
    intents.expect_resolve().times(0..=1).return_const(());
    let mut flush = MockStatusFlush::new();
    flush
        .expect_flush()
        .times(1)
        .in_sequence(&mut seq)
        .withf(|jobs| jobs.iter().any(|j| j.job_id == "m-1"))
        .returning(|_| Ok(()));
    let mut clock = MockClock::new();
    clock.expect_now().returning(t0);

    let engine = Lifecycle::new(Arc::new(provider), Arc::new(clock));
    let mut jobs = vec![];
    let out = engine
        .run_provisioning_lifecycle(
            &resource("mocked-hooks"),
            &mut jobs,
            "v1",
            &LaunchContext::new(),
            &mut ProvisionHooks::new()
                .stale_check(&fresh)
                .intents(&intents)
                .status_flush(&flush),
        )
        .await
        .unwrap();
    assert_eq!(out.requeue_after(), Some(POLL));
    assert_eq!(jobs[0].job_id, "m-1");
    assert_eq!(jobs[0].timestamp, Some(t0()), "dated by the mocked clock");
}
