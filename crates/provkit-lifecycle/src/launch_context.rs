//! The per-call launch context: extra data for the provider and the attempt's idempotency key.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::idempotency::IdempotencyKey;
use crate::redact::Redactor;

/// A string that never appears in `Debug` output (kubeconfigs, passwords).
///
/// ```
/// use provkit_lifecycle::SecretText;
/// let s = SecretText::new("apiVersion: v1\nusers: [token: abc]");
/// assert_eq!(format!("{s:?}"), "SecretText([REDACTED])");
/// assert!(s.expose().contains("token"));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SecretText(String);

impl SecretText {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret value. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretText([REDACTED])")
    }
}

impl From<String> for SecretText {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for SecretText {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

/// A storage class resolved for a tenant (`{name, tier}`), as Go's `ResolvedStorageClass`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ResolvedStorageClass {
    /// Storage class name.
    pub name: String,
    /// Storage tier.
    pub tier: String,
}

impl ResolvedStorageClass {
    /// Builds a storage class entry.
    pub fn new(name: impl Into<String>, tier: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tier: tier.into(),
        }
    }
}

/// QoS limits of a storage tier (Go's `TierQosLimits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TierQosLimits {
    /// Maximum read bandwidth in MB/s.
    pub max_read_bandwidth_mbs: i32,
    /// Maximum write bandwidth in MB/s.
    pub max_write_bandwidth_mbs: i32,
}

/// A storage tier definition (Go's `TierDefinition`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TierDefinition {
    /// Tier name.
    pub name: String,
    /// Protocol, for example `"nvme-tcp"`.
    pub protocol: String,
    /// Storage provider.
    pub provider: String,
    /// Backend the tier lives on.
    pub backend_id: String,
    /// QoS limits.
    pub qos_limits: TierQosLimits,
    /// Quota in GiB (providers convert it, e.g. AAP sends `quota_bytes = quota_gib * 2^30`).
    pub quota_gib: i64,
}

/// Connection data for a storage backend (Go's `BackendConnection`); the password is redacted in `Debug`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BackendConnection {
    /// Endpoint URL.
    pub endpoint: String,
    /// User name.
    pub username: String,
    /// Password (redacted in `Debug`).
    pub password: SecretText,
}

/// Extra data handed to a provider with every trigger, plus the attempt's idempotency key.
///
/// Go passes these values through `context.Context`; here they are an explicit argument, so a provider
/// never needs a new trait method for new data. Every field is optional: an empty value means "not set"
/// (AAP omits the matching extra_vars key).
///
/// ```
/// use provkit_lifecycle::{LaunchContext, ResolvedStorageClass, SecretText};
/// use serde_json::json;
///
/// let ctx = LaunchContext::new()
///     .with_tenant_storage_classes(vec![ResolvedStorageClass::new("ceph-fast", "fast")])
///     .with_admin_kubeconfig(SecretText::new("apiVersion: v1"))
///     .with_extra("cluster_domain", json!("example.com"));
/// assert_eq!(ctx.tenant_storage_classes.len(), 1);
/// assert!(!format!("{ctx:?}").contains("apiVersion: v1"));
/// // The engine sets the key for each attempt; callers leave it empty.
/// assert!(ctx.idempotency_key.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct LaunchContext {
    /// The attempt's idempotency key. Set by the engine on every trigger; providers that support
    /// [`find_job_by_idempotency_key`](crate::ProvisioningProvider::find_job_by_idempotency_key) must
    /// attach it to the job they create.
    pub idempotency_key: Option<IdempotencyKey>,
    /// When the attempt's durable launch intent was written (set by the engine when it has an
    /// intent store). Every launch after a proven absence writes a fresh intent first, so a job
    /// of this attempt is created after this time; a provider may refuse to send the launch
    /// when it is too late (to keep the upper bound of its idempotency lookups sound).
    pub attempt_started: Option<chrono::DateTime<chrono::Utc>>,
    /// The marker the attempt's intent recorded (from the provider's
    /// [`launch_marker`](crate::ProvisioningProvider::launch_marker)): the provider must attach
    /// it to the job it creates, or refuse the launch as certainly not made. Set by the engine.
    pub attempt_marker: Option<String>,
    /// Storage classes resolved for the tenant (AAP: `tenant_storage_classes`).
    pub tenant_storage_classes: Vec<ResolvedStorageClass>,
    /// An admin kubeconfig (AAP: `admin_kubeconfig`); redacted in `Debug`.
    pub admin_kubeconfig: Option<SecretText>,
    /// Storage tier definitions (AAP: `storage_tier_definitions`).
    pub storage_tier_definitions: Vec<TierDefinition>,
    /// Storage backend connections keyed by backend id (AAP: `storage_backend_connections`).
    pub storage_backend_connections: BTreeMap<String, BackendConnection>,
    /// Arbitrary caller fields (AAP merges them into the envelope next to the resource).
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Caller fields marked secret (AAP merges them like [`extra`](Self::extra), as strings);
    /// redacted in `Debug` and, like the admin kubeconfig and back-end passwords, kept out of
    /// every text provkit writes ([`redactor`](Self::redactor)).
    pub secret_extra: BTreeMap<String, SecretText>,
}

impl LaunchContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the tenant storage classes.
    #[must_use]
    pub fn with_tenant_storage_classes(mut self, classes: Vec<ResolvedStorageClass>) -> Self {
        self.tenant_storage_classes = classes;
        self
    }

    /// Sets the admin kubeconfig.
    #[must_use]
    pub fn with_admin_kubeconfig(mut self, kubeconfig: impl Into<SecretText>) -> Self {
        self.admin_kubeconfig = Some(kubeconfig.into());
        self
    }

    /// Sets the storage tier definitions.
    #[must_use]
    pub fn with_storage_tier_definitions(mut self, tiers: Vec<TierDefinition>) -> Self {
        self.storage_tier_definitions = tiers;
        self
    }

    /// Sets the storage backend connections.
    #[must_use]
    pub fn with_storage_backend_connections(
        mut self,
        connections: BTreeMap<String, BackendConnection>,
    ) -> Self {
        self.storage_backend_connections = connections;
        self
    }

    /// Adds one arbitrary field.
    #[must_use]
    pub fn with_extra(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// Adds one caller field marked secret: sent like [`with_extra`](Self::with_extra) (as a
    /// string), never shown in provkit's logs, status, Events, errors or `Debug` output.
    ///
    /// ```
    /// use provkit_lifecycle::LaunchContext;
    /// let ctx = LaunchContext::new().with_secret_extra("vault_token", "s.9f8e7d6c");
    /// assert!(!format!("{ctx:?}").contains("s.9f8e7d6c"));
    /// assert_eq!(ctx.redactor().redact("token s.9f8e7d6c refused"), "token [REDACTED] refused");
    /// ```
    #[must_use]
    pub fn with_secret_extra(
        mut self,
        key: impl Into<String>,
        value: impl Into<SecretText>,
    ) -> Self {
        self.secret_extra.insert(key.into(), value.into());
        self
    }

    /// Every secret value of this context: the admin kubeconfig, the back-end passwords and the
    /// caller fields marked secret (empty values left out).
    pub fn secret_values(&self) -> Vec<&str> {
        self.admin_kubeconfig
            .iter()
            .chain(
                self.storage_backend_connections
                    .values()
                    .map(|c| &c.password),
            )
            .chain(self.secret_extra.values())
            .map(SecretText::expose)
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// A [`Redactor`] for [`secret_values`](Self::secret_values): what providers and the engine
    /// use to keep them out of error texts, status messages and logs.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.secret_values())
    }

    /// Sets the idempotency key (the engine does this; tests and direct provider callers may too).
    #[must_use]
    pub fn with_idempotency_key(mut self, key: IdempotencyKey) -> Self {
        self.idempotency_key = Some(key);
        self
    }

    /// Sets the time the attempt's durable launch intent was written (the engine does this).
    #[must_use]
    pub fn with_attempt_started(mut self, at: Option<chrono::DateTime<chrono::Utc>>) -> Self {
        self.attempt_started = at;
        self
    }

    /// Sets the marker the attempt's intent recorded (the engine does this).
    #[must_use]
    pub fn with_attempt_marker(mut self, marker: Option<String>) -> Self {
        self.attempt_marker = marker;
        self
    }
}
