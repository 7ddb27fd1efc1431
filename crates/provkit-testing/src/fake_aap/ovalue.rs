//! An order-preserving JSON value, Python-style `json.dumps` output and AWX's
//! `extra_vars` parsing rules (JSON object, or a string holding JSON or YAML that is a mapping).

use std::fmt::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their keys in insertion order.
///
/// AWX stores `extra_vars` as the text Python's `json.dumps` produces, which keeps the key order
/// of the request. `serde_json::Value` sorts keys (without `preserve_order`), so the fake uses
/// this small type for everything that is echoed back verbatim.
#[derive(Clone, Debug, PartialEq)]
pub enum OValue {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, kept as serde_json parsed it.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<OValue>),
    /// An object, keys in insertion order (a later duplicate key replaces the value in place).
    Object(OMap),
}

/// An insertion-ordered map of JSON keys to values.
pub type OMap = Vec<(String, OValue)>;

/// Inserts or replaces `key` keeping the first position (Python `dict` semantics).
pub(crate) fn omap_insert(map: &mut OMap, key: String, value: OValue) {
    if let Some(slot) = map.iter_mut().find(|(k, _)| *k == key) {
        slot.1 = value;
    } else {
        map.push((key, value));
    }
}

/// Looks a key up in an ordered map.
pub(crate) fn omap_get<'a>(map: &'a OMap, key: &str) -> Option<&'a OValue> {
    map.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

impl OValue {
    /// Python's `type(x).__name__` for this value (used in AWX error texts).
    pub(crate) fn py_type(&self) -> &'static str {
        match self {
            OValue::Null => "NoneType",
            OValue::Bool(_) => "bool",
            OValue::Number(n) if n.is_f64() => "float",
            OValue::Number(_) => "int",
            OValue::String(_) => "str",
            OValue::Array(_) => "list",
            OValue::Object(_) => "dict",
        }
    }

    /// Converts to a `serde_json::Value` (key order then follows serde_json's map).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            OValue::Null => serde_json::Value::Null,
            OValue::Bool(b) => serde_json::Value::Bool(*b),
            OValue::Number(n) => serde_json::Value::Number(n.clone()),
            OValue::String(s) => serde_json::Value::String(s.clone()),
            OValue::Array(a) => serde_json::Value::Array(a.iter().map(OValue::to_json).collect()),
            OValue::Object(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// Python `str()` of the value (as AWX interpolates it into messages).
    pub(crate) fn py_str(&self) -> String {
        match self {
            OValue::String(s) => s.clone(),
            other => other.py_repr(),
        }
    }

    /// Python `repr()` of the value.
    pub(crate) fn py_repr(&self) -> String {
        match self {
            OValue::Null => "None".to_owned(),
            OValue::Bool(true) => "True".to_owned(),
            OValue::Bool(false) => "False".to_owned(),
            OValue::Number(n) => n.to_string(),
            OValue::String(s) => py_repr_str(s),
            OValue::Array(a) => {
                let items: Vec<String> = a.iter().map(OValue::py_repr).collect();
                format!("[{}]", items.join(", "))
            }
            OValue::Object(m) => {
                let items: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}: {}", py_repr_str(k), v.py_repr()))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    /// Python `json.dumps(value)` with default arguments: `", "` / `": "` separators,
    /// non-ASCII escaped as `\uXXXX`, key order kept.
    pub fn py_dumps(&self) -> String {
        let mut out = String::new();
        self.write_py(&mut out);
        // Grown by doubling: a stored job's text would otherwise keep up to twice its length.
        out.shrink_to_fit();
        out
    }

    fn write_py(&self, out: &mut String) {
        match self {
            OValue::Null => out.push_str("null"),
            OValue::Bool(true) => out.push_str("true"),
            OValue::Bool(false) => out.push_str("false"),
            OValue::Number(n) => {
                let _ = write!(out, "{n}");
            }
            OValue::String(s) => write_py_str(s, out),
            OValue::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_py(out);
                }
                out.push(']');
            }
            OValue::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_py_str(k, out);
                    out.push_str(": ");
                    v.write_py(out);
                }
                out.push('}');
            }
        }
    }

    /// Converts a YAML value; `None` when it holds something JSON cannot represent.
    pub(crate) fn from_yaml(value: &serde_yaml_ng::Value) -> Option<OValue> {
        use serde_yaml_ng::Value as Y;
        Some(match value {
            Y::Null => OValue::Null,
            Y::Bool(b) => OValue::Bool(*b),
            Y::Number(n) => {
                if let Some(i) = n.as_i64() {
                    OValue::Number(i.into())
                } else if let Some(u) = n.as_u64() {
                    OValue::Number(u.into())
                } else {
                    OValue::Number(serde_json::Number::from_f64(n.as_f64()?)?)
                }
            }
            Y::String(s) => OValue::String(s.clone()),
            Y::Sequence(seq) => {
                OValue::Array(seq.iter().map(OValue::from_yaml).collect::<Option<_>>()?)
            }
            Y::Mapping(map) => {
                let mut out = OMap::new();
                for (k, v) in map {
                    let key = match k {
                        Y::String(s) => s.clone(),
                        Y::Number(n) => n.to_string(),
                        Y::Bool(b) => if *b { "true" } else { "false" }.to_owned(),
                        Y::Null => "null".to_owned(),
                        _ => return None,
                    };
                    omap_insert(&mut out, key, OValue::from_yaml(v)?);
                }
                OValue::Object(out)
            }
            Y::Tagged(t) => OValue::from_yaml(&t.value)?,
        })
    }

    /// Converts from a `serde_json::Value` (object key order as serde_json iterates it).
    pub fn from_json(value: &serde_json::Value) -> OValue {
        match value {
            serde_json::Value::Null => OValue::Null,
            serde_json::Value::Bool(b) => OValue::Bool(*b),
            serde_json::Value::Number(n) => OValue::Number(n.clone()),
            serde_json::Value::String(s) => OValue::String(s.clone()),
            serde_json::Value::Array(a) => OValue::Array(a.iter().map(OValue::from_json).collect()),
            serde_json::Value::Object(m) => OValue::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), OValue::from_json(v)))
                    .collect(),
            ),
        }
    }
}

fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn write_py_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl<'de> Deserialize<'de> for OValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OValueVisitor)
    }
}

struct OValueVisitor;

impl<'de> Visitor<'de> for OValueVisitor {
    type Value = OValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<OValue, E> {
        Ok(OValue::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<OValue, E> {
        Ok(OValue::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<OValue, E> {
        Ok(OValue::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<OValue, E> {
        Ok(serde_json::Number::from_f64(v).map_or(OValue::Null, OValue::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<OValue, E> {
        Ok(OValue::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<OValue, E> {
        Ok(OValue::String(v))
    }
    fn visit_unit<E>(self) -> Result<OValue, E> {
        Ok(OValue::Null)
    }
    fn visit_none<E>(self) -> Result<OValue, E> {
        Ok(OValue::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<OValue, D::Error> {
        OValue::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OValue, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(OValue::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OValue, A::Error> {
        let mut out = OMap::new();
        while let Some((k, v)) = map.next_entry::<String, OValue>()? {
            omap_insert(&mut out, k, v);
        }
        Ok(OValue::Object(out))
    }
}

/// Parses `extra_vars` the way AWX's `parse_yaml_or_json(..., silent_failure=False)` does.
///
/// Returns the mapping, or the exact AWX error text for the `extra_vars` field.
pub(crate) fn parse_extra_vars(value: &OValue) -> Result<OMap, String> {
    match value {
        OValue::Object(m) => Ok(m.clone()),
        OValue::String(s) => parse_extra_vars_str(s),
        other => {
            let t = other.py_type();
            Err(format!(
                "Cannot parse as JSON (error: the JSON object must be str, bytes or bytearray, not {t}) or YAML (error: '{t}' object has no attribute 'read')."
            ))
        }
    }
}

/// Parses a string holding JSON or YAML into a mapping (AWX rules; `""`, blank and `---` are empty).
pub(crate) fn parse_extra_vars_str(s: &str) -> Result<OMap, String> {
    if s == "\"\"" || s.trim().is_empty() {
        return Ok(OMap::new());
    }
    let json_err = match serde_json::from_str::<OValue>(s) {
        Ok(OValue::Object(m)) => return Ok(m),
        Ok(other) => format!("Input type `{}` is not a dictionary", other.py_type()),
        Err(e) => crate::fake_aap::pyjson::python_json_error(s).unwrap_or_else(|| e.to_string()),
    };
    let yaml_err = match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(s) {
        Ok(serde_yaml_ng::Value::Null) => return Ok(OMap::new()),
        Ok(v) => match OValue::from_yaml(&v) {
            Some(OValue::Object(m)) => return Ok(m),
            Some(other) => format!("Input type `{}` is not a dictionary", other.py_type()),
            None => "value is not compatible with JSON".to_owned(),
        },
        Err(e) => e.to_string(),
    };
    Err(format!(
        "Cannot parse as JSON (error: {json_err}) or YAML (error: {yaml_err})."
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn dumps_like_python() {
        let v: OValue = serde_json::from_str(
            r#"{"network_name":"net-a","cidr":"10.0.0.0/24","n":[1,2.5,true,null],"é":"ü"}"#,
        )
        .unwrap();
        assert_eq!(
            v.py_dumps(),
            r#"{"network_name": "net-a", "cidr": "10.0.0.0/24", "n": [1, 2.5, true, null], "\u00e9": "\u00fc"}"#
        );
        // Stored with every job: no spare capacity from growing the text.
        let text = v.py_dumps();
        assert_eq!(text.capacity(), text.len());
    }

    #[test]
    fn extra_vars_rules() {
        let list: OValue = serde_json::from_str("[1,2]").unwrap();
        assert_eq!(
            parse_extra_vars(&list).unwrap_err(),
            "Cannot parse as JSON (error: the JSON object must be str, bytes or bytearray, not list) or YAML (error: 'list' object has no attribute 'read')."
        );
        for empty in ["", "  ", "---", "\"\""] {
            assert_eq!(
                parse_extra_vars_str(empty).unwrap(),
                OMap::new(),
                "{empty:?}"
            );
        }
        let yaml = parse_extra_vars_str("b: 1\na: two\n").unwrap();
        assert_eq!(OValue::Object(yaml).py_dumps(), r#"{"b": 1, "a": "two"}"#);
        assert!(
            parse_extra_vars_str("[1, 2]")
                .unwrap_err()
                .contains("Input type `list` is not a dictionary")
        );
        assert!(parse_extra_vars_str("just text").is_err());
    }
}
