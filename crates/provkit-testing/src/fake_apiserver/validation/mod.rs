//! Admission of a custom resource as the API server does it on create, update, patch and
//! apply: pruning of unknown fields ([`super::prune`]), defaulting ([`defaults`]), OpenAPI
//! value validation ([`schema`], with [`formats`]) and CEL rules ([`rules`]), every failure a
//! `details.causes` entry of one 422 ([`errors`]).
//!
//! As on the server, CEL rules are not evaluated when the object already fails a check of
//! its shape (a type, a required field, an enum, a length or count); a cause says so instead.

pub(crate) mod defaults;
pub(crate) mod errors;
pub(crate) mod formats;
pub(crate) mod rules;
pub(crate) mod schema;

use serde_json::Value;

use self::errors::{FieldError, Kind};
use super::prune;
use super::status::Cause;

/// What admission found: the unknown fields it dropped (for `fieldValidation`) and the
/// validation failures.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    pub(crate) unknown: Vec<String>,
    pub(crate) causes: Vec<Cause>,
}

/// Drops the fields `ObjectMeta` does not have; their paths.
pub(crate) fn prune_meta(obj: &mut Value) -> Vec<String> {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Vec::new();
    };
    let unknown: Vec<String> = meta
        .keys()
        .filter(|k| !super::meta::is_object_meta_field(k))
        .cloned()
        .collect();
    for k in &unknown {
        meta.remove(k);
    }
    unknown
        .into_iter()
        .map(|k| format!("metadata.{k}"))
        .collect()
}

/// Prunes, defaults and validates `obj` against the CRD schema `schema`; `old` is the stored
/// object on an update (for transition rules and ratcheting). Unknown fields are listed as
/// the server lists them: `metadata`'s first, then the schema's in path order.
pub(crate) fn admit(obj: &mut Value, old: Option<&Value>, schema: &Value) -> Admitted {
    let mut unknown = prune_meta(obj);
    let mut pruned = prune::prune(obj, schema);
    pruned.sort();
    unknown.extend(pruned);
    defaults::apply(obj, schema);
    let mut errs: Vec<FieldError> = Vec::new();
    schema::validate(obj, old, schema, "", &mut errs);
    if errs.iter().any(|e| e.kind.blocks_rules()) {
        errs.push(FieldError::new(
            Kind::Invalid,
            "<nil>",
            Some(Value::Null),
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
    } else {
        rules::validate(obj, old, schema, "", &mut errs);
    }
    Admitted {
        unknown,
        causes: errs.iter().map(FieldError::cause).collect(),
    }
}

/// Finalizer names the server warns about when a write adds them: not domain-qualified
/// (no `/`) and not one of Kubernetes' own (`kubernetes`, `orphan`, `foregroundDeletion`).
pub(crate) fn finalizer_warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let names = |o: &Value| -> Vec<String> {
        o.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = old.map(names).unwrap_or_default();
    names(obj)
        .into_iter()
        .filter(|f| {
            !before.contains(f)
                && !f.contains('/')
                && !matches!(f.as_str(), "kubernetes" | "orphan" | "foregroundDeletion")
        })
        .map(|f| {
            format!(
                "metadata.finalizers: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                Value::String(f)
            )
        })
        .collect()
}
