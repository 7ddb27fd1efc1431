//! provkit-kube's `EventRecorder` on provkit-testing's `FakeApiServer` (in-process client, no
//! sockets, so tokio's clock is paused and advanced by hand): a repeat within the TTL patches
//! the first Event's series, a repeat after it (or after its key was evicted, or its Event
//! deleted) creates a new Event, and the cache holds at most its capacity.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, DeleteParams};
use kube::runtime::events::{Event, EventType, Reporter};
use provkit_kube::{EventPublisher, EventRecorder, JobEvent};
use provkit_testing::fake_apiserver::{FakeApiServer, Verb};
use serde_json::Value;

const NS: &str = "team-a";

fn regarding() -> ObjectReference {
    ObjectReference {
        api_version: Some("test.provkit.dev/v1".into()),
        kind: Some("Network".into()),
        name: Some("net-a".into()),
        namespace: Some(NS.into()),
        uid: Some("0000-1111".into()),
        ..ObjectReference::default()
    }
}

fn recorder(server: &FakeApiServer) -> EventRecorder {
    EventRecorder::new(
        server.client_with_user_agent("network-operator/0.1"),
        Reporter {
            controller: "network-operator".into(),
            instance: None,
        },
    )
}

fn event(action: &str, note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: "LaunchFailed".into(),
        note: Some(note.into()),
        action: action.into(),
        secondary: None,
    }
}

/// `(action, note, series count or 1)` of every stored Event, sorted.
fn stored(server: &FakeApiServer) -> Vec<(String, String, u64)> {
    let mut out: Vec<_> = server
        .events()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default().to_owned(),
                e["note"].as_str().unwrap_or_default().to_owned(),
                e.pointer("/series/count")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            )
        })
        .collect();
    out.sort();
    out
}

fn row(action: &str, note: &str, count: u64) -> (String, String, u64) {
    (action.into(), note.into(), count)
}

#[tokio::test(start_paused = true)]
async fn a_repeat_within_the_ttl_patches_the_series_and_keeps_the_first_note() {
    let server = FakeApiServer::builder().namespace(NS).build();
    let recorder = recorder(&server).with_ttl(Duration::from_secs(60));
    let r = regarding();
    recorder
        .publish(&event("Provision/1", "first"), &r)
        .await
        .unwrap();
    // Fields as kube-runtime's Recorder writes them.
    let created = server.events();
    assert_eq!(created.len(), 1);
    let e = &created[0];
    assert_eq!(e["apiVersion"], "events.k8s.io/v1");
    assert_eq!(e["metadata"]["namespace"], NS);
    let name = e["metadata"]["name"].as_str().unwrap();
    let (prefix, nanos) = name.rsplit_once('.').unwrap();
    assert_eq!(prefix, "net-a");
    assert!(i128::from_str_radix(nanos, 16).is_ok(), "{name}");
    assert_eq!(
        (&e["type"], &e["reason"], &e["action"]),
        (
            &Value::from("Warning"),
            &Value::from("LaunchFailed"),
            &Value::from("Provision/1")
        )
    );
    assert_eq!(e["reportingController"], "network-operator");
    assert_eq!(e["reportingInstance"], "network-operator");
    assert_eq!(e["regarding"]["uid"], "0000-1111");
    assert!(e["eventTime"].is_string() && e.get("series").is_none());

    tokio::time::advance(Duration::from_secs(50)).await;
    recorder
        .publish(&event("Provision/1", "second"), &r)
        .await
        .unwrap();
    assert_eq!(stored(&server), [row("Provision/1", "first", 2)]);
    // 50 s after the last publication (100 s after the first): the TTL counts from the last.
    tokio::time::advance(Duration::from_secs(50)).await;
    recorder
        .publish(&event("Provision/1", "third"), &r)
        .await
        .unwrap();
    assert_eq!(stored(&server), [row("Provision/1", "first", 3)]);
    let series = &server.events()[0]["series"];
    assert!(series["lastObservedTime"].is_string(), "{series}");
    assert_eq!(server.events()[0]["metadata"]["name"], name);
    let verbs = server.verb_counts();
    assert_eq!(
        (verbs.get(&Verb::Create), verbs.get(&Verb::Patch)),
        (Some(&1), Some(&2))
    );
    assert_eq!(recorder.cached(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_repeat_after_the_ttl_creates_a_new_event() {
    let server = FakeApiServer::builder().namespace(NS).build();
    let recorder = recorder(&server).with_ttl(Duration::from_secs(60));
    let r = regarding();
    recorder
        .publish(&event("Provision/1", "first"), &r)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(60)).await;
    recorder
        .publish(&event("Provision/1", "again"), &r)
        .await
        .unwrap();
    assert_eq!(
        stored(&server),
        [
            row("Provision/1", "again", 1),
            row("Provision/1", "first", 1)
        ]
    );
    // The expired entry was swept; the new Event's is the only one.
    assert_eq!(recorder.cached(), 1);
    recorder
        .publish(&event("Provision/1", "third"), &r)
        .await
        .unwrap();
    assert_eq!(
        stored(&server),
        [
            row("Provision/1", "again", 2),
            row("Provision/1", "first", 1)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_cache_holds_at_most_its_capacity_and_an_evicted_key_creates_a_new_event() {
    let server = FakeApiServer::builder().namespace(NS).build();
    let recorder = recorder(&server).with_capacity(3);
    let r = regarding();
    for i in 0..5 {
        recorder
            .publish(&event(&format!("Provision/{i}"), "first"), &r)
            .await
            .unwrap();
        assert!(recorder.cached() <= 3, "{}", recorder.cached());
    }
    assert_eq!(recorder.cached(), 3);
    assert_eq!(server.events().len(), 5);
    // Provision/0 and /1 were evicted (the least recently published); /4 is still cached.
    recorder
        .publish(&event("Provision/0", "again"), &r)
        .await
        .unwrap();
    recorder
        .publish(&event("Provision/4", "again"), &r)
        .await
        .unwrap();
    let got = stored(&server);
    assert_eq!(got.len(), 6, "{got:?}");
    assert!(got.contains(&row("Provision/0", "first", 1)), "{got:?}");
    assert!(got.contains(&row("Provision/0", "again", 1)), "{got:?}");
    assert!(got.contains(&row("Provision/4", "first", 2)), "{got:?}");
    assert_eq!(recorder.cached(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_series_patch_answered_404_creates_a_new_event() {
    let server = FakeApiServer::builder().namespace(NS).build();
    let recorder = recorder(&server);
    let r = regarding();
    recorder
        .publish(&event("Provision/1", "first"), &r)
        .await
        .unwrap();
    let events: Api<K8sEvent> = Api::namespaced(server.client(), NS);
    let name = server.events()[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    events
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    assert!(server.events().is_empty());
    recorder
        .publish(&event("Provision/1", "again"), &r)
        .await
        .unwrap();
    assert_eq!(stored(&server), [row("Provision/1", "again", 1)]);
    // The new Event continues the series.
    recorder
        .publish(&event("Provision/1", "third"), &r)
        .await
        .unwrap();
    assert_eq!(stored(&server), [row("Provision/1", "again", 2)]);
    assert_eq!(recorder.cached(), 1);
}

/// Through `EventPublisher`: a cluster-scoped object's Events go to `default`; a disabled
/// publisher caches nothing.
#[tokio::test(start_paused = true)]
async fn the_publisher_publishes_through_its_recorder() {
    let server = FakeApiServer::builder().build();
    let publisher = EventPublisher::new(
        server.client(),
        Reporter {
            controller: "network-operator".into(),
            instance: Some("pod-0".into()),
        },
    )
    .with_capacity(8)
    .with_ttl(Duration::from_secs(1));
    let recorder = publisher.recorder().unwrap();
    assert_eq!(
        (recorder.capacity(), recorder.ttl()),
        (8, Duration::from_secs(1))
    );
    let cluster_scoped = ObjectReference {
        namespace: None,
        ..regarding()
    };
    let job = JobEvent::ProvisionTriggered { job_id: "7".into() };
    publisher.publish(&job, &cluster_scoped).await;
    publisher.publish(&job, &cluster_scoped).await;
    let got = server.events();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["metadata"]["namespace"], "default");
    assert_eq!(got[0]["reportingInstance"], "pod-0");
    assert_eq!(got[0]["series"]["count"], 2);
    assert!(
        EventPublisher::disabled()
            .with_ttl(Duration::ZERO)
            .recorder()
            .is_none()
    );
}
