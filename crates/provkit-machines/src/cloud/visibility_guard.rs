//! [`CreateVisibilityGuard`]: make `create` wait until `get` sees the instance.

use std::collections::BTreeMap;
use std::time::Duration;

use super::error::ProviderError;
use super::instance::Instance;
use super::machine_view::MachineView;
use super::progress::{CreateIntent, DynProgressHandle};
use super::provider::{CleanupProgress, CloudProvider, DefaultedSpec};

/// A [`CloudProvider`] decorator enforcing the `create` post-condition "visible to `get`":
/// after a successful create it polls `get` every `interval` until the instance is found, for at
/// most `timeout` (tokio time, so paused-time tests run instantly). Generalises the AWS fix
/// (poll every 2 s for up to 5 min).
///
/// If the instance does not become visible in time, `create` returns
/// [`ProviderError::DeadlineExceeded`]; a `get` error other than not-found is returned as is.
/// Every other method delegates unchanged.
///
/// A timeout does not open the door to a duplicate: the create intent was recorded before the
/// cloud call ([`ensure_instance`](super::ensure_instance)), so the next reconcile's not-found
/// `get` means "not visible yet" until
/// [`DEFAULT_VISIBILITY_DEADLINE`](super::DEFAULT_VISIBILITY_DEADLINE) (or the configured
/// deadline) after the intent, then a typed error
/// ([`EnsureError::NotVisibleAfterDeadline`](super::EnsureError::NotVisibleAfterDeadline)) —
/// never a second create.
///
/// ```
/// use std::time::Duration;
/// use provkit_machines::cloud::CreateVisibilityGuard;
/// let g = CreateVisibilityGuard::new((), Duration::from_secs(2), Duration::from_secs(300));
/// assert_eq!(g.interval(), Duration::from_secs(2));
/// ```
#[derive(Debug)]
pub struct CreateVisibilityGuard<P> {
    inner: P,
    interval: Duration,
    timeout: Duration,
}

impl<P> CreateVisibilityGuard<P> {
    /// Wraps `inner`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_machines::cloud::CreateVisibilityGuard;
    /// let g = CreateVisibilityGuard::new((), Duration::from_millis(10), Duration::from_secs(1));
    /// assert_eq!(g.timeout(), Duration::from_secs(1));
    /// ```
    #[must_use]
    pub fn new(inner: P, interval: Duration, timeout: Duration) -> Self {
        Self {
            inner,
            interval,
            timeout,
        }
    }

    /// Poll interval.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_machines::cloud::CreateVisibilityGuard;
    /// assert_eq!(CreateVisibilityGuard::new((), Duration::ZERO, Duration::ZERO).interval(), Duration::ZERO);
    /// ```
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Overall timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_machines::cloud::CreateVisibilityGuard;
    /// assert_eq!(CreateVisibilityGuard::new((), Duration::ZERO, Duration::ZERO).timeout(), Duration::ZERO);
    /// ```
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The wrapped provider.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_machines::cloud::CreateVisibilityGuard;
    /// assert_eq!(*CreateVisibilityGuard::new(3, Duration::ZERO, Duration::ZERO).inner(), 3);
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<P: CloudProvider> CloudProvider for CreateVisibilityGuard<P> {
    fn add_defaults(&self, spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError> {
        self.inner.add_defaults(spec)
    }

    async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
        self.inner.validate(spec).await
    }

    async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError> {
        self.inner.get(machine).await
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
            .await?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            match self.inner.get(machine).await {
                Ok(instance) => return Ok(instance),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() + self.interval > deadline {
                return Err(ProviderError::DeadlineExceeded {
                    operation: format!(
                        "waiting for instance of machine {} to become visible",
                        machine.uid
                    ),
                });
            }
            tokio::time::sleep(self.interval).await;
        }
    }

    async fn cleanup(
        &self,
        machine: &MachineView,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError> {
        self.inner.cleanup(machine, progress).await
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
