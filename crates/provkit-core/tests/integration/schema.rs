//! JSON schemas of the job types (feature `schemars`).

use provkit_core::{JobState, JobStatus, JobType};
use serde_json::json;

#[test]
fn job_status_schema() {
    let schema = serde_json::to_value(schemars::schema_for!(JobStatus)).unwrap();
    let props = &schema["properties"];
    assert_eq!(props["jobID"]["type"], "string");
    assert_eq!(props["type"]["type"], "string");
    assert_eq!(props["state"]["type"], "string");
    assert_eq!(props["timestamp"]["format"], "date-time");
    assert_eq!(props["timestamp"]["type"], json!(["string", "null"]));
    assert_eq!(props["blockDeletionOnFailure"]["type"], "boolean");
    assert_eq!(props["configVersion"]["type"], "string");
    assert_eq!(props["message"]["type"], "string");
    // Without `target` in the CRD schema the API server would prune what the newest Go
    // operator writes.
    assert_eq!(props["target"]["type"], "string");
    assert!(props.get("extra").is_none());
    assert_eq!(props.as_object().unwrap().len(), 8);
}

#[test]
fn enum_schemas_are_strings() {
    for schema in [
        schemars::schema_for!(JobState),
        schemars::schema_for!(JobType),
    ] {
        let v = serde_json::to_value(schema).unwrap();
        assert_eq!(v["type"], "string");
        assert!(v.get("enum").is_none(), "unknown strings must validate");
    }
}
