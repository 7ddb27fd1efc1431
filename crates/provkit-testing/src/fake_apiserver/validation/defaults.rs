//! Defaulting from the schema's `default`s, as the custom-resources page ("Defaulting")
//! describes it: a missing field (or a `null` one that is not `nullable`) of an object gets a
//! copy of its schema's default, in objects, map values and list items at every depth, and
//! defaulted values are defaulted further. It runs on the request's object (create, update,
//! patch, apply) and on stored objects when a CRD with new defaults is registered (the server
//! defaults objects as it reads them from storage).

use serde_json::Value;

fn nullable(s: &Value) -> bool {
    s.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// Applies the defaults of `s` to `v`; whether anything changed.
pub(crate) fn apply(v: &mut Value, s: &Value) -> bool {
    let mut changed = false;
    match v {
        Value::Object(m) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, prop) in props {
                    let Some(default) = prop.get("default") else {
                        continue;
                    };
                    let missing = match m.get(k) {
                        None => true,
                        Some(Value::Null) => !nullable(prop),
                        Some(_) => false,
                    };
                    if missing {
                        m.insert(k.clone(), default.clone());
                        changed = true;
                    }
                }
            }
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in m.iter_mut() {
                let sub = s.get("properties").and_then(|p| p.get(k)).or(additional);
                if let Some(sub) = sub {
                    if child.is_null()
                        && !nullable(sub)
                        && let Some(d) = sub.get("default")
                    {
                        *child = d.clone();
                        changed = true;
                    }
                    changed |= apply(child, sub);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items.iter_mut() {
                    if item.is_null()
                        && !nullable(item_schema)
                        && let Some(d) = item_schema.get("default")
                    {
                        *item = d.clone();
                        changed = true;
                    }
                    changed |= apply(item, item_schema);
                }
            }
        }
        _ => {}
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn missing_and_non_nullable_null_fields_get_their_defaults_at_every_depth() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "fast"},
            "note": {"type": "string", "nullable": true, "default": "n"},
            "ports": {"type": "array", "items": {"type": "object",
                      "properties": {"protocol": {"type": "string", "default": "TCP"}}}}
        }}}});
        let mut v = json!({});
        assert!(apply(&mut v, &s));
        assert_eq!(
            v,
            json!({"spec": {"replicas": 1, "mode": "fast", "note": "n"}})
        );
        let mut v = json!({"spec": {"replicas": 3, "mode": null, "note": null, "ports": [{}]}});
        apply(&mut v, &s);
        assert_eq!(
            v,
            json!({"spec": {"replicas": 3, "mode": "fast", "note": null, "ports": [{"protocol": "TCP"}]}})
        );
        assert!(!apply(&mut v, &s), "defaulting twice changes nothing");
    }
}
