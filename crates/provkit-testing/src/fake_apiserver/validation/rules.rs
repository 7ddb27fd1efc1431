//! CEL validation rules (`x-kubernetes-validations`), evaluated with the `cel` crate as the
//! custom-resources page ("Validation rules") describes them: `self` is the value the rule
//! is declared on (typed by its schema: `number` fields are doubles), `oldSelf` the
//! correlated old value on an update (fields by name, map values by key, `map`-list items by
//! key) — a rule using `oldSelf` (a transition rule) is only evaluated when there is one; a
//! failing rule reports `message`, else the result of `messageExpression`, else
//! `failed rule: <rule>`, under its `reason` (`FieldValueInvalid` by default) and at its
//! `fieldPath`; rules of values unchanged on an update are not evaluated again (ratcheting)
//! unless they use `oldSelf`.
//!
//! The CEL environment is the crate's standard library with its strings, lists and math
//! extensions; Kubernetes' own CEL libraries (`quantity`, `url`, `ip`, `cidr`, `isSorted`,
//! regex `find`, …), `optionalOldSelf` and the cost budget are not provided: a rule calling
//! them fails as a runtime error.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Env, Program, Value as Cel};
use serde_json::Value;

use super::errors::{FieldError, Kind, child, index};
use super::schema::correlate_item;

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // The extensions register overloads the standard library does not have; a failure would
    // only leave them out.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cel::extensions::math);
    Arc::new(env)
});

/// A compiled rule and whether it reads `oldSelf`.
struct Compiled {
    program: Program,
    uses_old_self: bool,
}

/// Compiled programs by source (`None`: it does not compile; the server would have refused
/// the CRD, the fake skips the rule).
static PROGRAMS: LazyLock<Mutex<HashMap<String, Option<Arc<Compiled>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn compile(source: &str) -> Option<Arc<Compiled>> {
    let mut cache = PROGRAMS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .entry(source.to_owned())
        .or_insert_with(|| {
            ENV.compile(source).ok().map(|program| {
                let uses_old_self = program.references().has_variable("oldSelf");
                Arc::new(Compiled {
                    program,
                    uses_old_self,
                })
            })
        })
        .clone()
}

/// A JSON value as CEL sees it under schema `s`.
fn to_cel(v: &Value, s: Option<&Value>) -> Cel {
    let ty = s.and_then(|s| s.get("type")).and_then(Value::as_str);
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if ty == Some("number") {
                Cel::Float(n.as_f64().unwrap_or(0.0))
            } else if let Some(i) = n.as_i64() {
                Cel::Int(i)
            } else if let Some(u) = n.as_u64() {
                Cel::UInt(u)
            } else {
                Cel::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(t) => Cel::String(Arc::new(t.clone())),
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.get("items"));
            Cel::List(Arc::new(
                items.iter().map(|i| to_cel(i, item_schema)).collect(),
            ))
        }
        Value::Object(m) => {
            let additional = s.and_then(|s| s.get("additionalProperties"));
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, child)| {
                    let sub = s
                        .and_then(|s| s.get("properties"))
                        .and_then(|p| p.get(k))
                        .or(additional);
                    (Key::String(Arc::new(k.clone())), to_cel(child, sub))
                })
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

/// The schema type a failing rule reports as the bad value (`"object"`, `"string"`, …).
fn schema_type(s: &Value) -> Value {
    Value::String(
        s.get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    )
}

/// `fieldPath` of a rule (`.spec.x`, `['x']`) as a dotted path under `path`.
fn rule_path(path: &str, field_path: &str) -> String {
    let mut out = path.to_owned();
    let mut rest = field_path.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out = child(&out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out = child(&out, &r[..end]);
            rest = r.get(end + 2..).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            out = format!("{out}[{}]", &r[..end]);
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            out = child(&out, rest);
            break;
        }
    }
    out
}

fn evaluate(
    compiled: &Compiled,
    v: &Value,
    old: Option<&Value>,
    s: &Value,
) -> Result<bool, String> {
    let mut ctx = Context::with_env(ENV.clone());
    ctx.add_variable_from_value("self", to_cel(v, Some(s)));
    if let Some(o) = old {
        ctx.add_variable_from_value("oldSelf", to_cel(o, Some(s)));
    }
    match compiled.program.execute(&ctx) {
        Ok(Cel::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("rule did not evaluate to a bool: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The message of a failed rule: its `messageExpression`'s non-blank string result, else
/// `message`, else `failed rule: <rule>`.
fn message(rule: &Value, v: &Value, old: Option<&Value>, s: &Value) -> String {
    let text = |k: &str| {
        rule.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("")
    };
    if let Some(expr) = rule.get("messageExpression").and_then(Value::as_str)
        && let Some(compiled) = compile(expr)
    {
        let mut ctx = Context::with_env(ENV.clone());
        ctx.add_variable_from_value("self", to_cel(v, Some(s)));
        if let Some(o) = old {
            ctx.add_variable_from_value("oldSelf", to_cel(o, Some(s)));
        }
        if let Ok(Cel::String(m)) = compiled.program.execute(&ctx)
            && !m.trim().is_empty()
        {
            return m.to_string();
        }
    }
    if !text("message").is_empty() {
        return text("message").to_owned();
    }
    format!("failed rule: {}", text("rule"))
}

/// Evaluates every rule at and below `v` (with `old`, the correlated old value on an update).
pub(crate) fn validate(
    v: &Value,
    old: Option<&Value>,
    s: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let unchanged = old == Some(v);
    if let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) {
        for rule in rules {
            let Some(source) = rule.get("rule").and_then(Value::as_str) else {
                continue;
            };
            let Some(compiled) = compile(source) else {
                continue;
            };
            if compiled.uses_old_self && old.is_none() {
                continue;
            }
            if unchanged && !compiled.uses_old_self {
                continue;
            }
            let at = rule
                .get("fieldPath")
                .and_then(Value::as_str)
                .map_or_else(|| path.to_owned(), |f| rule_path(path, f));
            match evaluate(&compiled, v, old, s) {
                Ok(true) => {}
                Ok(false) => {
                    let detail = message(rule, v, old, s);
                    let error = match rule.get("reason").and_then(Value::as_str) {
                        Some("FieldValueForbidden") => {
                            FieldError::new(Kind::Forbidden, &at, None, detail)
                        }
                        Some("FieldValueRequired") => {
                            FieldError::new(Kind::Required, &at, None, detail)
                        }
                        Some("FieldValueDuplicate") => {
                            FieldError::new(Kind::Duplicate, &at, Some(schema_type(s)), "")
                        }
                        _ => FieldError::new(Kind::Invalid, &at, Some(schema_type(s)), detail),
                    };
                    out.push(error);
                }
                Err(e) => out.push(FieldError::new(
                    Kind::Invalid,
                    path,
                    Some(schema_type(s)),
                    format!("{}: {e}", source.trim()),
                )),
            }
        }
    }
    if unchanged && !has_transition_rules(s) {
        return;
    }
    match v {
        Value::Object(m) => {
            let properties = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            for (k, child_value) in m {
                if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(sub) = properties.and_then(|p| p.get(k)).or(additional) {
                    validate(
                        child_value,
                        old.and_then(|o| o.get(k)),
                        sub,
                        &child(path, k),
                        out,
                    );
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let old_item = correlate_item(s, item, old);
                    validate(item, old_item, item_schema, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

/// Whether a rule at or below `s` uses `oldSelf` (then an unchanged value is still walked).
fn has_transition_rules(s: &Value) -> bool {
    let here = s
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|rules| {
            rules.iter().any(|r| {
                r.get("rule")
                    .and_then(Value::as_str)
                    .and_then(compile)
                    .is_some_and(|c| c.uses_old_self)
            })
        });
    here || s
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.values().any(has_transition_rules))
        || s.get("items").is_some_and(has_transition_rules)
        || s.get("additionalProperties")
            .filter(|a| a.is_object())
            .is_some_and(has_transition_rules)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(v: &Value, old: Option<&Value>, s: &Value) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        validate(v, old, s, "", &mut out);
        out.iter()
            .map(|e| {
                let c = e.cause();
                (c.reason.to_owned(), c.field, c.message)
            })
            .collect()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas",
             "message": "minReplicas must not exceed maxReplicas"},
            {"rule": "self.maxReplicas < 100",
             "messageExpression": "'maxReplicas is ' + string(self.maxReplicas) + ', want < 100'"},
            {"rule": "!has(self.mode) || self.mode != 'legacy'", "reason": "FieldValueForbidden",
             "fieldPath": ".mode"},
            {"rule": "self.ratio < 2.0"}
        ],
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "ratio": {"type": "number"},
            "mode": {"type": "string"},
            "name": {"type": "string",
                     "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}
        }}}})
    }

    fn cause(reason: &str, field: &str, message: &str) -> (String, String, String) {
        (reason.to_owned(), field.to_owned(), message.to_owned())
    }

    #[test]
    fn failing_rules_report_message_message_expression_reason_and_field_path() {
        let v =
            json!({"spec": {"minReplicas": 300, "maxReplicas": 200, "ratio": 3, "mode": "legacy"}});
        assert_eq!(
            run(&v, None, &schema()),
            [
                cause(
                    "FieldValueInvalid",
                    "spec",
                    "Invalid value: \"object\": minReplicas must not exceed maxReplicas"
                ),
                cause(
                    "FieldValueInvalid",
                    "spec",
                    "Invalid value: \"object\": maxReplicas is 200, want < 100"
                ),
                cause(
                    "FieldValueForbidden",
                    "spec.mode",
                    "Forbidden: failed rule: !has(self.mode) || self.mode != 'legacy'"
                ),
                cause(
                    "FieldValueInvalid",
                    "spec",
                    "Invalid value: \"object\": failed rule: self.ratio < 2.0"
                ),
            ]
        );
        let fine = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "ratio": 1}});
        assert!(run(&fine, None, &schema()).is_empty());
    }

    #[test]
    fn transition_rules_need_an_old_value_and_unchanged_values_are_not_checked_again() {
        let s = schema();
        let new = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "ratio": 1, "name": "b"}});
        assert!(run(&new, None, &s).is_empty(), "no oldSelf on create");
        let old = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "ratio": 1, "name": "a"}});
        assert_eq!(
            run(&new, Some(&old), &s),
            [cause(
                "FieldValueInvalid",
                "spec.name",
                "Invalid value: \"string\": name is immutable"
            )]
        );
        // An invalid value stored before the rule existed may stay as it is.
        let stored = json!({"spec": {"minReplicas": 9, "maxReplicas": 2, "ratio": 1, "name": "a"}});
        assert!(run(&stored.clone(), Some(&stored), &s).is_empty());
        assert_eq!(rule_path("spec", ".a.b"), "spec.a.b");
        assert_eq!(rule_path("spec", "['x'].y"), "spec.x.y");
    }
}
