//! The object store: every object of every type, one store-wide `resourceVersion` counter and
//! the retained history of changes that watches resume from.
//!
//! All writes go through here under the server's lock, so each write is one atomic step with
//! one new `resourceVersion`, and watchers see changes in `resourceVersion` order with no gap.
//!
//! A stored object is a [`Doc`] (its JSON text), written once and never changed in place: the
//! store, the change history, watch streams and readers share one copy per version, so a read
//! or a list page takes reference counts under the lock and writes bytes after releasing it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use provkit_core::Clock;
use serde_json::{Value, json};
use tokio::sync::broadcast;

pub(crate) use super::doc::Doc;
use super::field_validation::{self, Directive, FieldChecks};
use super::meta::{self, meta_str, timestamp};
use super::patch::{self, PatchFailure, PatchKind};
use super::resource::{ResourceType, TypeKey};
use super::ssa::{self, Recording};
use super::status::{ApiStatus, Cause, Subject, success_deleted};
use super::validation;

/// What happened to an object, as a watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One committed change.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) rv: u64,
    pub(crate) key: TypeKey,
    pub(crate) kind: ChangeKind,
    /// The object after the change (for `Deleted`, its last state with the deletion's rv).
    pub(crate) object: Doc,
    /// The object before the change (selector transitions on watches).
    pub(crate) old: Option<Doc>,
}

/// A change as broadcast to watchers, with the moment it was committed (for lagging watches).
#[derive(Debug, Clone)]
pub(crate) struct Timed {
    pub(crate) change: Arc<Change>,
    pub(crate) at: tokio::time::Instant,
}

/// The DELETE outcome.
pub(crate) enum Deleted {
    /// Removed: the `Success` status.
    Gone(Value),
    /// Kept until its finalizers are removed (the object with `deletionTimestamp`).
    Pending(Doc),
}

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjectKey = (String, String);

/// One page of a list: the selected objects and how many more would follow.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) items: Vec<Doc>,
    /// The key of the last item (where the next page starts).
    pub(crate) last: Option<ObjectKey>,
    pub(crate) remaining: usize,
}

/// The store.
#[derive(Debug)]
pub(crate) struct Store {
    pub(crate) types: Vec<ResourceType>,
    objects: BTreeMap<TypeKey, BTreeMap<ObjectKey, Doc>>,
    rv: u64,
    /// The retained changes of each type, oldest first (the real API server's watch cache keeps
    /// a window per type, so Events or Leases churning do not push a custom resource's changes
    /// out).
    history: BTreeMap<TypeKey, VecDeque<Arc<Change>>>,
    /// Changes kept per type.
    history_limit: usize,
    /// Per type: every change with `rv <= compacted` is gone from its history (a watch or a
    /// list page from there gets 410).
    compacted: BTreeMap<TypeKey, u64>,
    /// `compact()` dropped every history up to here.
    compacted_all: u64,
    tx: broadcast::Sender<Timed>,
    pub(crate) rng: fastrand::Rng,
    pub(crate) clock: Arc<dyn Clock>,
    /// Warnings of the write in progress (taken by the HTTP layer after it).
    warnings: Vec<String>,
}

/// Who writes and how (for `managedFields`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writer<'a> {
    pub(crate) manager: &'a str,
    /// `Some("status")` for a write to the status subresource.
    pub(crate) subresource: Option<&'a str>,
    /// How the write's `managedFields` come about.
    pub(crate) recording: Recording<'a>,
    /// `fieldValidation` and what the request's body was found to repeat.
    pub(crate) checks: FieldChecks<'a>,
}

fn subject<'a>(rt: &'a ResourceType, name: &'a str) -> Subject<'a> {
    Subject {
        group: &rt.group,
        plural: &rt.plural,
        name,
    }
}

impl Store {
    pub(crate) fn new(
        types: Vec<ResourceType>,
        history_limit: usize,
        seed: u64,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Self {
            types,
            objects: BTreeMap::new(),
            rv: 0,
            history: BTreeMap::new(),
            history_limit,
            compacted: BTreeMap::new(),
            compacted_all: 0,
            tx,
            rng: fastrand::Rng::with_seed(seed),
            clock,
            warnings: Vec::new(),
        }
    }

    pub(crate) fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Changes of `key` up to this version are gone from its history.
    pub(crate) fn compacted(&self, key: &TypeKey) -> u64 {
        self.compacted
            .get(key)
            .copied()
            .unwrap_or(0)
            .max(self.compacted_all)
    }

    /// Drops the whole retained history: every watch resuming from an older version gets 410.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.compacted.clear();
        self.compacted_all = self.rv;
    }

    /// The clock's time as `metav1.Time` text.
    pub(crate) fn now(&self) -> String {
        timestamp(self.clock.now())
    }

    /// Stores `next` under `key` and records the `Modified` change from `old` (one path for updates
    /// and for the start of a deletion).
    fn store_modified(&mut self, rt: &ResourceType, key: ObjectKey, rv: u64, next: &Doc, old: Doc) {
        self.objects
            .entry(rt.key())
            .or_default()
            .insert(key, next.clone());
        self.commit(Change {
            rv,
            key: rt.key(),
            kind: ChangeKind::Modified,
            object: next.clone(),
            old: Some(old),
        });
    }

    fn commit(&mut self, change: Change) {
        let change = Arc::new(change);
        let history = self.history.entry(change.key.clone()).or_default();
        history.push_back(change.clone());
        while history.len() > self.history_limit {
            if let Some(old) = history.pop_front() {
                self.compacted.insert(change.key.clone(), old.rv);
            }
        }
        // No receiver is not an error: nobody watches.
        let _ = self.tx.send(Timed {
            change,
            at: tokio::time::Instant::now(),
        });
    }

    /// Changes of `key` after `rv`, and a receiver for the later ones, taken atomically.
    pub(crate) fn watch_from(
        &self,
        key: &TypeKey,
        rv: u64,
    ) -> Option<(Vec<Arc<Change>>, broadcast::Receiver<Timed>)> {
        if rv < self.compacted(key) {
            return None;
        }
        let past = self
            .history
            .get(key)
            .into_iter()
            .flatten()
            .filter(|c| c.rv > rv)
            .cloned()
            .collect();
        Some((past, self.tx.subscribe()))
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Timed> {
        self.tx.subscribe()
    }

    pub(crate) fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Doc, ApiStatus> {
        self.objects
            .get(&rt.key())
            .and_then(|m| m.get(&(ns.to_owned(), name.to_owned())))
            .map(|o| with_type(o, rt))
            .ok_or_else(|| ApiStatus::not_found(subject(rt, name)))
    }

    /// Objects of a type in `ns` (all namespaces when `None`), in (namespace, name) order.
    pub(crate) fn list(&self, rt: &ResourceType, ns: Option<&str>) -> Vec<Doc> {
        self.page(rt, ns, None, None, self.rv, |_| true).items
    }

    /// Up to `limit` objects of `rt` in `ns` (all namespaces when `None`) that `keep` selects,
    /// after `after` in (namespace, name) order, as they were at `snapshot`, and how many more
    /// it selects. Costs reference counts for the page, a selector check for each object after
    /// it, and a map of the objects changed since `snapshot`.
    ///
    /// `snapshot` is the `resourceVersion` of the list's first page: the real API server serves
    /// every page of a list from one consistent snapshot (etcd's revision
    /// of the first page). An object written since is served as it was then (the version before
    /// its first later change, from the retained history), one created since is left out, one
    /// deleted since is still listed; the watch that follows the list from `snapshot` then
    /// replays every later change. (Pages read from the live store lose changes: an object
    /// served on an early page and written before the last page — whose version the watch
    /// starts from — never reaches the client's cache.) The caller checks that `snapshot` is
    /// not older than the retained history.
    pub(crate) fn page(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
        snapshot: u64,
        keep: impl Fn(&Doc) -> bool,
    ) -> Page {
        use std::ops::Bound;
        let key = rt.key();
        // The version at `snapshot` of every object changed since: the state before its
        // earliest later change (`None`: it did not exist yet).
        let mut then: BTreeMap<ObjectKey, Option<Doc>> = BTreeMap::new();
        let history = self.history.get(&key).into_iter().flatten();
        for c in history.rev().take_while(|c| c.rv > snapshot) {
            let object = (c.object.namespace().to_owned(), c.object.name().to_owned());
            let before = match c.kind {
                ChangeKind::Added => None,
                ChangeKind::Modified | ChangeKind::Deleted => c.old.clone(),
            };
            then.insert(object, before);
        }
        let empty = BTreeMap::new();
        let live = self.objects.get(&key).unwrap_or(&empty);
        let start = || after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut live = live
            .range::<ObjectKey, _>((start(), Bound::Unbounded))
            .peekable();
        let mut changed = then
            .range::<ObjectKey, _>((start(), Bound::Unbounded))
            .peekable();
        let mut selected = std::iter::from_fn(|| {
            loop {
                let (k, doc) = match (live.peek(), changed.peek()) {
                    (None, None) => return None,
                    (Some((lk, _)), Some((ck, _))) if lk < ck => {
                        live.next().map(|(k, d)| (k, Some(d)))?
                    }
                    (Some(_), None) => live.next().map(|(k, d)| (k, Some(d)))?,
                    (lk, Some((ck, _))) => {
                        if lk.is_some_and(|(lk, _)| lk == ck) {
                            live.next();
                        }
                        changed.next().map(|(k, d)| (k, d.as_ref()))?
                    }
                };
                if let Some(doc) = doc.filter(|d| ns.is_none_or(|want| want == k.0) && keep(d)) {
                    return Some((k, doc));
                }
            }
        });
        let mut items = Vec::new();
        let mut last = None;
        for (k, o) in selected.by_ref().take(limit.unwrap_or(usize::MAX)) {
            items.push(with_type(o, rt));
            last = Some(k);
        }
        Page {
            items,
            last: last.cloned(),
            remaining: selected.count(),
        }
    }

    /// Every stored object of a type group/plural, for inspection.
    pub(crate) fn all_of(&self, key: &TypeKey) -> Vec<Doc> {
        self.objects
            .get(key)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Every stored object, and the objects of the retained history that are no longer stored
    /// (older versions and deleted objects), for sizing.
    pub(crate) fn held(&self) -> (Vec<(&TypeKey, Doc)>, Vec<Doc>) {
        let current: Vec<(&TypeKey, Doc)> = self
            .objects
            .iter()
            .flat_map(|(k, m)| m.values().map(move |d| (k, d.clone())))
            .collect();
        let live: std::collections::HashSet<*const ()> =
            current.iter().map(|(_, d)| d.id()).collect();
        let mut seen = std::collections::HashSet::new();
        let history = self
            .history
            .values()
            .flatten()
            .flat_map(|c| std::iter::once(&c.object).chain(c.old.as_ref()))
            .filter(|d| !live.contains(&d.id()) && seen.insert(d.id()))
            .cloned()
            .collect();
        (current, history)
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        let key = TypeKey {
            group: String::new(),
            plural: "namespaces".into(),
        };
        self.objects
            .get(&key)
            .is_some_and(|m| m.contains_key(&(String::new(), ns.to_owned())))
    }

    /// Admission of a written object: pruning, defaulting and validation of custom resources
    /// ([`validation`]), `fieldValidation` of what was dropped, and the server's warnings.
    fn admit(
        &mut self,
        rt: &ResourceType,
        obj: &mut Value,
        old: Option<&Value>,
        name: &str,
        checks: FieldChecks<'_>,
    ) -> Result<(), ApiStatus> {
        let mut problems: Vec<String> = checks.found.to_vec();
        let mut causes = Vec::new();
        let unknown = match &rt.schema {
            Some(schema) => {
                let admitted = validation::admit(obj, old, schema);
                causes = admitted.causes;
                admitted.unknown
            }
            // Built-in kinds: only `ObjectMeta` is known here.
            None => validation::prune_meta(obj),
        };
        problems.extend(unknown.iter().map(|u| field_validation::unknown_text(u)));
        if !problems.is_empty() {
            match checks.directive {
                Directive::Strict => {
                    return Err(field_validation::strict_error(
                        &rt.kind,
                        &rt.version,
                        &problems,
                    ));
                }
                Directive::Warn => self.warnings.extend(problems),
                Directive::Ignore => {}
            }
        }
        self.warnings
            .extend(validation::finalizer_warnings(obj, old));
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiStatus::invalid(&rt.kind, subject(rt, name), &causes))
        }
    }

    /// Defaults the stored objects of `rt` from its schema, as the server defaults objects it
    /// reads from storage after a CRD gained defaults (the stored versions keep their
    /// `resourceVersion`; no watch event, as nothing was written).
    pub(crate) fn redefault(&mut self, rt: &ResourceType) {
        let Some(schema) = &rt.schema else {
            return;
        };
        if let Some(objects) = self.objects.get_mut(&rt.key()) {
            for doc in objects.values_mut() {
                let mut v = doc.value();
                if validation::defaults::apply(&mut v, schema) {
                    *doc = Doc::new(&v);
                }
            }
        }
    }

    /// Adds warnings to the write in progress.
    pub(crate) fn warn(&mut self, warnings: impl IntoIterator<Item = String>) {
        self.warnings.extend(warnings);
    }

    /// The warnings of the last write, for its answer's `Warning` headers.
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// POST.
    pub(crate) fn create(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        mut obj: Value,
        writer: Writer<'_>,
    ) -> Result<Doc, ApiStatus> {
        if !obj.is_object() {
            return Err(ApiStatus::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let body_ns = meta_str(&obj, "namespace").map(str::to_owned);
        if rt.namespaced {
            if body_ns.as_deref().is_some_and(|b| b != ns) {
                return Err(ApiStatus::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            if !self.namespace_exists(ns) {
                return Err(ApiStatus::not_found(Subject {
                    group: "",
                    plural: "namespaces",
                    name: ns,
                }));
            }
        }
        let name = match meta_str(&obj, "name") {
            Some(n) => n.to_owned(),
            None => match meta_str(&obj, "generateName") {
                Some(prefix) => format!("{prefix}{}", meta::name_suffix(&mut self.rng)),
                None => {
                    return Err(ApiStatus::invalid(
                        &rt.kind,
                        subject(rt, ""),
                        &[Cause {
                            reason: "FieldValueRequired",
                            message: "Required value: name or generateName is required".into(),
                            field: "metadata.name".into(),
                        }],
                    ));
                }
            },
        };
        let key = (ns.to_owned(), name.clone());
        if self
            .objects
            .get(&rt.key())
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiStatus::already_exists(subject(rt, &name)));
        }
        let body_managed = obj.pointer("/metadata/managedFields").cloned();
        meta::strip_server_owned(&mut obj);
        if rt.status_subresource && rt.custom {
            // "Status subresource": the status stanza of a create is ignored.
            if let Some(o) = obj.as_object_mut() {
                o.remove("status");
            }
        }
        self.admit(rt, &mut obj, None, &name, writer.checks)?;
        let now = self.now();
        let uid = meta::uid(&mut self.rng);
        self.rv += 1;
        let rv = self.rv;
        {
            let m = meta::meta_mut(&mut obj);
            m.insert("name".into(), json!(name));
            if rt.namespaced {
                m.insert("namespace".into(), json!(ns));
            } else {
                m.remove("namespace");
            }
            m.insert("uid".into(), json!(uid));
            m.insert("resourceVersion".into(), json!(rv.to_string()));
            m.insert("creationTimestamp".into(), json!(now));
            if rt.has_generation {
                m.insert("generation".into(), json!(1));
            }
        }
        ssa::record(
            rt,
            writer.manager,
            None,
            writer.recording,
            None,
            &mut obj,
            body_managed.as_ref(),
            &now,
        );
        set_type(&mut obj, rt);
        let obj = Doc::new(&obj);
        self.objects
            .entry(rt.key())
            .or_default()
            .insert(key, obj.clone());
        self.commit(Change {
            rv,
            key: rt.key(),
            kind: ChangeKind::Added,
            object: obj.clone(),
            old: None,
        });
        Ok(obj)
    }

    /// PUT (`new` is the body) and PATCH (`new` is the patched copy of the stored object).
    pub(crate) fn update(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        new: Value,
        writer: Writer<'_>,
    ) -> Result<Doc, ApiStatus> {
        let stored = self.get(rt, ns, name)?;
        let old = stored.value();
        self.update_from(rt, ns, name, (stored, old), new, writer)
    }

    /// [`update`](Self::update) of the stored version `stored` (with its parsed `old`).
    fn update_from(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        (stored, old): (Doc, Value),
        new: Value,
        writer: Writer<'_>,
    ) -> Result<Doc, ApiStatus> {
        if !new.is_object() {
            return Err(ApiStatus::bad_request(
                "the request body must be a JSON object",
            ));
        }
        if let Some(body_name) = meta_str(&new, "name")
            && body_name != name
        {
            return Err(ApiStatus::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if let Some(body_rv) = meta_str(&new, "resourceVersion")
            && Some(body_rv) != meta_str(&old, "resourceVersion")
        {
            return Err(ApiStatus::modified(subject(rt, name)));
        }
        if let Some(body_uid) = meta_str(&new, "uid")
            && Some(body_uid) != meta_str(&old, "uid")
        {
            return Err(ApiStatus::conflict(
                subject(rt, name),
                &format!(
                    "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {}",
                    meta_str(&old, "uid").unwrap_or_default()
                ),
            ));
        }
        let body_managed = new.pointer("/metadata/managedFields").cloned();
        let mut next = if writer.subresource == Some("status") {
            // Writes to /status change only status.
            let mut next = old.clone();
            match new.get("status") {
                Some(s) => next["status"] = s.clone(),
                None => {
                    if let Some(o) = next.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
            next
        } else {
            let mut next = new;
            if rt.status_subresource {
                // Writes to the main resource ignore status.
                match old.get("status") {
                    Some(s) => next["status"] = s.clone(),
                    None => {
                        if let Some(o) = next.as_object_mut() {
                            o.remove("status");
                        }
                    }
                }
            }
            meta::keep_server_owned(&old, &mut next);
            next
        };
        let next_ref = &next;
        if meta_str(&old, "deletionTimestamp").is_some() {
            let before = meta::finalizers(&old);
            if meta::finalizers(next_ref)
                .iter()
                .any(|f| !before.contains(f))
            {
                return Err(ApiStatus::invalid(
                    &rt.kind,
                    subject(rt, name),
                    &[Cause {
                        reason: "FieldValueForbidden",
                        message: "Forbidden: no new finalizers can be added if the object is being deleted".into(),
                        field: "metadata.finalizers".into(),
                    }],
                ));
            }
        }
        self.admit(rt, &mut next, Some(&old), name, writer.checks)?;
        set_type(&mut next, rt);
        let now = self.now();
        ssa::record(
            rt,
            writer.manager,
            writer.subresource,
            writer.recording,
            Some(&old),
            &mut next,
            body_managed.as_ref(),
            &now,
        );
        if next == old {
            // A no-op write changes nothing, not even resourceVersion.
            return Ok(stored);
        }
        if rt.has_generation && meta::content_changed(rt, &old, &next) {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta::meta_mut(&mut next).insert("generation".into(), json!(generation + 1));
        }
        self.rv += 1;
        let rv = self.rv;
        meta::meta_mut(&mut next).insert("resourceVersion".into(), json!(rv.to_string()));
        let key = (ns.to_owned(), name.to_owned());
        let gone =
            meta_str(&next, "deletionTimestamp").is_some() && meta::finalizers(&next).is_empty();
        let next = Doc::new(&next);
        if gone {
            // The last finalizer is gone: the object goes.
            if let Some(m) = self.objects.get_mut(&rt.key()) {
                m.remove(&key);
            }
            self.commit(Change {
                rv,
                key: rt.key(),
                kind: ChangeKind::Deleted,
                object: next.clone(),
                old: Some(stored),
            });
            return Ok(next);
        }
        self.store_modified(rt, key, rv, &next, stored);
        Ok(next)
    }

    /// PATCH: applies the patch to the stored object and writes the result like a PUT.
    pub(crate) fn patch(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        writer: Writer<'_>,
    ) -> Result<Doc, ApiStatus> {
        let stored = self.get(rt, ns, name)?;
        let old = stored.value();
        let mut doc = old.clone();
        let old_rv = meta_str(&doc, "resourceVersion").map(str::to_owned);
        patch::apply(kind, &mut doc, body).map_err(|e| match e {
            PatchFailure::Malformed(m) => ApiStatus::bad_request(m),
            PatchFailure::Failed(m) => ApiStatus::new(422, "Invalid", m),
        })?;
        // A patch that sets no resourceVersion is unconditional; one that does is a
        // precondition (the merged document then carries the client's value).
        if meta_str(&doc, "resourceVersion").is_none()
            && let Some(rv) = old_rv
        {
            meta::meta_mut(&mut doc).insert("resourceVersion".into(), json!(rv));
        }
        self.update_from(rt, ns, name, (stored, old), doc, writer)
    }

    /// DELETE with optional `uid` / `resourceVersion` preconditions.
    pub(crate) fn delete(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        pre_uid: Option<&str>,
        pre_rv: Option<&str>,
    ) -> Result<Deleted, ApiStatus> {
        let stored = self.get(rt, ns, name)?;
        let old = stored.value();
        let uid = meta_str(&old, "uid").unwrap_or_default().to_owned();
        if let Some(want) = pre_uid
            && want != uid
        {
            return Err(ApiStatus::conflict(
                subject(rt, name),
                &format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                ),
            ));
        }
        let rv = meta_str(&old, "resourceVersion").unwrap_or_default();
        if let Some(want) = pre_rv
            && want != rv
        {
            return Err(ApiStatus::conflict(
                subject(rt, name),
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"
                ),
            ));
        }
        let key = (ns.to_owned(), name.to_owned());
        if !meta::finalizers(&old).is_empty() {
            if meta_str(&old, "deletionTimestamp").is_some() {
                // Idempotent: deleting again changes nothing.
                return Ok(Deleted::Pending(stored));
            }
            let mut next = old.clone();
            let now = self.now();
            self.rv += 1;
            let rv = self.rv;
            let m = meta::meta_mut(&mut next);
            m.insert("deletionTimestamp".into(), json!(now));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            m.insert("resourceVersion".into(), json!(rv.to_string()));
            if let Some(g) = m.get("generation").and_then(Value::as_i64) {
                m.insert("generation".into(), json!(g + 1));
            }
            let next = Doc::new(&next);
            self.store_modified(rt, key, rv, &next, stored);
            return Ok(Deleted::Pending(next));
        }
        if let Some(m) = self.objects.get_mut(&rt.key()) {
            m.remove(&key);
        }
        self.rv += 1;
        let rv = self.rv;
        let mut last = old;
        meta::meta_mut(&mut last).insert("resourceVersion".into(), json!(rv.to_string()));
        self.commit(Change {
            rv,
            key: rt.key(),
            kind: ChangeKind::Deleted,
            object: Doc::new(&last),
            old: Some(stored),
        });
        Ok(Deleted::Gone(success_deleted(subject(rt, name), &uid)))
    }
}

/// The object with the `apiVersion` and `kind` of the version `rt` serves: the stored copy when
/// it already says so (objects are stored with the type they were written as), else a copy.
fn with_type(obj: &Doc, rt: &ResourceType) -> Doc {
    if obj.is_type(&rt.api_version(), &rt.kind) {
        return obj.clone();
    }
    let mut o = obj.value();
    set_type(&mut o, rt);
    Doc::new(&o)
}

/// Sets `apiVersion` and `kind` to `rt`'s.
fn set_type(obj: &mut Value, rt: &ResourceType) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), json!(rt.api_version()));
        m.insert("kind".into(), json!(rt.kind));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn writer() -> Writer<'static> {
        Writer {
            manager: "test",
            subresource: None,
            recording: Recording::Update,
            checks: FieldChecks::NONE,
        }
    }

    fn config_maps(store: &Store) -> ResourceType {
        store
            .types
            .iter()
            .find(|t| t.group.is_empty() && t.plural == "configmaps")
            .cloned()
            .expect("a built-in type")
    }

    /// A write between two pages: create, relabel or delete object `n` (of 8).
    #[derive(Clone, Debug)]
    enum Write {
        Create(u8),
        Touch(u8),
        Delete(u8),
    }

    fn write() -> impl Strategy<Value = Write> {
        prop_oneof![
            (0u8..8).prop_map(Write::Create),
            (0u8..8).prop_map(Write::Touch),
            (0u8..8).prop_map(Write::Delete),
        ]
    }

    fn apply(store: &mut Store, rt: &ResourceType, w: &Write) {
        // Writes the store refuses (the object exists, or does not) are simply skipped.
        let _ = match w {
            Write::Create(n) => store
                .create(
                    rt,
                    "default",
                    json!({"metadata": {"name": format!("o{n}")}}),
                    writer(),
                )
                .map(|_| ()),
            Write::Touch(n) => {
                let name = format!("o{n}");
                store.get(rt, "default", &name).and_then(|d| {
                    let mut v = d.value();
                    v["data"] = json!({"touched": store.rv.to_string()});
                    store.update(rt, "default", &name, v, writer()).map(|_| ())
                })
            }
            Write::Delete(n) => store
                .delete(rt, "default", &format!("o{n}"), None, None)
                .map(|_| ()),
        };
    }

    proptest! {
        /// Whatever is written between the pages of a list, the pages hold exactly the objects
        /// as they were at the first page's snapshot, and they followed by the changes after
        /// it — what a list-then-watch client applies — end in exactly the objects the store
        /// holds.
        #[test]
        fn pages_then_the_changes_since_their_snapshot_give_the_current_state(
            initial in proptest::collection::vec(0u8..8, 0..8),
            between in proptest::collection::vec(proptest::collection::vec(write(), 0..4), 1..6),
            limit in 1usize..4,
        ) {
            let mut store = Store::new(
                ResourceType::builtins(),
                10_000,
                1,
                Arc::new(provkit_core::SystemClock),
            );
            let rt = config_maps(&store);
            let namespaces = store
                .types
                .iter()
                .find(|t| t.group.is_empty() && t.plural == "namespaces")
                .cloned()
                .expect("a built-in type");
            store
                .create(&namespaces, "", json!({"metadata": {"name": "default"}}), writer())
                .expect("the namespace");
            for n in initial {
                apply(&mut store, &rt, &Write::Create(n));
            }
            let snapshot = store.resource_version();
            let state = |store: &Store| -> BTreeMap<String, Value> {
                store
                    .list(&rt, Some("default"))
                    .iter()
                    .map(|d| (d.name().to_owned(), d.value()))
                    .collect()
            };
            let then = state(&store);
            let mut cache: BTreeMap<String, Value> = BTreeMap::new();
            let mut after: Option<ObjectKey> = None;
            let mut writes = between.into_iter();
            loop {
                let page = store.page(&rt, Some("default"), after.as_ref(), Some(limit), snapshot, |_| true);
                for d in &page.items {
                    cache.insert(d.name().to_owned(), d.value());
                }
                if page.remaining == 0 {
                    break;
                }
                after = page.last;
                for w in writes.next().unwrap_or_default() {
                    apply(&mut store, &rt, &w);
                }
            }
            prop_assert_eq!(&cache, &then, "the pages are the snapshot");
            let (replay, _rx) = store.watch_from(&rt.key(), snapshot).expect("retained");
            for c in replay {
                let name = c.object.name().to_owned();
                match c.kind {
                    ChangeKind::Deleted => { cache.remove(&name); }
                    ChangeKind::Added | ChangeKind::Modified => { cache.insert(name, c.object.value()); }
                }
            }
            prop_assert_eq!(cache, state(&store), "then the replay brings it up to date");
        }
    }
}
