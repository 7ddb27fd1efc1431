//! Schema validation, defaulting and `fieldValidation` of custom resources. Each test names
//! the rule of the Kubernetes documentation it pins (custom resources task page: "Validation",
//! "Validation rules", "Defaulting", "Field pruning", "Validation ratcheting"; API concepts:
//! "Field validation"; the `JSONSchemaProps` API reference for formats), with the server's
//! messages as its field errors word them.

use http::{Request, StatusCode};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::common::api_err;
use provkit_testing::fake_apiserver::FakeApiServer;

const SERVERS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servers.test.provkit.dev
spec:
  group: test.provkit.dev
  scope: Namespaced
  names: {kind: Server, plural: servers, singular: server}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            x-kubernetes-validations:
            - rule: self.minReplicas <= self.maxReplicas
              message: minReplicas must not exceed maxReplicas
            properties:
              image: {type: string, pattern: '^[a-z0-9./:-]+$', maxLength: 20}
              tier: {type: string, enum: [web, db]}
              minReplicas: {type: integer, minimum: 0, default: 1}
              maxReplicas: {type: integer, maximum: 10, default: 3}
              address: {type: string, format: ipv4}
              port: {x-kubernetes-int-or-string: true}
              note: {type: string, nullable: true}
              tags:
                type: array
                maxItems: 3
                x-kubernetes-list-type: set
                items: {type: string, minLength: 1}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
              mode:
                type: string
                default: fast
                x-kubernetes-validations:
                - rule: self == oldSelf
                  message: mode is immutable
          status:
            type: object
            properties:
              phase: {type: string}
"#;

fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .crd_document(SERVERS)
        .expect("the Server CRD parses")
        .build()
}

fn servers(s: &FakeApiServer) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.provkit.dev", "v1", "Server"),
        "servers",
    );
    Api::namespaced_with(s.client(), "default", &ar)
}

fn object(spec: Value) -> DynamicObject {
    let mut v = json!({"apiVersion": "test.provkit.dev/v1", "kind": "Server",
                       "metadata": {"name": "s"}});
    v["spec"] = spec;
    serde_json::from_value(v).expect("a DynamicObject")
}

fn causes(status: &kube::core::Status) -> Vec<(String, String, String)> {
    status
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .map(|c| (c.reason.clone(), c.field.clone(), c.message.clone()))
        .collect()
}

fn cause(reason: &str, field: &str, message: &str) -> (String, String, String) {
    (reason.to_owned(), field.to_owned(), message.to_owned())
}

/// "Validation": every failing value is one cause of a single 422 `Invalid` (enum, pattern,
/// maxLength, format, numeric bounds, list length and `set` uniqueness, item minLength,
/// int-or-string, required), with the server's message per kind of check; the CEL rules are
/// not evaluated on an object that fails those, which one more cause says.
#[tokio::test]
async fn every_schema_failure_is_one_cause_of_the_422() {
    let s = server();
    let api = servers(&s);
    let err = api_err(
        api.create(
            &PostParams::default(),
            &object(json!({
                "tier": "cache", "image": "Not/Valid/Because/Way/Too/Long", "minReplicas": -1,
                "maxReplicas": 11, "address": "10.0.0", "port": true,
                "tags": ["a", "a", "", "b"]
            })),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let want = [
        cause(
            "FieldValueTypeInvalid",
            "spec.address",
            "Invalid value: \"10.0.0\": spec.address in body must be of type ipv4: \"10.0.0\"",
        ),
        cause(
            "FieldValueTooLong",
            "spec.image",
            "Too long: may not be more than 20 bytes",
        ),
        cause(
            "FieldValueInvalid",
            "spec.image",
            "Invalid value: \"Not/Valid/Because/Way/Too/Long\": spec.image in body should match '^[a-z0-9./:-]+$'",
        ),
        cause(
            "FieldValueInvalid",
            "spec.maxReplicas",
            "Invalid value: 11: spec.maxReplicas in body should be less than or equal to 10",
        ),
        cause(
            "FieldValueInvalid",
            "spec.minReplicas",
            "Invalid value: -1: spec.minReplicas in body should be greater than or equal to 0",
        ),
        cause(
            "FieldValueTypeInvalid",
            "spec.port",
            "Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        ),
        cause(
            "FieldValueInvalid",
            "spec.tags[2]",
            "Invalid value: \"\": spec.tags[2] in body should be at least 1 chars long",
        ),
        cause(
            "FieldValueTooMany",
            "spec.tags",
            "Too many: 4: must have at most 3 items",
        ),
        cause(
            "FieldValueDuplicate",
            "spec.tags[1]",
            "Duplicate value: \"a\"",
        ),
        cause(
            "FieldValueNotSupported",
            "spec.tier",
            "Unsupported value: \"cache\": supported values: \"web\", \"db\"",
        ),
        cause(
            "FieldValueInvalid",
            "<nil>",
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ),
    ];
    assert_eq!(causes(&err), want);
    assert!(
        err.message.starts_with(
            "Server.test.provkit.dev \"s\" is invalid: [spec.address: Invalid value: \"10.0.0\""
        ),
        "{}",
        err.message
    );
    let err = api_err(api.create(&PostParams::default(), &object(json!({}))).await);
    assert_eq!(
        causes(&err),
        [
            cause("FieldValueRequired", "spec.image", "Required value"),
            cause(
                "FieldValueInvalid",
                "<nil>",
                "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ),
        ]
    );
    assert_eq!(
        err.message,
        "Server.test.provkit.dev \"s\" is invalid: [spec.image: Required value, <nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
    assert!(s.objects_json("test.provkit.dev", "servers").is_empty());
}

/// "Defaulting" and "Validation rules": defaults fill missing fields on create (and the CEL
/// rule sees them); a rule's `message` is the cause; `int-or-string`, `nullable` and
/// `x-kubernetes-preserve-unknown-fields` keep what they allow.
#[tokio::test]
async fn defaults_and_cel_rules_on_create() {
    let s = server();
    let api = servers(&s);
    let created = api
        .create(
            &PostParams::default(),
            &object(json!({"image": "nginx", "port": "http", "note": null,
                           "extra": {"anything": {"goes": true}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"image": "nginx", "port": "http", "note": null, "extra": {"anything": {"goes": true}},
               "minReplicas": 1, "maxReplicas": 3, "mode": "fast"})
    );
    let mut bad = object(json!({"image": "nginx", "minReplicas": 5}));
    bad.metadata.name = Some("t".into());
    let err = api_err(api.create(&PostParams::default(), &bad).await);
    assert_eq!(
        causes(&err),
        [cause(
            "FieldValueInvalid",
            "spec",
            "Invalid value: \"object\": minReplicas must not exceed maxReplicas"
        )]
    );
    assert_eq!(
        err.message,
        "Server.test.provkit.dev \"t\" is invalid: spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas"
    );
}

/// "Defaulting" on update and "Transition rules": a field set to `null` (not nullable) takes
/// its default again; a rule using `oldSelf` refuses a change.
#[tokio::test]
async fn defaults_on_update_and_transition_rules() {
    let s = server();
    let api = servers(&s);
    api.create(
        &PostParams::default(),
        &object(json!({"image": "nginx", "maxReplicas": 7})),
    )
    .await
    .unwrap();
    let patched = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxReplicas": null}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["maxReplicas"], 3);
    let err = api_err(
        api.patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"mode": "slow"}})),
        )
        .await,
    );
    assert_eq!(
        causes(&err),
        [cause(
            "FieldValueInvalid",
            "spec.mode",
            "Invalid value: \"string\": mode is immutable"
        )]
    );
}

/// "Validation ratcheting": after a CRD gets stricter, an object stored before keeps its
/// now-invalid value through updates of other fields, but may not change it to another
/// invalid value. "Defaulting": objects read after a CRD gained a default have it.
#[tokio::test]
async fn ratcheting_and_defaults_of_a_newer_crd() {
    let s = server();
    let api = servers(&s);
    api.create(
        &PostParams::default(),
        &object(json!({"image": "nginx", "maxReplicas": 9})),
    )
    .await
    .unwrap();
    let mut stricter: Value = serde_yaml_ng::from_str(SERVERS).unwrap();
    let spec = stricter
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
        .unwrap();
    spec["maxReplicas"]["maximum"] = json!(5);
    spec["zone"] = json!({"type": "string", "default": "eu-1"});
    s.register_crd_json(&stricter).unwrap();
    let read = api.get("s").await.unwrap();
    assert_eq!(
        read.data["spec"]["zone"], "eu-1",
        "read with the new default"
    );
    let patched = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"tier": "web"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["maxReplicas"], 9);
    let err = api_err(
        api.patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxReplicas": 8}})),
        )
        .await,
    );
    assert_eq!(
        causes(&err),
        [cause(
            "FieldValueInvalid",
            "spec.maxReplicas",
            "Invalid value: 8: spec.maxReplicas in body should be less than or equal to 5"
        )]
    );
}

async fn send(
    s: &FakeApiServer,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (StatusCode, Vec<String>, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(axum::body::Body::from(body.to_owned()))
        .expect("a request");
    let resp = s.service().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap_or_default().to_owned())
        .collect();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .expect("a body");
    (
        status,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

const COLLECTION: &str = "/apis/test.provkit.dev/v1/namespaces/default/servers";

const INVALID_BODY: &str = r#"{
  "apiVersion": "test.provkit.dev/v1",
  "kind": "Server",
  "metadata": {"name": "dupename", "name": "s", "unknownMeta": "x"},
  "spec": {
    "image": "nginx",
    "image": "redis",
    "unknown1": "v",
    "tags": ["a"]
  }
}"#;

/// API concepts, "Field validation": without `fieldValidation` (the server's default is
/// `Warn`) and with `Warn`, each duplicate and unknown field is a `Warning` header — duplicates
/// first, then `metadata`'s unknown fields, then the schema's — and the write succeeds with
/// the last value; `Ignore` says nothing; `Strict` refuses with 400 listing them all.
#[tokio::test]
async fn field_validation_of_a_create() {
    let s = server();
    let expected = [
        "299 - \"duplicate field \\\"metadata.name\\\"\"",
        "299 - \"duplicate field \\\"spec.image\\\"\"",
        "299 - \"unknown field \\\"metadata.unknownMeta\\\"\"",
        "299 - \"unknown field \\\"spec.unknown1\\\"\"",
    ];
    for (query, warned) in [
        ("", true),
        ("?fieldValidation=Warn", true),
        ("?fieldValidation=Ignore", false),
    ] {
        let (status, warnings, body) = send(
            &s,
            "POST",
            &format!("{COLLECTION}{query}"),
            "application/json",
            INVALID_BODY,
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["spec"]["image"], "redis");
        assert!(body["metadata"].get("unknownMeta").is_none());
        if warned {
            assert_eq!(warnings, expected, "{query}");
        } else {
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        servers(&s).delete("s", &Default::default()).await.unwrap();
    }
    let (status, _, body) = send(
        &s,
        "POST",
        &format!("{COLLECTION}?fieldValidation=Strict"),
        "application/json",
        INVALID_BODY,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(
        body["message"],
        "Server in version \"v1\" cannot be handled as a Server: strict decoding error: duplicate field \"metadata.name\", duplicate field \"spec.image\", unknown field \"metadata.unknownMeta\", unknown field \"spec.unknown1\""
    );
    let (status, _, body) = send(
        &s,
        "POST",
        &format!("{COLLECTION}?fieldValidation=Loud"),
        "application/json",
        INVALID_BODY,
    )
    .await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"))
    );
}

/// "Field validation" of patches: a merge patch's duplicates and the unknown fields of the
/// result; a JSON patch's unknown or repeated operation keys; an apply's repeated keys as the
/// YAML decoder reports them (by line); a finalizer without a domain is warned about.
#[tokio::test]
async fn field_validation_of_patches_and_apply() {
    let s = server();
    let item = format!("{COLLECTION}/s");
    send(&s, "POST", COLLECTION, "application/json", r#"{"apiVersion":"test.provkit.dev/v1","kind":"Server","metadata":{"name":"s"},"spec":{"image":"nginx"}}"#).await;
    let (status, _, body) = send(
        &s,
        "PATCH",
        &format!("{item}?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"spec": {"tier": "web", "tier": "db", "bogus": 1}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["message"],
        "Server in version \"v1\" cannot be handled as a Server: strict decoding error: duplicate field \"spec.tier\", unknown field \"spec.bogus\""
    );
    let (status, warnings, _) = send(
        &s,
        "PATCH",
        &item,
        "application/json-patch+json",
        r#"[{"op": "add", "path": "/spec/bogus", "value": 1, "foo": "bar"},
            {"op": "add", "path": "/spec/x", "path": "/spec/tier", "value": "web"}]"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        warnings,
        [
            "299 - \"json patch unknown field \\\"[0].foo\\\"\"",
            "299 - \"json patch duplicate field \\\"[1].path\\\"\"",
            "299 - \"unknown field \\\"spec.bogus\\\"\"",
        ]
    );
    let apply_body = "{\n  \"apiVersion\": \"test.provkit.dev/v1\",\n  \"kind\": \"Server\",\n  \"metadata\": {\"name\": \"s\"},\n  \"spec\": {\n    \"tier\": \"web\",\n    \"tier\": \"db\"\n  }\n}";
    let (status, _, body) = send(
        &s,
        "PATCH",
        &format!("{item}?fieldManager=m&force=true&fieldValidation=Strict"),
        "application/apply-patch+yaml",
        apply_body,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["message"],
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"tier\" already set in map"
    );
    let (status, warnings, _) = send(
        &s,
        "PATCH",
        &format!("{item}?fieldManager=m&force=true"),
        "application/apply-patch+yaml",
        apply_body,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        warnings,
        ["299 - \"line 7: key \\\"tier\\\" already set in map\""]
    );
    let (_, warnings, _) = send(
        &s,
        "PATCH",
        &item,
        "application/merge-patch+json",
        r#"{"metadata": {"finalizers": ["cleanup", "example.com/ok"]}}"#,
    )
    .await;
    assert_eq!(
        warnings,
        [
            "299 - \"metadata.finalizers: \\\"cleanup\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\""
        ]
    );
}
