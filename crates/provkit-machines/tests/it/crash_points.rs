//! Crash-point tests of the exactly-once promise of `ensure_instance` / `cleanup_instance`:
//! the reconcile is dropped at every crash point of the cloud and of the progress handle in
//! turn; only the cloud and what went through the handle survive. The following reconciles
//! must find the instance instead of creating a second one, and leave no orphan.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use provkit_core::ManualClock;
use provkit_machines::cloud::{
    CleanupProgress, CreateVisibilityGuard, EnsureConfig, EnsureError, EnsureOutcome, MachineView,
    ProviderError, cleanup_instance, ensure_instance,
};
use provkit_testing::machines::{
    CrashSwitch, CrashingCloud, CrashingProgress, FakeCloudConfig, FakeCloudProvider,
    InMemoryProgress,
};

const UID: &str = "3f0c9a52-0000-4000-8000-00000000c0de";
const CONFIG: EnsureConfig = EnsureConfig {
    visibility_deadline: Duration::from_secs(600),
};

fn machine() -> MachineView {
    MachineView::new(UID, "worker-0", serde_json::json!({"size": "small"}))
}

/// What survives a crash: the cloud, the progress record (the "API server") and the clock.
struct World {
    cloud: Arc<FakeCloudProvider>,
    server: InMemoryProgress,
    clock: ManualClock,
}

impl World {
    fn new(config: &FakeCloudConfig) -> Self {
        Self {
            cloud: Arc::new(FakeCloudProvider::new(config.clone())),
            server: InMemoryProgress::default(),
            clock: ManualClock::new(Utc.timestamp_opt(1_800_000_000, 0).unwrap()),
        }
    }

    async fn ensure(&self, switch: &CrashSwitch) -> Option<Result<EnsureOutcome, EnsureError>> {
        // Everything built here is in-memory state of one reconcile: dropped by a crash.
        let cloud = CrashingCloud::new(self.cloud.clone(), switch.clone());
        let progress = CrashingProgress::new(self.server.clone(), switch.clone());
        let m = machine();
        switch
            .run(ensure_instance(
                &cloud,
                &m,
                "#cloud-config",
                &progress,
                &self.clock,
                CONFIG,
            ))
            .await
    }

    async fn cleanup(&self, switch: &CrashSwitch) -> Option<Result<CleanupProgress, EnsureError>> {
        let cloud = CrashingCloud::new(self.cloud.clone(), switch.clone());
        let progress = CrashingProgress::new(self.server.clone(), switch.clone());
        let m = machine();
        switch
            .run(cleanup_instance(&cloud, &m, &progress, &self.clock, CONFIG))
            .await
    }

    /// Reconciles (no crash) until the instance is found or the visibility deadline passed.
    async fn converge_create(&self) -> Result<(), EnsureError> {
        for _ in 0..200 {
            match self.ensure(&CrashSwitch::disarmed()).await {
                Some(Ok(EnsureOutcome::Found(_))) => return Ok(()),
                Some(Ok(EnsureOutcome::Created(_))) => {}
                Some(Ok(EnsureOutcome::NotVisibleYet { retry_after, .. })) => {
                    self.clock.advance(retry_after);
                }
                Some(Err(e)) => return Err(e),
                None => panic!("a disarmed switch crashed"),
            }
        }
        panic!("create did not converge in 200 reconciles");
    }

    /// Reconciles the deletion (no crash) until cleanup is done.
    async fn converge_cleanup(&self) {
        for _ in 0..200 {
            match self.cleanup(&CrashSwitch::disarmed()).await {
                Some(Ok(CleanupProgress::Done)) => return,
                Some(Ok(CleanupProgress::InProgress { retry_after })) => {
                    self.clock
                        .advance(retry_after.unwrap_or(Duration::from_secs(10)));
                }
                Some(Err(e)) => panic!("cleanup failed: {e}"),
                None => panic!("a disarmed switch crashed"),
            }
        }
        panic!("cleanup did not converge in 200 reconciles");
    }

    /// Sub-resources in the cloud that the progress record does not know (cleanup would
    /// never delete them).
    fn orphans(&self) -> BTreeSet<String> {
        let recorded = self.server.snapshot().finalizers;
        self.cloud
            .sub_resources(UID)
            .difference(&recorded)
            .cloned()
            .collect()
    }
}

fn azure_like(idempotent_create: bool, get_misses_after_create: u32) -> FakeCloudConfig {
    FakeCloudConfig {
        idempotent_create,
        get_misses_after_create,
        sub_resources: vec!["public-ip".into(), "nic".into()],
        cleanup_calls_in_progress: 1,
        ..FakeCloudConfig::default()
    }
}

/// Runs `scenario` once per crash point (0, 1, …) until a run passes every point without
/// crashing; returns the names of the points crashed at.
async fn for_every_create_crash_point(
    config: &FakeCloudConfig,
    check: impl Fn(&World, &str, Result<(), EnsureError>),
) -> Vec<String> {
    let mut crashed = Vec::new();
    for point in 0.. {
        let world = World::new(config);
        let switch = CrashSwitch::at(point);
        let first = world.ensure(&switch).await;
        let Some(name) = switch.fired() else {
            assert!(
                matches!(first, Some(Ok(EnsureOutcome::Created(_)))),
                "the crash-free run must create: {first:?}"
            );
            break;
        };
        let label = format!("crash #{point} at {name}");
        let converged = world.converge_create().await;
        check(&world, &label, converged);
        crashed.push(name);
    }
    crashed
}

#[tokio::test]
async fn create_crash_at_every_point_leaves_exactly_one_instance_and_no_orphan() {
    for misses in [0, 3] {
        let config = azure_like(true, misses);
        let crashed = for_every_create_crash_point(&config, |world, label, converged| {
            assert!(converged.is_ok(), "{label}: {converged:?}");
            assert_eq!(world.cloud.live_instances(UID), 1, "{label}: instances");
            assert_eq!(world.cloud.duplicate_instances(), 0, "{label}: duplicates");
            assert!(
                world.orphans().is_empty(),
                "{label}: orphans {:?}",
                world.orphans()
            );
            assert!(
                world.server.snapshot().instance_id.is_some(),
                "{label}: the instance id is recorded"
            );
        })
        .await;
        // Intent write, two finalizer writes, cloud create, id write: before and after each,
        // plus the cloud get before and after.
        assert!(crashed.len() >= 12, "crash points exercised: {crashed:?}");
        assert!(crashed.iter().any(|n| n == "cloud create: after"));
        assert!(crashed.iter().any(|n| n == "progress update: after"));
    }
}

#[tokio::test]
async fn create_crash_without_idempotent_create_never_duplicates() {
    // A cloud without an idempotency token: a crash between the intent and the cloud create
    // cannot be told from a create that is not visible yet, so it ends in the typed error
    // after the deadline (0 instances, nothing orphaned) — never in a second instance.
    for misses in [0, 3] {
        let config = azure_like(false, misses);
        let crashed = for_every_create_crash_point(&config, |world, label, converged| {
            assert_eq!(world.cloud.duplicate_instances(), 0, "{label}: duplicates");
            assert!(
                world.orphans().is_empty(),
                "{label}: orphans {:?}",
                world.orphans()
            );
            match world.cloud.live_instances(UID) {
                1 => assert!(converged.is_ok(), "{label}: {converged:?}"),
                0 => assert!(
                    matches!(converged, Err(EnsureError::NotVisibleAfterDeadline { .. })),
                    "{label}: without an instance the typed error must come: {converged:?}"
                ),
                n => panic!("{label}: {n} instances"),
            }
            assert!(world.cloud.create_calls() <= 1, "{label}: create calls");
        })
        .await;
        assert!(crashed.iter().any(|n| n == "cloud create: after"));
    }
}

#[tokio::test]
async fn a_machine_deleted_after_a_create_crash_leaves_nothing_behind() {
    for idempotent in [true, false] {
        let config = azure_like(idempotent, 0);
        for point in 0.. {
            let world = World::new(&config);
            let switch = CrashSwitch::at(point);
            let _ = world.ensure(&switch).await;
            let Some(name) = switch.fired() else { break };
            world.converge_cleanup().await;
            let label = format!("idempotent={idempotent}, crash #{point} at {name}");
            assert_eq!(world.cloud.live_instances(UID), 0, "{label}: instances");
            assert!(
                world.cloud.sub_resources(UID).is_empty(),
                "{label}: sub-resources"
            );
            assert!(
                world.server.snapshot().is_empty(),
                "{label}: record cleared"
            );
        }
    }
}

#[tokio::test]
async fn cleanup_crash_at_every_point_removes_everything() {
    let config = azure_like(true, 0);
    let mut crashed = Vec::new();
    for point in 0.. {
        let world = World::new(&config);
        world.converge_create().await.unwrap();
        assert_eq!(world.cloud.sub_resources(UID).len(), 2);
        let switch = CrashSwitch::at(point);
        // The first cleanup call only starts the asynchronous delete; the crash hits one of
        // the calls until done.
        let mut done = false;
        for _ in 0..5 {
            match world.cleanup(&switch).await {
                Some(Ok(CleanupProgress::Done)) => {
                    done = true;
                    break;
                }
                Some(Ok(CleanupProgress::InProgress { .. })) => {}
                Some(Err(e)) => panic!("cleanup failed: {e}"),
                None => break,
            }
        }
        let Some(name) = switch.fired() else {
            assert!(done, "the crash-free run must finish");
            break;
        };
        let label = format!("crash #{point} at {name}");
        world.converge_cleanup().await;
        assert_eq!(world.cloud.live_instances(UID), 0, "{label}: instances");
        assert!(
            world.cloud.sub_resources(UID).is_empty(),
            "{label}: sub-resources left"
        );
        assert!(
            world.server.snapshot().is_empty(),
            "{label}: record cleared"
        );
        crashed.push(name);
    }
    assert!(
        crashed
            .iter()
            .filter(|n| *n == "progress update: before")
            .count()
            >= 2,
        "both finalizer removals were crash points: {crashed:?}"
    );
}

#[tokio::test]
async fn the_crash_test_catches_a_provider_that_records_finalizers_too_late() {
    // The harness must be able to fail: a provider that creates a sub-resource before
    // recording its finalizer orphans it when the crash falls in between and the machine is
    // deleted before a re-create could repair the record.
    let config = FakeCloudConfig {
        record_finalizer_after_create: true,
        ..azure_like(true, 0)
    };
    let mut orphaned_at = Vec::new();
    for point in 0.. {
        let world = World::new(&config);
        let switch = CrashSwitch::at(point);
        let _ = world.ensure(&switch).await;
        let Some(name) = switch.fired() else { break };
        // The machine is deleted right after the crash: cleanup only knows what was recorded.
        world.converge_cleanup().await;
        if !world.cloud.sub_resources(UID).is_empty() {
            orphaned_at.push(name);
        }
    }
    assert!(
        orphaned_at.iter().any(|n| n == "progress update: before"),
        "the late finalizer must orphan a sub-resource at some crash point: {orphaned_at:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn visibility_guard_timeout_creates_no_duplicate() {
    // The cloud never shows the instance within the guard's timeout (#886, #1706).
    let fake = Arc::new(FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 1_000,
        ..FakeCloudConfig::default()
    }));
    let guard = CreateVisibilityGuard::new(
        fake.clone(),
        Duration::from_secs(2),
        Duration::from_secs(10),
    );
    let server = InMemoryProgress::default();
    let clock = ManualClock::new(Utc.timestamp_opt(1_800_000_000, 0).unwrap());
    let m = machine();
    let first = ensure_instance(&guard, &m, "", &server, &clock, CONFIG).await;
    assert!(
        matches!(
            first,
            Err(EnsureError::Provider(
                ProviderError::DeadlineExceeded { .. }
            ))
        ),
        "the guard times out: {first:?}"
    );
    let mut waits = 0;
    let end = loop {
        match ensure_instance(&guard, &m, "", &server, &clock, CONFIG).await {
            Ok(EnsureOutcome::NotVisibleYet { retry_after, .. }) => {
                waits += 1;
                clock.advance(retry_after);
            }
            other => break other,
        }
    };
    assert!(
        matches!(end, Err(EnsureError::NotVisibleAfterDeadline { .. })),
        "after the deadline: the typed error: {end:?}"
    );
    assert_eq!(waits, 60, "600 s deadline, one look every 10 s");
    assert_eq!(
        fake.create_calls(),
        1,
        "exactly one create reached the cloud"
    );
    assert_eq!(fake.duplicate_instances(), 0);
    assert_eq!(fake.live_instances(UID), 1);
    assert!(end.is_err_and(|e| e.is_terminal()));
}

#[tokio::test(start_paused = true)]
async fn without_a_persisted_intent_the_same_loop_duplicates() {
    // The control for the test above: the intent lost on every reconcile (a fresh record each
    // time) brings back the duplicate the recorded intent prevents.
    let fake = Arc::new(FakeCloudProvider::new(FakeCloudConfig {
        get_misses_after_create: 1_000,
        ..FakeCloudConfig::default()
    }));
    let guard = CreateVisibilityGuard::new(
        fake.clone(),
        Duration::from_secs(2),
        Duration::from_secs(10),
    );
    let clock = ManualClock::new(Utc.timestamp_opt(1_800_000_000, 0).unwrap());
    let m = machine();
    for _ in 0..3 {
        let forgetful = InMemoryProgress::default();
        let _ = ensure_instance(&guard, &m, "", &forgetful, &clock, CONFIG).await;
        clock.advance(Duration::from_secs(60));
    }
    assert_eq!(fake.duplicate_instances(), 2);
}
