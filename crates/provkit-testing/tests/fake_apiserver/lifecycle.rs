//! Deletion with finalizers, and kube-runtime's finalizer helper against the fake.

use std::sync::Arc;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use serde_json::json;

use super::common::{Widget, api_err, server, widget};

/// API concepts / "Finalizers" concept page: DELETE of an object with finalizers sets
/// `deletionTimestamp` (idempotently) and keeps it; no finalizer can be added then; removing
/// the last finalizer removes the object; an object without finalizers goes at once.
#[tokio::test]
async fn finalizer_deletion_flow() {
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    let mut w = widget("w", 1);
    w.metadata.finalizers = Some(vec!["a/one".into(), "a/two".into()]);
    api.create(&PostParams::default(), &w).await.unwrap();

    let first = api.delete("w", &DeleteParams::default()).await.unwrap();
    let pending = first.left().expect("kept while finalizers remain");
    let ts = pending
        .metadata
        .deletion_timestamp
        .clone()
        .expect("deletionTimestamp set");
    assert_eq!(
        pending.metadata.generation,
        Some(2),
        "deletion start bumps generation"
    );
    let again = api
        .delete("w", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(again.metadata.deletion_timestamp, Some(ts), "idempotent");
    assert_eq!(
        again.metadata.resource_version,
        pending.metadata.resource_version
    );

    let pp = PatchParams::default();
    let add = json!({"metadata": {"finalizers": ["a/one", "a/two", "a/three"]}});
    let err = api_err(api.patch("w", &pp, &Patch::Merge(&add)).await);
    assert_eq!(err.code, 422);
    assert!(err.message.contains("no new finalizers"), "{}", err.message);

    api.patch(
        "w",
        &pp,
        &Patch::Merge(json!({"metadata": {"finalizers": ["a/two"]}})),
    )
    .await
    .unwrap();
    assert!(
        api.get("w").await.is_ok(),
        "one finalizer left: still there"
    );
    api.patch(
        "w",
        &pp,
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(
        api_err(api.get("w").await).code,
        404,
        "last finalizer removed: gone"
    );

    api.create(&PostParams::default(), &widget("plain", 1))
        .await
        .unwrap();
    let res = api.delete("plain", &DeleteParams::default()).await.unwrap();
    assert!(res.is_right());
    assert_eq!(api_err(api.get("plain").await).code, 404);
}

/// kube-runtime's finalizer helper, for real: its first patch is `test /metadata/finalizers
/// == null` + `add`, which the API server accepts on an object without finalizers
/// (kube-apiserver's JSON patch reads a missing member as null); the cleanup patch is
/// `test` + `remove` by index.
#[tokio::test]
async fn finalizer_helper_test_and_add_patch_is_accepted() {
    const F: &str = "test.provkit.dev/cleanup";
    let s = server();
    let api: Api<Widget> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();

    let run = |obj: Widget| {
        let api = api.clone();
        async move {
            finalizer(&api, F, Arc::new(obj), |event| async move {
                Ok::<_, std::convert::Infallible>(match event {
                    Event::Apply(_) => Action::await_change(),
                    Event::Cleanup(_) => Action::await_change(),
                })
            })
            .await
        }
    };
    run(api.get("w").await.unwrap())
        .await
        .expect("the test+add patch applies");
    let w = api.get("w").await.unwrap();
    assert_eq!(w.metadata.finalizers, Some(vec![F.to_owned()]));
    // A JSON patch carries no field manager and these requests no User-Agent.
    let patch = s
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .unwrap();
    assert_eq!(
        (patch.status, patch.field_manager.as_deref()),
        (200, Some("unknown"))
    );

    run(w)
        .await
        .expect("apply runs once the finalizer is there");
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let deleting = api.get("w").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    run(deleting).await.expect("cleanup removes the finalizer");
    assert_eq!(api_err(api.get("w").await).code, 404);
}
