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
