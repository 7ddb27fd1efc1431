//! OpenAPI value validation of a custom resource against its CRD's structural schema:
//! `type` (and `x-kubernetes-int-or-string`), `nullable`, `enum`, `pattern`, `format`,
//! `minimum`/`maximum` (exclusive too), `multipleOf`, `minLength`/`maxLength`,
//! `minItems`/`maxItems`, `uniqueItems`, `minProperties`/`maxProperties`, `required`,
//! `allOf`/`anyOf`/`oneOf`/`not`, and the uniqueness of `x-kubernetes-list-type: set` items
//! and `map` keys — every failure reported, in the server's words.
//!
//! On an update, a value equal to the old object's value at the same place (fields by name,
//! map-list items by key) is not checked again ("validation ratcheting", on by default since
//! Kubernetes 1.30), so an object stored before a stricter schema stays writable.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::Regex;
use serde_json::{Map, Value};

use super::errors::{FieldError, Kind, child, go_float, index};
use super::formats;

/// Compiled `pattern`s, by pattern text (`None`: the pattern does not compile and is not
/// checked; the server would have refused the CRD).
static PATTERNS: LazyLock<Mutex<HashMap<String, Option<Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn pattern_matches(pattern: &str, s: &str) -> bool {
    let mut cache = PATTERNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let re = cache
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok());
    re.as_ref().is_none_or(|r| r.is_match(s))
}

/// The JSON type of a value as the server names it (`integer` for whole numbers).
pub(crate) fn json_type(v: &Value) -> &'static str {
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

fn truthy(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn number(s: &Value, key: &str) -> Option<f64> {
    s.get(key).and_then(Value::as_f64)
}

fn count(s: &Value, key: &str) -> Option<u64> {
    s.get(key).and_then(Value::as_u64)
}

/// The item of `old` that corresponds to `item` of a list under `s`: by key for
/// `x-kubernetes-list-type: map`, none otherwise.
pub(crate) fn correlate_item<'a>(
    s: &Value,
    item: &Value,
    old: Option<&'a Value>,
) -> Option<&'a Value> {
    if s.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    old?.as_array()?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
}

/// Validates `v` (with `old`, the correlated old value on an update) against `s`.
pub(crate) fn validate(
    v: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if old == Some(v) {
        return;
    }
    if v.is_null() {
        // Nulls are pruned unless `nullable`; a kept null is valid.
        return;
    }
    let int_or_string = truthy(s, "x-kubernetes-int-or-string");
    let want = s.get("type").and_then(Value::as_str);
    let got = json_type(v);
    let type_ok = if int_or_string {
        matches!(got, "integer" | "string") || v.as_f64().is_some_and(|f| f == f.trunc())
    } else {
        match want {
            None => true,
            Some("number") => v.is_number(),
            Some("integer") => got == "integer" || v.as_f64().is_some_and(|f| f == f.trunc()),
            Some(t) => got == t,
        }
    };
    if !type_ok {
        let shown = if int_or_string {
            "integer,string".to_owned()
        } else {
            want.unwrap_or_default().to_owned()
        };
        out.push(FieldError::new(
            Kind::TypeInvalid,
            path,
            Some(Value::String(got.to_owned())),
            format!("{path} in body must be of type {shown}: \"{got}\""),
        ));
        return;
    }
    combinators(v, s, path, out);
    match v {
        Value::String(text) => string(text, v, s, path, out),
        Value::Number(n) => numeric(n, v, s, path, out),
        Value::Array(items) => array(items, old, s, path, out),
        _ => {}
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array)
        && !allowed.contains(v)
    {
        let values: Vec<String> = allowed
            .iter()
            .map(|a| {
                let text = match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Value::String(text).to_string()
            })
            .collect();
        out.push(FieldError::new(
            Kind::NotSupported,
            path,
            Some(v.clone()),
            format!("supported values: {}", values.join(", ")),
        ));
    }
    if let Value::Object(m) = v {
        object(m, old, s, path, out);
    }
}

fn combinators(v: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let passes = |sub: &Value| {
        let mut errs = Vec::new();
        validate(v, None, sub, path, &mut errs);
        errs.is_empty()
    };
    let invalid = |detail: String| FieldError::new(Kind::Invalid, path, Some(v.clone()), detail);
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            validate(v, None, sub, path, out);
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array)
        && !any.is_empty()
        && !any.iter().any(passes)
    {
        out.push(invalid(format!(
            "{path} in body must validate at least one schema (anyOf)"
        )));
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array)
        && !one.is_empty()
        && one.iter().filter(|sub| passes(sub)).count() != 1
    {
        out.push(invalid(format!(
            "{path} in body must validate one and only one schema (oneOf)"
        )));
    }
    if let Some(not) = s.get("not")
        && passes(not)
    {
        out.push(invalid(format!(
            "{path} in body must not validate the schema (not)"
        )));
    }
}

fn string(text: &str, v: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let chars = text.chars().count() as u64;
    if let Some(max) = count(s, "maxLength")
        && chars > max
    {
        out.push(FieldError::new(
            Kind::TooLong,
            path,
            Some(v.clone()),
            format!("may not be more than {max} bytes"),
        ));
    }
    if let Some(min) = count(s, "minLength")
        && chars < min
    {
        out.push(FieldError::new(
            Kind::Invalid,
            path,
            Some(v.clone()),
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str)
        && !pattern_matches(p, text)
    {
        out.push(FieldError::new(
            Kind::Invalid,
            path,
            Some(v.clone()),
            format!("{path} in body should match '{p}'"),
        ));
    }
    if let Some(f) = s.get("format").and_then(Value::as_str)
        && formats::check(f, text) == Some(false)
    {
        out.push(FieldError::new(
            Kind::TypeInvalid,
            path,
            Some(v.clone()),
            format!(
                "{path} in body must be of type {f}: {}",
                Value::String(text.to_owned())
            ),
        ));
    }
}

fn numeric(n: &serde_json::Number, v: &Value, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    let x = n.as_f64().unwrap_or(0.0);
    let invalid = |detail: String| FieldError::new(Kind::Invalid, path, Some(v.clone()), detail);
    if let Some(m) = number(s, "multipleOf")
        && m > 0.0
        && (x / m).fract() != 0.0
    {
        out.push(invalid(format!(
            "{path} in body should be a multiple of {}",
            go_float(m)
        )));
    }
    if let Some(max) = number(s, "maximum") {
        if truthy(s, "exclusiveMaximum") && x >= max {
            out.push(invalid(format!(
                "{path} in body should be less than {}",
                go_float(max)
            )));
        } else if x > max {
            out.push(invalid(format!(
                "{path} in body should be less than or equal to {}",
                go_float(max)
            )));
        }
    }
    if let Some(min) = number(s, "minimum") {
        if truthy(s, "exclusiveMinimum") && x <= min {
            out.push(invalid(format!(
                "{path} in body should be greater than {}",
                go_float(min)
            )));
        } else if x < min {
            out.push(invalid(format!(
                "{path} in body should be greater than or equal to {}",
                go_float(min)
            )));
        }
    }
}

fn array(items: &[Value], old: Option<&Value>, s: &Value, path: &str, out: &mut Vec<FieldError>) {
    if let Some(item_schema) = s.get("items") {
        let correlated = s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
        for (i, item) in items.iter().enumerate() {
            let old_item = if correlated {
                correlate_item(s, item, old)
            } else {
                None
            };
            validate(item, old_item, item_schema, &index(path, i), out);
        }
    }
    let len = items.len() as u64;
    if let Some(min) = count(s, "minItems")
        && len < min
    {
        out.push(FieldError::new(
            Kind::Invalid,
            path,
            Some(Value::from(len)),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = count(s, "maxItems")
        && len > max
    {
        out.push(FieldError::new(
            Kind::TooMany,
            path,
            Some(Value::from(len)),
            format!("must have at most {max} items"),
        ));
    }
    if truthy(s, "uniqueItems")
        && items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].contains(a))
    {
        out.push(FieldError::new(
            Kind::Invalid,
            path,
            Some(Value::Array(items.to_vec())),
            format!("{path} in body shouldn't contain duplicates"),
        ));
    }
    list_type(items, s, path, out);
}

/// `x-kubernetes-list-type`: `set` items and `map` keys are unique.
fn list_type(items: &[Value], s: &Value, path: &str, out: &mut Vec<FieldError>) {
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    out.push(FieldError::new(
                        Kind::Duplicate,
                        &index(path, i),
                        Some(item.clone()),
                        "",
                    ));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let key_of = |item: &Value| -> Map<String, Value> {
                keys.iter()
                    .filter_map(|k| item.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                    .collect()
            };
            let mut seen: Vec<Map<String, Value>> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let key = key_of(item);
                if seen.contains(&key) {
                    out.push(FieldError::new(
                        Kind::Duplicate,
                        &index(path, i),
                        Some(Value::Object(key)),
                        "",
                    ));
                } else {
                    seen.push(key);
                }
            }
        }
        _ => {}
    }
}

fn object(
    m: &Map<String, Value>,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let len = m.len() as u64;
    if let Some(max) = count(s, "maxProperties")
        && len > max
    {
        out.push(FieldError::new(
            Kind::TooMany,
            path,
            Some(Value::from(len)),
            format!("must have at most {max} items"),
        ));
    }
    if let Some(min) = count(s, "minProperties")
        && len < min
    {
        out.push(FieldError::new(
            Kind::Invalid,
            path,
            Some(Value::from(len)),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !m.contains_key(name) {
                out.push(FieldError::new(
                    Kind::Required,
                    &child(path, name),
                    None,
                    "",
                ));
            }
        }
    }
    let properties = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    let embedded = path.is_empty() || truthy(s, "x-kubernetes-embedded-resource");
    // Fields in name order, whatever order the JSON map keeps (serde_json's `preserve_order`
    // may be on in the user's build): the causes of one 422 come in a stable order.
    let mut fields: Vec<_> = m.iter().collect();
    fields.sort_unstable_by_key(|(k, _)| k.as_str());
    for (k, child_value) in fields {
        if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let Some(sub) = properties.and_then(|p| p.get(k)).or(additional) else {
            continue;
        };
        let old_child = old.and_then(|o| o.get(k));
        validate(child_value, old_child, sub, &child(path, k), out);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(v: &Value, s: &Value) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        validate(v, None, s, "", &mut out);
        out.iter()
            .map(|e| {
                let c = e.cause();
                (c.reason.to_owned(), c.field, c.message)
            })
            .collect()
    }

    #[test]
    fn every_failure_is_reported_in_the_server_s_words() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1, "multipleOf": 0.25},
            "ip": {"type": "string", "format": "ipv4"},
            "tags": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "minItems": 1, "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["port"],
                      "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
            "port": {"x-kubernetes-int-or-string": true},
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}
        }}}});
        let v = json!({"spec": {
            "color": "green", "replicas": 0, "ratio": 1, "ip": "1.2.3", "tags": ["a", "b", "a"],
            "ports": [{"port": 1}, {"port": 1}], "port": true, "labels": {"a": "1", "b": "2"}
        }});
        let got = errors(&v, &s);
        let want: Vec<(String, String, String)> = [
            ("FieldValueNotSupported", "spec.color", "Unsupported value: \"green\": supported values: \"red\", \"blue\""),
            ("FieldValueTypeInvalid", "spec.ip", ""),
            ("FieldValueTooMany", "spec.labels", "Too many: 2: must have at most 1 items"),
            ("FieldValueTypeInvalid", "spec.port", "Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""),
            ("FieldValueDuplicate", "spec.ports[1]", "Duplicate value: map[string]interface {}{\"port\":1}"),
            ("FieldValueInvalid", "spec.ratio", "Invalid value: 1: spec.ratio in body should be less than 1"),
            ("FieldValueInvalid", "spec.replicas", "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"),
            ("FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items"),
            ("FieldValueDuplicate", "spec.tags[2]", "Duplicate value: \"a\""),
        ]
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect();
        // The required field comes first (object checks before its fields).
        assert_eq!(
            got[0],
            (
                "FieldValueRequired".into(),
                "spec.name".into(),
                "Required value".into()
            )
        );
        let rest = &got[1..];
        assert_eq!(rest.len(), want.len(), "{rest:#?}");
        for (g, w) in rest.iter().zip(&want) {
            assert_eq!((&g.0, &g.1), (&w.0, &w.1));
            if !w.2.is_empty() {
                assert_eq!(g.2, w.2);
            }
        }
        assert_eq!(
            rest[1].2,
            "Invalid value: \"1.2.3\": spec.ip in body must be of type ipv4: \"1.2.3\""
        );
        assert_eq!(rest[1].0, "FieldValueTypeInvalid");
        let name = errors(&json!({"spec": {"name": "ABCDEFG"}}), &s);
        assert_eq!(
            name.iter().map(|e| e.2.as_str()).collect::<Vec<_>>(),
            [
                "Too long: may not be more than 5 bytes",
                "Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$'"
            ]
        );
    }

    #[test]
    fn unchanged_values_are_not_checked_again_on_update() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "maximum": 3}, "other": {"type": "string"}}}}});
        let old = json!({"spec": {"replicas": 5, "other": "a"}});
        let new = json!({"spec": {"replicas": 5, "other": "b"}});
        let mut out = Vec::new();
        validate(&new, Some(&old), &s, "", &mut out);
        assert!(out.is_empty(), "{out:?}");
        let bigger = json!({"spec": {"replicas": 6, "other": "b"}});
        validate(&bigger, Some(&old), &s, "", &mut out);
        assert_eq!(out.len(), 1);
    }
}
