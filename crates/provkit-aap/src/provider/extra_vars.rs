//! The extra_vars sent to AAP, in one of three envelopes ([`Envelope`]):
//!
//! ```text
//! OsacJobVars (default; OSAC since osac-project/osac 232f1752e, 2026-08-02, OSAC-3547):
//! { "osac_job_vars": {
//!       "resource": <resource JSON without metadata.managedFields>,
//!       "tenant_storage_classes": [...],        // each optional key only when set
//!       "admin_kubeconfig": "...",
//!       "storage_tier_definitions": [...],
//!       "storage_backend_connections": {...},
//!       <caller's extra fields> },
//!   "provkit_idempotency_key": "<key>" }        // when the launch context carries one
//!
//! AnsibleEda (legacy: OSAC playbooks before that commit):
//! { "ansible_eda": { "event": { "payload": <resource>, <the same optional keys and extras> } },
//!   "provkit_idempotency_key": "<key>" }
//!
//! TopLevel (neutral, for playbooks of your own):
//! { "resource": <resource>, <the same optional keys and extras>,
//!   "provkit_idempotency_key": "<key>" }
//! ```
//!
//! The idempotency key sits at the top level in every envelope, so a lookup finds the jobs of
//! every envelope alike; the resource key (`resource` / `payload`) always wins over a caller's
//! extra field of the same name.

use serde_json::{Map, Value, json};

use provkit_lifecycle::LaunchContext;

use crate::marker::IDEMPOTENCY_KEY_VAR;

/// Why extra_vars could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtraVarsError {
    /// A storage tier's quota overflows when converted to bytes.
    #[error("storage tier {tier:?}: quota of {quota_gib} GiB overflows when converted to bytes")]
    QuotaOverflow {
        /// Tier name.
        tier: String,
        /// The quota.
        quota_gib: i64,
    },
}

/// The resource JSON without `metadata.managedFields`.
pub fn payload(resource: &Value) -> Value {
    let mut payload = resource.clone();
    if let Some(meta) = payload.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    payload
}

/// Where the resource and the launch context's values go in the extra_vars:
///
/// ```text
/// OsacJobVars: { "osac_job_vars": { "resource": <resource>, <optional keys>, <extras> },
///                "provkit_idempotency_key": "<key>" }
/// AnsibleEda:  { "ansible_eda": { "event": { "payload": <resource>, <optional keys>, <extras> } },
///                "provkit_idempotency_key": "<key>" }
/// TopLevel:    { "resource": <resource>, <optional keys>, <extras>,
///                "provkit_idempotency_key": "<key>" }
/// ```
///
/// The optional keys (`tenant_storage_classes`, `admin_kubeconfig`, `storage_tier_definitions`,
/// `storage_backend_connections`) appear only when the launch context sets them; the resource
/// key wins over a caller's extra of the same name; the idempotency key is at the top level in
/// every envelope, so one lookup finds the jobs of every envelope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Envelope {
    /// `{"osac_job_vars": {"resource": …, …}}`: what OSAC's operator and playbooks use since
    /// osac-project/osac commit 232f1752e (2026-08-02, OSAC-3547). The default.
    #[default]
    OsacJobVars,
    /// `{"ansible_eda": {"event": {"payload": …, …}}}`: the EDA-shaped envelope of OSAC before
    /// that commit, for playbooks not yet migrated.
    AnsibleEda,
    /// `{"resource": …, …}` at the top level: a neutral layout for playbooks that are not
    /// OSAC's.
    TopLevel,
}

impl Envelope {
    /// Builds the extra_vars object for a launch of `resource` with `ctx` in this envelope.
    ///
    /// ```
    /// use provkit_aap::provider::Envelope;
    /// use provkit_lifecycle::{LaunchContext, ResolvedStorageClass};
    /// use serde_json::json;
    /// let resource = json!({"metadata": {"name": "n", "managedFields": [{"manager": "kubectl"}]}, "spec": {}});
    /// let ctx = LaunchContext::new().with_tenant_storage_classes(vec![ResolvedStorageClass::new("ceph-fast", "fast")]);
    /// let vars = Envelope::OsacJobVars.build(&resource, &ctx).unwrap();
    /// assert_eq!(vars["osac_job_vars"]["resource"]["metadata"], json!({"name": "n"}));
    /// assert_eq!(vars["osac_job_vars"]["tenant_storage_classes"], json!([{"name": "ceph-fast", "tier": "fast"}]));
    /// let legacy = Envelope::AnsibleEda.build(&resource, &ctx).unwrap();
    /// assert_eq!(legacy["ansible_eda"]["event"]["payload"]["metadata"], json!({"name": "n"}));
    /// ```
    ///
    /// # Errors
    /// [`ExtraVarsError::QuotaOverflow`] for an absurd storage quota.
    pub fn build(
        self,
        resource: &Value,
        ctx: &LaunchContext,
    ) -> Result<Map<String, Value>, ExtraVarsError> {
        let mut fields = context_fields(ctx)?;
        let mut vars = match self {
            Self::OsacJobVars => {
                fields.insert("resource".into(), payload(resource));
                let mut vars = Map::new();
                vars.insert("osac_job_vars".into(), Value::Object(fields));
                vars
            }
            Self::AnsibleEda => {
                fields.insert("payload".into(), payload(resource));
                let mut vars = Map::new();
                vars.insert(
                    "ansible_eda".into(),
                    json!({ "event": Value::Object(fields) }),
                );
                vars
            }
            Self::TopLevel => {
                fields.insert("resource".into(), payload(resource));
                fields
            }
        };
        if let Some(key) = &ctx.idempotency_key {
            vars.insert(
                IDEMPOTENCY_KEY_VAR.into(),
                Value::String(key.as_str().to_owned()),
            );
        }
        Ok(vars)
    }
}

/// Builds the extra_vars object for a launch in the default envelope
/// ([`Envelope::OsacJobVars`]); [`Envelope::build`] for another.
///
/// ```
/// use provkit_aap::provider::build_extra_vars;
/// use provkit_lifecycle::LaunchContext;
/// use serde_json::json;
/// let resource = json!({"metadata": {"name": "n"}, "spec": {"cidr": "10.0.0.0/24"}});
/// let vars = build_extra_vars(&resource, &LaunchContext::new()).unwrap();
/// assert_eq!(vars["osac_job_vars"]["resource"]["spec"]["cidr"], "10.0.0.0/24");
/// ```
///
/// # Errors
/// [`ExtraVarsError::QuotaOverflow`] for an absurd storage quota.
pub fn build_extra_vars(
    resource: &Value,
    ctx: &LaunchContext,
) -> Result<Map<String, Value>, ExtraVarsError> {
    Envelope::default().build(resource, ctx)
}

/// The launch context's values, each optional key only when set, and the caller's extras.
fn context_fields(ctx: &LaunchContext) -> Result<Map<String, Value>, ExtraVarsError> {
    let mut event = ctx.extra.clone();
    if !ctx.tenant_storage_classes.is_empty() {
        let classes: Vec<Value> = ctx
            .tenant_storage_classes
            .iter()
            .map(|c| json!({"name": c.name, "tier": c.tier}))
            .collect();
        event.insert("tenant_storage_classes".into(), Value::Array(classes));
    }
    if let Some(kubeconfig) = ctx.admin_kubeconfig.as_ref().filter(|k| !k.is_empty()) {
        event.insert(
            "admin_kubeconfig".into(),
            Value::String(kubeconfig.expose().to_owned()),
        );
    }
    if !ctx.storage_tier_definitions.is_empty() {
        let mut tiers = Vec::with_capacity(ctx.storage_tier_definitions.len());
        for tier in &ctx.storage_tier_definitions {
            let quota_bytes = tier.quota_gib.checked_mul(1 << 30).ok_or_else(|| {
                ExtraVarsError::QuotaOverflow {
                    tier: tier.name.clone(),
                    quota_gib: tier.quota_gib,
                }
            })?;
            tiers.push(json!({
                "name": tier.name,
                "protocol": tier.protocol,
                "provider": tier.provider,
                "backend_id": tier.backend_id,
                "qos_limits": {"static_limits": {
                    "max_reads_bw_mbps": tier.qos_limits.max_read_bandwidth_mbs,
                    "max_writes_bw_mbps": tier.qos_limits.max_write_bandwidth_mbs,
                }},
                "quota_bytes": quota_bytes,
            }));
        }
        event.insert("storage_tier_definitions".into(), Value::Array(tiers));
    }
    if !ctx.storage_backend_connections.is_empty() {
        let connections: Map<String, Value> = ctx
            .storage_backend_connections
            .iter()
            .map(|(id, c)| {
                (id.clone(), json!({"endpoint": c.endpoint, "username": c.username, "password": c.password.expose()}))
            })
            .collect();
        event.insert(
            "storage_backend_connections".into(),
            Value::Object(connections),
        );
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use provkit_lifecycle::{
        BackendConnection, IdempotencyKey, ResolvedStorageClass, SecretText, TierDefinition,
        TierQosLimits,
    };

    fn resource() -> Value {
        json!({"apiVersion": "v1", "kind": "VirtualNetwork",
               "metadata": {"name": "test-resource", "namespace": "default", "managedFields": [{"x": 1}]},
               "spec": {"cidr": "10.0.0.0/24"}, "status": {"provisioningJobs": []}})
    }

    /// The context of every optional key, as OSAC's storage and compute controllers set them.
    fn full_context() -> LaunchContext {
        let mut connections = BTreeMap::new();
        for (id, endpoint, user, pass) in [
            ("backend-2", "https://nas", "v", "s3cret"),
            ("backend-1", "https://san", "u", "p4ss"),
        ] {
            connections.insert(
                id.to_owned(),
                BackendConnection {
                    endpoint: endpoint.into(),
                    username: user.into(),
                    password: SecretText::new(pass),
                },
            );
        }
        LaunchContext::new()
            .with_tenant_storage_classes(vec![
                ResolvedStorageClass::new("ceph-fast", "fast"),
                ResolvedStorageClass::new("ceph-default", "default"),
            ])
            .with_admin_kubeconfig("apiVersion: v1\nkind: Config")
            .with_storage_tier_definitions(vec![TierDefinition {
                name: "gold".into(),
                protocol: "nvme-tcp".into(),
                provider: "p".into(),
                backend_id: "backend-1".into(),
                qos_limits: TierQosLimits {
                    max_read_bandwidth_mbs: 100,
                    max_write_bandwidth_mbs: 50,
                },
                quota_gib: 500,
            }])
            .with_storage_backend_connections(connections)
    }

    /// The resource as provkit sends it (managedFields removed).
    fn sent_resource() -> Value {
        json!({"apiVersion": "v1", "kind": "VirtualNetwork",
               "metadata": {"name": "test-resource", "namespace": "default"},
               "spec": {"cidr": "10.0.0.0/24"}, "status": {"provisioningJobs": []}})
    }

    /// The optional keys of [`full_context`], as the newest Go `extractExtraVars` writes them:
    /// classes in order, the quota in bytes (GiB × 2³⁰), the connections keyed by backend id.
    fn full_fields() -> Value {
        json!({
            "tenant_storage_classes": [{"name": "ceph-fast", "tier": "fast"}, {"name": "ceph-default", "tier": "default"}],
            "admin_kubeconfig": "apiVersion: v1\nkind: Config",
            "storage_tier_definitions": [{"name": "gold", "protocol": "nvme-tcp", "provider": "p", "backend_id": "backend-1",
                "qos_limits": {"static_limits": {"max_reads_bw_mbps": 100, "max_writes_bw_mbps": 50}},
                "quota_bytes": 500_u64 << 30}],
            "storage_backend_connections": {
                "backend-1": {"endpoint": "https://san", "username": "u", "password": "p4ss"},
                "backend-2": {"endpoint": "https://nas", "username": "v", "password": "s3cret"}},
        })
    }

    fn with(mut fields: Value, key: &str, value: Value) -> Value {
        fields[key] = value;
        fields
    }

    /// Every envelope, with no optional value and with all of them: exact JSON values.
    #[test]
    fn envelope_vectors() {
        let empty = LaunchContext::new();
        let full = full_context();
        let cases: Vec<(Envelope, &LaunchContext, Value)> = vec![
            (
                Envelope::OsacJobVars,
                &empty,
                json!({"osac_job_vars": {"resource": sent_resource()}}),
            ),
            (
                Envelope::OsacJobVars,
                &full,
                json!({"osac_job_vars": with(full_fields(), "resource", sent_resource())}),
            ),
            (
                Envelope::AnsibleEda,
                &empty,
                json!({"ansible_eda": {"event": {"payload": sent_resource()}}}),
            ),
            (
                Envelope::AnsibleEda,
                &full,
                json!({"ansible_eda": {"event": with(full_fields(), "payload", sent_resource())}}),
            ),
            (
                Envelope::TopLevel,
                &empty,
                json!({"resource": sent_resource()}),
            ),
            (
                Envelope::TopLevel,
                &full,
                with(full_fields(), "resource", sent_resource()),
            ),
        ];
        for (envelope, ctx, want) in cases {
            let got = envelope.build(&resource(), ctx).unwrap();
            assert_eq!(Value::Object(got), want, "{envelope:?}");
        }
        assert_eq!(
            build_extra_vars(&resource(), &full).unwrap(),
            Envelope::OsacJobVars.build(&resource(), &full).unwrap(),
            "the default envelope is OSAC's current one"
        );
    }

    /// Empty optional values are left out (Go omits an empty list, an empty kubeconfig and an
    /// empty map).
    #[test]
    fn empty_values_are_omitted() {
        let ctx = LaunchContext::new()
            .with_tenant_storage_classes(Vec::new())
            .with_admin_kubeconfig("")
            .with_storage_tier_definitions(Vec::new())
            .with_storage_backend_connections(BTreeMap::new());
        let vars = build_extra_vars(&resource(), &ctx).unwrap();
        assert_eq!(
            Value::Object(vars),
            json!({"osac_job_vars": {"resource": sent_resource()}})
        );
    }

    /// The idempotency key sits at the top level in every envelope; the resource key wins over
    /// a caller's extra of the same name; other extras sit beside the optional keys.
    #[test]
    fn idempotency_key_and_extras() {
        let ctx = LaunchContext::new()
            .with_extra("cluster_domain", json!("example.com"))
            .with_extra("payload", json!("must not win"))
            .with_extra("resource", json!("must not win"))
            .with_idempotency_key(IdempotencyKey::new("pk1-uid-p-0123456789abcdef"));
        for (envelope, inner) in [
            (Envelope::OsacJobVars, &["osac_job_vars"][..]),
            (Envelope::AnsibleEda, &["ansible_eda", "event"][..]),
            (Envelope::TopLevel, &[][..]),
        ] {
            let vars = Value::Object(envelope.build(&resource(), &ctx).unwrap());
            assert_eq!(vars[IDEMPOTENCY_KEY_VAR], "pk1-uid-p-0123456789abcdef");
            let fields = inner.iter().fold(&vars, |v, k| &v[*k]);
            assert_eq!(fields["cluster_domain"], "example.com", "{envelope:?}");
            let resource_key = if envelope == Envelope::AnsibleEda {
                "payload"
            } else {
                "resource"
            };
            assert_eq!(fields[resource_key], sent_resource(), "{envelope:?}");
        }
    }

    #[test]
    fn quota_overflow_is_an_error() {
        let ctx = LaunchContext::new().with_storage_tier_definitions(vec![TierDefinition {
            quota_gib: i64::MAX,
            ..TierDefinition::default()
        }]);
        assert!(matches!(
            build_extra_vars(&resource(), &ctx),
            Err(ExtraVarsError::QuotaOverflow { .. })
        ));
    }
}
