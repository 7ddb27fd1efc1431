//! `metadata.managedFields`: who owns which fields, read from and written back to the object,
//! and the bookkeeping of an update (non-apply write) and of an apply.
//!
//! Rules from the server-side apply documentation ("Field management", "Conflicts",
//! "Merge strategy", "Clearing managedFields") and the API reference of
//! `ManagedFieldsEntry`: one entry per manager and operation (and subresource; `Update`
//! entries also per `apiVersion`); an `Update` entry gains the fields its write added or
//! changed; an `Apply` entry is exactly the fields of the last applied configuration; a write
//! takes the fields it changes away from every other manager (an apply refuses to unless
//! forced); a field removed from the object leaves every owner; entries without fields
//! disappear; the object's identity and server-set metadata (`apiVersion`, `kind`,
//! `metadata.name`, `namespace`, `uid`, `resourceVersion`, `generation`,
//! `creationTimestamp`, `managedFields`) are never owned; at most 10 `Update` entries are
//! kept, older ones merged into `ancient-changes`.

use serde_json::{Map, Value, json};

use super::path::{Path, PathElement};
use super::schema::Node;
use super::set::FieldSet;
use super::walk::{self, Comparison};

/// The operation of a `managedFields` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// Who an entry belongs to: manager, operation, subresource, and for `Update` the
/// `apiVersion` written with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManagerId {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    /// Empty for `Apply` (an applier keeps one entry whatever version it applies with).
    pub(crate) api_version: String,
    pub(crate) subresource: String,
}

impl ManagerId {
    pub(crate) fn new(
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: Option<&str>,
    ) -> Self {
        Self {
            manager: manager.to_owned(),
            operation,
            api_version: if operation == Operation::Apply {
                String::new()
            } else {
                api_version.to_owned()
            },
            subresource: subresource.unwrap_or_default().to_owned(),
        }
    }

    /// The identifier the API server orders managers by (the entry as JSON without fields
    /// and time, in the entry's field order).
    pub(crate) fn identifier(&self) -> String {
        let mut s = format!(
            "{{\"manager\":{},\"operation\":\"{}\"",
            Value::String(self.manager.clone()),
            self.operation.as_str()
        );
        if !self.api_version.is_empty() {
            s.push_str(&format!(
                ",\"apiVersion\":{}",
                Value::String(self.api_version.clone())
            ));
        }
        if !self.subresource.is_empty() {
            s.push_str(&format!(
                ",\"subresource\":{}",
                Value::String(self.subresource.clone())
            ));
        }
        s.push('}');
        s
    }

    /// How conflict messages name the manager: `"name"`, `"name" with subresource "status"`,
    /// and for `Update` entries ` using <apiVersion>`.
    pub(crate) fn describe(&self) -> String {
        let mut s = Value::String(self.manager.clone()).to_string();
        if !self.subresource.is_empty() {
            s.push_str(&format!(
                " with subresource {}",
                Value::String(self.subresource.clone())
            ));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: ManagerId,
    /// The `apiVersion` of the entry (the version last written with).
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
    pub(crate) set: FieldSet,
}

/// Every entry of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Managed {
    pub(crate) entries: Vec<Entry>,
}

/// The manager that takes over the fields of an object first applied to when it had no
/// `managedFields`.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The manager older `Update` entries are merged into.
const ANCIENT_CHANGES: &str = "ancient-changes";
/// `Update` entries kept.
const MAX_UPDATE_MANAGERS: usize = 10;

/// Which part of the object a write may own (the fields the write's strategy resets are
/// ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ignore {
    Nothing,
    /// A write to the main resource of a type with the status subresource.
    Status,
    /// A write to the status subresource.
    Spec,
}

impl Ignore {
    fn ignores(self, path: &Path) -> bool {
        let top = |name: &str| matches!(path.first(), Some(PathElement::Field(f)) if f == name);
        match self {
            Self::Nothing => false,
            Self::Status => top("status"),
            Self::Spec => top("spec"),
        }
    }

    fn filter(self, set: &FieldSet) -> FieldSet {
        set.filter(|p| !self.ignores(p))
    }

    fn comparison(self, c: &Comparison) -> Comparison {
        Comparison {
            added: self.filter(&c.added),
            modified: self.filter(&c.modified),
            removed: self.filter(&c.removed),
        }
    }
}

/// Fields no manager owns.
fn strip(set: &FieldSet) -> FieldSet {
    set.filter(|p| {
        let names: Vec<&str> = p
            .iter()
            .map(|pe| match pe {
                PathElement::Field(f) => f.as_str(),
                _ => "",
            })
            .collect();
        !matches!(
            names.as_slice(),
            ["apiVersion" | "kind" | "metadata"]
                | [
                    "metadata",
                    "name"
                        | "namespace"
                        | "creationTimestamp"
                        | "selfLink"
                        | "uid"
                        | "clusterName"
                        | "generation"
                        | "managedFields"
                        | "resourceVersion"
                ]
        )
    })
}

impl Managed {
    /// Reads `metadata.managedFields`.
    pub(crate) fn decode(list: &Value) -> Result<Self, String> {
        let Some(items) = list.as_array() else {
            return Err("managedFields must be a list".into());
        };
        let mut entries: Vec<Entry> = Vec::new();
        for (i, e) in items.iter().enumerate() {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let operation = match text("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err("operation must be `Apply` or `Update`".into()),
            };
            let api_version = text("apiVersion");
            if api_version.is_empty() {
                return Err("apiVersion must not be empty".into());
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ));
                }
            }
            let set = match e.get("fieldsV1") {
                Some(f) if !f.is_null() => FieldSet::from_fields_v1(f)?,
                _ => FieldSet::new(),
            };
            let sub = text("subresource");
            let id = ManagerId::new(
                text("manager"),
                operation,
                api_version,
                (!sub.is_empty()).then_some(sub),
            );
            let entry = Entry {
                id,
                api_version: api_version.to_owned(),
                time: e.get("time").and_then(Value::as_str).map(str::to_owned),
                set,
            };
            // A later entry with the same identity replaces an earlier one.
            entries.retain(|x| x.id != entry.id);
            entries.push(entry);
        }
        Ok(Self { entries })
    }

    /// `metadata.managedFields`, ordered as the API server orders it (operation, time,
    /// manager, apiVersion, subresource); `None` when no entry is left.
    pub(crate) fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut entries: Vec<&Entry> = self.entries.iter().collect();
        entries.sort_by(|p, q| {
            (
                p.id.operation,
                p.time.as_deref().unwrap_or(""),
                &p.id.manager,
                &p.api_version,
                &p.id.subresource,
            )
                .cmp(&(
                    q.id.operation,
                    q.time.as_deref().unwrap_or(""),
                    &q.id.manager,
                    &q.api_version,
                    &q.id.subresource,
                ))
        });
        Some(Value::Array(
            entries
                .into_iter()
                .map(|e| {
                    let mut m = Map::new();
                    m.insert("manager".into(), json!(e.id.manager));
                    m.insert("operation".into(), json!(e.id.operation.as_str()));
                    m.insert("apiVersion".into(), json!(e.api_version));
                    if let Some(t) = &e.time {
                        m.insert("time".into(), json!(t));
                    }
                    m.insert("fieldsType".into(), json!("FieldsV1"));
                    m.insert("fieldsV1".into(), e.set.to_fields_v1());
                    if !e.id.subresource.is_empty() {
                        m.insert("subresource".into(), json!(e.id.subresource));
                    }
                    Value::Object(m)
                })
                .collect(),
        ))
    }

    fn get(&self, id: &ManagerId) -> Option<&Entry> {
        self.entries.iter().find(|e| &e.id == id)
    }

    fn entry(&mut self, id: &ManagerId, api_version: &str) -> &mut Entry {
        if let Some(i) = self.entries.iter().position(|e| &e.id == id) {
            return &mut self.entries[i];
        }
        self.entries.push(Entry {
            id: id.clone(),
            api_version: api_version.to_owned(),
            time: None,
            set: FieldSet::new(),
        });
        let last = self.entries.len() - 1;
        &mut self.entries[last]
    }

    /// Every field some manager owns.
    fn all(&self) -> FieldSet {
        self.entries
            .iter()
            .fold(FieldSet::new(), |acc, e| acc.union(&e.set))
    }

    fn remove(&mut self, id: &ManagerId) -> Option<Entry> {
        let i = self.entries.iter().position(|e| &e.id == id)?;
        Some(self.entries.remove(i))
    }

    /// At most [`MAX_UPDATE_MANAGERS`] `Update` entries after an update: from the oldest on,
    /// a second entry of the same `apiVersion` is merged with the first into
    /// `ancient-changes`.
    fn cap(&mut self) {
        let mut updaters: Vec<(String, String, ManagerId)> = self
            .entries
            .iter()
            .filter(|e| e.id.operation == Operation::Update)
            .map(|e| {
                (
                    e.time.clone().unwrap_or_default(),
                    e.id.identifier(),
                    e.id.clone(),
                )
            })
            .collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        updaters.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let mut length = updaters.len();
        let mut first: Vec<(String, ManagerId)> = Vec::new();
        for (_, _, id) in updaters {
            if length <= MAX_UPDATE_MANAGERS {
                break;
            }
            let Some(entry) = self.get(&id).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket = ManagerId::new(ANCIENT_CHANGES, Operation::Update, &version, None);
            match first.iter().find(|(v, _)| *v == version) {
                Some((_, first_id)) => {
                    if self.get(&bucket).is_none()
                        && let Some(moved) = self.remove(first_id)
                    {
                        self.entries.push(Entry {
                            id: bucket.clone(),
                            ..moved
                        });
                    }
                    self.remove(&id);
                    let b = self.entry(&bucket, &version);
                    b.set = b.set.union(&entry.set);
                    b.time = entry.time;
                    length -= 1;
                }
                None => first.push((version, id)),
            }
        }
    }
}

/// Paths of a manager that a write would take from it.
pub(crate) type Conflicts = Vec<(ManagerId, Path)>;

/// What a write does to the other managers: each loses the fields removed from the object
/// and, when `force` (always for updates), the fields the write changed or added; without
/// `force` those are conflicts.
fn settle_others(
    managed: &mut Managed,
    cmp: &Comparison,
    skip: Option<&ManagerId>,
    force: bool,
) -> Result<(), Conflicts> {
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts: Conflicts = Vec::new();
    for e in managed.entries.iter().filter(|e| Some(&e.id) != skip) {
        for p in e.set.intersection(&changed).ordered() {
            conflicts.push((e.id.clone(), p));
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by_key(|c| c.0.identifier());
        return Err(conflicts);
    }
    for e in managed.entries.iter_mut().filter(|e| Some(&e.id) != skip) {
        e.set = e.set.difference(&changed).difference(&cmp.removed);
    }
    managed.entries.retain(|e| !e.set.is_empty());
    Ok(())
}

/// Objects as compared: without `metadata.managedFields`.
fn bare(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    o
}

/// Who writes, with which version, to which part of which type, when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writing<'a> {
    pub(crate) id: &'a ManagerId,
    pub(crate) api_version: &'a str,
    pub(crate) root: Node<'a>,
    pub(crate) ignore: Ignore,
    pub(crate) now: &'a str,
}

/// A non-apply write from `old` (`None` for a create) to `new`.
pub(crate) fn update(old: Option<&Value>, new: &Value, managed: &mut Managed, w: Writing<'_>) {
    if managed.entries.is_empty() && old.is_some() {
        // Ownership is not tracked for an object without managedFields until it is applied to.
        return;
    }
    let empty = json!({});
    let cmp = w.ignore.comparison(&walk::compare(
        &bare(old.unwrap_or(&empty)),
        &bare(new),
        w.root,
    ));
    // A write takes what it changes: nobody else keeps it.
    let _ = settle_others(managed, &cmp, None, true);
    let took = strip(&cmp.modified.union(&cmp.added));
    if !took.is_empty() {
        let entry = managed.entry(w.id, w.api_version);
        entry.set = entry.set.union(&took);
        entry.api_version = w.api_version.to_owned();
        entry.time = Some(w.now.to_owned());
    }
    managed.cap();
}

/// An apply of `config` to `live` (an empty object when the apply creates it): the merged
/// object, or the conflicts with other managers.
pub(crate) fn apply(
    live: &Value,
    config: &Value,
    managed: &mut Managed,
    w: Writing<'_>,
    force: bool,
) -> Result<Value, Conflicts> {
    let (root, ignore) = (w.root, w.ignore);
    let live = bare(live);
    if managed.entries.is_empty() && live.pointer("/metadata/uid").is_some() {
        // The first apply to an object nobody was recorded for: its fields go to
        // `before-first-apply`, so the apply conflicts with them like with any manager's.
        let before = ManagerId::new(BEFORE_FIRST_APPLY, Operation::Update, w.api_version, None);
        let mut seeded = Managed::default();
        let cmp = ignore.comparison(&walk::compare(&json!({}), &live, root));
        let took = strip(&cmp.modified.union(&cmp.added));
        if !took.is_empty() {
            let e = seeded.entry(&before, w.api_version);
            e.set = took;
            e.time = Some(w.now.to_owned());
        }
        *managed = seeded;
    }
    let merged = walk::merge(&live, config, root);
    let last = managed.get(w.id).map(|e| e.set.clone());
    let set = ignore.filter(&walk::field_set(config, root));
    {
        let e = managed.entry(w.id, w.api_version);
        e.set = set;
        e.api_version = w.api_version.to_owned();
    }
    let merged = match last {
        Some(last) if !last.is_empty() => prune(&merged, managed, &last, root),
        _ => merged,
    };
    let cmp = ignore.comparison(&walk::compare(&live, &merged, root));
    settle_others(managed, &cmp, Some(w.id), force)?;
    let changed = live != merged;
    if let Some(i) = managed.entries.iter().position(|e| &e.id == w.id) {
        let e = &mut managed.entries[i];
        e.set = strip(&e.set);
        if e.set.is_empty() {
            managed.entries.remove(i);
        } else if changed {
            e.time = Some(w.now.to_owned());
        }
    }
    Ok(merged)
}

/// Removes from `merged` what the applier applied last time and no longer does, unless a
/// manager (the applier's new configuration included) still owns it.
fn prune(merged: &Value, managed: &Managed, last: &FieldSet, root: Node<'_>) -> Value {
    let named = |s: &FieldSet| walk::with_named_parents(s, root);
    let last = named(last);
    let pruned = walk::remove(merged, &last, root);
    let merged_set = named(&walk::field_set(merged, root));
    // Add back what someone owns.
    let keep = named(&walk::field_set(&pruned, root)).union(&named(&managed.all()));
    let pruned = walk::remove(merged, &merged_set.difference(&keep), root);
    // Remove only what the applier had applied.
    let pruned_set = named(&walk::field_set(&pruned, root));
    walk::remove(
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
        root,
    )
}
