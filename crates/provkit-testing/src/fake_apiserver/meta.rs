//! Server-owned object metadata: what the server sets on create and keeps across writes.
//!
//! Rules from the API conventions ("Metadata", "Concurrency Control and Consistency") and the
//! custom-resources page ("Status subresource"): `uid`, `resourceVersion`, `creationTimestamp`,
//! `deletionTimestamp`, `generation` and `managedFields` are the server's; a client value for
//! them is replaced. `generation` starts at 1 and is bumped only by a change outside `metadata`
//! (and outside `status` when the status subresource is enabled).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

use super::resource::ResourceType;

/// The scalar fields of `ObjectMeta` (its map and list fields: [`OBJECT_META_COLLECTIONS`]).
pub(crate) const OBJECT_META_SCALARS: [&str; 10] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The map and list fields of `ObjectMeta`.
pub(crate) const OBJECT_META_COLLECTIONS: [&str; 5] = [
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Whether `field` is a field of `ObjectMeta`.
pub(crate) fn is_object_meta_field(field: &str) -> bool {
    OBJECT_META_SCALARS.contains(&field) || OBJECT_META_COLLECTIONS.contains(&field)
}

/// The fields a client never sets.
const SERVER_OWNED: [&str; 6] = [
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
];

/// RFC 3339 at second precision, as `metav1.Time` is serialised.
pub(crate) fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub(crate) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = ensure_object(obj);
    ensure_object(root.entry("metadata").or_insert(Value::Null))
}

/// Makes `v` an object (replacing any other value) and returns its map.
pub(crate) fn ensure_object(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        // `v` was made an object just above.
        _ => unreachable!("ensure_object: not an object after assignment"),
    }
}

pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Drops every server-owned field a client sent.
pub(crate) fn strip_server_owned(obj: &mut Value) {
    let m = meta_mut(obj);
    for f in SERVER_OWNED {
        m.remove(f);
    }
    m.remove("managedFields");
}

/// The content that decides `generation`: the object without `metadata` (and `status` when the
/// type has the status subresource).
fn generation_content(rt: &ResourceType, obj: &Value) -> Value {
    let mut c = obj.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("metadata");
        o.remove("apiVersion");
        o.remove("kind");
        if rt.status_subresource {
            o.remove("status");
        }
    }
    c
}

pub(crate) fn content_changed(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    generation_content(rt, old) != generation_content(rt, new)
}

/// Copies the server-owned fields of `from` (the stored object) into `to`.
pub(crate) fn keep_server_owned(from: &Value, to: &mut Value) {
    let src = meta(from).cloned().unwrap_or_default();
    let dst = meta_mut(to);
    for f in SERVER_OWNED
        .iter()
        .copied()
        .chain(["managedFields", "name", "namespace"])
    {
        match src.get(f) {
            Some(v) => {
                dst.insert(f.to_owned(), v.clone());
            }
            None => {
                dst.remove(f);
            }
        }
    }
}

/// A lowercase DNS-1123 suffix for `generateName` (the server's alphabet has no vowels).
pub(crate) fn name_suffix(rng: &mut fastrand::Rng) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| char::from(ALPHABET[rng.usize(..ALPHABET.len())]))
        .collect()
}

/// A random RFC 4122 version-4 UID from the server's seeded generator.
pub(crate) fn uid(rng: &mut fastrand::Rng) -> String {
    let a = rng.u128(..);
    let hex = format!("{a:032x}");
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_has_the_uuid_shape() {
        let mut rng = fastrand::Rng::with_seed(1);
        let u = uid(&mut rng);
        let parts: Vec<usize> = u.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{u}");
        assert_ne!(u, uid(&mut rng));
    }
}
