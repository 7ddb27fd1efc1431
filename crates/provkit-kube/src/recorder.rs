//! [`EventRecorder`]: publishes `events.k8s.io/v1` Events with the wire behaviour of
//! kube-runtime's [`Recorder`](kube::runtime::events::Recorder), with a bounded cache.
//!
//! Hand-written instead of kube-runtime's `Recorder` because that one keeps every published
//! Event (the whole object) for a fixed six minutes and sweeps its entire cache under a write
//! lock on every publish: O(cached events) CPU per publish, serialized on one lock, and memory
//! unbounded by anything but the publish rate (about 60,000 Events for a 10,000-object fleet).
//! Its TTL cannot be configured either, so a harness that runs time faster cannot scale it.
//!
//! # Wire behaviour (same as kube-runtime 5.0's `Recorder`)
//! - A publication creates an Event named `<regarding name>.<hex nanoseconds>` (the reporting
//!   controller's name when the regarding object has none) in the regarding object's
//!   namespace (`default` for a cluster-scoped object), with `action`, `reason`, `note`,
//!   `type`, `regarding`, `related` (the [`Event`]'s `secondary`), `eventTime` and
//!   `reportingController` / `reportingInstance` (the instance defaults to the controller).
//! - The series key is the type, action, reason, regarding and related object (API version,
//!   kind, name, namespace, uid) and the reporter (one per recorder). A publication whose key
//!   was published within the TTL (counted from its last publication) does not create an
//!   Event: a JSON merge patch sets `series: {count, lastObservedTime}` on the first Event
//!   (count 2 at the first repeat, then +1); that Event keeps its first note.
//!
//! Differences: the patch carries only `series` (kube-runtime sends the whole cached Event,
//! whose other fields are the server's already); a series patch answered 404 (the Event was
//! deleted or expired on the server) creates a new Event instead of failing; the TTL
//! ([`with_ttl`](EventRecorder::with_ttl)) and the number of cached keys
//! ([`with_capacity`](EventRecorder::with_capacity)) are configurable.
//!
//! # Cache
//! One compact entry per series key: a 128-bit hash of the key, the Event's namespace and
//! name and its series count, in a queue ordered by last publication. A publication first
//! drops the expired entries from the front of the queue (each entry is dropped once, so the
//! sweep is amortized O(1)); a repeat moves its entry to the back; a new key beyond the
//! capacity evicts the least recently published one. Every step is O(1) under a
//! `std::sync::Mutex` that is never held across an `.await`; the API requests run unlocked.
//! An evicted or expired key published again creates a new Event — exactly what kube-runtime
//! does after its TTL.
//!
//! The key is stored as a 128-bit SipHash of its fields (two independently seeded hashers),
//! not as the strings: a collision would need about 2^64 cached keys to become likely, and its
//! only effect would be one publication counted in another Event's series instead of its own
//! Event.
//!
//! The TTL is measured on [`tokio::time::Instant`] (monotonic; paused in `start_paused`
//! tests); `eventTime`, `lastObservedTime` and the name's nanoseconds are wall time
//! (`jiff::Timestamp::now`), as in kube-runtime.
//!
//! RBAC: `create` and `patch` on `events.k8s.io/events`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use tokio::time::Instant;

/// How long a published Event's series key is remembered after its last publication:
/// 6 minutes, as kube-runtime's `Recorder`.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(6 * 60);

/// How many series keys are remembered at most: 16,384 (a few MB).
pub const DEFAULT_EVENT_CAPACITY: usize = 16_384;

/// Publishes Kubernetes Events (`events.k8s.io/v1`) and folds a repeat within the TTL into the
/// first Event's `series`; see the [module docs](self) for the wire format and the cache.
///
/// Cheap to clone; clones share the cache. Configure with
/// [`with_ttl`](Self::with_ttl) and [`with_capacity`](Self::with_capacity) before the first
/// publication (each starts an empty cache).
///
/// ```no_run
/// use kube::runtime::events::{Event, EventType, Reporter};
/// use provkit_kube::EventRecorder;
///
/// # async fn demo(client: kube::Client, regarding: k8s_openapi::api::core::v1::ObjectReference) -> Result<(), kube::Error> {
/// let recorder = EventRecorder::new(
///     client,
///     Reporter { controller: "my-operator".into(), instance: None },
/// )
/// .with_ttl(std::time::Duration::from_secs(600))
/// .with_capacity(50_000);
/// recorder
///     .publish(
///         &Event {
///             type_: EventType::Normal,
///             reason: "Provisioned".into(),
///             note: Some("network is ready".into()),
///             action: "Provision".into(),
///             secondary: None,
///         },
///         &regarding,
///     )
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct EventRecorder {
    client: Client,
    reporter: Arc<Reporter>,
    inner: Arc<Shared>,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporter", &self.reporter)
            .field("ttl", &self.inner.ttl)
            .field("capacity", &self.inner.capacity)
            .field("cached", &self.cached())
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// Publishes as `reporter` through `client`, with [`DEFAULT_EVENT_TTL`] and
    /// [`DEFAULT_EVENT_CAPACITY`].
    #[must_use]
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter: Arc::new(reporter),
            inner: Arc::new(Shared::new(DEFAULT_EVENT_TTL, DEFAULT_EVENT_CAPACITY)),
        }
    }

    /// How long a series key is remembered after its last publication (default
    /// [`DEFAULT_EVENT_TTL`]); a repeat after that creates a new Event. Starts an empty cache.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.inner = Arc::new(Shared::new(ttl, self.inner.capacity));
        self
    }

    /// How many series keys are remembered at most (default [`DEFAULT_EVENT_CAPACITY`]); a new
    /// key beyond that evicts the least recently published one, whose next repeat creates a new
    /// Event. 0 remembers nothing: every publication creates an Event. Starts an empty cache.
    #[must_use]
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.inner = Arc::new(Shared::new(self.inner.ttl, capacity));
        self
    }

    /// The TTL ([`with_ttl`](Self::with_ttl)).
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// The capacity ([`with_capacity`](Self::with_capacity)).
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// The reporter the Events name.
    #[must_use]
    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// How many series keys are cached now (expired ones included until the next publication
    /// sweeps them); at most [`capacity`](Self::capacity).
    #[must_use]
    pub fn cached(&self) -> usize {
        self.inner.lock().len()
    }

    /// Publishes `event` about `regarding`: creates an Event, or patches the series of the
    /// Event of the same key published within the TTL (a new Event when that one is gone).
    ///
    /// # Errors
    /// The API server's answer to the create or patch ([`kube::Error`]); the cache is unchanged
    /// then, so the next repeat sends the same count again.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let key = self.inner.key(event, regarding);
        let hit = {
            let mut cache = self.inner.lock();
            cache.expire(Instant::now());
            cache.get(key).map(|e| {
                (
                    e.namespace.clone(),
                    e.name.clone(),
                    e.count.saturating_add(1),
                )
            })
        };
        if let Some((namespace, name, count)) = hit {
            let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
            let patch = serde_json::json!({
                "series": EventSeries {
                    count,
                    last_observed_time: MicroTime(Timestamp::now()),
                }
            });
            match events
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.inner
                        .lock()
                        .observed(key, namespace, name, count, Instant::now());
                    return Ok(());
                }
                // The Event is gone (deleted, or expired on the server): start a new one.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        let created = self.event(event, regarding);
        let namespace: Arc<str> = Arc::from(regarding.namespace.as_deref().unwrap_or("default"));
        let name: Arc<str> = Arc::from(created.metadata.name.as_deref().unwrap_or_default());
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
        events.create(&PostParams::default(), &created).await?;
        self.inner
            .lock()
            .observed(key, namespace, name, 1, Instant::now());
        Ok(())
    }

    /// The Event kube-runtime's `Recorder` would create.
    fn event(&self, event: &Event, regarding: &ObjectReference) -> K8sEvent {
        let now = Timestamp::now();
        let controller = &self.reporter.controller;
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_ref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            series: None,
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            related: event.secondary.clone(),
            ..K8sEvent::default()
        }
    }
}

/// The configuration and cache shared by clones.
struct Shared {
    ttl: Duration,
    capacity: usize,
    /// Two independently seeded SipHash keys: a 128-bit key hash.
    seeds: (RandomState, RandomState),
    cache: Mutex<Cache>,
}

impl Shared {
    fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            seeds: (RandomState::new(), RandomState::new()),
            cache: Mutex::new(Cache::new(ttl, capacity)),
        }
    }

    /// No code panics while holding the lock, so a poisoned lock still holds a consistent
    /// cache.
    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The series key (the reporter is the recorder's own, the same for every key).
    fn key(&self, event: &Event, regarding: &ObjectReference) -> Key {
        let hash = |seed: &RandomState| {
            let mut h = seed.build_hasher();
            event.type_.hash(&mut h);
            event.action.hash(&mut h);
            event.reason.hash(&mut h);
            hash_reference(regarding, &mut h);
            match &event.secondary {
                Some(related) => {
                    1u8.hash(&mut h);
                    hash_reference(related, &mut h);
                }
                None => 0u8.hash(&mut h),
            }
            h.finish()
        };
        Key(hash(&self.seeds.0), hash(&self.seeds.1))
    }
}

/// The fields kube-runtime's `Reference` hashes and compares.
fn hash_reference(r: &ObjectReference, h: &mut impl Hasher) {
    r.api_version.hash(h);
    r.kind.hash(h);
    r.name.hash(h);
    r.namespace.hash(h);
    r.uid.hash(h);
}

/// A 128-bit hash of a series key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key(u64, u64);

/// What a series patch needs.
#[derive(Debug)]
struct Entry {
    namespace: Arc<str>,
    name: Arc<str>,
    count: i32,
}

const NIL: usize = usize::MAX;

/// A node of the queue, in a slab.
#[derive(Debug)]
struct Node {
    key: Key,
    deadline: Instant,
    entry: Entry,
    prev: usize,
    next: usize,
}

/// Series keys in a doubly linked queue ordered by last publication (front: oldest), in a
/// slab of nodes with a free list; a map from key to slot. Every operation is O(1).
#[derive(Debug)]
struct Cache {
    ttl: Duration,
    capacity: usize,
    map: HashMap<Key, usize>,
    slots: Vec<Option<Node>>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
}

impl Cache {
    fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            map: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn node(&self, slot: usize) -> Option<&Node> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    fn node_mut(&mut self, slot: usize) -> Option<&mut Node> {
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    fn get(&self, key: Key) -> Option<&Entry> {
        let slot = *self.map.get(&key)?;
        self.node(slot).map(|n| &n.entry)
    }

    /// Drops the entries whose last publication is a TTL or more ago (from the front).
    fn expire(&mut self, now: Instant) {
        while let Some(front) = self.node(self.head) {
            if front.deadline > now {
                break;
            }
            self.remove(self.head);
        }
    }

    /// Records a successful publication of `key` as `name` with series `count` (1: created).
    fn observed(
        &mut self,
        key: Key,
        namespace: Arc<str>,
        name: Arc<str>,
        count: i32,
        now: Instant,
    ) {
        // A TTL too large for the clock (`Duration::MAX`) means about forever.
        let deadline = now
            .checked_add(self.ttl)
            .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
            .unwrap_or(now);
        if let Some(&slot) = self.map.get(&key) {
            self.unlink(slot);
            if let Some(node) = self.node_mut(slot) {
                // Concurrent repeats of one key may finish out of order: keep the larger count.
                if node.entry.name == name {
                    node.entry.count = node.entry.count.max(count);
                } else {
                    node.entry = Entry {
                        namespace,
                        name,
                        count,
                    };
                }
                node.deadline = deadline;
            }
            self.push_back(slot);
            return;
        }
        if self.capacity == 0 {
            return;
        }
        while self.map.len() >= self.capacity && self.head != NIL {
            self.remove(self.head);
        }
        let node = Node {
            key,
            deadline,
            entry: Entry {
                namespace,
                name,
                count,
            },
            prev: NIL,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                if let Some(s) = self.slots.get_mut(slot) {
                    *s = Some(node);
                }
                slot
            }
            None => {
                self.slots.push(Some(node));
                self.slots.len() - 1
            }
        };
        self.map.insert(key, slot);
        self.push_back(slot);
    }

    fn remove(&mut self, slot: usize) {
        self.unlink(slot);
        if let Some(node) = self.slots.get_mut(slot).and_then(Option::take) {
            self.map.remove(&node.key);
            self.free.push(slot);
        }
    }

    fn unlink(&mut self, slot: usize) {
        let Some((prev, next)) = self.node(slot).map(|n| (n.prev, n.next)) else {
            return;
        };
        match self.node_mut(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.node_mut(next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
        if let Some(n) = self.node_mut(slot) {
            n.prev = NIL;
            n.next = NIL;
        }
    }

    fn push_back(&mut self, slot: usize) {
        let tail = self.tail;
        if let Some(n) = self.node_mut(slot) {
            n.prev = tail;
            n.next = NIL;
        }
        match self.node_mut(tail) {
            Some(t) => t.next = slot,
            None => self.head = slot,
        }
        self.tail = slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> (Arc<str>, Arc<str>) {
        (Arc::from("ns"), Arc::from(name))
    }

    fn order(c: &Cache) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = c.head;
        while let Some(n) = c.node(at) {
            out.push(n.entry.name.to_string());
            at = n.next;
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn the_queue_expires_from_the_front_moves_repeats_back_and_evicts_the_oldest() {
        let mut c = Cache::new(Duration::from_secs(10), 3);
        let t0 = Instant::now();
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            let (ns, n) = entry(name);
            c.observed(
                Key(i as u64, 0),
                ns,
                n,
                1,
                t0 + Duration::from_secs(i as u64),
            );
        }
        assert_eq!(order(&c), ["a", "b", "c"]);
        // A repeat of `a` moves it to the back with its count.
        let (ns, n) = entry("a");
        c.observed(Key(0, 0), ns, n, 2, t0 + Duration::from_secs(3));
        assert_eq!(order(&c), ["b", "c", "a"]);
        assert_eq!(c.get(Key(0, 0)).map(|e| e.count), Some(2));
        // A fourth key evicts the least recently published (`b`).
        let (ns, n) = entry("d");
        c.observed(Key(3, 0), ns, n, 1, t0 + Duration::from_secs(4));
        assert_eq!(order(&c), ["c", "a", "d"]);
        assert!(c.get(Key(1, 0)).is_none());
        assert_eq!(c.len(), 3);
        // `c` was last published at 2 s: expired at 12 s, `a` (3 s) not yet.
        c.expire(t0 + Duration::from_secs(12));
        assert_eq!(order(&c), ["a", "d"]);
        c.expire(t0 + Duration::from_secs(60));
        assert_eq!((c.len(), c.head, c.tail), (0, NIL, NIL));
        // Freed slots are reused.
        let (ns, n) = entry("e");
        c.observed(Key(4, 0), ns, n, 1, t0 + Duration::from_secs(61));
        assert_eq!(c.slots.len(), 3);
        assert_eq!(order(&c), ["e"]);
    }

    #[test]
    fn a_ttl_beyond_the_clock_is_about_forever() {
        let mut c = Cache::new(Duration::MAX, 2);
        let (ns, n) = entry("a");
        let now = Instant::now();
        c.observed(Key(0, 0), ns, n, 1, now);
        c.expire(now + Duration::from_secs(10 * 365 * 24 * 3600));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn capacity_zero_remembers_nothing() {
        let mut c = Cache::new(Duration::from_secs(10), 0);
        let (ns, n) = entry("a");
        c.observed(Key(0, 0), ns, n, 1, Instant::now());
        assert_eq!(c.len(), 0);
    }
}
