//! kubectl's move from client-side to server-side apply, as the server-side apply reference
//! ("Upgrading from client-side apply to server-side apply") describes the server's part:
//! for the field manager `kubectl` only, an apply may take the fields the object's
//! `kubectl.kubernetes.io/last-applied-configuration` annotation says kubectl set (where
//! they still have those values) without a conflict, and the annotation, when the object
//! has one, is kept equal to the applied configuration.

use serde_json::Value;

use super::path::canonical;
use super::schema::Node;
use super::set::FieldSet;
use super::walk;

/// The annotation client-side apply records the applied configuration in.
pub(crate) const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager whose applies this concerns.
pub(crate) const KUBECTL: &str = "kubectl";

fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The fields kubectl's last client-side apply set that still have the values it set; `None`
/// without an annotation of the same `apiVersion`.
pub(crate) fn owned_by_last_apply(
    live: &Value,
    root: Node<'_>,
    api_version: &str,
) -> Option<FieldSet> {
    let last: Value = serde_json::from_str(annotation(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let mut bare = live.clone();
    if let Some(m) = bare.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    let set = walk::field_set(&last, root);
    let cmp = walk::compare(&last, &bare, root);
    Some(
        set.difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// Sets the annotation of `merged` (when it has one) to the applied configuration, without
/// the annotation itself, as JSON with sorted keys.
pub(crate) fn refresh(merged: &mut Value, config: &Value) {
    if annotation(merged).is_none() {
        return;
    }
    let mut applied = config.clone();
    if let Some(a) = applied
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(ANNOTATION);
    }
    let text = canonical(&applied);
    if let Some(a) = merged
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.insert(ANNOTATION.to_owned(), Value::String(text));
    }
}
