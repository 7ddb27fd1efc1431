//! Survey validation with AWX's messages.

use super::ovalue::{OMap, OValue, omap_get};
use super::spec::{SurveyQuestion, SurveySpec};

fn choices(q: &SurveyQuestion) -> Vec<String> {
    match &q.choices {
        serde_json::Value::Array(a) => a
            .iter()
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
            .collect(),
        serde_json::Value::String(s) => s.split('\n').map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

fn py_list(items: &[String]) -> String {
    let inner: Vec<String> = items
        .iter()
        .map(|s| OValue::String(s.clone()).py_repr())
        .collect();
    format!("[{}]", inner.join(", "))
}

fn bound(v: Option<&serde_json::Value>) -> Option<f64> {
    match v? {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) if !s.trim().is_empty() => s.trim().parse().ok(),
        _ => None,
    }
}

fn bound_str(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn check(q: &SurveyQuestion, value: &OValue, errors: &mut Vec<String>) {
    let var = &q.variable;
    let min = bound(q.min.as_ref());
    let max = bound(q.max.as_ref());
    match q.kind.as_str() {
        "text" | "textarea" | "password" => {
            let OValue::String(s) = value else {
                errors.push(format!(
                    "Value {} for '{var}' expected to be a string.",
                    value.py_str()
                ));
                return;
            };
            if q.kind == "password" && s == "$encrypted$" {
                return;
            }
            let len = s.chars().count() as f64;
            if min.is_some_and(|m| len < m) {
                errors.push(format!(
                    "'{var}' value {s} is too small (length is {len} must be at least {}).",
                    bound_str(q.min.as_ref())
                ));
            }
            if max.is_some_and(|m| len > m) {
                errors.push(format!(
                    "'{var}' value {s} is too large (must be no more than {}).",
                    bound_str(q.max.as_ref())
                ));
            }
        }
        "integer" | "float" => {
            let n = match value {
                OValue::Number(n) if q.kind == "float" || !n.is_f64() => n.as_f64(),
                _ => None,
            };
            let Some(n) = n else {
                let what = if q.kind == "integer" {
                    "an integer"
                } else {
                    "a numeric type"
                };
                errors.push(format!(
                    "Value {} for '{var}' expected to be {what}.",
                    value.py_str()
                ));
                return;
            };
            if min.is_some_and(|m| n < m) {
                errors.push(format!(
                    "'{var}' value {} is too small (must be at least {}).",
                    value.py_str(),
                    bound_str(q.min.as_ref())
                ));
            }
            if max.is_some_and(|m| n > m) {
                errors.push(format!(
                    "'{var}' value {} is too large (must be no more than {}).",
                    value.py_str(),
                    bound_str(q.max.as_ref())
                ));
            }
        }
        "multiplechoice" => {
            let ch = choices(q);
            let ok = matches!(value, OValue::String(s) if ch.contains(s));
            if !ok {
                errors.push(format!(
                    "Value {} for '{var}' expected to be one of {}.",
                    value.py_str(),
                    py_list(&ch)
                ));
            }
        }
        "multiselect" => {
            let ch = choices(q);
            let OValue::Array(items) = value else {
                errors.push(format!("'{var}' value is expected to be a list."));
                return;
            };
            for item in items {
                let ok = matches!(item, OValue::String(s) if ch.contains(s));
                if !ok {
                    errors.push(format!(
                        "Value {} for '{var}' expected to be one of {}.",
                        item.py_str(),
                        py_list(&ch)
                    ));
                }
            }
        }
        _ => {}
    }
}

/// What AWX shows in a job's `extra_vars` instead of a password survey answer.
pub(crate) const ENCRYPTED: &str = "$encrypted$";

/// The variables of `spec`'s `password` questions.
pub(crate) fn password_variables(spec: Option<&SurveySpec>) -> Vec<String> {
    spec.map(|s| {
        s.spec
            .iter()
            .filter(|q| q.kind == "password")
            .map(|q| q.variable.clone())
            .collect()
    })
    .unwrap_or_default()
}

/// `vars` as a job record shows them: each top-level variable named in `passwords` replaced by
/// [`ENCRYPTED`] (AWX keeps the real answer for the playbook, and only its name in the job's
/// `survey_passwords`).
pub(crate) fn masked(vars: &OMap, passwords: &[String]) -> OMap {
    vars.iter()
        .map(|(k, v)| {
            if passwords.contains(k) {
                (k.clone(), OValue::String(ENCRYPTED.to_owned()))
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect()
}

/// Validates launch variables against a survey; returns the errors and the defaults to merge
/// (answers of non-required questions that were not given).
pub(crate) fn validate(spec: &SurveySpec, vars: &OMap) -> (Vec<String>, OMap) {
    let mut errors = Vec::new();
    let mut defaults = OMap::new();
    for q in &spec.spec {
        match omap_get(vars, &q.variable) {
            None if q.required => errors.push(format!("'{}' value missing", q.variable)),
            None => {
                let empty = q.default.is_null() || q.default.as_str().is_some_and(str::is_empty);
                if !empty {
                    defaults.push((q.variable.clone(), OValue::from_json(&q.default)));
                }
            }
            Some(v) => check(q, v, &mut errors),
        }
    }
    (errors, defaults)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn q(kind: &str, var: &str, required: bool) -> SurveyQuestion {
        SurveyQuestion {
            kind: kind.into(),
            variable: var.into(),
            required,
            ..SurveyQuestion::default()
        }
    }

    #[test]
    fn messages() {
        let mut choice = q("multiplechoice", "size", false);
        choice.choices = serde_json::json!(["s", "m"]);
        let mut text = q("text", "name", false);
        text.min = Some(serde_json::json!(3));
        let spec = SurveySpec {
            spec: vec![
                q("integer", "a", true),
                q("text", "req", true),
                choice,
                text,
            ],
            ..SurveySpec::default()
        };
        let vars: OValue =
            serde_json::from_str(r#"{"a": "5", "size": "xl", "name": "ab"}"#).unwrap();
        let OValue::Object(vars) = vars else { panic!() };
        let (errors, _) = validate(&spec, &vars);
        assert_eq!(
            errors,
            vec![
                "Value 5 for 'a' expected to be an integer.".to_owned(),
                "'req' value missing".to_owned(),
                "Value xl for 'size' expected to be one of ['s', 'm'].".to_owned(),
                "'name' value ab is too small (length is 2 must be at least 3).".to_owned(),
            ]
        );
    }
}
