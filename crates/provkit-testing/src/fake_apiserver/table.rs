//! Table output: what `kubectl get` asks for (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`)
//! and a real API server answers with a `meta.k8s.io/v1` `Table` whose columns, for a custom
//! resource, are `Name` plus the CRD version's `additionalPrinterColumns` (or `Age` when the CRD
//! declares none), each cell read by the column's JSONPath from the object.
//!
//! As the Kubernetes documentation describes custom resource printer columns: `string` cells
//! are the value as text, `integer` / `number` / `boolean` cells the JSON value, `date` cells
//! the age in kubectl's short form (`45s`, `3m20s`, `5h`, `12d`), a path that finds nothing an
//! empty (`null`) cell, and only the first value a path finds is shown. Rows carry the object's
//! metadata (`includeObject=Metadata`, the default), the whole object (`Object`) or nothing
//! (`None`). Built-in types are served as `Name` and `Age` only (a real server has per-type
//! columns for them), and a watch is never served as a Table. JSONPath evaluation uses the
//! `jsonpath-rust` crate (RFC 9535 syntax, a superset of the paths CRD columns use).

use chrono::{DateTime, Utc};
use jsonpath_rust::JsonPath;
use serde_json::{Value, json};

use super::resource::ResourceType;

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PrinterColumn {
    name: String,
    type_: String,
    format: String,
    description: String,
    priority: i64,
    json_path: String,
}

/// The printer columns of one CRD version (`spec.versions[].additionalPrinterColumns`).
pub(crate) fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let text = |c: &Value, key: &str| {
        c.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .filter(|c| c.get("jsonPath").is_some())
                .map(|c| PrinterColumn {
                    name: text(c, "name"),
                    type_: text(c, "type"),
                    format: text(c, "format"),
                    description: text(c, "description"),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path: text(c, "jsonPath"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a request's `Accept` header asks for: a `meta.k8s.io/v1` Table, or not.
pub(crate) fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|range| {
            let params: Vec<&str> = range.split(';').map(str::trim).collect();
            params.contains(&"as=Table")
                && params.contains(&"v=v1")
                && params.contains(&"g=meta.k8s.io")
        })
    })
}

/// The columns served for `rt`: `Name`, then the printer columns (or `Age`).
fn columns(rt: &ResourceType) -> Vec<PrinterColumn> {
    let name = PrinterColumn {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: "Name must be unique within a namespace.".into(),
        priority: 0,
        json_path: ".metadata.name".into(),
    };
    let mut cols = vec![name];
    if rt.printer_columns.is_empty() {
        cols.push(PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        });
    } else {
        cols.extend(rt.printer_columns.iter().cloned());
    }
    cols
}

/// A `Table` of `objects` (one for a GET, a page for a list) with the list's metadata.
pub(crate) fn table(
    rt: &ResourceType,
    objects: &[Value],
    list_meta: &Value,
    include_object: Option<&str>,
    now: DateTime<Utc>,
) -> Value {
    let cols = columns(rt);
    let definitions: Vec<Value> = cols
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.type_, "format": c.format,
                   "description": c.description, "priority": c.priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let cells: Vec<Value> = cols.iter().map(|c| cell(c, obj, now)).collect();
            let mut row = json!({ "cells": cells });
            match include_object {
                Some("None") => {}
                Some("Object") => row["object"] = obj.clone(),
                _ => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": obj.get("metadata").cloned().unwrap_or_default(),
                    });
                }
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta.clone(),
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// The first value `json_path` finds in `obj`, as a cell of the column's type.
fn cell(col: &PrinterColumn, obj: &Value, now: DateTime<Utc>) -> Value {
    let Some(value) = first_match(obj, &col.json_path) else {
        return Value::Null;
    };
    match col.type_.as_str() {
        "integer" => value.as_i64().map_or(Value::Null, Value::from),
        "number" => value.as_f64().map_or(Value::Null, Value::from),
        "boolean" => value.as_bool().map_or(Value::Null, Value::from),
        "date" => value
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map_or_else(
                || Value::from("<invalid>"),
                |t| Value::from(human_age(now.signed_duration_since(t))),
            ),
        _ => Value::from(match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
    }
}

/// The first value a CRD column's JSONPath (`.status.phase`, `{.spec.x}` or `$.spec.x`) finds.
fn first_match<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let rooted = if path.starts_with('$') {
        path.to_owned()
    } else {
        format!("${path}")
    };
    obj.query(&rooted).ok()?.into_iter().next()
}

/// An age in kubectl's short form: seconds below 2 minutes, then minutes (with seconds below
/// 10 minutes), hours (with minutes below 8 hours), days (with hours below 8 days), years.
fn human_age(age: chrono::TimeDelta) -> String {
    let secs = age.num_seconds();
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    let with = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    let (mins, hours) = (secs / 60, secs / 3600);
    let days = hours / 24;
    match () {
        () if secs < 120 => format!("{secs}s"),
        () if mins < 10 => with(mins, "m", secs % 60, "s"),
        () if mins < 180 => format!("{mins}m"),
        () if hours < 8 => with(hours, "h", mins % 60, "m"),
        () if hours < 48 => format!("{hours}h"),
        () if hours < 24 * 8 => with(days, "d", hours % 24, "h"),
        () if days < 365 * 2 => format!("{days}d"),
        () if days < 365 * 8 => with(days / 365, "y", days % 365, "d"),
        () => format!("{}y", days / 365),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ages_in_kubectls_short_form() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 7 * 60, "5h7m"),
            (47 * 3600, "47h"),
            (3 * 86_400 + 4 * 3600, "3d4h"),
            (30 * 86_400, "30d"),
            (3 * 365 * 86_400 + 86_400, "3y1d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_age(chrono::TimeDelta::seconds(secs)), want, "{secs}s");
        }
    }

    #[test]
    fn accept_headers() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert!(wants_table(Some(kubectl)));
        assert!(!wants_table(Some("application/json")));
        assert!(!wants_table(Some(
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
        )));
        assert!(!wants_table(None));
    }

    #[test]
    fn cells_by_type_and_path() {
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"cores": 4, "on": true, "tags": ["x"]},
            "status": {"conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:03:20Z")
            .unwrap()
            .to_utc();
        let col = |type_: &str, path: &str| PrinterColumn {
            name: "c".into(),
            type_: type_.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        };
        let ready = r#".status.conditions[?(@.type=="Ready")].status"#;
        assert_eq!(cell(&col("string", ready), &obj, now), json!("True"));
        assert_eq!(cell(&col("integer", ".spec.cores"), &obj, now), json!(4));
        assert_eq!(cell(&col("string", ".spec.cores"), &obj, now), json!("4"));
        assert_eq!(cell(&col("boolean", ".spec.on"), &obj, now), json!(true));
        assert_eq!(
            cell(&col("string", ".spec.tags"), &obj, now),
            json!(r#"["x"]"#)
        );
        assert_eq!(
            cell(&col("string", ".status.phase"), &obj, now),
            Value::Null
        );
        let age = col("date", ".metadata.creationTimestamp");
        assert_eq!(cell(&age, &obj, now), json!("3m20s"));
    }
}
