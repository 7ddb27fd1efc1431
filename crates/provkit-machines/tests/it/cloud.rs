//! Instance-level tests: validation cache, visibility guard, step functions, fake knobs.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use provkit_core::ManualClock;
use provkit_machines::cloud::{
    AFTER_CREATE_REQUEUE, BOOTSTRAP_SECRET_REQUEUE, CLEANUP_REQUEUE, CleanupProgress,
    CloudProvider, CreateVisibilityGuard, DeletionState, DeletionStep, EnsureState, Instance,
    InstanceStatus, InstanceStep, MachineErrorReason, MachineView, NO_ADDRESS_REQUEUE,
    NODE_JOIN_REQUEUE, ProviderError, ValidationCache, after_create_step, deletion_step, next_step,
    spec_digest,
};
use provkit_machines::cloud::{BootstrapData, CreateIntent, PendingCreate, VISIBILITY_POLL};
use provkit_testing::machines::{FakeCloudConfig, FakeCloudProvider, InMemoryProgress, Method};

fn intent(m: &MachineView) -> CreateIntent {
    CreateIntent::new(&m.uid, Utc.timestamp_opt(1_700_000_000, 0).unwrap())
}

fn machine(uid: &str) -> MachineView {
    MachineView::new(
        uid,
        format!("worker-{uid}"),
        serde_json::json!({"size": "small"}),
    )
}

fn clock() -> ManualClock {
    ManualClock::new(Utc.timestamp_opt(1_700_000_000, 0).unwrap())
}

#[tokio::test]
async fn validation_cache_caches_success_and_failure_until_the_ttl() {
    let c = clock();
    let cache = ValidationCache::new(FakeCloudProvider::default(), Arc::new(c.clone()));
    let good = serde_json::json!({"size": "small"});
    let bad = serde_json::json!({"passValidation": false});
    for _ in 0..3 {
        cache.validate(&good).await.unwrap();
        assert!(cache.validate(&bad).await.unwrap_err().is_terminal());
    }
    assert_eq!(
        cache.inner().calls(Method::Validate),
        2,
        "one call per distinct spec"
    );
    c.advance(Duration::from_secs(299));
    cache.validate(&good).await.unwrap();
    assert_eq!(
        cache.inner().calls(Method::Validate),
        2,
        "still cached before 5 min"
    );
    c.advance(Duration::from_secs(1));
    cache.validate(&good).await.unwrap();
    assert_eq!(cache.inner().calls(Method::Validate), 3, "expired at 5 min");
}

#[tokio::test]
async fn validation_cache_never_caches_cancellation_or_timeouts() {
    let cache = ValidationCache::new(FakeCloudProvider::default(), Arc::new(clock()));
    let spec = serde_json::json!({"size": "small"});
    cache
        .inner()
        .fail_next(Method::Validate, ProviderError::Cancelled);
    cache.inner().fail_next(
        Method::Validate,
        ProviderError::DeadlineExceeded {
            operation: "validate".into(),
        },
    );
    assert!(matches!(
        cache.validate(&spec).await,
        Err(ProviderError::Cancelled)
    ));
    assert!(matches!(
        cache.validate(&spec).await,
        Err(ProviderError::DeadlineExceeded { .. })
    ));
    cache.validate(&spec).await.unwrap();
    cache.validate(&spec).await.unwrap();
    assert_eq!(cache.inner().calls(Method::Validate), 3);
}

#[tokio::test]
async fn validation_cache_caches_transient_failures_too_and_is_per_instance() {
    let spec = serde_json::json!({"size": "small"});
    let a = ValidationCache::new(FakeCloudProvider::default(), Arc::new(clock()));
    a.inner()
        .fail_next(Method::Validate, ProviderError::transient("503"));
    assert!(a.validate(&spec).await.is_err());
    assert!(a.validate(&spec).await.is_err(), "failures are cached");
    let b = ValidationCache::new(FakeCloudProvider::default(), Arc::new(clock()));
    b.validate(&spec).await.unwrap();
    assert_eq!(
        b.inner().calls(Method::Validate),
        1,
        "caches are not shared"
    );
}

#[test]
fn validation_key_is_the_spec_only_and_key_order_independent() {
    let a = serde_json::json!({"size": "small", "image": {"name": "rhel", "tag": 9}});
    let b: serde_json::Value =
        serde_json::from_str(r#"{"image":{"tag":9,"name":"rhel"},"size":"small"}"#).unwrap();
    assert_eq!(spec_digest(&a), spec_digest(&b));
    assert_ne!(
        spec_digest(&a),
        spec_digest(&serde_json::json!({"size": "large"}))
    );
    assert_eq!(
        spec_digest(&serde_json::json!({})),
        // sha256("{}")
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
}

#[tokio::test(start_paused = true)]
async fn visibility_guard_waits_for_an_eventually_consistent_create() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 3,
        ..FakeCloudConfig::default()
    });
    let guard = CreateVisibilityGuard::new(fake, Duration::from_secs(2), Duration::from_secs(300));
    let m = machine("u1");
    let start = tokio::time::Instant::now();
    let inst = guard
        .create(&m, &intent(&m), "", &InMemoryProgress::default())
        .await
        .unwrap();
    assert_eq!(inst.name, "worker-u1");
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(6),
        "three misses, 2 s apart"
    );
    guard.get(&m).await.unwrap();
    assert_eq!(guard.inner().duplicate_instances(), 0);
}

#[tokio::test(start_paused = true)]
async fn visibility_guard_times_out() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 1_000,
        ..FakeCloudConfig::default()
    });
    let guard = CreateVisibilityGuard::new(fake, Duration::from_secs(2), Duration::from_secs(10));
    let err = guard
        .create(
            &machine("u1"),
            &intent(&machine("u1")),
            "",
            &InMemoryProgress::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::DeadlineExceeded { .. }));
}

#[tokio::test]
async fn without_the_guard_an_eventually_consistent_cloud_duplicates() {
    // The controller's Get → NotFound → Create loop against a lagging cloud (#886, #1706).
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 1,
        ..FakeCloudConfig::default()
    });
    let m = machine("u1");
    for _ in 0..2 {
        if fake.get(&m).await.is_err() {
            // A fresh intent every time: what a controller without a persisted intent does.
            let i = CreateIntent::new(&m.uid, Utc.timestamp_opt(1_700_000_000, 0).unwrap());
            fake.create(&m, &i, "", &InMemoryProgress::default())
                .await
                .unwrap();
        }
    }
    assert_eq!(fake.duplicate_instances(), 1);
}

#[tokio::test]
async fn fake_knobs_addresses_errors_and_metrics() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        address_delay_gets: 1,
        cleanup_calls_in_progress: 2,
        ..FakeCloudConfig::default()
    });
    let m = machine("u1");
    let progress = InMemoryProgress::default();
    fake.create(&m, &intent(&m), "", &progress).await.unwrap();
    assert!(
        fake.get(&m).await.unwrap().addresses.is_empty(),
        "addresses delayed"
    );
    assert_eq!(fake.get(&m).await.unwrap().addresses.len(), 1);
    fake.fail_next(
        Method::Get,
        ProviderError::terminal(MachineErrorReason::InvalidConfiguration, "bad creds"),
    );
    assert!(fake.get(&m).await.unwrap_err().is_terminal());
    assert!(matches!(
        fake.cleanup(&m, &progress).await.unwrap(),
        CleanupProgress::InProgress { .. }
    ));
    assert!(matches!(
        fake.cleanup(&m, &progress).await.unwrap(),
        CleanupProgress::InProgress { .. }
    ));
    assert_eq!(
        fake.cleanup(&m, &progress).await.unwrap(),
        CleanupProgress::Done
    );
    assert_eq!(fake.metrics_labels(&m).unwrap()["size"], "small");
    let defaulted = fake
        .add_defaults(serde_json::json!({}))
        .unwrap()
        .into_inner();
    assert_eq!(defaulted["size"], "small");
}

#[test]
fn provider_error_predicates_and_reasons() {
    let e = ProviderError::terminal(
        MachineErrorReason::Other("AMI terms not accepted".into()),
        "m",
    );
    assert!(e.is_terminal());
    assert_eq!(
        e.terminal_reason(),
        Some(&MachineErrorReason::Other("AMI terms not accepted".into()))
    );
    assert!(!ProviderError::NotFound.is_terminal());
    assert!(ProviderError::NotFound.is_not_found());
    assert!(!ProviderError::transient("x").is_not_found());
    assert_eq!(
        MachineErrorReason::JoinClusterTimeoutError.to_string(),
        "JoinClusterTimeoutError"
    );
}

fn inst(with_addresses: bool) -> Instance {
    let i = Instance::new("n", "i", InstanceStatus::Running);
    if with_addresses {
        i.with_addresses(vec![provkit_machines::cloud::NodeAddress::new(
            provkit_machines::cloud::AddressType::InternalIP,
            "10.0.0.1",
        )])
    } else {
        i
    }
}

#[test]
fn next_step_table() {
    let ready = EnsureState {
        bootstrap: BootstrapData::Available,
        finalizers_present: true,
        ..EnsureState::default()
    };
    let cases: Vec<(
        &str,
        EnsureState,
        Result<Instance, ProviderError>,
        InstanceStep,
    )> = vec![
        (
            "not found, no bootstrap secret",
            EnsureState::default(),
            Err(ProviderError::NotFound),
            InstanceStep::Requeue {
                after: BOOTSTRAP_SECRET_REQUEUE,
                reason: "waiting for the bootstrap secret",
            },
        ),
        (
            "not found, finalizers missing: add before create",
            EnsureState {
                bootstrap: BootstrapData::Available,
                ..EnsureState::default()
            },
            Err(ProviderError::NotFound),
            InstanceStep::AddFinalizers,
        ),
        (
            "not found, ready to create",
            ready,
            Err(ProviderError::NotFound),
            InstanceStep::Create,
        ),
        (
            "terminal get error",
            ready,
            Err(ProviderError::terminal(
                MachineErrorReason::InvalidConfiguration,
                "bad",
            )),
            InstanceStep::SetError {
                reason: MachineErrorReason::CreateError,
                message: "An error of type = InvalidConfiguration, with message = bad occurred"
                    .into(),
            },
        ),
        (
            "transient get error",
            ready,
            Err(ProviderError::transient("503")),
            InstanceStep::RetryWithBackoff {
                message: "transient provider error: 503".into(),
            },
        ),
        (
            "OCPBUGS-34158: a transient bootstrap-data read error is retried, not terminal",
            EnsureState {
                bootstrap: BootstrapData::ReadFailed,
                finalizers_present: true,
                ..EnsureState::default()
            },
            Err(ProviderError::NotFound),
            InstanceStep::RetryWithBackoff {
                message: "reading the bootstrap data failed (transient)".into(),
            },
        ),
        (
            "not found with a young create intent: not visible yet, no second create",
            EnsureState {
                pending_create: Some(PendingCreate {
                    age: Duration::from_secs(30),
                    deadline: Duration::from_secs(600),
                    idempotent_create: false,
                }),
                ..ready
            },
            Err(ProviderError::NotFound),
            InstanceStep::Requeue {
                after: VISIBILITY_POLL,
                reason: "waiting for the created instance to become visible",
            },
        ),
        (
            "not found with a create intent close to its deadline: requeue at the deadline",
            EnsureState {
                pending_create: Some(PendingCreate {
                    age: Duration::from_secs(597),
                    deadline: Duration::from_secs(600),
                    idempotent_create: false,
                }),
                ..ready
            },
            Err(ProviderError::NotFound),
            InstanceStep::Requeue {
                after: Duration::from_secs(3),
                reason: "waiting for the created instance to become visible",
            },
        ),
        (
            "not found with an expired create intent: typed error, never a second create",
            EnsureState {
                pending_create: Some(PendingCreate {
                    age: Duration::from_secs(600),
                    deadline: Duration::from_secs(600),
                    idempotent_create: false,
                }),
                ..ready
            },
            Err(ProviderError::NotFound),
            InstanceStep::CreateNotVisible {
                waited: Duration::from_secs(600),
            },
        ),
        (
            "not found with a create intent, idempotent provider: re-issue the same create",
            EnsureState {
                pending_create: Some(PendingCreate {
                    age: Duration::from_secs(6_000),
                    deadline: Duration::from_secs(600),
                    idempotent_create: true,
                }),
                ..ready
            },
            Err(ProviderError::NotFound),
            InstanceStep::Create,
        ),
        (
            "found, finalizers missing",
            EnsureState {
                bootstrap: BootstrapData::Available,
                ..EnsureState::default()
            },
            Ok(inst(true)),
            InstanceStep::AddFinalizers,
        ),
        (
            "found, no addresses",
            ready,
            Ok(inst(false)),
            InstanceStep::Requeue {
                after: NO_ADDRESS_REQUEUE,
                reason: "instance has no addresses yet",
            },
        ),
        (
            "found, node found",
            EnsureState {
                node_found: true,
                ..ready
            },
            Ok(inst(true)),
            InstanceStep::AdoptNode,
        ),
        (
            "found, join timeout, MachineSet-owned",
            EnsureState {
                join_timeout_elapsed: true,
                owned_by_machine_set: true,
                ..ready
            },
            Ok(inst(true)),
            InstanceStep::DeleteMachine,
        ),
        (
            "found, join timeout, not MachineSet-owned",
            EnsureState {
                join_timeout_elapsed: true,
                ..ready
            },
            Ok(inst(true)),
            InstanceStep::Requeue {
                after: NODE_JOIN_REQUEUE,
                reason: "waiting for the node to join",
            },
        ),
        (
            "found, waiting for node",
            ready,
            Ok(inst(true)),
            InstanceStep::Requeue {
                after: NODE_JOIN_REQUEUE,
                reason: "waiting for the node to join",
            },
        ),
    ];
    for (name, state, get, want) in cases {
        assert_eq!(next_step(&state, &get), want, "{name}");
    }
    assert_eq!(
        after_create_step(&Ok(inst(false))),
        InstanceStep::Requeue {
            after: AFTER_CREATE_REQUEUE,
            reason: "created; watching for silent failures"
        }
    );
    assert!(matches!(
        after_create_step(&Err(ProviderError::terminal(
            MachineErrorReason::InsufficientResources,
            "quota"
        ))),
        InstanceStep::SetError {
            reason: MachineErrorReason::CreateError,
            ..
        }
    ));
}

#[test]
fn deletion_step_table() {
    let both = DeletionState {
        instance_finalizer: true,
        node_finalizer: true,
        external_provider: false,
    };
    let done: Result<CleanupProgress, ProviderError> = Ok(CleanupProgress::Done);
    let cases: Vec<(&str, DeletionState, Option<Result<CleanupProgress, ProviderError>>, DeletionStep)> = vec![
        ("cleanup first", both, None, DeletionStep::RunCleanup),
        ("in progress", both, Some(Ok(CleanupProgress::InProgress { retry_after: None })), DeletionStep::Requeue { after: CLEANUP_REQUEUE }),
        ("in progress with hint", both, Some(Ok(CleanupProgress::InProgress { retry_after: Some(Duration::from_secs(3)) })), DeletionStep::Requeue { after: Duration::from_secs(3) }),
        ("done: instance finalizer first", both, Some(done.clone()), DeletionStep::RemoveInstanceFinalizer),
        ("done, external provider", DeletionState { external_provider: true, ..both }, Some(done), DeletionStep::WaitForAdmin),
        ("terminal error", both, Some(Err(ProviderError::terminal(MachineErrorReason::DeleteError, "stuck"))), DeletionStep::SetError { reason: MachineErrorReason::DeleteError, message: "An error of type = DeleteError, with message = stuck occurred. Please manually delete machine-delete-finalizer finalizer from the machine object.".into() }),
        ("transient error", both, Some(Err(ProviderError::transient("503"))), DeletionStep::RetryWithBackoff { message: "transient provider error: 503".into() }),
        ("node finalizer after the instance finalizer", DeletionState { instance_finalizer: false, ..both }, None, DeletionStep::DeleteNodesAndRemoveNodeFinalizer),
        ("nothing left", DeletionState::default(), None, DeletionStep::Done),
    ];
    for (name, state, cleanup, want) in cases {
        assert_eq!(deletion_step(&state, cleanup.as_ref()), want, "{name}");
    }
}
