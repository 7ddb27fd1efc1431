//! Pruning and type checking of custom resources against the CRD's structural
//! `openAPIV3Schema`.
//!
//! Written here because no Rust crate prunes Kubernetes structural schemas (JSON-schema
//! validators do not drop unknown fields or honour the `x-kubernetes-*` extensions). The rules
//! are the custom-resources task page's "Field pruning", "Controlling pruning" and
//! "Defaulting and Nullable" sections and the structural-schema KEP:
//! - object fields not in `properties` are dropped, unless the node (or an ancestor on the same
//!   object path) has `x-kubernetes-preserve-unknown-fields: true`; `additionalProperties`
//!   schemas apply to every value of a map;
//! - the resource root keeps `apiVersion`, `kind` and `metadata`, and so does a node with
//!   `x-kubernetes-embedded-resource: true`;
//! - `null` is kept only under `nullable: true`, otherwise pruned;
//! - a value whose JSON type differs from `type` (`x-kubernetes-int-or-string` accepts both) and a
//!   missing `required` property are refused (422), with the field path in the cause.
//!
//! Other validation (formats, enums, patterns, CEL) is not checked: see the module docs of
//! [`crate::fake_apiserver`].

use serde_json::{Map, Value};

use super::status::Cause;

/// Prunes `obj` in place and returns the validation failures (empty when valid).
pub(crate) fn prune_and_validate(obj: &mut Value, schema: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    walk(obj, schema, "", true, &mut causes);
    causes
}

fn truthy(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(want: &str, v: &Value, int_or_string: bool) -> bool {
    if int_or_string {
        return matches!(json_type(v), "integer" | "string");
    }
    match want {
        "number" => v.is_number(),
        other => json_type(v) == other,
    }
}

fn walk(v: &mut Value, schema: &Value, path: &str, root: bool, causes: &mut Vec<Cause>) {
    let int_or_string = truthy(schema, "x-kubernetes-int-or-string");
    if let Some(want) = schema.get("type").and_then(Value::as_str)
        && !type_ok(want, v, int_or_string)
    {
        let shown = match &*v {
            Value::String(s) => format!("\"{s}\""),
            other => format!("\"{}\"", json_type(other)),
        };
        causes.push(Cause {
            reason: "FieldValueTypeInvalid",
            message: format!(
                "Invalid value: {shown}: {path} in body must be of type {want}: \"{}\"",
                json_type(v)
            ),
            field: path.to_owned(),
        });
        return;
    }
    match v {
        Value::Object(map) => walk_object(map, schema, path, root, causes),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), false, causes);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(
    map: &mut Map<String, Value>,
    schema: &Value,
    path: &str,
    root: bool,
    causes: &mut Vec<Cause>,
) {
    let preserve = truthy(schema, "x-kubernetes-preserve-unknown-fields");
    let embedded = root || truthy(schema, "x-kubernetes-embedded-resource");
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        if embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let sub = properties.and_then(|p| p.get(&key)).or(additional);
        let Some(sub) = sub else {
            if !preserve {
                map.remove(&key);
            }
            continue;
        };
        let child_path = join(path, &key);
        if map.get(&key).is_some_and(Value::is_null) {
            if !truthy(sub, "nullable") {
                map.remove(&key);
            }
            continue;
        }
        if let Some(child) = map.get_mut(&key) {
            walk(child, sub, &child_path, false, causes);
        }
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                causes.push(Cause {
                    reason: "FieldValueRequired",
                    message: "Required value".into(),
                    field: join(path, name),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["cidr"],
                    "properties": {
                        "cidr": {"type": "string"},
                        "replicas": {"type": "integer"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "note": {"type": "string", "nullable": true},
                        "gone": {"type": "string"}
                    }
                },
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }
        })
    }

    /// "Field pruning": unknown fields dropped at every depth; maps and preserved subtrees kept.
    #[test]
    fn prunes_unknown_fields_and_keeps_preserved_ones() {
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "odd": 1},
            "spec": {"cidr": "10.0.0.0/24", "extra": 1, "labels": {"k": "v"},
                     "items": [{"a": "x", "b": "y"}], "free": {"anything": {"deep": true}},
                     "note": null, "gone": null, "port": "http"},
            "status": {"phase": "Ready", "unknownField": "vanishes"},
            "top": 1
        });
        let causes = prune_and_validate(&mut obj, &schema());
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "odd": 1},
                "spec": {"cidr": "10.0.0.0/24", "labels": {"k": "v"}, "items": [{"a": "x"}],
                         "free": {"anything": {"deep": true}}, "note": null, "port": "http"},
                "status": {"phase": "Ready"}
            })
        );
    }

    #[test]
    fn type_mismatch_and_missing_required_are_causes() {
        let mut obj = json!({"spec": {"replicas": "three"}});
        let causes = prune_and_validate(&mut obj, &schema());
        let fields: Vec<(&str, &str)> = causes
            .iter()
            .map(|c| (c.reason, c.field.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("FieldValueTypeInvalid", "spec.replicas"),
                ("FieldValueRequired", "spec.cidr")
            ]
        );
    }
}
