//! [`ValidationCache`]: caches `validate` results per provider spec.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use provkit_core::Clock;
use sha2::{Digest, Sha256};

use super::error::ProviderError;
use super::instance::Instance;
use super::machine_view::MachineView;
use super::progress::{CreateIntent, DynProgressHandle};
use super::provider::{CleanupProgress, CloudProvider, DefaultedSpec};

/// Default time a validation result is reused: 5 minutes.
pub const DEFAULT_VALIDATION_TTL: Duration = Duration::from_secs(5 * 60);

/// SHA-256 (hex) of the canonical JSON of a provider spec: object keys sorted at every level,
/// no insignificant whitespace. Key order in the input does not matter.
///
/// ```
/// use provkit_machines::cloud::spec_digest;
/// let a = spec_digest(&serde_json::json!({"b": 1, "a": {"y": [1, 2], "x": null}}));
/// let b = spec_digest(&serde_json::from_str(r#"{"a":{"x":null,"y":[1,2]},"b":1}"#).unwrap());
/// assert_eq!(a, b);
/// assert_eq!(a.len(), 64);
/// assert_ne!(a, spec_digest(&serde_json::json!({"b": 2})));
/// ```
#[must_use]
pub fn spec_digest(spec: &serde_json::Value) -> String {
    let mut canonical = String::new();
    write_canonical(spec, &mut canonical);
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

fn write_canonical(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Object(map) => {
            let sorted: BTreeMap<&String, &serde_json::Value> = map.iter().collect();
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}", serde_json::Value::String(k.clone()));
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => {
            let _ = write!(out, "{scalar}");
        }
    }
}

#[derive(Debug)]
struct Entry {
    stored_at: DateTime<Utc>,
    result: Result<(), ProviderError>,
}

/// A [`CloudProvider`] decorator that caches [`validate`](CloudProvider::validate) results.
///
/// - Key: [`spec_digest`] of the provider spec only.
/// - Caches successes **and** failures for the TTL (default [`DEFAULT_VALIDATION_TTL`]);
///   never caches cancellation or timeouts.
/// - Time comes from the injected [`Clock`]; the cache belongs to this instance (not global).
/// - Every other method delegates unchanged.
///
/// ```
/// # #[cfg(feature = "mock")]
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use chrono::{TimeZone, Utc};
/// use provkit_core::ManualClock;
/// use provkit_machines::cloud::{CloudProvider, MockCloudProvider, ValidationCache};
///
/// let mut inner = MockCloudProvider::new();
/// inner.expect_validate().times(1).returning(|_| Ok(()));
/// let clock = ManualClock::new(Utc.timestamp_opt(0, 0).unwrap());
/// let cached = ValidationCache::new(inner, Arc::new(clock));
/// let spec = serde_json::json!({"size": "small"});
/// cached.validate(&spec).await.unwrap();
/// cached.validate(&spec).await.unwrap(); // served from the cache
/// # });
/// ```
#[derive(Debug)]
pub struct ValidationCache<P> {
    inner: P,
    ttl: Duration,
    clock: Arc<dyn Clock>,
    entries: Mutex<HashMap<String, Entry>>,
}

impl<P> ValidationCache<P> {
    /// Wraps `inner` with the default TTL.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use provkit_core::SystemClock;
    /// use provkit_machines::cloud::{ValidationCache, DEFAULT_VALIDATION_TTL};
    /// let c = ValidationCache::new((), Arc::new(SystemClock));
    /// assert_eq!(c.ttl(), DEFAULT_VALIDATION_TTL);
    /// ```
    #[must_use]
    pub fn new(inner: P, clock: Arc<dyn Clock>) -> Self {
        Self::with_ttl(inner, clock, DEFAULT_VALIDATION_TTL)
    }

    /// Wraps `inner` with a custom TTL.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use provkit_core::SystemClock;
    /// use provkit_machines::cloud::ValidationCache;
    /// let c = ValidationCache::with_ttl((), Arc::new(SystemClock), Duration::from_secs(1));
    /// assert_eq!(c.ttl(), Duration::from_secs(1));
    /// ```
    #[must_use]
    pub fn with_ttl(inner: P, clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        Self {
            inner,
            ttl,
            clock,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The configured TTL.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use provkit_core::SystemClock;
    /// use provkit_machines::cloud::ValidationCache;
    /// assert_eq!(ValidationCache::new((), Arc::new(SystemClock)).ttl().as_secs(), 300);
    /// ```
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The wrapped provider.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use provkit_core::SystemClock;
    /// use provkit_machines::cloud::ValidationCache;
    /// assert_eq!(*ValidationCache::new(7, Arc::new(SystemClock)).inner(), 7);
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }

    fn lookup(&self, key: &str) -> Option<Result<(), ProviderError>> {
        let now = self.clock.now();
        let ttl = TimeDelta::from_std(self.ttl).unwrap_or(TimeDelta::MAX);
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        // Drop expired entries so the cache does not grow without bound.
        entries.retain(|_, e| now.signed_duration_since(e.stored_at) < ttl);
        entries.get(key).map(|e| e.result.clone())
    }

    fn store(&self, key: String, result: &Result<(), ProviderError>) {
        if result
            .as_ref()
            .is_err_and(ProviderError::is_cancellation_or_timeout)
        {
            return;
        }
        let entry = Entry {
            stored_at: self.clock.now(),
            result: result.clone(),
        };
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, entry);
    }
}

#[async_trait::async_trait]
impl<P: CloudProvider> CloudProvider for ValidationCache<P> {
    fn add_defaults(&self, spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError> {
        self.inner.add_defaults(spec)
    }

    async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
        let key = spec_digest(spec);
        if let Some(hit) = self.lookup(&key) {
            return hit;
        }
        let result = self.inner.validate(spec).await;
        self.store(key, &result);
        result
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
            .await
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
