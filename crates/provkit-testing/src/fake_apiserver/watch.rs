//! Watch streams: the change feed of one request, filtered, delayed and cut as asked.
//!
//! Semantics from the API concepts page ("Efficient detection of changes", "Watch bookmarks",
//! "410 Gone responses"): without `resourceVersion` (or with `"0"`) the stream starts with an
//! `ADDED` event per existing object; with one it replays every later change; one older than
//! the retained window answers a single `ERROR` event carrying a 410 `Expired` status, which
//! makes a client relist. A label-selector watch sees an object leaving the selection as
//! `DELETED` and entering it as `ADDED`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::resource::{ResourceType, TypeKey};
use super::selector::{FieldSelector, LabelSelector, labels_of};
use super::status::ApiStatus;
use super::store::{Change, ChangeKind, Doc, Timed};

/// What one watch request asked for, plus the faults that hit it.
#[derive(Debug, Clone)]
pub(crate) struct WatchSpec {
    pub(crate) key: TypeKey,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) namespace: Option<String>,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
    pub(crate) bookmarks: bool,
    pub(crate) bookmark_interval: Duration,
    pub(crate) timeout: Option<Duration>,
    pub(crate) lag: Duration,
    pub(crate) drop_after: Option<usize>,
}

impl WatchSpec {
    /// Whether the watch shows `doc` (its namespace, then its fields and labels — parsed only
    /// when the watch has a selector).
    fn selects(&self, doc: &Doc) -> bool {
        if self
            .namespace
            .as_deref()
            .is_some_and(|ns| doc.namespace() != ns)
        {
            return false;
        }
        if self.fields.is_empty() && self.labels.is_empty() {
            return true;
        }
        let obj = doc.value();
        self.fields.matches(&obj) && self.labels.matches(&labels_of(&obj))
    }

    /// The event type this watch shows for a change, if any.
    fn event_for(&self, c: &Change) -> Option<&'static str> {
        if c.key != self.key {
            return None;
        }
        let now = self.selects(&c.object);
        let before = c.old.as_ref().is_some_and(|o| self.selects(o));
        match (c.kind, before, now) {
            (ChangeKind::Added, _, true) => Some("ADDED"),
            (ChangeKind::Deleted, true, _) | (ChangeKind::Deleted, _, true) => Some("DELETED"),
            (ChangeKind::Modified, true, true) => Some("MODIFIED"),
            (ChangeKind::Modified, false, true) => Some("ADDED"),
            (ChangeKind::Modified, true, false) => Some("DELETED"),
            _ => None,
        }
    }

    pub(crate) fn selects_initial(&self, doc: &Doc) -> bool {
        self.selects(doc)
    }
}

/// One event line around an object's JSON text.
fn raw_line(event: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":");
    // Writing a string as JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, event);
    out.extend_from_slice(b",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// One event line of a stored object (its text copied as it is).
fn line(event: &str, object: &Doc) -> Bytes {
    raw_line(event, object.json())
}

/// The single-event stream answering a too-old `resourceVersion`.
pub(crate) fn gone_line(message: &str) -> Bytes {
    raw_line(
        "ERROR",
        ApiStatus::gone(message).body().to_string().as_bytes(),
    )
}

/// Runs one watch until the client goes away, the timeout passes or a fault drops it.
pub(crate) async fn pump(
    spec: WatchSpec,
    initial: Vec<(&'static str, Doc)>,
    replay: Vec<Arc<Change>>,
    mut rx: broadcast::Receiver<Timed>,
    start_rv: u64,
    out: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let mut sent = 0usize;
    let mut last_rv = start_rv;
    let dropped = |sent: usize| spec.drop_after.is_some_and(|n| sent >= n);
    if dropped(sent) {
        return;
    }
    let opened = Instant::now();
    // Serialized one at a time as they are sent: a watch from scratch over many objects holds
    // reference counts, not a copy of every event.
    let mut pending: Vec<(&'static str, Doc)> = initial;
    for c in replay {
        last_rv = last_rv.max(c.rv);
        if let Some(t) = spec.event_for(&c) {
            pending.push((t, c.object.clone()));
        }
    }
    for (t, object) in pending {
        tokio::time::sleep_until(opened + spec.lag).await;
        if out.send(Ok(line(t, &object))).await.is_err() {
            return;
        }
        sent += 1;
        if dropped(sent) {
            return;
        }
    }
    let mut ticker = tokio::time::interval_at(
        Instant::now() + spec.bookmark_interval,
        spec.bookmark_interval,
    );
    loop {
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = timeout => return,
            () = out.closed() => return,
            _ = ticker.tick(), if spec.bookmarks => {
                let bm = json!({
                    "apiVersion": spec.api_version,
                    "kind": spec.kind,
                    "metadata": {"resourceVersion": last_rv.to_string()},
                });
                if out.send(Ok(raw_line("BOOKMARK", bm.to_string().as_bytes()))).await.is_err() {
                    return;
                }
            }
            got = rx.recv() => {
                let Ok(timed) = got else {
                    // Lagged past the channel's capacity or server gone: end the stream; the
                    // client resumes from its last resourceVersion.
                    return;
                };
                last_rv = last_rv.max(timed.change.rv);
                let Some(t) = spec.event_for(&timed.change) else { continue };
                tokio::time::sleep_until(timed.at + spec.lag).await;
                if out.send(Ok(line(t, &timed.change.object))).await.is_err() {
                    return;
                }
                sent += 1;
                if dropped(sent) {
                    return;
                }
            }
        }
    }
}

/// The initial `ADDED` events of a watch without `resourceVersion`.
pub(crate) fn initial_events(spec: &WatchSpec, objects: Vec<Doc>) -> Vec<(&'static str, Doc)> {
    objects
        .into_iter()
        .filter(|o| spec.selects_initial(o))
        .map(|o| ("ADDED", o))
        .collect()
}

/// Keeps the type for the spec builder in `http`.
pub(crate) fn spec_base(rt: &ResourceType) -> (TypeKey, String, String) {
    (rt.key(), rt.api_version(), rt.kind.clone())
}
