//! `PATCH` with `application/apply-patch+yaml`: server-side apply requests, and the patch
//! options every patch is checked for.
//!
//! Answers as documented for kube-apiserver (server-side apply page, API concepts "Patch"):
//! `fieldManager` is required (422 `Invalid` on `PatchOptions`), `force` only with apply; the
//! body is YAML or JSON holding the type's `apiVersion` (400 otherwise) and no
//! `managedFields` (400); a field the schema does not declare fails the typed conversion
//! (500, `failed to create typed patch object (…): .spec.x: field not declared in
//! schema`); an apply to a missing object creates it (201); conflicts are 409.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::doc::Doc;
use super::field_validation::{self, Directive, FieldChecks};
use super::meta::meta_str;
use super::resource::ResourceType;
use super::ssa::managers::{self, Managed, ManagerId, Operation};
use super::ssa::{self, Recording, conflict, last_applied, walk};
use super::status::ApiStatus;
use super::store::{Store, Writer};

/// The apply patch content type.
pub(crate) fn is_apply(content_type: &str) -> bool {
    content_type.split(';').next().unwrap_or_default().trim() == "application/apply-patch+yaml"
}

/// The longest field manager name accepted.
const FIELD_MANAGER_MAX: usize = 128;

fn patch_options_invalid(reason: &'static str, field: &str, detail: &str) -> ApiStatus {
    ApiStatus::new(
        422,
        "Invalid",
        format!("PatchOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
    )
    .with_details(json!({
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }))
}

/// The checks on a PATCH's options: `fieldManager` required for apply, `force` forbidden
/// without it, and the manager's length.
pub(crate) fn check_patch_options(
    query: &HashMap<String, String>,
    apply: bool,
) -> Result<(), ApiStatus> {
    let manager = query.get("fieldManager").map_or("", String::as_str);
    if apply && manager.is_empty() {
        return Err(patch_options_invalid(
            "FieldValueRequired",
            "fieldManager",
            "Required value: is required for apply patch",
        ));
    }
    if !apply && query.contains_key("force") {
        return Err(patch_options_invalid(
            "FieldValueForbidden",
            "force",
            "Forbidden: may not be specified for non-apply patch",
        ));
    }
    if manager.len() > FIELD_MANAGER_MAX {
        return Err(patch_options_invalid(
            "FieldValueTooLong",
            "fieldManager",
            &format!("Too long: may not be more than {FIELD_MANAGER_MAX} bytes"),
        ));
    }
    Ok(())
}

/// `group/version, Kind=K` as the server prints a type.
fn gvk(api_version: &str, kind: &str) -> String {
    if api_version.contains('/') {
        format!("{api_version}, Kind={kind}")
    } else {
        format!("/{api_version}, Kind={kind}")
    }
}

/// Parses an apply body (YAML, of which JSON is a part).
fn parse(body: &[u8]) -> Result<Value, ApiStatus> {
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiStatus::bad_request(format!("error decoding YAML: {e}")))?;
    let v: Value = serde_yaml_ng::from_str(text)
        .map_err(|e| ApiStatus::bad_request(format!("error decoding YAML: {e}")))?;
    if !v.is_object() {
        return Err(ApiStatus::bad_request(
            "error decoding YAML: the apply configuration must be an object",
        ));
    }
    Ok(v)
}

/// One apply request.
pub(crate) struct ApplyRequest<'a> {
    pub(crate) rt: &'a ResourceType,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) subresource: Option<&'a str>,
    pub(crate) manager: &'a str,
    pub(crate) force: bool,
    pub(crate) body: &'a [u8],
}

/// Applies the configuration (under the store's lock): the object and 200, or 201 when the
/// apply created it.
pub(crate) fn apply(
    store: &mut Store,
    req: &ApplyRequest<'_>,
    directive: Directive,
) -> Result<(u16, Doc), ApiStatus> {
    let rt = req.rt;
    let config = parse(req.body)?;
    let duplicates = field_validation::duplicates(req.body);
    let api_version = rt.api_version();
    let sent_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if sent_version != api_version {
        return Err(ApiStatus::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {sent_version}, expected: {api_version}"
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiStatus::bad_request("metadata.managedFields must be nil"));
    }
    let sent_kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    let where_ = format!(
        "{}/{}; {}",
        meta_str(&config, "namespace").unwrap_or(req.namespace),
        meta_str(&config, "name").unwrap_or(""),
        gvk(sent_version, sent_kind)
    );
    if sent_kind != rt.kind {
        return Err(ApiStatus::new(
            500,
            "",
            format!(
                "failed to create typed patch object ({where_}): no corresponding type for {}",
                gvk(sent_version, sent_kind)
            ),
        ));
    }
    let root = ssa::root(rt);
    let errors = walk::check(&config, root);
    if !errors.is_empty() {
        let text = if errors.len() == 1 {
            errors[0].clone()
        } else {
            let mut lines = vec!["errors:".to_owned()];
            lines.extend(errors.iter().map(|e| format!("  {e}")));
            lines.join("\n")
        };
        return Err(ApiStatus::new(
            500,
            "",
            format!("failed to create typed patch object ({where_}): {text}"),
        ));
    }
    let live = match store.get(rt, req.namespace, req.name) {
        Ok(doc) => Some(doc.value()),
        Err(s) if s.code == 404 && req.subresource.is_none() => None,
        Err(s) => return Err(s),
    };
    if live.is_none() {
        let named = meta_str(&config, "name").unwrap_or("");
        if named != req.name {
            return Err(ApiStatus::bad_request(format!(
                "the name of the object ({named}) does not match the name on the URL ({})",
                req.name
            )));
        }
    }
    let empty = json!({});
    let mut managed = live
        .as_ref()
        .and_then(|l| l.pointer("/metadata/managedFields"))
        .and_then(|m| Managed::decode(m).ok())
        .unwrap_or_default();
    let id = ManagerId::new(req.manager, Operation::Apply, &api_version, req.subresource);
    let now = store.now();
    let writing = managers::Writing {
        id: &id,
        api_version: &api_version,
        root,
        ignore: ssa::ignore(rt, req.subresource),
        now: &now,
    };
    let live = live.as_ref();
    let target = live.unwrap_or(&empty);
    let mut trial = managed.clone();
    let mut merged = match managers::apply(target, &config, &mut trial, writing, req.force) {
        Ok(merged) => {
            managed = trial;
            merged
        }
        Err(conflicts) if req.manager == last_applied::KUBECTL => {
            // kubectl may take what its last client-side apply set.
            let allowed = last_applied::owned_by_last_apply(target, root, &api_version);
            let rest: managers::Conflicts = conflicts
                .into_iter()
                .filter(|(_, p)| !allowed.as_ref().is_some_and(|a| a.contains(p)))
                .collect();
            if !rest.is_empty() {
                return Err(conflict::status(&rest));
            }
            managers::apply(target, &config, &mut managed, writing, true)
                .map_err(|c| conflict::status(&c))?
        }
        Err(conflicts) => return Err(conflict::status(&conflicts)),
    };
    if req.manager == last_applied::KUBECTL {
        last_applied::refresh(&mut merged, &config);
    }
    let encoded = managed.encode();
    // The body's repeated keys are reported after the merge, as the YAML decoder words them.
    if !duplicates.is_empty() {
        match directive {
            Directive::Strict => return Err(field_validation::strict_apply_error(&duplicates)),
            Directive::Warn => store.warn(
                duplicates
                    .iter()
                    .map(field_validation::Duplicate::yaml_text),
            ),
            Directive::Ignore => {}
        }
    }
    let writer = Writer {
        manager: req.manager,
        subresource: req.subresource,
        recording: Recording::Applied(encoded.as_ref()),
        checks: FieldChecks {
            directive: Directive::Ignore,
            found: &[],
        },
    };
    match live {
        Some(_) => store
            .update(rt, req.namespace, req.name, merged, writer)
            .map(|d| (200, d)),
        None => store
            .create(rt, req.namespace, merged, writer)
            .map(|d| (201, d)),
    }
}
