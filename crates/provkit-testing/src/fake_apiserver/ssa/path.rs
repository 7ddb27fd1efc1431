//! Field paths as server-side apply names them: the path elements of `fieldsV1` keys
//! (`f:name`, `k:{"name":"a"}`, `v:"x"`, `i:0`) and their human-readable form in conflict
//! messages (`.spec.ports[port=80,protocol="TCP"].name`).

use std::fmt::{self, Write as _};

use serde_json::Value;

/// One step of a field path.
///
/// The derived order (field names, then keys, then set values, then indices) is the order
/// in which the API server lists fields.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// A field of an object (`f:`).
    Field(String),
    /// An item of a list of `x-kubernetes-list-type: map`, by its key fields (`k:`): the
    /// canonical JSON of an object holding the key fields.
    Key(String),
    /// An item of a list of `x-kubernetes-list-type: set`, by its value (`v:`): canonical
    /// JSON.
    Value(String),
    /// An item of a list by position (`i:`).
    Index(usize),
}

/// A path from the object's root.
pub(crate) type Path = Vec<PathElement>;

/// JSON text of `v` with object keys sorted at every depth, so equal values have one text.
pub(crate) fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(child) = m.get(k) {
                    write_canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A value as the API server prints it inside a path: strings quoted, numbers and booleans
/// bare, lists in brackets.
fn human(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                human(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                let _ = write!(out, "{k}=");
                if let Some(child) = m.get(k) {
                    human(child, out);
                }
            }
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

impl PathElement {
    /// The element for a list-map item with these key fields (name, value).
    pub(crate) fn key(fields: &[(&str, &Value)]) -> Self {
        let object: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).clone()))
            .collect();
        Self::Key(canonical(&Value::Object(object)))
    }

    /// The element for a set item.
    pub(crate) fn value(v: &Value) -> Self {
        Self::Value(canonical(v))
    }

    /// The `fieldsV1` key (`f:name`, `k:{…}`, `v:…`, `i:N`).
    pub(crate) fn encode(&self) -> String {
        match self {
            Self::Field(name) => format!("f:{name}"),
            Self::Key(key) => format!("k:{key}"),
            Self::Value(v) => format!("v:{v}"),
            Self::Index(i) => format!("i:{i}"),
        }
    }

    /// Reads a `fieldsV1` key; `None` when it is not one.
    pub(crate) fn decode(s: &str) -> Option<Self> {
        let (kind, rest) = (s.get(..2)?, s.get(2..)?);
        match kind {
            "f:" => Some(Self::Field(rest.to_owned())),
            "k:" => {
                let v: Value = serde_json::from_str(rest).ok()?;
                v.is_object().then(|| Self::Key(canonical(&v)))
            }
            "v:" => {
                let v: Value = serde_json::from_str(rest).ok()?;
                Some(Self::Value(canonical(&v)))
            }
            "i:" => rest.parse().ok().map(Self::Index),
            _ => None,
        }
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(name) => write!(f, ".{name}"),
            Self::Key(key) => {
                let v: Value = serde_json::from_str(key).unwrap_or(Value::Null);
                let mut parts = Vec::new();
                if let Value::Object(m) = &v {
                    let mut keys: Vec<&String> = m.keys().collect();
                    keys.sort();
                    for k in keys {
                        let mut s = format!("{k}=");
                        if let Some(child) = m.get(k) {
                            human(child, &mut s);
                        }
                        parts.push(s);
                    }
                }
                write!(f, "[{}]", parts.join(","))
            }
            Self::Value(v) => {
                let v: Value = serde_json::from_str(v).unwrap_or(Value::Null);
                let mut s = String::new();
                human(&v, &mut s);
                write!(f, "[={s}]")
            }
            Self::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as the API server prints it: `.spec.ports[port=80].name`.
pub(crate) fn display(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_encode_decode_and_print_like_the_api_server() {
        let pe = PathElement::key(&[("protocol", &json!("TCP")), ("port", &json!(80))]);
        assert_eq!(pe.encode(), r#"k:{"port":80,"protocol":"TCP"}"#);
        assert_eq!(PathElement::decode(&pe.encode()), Some(pe.clone()));
        assert_eq!(pe.to_string(), r#"[port=80,protocol="TCP"]"#);
        let v = PathElement::value(&json!("a"));
        assert_eq!(
            (v.encode().as_str(), v.to_string().as_str()),
            (r#"v:"a""#, r#"[="a"]"#)
        );
        let path = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            pe,
            PathElement::Field("name".into()),
        ];
        assert_eq!(
            display(&path),
            r#".spec.ports[port=80,protocol="TCP"].name"#
        );
        assert_eq!(PathElement::decode("i:3"), Some(PathElement::Index(3)));
        assert_eq!(PathElement::decode("x:3"), None);
        assert_eq!(
            canonical(&json!({"b": 1, "a": [{"d": 1, "c": 2}]})),
            r#"{"a":[{"c":2,"d":1}],"b":1}"#
        );
    }
}
