//! Crash injection for exactly-once tests: a [`CrashSwitch`] and the decorators
//! [`CrashingCloud`] and [`CrashingProgress`] that pass through its crash points.
//!
//! A crash is the reconcile future being dropped at an await point, which is what a process
//! crash does to in-memory state: only what reached the cloud or went through the
//! [`ProgressHandle`] survives.
//!
//! Hand-written: fault injection at the await points of these two traits; fail-point crates
//! inject errors or panics, not a dropped future.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use provkit_machines::cloud::{
    CleanupProgress, CloudProvider, CreateIntent, DefaultedSpec, DynProgressHandle, Instance,
    MachineProgress, MachineView, ProgressChange, ProgressError, ProgressHandle, ProviderError,
};
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct Inner {
    armed_at: Option<u32>,
    passed: AtomicU32,
    fired: Mutex<Option<String>>,
    notify: Notify,
}

/// Counts crash points and "crashes" at the armed one: the code under test stops there for
/// good and [`run`](Self::run) drops it. Clones share the switch.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_testing::machines::CrashSwitch;
/// let switch = CrashSwitch::at(1);
/// let s = switch.clone();
/// let out = switch.run(async move {
///     s.point("first").await;
///     s.point("second").await; // crashes here
///     "finished"
/// }).await;
/// assert_eq!(out, None);
/// assert_eq!(switch.fired().as_deref(), Some("second"));
/// let never = CrashSwitch::disarmed();
/// assert_eq!(never.run(async { 7 }).await, Some(7));
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct CrashSwitch {
    inner: Arc<Inner>,
}

impl CrashSwitch {
    /// A switch that crashes at the `point`-th crash point (0-based).
    #[must_use]
    pub fn at(point: u32) -> Self {
        Self {
            inner: Arc::new(Inner {
                armed_at: Some(point),
                ..Inner::default()
            }),
        }
    }

    /// A switch that never crashes (it still counts points).
    ///
    /// ```
    /// assert_eq!(provkit_testing::machines::CrashSwitch::disarmed().points_passed(), 0);
    /// ```
    #[must_use]
    pub fn disarmed() -> Self {
        Self::default()
    }

    /// A crash point named `name`: returns at once, except at the armed point, where it never
    /// returns.
    pub async fn point(&self, name: &str) {
        let n = self.inner.passed.fetch_add(1, Ordering::SeqCst);
        if self.inner.armed_at == Some(n) {
            *self
                .inner
                .fired
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(name.to_owned());
            self.inner.notify.notify_one();
            std::future::pending::<()>().await;
        }
    }

    /// The name of the point where the switch crashed, if it did.
    #[must_use]
    pub fn fired(&self) -> Option<String> {
        self.inner
            .fired
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Crash points passed so far (including the one that crashed).
    #[must_use]
    pub fn points_passed(&self) -> u32 {
        self.inner.passed.load(Ordering::SeqCst)
    }

    /// Runs `f` to completion (`Some`), or drops it when it reaches the armed point (`None`).
    pub async fn run<F: Future>(&self, f: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            out = f => Some(out),
            () = self.inner.notify.notified() => None,
        }
    }
}

/// A [`CloudProvider`] decorator with crash points before and after `get`, `create` and
/// `cleanup` ("after" = the cloud did it, the caller never heard back).
///
/// ```
/// use provkit_testing::machines::{CrashSwitch, CrashingCloud, FakeCloudProvider};
/// let c = CrashingCloud::new(FakeCloudProvider::default(), CrashSwitch::disarmed());
/// assert_eq!(c.inner().create_calls(), 0);
/// ```
#[derive(Debug)]
pub struct CrashingCloud<P> {
    inner: P,
    switch: CrashSwitch,
}

impl<P> CrashingCloud<P> {
    /// Wraps `inner`.
    #[must_use]
    pub fn new(inner: P, switch: CrashSwitch) -> Self {
        Self { inner, switch }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<P: CloudProvider> CloudProvider for CrashingCloud<P> {
    fn add_defaults(&self, spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError> {
        self.inner.add_defaults(spec)
    }

    async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
        self.inner.validate(spec).await
    }

    async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError> {
        self.switch.point("cloud get: before").await;
        let r = self.inner.get(machine).await;
        self.switch.point("cloud get: after").await;
        r
    }

    async fn create(
        &self,
        machine: &MachineView,
        intent: &CreateIntent,
        user_data: &str,
        progress: &DynProgressHandle,
    ) -> Result<Instance, ProviderError> {
        self.switch.point("cloud create: before").await;
        let r = self
            .inner
            .create(machine, intent, user_data, progress)
            .await;
        self.switch.point("cloud create: after").await;
        r
    }

    async fn cleanup(
        &self,
        machine: &MachineView,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError> {
        self.switch.point("cloud cleanup: before").await;
        let r = self.inner.cleanup(machine, progress).await;
        self.switch.point("cloud cleanup: after").await;
        r
    }

    async fn migrate_uid(&self, machine: &MachineView, new_uid: &str) -> Result<(), ProviderError> {
        self.inner.migrate_uid(machine, new_uid).await
    }

    fn metrics_labels(
        &self,
        machine: &MachineView,
    ) -> Result<BTreeMap<String, String>, ProviderError> {
        self.inner.metrics_labels(machine)
    }

    fn idempotent_create(&self) -> bool {
        self.inner.idempotent_create()
    }
}

/// A [`ProgressHandle`] decorator with crash points before and after every `update` ("after" =
/// durable, the caller never heard back).
///
/// ```
/// use provkit_testing::machines::{CrashSwitch, CrashingProgress, InMemoryProgress};
/// let p = CrashingProgress::new(InMemoryProgress::default(), CrashSwitch::disarmed());
/// assert!(p.inner().snapshot().is_empty());
/// ```
#[derive(Debug)]
pub struct CrashingProgress<H> {
    inner: H,
    switch: CrashSwitch,
}

impl<H> CrashingProgress<H> {
    /// Wraps `inner`.
    #[must_use]
    pub fn new(inner: H, switch: CrashSwitch) -> Self {
        Self { inner, switch }
    }

    /// The wrapped handle.
    pub fn inner(&self) -> &H {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<H: ProgressHandle> ProgressHandle for CrashingProgress<H> {
    async fn load(&self) -> Result<MachineProgress, ProgressError> {
        self.inner.load().await
    }

    async fn update<'c>(
        &self,
        change: ProgressChange<'c>,
    ) -> Result<MachineProgress, ProgressError> {
        self.switch.point("progress update: before").await;
        let r = self.inner.update(change).await;
        self.switch.point("progress update: after").await;
        r
    }
}
