//! `labelSelector` and `fieldSelector` query parameters.
//!
//! Written here because the grammar is small (the "Labels and Selectors" concept page: equality
//! `=`, `==`, `!=`; set `in`, `notin`, existence `key` / `!key`, requirements ANDed by commas) and
//! no crate parses it without pulling a client library.

use std::collections::BTreeMap;

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (all requirements must hold).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LabelSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn set_values(rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised set, found {rest:?}"))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

fn valid_key(k: &str) -> Result<String, String> {
    let k = k.trim();
    if k.is_empty() || k.contains(char::is_whitespace) {
        return Err(format!("invalid label key {k:?}"));
    }
    Ok(k.to_owned())
}

impl LabelSelector {
    /// Parses the selector text; the error text is what goes into the 400.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if text.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in split_top(text) {
            let part = part.trim();
            let req = if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEq(valid_key(k)?, v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Eq(valid_key(k)?, v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Eq(valid_key(k)?, v.trim().to_owned())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                Requirement::NotIn(valid_key(k)?, set_values(rest)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                Requirement::In(valid_key(k)?, set_values(rest)?)
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(valid_key(k)?)
            } else {
                Requirement::Exists(valid_key(part)?)
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Whether an object's labels satisfy every requirement.
    /// Whether it selects everything (no requirement).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => labels.get(k) == Some(v),
            Requirement::NotEq(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

/// A field selector over `metadata.name` / `metadata.namespace` (the fields every type
/// supports), with `=`, `==` and `!=`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        if text.trim().is_empty() {
            return Ok(Self(out));
        }
        for part in text.split(',') {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid field selector {part:?}"));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(format!(
                    "field label not supported: {field} (the fake serves metadata.name and metadata.namespace)"
                ));
            }
            out.push((field.to_owned(), eq, value.trim().to_owned()));
        }
        Ok(Self(out))
    }

    /// Whether it selects everything (no requirement).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, eq, value)| {
            let pointer = if field == "metadata.name" {
                "/metadata/name"
            } else {
                "/metadata/namespace"
            };
            let got = obj.pointer(pointer).and_then(Value::as_str).unwrap_or("");
            (got == value) == *eq
        })
    }
}

/// An object's `metadata.labels` as a map.
pub(crate) fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    /// Table from the "Labels and Selectors" concept page's examples.
    #[test]
    fn label_selector_table() {
        let l = labels(&[("environment", "production"), ("tier", "frontend")]);
        for (sel, want) in [
            ("environment = production", true),
            ("environment==production", true),
            ("tier != frontend", false),
            ("environment=production,tier!=frontend", false),
            ("environment in (production, qa)", true),
            ("tier notin (frontend, backend)", false),
            ("partition", false),
            ("!partition", true),
            ("environment in (production),tier in (frontend)", true),
            ("missing notin (x)", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&l),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("a in b").is_err());
    }

    #[test]
    fn field_selector_name_and_namespace() {
        let obj = serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            !FieldSelector::parse("metadata.name!=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            FieldSelector::parse("metadata.namespace==ns,metadata.name=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(FieldSelector::parse("spec.x=1").is_err());
    }
}
