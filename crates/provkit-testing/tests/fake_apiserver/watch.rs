//! Watches through kube-runtime's watcher and reflector.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use provkit_testing::fake_apiserver::{Fault, FaultEffect, Verb};
use serde_json::json;

use super::common::{Widget, builder, widget};

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c
}

fn names(events: &[watcher::Event<ConfigMap>]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            watcher::Event::Init => "Init".to_owned(),
            watcher::Event::InitDone => "InitDone".to_owned(),
            watcher::Event::InitApply(o) => {
                format!("InitApply {}", o.metadata.name.clone().unwrap_or_default())
            }
            watcher::Event::Apply(o) => {
                format!("Apply {}", o.metadata.name.clone().unwrap_or_default())
            }
            watcher::Event::Delete(o) => {
                format!("Delete {}", o.metadata.name.clone().unwrap_or_default())
            }
        })
        .collect()
}

/// API concepts, "410 Gone responses" / "Efficient detection of changes": a watch from a
/// `resourceVersion` older than the retained window gets an ERROR event with 410 Expired, and
/// kube's watcher relists (a fresh Init … InitDone).
#[tokio::test]
async fn watcher_relists_after_410_gone() {
    let s = builder().retained_changes(1).build();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(w.next().await.unwrap().unwrap());
    }
    assert_eq!(names(&got), ["Init", "InitApply a", "InitDone"]);
    // Two writes while the watcher is not watching yet: the change after its list falls out
    // of the one-change window.
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    let err = w
        .next()
        .await
        .unwrap()
        .expect_err("the resumed watch is told 410");
    assert!(
        matches!(&err, watcher::Error::WatchError(s) if s.code == 410),
        "{err:?}"
    );
    let mut relist = Vec::new();
    for _ in 0..5 {
        relist.push(w.next().await.unwrap().unwrap());
    }
    assert_eq!(
        names(&relist),
        [
            "Init",
            "InitApply a",
            "InitApply b",
            "InitApply c",
            "InitDone"
        ]
    );
}

/// The retained window is per resource type, like the real API server's watch cache: writes
/// of another type (Events, Leases in an operator's namespace) do not push a type's changes
/// out, so a watch resuming after them is not told 410 — while enough writes of its own type
/// still are.
#[tokio::test]
async fn the_retained_window_is_per_type() {
    let s = builder().retained_changes(2).build();
    let maps: Api<ConfigMap> = Api::default_namespaced(s.client());
    let widgets: Api<Widget> = Api::default_namespaced(s.client());
    maps.create(&PostParams::default(), &cm("a")).await.unwrap();
    let from = s.resource_version().to_string();
    for i in 0..5 {
        widgets
            .create(&PostParams::default(), &widget(&format!("w{i}"), 1))
            .await
            .unwrap();
    }
    maps.create(&PostParams::default(), &cm("b")).await.unwrap();
    let mut events = maps
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(c)) => assert_eq!(c.metadata.name.as_deref(), Some("b")),
        other => panic!("expected b's ADDED, got {other:?}"),
    }
    for name in ["c", "d"] {
        maps.create(&PostParams::default(), &cm(name))
            .await
            .unwrap();
    }
    let mut late = maps
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    assert!(
        matches!(late.try_next().await.unwrap(), Some(WatchEvent::Error(e)) if e.code == 410),
        "three config maps since: b fell out of the window of two"
    );
}

/// Raw watch semantics (API concepts "Watch bookmarks", "Efficient detection of changes"):
/// without a resourceVersion the stream starts with ADDED per object; then MODIFIED and
/// DELETED; a bookmark carries a resourceVersion; a label-selector watch sees an object
/// leaving the selection as DELETED.
#[tokio::test(start_paused = true)]
async fn raw_watch_events_bookmarks_and_selector_transitions() {
    let s = builder().bookmark_interval(Duration::from_secs(5)).build();
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("team=x"), "0")
        .await
        .unwrap()
        .boxed();
    let mut all = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        all.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    let pp = PatchParams::default();
    api.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"team": "x"}}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(stream.try_next().await.unwrap(), Some(WatchEvent::Added(_))),
        "entered the selection"
    );
    assert!(matches!(
        all.try_next().await.unwrap(),
        Some(WatchEvent::Modified(_))
    ));
    api.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": null}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            stream.try_next().await.unwrap(),
            Some(WatchEvent::Deleted(_))
        ),
        "left the selection"
    );
    assert!(matches!(
        all.try_next().await.unwrap(),
        Some(WatchEvent::Modified(_))
    ));
    api.delete("a", &Default::default()).await.unwrap();
    assert!(matches!(
        all.try_next().await.unwrap(),
        Some(WatchEvent::Deleted(_))
    ));
    let rv = s.resource_version().to_string();
    match all.try_next().await.unwrap() {
        Some(WatchEvent::Bookmark(b)) => assert_eq!(b.metadata.resource_version, rv),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

/// A lagging watch (events delivered 5 s late) makes a reflector cache serve a stale object
/// right after a write — the informer-cache race an operator must survive.
#[tokio::test(start_paused = true)]
async fn lagging_watch_gives_a_stale_read() {
    let s = builder().build();
    s.inject(Fault::new(FaultEffect::WatchLag(Duration::from_secs(5))).verb(Verb::Watch));
    let api: Api<Widget> = Api::default_namespaced(s.client());
    api.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let (reader, writer) = reflector::store();
    let feed = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .applied_objects()
        .for_each(|_| async {});
    let task = tokio::spawn(feed);
    reader.wait_until_ready().await.unwrap();
    let key = reflector::ObjectRef::new("w").within("default");
    assert_eq!(reader.get(&key).unwrap().spec.size, 1);

    let written = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(written.metadata.generation, Some(2));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cached = reader.get(&key).unwrap();
    assert_eq!(
        cached.metadata.generation,
        Some(1),
        "the cache is behind the write"
    );
    assert_eq!(cached.spec.size, 1);
    // The event arrives once the lag has passed.
    while reader.get(&key).unwrap().metadata.generation != Some(2) {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    task.abort();
}
