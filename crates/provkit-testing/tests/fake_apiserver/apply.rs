//! Server-side apply and field management. Each test names the rule of the Kubernetes
//! documentation it pins ("Server-Side Apply" reference page: Field management, Conflicts,
//! Merge strategy, Using Server-Side Apply in a controller; API concepts: Patch; the
//! `ManagedFieldsEntry` and `PatchOptions` API reference).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use super::common::{Widget, api_err, builder, widget};
use provkit_testing::fake_apiserver::{FakeApiServer, Verb};

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.test.provkit.dev
spec:
  group: test.provkit.dev
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget}
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
            properties:
              replicas: {type: integer}
              image: {type: string}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              args: {type: array, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    name: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              env:
                type: object
                additionalProperties: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"#;

fn server() -> FakeApiServer {
    builder()
        .crd_document(GADGETS)
        .expect("the Gadget CRD parses")
        .build()
}

fn gadgets(s: &FakeApiServer) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.provkit.dev", "v1", "Gadget"),
        "gadgets",
    );
    Api::namespaced_with(s.client(), "default", &ar)
}

fn gadget(spec: Value) -> Value {
    let mut g = json!({"apiVersion": "test.provkit.dev/v1", "kind": "Gadget",
                       "metadata": {"name": "g"}});
    g["spec"] = spec;
    g
}

async fn apply(
    api: &Api<DynamicObject>,
    manager: &str,
    force: bool,
    body: Value,
) -> Result<DynamicObject, kube::Error> {
    let mut pp = PatchParams::apply(manager);
    pp.force = force;
    api.patch("g", &pp, &Patch::Apply(body)).await
}

/// `metadata.managedFields` as JSON, entries without their `time`.
fn managed(o: &DynamicObject) -> Vec<Value> {
    let mut v = serde_json::to_value(&o.metadata.managed_fields).unwrap_or(Value::Null);
    if let Some(list) = v.as_array_mut() {
        for e in list.iter_mut().filter_map(Value::as_object_mut) {
            e.remove("time");
        }
        return list.clone();
    }
    Vec::new()
}

fn entry(o: &DynamicObject, manager: &str) -> Value {
    managed(o)
        .into_iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry for {manager}: {:?}", managed(o)))
}

/// "Field management": an apply to a missing object creates it (201); the entry is
/// `operation: Apply` with exactly the applied fields: list-map items by key (`k:`), set items
/// by value (`v:`), the item itself a member (`.`) beside its fields.
#[tokio::test]
async fn apply_creates_and_records_exactly_the_applied_fields() {
    let s = server();
    let api = gadgets(&s);
    let g = apply(
        &api,
        "deployer",
        false,
        gadget(json!({
            "image": "nginx", "tags": ["a"], "ports": [{"port": 80, "name": "http"}]
        })),
    )
    .await
    .unwrap();
    let created = s
        .requests()
        .into_iter()
        .find(|r| r.verb == Some(Verb::Patch))
        .unwrap();
    assert_eq!(created.status, 201);
    assert_eq!(
        managed(&g),
        [json!({
            "manager": "deployer",
            "operation": "Apply",
            "apiVersion": "test.provkit.dev/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {
                "f:image": {},
                "f:ports": {"k:{\"port\":80}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:tags": {"v:\"a\"": {}}
            }}
        })]
    );
    // Applying the same configuration again changes nothing (no new resourceVersion).
    let again = apply(
        &api,
        "deployer",
        false,
        gadget(json!({
            "image": "nginx", "tags": ["a"], "ports": [{"port": 80, "name": "http"}]
        })),
    )
    .await
    .unwrap();
    assert_eq!(again.metadata.resource_version, g.metadata.resource_version);
}

/// The reference page's own example: a ConfigMap applied by `kubectl` records
/// `f:metadata.f:labels.f:test-label` and `f:data.f:key` (a declared struct field with content
/// is not itself owned; map keys are).
#[tokio::test]
async fn the_reference_pages_configmap_example() {
    let s = server();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    let cm = cms
        .patch(
            "test-cm",
            &PatchParams::apply("kubectl"),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
                "data": {"key": "some value"}
            })),
        )
        .await
        .unwrap();
    let entries = serde_json::to_value(cm.metadata.managed_fields.unwrap()).unwrap();
    assert_eq!(entries[0]["manager"], "kubectl");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(entries[0]["apiVersion"], "v1");
    assert!(entries[0]["time"].is_string());
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:test-label": {}}}, "f:data": {"f:key": {}}})
    );
}

/// "Conflicts": a field another applier owns with a different value is a 409 `Conflict`
/// naming the manager and the field (`details.causes` of reason `FieldManagerConflict`);
/// several are listed by manager.
#[tokio::test]
async fn a_second_applier_changing_an_owned_field_gets_the_409() {
    let s = server();
    let api = gadgets(&s);
    apply(
        &api,
        "alice",
        false,
        gadget(json!({"replicas": 1, "image": "a"})),
    )
    .await
    .unwrap();
    let err = api_err(apply(&api, "bob", false, gadget(json!({"replicas": 2}))).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
    );
    let causes = serde_json::to_value(&err.details.as_ref().unwrap().causes).unwrap();
    assert_eq!(
        causes,
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"",
                "field": ".spec.replicas"}])
    );
    let err = api_err(
        apply(
            &api,
            "bob",
            false,
            gadget(json!({"replicas": 2, "image": "b"})),
        )
        .await,
    );
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.image\n- .spec.replicas"
    );
    assert_eq!(err.details.unwrap().causes.len(), 2);
    // Nothing was written.
    let g = api.get("g").await.unwrap();
    assert_eq!(g.data["spec"]["replicas"], 1);
}

/// "Conflicts": an update manager (merge patch, JSON patch, PUT) is named with the API
/// version it wrote with; the same manager name applying later conflicts with its own update
/// entry, which is a different manager entry.
#[tokio::test]
async fn conflicts_with_update_managers_name_their_api_version() {
    let s = server();
    let api = gadgets(&s);
    apply(&api, "deployer", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    let pp = PatchParams {
        field_manager: Some("scaler".into()),
        ..PatchParams::default()
    };
    let g = api
        .patch("g", &pp, &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    // An update takes the field: the applier no longer owns it, and loses its entry.
    assert_eq!(
        managed(&g),
        [
            json!({"manager": "scaler", "operation": "Update", "apiVersion": "test.provkit.dev/v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}})
        ]
    );
    let err = api_err(apply(&api, "deployer", false, gadget(json!({"replicas": 1}))).await);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"scaler\" using test.provkit.dev/v1: .spec.replicas"
    );
    let err = api_err(apply(&api, "scaler", false, gadget(json!({"replicas": 4}))).await);
    assert_eq!(
        err.details.unwrap().causes[0].message,
        "conflict with \"scaler\" using test.provkit.dev/v1"
    );
}

/// "Conflicts": applying the value a field already has shares its ownership (no conflict);
/// a later change by either owner then conflicts with the other.
#[tokio::test]
async fn equal_values_share_ownership() {
    let s = server();
    let api = gadgets(&s);
    apply(&api, "alice", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    let g = apply(&api, "bob", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    for m in ["alice", "bob"] {
        assert_eq!(
            entry(&g, m)["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
    }
    let err = api_err(apply(&api, "alice", false, gadget(json!({"replicas": 5}))).await);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas"
    );
}

/// "Conflicts": `force=true` overwrites and moves ownership to the applier; kube's
/// `PatchParams::apply(..).force()` on the main resource and on `/status` (the acceptance
/// case of a kube-rs controller).
#[tokio::test]
async fn force_takes_ownership_main_resource_and_status() {
    let s = builder().build();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let w = api
        .patch(
            "w",
            &PatchParams::apply("operator").force(),
            &Patch::Apply(
                json!({"apiVersion": "test.provkit.dev/v1", "kind": "Widget",
                                 "metadata": {"name": "w"}, "spec": {"size": 5}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(w.spec.size, 5);
    let fields = serde_json::to_value(w.metadata.managed_fields.clone().unwrap()).unwrap();
    let by = |m: &str| {
        fields
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == m)
            .cloned()
    };
    assert_eq!(
        by("operator").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:size": {}}})
    );
    // The creator (manager `unknown`, no User-Agent) lost `.spec.size` and keeps only `.spec`
    // itself, which its create added.
    assert_eq!(
        by("unknown").unwrap()["fieldsV1"],
        json!({"f:spec": {}}),
        "{fields}"
    );
    let w = api
        .patch_status(
            "w",
            &PatchParams::apply("operator").force(),
            &Patch::Apply(
                json!({"apiVersion": "test.provkit.dev/v1", "kind": "Widget",
                                 "metadata": {"name": "w"}, "status": {"phase": "Ready"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(w.status.unwrap().phase.as_deref(), Some("Ready"));
    let fields = serde_json::to_value(w.metadata.managed_fields.unwrap()).unwrap();
    let status_entry = fields
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subresource"] == "status")
        .cloned()
        .unwrap();
    assert_eq!(status_entry["manager"], "operator");
    assert_eq!(status_entry["operation"], "Apply");
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {"f:phase": {}}})
    );
}

/// "Field management": a field the applier applied before and no longer applies is removed
/// from the object, unless another manager owns it too.
#[tokio::test]
async fn fields_no_longer_applied_are_removed_unless_someone_else_owns_them() {
    let s = server();
    let api = gadgets(&s);
    apply(
        &api,
        "alice",
        false,
        gadget(json!({"replicas": 1, "image": "x", "env": {"A": "1", "B": "2"}})),
    )
    .await
    .unwrap();
    apply(&api, "bob", false, gadget(json!({"image": "x"})))
        .await
        .unwrap();
    let g = apply(&api, "alice", false, gadget(json!({"env": {"A": "1"}})))
        .await
        .unwrap();
    assert_eq!(g.data["spec"], json!({"image": "x", "env": {"A": "1"}}));
    assert_eq!(
        entry(&g, "alice")["fieldsV1"],
        json!({"f:spec": {"f:env": {"f:A": {}}}})
    );
    assert_eq!(
        entry(&g, "bob")["fieldsV1"],
        json!({"f:spec": {"f:image": {}}})
    );
}

/// "Merge strategy": `set` lists are unions of every applier's items, `map` lists merge
/// items by key, atomic lists (the CRD default) and `x-kubernetes-map-type: atomic` maps are
/// replaced whole and owned whole.
#[tokio::test]
async fn lists_and_maps_merge_by_their_schema_type() {
    let s = server();
    let api = gadgets(&s);
    apply(
        &api,
        "alice",
        false,
        gadget(json!({
            "tags": ["a", "b"], "ports": [{"port": 80, "name": "http"}], "args": ["x"],
            "selector": {"app": "a"}
        })),
    )
    .await
    .unwrap();
    let g = apply(
        &api,
        "bob",
        false,
        gadget(json!({
            "tags": ["b", "c"], "ports": [{"port": 443, "name": "https"}]
        })),
    )
    .await
    .unwrap();
    assert_eq!(g.data["spec"]["tags"], json!(["a", "b", "c"]));
    assert_eq!(
        g.data["spec"]["ports"],
        json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https"}])
    );
    assert_eq!(
        entry(&g, "bob")["fieldsV1"],
        json!({"f:spec": {
            "f:ports": {"k:{\"port\":443}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {"v:\"b\"": {}, "v:\"c\"": {}}
        }})
    );
    assert_eq!(
        entry(&g, "alice")["fieldsV1"]["f:spec"]["f:args"],
        json!({}),
        "an atomic list is one field"
    );
    let err = api_err(apply(&api, "bob", false, gadget(json!({"args": ["y"]}))).await);
    assert_eq!(err.details.unwrap().causes[0].field, ".spec.args");
    let err = api_err(
        apply(
            &api,
            "bob",
            false,
            gadget(json!({"selector": {"app": "a", "tier": "b"}})),
        )
        .await,
    );
    assert_eq!(err.details.unwrap().causes[0].field, ".spec.selector");
    // Alice stops applying tag "b": Bob still owns it, so it stays; "a" goes.
    let g = apply(
        &api,
        "alice",
        false,
        gadget(json!({
            "ports": [{"port": 80, "name": "http"}], "args": ["x"], "selector": {"app": "a"}
        })),
    )
    .await
    .unwrap();
    assert_eq!(g.data["spec"]["tags"], json!(["b", "c"]));
}

/// Update managers: merge patch, JSON patch and PUT record `operation: Update` entries with
/// the fields they changed, per manager.
#[tokio::test]
async fn updates_record_update_entries_with_the_changed_fields() {
    let s = server();
    let api = gadgets(&s);
    let created = api
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..PostParams::default()
            },
            &serde_json::from_value(gadget(json!({"replicas": 1}))).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        managed(&created),
        [
            json!({"manager": "creator", "operation": "Update", "apiVersion": "test.provkit.dev/v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:replicas": {}}}})
        ]
    );
    let pp = |m: &str| PatchParams {
        field_manager: Some(m.into()),
        ..PatchParams::default()
    };
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/spec/image", "value": "i"}
    ]))
    .unwrap();
    let g = api
        .patch("g", &pp("jsonpatcher"), &Patch::Json::<()>(ops))
        .await
        .unwrap();
    assert_eq!(
        entry(&g, "jsonpatcher")["fieldsV1"],
        json!({"f:spec": {"f:image": {}}})
    );
    let mut whole = g.clone();
    whole.data["spec"]["env"] = json!({"K": "v"});
    let g = api
        .replace(
            "g",
            &PostParams {
                field_manager: Some("replacer".into()),
                ..PostParams::default()
            },
            &whole,
        )
        .await
        .unwrap();
    assert_eq!(
        entry(&g, "replacer")["fieldsV1"],
        json!({"f:spec": {"f:env": {".": {}, "f:K": {}}}})
    );
    // A write that changes nothing records nothing.
    let again = api
        .replace(
            "g",
            &PostParams {
                field_manager: Some("noop".into()),
                ..PostParams::default()
            },
            &g,
        )
        .await
        .unwrap();
    assert!(managed(&again).iter().all(|e| e["manager"] != "noop"));
}

/// `PatchOptions` validation: `fieldManager` is required for apply (422 `Invalid`), `force`
/// is forbidden on other patches; the apply body's version must be the URL's (400), it may
/// not carry `managedFields` (400), and a field the schema does not declare fails the typed
/// conversion (500).
#[tokio::test]
async fn apply_request_errors() {
    let s = server();
    let api = gadgets(&s);
    let no_manager = PatchParams {
        field_manager: None,
        ..PatchParams::default()
    };
    let err = api_err(
        api.patch("g", &no_manager, &Patch::Apply(gadget(json!({}))))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let details = err.details.unwrap();
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("meta.k8s.io", "PatchOptions")
    );
    assert_eq!(details.causes[0].reason, "FieldValueRequired");
    assert_eq!(details.causes[0].field, "fieldManager");
    apply(&api, "m", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    // kube refuses `force` on a merge patch itself, so the request is sent by hand.
    let req = http::Request::patch(
        "/apis/test.provkit.dev/v1/namespaces/default/gadgets/g?fieldManager=m&force=true",
    )
    .header("content-type", "application/merge-patch+json")
    .body(b"{}".to_vec())
    .unwrap();
    let err = api_err(s.client().request_text(req).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            422,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        )
    );
    let mut wrong = gadget(json!({}));
    wrong["apiVersion"] = json!("test.provkit.dev/v2");
    let err = api_err(apply(&api, "m", false, wrong).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            400,
            "Incorrect version specified in apply patch. Specified patch version: test.provkit.dev/v2, expected: test.provkit.dev/v1"
        )
    );
    let mut with_managed = gadget(json!({}));
    with_managed["metadata"]["managedFields"] = json!([]);
    let err = api_err(apply(&api, "m", false, with_managed).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "metadata.managedFields must be nil")
    );
    let err = api_err(apply(&api, "m", false, gadget(json!({"bogus": 1}))).await);
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "failed to create typed patch object (default/g; test.provkit.dev/v1, Kind=Gadget): .spec.bogus: field not declared in schema"
    );
}

/// "Clearing managedFields": a write carrying `managedFields: [{}]` strips them; later updates
/// are not tracked until the next apply, which gives the existing fields to
/// `before-first-apply`.
#[tokio::test]
async fn clearing_managed_fields_and_the_first_apply_after() {
    let s = server();
    let api = gadgets(&s);
    apply(&api, "alice", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    let g = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"managedFields": [{}]}})),
        )
        .await
        .unwrap();
    assert!(
        g.metadata.managed_fields.is_none(),
        "{:?}",
        g.metadata.managed_fields
    );
    let g = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "i"}})),
        )
        .await
        .unwrap();
    assert!(g.metadata.managed_fields.is_none());
    let err = api_err(apply(&api, "alice", false, gadget(json!({"replicas": 2}))).await);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using test.provkit.dev/v1: .spec.replicas"
    );
}

/// "Status subresource" with apply: a main-resource apply does not own or change `status`; a
/// status apply does not own or change `spec`.
#[tokio::test]
async fn main_and_status_applies_stay_in_their_part() {
    let s = server();
    let api = gadgets(&s);
    let mut with_status = gadget(json!({"replicas": 1}));
    with_status["status"] = json!({"phase": "Faked"});
    let g = apply(&api, "m", false, with_status).await.unwrap();
    assert!(g.data.get("status").is_none());
    assert_eq!(
        entry(&g, "m")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    let mut status = gadget(json!({"replicas": 9}));
    status["status"] = json!({"phase": "Ready", "conditions": [{"type": "Ok", "status": "True"}]});
    let g = api
        .patch_status("g", &PatchParams::apply("m"), &Patch::Apply(status))
        .await
        .unwrap();
    assert_eq!(g.data["spec"]["replicas"], 1);
    assert_eq!(g.data["status"]["phase"], "Ready");
    let e = managed(&g)
        .into_iter()
        .find(|e| e["subresource"] == "status")
        .unwrap();
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:phase": {}, "f:conditions": {"k:{\"type\":\"Ok\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
    );
}

/// "Upgrading from client-side apply to server-side apply": the manager `kubectl` may take the
/// fields its last client-side apply set (the last-applied annotation, where the object
/// still has those values) without a conflict, and keeps the annotation equal to what it
/// applies; any other manager conflicts with `kubectl-client-side-apply`, and a field changed
/// since by someone else still conflicts.
#[tokio::test]
async fn kubectl_takes_over_from_its_client_side_apply() {
    let s = server();
    let api = gadgets(&s);
    let last = r#"{"apiVersion":"test.provkit.dev/v1","kind":"Gadget","metadata":{"annotations":{},"name":"g","namespace":"default"},"spec":{"image":"a","replicas":1}}"#;
    let mut created = gadget(json!({"image": "a", "replicas": 1}));
    created["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": last});
    api.create(
        &PostParams {
            field_manager: Some("kubectl-client-side-apply".into()),
            ..PostParams::default()
        },
        &serde_json::from_value(created).unwrap(),
    )
    .await
    .unwrap();
    let err = api_err(apply(&api, "deployer", false, gadget(json!({"replicas": 2}))).await);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using test.provkit.dev/v1: .spec.replicas"
    );
    let g = apply(
        &api,
        "kubectl",
        false,
        gadget(json!({"image": "a", "replicas": 2})),
    )
    .await
    .unwrap();
    assert_eq!(g.data["spec"]["replicas"], 2);
    assert_eq!(
        g.metadata.annotations.unwrap()["kubectl.kubernetes.io/last-applied-configuration"],
        r#"{"apiVersion":"test.provkit.dev/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"image":"a","replicas":2}}"#
    );
    let pp = PatchParams {
        field_manager: Some("scaler".into()),
        ..PatchParams::default()
    };
    api.patch("g", &pp, &Patch::Merge(json!({"spec": {"image": "b"}})))
        .await
        .unwrap();
    let err = api_err(
        apply(
            &api,
            "kubectl",
            false,
            gadget(json!({"image": "c", "replicas": 2})),
        )
        .await,
    );
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"scaler\" using test.provkit.dev/v1: .spec.image"
    );
}

/// "Conflicts" are between managers: an applier never conflicts with its own earlier apply,
/// so a stale copy applied under the same manager (a second replica of one controller)
/// silently wins. API concepts, "Patch": a `metadata.resourceVersion` in the applied
/// configuration is a precondition (409 `Conflict` when the object changed since).
#[tokio::test]
async fn an_applier_never_conflicts_with_itself_but_a_resource_version_is_a_precondition() {
    let s = server();
    let api = gadgets(&s);
    let first = apply(&api, "operator", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    apply(&api, "operator", false, gadget(json!({"replicas": 2})))
        .await
        .unwrap();
    // A replica that still holds the first version applies its stale intent: no conflict.
    let stale = apply(&api, "operator", false, gadget(json!({"replicas": 1})))
        .await
        .unwrap();
    assert_eq!(stale.data["spec"]["replicas"], 1);
    let mut guarded = gadget(json!({"replicas": 3}));
    guarded["metadata"]["resourceVersion"] = json!(first.metadata.resource_version);
    let err = api_err(apply(&api, "operator", false, guarded).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on gadgets.test.provkit.dev \"g\": the object has been modified; please apply your changes to the latest version and try again"
    );
}
