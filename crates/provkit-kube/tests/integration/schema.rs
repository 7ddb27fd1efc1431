use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::fixtures::Network;

fn status_schema() -> Value {
    let crd = serde_json::to_value(Network::crd()).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"].clone()
}

fn strip_descriptions(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("description").is_some_and(Value::is_string) {
                m.remove("description");
            }
            m.values_mut().for_each(strip_descriptions);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[test]
fn status_schema_snapshot() {
    let mut got = status_schema();
    // Descriptions are short one-liners (no rustdoc examples leak into the CRD).
    assert_eq!(
        got["description"],
        "Provisioning status: job history, desired config version and conditions."
    );
    assert_eq!(
        got["properties"]["provisioningJobs"]["items"]["description"],
        "One job of the history (Go v1alpha1.JobStatus)."
    );
    assert_eq!(
        got["properties"]["launchIntent"]["description"],
        "Write-ahead record of a launch attempt whose job is not recorded yet (provkit)."
    );
    strip_descriptions(&mut got);
    assert_json_diff::assert_json_eq!(
        got,
        json!({
            "nullable": true,
            "type": "object",
            "properties": {
                "phase": {"nullable": true, "type": "string"},
                "provisioningJobs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "jobID": {"default": "", "type": "string"},
                            "type": {"default": "provision", "type": "string"},
                            "timestamp": {"format": "date-time", "nullable": true, "type": "string"},
                            "state": {"default": "Pending", "type": "string"},
                            "message": {"type": "string"},
                            "blockDeletionOnFailure": {"type": "boolean"},
                            "configVersion": {"type": "string"},
                            "target": {"type": "string"}
                        }
                    }
                },
                "desiredConfigVersion": {"type": "string"},
                // Declared, so the API server's pruning keeps the write-ahead intent.
                "launchIntent": {
                    "nullable": true,
                    "type": "object",
                    "properties": {
                        "idempotencyKey": {"type": "string"},
                        "jobType": {"type": "string"},
                        "configVersion": {"type": "string"},
                        "createdAt": {"format": "date-time", "type": "string"},
                        "target": {"type": "string"},
                        "marker": {"type": "string"}
                    },
                    "required": ["createdAt", "idempotencyKey", "jobType"]
                },
                "conditions": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "lastTransitionTime": {"format": "date-time", "type": "string"},
                            "message": {"maxLength": 32768, "type": "string"},
                            "observedGeneration": {"format": "int64", "minimum": 0.0, "type": "integer"},
                            "reason": {"maxLength": 1024, "minLength": 1, "type": "string"},
                            "status": {"enum": ["True", "False", "Unknown"], "type": "string"},
                            "type": {"maxLength": 316, "type": "string"}
                        },
                        "required": ["lastTransitionTime", "message", "reason", "status", "type"]
                    }
                }
            }
        })
    );
}

#[test]
fn crd_has_status_subresource() {
    let crd = serde_json::to_value(Network::crd()).unwrap();
    assert_eq!(
        crd["spec"]["versions"][0]["subresources"]["status"],
        json!({})
    );
}
