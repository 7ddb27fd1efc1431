//! Table tests of the extra_vars envelopes against the newest Go `extractExtraVars`
//! (osac-provisioning.md §4.3 "Newer upstream", §7.2 "HEAD only", §7.4): for each object and
//! launch context, the extra_vars the OSAC preset builds equal, as JSON values, what Go builds —
//! keys, nesting, omitted empties, the quota in bytes, the back-end connections keyed by id. The
//! expected values are written out by hand from the spec, not computed by provkit.

use std::collections::BTreeMap;

use provkit_aap::provider::{Envelope, IDEMPOTENCY_KEY_VAR, build_extra_vars};
use provkit_lifecycle::{
    BackendConnection, IdempotencyKey, LaunchContext, ResolvedStorageClass, SecretText,
    TierDefinition, TierQosLimits,
};
use serde_json::{Value, json};

/// A Subnet as the Go operator serialises it (TypeMeta set, annotations, in-memory status).
fn subnet() -> Value {
    json!({
        "apiVersion": "osac.openshift.io/v1alpha1",
        "kind": "Subnet",
        "metadata": {
            "name": "subnet-a", "namespace": "tenant-a", "uid": "6f1c0c2e-0000-4000-8000-00000000000a",
            "labels": {"osac.openshift.io/tenant": "t1"},
            "annotations": {"osac.openshift.io/implementation-strategy": "cudn_net"},
            "finalizers": ["osac.openshift.io/subnet-finalizer"]
        },
        "spec": {"virtualNetwork": "vn-1", "ipv4CIDR": "10.0.1.0/24"},
        "status": {
            "phase": "Progressing",
            "desiredConfigVersion": "90f31220e6080755",
            "provisioningJobs": [{"jobID": "12", "type": "provision", "timestamp": "2026-08-03T10:00:00Z",
                                  "state": "Running", "configVersion": "90f31220e6080755"}]
        }
    })
}

fn gold_tier() -> TierDefinition {
    TierDefinition {
        name: "gold".into(),
        protocol: "nvme-tcp".into(),
        provider: "lightbits".into(),
        backend_id: "backend-1".into(),
        qos_limits: TierQosLimits {
            max_read_bandwidth_mbs: 100,
            max_write_bandwidth_mbs: 50,
        },
        quota_gib: 500,
    }
}

fn connections() -> BTreeMap<String, BackendConnection> {
    BTreeMap::from([
        (
            "backend-2".to_owned(),
            BackendConnection {
                endpoint: "https://san-2.example.com".into(),
                username: "admin2".into(),
                password: SecretText::new("pw-two"),
            },
        ),
        (
            "backend-1".to_owned(),
            BackendConnection {
                endpoint: "https://san-1.example.com:8443".into(),
                username: "admin".into(),
                password: SecretText::new("pw-one"),
            },
        ),
    ])
}

struct Vector {
    name: &'static str,
    object: Value,
    ctx: LaunchContext,
    /// What Go's newest `extractExtraVars` returns.
    go: Value,
}

fn vectors() -> Vec<Vector> {
    let resource = subnet();
    vec![
        Vector {
            name: "resource only: every optional key absent",
            object: subnet(),
            ctx: LaunchContext::new(),
            go: json!({"osac_job_vars": {"resource": resource.clone()}}),
        },
        Vector {
            name: "tenant storage classes in context order",
            object: subnet(),
            ctx: LaunchContext::new().with_tenant_storage_classes(vec![
                ResolvedStorageClass::new("ceph-fast", "fast"),
                ResolvedStorageClass::new("ceph-default", "default"),
            ]),
            go: json!({"osac_job_vars": {"resource": resource.clone(), "tenant_storage_classes": [
                {"name": "ceph-fast", "tier": "fast"}, {"name": "ceph-default", "tier": "default"}]}}),
        },
        Vector {
            name: "empty storage class list is omitted",
            object: subnet(),
            ctx: LaunchContext::new().with_tenant_storage_classes(Vec::new()),
            go: json!({"osac_job_vars": {"resource": resource.clone()}}),
        },
        Vector {
            name: "admin kubeconfig when set",
            object: subnet(),
            ctx: LaunchContext::new().with_admin_kubeconfig(
                "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user: {token: abc}\n",
            ),
            go: json!({"osac_job_vars": {"resource": resource.clone(),
                "admin_kubeconfig": "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user: {token: abc}\n"}}),
        },
        Vector {
            name: "empty admin kubeconfig is omitted",
            object: subnet(),
            ctx: LaunchContext::new().with_admin_kubeconfig(""),
            go: json!({"osac_job_vars": {"resource": resource.clone()}}),
        },
        Vector {
            name: "tier definitions: int32 bandwidths, quota in bytes, no qos_policy",
            object: subnet(),
            ctx: LaunchContext::new().with_storage_tier_definitions(vec![
                gold_tier(),
                TierDefinition {
                    name: "bronze".into(),
                    quota_gib: 1,
                    ..TierDefinition::default()
                },
            ]),
            go: json!({"osac_job_vars": {"resource": resource.clone(), "storage_tier_definitions": [
                {"name": "gold", "protocol": "nvme-tcp", "provider": "lightbits", "backend_id": "backend-1",
                 "qos_limits": {"static_limits": {"max_reads_bw_mbps": 100, "max_writes_bw_mbps": 50}},
                 "quota_bytes": 536_870_912_000_i64},
                {"name": "bronze", "protocol": "", "provider": "", "backend_id": "",
                 "qos_limits": {"static_limits": {"max_reads_bw_mbps": 0, "max_writes_bw_mbps": 0}},
                 "quota_bytes": 1_073_741_824_i64}]}}),
        },
        Vector {
            name: "empty tier list is omitted",
            object: subnet(),
            ctx: LaunchContext::new().with_storage_tier_definitions(Vec::new()),
            go: json!({"osac_job_vars": {"resource": resource.clone()}}),
        },
        Vector {
            name: "backend connections keyed by backend id, password included",
            object: subnet(),
            ctx: LaunchContext::new().with_storage_backend_connections(connections()),
            go: json!({"osac_job_vars": {"resource": resource.clone(), "storage_backend_connections": {
                "backend-1": {"endpoint": "https://san-1.example.com:8443", "username": "admin", "password": "pw-one"},
                "backend-2": {"endpoint": "https://san-2.example.com", "username": "admin2", "password": "pw-two"}}}}),
        },
        Vector {
            name: "empty backend map is omitted",
            object: subnet(),
            ctx: LaunchContext::new().with_storage_backend_connections(BTreeMap::new()),
            go: json!({"osac_job_vars": {"resource": resource.clone()}}),
        },
        Vector {
            name: "everything at once: one flat level, no event",
            object: subnet(),
            ctx: LaunchContext::new()
                .with_tenant_storage_classes(vec![ResolvedStorageClass::new("ceph-fast", "fast")])
                .with_admin_kubeconfig("kc")
                .with_storage_tier_definitions(vec![gold_tier()])
                .with_storage_backend_connections(connections()),
            go: json!({"osac_job_vars": {
                "resource": resource.clone(),
                "tenant_storage_classes": [{"name": "ceph-fast", "tier": "fast"}],
                "admin_kubeconfig": "kc",
                "storage_tier_definitions": [{"name": "gold", "protocol": "nvme-tcp", "provider": "lightbits",
                    "backend_id": "backend-1",
                    "qos_limits": {"static_limits": {"max_reads_bw_mbps": 100, "max_writes_bw_mbps": 50}},
                    "quota_bytes": 536_870_912_000_i64}],
                "storage_backend_connections": {
                    "backend-1": {"endpoint": "https://san-1.example.com:8443", "username": "admin", "password": "pw-one"},
                    "backend-2": {"endpoint": "https://san-2.example.com", "username": "admin2", "password": "pw-two"}}}}),
        },
        Vector {
            name: "negative and extreme bandwidths pass through as int32",
            object: json!({"kind": "Tenant", "metadata": {"name": "t"}}),
            ctx: LaunchContext::new().with_storage_tier_definitions(vec![TierDefinition {
                name: "x".into(),
                qos_limits: TierQosLimits {
                    max_read_bandwidth_mbs: i32::MAX,
                    max_write_bandwidth_mbs: -1,
                },
                quota_gib: 0,
                ..TierDefinition::default()
            }]),
            go: json!({"osac_job_vars": {"resource": {"kind": "Tenant", "metadata": {"name": "t"}},
                "storage_tier_definitions": [{"name": "x", "protocol": "", "provider": "", "backend_id": "",
                    "qos_limits": {"static_limits": {"max_reads_bw_mbps": 2_147_483_647, "max_writes_bw_mbps": -1}},
                    "quota_bytes": 0}]}}),
        },
        Vector {
            name: "an object without TypeMeta or status is sent as it serialises",
            object: json!({"metadata": {"name": "bare"}, "spec": {}}),
            ctx: LaunchContext::new(),
            go: json!({"osac_job_vars": {"resource": {"metadata": {"name": "bare"}, "spec": {}}}}),
        },
    ]
}

#[test]
fn osac_preset_matches_go_extract_extra_vars() {
    for v in vectors() {
        let built = Envelope::OsacJobVars.build(&v.object, &v.ctx).unwrap();
        assert_eq!(Value::Object(built.clone()), v.go, "{}", v.name);
        // build_extra_vars is Go's extractExtraVars: the same envelope.
        assert_eq!(
            build_extra_vars(&v.object, &v.ctx).unwrap(),
            built,
            "{}",
            v.name
        );
    }
}

#[test]
fn legacy_ansible_eda_envelope_is_the_v0_0_4_shape() {
    // Go before 232f1752e: the same keys one level deeper, under event, the resource as payload.
    for v in vectors() {
        let built = Value::Object(Envelope::AnsibleEda.build(&v.object, &v.ctx).unwrap());
        let mut event = v.go["osac_job_vars"].clone();
        let resource = event.as_object_mut().unwrap().remove("resource").unwrap();
        event["payload"] = resource;
        assert_eq!(
            built,
            json!({"ansible_eda": {"event": event}}),
            "{}",
            v.name
        );
    }
}

#[test]
fn neutral_envelope_is_the_flat_shape_under_provkit_job_vars() {
    for v in vectors() {
        let built = Value::Object(Envelope::Neutral.build(&v.object, &v.ctx).unwrap());
        assert_eq!(
            built,
            json!({"provkit_job_vars": v.go["osac_job_vars"].clone()}),
            "{}",
            v.name
        );
    }
}

#[test]
fn managed_fields_are_left_out_of_the_resource() {
    let mut object = subnet();
    object["metadata"]["managedFields"] =
        json!([{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]);
    for envelope in Envelope::ALL {
        let built = Value::Object(envelope.build(&object, &LaunchContext::new()).unwrap());
        assert_eq!(
            built.to_string().matches("managedFields").count(),
            0,
            "{envelope}"
        );
    }
}

#[test]
fn the_idempotency_key_sits_at_the_top_level_in_every_envelope() {
    let ctx = LaunchContext::new()
        .with_admin_kubeconfig("kc")
        .with_idempotency_key(IdempotencyKey::new("pk1-uid-p-0123456789abcdef"));
    for envelope in Envelope::ALL {
        let built = envelope.build(&subnet(), &ctx).unwrap();
        // Sorted: with serde_json's `preserve_order` (on in a workspace build) keys keep their
        // insertion order.
        let mut keys: Vec<&str> = built.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = vec![envelope.variable(), IDEMPOTENCY_KEY_VAR];
        want.sort_unstable();
        assert_eq!(keys, want, "{envelope}");
        assert_eq!(
            built[IDEMPOTENCY_KEY_VAR], "pk1-uid-p-0123456789abcdef",
            "{envelope}"
        );
        assert!(
            !Value::Object(built.clone())[envelope.variable()]
                .to_string()
                .contains("pk1-uid"),
            "{envelope}: the key is not inside the envelope"
        );
    }
}

#[test]
fn caller_fields_join_the_envelope_and_never_override_its_keys() {
    let ctx = LaunchContext::new()
        .with_extra("cluster_domain", json!("example.com"))
        .with_extra("resource", json!("must not win"))
        .with_extra("payload", json!("must not win either"))
        .with_secret_extra("vault_token", "s.9f8e7d6c")
        .with_admin_kubeconfig("kc");
    let osac = Value::Object(Envelope::OsacJobVars.build(&subnet(), &ctx).unwrap());
    assert_eq!(osac["osac_job_vars"]["cluster_domain"], "example.com");
    assert_eq!(osac["osac_job_vars"]["vault_token"], "s.9f8e7d6c");
    assert_eq!(osac["osac_job_vars"]["resource"], subnet());
    assert_eq!(osac["osac_job_vars"]["admin_kubeconfig"], "kc");
    let eda = Value::Object(Envelope::AnsibleEda.build(&subnet(), &ctx).unwrap());
    assert_eq!(eda["ansible_eda"]["event"]["payload"], subnet());
    assert_eq!(eda["ansible_eda"]["event"]["vault_token"], "s.9f8e7d6c");
}

#[test]
fn quota_overflow_is_an_error_not_a_wrapped_number() {
    // Go multiplies int64 and wraps; provkit refuses to send a wrong quota.
    let ctx = LaunchContext::new().with_storage_tier_definitions(vec![TierDefinition {
        name: "huge".into(),
        quota_gib: i64::MAX / 1024,
        ..TierDefinition::default()
    }]);
    for envelope in Envelope::ALL {
        let err = envelope.build(&subnet(), &ctx).unwrap_err();
        assert!(err.to_string().contains("\"huge\""), "{err}");
    }
}

#[test]
fn envelope_names_round_trip() {
    for envelope in Envelope::ALL {
        assert_eq!(envelope.name().parse::<Envelope>().unwrap(), envelope);
        assert_eq!(envelope.to_string(), envelope.name());
    }
    assert!("eda".parse::<Envelope>().is_err());
    assert_eq!(Envelope::default(), Envelope::Neutral);
}

/// The same vectors on the wire: what `AapProvider::osac` sends in the launch body (a JSON object
/// under `extra_vars`, never a string) and what the fake AAP's job record keeps (AWX's
/// `extra_vars` text, secrets included) both equal Go's `extractExtraVars`, with nothing of
/// provkit's added when the launch context carries no idempotency key.
#[tokio::test]
async fn the_osac_preset_sends_go_extract_extra_vars_on_the_wire() {
    use provkit_aap::AapProvider;
    use provkit_lifecycle::{ProvisioningProvider, ResourceMeta, ResourceView};
    use provkit_testing::fake_aap::{JobTemplateSpec, Mode};

    use crate::support::{client, requests_to, server_with};

    let server = server_with(Mode::Awx, |b| {
        b.job_template(JobTemplateSpec::new("osac-create-subnet", "osac"))
    })
    .await;
    let provider = AapProvider::osac(client(&server));
    for v in vectors() {
        let view = ResourceView::new(
            ResourceMeta {
                kind: "Subnet".into(),
                name: "subnet-a".into(),
                namespace: Some("tenant-a".into()),
                uid: "6f1c0c2e-0000-4000-8000-00000000000a".into(),
                ..Default::default()
            },
            v.object.clone(),
        );
        let launched = provider.trigger_provision(&view, &v.ctx).await.unwrap();
        let launch = requests_to(&server, "/launch/")
            .into_iter()
            .rev()
            .find(|r| r.method == "POST")
            .expect("a launch request");
        let body: Value = serde_json::from_str(&launch.body).unwrap();
        assert!(body["extra_vars"].is_object(), "{}: {body}", v.name);
        assert_eq!(body["extra_vars"], v.go, "{}: launch body", v.name);
        let record = server
            .aap()
            .job(launched.job_id.parse().unwrap())
            .expect("the job record");
        let stored: Value = serde_json::from_str(&record.extra_vars).unwrap();
        assert_eq!(stored, v.go, "{}: job record", v.name);
    }
}
