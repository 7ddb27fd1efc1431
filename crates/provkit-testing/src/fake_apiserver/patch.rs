//! PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902), both through the
//! `json-patch` crate.
//!
//! One difference from RFC 6902 is reproduced by hand: the API server's JSON patch library
//! (evanphx/json-patch, as vendored by kube-apiserver) reads a missing object member as `null`
//! in a `test` operation, so `{"op":"test","path":"/metadata/finalizers","value":null}` — what
//! kube-runtime's finalizer helper sends before its first `add` — succeeds when the object has
//! no finalizers. The `json-patch` crate follows the RFC and fails it.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

/// The PATCH content types the server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    Merge,
    Json,
}

impl PatchKind {
    /// `Some` for the JSON-only types; `None` for apply and strategic merge (415 here).
    pub(crate) fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or_default().trim() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// Why a patch did not apply (the text of the 422 / 400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatchFailure {
    /// The body does not decode.
    Malformed(String),
    /// An operation failed (a `test` that does not hold, a missing path, …).
    Failed(String),
}

/// Applies the patch to `doc` (a copy of the stored object).
pub(crate) fn apply(kind: PatchKind, doc: &mut Value, body: &[u8]) -> Result<(), PatchFailure> {
    match kind {
        PatchKind::Merge => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| PatchFailure::Malformed(e.to_string()))?;
            if !patch.is_object() {
                return Err(PatchFailure::Malformed(
                    "a merge patch must be a JSON object".into(),
                ));
            }
            json_patch::merge(doc, &patch);
            Ok(())
        }
        PatchKind::Json => {
            // Operations are read as the API server's JSON patch library reads them: a repeated
            // key keeps its last value and keys other than op/path/value/from are ignored
            // (`fieldValidation` reports both).
            let mut ops: Value =
                serde_json::from_slice(body).map_err(|e| PatchFailure::Malformed(e.to_string()))?;
            if let Some(list) = ops.as_array_mut() {
                for op in list.iter_mut().filter_map(Value::as_object_mut) {
                    op.retain(|k, _| matches!(k.as_str(), "op" | "path" | "value" | "from"));
                }
            }
            let patch: Patch =
                serde_json::from_value(ops).map_err(|e| PatchFailure::Malformed(e.to_string()))?;
            for op in &patch.0 {
                if let PatchOperation::Test(test) = op
                    && test.value.is_null()
                {
                    test_null(doc, test.path.as_str())?;
                    continue;
                }
                json_patch::patch(doc, std::slice::from_ref(op))
                    .map_err(|e| PatchFailure::Failed(e.to_string()))?;
            }
            Ok(())
        }
    }
}

/// `test` with `value: null`: holds when the member is missing from an existing parent object
/// or is `null`, as kube-apiserver's JSON patch library treats it.
fn test_null(doc: &Value, path: &str) -> Result<(), PatchFailure> {
    if let Some(found) = doc.pointer(path) {
        return if found.is_null() {
            Ok(())
        } else {
            Err(PatchFailure::Failed(format!("testing value {path} failed")))
        };
    }
    let parent = path.rfind('/').map_or("", |i| &path[..i]);
    match doc.pointer(parent) {
        Some(Value::Object(_)) => Ok(()),
        _ => Err(PatchFailure::Failed(format!(
            "test operation does not apply: doc is missing path: {path}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finalizer_helper_first_add_applies_to_an_object_without_finalizers() {
        let mut doc = json!({"metadata": {"name": "a"}});
        let body = br#"[{"op":"test","path":"/metadata/finalizers","value":null},
                        {"op":"add","path":"/metadata/finalizers","value":["f"]}]"#;
        apply(PatchKind::Json, &mut doc, body).unwrap();
        assert_eq!(doc, json!({"metadata": {"name": "a", "finalizers": ["f"]}}));
        // Once a finalizer is there, the same test fails (the helper then retries).
        let again = apply(PatchKind::Json, &mut doc, body);
        assert!(matches!(again, Err(PatchFailure::Failed(_))), "{again:?}");
        // A missing parent is still an error.
        let mut bare = json!({});
        let body = br#"[{"op":"test","path":"/metadata/finalizers","value":null}]"#;
        assert!(apply(PatchKind::Json, &mut bare, body).is_err());
    }

    #[test]
    fn merge_patch_null_removes() {
        let mut doc = json!({"a": 1, "b": {"c": 2}});
        apply(PatchKind::Merge, &mut doc, br#"{"a":null,"b":{"d":3}}"#).unwrap();
        assert_eq!(doc, json!({"b": {"c": 2, "d": 3}}));
    }
}
