//! [`Doc`]: one stored version of an object, kept as the JSON text the server answers with.
//!
//! An object version is written once and never changed, and most of what the server does with
//! it is send it (GET, list pages, watch events) — so it is kept serialized: a watch event or a
//! list page copies bytes instead of serializing a tree, and a version costs its JSON size in
//! memory instead of a `serde_json::Value` tree several times larger (what a 10,000-object
//! fleet run was mostly made of). Writes parse the stored text back into a `Value` to change it.
//! The store, the change history and every reader share one `Arc` per version.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

/// One stored version of an object (with its `apiVersion` and `kind`), shared, never mutated.
#[derive(Debug, Clone)]
pub(crate) struct Doc(Arc<Stored>);

#[derive(Debug)]
struct Stored {
    json: Bytes,
    namespace: Box<str>,
    name: Box<str>,
    api_version: Box<str>,
    kind: Box<str>,
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl Doc {
    /// Serializes `value` (a JSON object) as the stored version.
    pub(crate) fn new(value: &Value) -> Self {
        // Serializing a `Value` cannot fail: its map keys are strings.
        let mut json = serde_json::to_vec(value).unwrap_or_default();
        // `Bytes::from(Vec)` keeps the vector's capacity, and serializing grows it by
        // doubling: every stored version would otherwise hold up to twice its size.
        json.shrink_to_fit();
        Self(Arc::new(Stored {
            json: Bytes::from(json),
            namespace: text(value, "/metadata/namespace").into(),
            name: text(value, "/metadata/name").into(),
            api_version: text(value, "/apiVersion").into(),
            kind: text(value, "/kind").into(),
        }))
    }

    /// The JSON text.
    pub(crate) fn json(&self) -> &Bytes {
        &self.0.json
    }

    /// The object as a `Value` (parsed from the text the store wrote, so it always parses).
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.0.json).unwrap_or(Value::Null)
    }

    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub(crate) fn namespace(&self) -> &str {
        &self.0.namespace
    }

    /// `metadata.name`.
    pub(crate) fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether the stored text says `apiVersion` and `kind` are these.
    pub(crate) fn is_type(&self, api_version: &str, kind: &str) -> bool {
        &*self.0.api_version == api_version && &*self.0.kind == kind
    }

    /// The version's identity, for counting shared versions once.
    pub(crate) fn id(&self) -> *const () {
        Arc::as_ptr(&self.0).cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_keeps_the_fields_it_indexes() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "<&>"}}});
        let d = Doc::new(&v);
        assert_eq!(d.value(), v);
        assert_eq!(d.namespace(), "ns");
        assert!(d.is_type("v1", "ConfigMap"));
        assert!(!d.is_type("v2", "ConfigMap"));
        assert_eq!(d.json().len(), v.to_string().len());
        assert_eq!(d.clone().id(), d.id());
        assert_ne!(Doc::new(&v).id(), d.id());
    }
}
