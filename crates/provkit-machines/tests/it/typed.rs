//! The typed-spec adapter: a `TypedCloudProvider` behind `Typed` is a full `CloudProvider`
//! (conformance suites, decorators, `&dyn`), decoding the spec once per call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::{TimeZone, Utc};
use provkit_core::ManualClock;
use provkit_machines::cloud::{
    CleanupProgress, CloudProvider, CreateIntent, DynProgressHandle, Instance, MachineErrorReason,
    MachineView, ProviderError, Typed, TypedCloudProvider, ValidationCache,
};
use provkit_testing::machines::conformance::{
    CloudCapabilities, cloud_cleanup_never_created, cloud_lifecycle, cloud_validation,
};
use provkit_testing::machines::{FakeCloudProvider, InMemoryProgress};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pass_validation: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    zone: Option<String>,
}

/// The fake cloud, typed: forwards to the untyped fake and checks that it got the spec.
#[derive(Debug, Default)]
struct TypedFake {
    cloud: FakeCloudProvider,
    cleanups_without_spec: AtomicU32,
}

#[async_trait::async_trait]
impl TypedCloudProvider for TypedFake {
    type Spec = Spec;

    fn add_defaults(&self, mut spec: Spec) -> Result<Spec, ProviderError> {
        spec.zone.get_or_insert_with(|| "zone-a".to_owned());
        Ok(spec)
    }

    async fn validate(&self, spec: &Spec) -> Result<(), ProviderError> {
        if spec.pass_validation == Some(false) || spec.size.is_empty() {
            return Err(ProviderError::terminal(
                MachineErrorReason::InvalidConfiguration,
                "failing validation as requested",
            ));
        }
        Ok(())
    }

    async fn get(&self, machine: &MachineView, _: &Spec) -> Result<Instance, ProviderError> {
        self.cloud.get(machine).await
    }

    async fn create(
        &self,
        machine: &MachineView,
        spec: &Spec,
        intent: &CreateIntent,
        user_data: &str,
        progress: &DynProgressHandle,
    ) -> Result<Instance, ProviderError> {
        assert!(!spec.size.is_empty());
        self.cloud
            .create(machine, intent, user_data, progress)
            .await
    }

    async fn cleanup(
        &self,
        machine: &MachineView,
        spec: Option<Spec>,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError> {
        if spec.is_none() {
            self.cleanups_without_spec.fetch_add(1, Ordering::SeqCst);
        }
        self.cloud.cleanup(machine, progress).await
    }

    async fn migrate_uid(
        &self,
        machine: &MachineView,
        _: Option<Spec>,
        new_uid: &str,
    ) -> Result<(), ProviderError> {
        self.cloud.migrate_uid(machine, new_uid).await
    }

    fn metrics_labels(
        &self,
        _: &MachineView,
        spec: &Spec,
    ) -> Result<BTreeMap<String, String>, ProviderError> {
        Ok(BTreeMap::from([("size".to_owned(), spec.size.clone())]))
    }
}

fn machine(uid: &str) -> MachineView {
    MachineView::new(uid, "worker-0", serde_json::json!({"size": "small"}))
}

#[tokio::test(start_paused = true)]
async fn a_typed_provider_passes_the_conformance_suites_as_dyn_cloud_provider() {
    let typed = ValidationCache::new(
        Typed::new(TypedFake::default()),
        Arc::new(ManualClock::new(Utc.timestamp_opt(0, 0).unwrap())),
    );
    let p: &dyn CloudProvider = &typed;
    cloud_lifecycle(
        p,
        &machine("uid-old"),
        "uid-new",
        CloudCapabilities::default(),
    )
    .await;
    cloud_cleanup_never_created(p, &machine("never")).await;
    cloud_validation(
        p,
        &machine("uid-v"),
        &serde_json::json!({"size": "small"}),
        &serde_json::json!({"size": "small", "passValidation": false}),
    )
    .await;
}

#[tokio::test]
async fn the_adapter_decodes_encodes_and_reports_bad_specs_terminally() {
    let p = Typed::new(TypedFake::default());
    let defaulted = p
        .add_defaults(serde_json::json!({"size": "m"}))
        .unwrap()
        .into_inner();
    assert_eq!(
        defaulted,
        serde_json::json!({"size": "m", "zone": "zone-a"})
    );

    let bad = MachineView::new("uid-bad", "worker-bad", serde_json::json!({"size": 7}));
    for err in [
        p.validate(&bad.provider_spec).await.unwrap_err(),
        p.get(&bad).await.unwrap_err(),
        p.create(
            &bad,
            &CreateIntent::new("uid-bad", Utc.timestamp_opt(1_700_000_000, 0).unwrap()),
            "",
            &InMemoryProgress::default(),
        )
        .await
        .unwrap_err(),
        p.metrics_labels(&bad).unwrap_err(),
        p.add_defaults(bad.provider_spec.clone()).unwrap_err(),
    ] {
        assert_eq!(
            err.terminal_reason(),
            Some(&MachineErrorReason::InvalidConfiguration),
            "{err}"
        );
        assert!(
            err.to_string().contains("provider spec is not a valid"),
            "{err}"
        );
    }
    assert_eq!(
        p.inner().cloud.create_calls(),
        0,
        "nothing created from a bad spec"
    );
}

#[tokio::test]
async fn deletion_is_never_blocked_by_a_spec_that_no_longer_decodes() {
    // Kubermatic #131 / #2017: a machine whose spec became invalid must still be deletable.
    let p = Typed::new(TypedFake::default());
    let progress = InMemoryProgress::default();
    let m = machine("uid-1");
    p.create(
        &m,
        &CreateIntent::new("uid-1", Utc.timestamp_opt(1_700_000_000, 0).unwrap()),
        "",
        &progress,
    )
    .await
    .unwrap();
    let broken = MachineView {
        provider_spec: serde_json::json!({"size": ["not", "a", "string"]}),
        ..m
    };
    let mut done = false;
    for _ in 0..5 {
        if p.cleanup(&broken, &progress).await.unwrap() == CleanupProgress::Done {
            done = true;
            break;
        }
    }
    assert!(done);
    assert_eq!(p.inner().cloud.live_instances("uid-1"), 0);
    assert!(p.inner().cleanups_without_spec.load(Ordering::SeqCst) >= 2);
    p.migrate_uid(&broken, "uid-2").await.unwrap();
}

#[cfg(feature = "mock")]
#[tokio::test]
async fn the_typed_mock_runs_behind_the_adapter() {
    use provkit_machines::cloud::MockTypedCloudProvider;
    let mut mock = MockTypedCloudProvider::new();
    mock.expect_validate()
        .withf(|spec| spec["size"] == "small")
        .times(1)
        .returning(|_| Ok(()));
    mock.expect_idempotent_create().return_const(true);
    let p: Box<dyn CloudProvider> = Box::new(Typed::new(mock));
    p.validate(&serde_json::json!({"size": "small"}))
        .await
        .unwrap();
    assert!(p.idempotent_create());
}

#[cfg(feature = "mock")]
#[tokio::test]
async fn the_untyped_mock_takes_a_progress_handle() {
    use provkit_machines::cloud::{InstanceStatus, MockCloudProvider, ProgressHandle};
    let mut mock = MockCloudProvider::new();
    mock.expect_create().times(1).returning(|m, intent, _, _| {
        assert_eq!(intent.token, "u-0");
        Ok(Instance::new(
            m.name.clone(),
            "i-1",
            InstanceStatus::Creating,
        ))
    });
    mock.expect_cleanup()
        .times(1)
        .returning(|_, _| Ok(CleanupProgress::Done));
    let progress = InMemoryProgress::default();
    let m = machine("u");
    let intent = CreateIntent::new("u", Utc.timestamp_opt(0, 0).unwrap());
    assert_eq!(
        mock.create(&m, &intent, "", &progress).await.unwrap().id,
        "i-1"
    );
    assert_eq!(
        mock.cleanup(&m, &progress).await.unwrap(),
        CleanupProgress::Done
    );
    assert!(progress.load().await.unwrap().is_empty());
}

/// `MockProgressHandle` (issue 27): a provider's progress writes can be scripted and checked,
/// including a failing write; the closure a provider passes is handed to the expectation.
#[cfg(feature = "mock")]
#[tokio::test]
async fn the_progress_handle_mock_sees_each_change_and_can_fail() {
    use provkit_machines::cloud::{
        MachineProgress, MockProgressHandle, ProgressError, ProgressHandle,
    };
    let mut handle = MockProgressHandle::new();
    let mut seq = mockall::Sequence::new();
    handle
        .expect_update()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|change| {
            let mut p = MachineProgress::default();
            change.apply(&mut p);
            assert_eq!(p.instance_id.as_deref(), Some("i-1"));
            Ok(p)
        });
    handle
        .expect_update()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| {
            Err(ProgressError::Gone {
                machine: "m-0".into(),
            })
        });
    let stored = handle
        .update(&|p: &mut MachineProgress| p.instance_id = Some("i-1".into()))
        .await
        .unwrap();
    assert_eq!(stored.instance_id.as_deref(), Some("i-1"));
    assert!(handle.update(&|_: &mut MachineProgress| {}).await.is_err());
}
