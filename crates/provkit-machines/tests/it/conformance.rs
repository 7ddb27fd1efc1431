//! The conformance suites run against the fakes and every decorator.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use provkit_core::ManualClock;
use provkit_machines::cloud::{CloudProvider, CreateVisibilityGuard, MachineView, ValidationCache};
use provkit_testing::machines::conformance::{
    CloudCapabilities, cloud_cleanup_never_created, cloud_lifecycle, cloud_validation,
    machine_set_contract, progress_handle_contract,
};
use provkit_testing::machines::{
    FakeCloudConfig, FakeCloudProvider, InMemoryMachineSetProvider, InMemoryProgress,
    MachineInfoBuilder as B, machine_gvr,
};

fn machine() -> MachineView {
    MachineView::new("uid-old", "worker-0", serde_json::json!({"size": "small"}))
}

async fn all_cloud_suites(p: &dyn CloudProvider, caps: CloudCapabilities) {
    cloud_lifecycle(p, &machine(), "uid-new", caps).await;
    cloud_cleanup_never_created(
        p,
        &MachineView::new("never", "never", serde_json::Value::Null),
    )
    .await;
    cloud_validation(
        p,
        &machine(),
        &serde_json::json!({"size": "small"}),
        &serde_json::json!({"passValidation": false}),
    )
    .await;
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Utc.timestamp_opt(0, 0).unwrap()))
}

#[tokio::test(start_paused = true)]
async fn fake_cloud_passes() {
    all_cloud_suites(&FakeCloudProvider::default(), CloudCapabilities::default()).await;
}

#[tokio::test(start_paused = true)]
async fn eventually_consistent_fake_passes_when_declared() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 2,
        cleanup_calls_in_progress: 3,
        ..FakeCloudConfig::default()
    });
    let caps = CloudCapabilities {
        create_immediately_visible: false,
        ..CloudCapabilities::default()
    };
    all_cloud_suites(&fake, caps).await;
}

#[tokio::test(start_paused = true)]
async fn validation_cache_passes() {
    let p = ValidationCache::new(FakeCloudProvider::default(), clock());
    all_cloud_suites(&p, CloudCapabilities::default()).await;
}

#[tokio::test(start_paused = true)]
async fn visibility_guard_passes_and_restores_immediate_visibility() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 3,
        ..FakeCloudConfig::default()
    });
    let p = CreateVisibilityGuard::new(fake, Duration::from_secs(2), Duration::from_secs(300));
    all_cloud_suites(&p, CloudCapabilities::default()).await;
}

#[tokio::test(start_paused = true)]
async fn stacked_decorators_pass() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 1,
        ..FakeCloudConfig::default()
    });
    let p = ValidationCache::new(
        CreateVisibilityGuard::new(fake, Duration::from_secs(1), Duration::from_secs(60)),
        clock(),
    );
    let boxed: Box<dyn CloudProvider> = Box::new(p);
    all_cloud_suites(boxed.as_ref(), CloudCapabilities::default()).await;
}

#[tokio::test]
async fn in_memory_machine_set_passes() {
    let p = InMemoryMachineSetProvider::new(vec![
        B::updated(0, "machine-0").build(),
        B::updated(1, "machine-1").build(),
    ]);
    machine_set_contract(&p, &machine_gvr()).await;
}

#[tokio::test]
async fn in_memory_machine_set_with_a_mapping_passes() {
    let p = InMemoryMachineSetProvider::new(vec![B::updated(3, "machine-3").build()])
        .with_creatable_indexes([3, 4, 5].into());
    machine_set_contract(&p, &machine_gvr()).await;
    assert!(
        p.machines()
            .iter()
            .any(|m| m.index == 3 && m.name() != "machine-3")
    );
}

#[tokio::test]
async fn empty_in_memory_machine_set_passes() {
    machine_set_contract(&InMemoryMachineSetProvider::new(vec![]), &machine_gvr()).await;
}

#[tokio::test(start_paused = true)]
async fn idempotent_fake_with_sub_resources_passes() {
    let fake = FakeCloudProvider::new(FakeCloudConfig {
        idempotent_create: true,
        sub_resources: vec!["nic".into(), "disk".into()],
        ..FakeCloudConfig::default()
    });
    all_cloud_suites(&fake, CloudCapabilities::default()).await;
}

#[tokio::test]
async fn in_memory_progress_passes() {
    progress_handle_contract(&InMemoryProgress::default()).await;
}

// ---- every suite catches a deliberately broken implementation ----------------------------

mod broken {
    //! Decorators that break one rule of a contract each.

    use std::collections::BTreeMap;

    use provkit_core::k8s::{MachineInfo, ObjectRef};
    use provkit_machines::cloud::{
        CleanupProgress, CloudProvider, CreateIntent, DefaultedSpec, DynProgressHandle, Instance,
        InstanceStatus, MachineProgress, MachineView, ProgressChange, ProgressError,
        ProgressHandle, ProviderError,
    };
    use provkit_machines::set::{CreatableIndexes, MachineSetError, MachineSetProvider};
    use provkit_testing::machines::{
        FakeCloudConfig, FakeCloudProvider, InMemoryMachineSetProvider, InMemoryProgress,
    };

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) enum Flaw {
        /// Like the upstream Go fake: `get` always finds an instance.
        GetNeverNotFound,
        /// `cleanup` says done while the instance still runs.
        CleanupDoneEarly,
        /// `cleanup` of a never-created machine fails.
        CleanupOfNothingFails,
        /// `validate` accepts everything.
        AcceptsInvalid,
        /// `cleanup` forgets to remove the sub-resource finalizers it recorded.
        KeepsFinalizers,
    }

    #[derive(Debug)]
    pub(super) struct Cloud {
        inner: FakeCloudProvider,
        flaw: Flaw,
    }

    impl Cloud {
        pub(super) fn new(flaw: Flaw) -> Self {
            let config = if flaw == Flaw::KeepsFinalizers {
                FakeCloudConfig {
                    sub_resources: vec!["nic".into()],
                    ..FakeCloudConfig::default()
                }
            } else {
                FakeCloudConfig::default()
            };
            Self {
                inner: FakeCloudProvider::new(config),
                flaw,
            }
        }
    }

    #[async_trait::async_trait]
    impl CloudProvider for Cloud {
        fn add_defaults(&self, spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError> {
            self.inner.add_defaults(spec)
        }
        async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
            if self.flaw == Flaw::AcceptsInvalid {
                return Ok(());
            }
            self.inner.validate(spec).await
        }
        async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError> {
            match self.inner.get(machine).await {
                Err(e) if e.is_not_found() && self.flaw == Flaw::GetNeverNotFound => {
                    Ok(Instance::new("", "", InstanceStatus::Unknown))
                }
                other => other,
            }
        }
        async fn create(
            &self,
            machine: &MachineView,
            intent: &CreateIntent,
            user_data: &str,
            progress: &DynProgressHandle,
        ) -> Result<Instance, ProviderError> {
            self.inner
                .create(machine, intent, user_data, progress)
                .await
        }
        async fn cleanup(
            &self,
            machine: &MachineView,
            progress: &DynProgressHandle,
        ) -> Result<CleanupProgress, ProviderError> {
            let nothing = self.inner.get(machine).await.is_err();
            match self.flaw {
                Flaw::CleanupDoneEarly => Ok(CleanupProgress::Done),
                Flaw::CleanupOfNothingFails if nothing => {
                    Err(ProviderError::transient("nothing to clean up"))
                }
                Flaw::KeepsFinalizers => {
                    // Deletes the instance but never touches the record.
                    self.inner
                        .cleanup(machine, &InMemoryProgress::default())
                        .await
                }
                _ => self.inner.cleanup(machine, progress).await,
            }
        }
        async fn migrate_uid(
            &self,
            machine: &MachineView,
            new_uid: &str,
        ) -> Result<(), ProviderError> {
            self.inner.migrate_uid(machine, new_uid).await
        }
        fn metrics_labels(
            &self,
            machine: &MachineView,
        ) -> Result<BTreeMap<String, String>, ProviderError> {
            self.inner.metrics_labels(machine)
        }
    }

    /// Accepts a delete of a reference with another GVR.
    #[derive(Debug)]
    pub(super) struct IgnoresGvr(pub(super) InMemoryMachineSetProvider);

    #[async_trait::async_trait]
    impl MachineSetProvider for IgnoresGvr {
        async fn machine_infos(&self) -> Result<Vec<MachineInfo>, MachineSetError> {
            self.0.machine_infos().await
        }
        async fn refresh(&self) -> Result<Box<dyn MachineSetProvider>, MachineSetError> {
            self.0.refresh().await
        }
        async fn create_machine(&self, index: i32) -> Result<(), MachineSetError> {
            self.0.create_machine(index).await
        }
        async fn delete_machine(&self, machine: &ObjectRef) -> Result<(), MachineSetError> {
            match self.0.delete_machine(machine).await {
                Err(MachineSetError::WrongGvr { .. }) => Ok(()),
                other => other,
            }
        }
        fn creatable_indexes(&self) -> CreatableIndexes {
            self.0.creatable_indexes()
        }
    }

    /// Creates two machines per call.
    #[derive(Debug)]
    pub(super) struct CreatesTwice(pub(super) InMemoryMachineSetProvider);

    #[async_trait::async_trait]
    impl MachineSetProvider for CreatesTwice {
        async fn machine_infos(&self) -> Result<Vec<MachineInfo>, MachineSetError> {
            self.0.machine_infos().await
        }
        async fn refresh(&self) -> Result<Box<dyn MachineSetProvider>, MachineSetError> {
            self.0.refresh().await
        }
        async fn create_machine(&self, index: i32) -> Result<(), MachineSetError> {
            self.0.create_machine(index).await?;
            self.0.create_machine(index).await
        }
        async fn delete_machine(&self, machine: &ObjectRef) -> Result<(), MachineSetError> {
            self.0.delete_machine(machine).await
        }
        fn creatable_indexes(&self) -> CreatableIndexes {
            self.0.creatable_indexes()
        }
    }

    /// Returns the changed record but never stores it.
    #[derive(Debug, Default)]
    pub(super) struct ForgetfulProgress(pub(super) InMemoryProgress);

    #[async_trait::async_trait]
    impl ProgressHandle for ForgetfulProgress {
        async fn load(&self) -> Result<MachineProgress, ProgressError> {
            self.0.load().await
        }
        async fn update<'c>(
            &self,
            change: ProgressChange<'c>,
        ) -> Result<MachineProgress, ProgressError> {
            let mut p = self.0.snapshot();
            change.apply(&mut p);
            Ok(p)
        }
    }

    /// Stores only the latest change (a blind overwrite of the whole record).
    #[derive(Debug, Default)]
    pub(super) struct LastWriteOnly(pub(super) InMemoryProgress);

    #[async_trait::async_trait]
    impl ProgressHandle for LastWriteOnly {
        async fn load(&self) -> Result<MachineProgress, ProgressError> {
            self.0.load().await
        }
        async fn update<'c>(
            &self,
            change: ProgressChange<'c>,
        ) -> Result<MachineProgress, ProgressError> {
            let mut fresh = MachineProgress::default();
            change.apply(&mut fresh);
            if fresh.is_empty() {
                return self.0.load().await;
            }
            self.0
                .update(&|p: &mut MachineProgress| *p = fresh.clone())
                .await
        }
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "get before create must be not-found")]
async fn lifecycle_catches_a_get_that_is_never_not_found() {
    let p = broken::Cloud::new(broken::Flaw::GetNeverNotFound);
    cloud_lifecycle(&p, &machine(), "uid-new", CloudCapabilities::default()).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "get after cleanup must be not-found")]
async fn lifecycle_catches_a_cleanup_that_reports_done_too_early() {
    let p = broken::Cloud::new(broken::Flaw::CleanupDoneEarly);
    cloud_lifecycle(&p, &machine(), "uid-new", CloudCapabilities::default()).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "cleanup reported done with sub-resource finalizers left")]
async fn lifecycle_catches_a_cleanup_that_leaves_finalizers() {
    let p = broken::Cloud::new(broken::Flaw::KeepsFinalizers);
    cloud_lifecycle(&p, &machine(), "uid-new", CloudCapabilities::default()).await;
}

#[tokio::test]
#[should_panic(expected = "cleanup of a never-created machine must be done")]
async fn cleanup_never_created_catches_a_failing_cleanup() {
    let p = broken::Cloud::new(broken::Flaw::CleanupOfNothingFails);
    cloud_cleanup_never_created(
        &p,
        &MachineView::new("never", "never", serde_json::Value::Null),
    )
    .await;
}

#[tokio::test]
#[should_panic(expected = "get of a never-created machine must be not-found")]
async fn cleanup_never_created_catches_a_get_that_is_never_not_found() {
    let p = broken::Cloud::new(broken::Flaw::GetNeverNotFound);
    cloud_cleanup_never_created(
        &p,
        &MachineView::new("never", "never", serde_json::Value::Null),
    )
    .await;
}

#[tokio::test]
#[should_panic(expected = "invalid spec must fail terminally")]
async fn validation_catches_a_validate_that_accepts_everything() {
    let p = broken::Cloud::new(broken::Flaw::AcceptsInvalid);
    cloud_validation(
        &p,
        &machine(),
        &serde_json::json!({"size": "small"}),
        &serde_json::json!({"passValidation": false}),
    )
    .await;
}

#[tokio::test]
#[should_panic(expected = "a reference of another GVR must be rejected")]
async fn machine_set_contract_catches_a_delete_that_ignores_the_gvr() {
    let p = broken::IgnoresGvr(InMemoryMachineSetProvider::new(vec![
        B::updated(0, "machine-0").build(),
    ]));
    machine_set_contract(&p, &machine_gvr()).await;
}

#[tokio::test]
#[should_panic(expected = "exactly one machine must be created")]
async fn machine_set_contract_catches_a_double_create() {
    let p = broken::CreatesTwice(InMemoryMachineSetProvider::new(vec![
        B::updated(0, "machine-0").build(),
    ]));
    machine_set_contract(&p, &machine_gvr()).await;
}

#[tokio::test]
#[should_panic(expected = "load must see the persisted intent")]
async fn progress_contract_catches_a_handle_that_does_not_persist() {
    progress_handle_contract(&broken::ForgetfulProgress::default()).await;
}

#[tokio::test]
#[should_panic(expected = "later updates must keep earlier changes")]
async fn progress_contract_catches_a_handle_that_loses_earlier_changes() {
    progress_handle_contract(&broken::LastWriteOnly::default()).await;
}
