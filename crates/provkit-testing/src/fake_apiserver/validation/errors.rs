//! Field errors as the API server reports them in a 422's `details.causes`: the cause
//! `reason` (`FieldValueInvalid`, …), the field path (`spec.items[0].name`) and the message
//! body (`Invalid value: 0: spec.replicas in body should be greater than or equal to 1`),
//! with values printed as the server's Go code prints them.

use serde_json::Value;

use crate::fake_apiserver::status::Cause;

/// The kind of a field error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Required,
    Invalid,
    TypeInvalid,
    NotSupported,
    Duplicate,
    TooLong,
    TooMany,
    Forbidden,
}

impl Kind {
    fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Duplicate => "FieldValueDuplicate",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Forbidden => "FieldValueForbidden",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Duplicate => "Duplicate value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Forbidden => "Forbidden",
        }
    }

    /// Whether CEL rules are skipped when an error of this kind is found (the server does not
    /// evaluate rules on an object of the wrong shape).
    pub(crate) fn blocks_rules(self) -> bool {
        matches!(
            self,
            Self::NotSupported | Self::Required | Self::TooLong | Self::TooMany | Self::TypeInvalid
        )
    }
}

/// One field error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub(crate) kind: Kind,
    pub(crate) field: String,
    /// The bad value shown in the message (`None`: not shown).
    pub(crate) value: Option<Value>,
    pub(crate) detail: String,
}

impl FieldError {
    pub(crate) fn new(
        kind: Kind,
        field: &str,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.to_owned(),
            value,
            detail: detail.into(),
        }
    }

    /// The message without the field (`ErrorBody` of the server's field errors).
    pub(crate) fn body(&self) -> String {
        let mut s = self.kind.text().to_owned();
        let shows_value = !matches!(self.kind, Kind::Required | Kind::Forbidden | Kind::TooLong);
        if shows_value && let Some(v) = &self.value {
            s.push_str(": ");
            s.push_str(&go_value(v));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    pub(crate) fn cause(&self) -> Cause {
        Cause {
            reason: self.kind.reason(),
            message: self.body(),
            field: self.field.clone(),
        }
    }
}

/// A float as Go's `%v` prints it: the shortest digits, in exponent form (`1e+06`,
/// `1.5e-05`) when the decimal exponent is below -4 or 6 and above.
pub(crate) fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) || f == 0.0 {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// A JSON number as the server prints it (`int64` or `float64`).
pub(crate) fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_float(n.as_f64().unwrap_or(0.0))
    }
}

/// A value as the server prints a field error's bad value: strings quoted, numbers and
/// booleans bare, `null` as `"null"`, lists and maps in Go's `%#v` form.
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        compound => go_syntax(compound),
    }
}

/// Go's `%#v` of a decoded JSON value.
fn go_syntax(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::Array(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_syntax).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        m.get(k).map(go_syntax).unwrap_or_default()
                    )
                })
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// A field path under `base`: `spec.size`, `spec.items[0]`.
pub(crate) fn child(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_owned()
    } else {
        format!("{base}.{key}")
    }
}

pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bodies_and_values_print_as_the_server_prints_them() {
        let e = FieldError::new(
            Kind::Invalid,
            "spec.replicas",
            Some(json!(0)),
            "spec.replicas in body should be greater than or equal to 1",
        );
        assert_eq!(
            e.body(),
            "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
        );
        let e = FieldError::new(
            Kind::TooLong,
            "spec.name",
            Some(json!("abcdef")),
            "may not be more than 5 bytes",
        );
        assert_eq!(e.body(), "Too long: may not be more than 5 bytes");
        let e = FieldError::new(Kind::Required, "spec.cidr", None, "");
        assert_eq!(e.body(), "Required value");
        let e = FieldError::new(
            Kind::NotSupported,
            "spec.c",
            Some(json!("x")),
            "supported values: \"a\", \"b\"",
        );
        assert_eq!(
            e.body(),
            "Unsupported value: \"x\": supported values: \"a\", \"b\""
        );
        assert_eq!(
            go_value(&json!({"name": "a", "port": 80})),
            "map[string]interface {}{\"name\":\"a\", \"port\":80}"
        );
        assert_eq!(go_value(&json!(["a", 1])), "[]interface {}{\"a\", 1}");
        assert_eq!(go_value(&Value::Null), "\"null\"");
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123_456.0), "123456");
        assert_eq!(go_float(1_234_567.0), "1.234567e+06");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(child("", "spec"), "spec");
        assert_eq!(index("spec.items", 2), "spec.items[2]");
    }
}
