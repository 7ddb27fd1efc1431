//! Sets of field paths (what one manager owns) and their `fieldsV1` form.
//!
//! A set is kept as the sorted set of its member paths; a path can be a member and have
//! members below it (`fieldsV1` then holds `".": {}` beside the children).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::{Path, PathElement};

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(BTreeSet<Path>);

/// The members of a set as a tree, for `fieldsV1` and for the server's listing order.
#[derive(Debug, Default)]
struct Trie {
    member: bool,
    children: BTreeMap<PathElement, Trie>,
}

impl Trie {
    fn of(set: &FieldSet) -> Self {
        let mut root = Self::default();
        for path in &set.0 {
            let mut node = &mut root;
            for pe in path {
                node = node.children.entry(pe.clone()).or_default();
            }
            node.member = true;
        }
        root
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (pe, child) in &self.children {
            m.insert(pe.encode(), child.to_json());
        }
        Value::Object(m)
    }

    /// Members in the server's order: this level's members first, then each child's.
    fn walk(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (pe, child) in &self.children {
            if child.member {
                prefix.push(pe.clone());
                out.push(prefix.clone());
                prefix.pop();
            }
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.walk(prefix, out);
            prefix.pop();
        }
    }
}

impl FieldSet {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn insert(&mut self, path: Path) {
        self.0.insert(path);
    }

    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        self.0.contains(path)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    #[must_use]
    pub(crate) fn union(&self, other: &Self) -> Self {
        Self(self.0.union(&other.0).cloned().collect())
    }

    #[must_use]
    pub(crate) fn intersection(&self, other: &Self) -> Self {
        Self(self.0.intersection(&other.0).cloned().collect())
    }

    #[must_use]
    pub(crate) fn difference(&self, other: &Self) -> Self {
        Self(self.0.difference(&other.0).cloned().collect())
    }

    /// The members for which `keep` holds.
    #[must_use]
    pub(crate) fn filter(&self, keep: impl Fn(&Path) -> bool) -> Self {
        Self(self.0.iter().filter(|p| keep(p)).cloned().collect())
    }

    /// The members below `pe` (at least one element longer), with `pe` taken off.
    #[must_use]
    pub(crate) fn with_prefix(&self, pe: &PathElement) -> Self {
        Self(
            self.0
                .iter()
                .filter(|p| p.len() > 1 && &p[0] == pe)
                .map(|p| p[1..].to_vec())
                .collect(),
        )
    }

    /// The members in the order the API server lists them (conflicts).
    pub(crate) fn ordered(&self) -> Vec<Path> {
        let mut out = Vec::new();
        Trie::of(self).walk(&mut Vec::new(), &mut out);
        out
    }

    /// The `fieldsV1` object.
    pub(crate) fn to_fields_v1(&self) -> Value {
        Trie::of(self).to_json()
    }

    /// Reads a `fieldsV1` object.
    pub(crate) fn from_fields_v1(v: &Value) -> Result<Self, String> {
        let mut set = Self::new();
        read(v, &mut Vec::new(), &mut set)?;
        Ok(set)
    }
}

fn read(v: &Value, prefix: &mut Path, set: &mut FieldSet) -> Result<(), String> {
    let Value::Object(m) = v else {
        return Err(format!("expected an object, got {v}"));
    };
    for (k, child) in m {
        if k == "." {
            if !prefix.is_empty() {
                set.insert(prefix.clone());
            }
            continue;
        }
        let pe = PathElement::decode(k).ok_or_else(|| format!("invalid path element {k:?}"))?;
        prefix.push(pe);
        match child {
            Value::Object(c) if c.is_empty() => set.insert(prefix.clone()),
            _ => read(child, prefix, set)?,
        }
        prefix.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trip_with_dot_for_members_that_have_children() {
        let v = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:ports": {"k:{\"port\":80}": {".": {}, "f:name": {}}}, "f:size": {}}
        });
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert!(set.contains(&[f("metadata"), f("labels")]));
        assert!(!set.contains(&[f("metadata")]));
        assert_eq!(set.to_fields_v1(), v);
        assert!(FieldSet::from_fields_v1(&json!({"x:1": {}})).is_err());
    }

    #[test]
    fn ordered_lists_a_level_s_members_before_its_children() {
        let mut set = FieldSet::new();
        set.insert(vec![f("a"), f("x")]);
        set.insert(vec![f("b")]);
        let shown: Vec<String> = set
            .ordered()
            .iter()
            .map(|p| super::super::path::display(p))
            .collect();
        assert_eq!(shown, [".b", ".a.x"]);
    }
}
