//! Verbs, server-owned metadata, status subresource, pruning and errors.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::ObjectMeta;
use serde_json::{Value, json};

use super::common::{Widget, api_err, server, widget};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// API concepts, "Resource versions" + API conventions, "Concurrency Control and
/// Consistency": a replace carrying a stale `resourceVersion` is refused with 409 Conflict.
#[tokio::test]
async fn stale_replace_is_409_conflict() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    let first = api
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let mut newer = first.clone();
    newer.spec.size = 2;
    let newer = api
        .replace("w", &PostParams::default(), &newer)
        .await
        .unwrap();
    assert_ne!(
        newer.metadata.resource_version,
        first.metadata.resource_version
    );
    let mut stale = first;
    stale.spec.size = 3;
    let err = api_err(api.replace("w", &PostParams::default(), &stale).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );
    assert_eq!(api.get("w").await.unwrap().spec.size, 2);
}

/// Custom resources, "Status subresource": `metadata.generation` starts at 1 and is bumped by
/// spec changes, never by status or metadata writes.
#[tokio::test]
async fn generation_is_bumped_by_spec_only() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    let w = api
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    let pp = PatchParams::default();
    let w = api
        .patch_status(
            "w",
            &pp,
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        w.metadata.generation,
        Some(1),
        "a status write must not bump generation"
    );
    let w = api
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        w.metadata.generation,
        Some(1),
        "a metadata write must not bump generation"
    );
    let w = api
        .patch("w", &pp, &Patch::Merge(json!({"spec": {"size": 5}})))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
}

/// Custom resources, "Status subresource": writes to the main resource ignore `status`;
/// writes to `/status` ignore everything but `status`; both honour `resourceVersion`.
#[tokio::test]
async fn status_subresource_separation_both_ways() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    let mut w = widget("w", 1);
    w.status = Some(super::common::WidgetStatus {
        phase: Some("ignored-on-create".into()),
    });
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.status, None, "status of a create is dropped");

    // Main resource: spec changes, status does not.
    let pp = PatchParams::default();
    let main = api
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({"spec": {"size": 2}, "status": {"phase": "Main"}})),
        )
        .await
        .unwrap();
    assert_eq!(main.spec.size, 2);
    assert_eq!(main.status, None);

    // /status: status changes, spec and labels do not.
    let st = api
        .patch_status(
            "w",
            &pp,
            &Patch::Merge(
                json!({"spec": {"size": 9}, "metadata": {"labels": {"x": "y"}},
                                 "status": {"phase": "Ready"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(st.spec.size, 2);
    assert_eq!(st.metadata.labels, None);
    assert_eq!(st.status.unwrap().phase.as_deref(), Some("Ready"));

    // Both honour resourceVersion preconditions.
    let stale = json!({"metadata": {"resourceVersion": created.metadata.resource_version},
                       "status": {"phase": "Stale"}});
    let err = api_err(api.patch_status("w", &pp, &Patch::Merge(&stale)).await);
    assert_eq!(err.code, 409);
    let err = api_err(api.patch("w", &pp, &Patch::Merge(&stale)).await);
    assert_eq!(err.code, 409);
    // PUT to /status with the current object.
    let mut cur = api.get("w").await.unwrap();
    cur.status = Some(super::common::WidgetStatus {
        phase: Some("Replaced".into()),
    });
    cur.spec.size = 100;
    let put = api
        .replace_status("w", &PostParams::default(), &cur)
        .await
        .unwrap();
    assert_eq!(
        (put.spec.size, put.status.unwrap().phase.unwrap().as_str()),
        (2, "Replaced")
    );
}

/// Custom resources, "Field pruning": a status field missing from the CRD schema vanishes;
/// a type mismatch or missing required field is refused with 422 Invalid.
#[tokio::test]
async fn pruning_drops_an_unknown_status_field_and_rejects_bad_types() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let w: Value = Api::<kube::api::DynamicObject>::namespaced_with(
        s.client(),
        "default",
        &kube::discovery::ApiResource::erase::<Widget>(&()),
    )
    .patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Ready", "observedThing": 7}})),
    )
    .await
    .map(|o| serde_json::to_value(o).unwrap())
    .unwrap();
    assert_eq!(w["status"], json!({"phase": "Ready"}));
    let stored = s.objects_json("test.provkit.dev", "widgets");
    assert_eq!(stored[0]["status"], json!({"phase": "Ready"}));

    let err = api_err(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": "big"}})),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(err.message.contains("spec.size"), "{}", err.message);
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].field, "spec.size");

    let raw = json!({"apiVersion": "test.provkit.dev/v1", "kind": "Widget",
                     "metadata": {"name": "nosize"}, "spec": {}});
    let obj: kube::api::DynamicObject = serde_json::from_value(raw).unwrap();
    let dynapi = Api::<kube::api::DynamicObject>::namespaced_with(
        s.client(),
        "default",
        &kube::discovery::ApiResource::erase::<Widget>(&()),
    );
    let err = api_err(dynapi.create(&PostParams::default(), &obj).await);
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("spec.size: Required value"),
        "{}",
        err.message
    );
}

/// API conventions, "Metadata": uid, resourceVersion, creationTimestamp and generation are
/// the server's; a client's values are replaced.
#[tokio::test]
async fn clients_cannot_set_server_owned_fields() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    let mut w = widget("w", 1);
    w.metadata.uid = Some("client-uid".into());
    w.metadata.resource_version = Some("999".into());
    w.metadata.generation = Some(42);
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_ne!(created.metadata.uid.as_deref(), Some("client-uid"));
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.metadata.resource_version,
        Some(s.resource_version().to_string())
    );
    assert!(created.metadata.creation_timestamp.is_some());
    let p = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"generation": 7, "creationTimestamp": "2000-01-01T00:00:00Z"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, Some(1));
    assert_eq!(
        p.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );
}

/// API concepts, "Server-side field management" (managedFields): the manager is the
/// `fieldManager` parameter, else the User-Agent up to its first `/`, else `unknown`.
#[tokio::test]
async fn manager_name_comes_from_field_manager_then_user_agent() {
    let s = server();
    let by_ua: Api<ConfigMap> =
        Api::default_namespaced(s.client_with_user_agent("my-operator/1.2.3 (linux/amd64)"));
    let created = by_ua
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let managers = |o: &ConfigMap| -> Vec<String> {
        o.metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| m.manager.clone())
            .collect()
    };
    assert_eq!(managers(&created), ["my-operator"]);
    let pp = PatchParams::apply("explicit");
    let patched = by_ua
        .patch(
            "a",
            &PatchParams {
                field_manager: pp.field_manager,
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .unwrap();
    // Entries are ordered by operation, time, then manager (the two writes may fall in one
    // second or two).
    let mut names = managers(&patched);
    names.sort();
    assert_eq!(names, ["explicit", "my-operator"]);
    let anon: Api<ConfigMap> = Api::default_namespaced(s.client());
    let b = anon
        .create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    assert_eq!(managers(&b), ["unknown"]);
    let logged = s.requests();
    assert!(logged.iter().any(|r| r.field_manager.as_deref() == Some("my-operator")
        && r.client == "my-operator"));
}

/// API concepts, "Create": an existing name is 409 AlreadyExists; `generateName` gets a
/// random suffix; a missing namespace is 404.
#[tokio::test]
async fn create_conflicts_generate_name_and_namespace_lifecycle() {
    let s = server();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let err = api_err(api.create(&PostParams::default(), &cm("a", &[])).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    let details = err.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("a", "configmaps")
    );

    let mut generated = cm("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("job-".into());
    let made = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("job-") && name.len() == 9, "{name}");

    let elsewhere: Api<ConfigMap> = Api::namespaced(s.client(), "team-a");
    let err = api_err(
        elsewhere
            .create(&PostParams::default(), &cm("x", &[]))
            .await,
    );
    assert_eq!(err.code, 404);
    let nss: Api<Namespace> = Api::all(s.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("team-a".into());
    nss.create(&PostParams::default(), &ns).await.unwrap();
    elsewhere
        .create(&PostParams::default(), &cm("x", &[]))
        .await
        .unwrap();
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        2
    );
    let all: Api<ConfigMap> = Api::all(s.client());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );
}

/// "Labels and Selectors" (set-based syntax), API concepts "Retrieving large results sets in
/// chunks" (limit/continue) and field selectors on metadata.name / metadata.namespace.
#[tokio::test]
async fn list_selectors_and_pages() {
    let s = server();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    for (name, env) in [
        ("a", "prod"),
        ("b", "qa"),
        ("c", "prod"),
        ("d", "dev"),
        ("e", "prod"),
    ] {
        api.create(&PostParams::default(), &cm(name, &[("env", env)]))
            .await
            .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect()
    };
    let sel = |s: &str| ListParams::default().labels(s);
    assert_eq!(
        names(api.list(&sel("env in (prod, qa)")).await.unwrap()),
        ["a", "b", "c", "e"]
    );
    assert_eq!(
        names(api.list(&sel("env notin (prod)")).await.unwrap()),
        ["b", "d"]
    );
    assert_eq!(
        names(api.list(&sel("env!=prod,env")).await.unwrap()),
        ["b", "d"]
    );
    assert_eq!(
        names(api.list(&sel("!env")).await.unwrap()),
        Vec::<String>::new()
    );
    let by_name = ListParams::default().fields("metadata.name=c");
    assert_eq!(names(api.list(&by_name).await.unwrap()), ["c"]);

    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = api.list(&lp).await.unwrap();
        let cont = page.metadata.continue_.clone();
        seen.extend(names(page));
        match cont.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => break,
        }
    }
    assert_eq!(seen, ["a", "b", "c", "d", "e"]);
    // Pages of a selection: `remainingItemCount` counts the selected objects still to come, and
    // the token resumes after the last one served.
    let first = api.list(&sel("env=prod").limit(2)).await.unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(1));
    let token = first.metadata.continue_.clone().unwrap();
    assert_eq!(names(first), ["a", "c"]);
    let last = api
        .list(&sel("env=prod").limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(last.metadata.remaining_item_count, None);
    assert!(
        last.metadata
            .continue_
            .as_deref()
            .is_none_or(|c| c.is_empty())
    );
    assert_eq!(names(last), ["e"]);
    let err = api_err(api.list(&sel("env in prod")).await);
    assert_eq!(err.code, 400);
}

/// API concepts, "Retrieving large results sets in chunks": every page of a list is served from
/// the snapshot of the first page — same `resourceVersion` on every page; an object written
/// since is served as it was, one created since is left out, one deleted since is still listed
/// — and a watch from that `resourceVersion` replays every change since. Pages read from the
/// live store lost changes: an object served on an early page and written before the last
/// page (whose version the watch starts from) stayed stale in the client's cache for good.
#[tokio::test]
async fn every_page_of_a_list_is_one_snapshot() {
    let s = server();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    for name in ["a", "b", "c", "d", "e"] {
        api.create(&PostParams::default(), &cm(name, &[]))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let snapshot = first.metadata.resource_version.clone().unwrap();
    let mut token = first.metadata.continue_.clone().unwrap();
    // Between the pages: a served object and a later one change, one is deleted, one created.
    let labelled = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    for name in ["b", "d"] {
        api.patch(name, &PatchParams::default(), &labelled)
            .await
            .unwrap();
    }
    api.delete("e", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("f", &[]))
        .await
        .unwrap();

    let mut rest = Vec::new();
    loop {
        let page = api
            .list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(snapshot.as_str()),
            "every page carries the first page's resourceVersion"
        );
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        rest.extend(page.items);
        match next {
            Some(t) => token = t,
            None => break,
        }
    }
    let rest: Vec<(String, bool)> = rest
        .iter()
        .map(|c| {
            let touched = c
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("touched"));
            (c.metadata.name.clone().unwrap_or_default(), touched)
        })
        .collect();
    assert_eq!(
        rest,
        [
            ("c".into(), false),
            ("d".into(), false),
            ("e".into(), false)
        ],
        "d as it was, e still there, f not yet"
    );

    // The watch from the list's version replays what the pages did not show.
    let mut events = api
        .watch(&kube::api::WatchParams::default(), &snapshot)
        .await
        .unwrap()
        .boxed();
    let mut replayed = Vec::new();
    for _ in 0..4 {
        let e = events.try_next().await.unwrap().unwrap();
        replayed.push(match e {
            kube::api::WatchEvent::Added(c) => format!("ADDED {}", c.metadata.name.unwrap()),
            kube::api::WatchEvent::Modified(c) => format!("MODIFIED {}", c.metadata.name.unwrap()),
            kube::api::WatchEvent::Deleted(c) => format!("DELETED {}", c.metadata.name.unwrap()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(
        replayed,
        ["MODIFIED b", "MODIFIED d", "DELETED e", "ADDED f"]
    );
}

/// JSON patch (RFC 6902) works on every type; a strategic merge patch answers 415 for custom
/// resources, as the real server does ("Custom resources": strategic merge patch is not
/// supported), while server-side apply works on them.
#[tokio::test]
async fn json_patch_and_unsupported_patch_types() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/size", "value": 1},
        {"op": "replace", "path": "/spec/size", "value": 4},
        {"op": "add", "path": "/spec/color", "value": "red"}
    ]))
    .unwrap();
    let w = api
        .patch("w", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap();
    assert_eq!((w.spec.size, w.spec.color.as_deref()), (4, Some("red")));
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/spec/size", "value": 1}])).unwrap();
    let err = api_err(
        api.patch("w", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await,
    );
    assert_eq!(err.code, 422);
    let err = api_err(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .await,
    );
    assert_eq!(
        (err.code, err.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
    let applied = api
        .patch(
            "w",
            &PatchParams::apply("me").force(),
            &Patch::Apply(
                json!({"apiVersion": "test.provkit.dev/v1", "kind": "Widget",
                                 "spec": {"size": 2}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.size, 2);
}

/// API conventions, "Concurrency Control": DELETE honours uid and resourceVersion
/// preconditions; `propagationPolicy` is accepted.
#[tokio::test]
async fn delete_preconditions() {
    let s = server();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let a = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = api_err(api.delete("a", &wrong).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: a.metadata.uid.clone(),
            resource_version: Some("1".into()),
        }),
        ..DeleteParams::default()
    };
    assert_eq!(api_err(api.delete("a", &stale).await).code, 409);
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: a.metadata.uid.clone(),
            resource_version: a.metadata.resource_version.clone(),
        }),
        ..DeleteParams::foreground()
    };
    let gone = api.delete("a", &right).await.unwrap();
    assert!(
        gone.is_right(),
        "deleted at once without finalizers: {gone:?}"
    );
    assert_eq!(api_err(api.get("a").await).code, 404);
}

/// The store keeps one copy of each object version: the change history shares the stored
/// copy, so `footprint` counts an updated object once plus each older version the history
/// still holds, and a deleted object until the history lets it go.
#[tokio::test]
async fn footprint_counts_each_version_once() {
    let s = server();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(name, &[("env", "prod")]))
            .await
            .unwrap();
    }
    let before = s.footprint();
    assert_eq!(before.by_type["configmaps"].objects, 3);
    assert_eq!(before.history_objects, 0, "every created version is stored");
    for env in ["qa", "dev"] {
        api.patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"env": env}}})),
        )
        .await
        .unwrap();
    }
    api.delete("b", &Default::default()).await.unwrap();
    let after = s.footprint();
    assert_eq!(after.by_type["configmaps"].objects, 2);
    // a's two older versions, b's stored version and its deleted version.
    assert_eq!(after.history_objects, 4);
    assert!(after.history_json_bytes > 0);
    s.compact();
    assert_eq!(s.footprint().history_objects, 0);
    assert_eq!(
        s.footprint().by_type["configmaps"].json_bytes,
        after.by_type["configmaps"].json_bytes
    );
}
