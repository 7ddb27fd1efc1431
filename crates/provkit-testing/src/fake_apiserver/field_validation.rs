//! `fieldValidation` (`Ignore`, `Warn` — the server's default —, `Strict`): what a write is
//! told about fields the server drops, as the API concepts page ("Field validation")
//! describes and kube-apiserver answers: unknown fields (pruned by the CRD schema, or unknown
//! to `ObjectMeta`) and duplicate fields (the same key twice in one JSON object; for JSON
//! patch, unknown or duplicate keys of an operation). `Warn` sends each as a `Warning`
//! header (`299 - "unknown field \"spec.x\""`), `Strict` refuses the write with 400
//! (`<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: …`), and an
//! apply body's duplicate keys are reported as the YAML decoder words them (`line 10: key
//! "x" already set in map`).
//!
//! The JSON scanner is written here because the duplicates must be found with their paths
//! and lines, which a JSON parser that keeps the last value (`serde_json`) does not tell.

use std::collections::{HashMap, HashSet};

use http::HeaderValue;
use serde_json::json;

use super::status::ApiStatus;

/// The `fieldValidation` directive of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Directive {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl Directive {
    /// The request's directive (`Warn` when absent); 422 for another value.
    pub(crate) fn from_query(
        query: &HashMap<String, String>,
        options_kind: &str,
    ) -> Result<Self, ApiStatus> {
        match query.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => {
                let detail = format!(
                    "Unsupported value: {}: supported values: \"Ignore\", \"Strict\", \"Warn\"",
                    serde_json::Value::String(other.to_owned())
                );
                Err(ApiStatus::new(
                    422,
                    "Invalid",
                    format!("{options_kind}.meta.k8s.io \"\" is invalid: fieldValidation: {detail}"),
                )
                .with_details(json!({
                    "group": "meta.k8s.io",
                    "kind": options_kind,
                    "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "fieldValidation"}],
                })))
            }
        }
    }
}

/// What the HTTP layer found in a write's body, for the store to report with what pruning
/// finds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldChecks<'a> {
    pub(crate) directive: Directive,
    /// Problems found in the body (`duplicate field "spec.x"`, …), in order.
    pub(crate) found: &'a [String],
}

impl FieldChecks<'static> {
    /// For the server's own writes: nothing to report.
    pub(crate) const NONE: Self = Self {
        directive: Directive::Ignore,
        found: &[],
    };
}

/// A key seen twice in one JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Duplicate {
    /// The field's path (`spec.ports[0].hostPort`).
    pub(crate) path: String,
    pub(crate) key: String,
    /// The line of the second occurrence (1-based).
    pub(crate) line: usize,
}

impl Duplicate {
    /// As a JSON decoder words it.
    pub(crate) fn json_text(&self) -> String {
        format!("duplicate field {}", quoted(&self.path))
    }

    /// As the YAML decoder (apply bodies) words it.
    pub(crate) fn yaml_text(&self) -> String {
        format!(
            "line {}: key {} already set in map",
            self.line,
            quoted(&self.key)
        )
    }
}

fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// `unknown field "path"`.
pub(crate) fn unknown_text(path: &str) -> String {
    format!("unknown field {}", quoted(path))
}

/// A `Warning` header value for `text`.
pub(crate) fn warning_header(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("299 - {}", quoted(text))).ok()
}

/// The 400 of a `Strict` write.
pub(crate) fn strict_error(kind: &str, version: &str, problems: &[String]) -> ApiStatus {
    ApiStatus::bad_request(format!(
        "{kind} in version {} cannot be handled as a {kind}: strict decoding error: {}",
        quoted(version),
        problems.join(", ")
    ))
}

/// The 400 of a `Strict` apply whose body repeats keys.
pub(crate) fn strict_apply_error(duplicates: &[Duplicate]) -> ApiStatus {
    let lines: Vec<String> = duplicates
        .iter()
        .map(|d| format!("  {}", d.yaml_text()))
        .collect();
    ApiStatus::bad_request(format!(
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n{}",
        lines.join("\n")
    ))
}

/// The duplicate keys of a JSON document, in document order (an invalid document gives
/// what was found before the error).
pub(crate) fn duplicates(body: &[u8]) -> Vec<Duplicate> {
    let mut s = Scanner {
        b: body,
        i: 0,
        line: 1,
        out: Vec::new(),
        depth: 0,
    };
    s.value("");
    s.out
}

/// For a JSON patch: each operation's keys other than `op`, `path`, `value` and `from`
/// (`json patch unknown field "[0].foo"`) and repeated ones (`json patch duplicate field
/// "[1].path"`), in order.
pub(crate) fn json_patch_problems(body: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(serde_json::Value::Array(ops)) = serde_json::from_slice::<serde_json::Value>(body)
    else {
        return out;
    };
    let dups = duplicates(body);
    for (i, op) in ops.iter().enumerate() {
        let Some(m) = op.as_object() else {
            continue;
        };
        for k in m.keys() {
            if !matches!(k.as_str(), "op" | "path" | "value" | "from") {
                out.push(format!(
                    "json patch unknown field {}",
                    quoted(&format!("[{i}].{k}"))
                ));
            }
        }
        for d in dups
            .iter()
            .filter(|d| d.path.starts_with(&format!("[{i}].")))
        {
            if !d.path[format!("[{i}].").len()..].contains(['.', '[']) {
                out.push(format!("json patch duplicate field {}", quoted(&d.path)));
            }
        }
    }
    out
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    out: Vec<Duplicate>,
    depth: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => return,
            }
            self.i += 1;
        }
    }

    fn value(&mut self, path: &str) {
        self.skip_ws();
        if self.depth > 512 {
            self.i = self.b.len();
            return;
        }
        match self.peek() {
            Some(b'{') => {
                self.depth += 1;
                self.object(path);
                self.depth -= 1;
            }
            Some(b'[') => {
                self.depth += 1;
                self.array(path);
                self.depth -= 1;
            }
            Some(b'"') => {
                self.string();
            }
            Some(_) => self.scalar(),
            None => {}
        }
    }

    fn object(&mut self, path: &str) {
        self.i += 1;
        let mut seen = HashSet::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return;
                }
                Some(b',') => {
                    self.i += 1;
                    continue;
                }
                Some(b'"') => {}
                _ => {
                    self.i = self.b.len();
                    return;
                }
            }
            let line = self.line;
            let key = self.string();
            self.skip_ws();
            if self.peek() != Some(b':') {
                self.i = self.b.len();
                return;
            }
            self.i += 1;
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if !seen.insert(key.clone()) {
                self.out.push(Duplicate {
                    path: child.clone(),
                    key,
                    line,
                });
            }
            self.value(&child);
        }
    }

    fn array(&mut self, path: &str) {
        self.i += 1;
        let mut index = 0;
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b']') => {
                    self.i += 1;
                    return;
                }
                Some(b',') => {
                    self.i += 1;
                    continue;
                }
                None => return,
                Some(_) => {}
            }
            let before = self.i;
            self.value(&format!("{path}[{index}]"));
            index += 1;
            if self.i == before {
                self.i = self.b.len();
                return;
            }
        }
    }

    fn string(&mut self) -> String {
        let start = self.i;
        self.i += 1;
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    break;
                }
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
        let end = self.i.min(self.b.len());
        serde_json::from_slice::<String>(&self.b[start..end]).unwrap_or_default()
    }

    fn scalar(&mut self) {
        while let Some(c) = self.peek() {
            if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                return;
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_with_their_paths_and_lines() {
        let body = br#"{
  "metadata": {"name": "a", "name": "b"},
  "spec": {
    "ports": [{"port": 1,
               "port": 2}],
    "x": {"y": 1}, "x": 2
  }
}"#;
        let d = duplicates(body);
        assert_eq!(
            d.iter()
                .map(|d| (d.path.as_str(), d.line))
                .collect::<Vec<_>>(),
            [
                ("metadata.name", 2),
                ("spec.ports[0].port", 5),
                ("spec.x", 6)
            ]
        );
        assert_eq!(d[0].json_text(), "duplicate field \"metadata.name\"");
        assert_eq!(d[1].yaml_text(), "line 5: key \"port\" already set in map");
        assert!(duplicates(b"{\"a\": [1, 2, {\"b\": \"\\\"}\"}]}").is_empty());
        assert!(duplicates(b"{\"a\": ").is_empty());
    }

    #[test]
    fn json_patch_operations_with_unknown_or_repeated_keys() {
        let body = br#"[{"op": "add", "path": "/spec/a", "value": 1, "foo": "bar"},
                        {"op": "add", "path": "/spec/b", "path": "/spec/c", "value": 2}]"#;
        assert_eq!(
            json_patch_problems(body),
            [
                "json patch unknown field \"[0].foo\"",
                "json patch duplicate field \"[1].path\""
            ]
        );
    }

    #[test]
    fn directives_and_their_refusal() {
        let q = |v: &str| HashMap::from([("fieldValidation".to_owned(), v.to_owned())]);
        assert_eq!(
            Directive::from_query(&HashMap::new(), "CreateOptions").ok(),
            Some(Directive::Warn)
        );
        assert_eq!(
            Directive::from_query(&q("Strict"), "CreateOptions").ok(),
            Some(Directive::Strict)
        );
        let err = Directive::from_query(&q("Loud"), "PatchOptions")
            .err()
            .map(|e| (e.code, e.message));
        assert_eq!(
            err,
            Some((422, "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"Ignore\", \"Strict\", \"Warn\"".into()))
        );
        assert_eq!(
            warning_header("unknown field \"spec.x\"")
                .map(|h| h.to_str().map(str::to_owned).unwrap_or_default()),
            Some("299 - \"unknown field \\\"spec.x\\\"\"".to_owned())
        );
    }
}
