//! The extra_vars sent to AAP: the EDA envelope playbooks already read.
//!
//! ```text
//! { "ansible_eda": { "event": {
//!       "payload": <resource JSON without metadata.managedFields>,
//!       "tenant_storage_classes": [...],        // each optional key only when set
//!       "admin_kubeconfig": "...",
//!       "storage_tier_definitions": [...],
//!       "storage_backend_connections": {...},
//!       <caller's extra fields>
//!   } },
//!   "provkit_idempotency_key": "<key>"          // when the launch context carries one
//! }
//! ```

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

/// Builds the extra_vars object for a launch.
///
/// ```
/// use provkit_aap::provider::build_extra_vars;
/// use provkit_lifecycle::{LaunchContext, ResolvedStorageClass};
/// use serde_json::json;
/// let resource = json!({"metadata": {"name": "n", "managedFields": [{"manager": "kubectl"}]}, "spec": {}});
/// let ctx = LaunchContext::new().with_tenant_storage_classes(vec![ResolvedStorageClass::new("ceph-fast", "fast")]);
/// let vars = build_extra_vars(&resource, &ctx).unwrap();
/// assert_eq!(vars["ansible_eda"]["event"]["payload"]["metadata"], json!({"name": "n"}));
/// assert_eq!(vars["ansible_eda"]["event"]["tenant_storage_classes"], json!([{"name": "ceph-fast", "tier": "fast"}]));
/// ```
///
/// # Errors
/// [`ExtraVarsError::QuotaOverflow`] for an absurd storage quota.
pub fn build_extra_vars(
    resource: &Value,
    ctx: &LaunchContext,
) -> Result<Map<String, Value>, ExtraVarsError> {
    let mut event = ctx.extra.clone();
    event.insert("payload".into(), payload(resource));
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
    let mut vars = Map::new();
    vars.insert(
        "ansible_eda".into(),
        json!({ "event": Value::Object(event) }),
    );
    if let Some(key) = &ctx.idempotency_key {
        vars.insert(
            IDEMPOTENCY_KEY_VAR.into(),
            Value::String(key.as_str().to_owned()),
        );
    }
    Ok(vars)
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

    #[test]
    fn minimal_envelope() {
        let vars = build_extra_vars(&resource(), &LaunchContext::new()).unwrap();
        assert_eq!(
            Value::Object(vars.clone()),
            json!({"ansible_eda": {"event": {"payload": {
            "apiVersion": "v1", "kind": "VirtualNetwork",
            "metadata": {"name": "test-resource", "namespace": "default"},
            "spec": {"cidr": "10.0.0.0/24"}, "status": {"provisioningJobs": []}}}}})
        );
        let event = &vars["ansible_eda"]["event"];
        for absent in [
            "tenant_storage_classes",
            "admin_kubeconfig",
            "storage_tier_definitions",
            "storage_backend_connections",
        ] {
            assert!(event.get(absent).is_none(), "{absent}");
        }
        assert!(vars.get(IDEMPOTENCY_KEY_VAR).is_none());
    }

    #[test]
    fn optional_event_fields() {
        let mut connections = BTreeMap::new();
        connections.insert(
            "backend-1".to_owned(),
            BackendConnection {
                endpoint: "https://san".into(),
                username: "u".into(),
                password: SecretText::new("p4ss"),
            },
        );
        let ctx = LaunchContext::new()
            .with_tenant_storage_classes(vec![
                ResolvedStorageClass::new("ceph-fast", "fast"),
                ResolvedStorageClass::new("ceph-default", "default"),
            ])
            .with_admin_kubeconfig("apiVersion: v1")
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
            .with_extra("cluster_domain", json!("example.com"))
            .with_extra("payload", json!("must not win"))
            .with_idempotency_key(IdempotencyKey::new("pk1-uid-p-0123456789abcdef"));
        let vars = build_extra_vars(&resource(), &ctx).unwrap();
        let event = &vars["ansible_eda"]["event"];
        assert_eq!(
            event["tenant_storage_classes"],
            json!([{"name": "ceph-fast", "tier": "fast"}, {"name": "ceph-default", "tier": "default"}])
        );
        assert_eq!(event["admin_kubeconfig"], "apiVersion: v1");
        assert_eq!(
            event["storage_tier_definitions"],
            json!([{"name": "gold", "protocol": "nvme-tcp", "provider": "p", "backend_id": "backend-1",
            "qos_limits": {"static_limits": {"max_reads_bw_mbps": 100, "max_writes_bw_mbps": 50}}, "quota_bytes": 500u64 << 30}])
        );
        assert!(
            event["storage_tier_definitions"][0]
                .get("qos_policy")
                .is_none()
        );
        assert_eq!(
            event["storage_backend_connections"],
            json!({"backend-1": {"endpoint": "https://san", "username": "u", "password": "p4ss"}})
        );
        assert_eq!(event["cluster_domain"], "example.com");
        assert_eq!(event["payload"]["metadata"]["name"], "test-resource");
        assert_eq!(vars[IDEMPOTENCY_KEY_VAR], "pk1-uid-p-0123456789abcdef");
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
