//! The extra_vars sent to AAP: the resource and the launch context's keys, inside the provider's
//! [`Envelope`] (the keys are listed on [`build_extra_vars`], which is public).

use serde_json::{Map, Value, json};

use provkit_lifecycle::LaunchContext;

use super::envelope::Envelope;

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

/// Builds the extra_vars of the OSAC preset ([`Envelope::OsacJobVars`], Go's newest
/// `extractExtraVars`): `{"osac_job_vars": {"resource": …, <context keys>}}`. Other envelopes:
/// [`Envelope::build`].
///
/// What goes in, whatever the envelope (each optional key only when set, as Go's
/// `extractExtraVars`):
///
/// | key | value |
/// |---|---|
/// | `resource` (`payload` in [`Envelope::AnsibleEda`]) | the object's JSON without `metadata.managedFields` |
/// | `tenant_storage_classes` | `[{"name", "tier"}]`, in the context's order |
/// | `admin_kubeconfig` | the kubeconfig text |
/// | `storage_tier_definitions` | `[{"name", "protocol", "provider", "backend_id", "qos_limits": {"static_limits": {"max_reads_bw_mbps", "max_writes_bw_mbps"}}, "quota_bytes"}]`, `quota_bytes` = GiB × 2^30 |
/// | `storage_backend_connections` | `{<backend id>: {"endpoint", "username", "password"}}` |
/// | caller fields | [`LaunchContext::extra`] and [`LaunchContext::secret_extra`] (never overriding the keys above) |
///
/// and, at the top level next to the envelope in every shape,
/// [`IDEMPOTENCY_KEY_VAR`](super::IDEMPOTENCY_KEY_VAR) when the launch context carries a key.
///
/// ```
/// use provkit_aap::provider::build_extra_vars;
/// use provkit_lifecycle::{LaunchContext, ResolvedStorageClass};
/// use serde_json::json;
/// let resource = json!({"metadata": {"name": "n", "managedFields": [{"manager": "kubectl"}]}, "spec": {}});
/// let ctx = LaunchContext::new().with_tenant_storage_classes(vec![ResolvedStorageClass::new("ceph-fast", "fast")]);
/// let vars = build_extra_vars(&resource, &ctx).unwrap();
/// assert_eq!(serde_json::Value::Object(vars), json!({"osac_job_vars": {
///     "resource": {"metadata": {"name": "n"}, "spec": {}},
///     "tenant_storage_classes": [{"name": "ceph-fast", "tier": "fast"}]}}));
/// ```
///
/// # Errors
/// [`ExtraVarsError::QuotaOverflow`] for an absurd storage quota.
pub fn build_extra_vars(
    resource: &Value,
    ctx: &LaunchContext,
) -> Result<Map<String, Value>, ExtraVarsError> {
    Envelope::OsacJobVars.build(resource, ctx)
}

/// The variables of one launch, before an envelope wraps them: the caller's fields, then the
/// resource under `resource_key`, then the context's optional keys (the last two win).
pub(super) fn job_vars(
    resource: &Value,
    ctx: &LaunchContext,
    resource_key: &str,
) -> Result<Map<String, Value>, ExtraVarsError> {
    let mut vars = ctx.extra.clone();
    for (key, value) in &ctx.secret_extra {
        vars.insert(key.clone(), Value::String(value.expose().to_owned()));
    }
    vars.insert(resource_key.into(), payload(resource));
    if !ctx.tenant_storage_classes.is_empty() {
        let classes: Vec<Value> = ctx
            .tenant_storage_classes
            .iter()
            .map(|c| json!({"name": c.name, "tier": c.tier}))
            .collect();
        vars.insert("tenant_storage_classes".into(), Value::Array(classes));
    }
    if let Some(kubeconfig) = ctx.admin_kubeconfig.as_ref().filter(|k| !k.is_empty()) {
        vars.insert(
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
        vars.insert("storage_tier_definitions".into(), Value::Array(tiers));
    }
    if !ctx.storage_backend_connections.is_empty() {
        let connections: Map<String, Value> = ctx
            .storage_backend_connections
            .iter()
            .map(|(id, c)| {
                (id.clone(), json!({"endpoint": c.endpoint, "username": c.username, "password": c.password.expose()}))
            })
            .collect();
        vars.insert(
            "storage_backend_connections".into(),
            Value::Object(connections),
        );
    }
    Ok(vars)
}
