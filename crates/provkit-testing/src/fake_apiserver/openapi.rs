//! OpenAPI v3 documents (`/openapi/v3` and `/openapi/v3/apis/{group}/{version}`,
//! `/openapi/v3/api/v1`), generated from the served types as the "OpenAPI" page of the
//! API concepts describes them, so that `kubectl explain` finds a kind's schema and
//! `kubectl apply` (which looks for the `fieldValidation` parameter of the kind's PATCH
//! operation before it validates on the server instead of on the client) works with
//! validation on.
//!
//! A custom resource's schema is its CRD's `openAPIV3Schema` (named like the server names
//! it, `<reversed group>.<version>.<Kind>`, with `x-kubernetes-group-version-kind`,
//! `apiVersion`, `kind` and a `metadata` reference to `ObjectMeta`); built-in kinds get a
//! permissive schema (the fake does not carry their full schemas).

use serde_json::{Map, Value, json};

use super::resource::ResourceType;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// The document path of a group-version (`api/v1`, `apis/{group}/{version}`).
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The schema name the server gives a kind: the group reversed (`dev.provkit.test`), or
/// `io.k8s.api.<group>` for built-in groups.
fn schema_name(rt: &ResourceType, kind: &str) -> String {
    let prefix = if !rt.custom {
        let g = rt.group.split('.').next().unwrap_or_default();
        if g.is_empty() {
            "io.k8s.api.core".to_owned()
        } else {
            format!("io.k8s.api.{g}")
        }
    } else {
        rt.group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{prefix}.{}.{kind}", rt.version)
}

fn gvk(rt: &ResourceType, kind: &str) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": kind})
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// `/openapi/v3`: each served group-version and where its document is.
pub(crate) fn root(types: &[ResourceType]) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(&str, &str)> = types
        .iter()
        .map(|t| (t.group.as_str(), t.version.as_str()))
        .collect();
    gvs.sort_unstable();
    gvs.dedup();
    for (g, v) in gvs {
        let path = gv_path(g, v);
        let hash = document(types, g, v)
            .map(|d| digest(&d.to_string()))
            .unwrap_or_default();
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// A content hash (FNV-1a, 128 bits as hex) for the document URLs.
fn digest(text: &str) -> String {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in text.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    format!("{h:032X}")
}

/// The document of one group-version; `None` when it is not served.
pub(crate) fn document(types: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let served = super::resource::served_in(types, group, version);
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for rt in served {
        let name = schema_name(rt, &rt.kind);
        let list_name = schema_name(rt, &format!("{}List", rt.kind));
        schemas.insert(name.clone(), kind_schema(rt));
        schemas.insert(
            list_name.clone(),
            json!({
                "description": format!("A list of {}.", rt.kind),
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"allOf": [reference(LIST_META)], "default": {}},
                    "items": {"type": "array", "items": reference(&name)}
                },
                "x-kubernetes-group-version-kind": [gvk(rt, &format!("{}List", rt.kind))]
            }),
        );
        for (path, item) in path_items(rt, &name, &list_name) {
            paths.insert(path, item);
        }
    }
    for (name, schema) in meta_schemas() {
        schemas.insert(name.to_owned(), schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}

/// A kind's schema: the CRD's, or a permissive one for a built-in kind.
fn kind_schema(rt: &ResourceType) -> Value {
    let mut s = match &rt.schema {
        Some(crd) => crd.clone(),
        None => json!({
            "description": format!("{} (the provkit fake does not carry the schema of built-in kinds).", rt.kind),
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true
        }),
    };
    let Some(m) = s.as_object_mut() else {
        return s;
    };
    let props = m
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(p) = props.as_object_mut() {
        p.insert(
            "apiVersion".into(),
            json!({"description": "The versioned schema of this object (group/version).", "type": "string"}),
        );
        p.insert(
            "kind".into(),
            json!({"description": "The kind of this object, in CamelCase.", "type": "string"}),
        );
        p.insert(
            "metadata".into(),
            json!({"allOf": [reference(OBJECT_META)], "default": {}, "description": "Standard object metadata."}),
        );
    }
    m.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([gvk(rt, &rt.kind)]),
    );
    s
}

fn query(name: &str, description: &str, ty: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
}

fn write_parameters(patch: bool) -> Vec<Value> {
    let mut p = vec![
        query(
            "dryRun",
            "Not supported by the provkit fake (400).",
            "string",
        ),
        query(
            "fieldManager",
            "The name of the writer, for managedFields.",
            "string",
        ),
        query(
            "fieldValidation",
            "What to do with unknown or duplicate fields: Ignore, Warn (the default) or Strict.",
            "string",
        ),
    ];
    if patch {
        p.push(query(
            "force",
            "Take fields other managers own (apply only).",
            "boolean",
        ));
    }
    p
}

fn responses(code: &str, schema: &Value) -> Value {
    json!({
        code: {"description": "OK", "content": {"application/json": {"schema": schema}}},
        "401": {"description": "Unauthorized"}
    })
}

fn operation(action: &str, id: &str, rt: &ResourceType, kind: &str, mut op: Value) -> Value {
    op["operationId"] = json!(id);
    op["x-kubernetes-action"] = json!(action);
    op["x-kubernetes-group-version-kind"] = gvk(rt, kind);
    op["tags"] = json!([if rt.group.is_empty() {
        "core_v1".to_owned()
    } else {
        format!("{}_{}", rt.group, rt.version)
    }]);
    op
}

/// The collection, object and status path items of a type.
fn path_items(rt: &ResourceType, name: &str, list_name: &str) -> Vec<(String, Value)> {
    let base = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    let (collection, ns_param) = if rt.namespaced {
        (
            format!("{base}/namespaces/{{namespace}}/{}", rt.plural),
            Some(
                json!({"name": "namespace", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}}),
            ),
        )
    } else {
        (format!("{base}/{}", rt.plural), None)
    };
    let object = reference(name);
    let kind = rt.kind.as_str();
    let mut collection_item = json!({
        "get": operation("list", &format!("list{kind}"), rt, kind, json!({
            "parameters": [query("labelSelector", "Select by labels.", "string"),
                           query("fieldSelector", "Select by fields.", "string"),
                           query("limit", "Page size.", "integer"),
                           query("continue", "The next page.", "string"),
                           query("watch", "Watch instead of listing.", "boolean")],
            "responses": responses("200", &reference(list_name))
        })),
        "post": operation("post", &format!("create{kind}"), rt, kind, json!({
            "parameters": write_parameters(false),
            "requestBody": {"required": true, "content": {"application/json": {"schema": object}}},
            "responses": responses("201", &object)
        })),
    });
    let name_param = json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}});
    let mut item_params = vec![name_param];
    if let Some(p) = &ns_param {
        item_params.push(p.clone());
        collection_item["parameters"] = json!([p]);
    }
    let patch_body = json!({"required": true, "content": {
        "application/apply-patch+yaml": {"schema": reference(PATCH)},
        "application/json-patch+json": {"schema": reference(PATCH)},
        "application/merge-patch+json": {"schema": reference(PATCH)}
    }});
    let item_ops = |suffix: &str| -> Value {
        json!({
            "get": operation("get", &format!("read{kind}{suffix}"), rt, kind, json!({
                "responses": responses("200", &object)
            })),
            "put": operation("put", &format!("replace{kind}{suffix}"), rt, kind, json!({
                "parameters": write_parameters(false),
                "requestBody": {"required": true, "content": {"application/json": {"schema": object}}},
                "responses": responses("200", &object)
            })),
            "patch": operation("patch", &format!("patch{kind}{suffix}"), rt, kind, json!({
                "parameters": write_parameters(true),
                "requestBody": patch_body,
                "responses": responses("200", &object)
            })),
            "parameters": item_params,
        })
    };
    let mut item = item_ops("");
    item["delete"] = operation(
        "delete",
        &format!("delete{kind}"),
        rt,
        kind,
        json!({
            "responses": responses("200", &reference(STATUS))
        }),
    );
    let mut out = vec![
        (collection.clone(), collection_item),
        (format!("{collection}/{{name}}"), item),
    ];
    if rt.status_subresource {
        out.push((format!("{collection}/{{name}}/status"), item_ops("Status")));
    }
    out
}

/// `ObjectMeta`, `ListMeta`, `Status` and `Patch`, which the kinds refer to.
fn meta_schemas() -> Vec<(&'static str, Value)> {
    let string = |d: &str| json!({"type": "string", "description": d});
    let map = |d: &str| json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": d});
    vec![
        (
            OBJECT_META,
            json!({
                "description": "Metadata every persisted object has.",
                "type": "object",
                "properties": {
                    "name": string("The object's name, unique in its namespace."),
                    "generateName": string("A prefix the server completes into a unique name."),
                    "namespace": string("The namespace of a namespaced object."),
                    "uid": string("Set by the server: unique for the object's lifetime."),
                    "resourceVersion": string("Set by the server: the version of this state of the object."),
                    "generation": {"type": "integer", "format": "int64", "description": "Set by the server: changes of the desired state."},
                    "creationTimestamp": {"type": "string", "format": "date-time", "description": "Set by the server: when the object was created."},
                    "deletionTimestamp": {"type": "string", "format": "date-time", "description": "Set by the server: when deletion was requested."},
                    "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
                    "labels": map("Key/value pairs for selecting objects."),
                    "annotations": map("Key/value pairs for tools."),
                    "finalizers": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set", "description": "What must happen before the object goes."},
                    "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"], "description": "The objects this one depends on."},
                    "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "Who manages which fields."}
                }
            }),
        ),
        (
            LIST_META,
            json!({"type": "object", "description": "Metadata of a list.", "properties": {
                "resourceVersion": string("The version of the list."),
                "continue": string("Where the next page starts."),
                "remainingItemCount": {"type": "integer", "format": "int64"}
            }}),
        ),
        (
            STATUS,
            json!({"type": "object", "description": "The outcome of a request that returns no object.",
                   "x-kubernetes-preserve-unknown-fields": true}),
        ),
        (
            PATCH,
            json!({"type": "object", "description": "A patch body."}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types() -> Vec<ResourceType> {
        let crd = json!({"kind": "CustomResourceDefinition", "spec": {
            "group": "test.provkit.dev", "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                              "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}});
        let mut types = ResourceType::builtins();
        types.extend(ResourceType::from_crd(&crd).unwrap_or_default());
        types
    }

    #[test]
    fn the_root_lists_every_group_version_and_its_document() {
        let types = types();
        let root = root(&types);
        let url = root["paths"]["apis/test.provkit.dev/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap_or("");
        assert!(
            url.starts_with("/openapi/v3/apis/test.provkit.dev/v1?hash="),
            "{url}"
        );
        assert!(root["paths"]["api/v1"].is_object());
        assert!(root["paths"]["apis/coordination.k8s.io/v1"].is_object());
    }

    #[test]
    fn a_crd_document_has_the_kind_schema_and_a_patch_operation_with_field_validation() {
        let types = types();
        let doc = document(&types, "test.provkit.dev", "v1").unwrap_or_default();
        let schema = &doc["components"]["schemas"]["dev.provkit.test.v1.Widget"];
        assert_eq!(
            schema["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
        assert_eq!(
            schema["x-kubernetes-group-version-kind"],
            json!([{"group": "test.provkit.dev", "version": "v1", "kind": "Widget"}])
        );
        let patch = &doc["paths"]["/apis/test.provkit.dev/v1/namespaces/{namespace}/widgets/{name}"]
            ["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Widget");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap_or(&Vec::new())
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert!(
            doc["paths"]["/apis/test.provkit.dev/v1/namespaces/{namespace}/widgets/{name}/status"]
                .is_object()
        );
        assert!(document(&types, "nope", "v1").is_none());
    }
}
