//! The conformance suites run against the fakes and every decorator.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use provkit_core::ManualClock;
use provkit_machines::cloud::{CloudProvider, CreateVisibilityGuard, MachineView, ValidationCache};
use provkit_testing::machines::conformance::{
    CloudCapabilities, cloud_cleanup_never_created, cloud_lifecycle, cloud_validation,
    machine_set_contract,
};
use provkit_testing::machines::{
    FakeCloudConfig, FakeCloudProvider, InMemoryMachineSetProvider, MachineInfoBuilder as B,
    machine_gvr,
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
