//! Conformance suites for `provkit-machines`' traits.
//!
//! Each suite is a `pub async fn` taking `&dyn Trait` plus capability flags, and **panics** (via
//! assertions) when the implementation breaks the contract, like object_store's suites. Run
//! them from a backend's tests, against the fakes and against every decorator.

use std::time::Duration;

use provkit_machines::cloud::{
    CleanupProgress, CloudProvider, CreateIntent, MachineProgress, MachineView, ProgressHandle,
    ProviderError,
};

use provkit_core::{Clock, SystemClock};

use super::InMemoryProgress;
use provkit_machines::set::{CreatableIndexes, MachineSetError, MachineSetProvider, parse_index};
use provkit_machines::{GroupVersionResource, ObjectRef};

/// Capabilities of a cloud provider under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloudCapabilities {
    /// `get` right after `create` must find the instance (true for providers that enforce the
    /// post-condition, e.g. behind a `CreateVisibilityGuard`).
    pub create_immediately_visible: bool,
    /// How many `get` / `cleanup` polls to allow before failing.
    pub max_polls: u32,
    /// Delay between polls (tokio time).
    pub poll_interval: Duration,
}

impl Default for CloudCapabilities {
    fn default() -> Self {
        Self {
            create_immediately_visible: true,
            max_polls: 20,
            poll_interval: Duration::from_millis(10),
        }
    }
}

async fn poll_found(
    p: &dyn CloudProvider,
    machine: &MachineView,
    caps: CloudCapabilities,
) -> provkit_machines::cloud::Instance {
    for _ in 0..caps.max_polls.max(1) {
        match p.get(machine).await {
            Ok(i) => return i,
            Err(e) => assert!(e.is_not_found(), "get({}) failed: {e}", machine.uid),
        }
        tokio::time::sleep(caps.poll_interval).await;
    }
    panic!("instance of {} never became visible", machine.uid); // conformance failure
}

/// The lifecycle of the Kubermatic provider conformance scenario (migrate-UID e2e test):
/// not found → create → found → (an idempotent provider: a second create with the same intent
/// returns the same instance) → migrate UID → found by the new UID (and not the old) →
/// cleanup until done, with no sub-resource finalizer left in the progress record → not found
/// (terminated instances are ignored) → cleanup again is done.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use provkit_machines::cloud::MachineView;
/// use provkit_testing::machines::{conformance, FakeCloudProvider};
/// let fake = FakeCloudProvider::default();
/// let m = MachineView::new("uid-a", "worker-a", serde_json::json!({"size": "s"}));
/// conformance::cloud_lifecycle(&fake, &m, "uid-b", conformance::CloudCapabilities::default()).await;
/// # });
/// ```
pub async fn cloud_lifecycle(
    p: &dyn CloudProvider,
    machine: &MachineView,
    new_uid: &str,
    caps: CloudCapabilities,
) {
    assert!(
        p.get(machine).await.err().is_some_and(|e| e.is_not_found()),
        "get before create must be not-found"
    );
    let progress = InMemoryProgress::default();
    let intent = CreateIntent::new(&machine.uid, SystemClock.now());
    let created = p
        .create(machine, &intent, "#cloud-config\n", &progress)
        .await;
    assert!(created.is_ok(), "create failed: {:?}", created.err());
    if caps.create_immediately_visible {
        let got = p.get(machine).await;
        assert!(
            got.is_ok(),
            "get right after create must find the instance: {:?}",
            got.err()
        );
    }
    let found = poll_found(p, machine, caps).await;
    assert_eq!(found.name, machine.name, "instance name");
    if p.idempotent_create() {
        let again = p
            .create(machine, &intent, "#cloud-config\n", &progress)
            .await;
        assert_eq!(
            again.ok().map(|i| i.id),
            Some(found.id.clone()),
            "an idempotent create with the same intent must return the same instance"
        );
    }

    let migrated = p.migrate_uid(machine, new_uid).await;
    assert!(migrated.is_ok(), "migrate_uid failed: {:?}", migrated.err());
    let renamed = machine.clone().with_uid(new_uid);
    let _ = poll_found(p, &renamed, caps).await;
    assert!(
        p.get(machine).await.err().is_some_and(|e| e.is_not_found()),
        "the old UID must no longer find the instance"
    );

    let mut done = false;
    for _ in 0..caps.max_polls.max(1) {
        match p.cleanup(&renamed, &progress).await {
            Ok(CleanupProgress::Done) => {
                done = true;
                break;
            }
            Ok(CleanupProgress::InProgress { .. }) => tokio::time::sleep(caps.poll_interval).await,
            Err(e) => panic!("cleanup failed: {e}"), // conformance failure
        }
    }
    assert!(done, "cleanup never reported done");
    assert!(
        progress.snapshot().finalizers.is_empty(),
        "cleanup reported done with sub-resource finalizers left: {:?}",
        progress.snapshot().finalizers
    );
    assert!(
        p.get(&renamed)
            .await
            .err()
            .is_some_and(|e| e.is_not_found()),
        "get after cleanup must be not-found (terminated instances are ignored)"
    );
    assert_eq!(
        p.cleanup(&renamed, &progress).await.ok(),
        Some(CleanupProgress::Done),
        "cleanup is repeatable"
    );
}

/// Cleanup of a machine whose instance was never created is `Done`; migrating it is `Ok`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_machines::cloud::MachineView;
/// use provkit_testing::machines::{conformance, FakeCloudProvider};
/// let m = MachineView::new("never", "never", serde_json::Value::Null);
/// conformance::cloud_cleanup_never_created(&FakeCloudProvider::default(), &m).await;
/// # });
/// ```
pub async fn cloud_cleanup_never_created(p: &dyn CloudProvider, machine: &MachineView) {
    assert!(
        matches!(p.get(machine).await, Err(ProviderError::NotFound)),
        "get of a never-created machine must be not-found"
    );
    let progress = InMemoryProgress::default();
    assert_eq!(
        p.cleanup(machine, &progress).await.ok(),
        Some(CleanupProgress::Done),
        "cleanup of a never-created machine must be done"
    );
    assert!(
        p.migrate_uid(machine, "other-uid").await.is_ok(),
        "migrating a never-created machine must succeed"
    );
}

/// The [`ProgressHandle`] contract, on a handle whose record starts empty: `load` of a fresh
/// record is empty; `update` returns and persists the change; a no-op update changes nothing;
/// successive updates keep each other's changes; the provided finalizer and instance-id
/// writes round-trip.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_testing::machines::{conformance, InMemoryProgress};
/// conformance::progress_handle_contract(&InMemoryProgress::default()).await;
/// # });
/// ```
pub async fn progress_handle_contract(h: &dyn ProgressHandle) {
    let empty = h.load().await;
    assert!(
        empty.as_ref().is_ok_and(MachineProgress::is_empty),
        "a fresh record must load empty: {empty:?}"
    );
    let intent = CreateIntent::new("conformance-uid", SystemClock.now());
    let want_intent = intent.clone();
    let stored = h
        .update(&|p: &mut MachineProgress| p.create_intent = Some(intent.clone()))
        .await;
    assert_eq!(
        stored.ok().and_then(|p| p.create_intent),
        Some(want_intent.clone()),
        "update must return the stored change"
    );
    let loaded = h.load().await.ok();
    assert_eq!(
        loaded.as_ref().and_then(|p| p.create_intent.clone()),
        Some(want_intent.clone()),
        "load must see the persisted intent"
    );
    let same = h.update(&|_: &mut MachineProgress| {}).await.ok();
    assert_eq!(same, loaded, "a no-op update must change nothing");
    let _ = h.add_finalizer("conformance-nic").await;
    let _ = h.add_finalizer("conformance-ip").await;
    let _ = h.set_instance_id("conformance-i-1").await;
    let after = h.load().await.unwrap_or_default();
    assert_eq!(
        after.create_intent,
        Some(want_intent),
        "later updates must keep earlier changes"
    );
    assert_eq!(
        after
            .finalizers
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["conformance-ip", "conformance-nic"],
        "both finalizers must be kept"
    );
    assert_eq!(after.instance_id.as_deref(), Some("conformance-i-1"));
    let _ = h.remove_finalizer("conformance-nic").await;
    let removed = h.load().await.unwrap_or_default();
    assert_eq!(
        removed
            .finalizers
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["conformance-ip"],
        "remove_finalizer must remove exactly that finalizer"
    );
}

/// Validation: `valid` passes (twice, as a cache would serve it), `invalid` fails with a
/// terminal error; `add_defaults` returns a spec; metrics labels include `size`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_machines::cloud::MachineView;
/// use provkit_testing::machines::{conformance, FakeCloudProvider};
/// let m = MachineView::new("u", "n", serde_json::json!({"size": "s"}));
/// conformance::cloud_validation(
///     &FakeCloudProvider::default(), &m,
///     &serde_json::json!({"size": "s"}), &serde_json::json!({"passValidation": false}),
/// ).await;
/// # });
/// ```
pub async fn cloud_validation(
    p: &dyn CloudProvider,
    machine: &MachineView,
    valid: &serde_json::Value,
    invalid: &serde_json::Value,
) {
    for _ in 0..2 {
        let ok = p.validate(valid).await;
        assert!(ok.is_ok(), "valid spec rejected: {:?}", ok.err());
        let err = p.validate(invalid).await;
        assert!(
            err.as_ref().err().is_some_and(ProviderError::is_terminal),
            "invalid spec must fail terminally: {err:?}"
        );
    }
    let defaulted = p.add_defaults(valid.clone());
    assert!(
        defaulted.is_ok(),
        "add_defaults failed: {:?}",
        defaulted.err()
    );
    let labels = p.metrics_labels(machine);
    assert!(
        labels.as_ref().is_ok_and(|l| l.contains_key("size")),
        "metrics labels must include size: {labels:?}"
    );
}

/// The set-level contract: deleting a missing machine is `Ok`; a reference of another GVR is
/// rejected and nothing is deleted; `create_machine` at a creatable index yields (after
/// `refresh`) one new machine at that index whose name ends in `-<index>` and parses back;
/// `refresh` does not change the receiver's snapshot; the new machine can be deleted.
///
/// `machine_gvr` is the provider's machine GVR.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_testing::machines::{conformance, machine_gvr, InMemoryMachineSetProvider, MachineInfoBuilder};
/// let p = InMemoryMachineSetProvider::new(vec![MachineInfoBuilder::updated(0, "machine-0").build()]);
/// conformance::machine_set_contract(&p, &machine_gvr()).await;
/// # });
/// ```
pub async fn machine_set_contract(p: &dyn MachineSetProvider, machine_gvr: &GroupVersionResource) {
    let before = p.machine_infos().await;
    assert!(before.is_ok(), "machine_infos failed: {:?}", before.err());
    let before = before.unwrap_or_default();

    let missing = ObjectRef::named(
        machine_gvr.clone(),
        "conformance-missing-machine-0",
        before
            .first()
            .and_then(|i| i.machine.namespace().map(str::to_owned)),
    );
    let deleted_missing = p.delete_machine(&missing).await;
    assert!(
        deleted_missing.is_ok(),
        "deleting a missing machine must succeed: {:?}",
        deleted_missing.err()
    );

    if let Some(first) = before.first() {
        let mut foreign = first.machine.clone();
        foreign.gvr = GroupVersionResource::new("conformance.example.com", "v1", "widgets");
        let rejected = p.delete_machine(&foreign).await;
        assert!(
            matches!(rejected, Err(MachineSetError::WrongGvr { .. })),
            "a reference of another GVR must be rejected: {rejected:?}"
        );
        let fresh = p.refresh().await;
        assert!(fresh.is_ok(), "refresh failed");
        if let Ok(fresh) = fresh {
            let infos = fresh.machine_infos().await.unwrap_or_default();
            let still = infos.iter().find(|i| i.name() == first.name());
            assert!(
                still.is_some_and(|i| !i.is_deleting() || first.is_deleting()),
                "a rejected delete must not delete anything"
            );
        }
    }

    let index = match p.creatable_indexes() {
        CreatableIndexes::Any => before.iter().map(|i| i.index).max().map_or(0, |m| m + 1),
        CreatableIndexes::Only(set) => match set.iter().next() {
            Some(i) => *i,
            None => return,
        },
    };
    let created = p.create_machine(index).await;
    assert!(
        created.is_ok(),
        "create_machine({index}) failed: {:?}",
        created.err()
    );
    let after_snapshot = p.machine_infos().await.unwrap_or_default();
    assert_eq!(
        after_snapshot.len(),
        before.len(),
        "create must not change the receiver's snapshot"
    );

    let fresh = p.refresh().await;
    assert!(fresh.is_ok(), "refresh failed");
    let Ok(fresh) = fresh else { return };
    let infos = fresh.machine_infos().await.unwrap_or_default();
    let new: Vec<_> = infos
        .iter()
        .filter(|i| !before.iter().any(|b| b.name() == i.name()))
        .collect();
    assert_eq!(
        new.len(),
        1,
        "exactly one machine must be created, got {new:?}"
    );
    let Some(new) = new.first() else { return };
    assert_eq!(new.index, index, "created machine index");
    assert!(
        new.name().ends_with(&format!("-{index}")),
        "name {} must end in -{index}",
        new.name()
    );
    assert_eq!(
        parse_index(new.name()),
        Some(index),
        "name must parse back to the index"
    );

    let deleted = p.delete_machine(&new.machine).await;
    assert!(
        deleted.is_ok(),
        "deleting the created machine failed: {:?}",
        deleted.err()
    );
    let again = p.delete_machine(&new.machine).await;
    assert!(again.is_ok(), "delete is idempotent: {:?}", again.err());
}
