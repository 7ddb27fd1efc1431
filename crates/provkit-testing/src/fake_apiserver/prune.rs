//! Pruning of custom resources against the CRD's structural `openAPIV3Schema`.
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
//! - `null` is kept only under `nullable: true`; otherwise it takes the field's `default`, or
//!   the field is dropped;
//! - a value whose JSON type differs from its schema's is left as it is (validation reports
//!   it, see [`super::validation`]).

use serde_json::{Map, Value};

/// Prunes `obj` in place; the paths of the unknown fields it dropped (`spec.extra`,
/// `spec.items[0].extra`), for `fieldValidation`.
pub(crate) fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut dropped = Vec::new();
    walk(obj, schema, "", true, &mut dropped);
    dropped
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

fn kind_matches(schema: &Value, v: &Value) -> bool {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        _ => true,
    }
}

fn walk(v: &mut Value, schema: &Value, path: &str, root: bool, dropped: &mut Vec<String>) {
    if !kind_matches(schema, v) {
        return;
    }
    match v {
        Value::Object(map) => walk_object(map, schema, path, root, dropped),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), false, dropped);
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
    dropped: &mut Vec<String>,
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
                dropped.push(join(path, &key));
            }
            continue;
        };
        if map.get(&key).is_some_and(Value::is_null) {
            if !truthy(sub, "nullable") {
                match sub.get("default") {
                    Some(d) => {
                        map.insert(key.clone(), d.clone());
                    }
                    None => {
                        map.remove(&key);
                    }
                }
            }
            continue;
        }
        if let Some(child) = map.get_mut(&key) {
            walk(child, sub, &join(path, &key), false, dropped);
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
                        "gone": {"type": "string"},
                        "mode": {"type": "string", "default": "fast"}
                    }
                },
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }
        })
    }

    /// "Field pruning": unknown fields dropped at every depth (and reported); maps and
    /// preserved subtrees kept; a non-nullable null takes its default or goes.
    #[test]
    fn prunes_unknown_fields_and_keeps_preserved_ones() {
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "odd": 1},
            "spec": {"cidr": "10.0.0.0/24", "extra": 1, "labels": {"k": "v"},
                     "items": [{"a": "x", "b": "y"}], "free": {"anything": {"deep": true}},
                     "note": null, "gone": null, "port": "http", "mode": null},
            "status": {"phase": "Ready", "unknownField": "vanishes"},
            "top": 1
        });
        let dropped = prune(&mut obj, &schema());
        assert_eq!(
            dropped,
            [
                "spec.extra",
                "spec.items[0].b",
                "status.unknownField",
                "top"
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "odd": 1},
                "spec": {"cidr": "10.0.0.0/24", "labels": {"k": "v"}, "items": [{"a": "x"}],
                         "free": {"anything": {"deep": true}}, "note": null, "port": "http",
                         "mode": "fast"},
                "status": {"phase": "Ready"}
            })
        );
    }
}
