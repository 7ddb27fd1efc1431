//! What server-side apply needs to know of a type's schema: which objects are structs (named
//! fields) or maps, which are atomic, and how each list merges.
//!
//! Custom resources are read from the CRD's structural `openAPIV3Schema`
//! (`x-kubernetes-list-type` — `atomic` by default for CRDs —, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`, `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-embedded-resource`); `metadata` is `ObjectMeta` (labels and annotations
//! granular maps, `finalizers` a set, `ownerReferences` a map keyed by `uid`). The built-in
//! kinds the fake serves have no schema here: their top-level fields are named, `data`,
//! `binaryData` and `stringData` are maps, and anything deeper is untyped (objects granular,
//! lists atomic), as the server treats fields it has no schema for.

use serde_json::Value;

/// A position in a type's schema.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a> {
    /// An object's root: the CRD's root schema, or `None` for a built-in kind.
    Root(Option<&'a Value>),
    /// A node of a CRD's `openAPIV3Schema`.
    Crd(&'a Value),
    /// `ObjectMeta` (also under `x-kubernetes-embedded-resource`).
    Meta,
    /// An item of `metadata.ownerReferences`.
    OwnerRef,
    /// A top-level struct of a built-in kind (`spec`, `status`, `involvedObject`, …).
    BuiltinStruct,
    /// No schema: objects are granular maps, arrays atomic lists, anything else a scalar.
    Untyped,
    /// A scalar.
    Scalar,
    /// A granular map of scalars (labels, annotations).
    ScalarMap,
    /// A set of scalars (finalizers).
    ScalarSet,
    /// An atomic list (managedFields).
    AtomicList,
}

/// How a list merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// A set of scalars, items by value.
    Set,
    /// Items by their key fields.
    Map(Vec<String>),
}

/// How a value at a node behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    Scalar,
    /// An object; `atomic` when it is replaced as a whole.
    Map {
        atomic: bool,
    },
    List(ListKind),
}

fn untyped_shape(v: Option<&Value>) -> Shape {
    match v {
        Some(Value::Object(_)) => Shape::Map { atomic: false },
        Some(Value::Array(_)) => Shape::List(ListKind::Atomic),
        _ => Shape::Scalar,
    }
}

fn truthy(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

const OWNER_REF_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// Top-level fields of the built-in kinds that are maps (their keys are not named fields).
const BUILTIN_MAPS: [&str; 3] = ["data", "binaryData", "stringData"];

/// A field looked up in a node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field<'a> {
    pub(crate) node: Node<'a>,
    /// A declared field of a struct (rather than a key of a map).
    pub(crate) named: bool,
}

impl<'a> Node<'a> {
    /// The shape of a value here (`v` decides where the schema does not).
    pub(crate) fn shape(&self, v: Option<&Value>) -> Shape {
        match self {
            Self::Root(_) | Self::Meta | Self::OwnerRef | Self::BuiltinStruct | Self::ScalarMap => {
                Shape::Map { atomic: false }
            }
            Self::Scalar => Shape::Scalar,
            Self::ScalarSet => Shape::List(ListKind::Set),
            Self::AtomicList => Shape::List(ListKind::Atomic),
            Self::Untyped => untyped_shape(v),
            Self::Crd(s) => crd_shape(s, v),
        }
    }

    /// The field `name` of an object here; `None` when the schema does not declare it (and
    /// does not preserve unknown fields).
    pub(crate) fn field(&self, name: &str) -> Option<Field<'a>> {
        let named = |node| Some(Field { node, named: true });
        match self {
            Self::Root(schema) => match name {
                "apiVersion" | "kind" => named(Self::Scalar),
                "metadata" => named(Self::Meta),
                _ => match schema {
                    Some(s) => Self::Crd(s).field(name),
                    None if BUILTIN_MAPS.contains(&name) => named(Self::Untyped),
                    None => named(Self::BuiltinStruct),
                },
            },
            Self::Meta => match name {
                "labels" | "annotations" => named(Self::ScalarMap),
                "finalizers" => named(Self::ScalarSet),
                "ownerReferences" => named(Self::Crd(&OWNER_REFS)),
                "managedFields" => named(Self::AtomicList),
                n if crate::fake_apiserver::meta::OBJECT_META_SCALARS.contains(&n) => {
                    named(Self::Scalar)
                }
                _ => None,
            },
            Self::OwnerRef => OWNER_REF_FIELDS.contains(&name).then_some(Field {
                node: Self::Scalar,
                named: true,
            }),
            Self::BuiltinStruct => named(Self::Untyped),
            Self::Untyped => Some(Field {
                node: Self::Untyped,
                named: false,
            }),
            Self::ScalarMap => Some(Field {
                node: Self::Scalar,
                named: false,
            }),
            Self::Scalar | Self::ScalarSet | Self::AtomicList => None,
            Self::Crd(s) => crd_field(s, name),
        }
    }

    /// The node of a list's items.
    pub(crate) fn item(&self) -> Self {
        match self {
            Self::Crd(s) if std::ptr::eq(*s, &*OWNER_REFS) => Self::OwnerRef,
            Self::Crd(s) => match s.get("items") {
                Some(items) => Self::Crd(items),
                None => Self::Untyped,
            },
            Self::ScalarSet => Self::Scalar,
            _ => Self::Untyped,
        }
    }

    /// The schema default of a list-map key field of this list's items, if any.
    pub(crate) fn key_default(&self, key: &str) -> Option<Value> {
        match self.item() {
            Self::Crd(items) => items
                .pointer(&format!("/properties/{key}/default"))
                .cloned(),
            _ => None,
        }
    }
}

/// The schema of `metadata.ownerReferences`: a list map keyed by `uid`.
static OWNER_REFS: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    serde_json::json!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["uid"]
    })
});

fn crd_shape(s: &Value, v: Option<&Value>) -> Shape {
    if truthy(s, "x-kubernetes-int-or-string") {
        return Shape::Scalar;
    }
    match s.get("type").and_then(Value::as_str) {
        Some("object") => Shape::Map {
            atomic: s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
        },
        Some("array") => Shape::List(
            match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => ListKind::Set,
                Some("map") => ListKind::Map(
                    s.get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|keys| {
                            keys.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                _ => ListKind::Atomic,
            },
        ),
        Some(_) => Shape::Scalar,
        None => untyped_shape(v),
    }
}

fn crd_field<'a>(s: &'a Value, name: &str) -> Option<Field<'a>> {
    if truthy(s, "x-kubernetes-embedded-resource") {
        match name {
            "apiVersion" | "kind" => {
                return Some(Field {
                    node: Node::Scalar,
                    named: true,
                });
            }
            "metadata" => {
                return Some(Field {
                    node: Node::Meta,
                    named: true,
                });
            }
            _ => {}
        }
    }
    if let Some(p) = s.get("properties").and_then(|p| p.get(name)) {
        return Some(Field {
            node: Node::Crd(p),
            named: true,
        });
    }
    if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
        return Some(Field {
            node: Node::Crd(a),
            named: false,
        });
    }
    let open = truthy(s, "x-kubernetes-preserve-unknown-fields")
        || s.get("additionalProperties").and_then(Value::as_bool) == Some(true)
        || (s.get("type").is_none() && s.get("properties").is_none());
    open.then_some(Field {
        node: Node::Untyped,
        named: false,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn crd_lists_default_to_atomic_and_maps_to_granular() {
        let s = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["port"],
                          "items": {"type": "object", "properties": {"port": {"type": "integer", "default": 80}}}},
                "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }});
        let root = Node::Root(Some(&s));
        let spec = root.field("spec").unwrap();
        assert!(spec.named);
        let shape = |n: &str| spec.node.field(n).unwrap().node.shape(None);
        assert_eq!(shape("tags"), Shape::List(ListKind::Atomic));
        assert_eq!(shape("set"), Shape::List(ListKind::Set));
        assert_eq!(
            shape("ports"),
            Shape::List(ListKind::Map(vec!["port".into()]))
        );
        assert_eq!(shape("sel"), Shape::Map { atomic: true });
        assert!(spec.node.field("nope").is_none());
        let labels = spec.node.field("labels").unwrap().node;
        assert!(!labels.field("any").unwrap().named);
        let free = spec.node.field("free").unwrap().node;
        assert!(free.field("anything").is_some());
        assert_eq!(
            spec.node.field("ports").unwrap().node.key_default("port"),
            Some(json!(80))
        );
        let meta = root.field("metadata").unwrap().node;
        assert_eq!(
            meta.field("finalizers").unwrap().node.shape(None),
            Shape::List(ListKind::Set)
        );
        let owners = meta.field("ownerReferences").unwrap().node;
        assert_eq!(
            owners.shape(None),
            Shape::List(ListKind::Map(vec!["uid".into()]))
        );
        assert!(owners.item().field("uid").is_some());
        assert!(meta.field("bogus").is_none());
        let builtin = Node::Root(None);
        assert!(
            !builtin
                .field("data")
                .unwrap()
                .node
                .field("k")
                .unwrap()
                .named
        );
        assert!(
            builtin
                .field("spec")
                .unwrap()
                .node
                .field("holderIdentity")
                .unwrap()
                .named
        );
    }
}
