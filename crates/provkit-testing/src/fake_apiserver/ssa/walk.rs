//! The walks server-side apply makes over an object and its schema: the fields a value sets,
//! the fields that differ between two versions, merging an applied configuration into the
//! live object, removing fields, and checking an applied configuration against the schema.
//!
//! Written here because no Rust crate implements Kubernetes' structured merge; the rules are
//! the server-side apply documentation's ("Merge strategy", "Field management") as the API
//! server behaves: an empty or null map or list counts as a leaf, so the difference between
//! empty and absent is kept; items of `set` and `map` lists are owned one by one; atomic
//! lists and maps, and scalars, are owned as a whole.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::path::{Path, PathElement, display};
use super::schema::{ListKind, Node, Shape};
use super::set::FieldSet;

/// The fields added, changed and removed between two versions of an object.
#[derive(Debug, Default, Clone)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

/// The path element of a list item, `None` when a map list's item has none of its keys
/// (nor defaults for them) or is not an object.
pub(crate) fn item_element(
    kind: &ListKind,
    list: Node<'_>,
    item: &Value,
) -> Result<PathElement, String> {
    match kind {
        ListKind::Set => Ok(PathElement::value(item)),
        ListKind::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(if item.is_null() {
                    "associative list with keys may not have a null element".into()
                } else {
                    "associative list with keys may not have non-map elements".into()
                });
            };
            let defaults: Vec<(String, Option<Value>)> = keys
                .iter()
                .map(|k| (k.clone(), list.key_default(k)))
                .collect();
            let mut fields: Vec<(&str, &Value)> = Vec::new();
            for (k, default) in &defaults {
                if let Some(v) = m.get(k) {
                    fields.push((k, v));
                } else if let Some(d) = default {
                    fields.push((k, d));
                }
            }
            if !keys.is_empty() && fields.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {keys:?} (and doesn't have default values for any key fields)"
                ));
            }
            Ok(PathElement::key(&fields))
        }
        ListKind::Atomic => Err("invalid indexing of non-associative list".into()),
    }
}

/// The element of item `i`, falling back to its index when it has no valid key.
fn element_or_index(kind: &ListKind, list: Node<'_>, item: &Value, i: usize) -> PathElement {
    item_element(kind, list, item).unwrap_or(PathElement::Index(i))
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

// ---------------------------------------------------------------------------------------
// The fields a value sets.

/// The fields `v` sets: scalars, atomic lists and maps, list items, map keys, and empty or
/// null objects; a struct's declared field with content is not itself a member.
pub(crate) fn field_set(v: &Value, node: Node<'_>) -> FieldSet {
    let mut out = FieldSet::new();
    collect(v, node, &mut Vec::new(), &mut out);
    out
}

fn collect(v: &Value, node: Node<'_>, path: &mut Path, out: &mut FieldSet) {
    match (node.shape(Some(v)), v) {
        (Shape::Map { atomic: false }, Value::Object(m)) => {
            for (k, child) in m {
                let field = node.field(k);
                let (cnode, named) = field.map_or((Node::Untyped, false), |f| (f.node, f.named));
                path.push(PathElement::Field(k.clone()));
                collect(child, cnode, path, out);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !named {
                    out.insert(path.clone());
                }
                path.pop();
            }
        }
        (Shape::Map { atomic: false }, Value::Null) => {}
        (Shape::List(kind), Value::Array(items)) if kind != ListKind::Atomic => {
            let item_node = node.item();
            let pes: Vec<PathElement> = items
                .iter()
                .enumerate()
                .map(|(i, item)| element_or_index(&kind, node, item, i))
                .collect();
            let mut seen: BTreeMap<&PathElement, usize> = BTreeMap::new();
            for pe in &pes {
                *seen.entry(pe).or_default() += 1;
            }
            for (pe, item) in pes.iter().zip(items) {
                path.push(pe.clone());
                if seen.get(pe).copied().unwrap_or(0) <= 1 {
                    collect(item, item_node, path, out);
                }
                out.insert(path.clone());
                path.pop();
            }
        }
        (Shape::List(_), Value::Null) => {}
        _ => out.insert(path.clone()),
    }
}

// ---------------------------------------------------------------------------------------
// Comparing two versions.

/// The fields added, changed and removed from `old` to `new` (whole objects).
pub(crate) fn compare(old: &Value, new: &Value, node: Node<'_>) -> Comparison {
    let mut out = Comparison::default();
    diff(Some(old), Some(new), node, &mut Vec::new(), &mut out);
    out
}

fn leaf(l: Option<&Value>, r: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (l, r) {
        (None, Some(_)) => out.added.insert(path.clone()),
        (Some(_), None) => out.removed.insert(path.clone()),
        (Some(a), Some(b)) if a != b => out.modified.insert(path.clone()),
        _ => {}
    }
}

fn diff(
    l: Option<&Value>,
    r: Option<&Value>,
    node: Node<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let ls = l.map(|v| node.shape(Some(v)));
    let rs = r.map(|v| node.shape(Some(v)));
    let shape = match (&ls, &rs) {
        (Some(a), Some(b)) if a != b => {
            leaf(l, r, path, out);
            return;
        }
        (_, Some(s)) | (Some(s), None) => s.clone(),
        (None, None) => return,
    };
    let in_leaf = match shape {
        Shape::Map { atomic: false } if !(is_empty_container(l) && is_empty_container(r)) => {
            let empty = Map::new();
            let lm = l.and_then(Value::as_object).unwrap_or(&empty);
            let rm = r.and_then(Value::as_object).unwrap_or(&empty);
            for k in lm.keys().chain(rm.keys().filter(|k| !lm.contains_key(*k))) {
                let cnode = node.field(k).map_or(Node::Untyped, |f| f.node);
                path.push(PathElement::Field(k.clone()));
                diff(lm.get(k), rm.get(k), cnode, path, out);
                path.pop();
            }
            false
        }
        Shape::List(kind)
            if kind != ListKind::Atomic && !(is_empty_container(l) && is_empty_container(r)) =>
        {
            diff_items(&kind, l, r, node, path, out);
            false
        }
        _ => {
            leaf(l, r, path, out);
            true
        }
    };
    if !in_leaf {
        match (l, r) {
            (None, Some(_)) => out.added.insert(path.clone()),
            (Some(_), None) => out.removed.insert(path.clone()),
            _ => {}
        }
    }
}

/// Items of a list grouped by element, in first-seen order.
fn group<'v>(
    kind: &ListKind,
    node: Node<'_>,
    list: Option<&'v Value>,
    order: &mut Vec<PathElement>,
) -> BTreeMap<PathElement, Vec<&'v Value>> {
    let mut out: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    let items = list
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let pe = element_or_index(kind, node, item, i);
        let entry = out.entry(pe.clone()).or_default();
        if entry.is_empty() && !order.contains(&pe) {
            order.push(pe);
        }
        entry.push(item);
    }
    out
}

fn diff_items(
    kind: &ListKind,
    l: Option<&Value>,
    r: Option<&Value>,
    node: Node<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let mut order = Vec::new();
    let lg = group(kind, node, l, &mut order);
    let rg = group(kind, node, r, &mut order);
    let item_node = node.item();
    for pe in order {
        let ll = lg.get(&pe).map(Vec::as_slice).unwrap_or_default();
        let rl = rg.get(&pe).map(Vec::as_slice).unwrap_or_default();
        path.push(pe);
        match (ll.len(), rl.len()) {
            (0..=1, 0..=1) => diff(
                ll.first().copied(),
                rl.first().copied(),
                item_node,
                path,
                out,
            ),
            (2.., 2..) => {
                if ll != rl {
                    out.modified.insert(path.clone());
                }
            }
            (2.., _) => {
                if let Some(first) = rl.first() {
                    diff(None, Some(first), item_node, path, out);
                }
                out.removed.insert(path.clone());
            }
            (_, _) => {
                if let Some(first) = ll.first() {
                    diff(Some(first), None, item_node, path, out);
                }
                out.added.insert(path.clone());
            }
        }
        path.pop();
    }
}

// ---------------------------------------------------------------------------------------
// Merging an applied configuration into the live object.

/// `config` merged into `live`: the configuration's values win; fields, map keys and list
/// items it does not mention are kept; atomic values are replaced whole.
pub(crate) fn merge(live: &Value, config: &Value, node: Node<'_>) -> Value {
    merge_opt(Some(live), Some(config), node).unwrap_or(Value::Object(Map::new()))
}

fn merge_opt(l: Option<&Value>, r: Option<&Value>, node: Node<'_>) -> Option<Value> {
    let shape_l = l.map(|v| node.shape(Some(v)));
    let shape_r = r.map(|v| node.shape(Some(v)));
    let shape = match (&shape_l, &shape_r) {
        (Some(a), Some(b)) if a != b => return r.cloned(),
        (_, Some(s)) | (Some(s), None) => s.clone(),
        (None, None) => return None,
    };
    match shape {
        Shape::Map { atomic: false } if !(is_empty_container(l) && is_empty_container(r)) => {
            let empty = Map::new();
            let lm = l.and_then(Value::as_object).unwrap_or(&empty);
            let rm = r.and_then(Value::as_object).unwrap_or(&empty);
            let mut out = Map::new();
            for k in lm.keys().chain(rm.keys().filter(|k| !lm.contains_key(*k))) {
                let cnode = node.field(k).map_or(Node::Untyped, |f| f.node);
                if let Some(v) = merge_opt(lm.get(k), rm.get(k), cnode) {
                    out.insert(k.clone(), v);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Shape::List(kind)
            if kind != ListKind::Atomic && !(is_empty_container(l) && is_empty_container(r)) =>
        {
            merge_items(&kind, l, r, node)
        }
        _ => r.or(l).cloned(),
    }
}

/// Merges list items by element: items only in the live list keep their place, items of the
/// configuration follow its order.
fn merge_items(
    kind: &ListKind,
    l: Option<&Value>,
    r: Option<&Value>,
    node: Node<'_>,
) -> Option<Value> {
    let index = |list: Option<&Value>| -> Vec<(PathElement, Value)> {
        let items = list
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        items
            .iter()
            .enumerate()
            .map(|(i, item)| (element_or_index(kind, node, item, i), item.clone()))
            .collect()
    };
    let lhs = index(l);
    let rhs = index(r);
    let find = |side: &[(PathElement, Value)], pe: &PathElement| {
        side.iter().find(|(p, _)| p == pe).map(|(_, v)| v.clone())
    };
    let in_rhs = |pe: &PathElement| rhs.iter().any(|(p, _)| p == pe);
    let in_lhs = |pe: &PathElement| lhs.iter().any(|(p, _)| p == pe);
    // The configuration's items that are also live, in the configuration's order.
    let mut shared: std::collections::VecDeque<PathElement> = rhs
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| in_lhs(p))
        .collect();
    let mut next_shared = shared.pop_front();
    let item_node = node.item();
    let mut out = Vec::new();
    let mut merged: Vec<PathElement> = Vec::new();
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                merged.push(pe.clone());
                if let Some(v) =
                    merge_opt(find(&lhs, pe).as_ref(), find(&rhs, pe).as_ref(), item_node)
                {
                    out.push(v);
                }
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if in_rhs(pe) && next_shared.as_ref().is_some_and(|n| n != pe) {
                // A shared item, but not the one due now: it comes in the configuration's order.
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = &lhs[li].0;
            if !in_rhs(pe) {
                if let Some(v) = merge_opt(Some(&lhs[li].1), None, item_node) {
                    out.push(v);
                }
                li += 1;
                continue;
            } else if merged.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs.len() {
            let pe = rhs[ri].0.clone();
            merged.push(pe.clone());
            if let Some(v) = merge_opt(find(&lhs, &pe).as_ref(), Some(&rhs[ri].1), item_node) {
                out.push(v);
            }
            ri += 1;
            if next_shared.as_ref() == Some(&pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    (!out.is_empty()).then_some(Value::Array(out))
}

// ---------------------------------------------------------------------------------------
// Removing fields.

/// `v` without the members of `set` (a member goes with everything below it).
pub(crate) fn remove(v: &Value, set: &FieldSet, node: Node<'_>) -> Value {
    remove_opt(v, set, node).unwrap_or(Value::Object(Map::new()))
}

fn remove_opt(v: &Value, set: &FieldSet, node: Node<'_>) -> Option<Value> {
    if set.is_empty() {
        return Some(v.clone());
    }
    match (node.shape(Some(v)), v) {
        (Shape::Map { atomic: false }, Value::Object(m)) if !m.is_empty() => {
            let mut out = Map::new();
            for (k, child) in m {
                let pe = PathElement::Field(k.clone());
                if set.contains(std::slice::from_ref(&pe)) {
                    continue;
                }
                let sub = set.with_prefix(&pe);
                if sub.is_empty() {
                    out.insert(k.clone(), child.clone());
                    continue;
                }
                let cnode = node.field(k).map_or(Node::Untyped, |f| f.node);
                if let Some(c) = remove_opt(child, &sub, cnode) {
                    out.insert(k.clone(), c);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Shape::List(kind), Value::Array(items))
            if kind != ListKind::Atomic && !items.is_empty() =>
        {
            let item_node = node.item();
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let pe = element_or_index(&kind, node, item, i);
                if set.contains(std::slice::from_ref(&pe)) {
                    continue;
                }
                let sub = set.with_prefix(&pe);
                if sub.is_empty() {
                    out.push(item.clone());
                } else if let Some(c) = remove_opt(item, &sub, item_node) {
                    out.push(c);
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(v.clone()),
    }
}

/// `set` plus, for each member, every declared struct field on its way (so removing them
/// removes a struct left without owned content).
pub(crate) fn with_named_parents(set: &FieldSet, root: Node<'_>) -> FieldSet {
    let mut out = set.clone();
    for path in set.iter() {
        let mut node = root;
        for (i, pe) in path.iter().enumerate() {
            node = match pe {
                PathElement::Field(name) => match node.field(name) {
                    Some(f) => {
                        if f.named && i + 1 < path.len() {
                            out.insert(path[..=i].to_vec());
                        }
                        f.node
                    }
                    None => Node::Untyped,
                },
                _ => node.item(),
            };
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Checking an applied configuration.

/// What the server refuses in an applied configuration before merging it: fields the schema
/// does not declare, values of the wrong kind, list items without keys and duplicate items.
/// Each as `path: message`.
pub(crate) fn check(v: &Value, node: Node<'_>) -> Vec<String> {
    let mut errs = Vec::new();
    check_at(v, node, &mut Vec::new(), &mut errs);
    errs
}

fn type_error(node: Node<'_>, v: &Value) -> Option<String> {
    let Node::Crd(s) = node else {
        return None;
    };
    if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return (!(v.is_string() || v.is_i64() || v.is_u64() || v.is_null()))
            .then(|| format!("expected string or integer, got {v}"));
    }
    match (s.get("type").and_then(Value::as_str), v) {
        (_, Value::Null) => None,
        (Some("integer" | "number"), Value::Number(_))
        | (Some("string"), Value::String(_))
        | (Some("boolean"), Value::Bool(_))
        | (Some("object"), Value::Object(_))
        | (Some("array"), Value::Array(_))
        | (None, _) => None,
        (Some("integer" | "number"), other) => Some(format!(
            "expected numeric (int or float), got {}",
            go_type(other)
        )),
        (Some("string"), other) => Some(format!("expected string, got {other}")),
        (Some("boolean"), other) => Some(format!("expected boolean, got {other}")),
        (Some("object"), other) => Some(format!("expected map, got {other}")),
        (Some("array"), other) => Some(format!("expected list, got {other}")),
        (Some(_), _) => None,
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Number(_) => "int64",
        Value::Null => "<nil>",
    }
}

fn check_at(v: &Value, node: Node<'_>, path: &mut Path, errs: &mut Vec<String>) {
    let at = |path: &Path, msg: String| {
        if path.is_empty() {
            msg
        } else {
            format!("{}: {msg}", display(path))
        }
    };
    if let Some(e) = type_error(node, v) {
        errs.push(at(path, e));
        return;
    }
    match (node.shape(Some(v)), v) {
        (Shape::Map { .. }, Value::Object(m)) => {
            // In name order, whatever order the JSON map keeps (see `validation::schema`).
            let mut fields: Vec<_> = m.iter().collect();
            fields.sort_unstable_by_key(|(k, _)| k.as_str());
            for (k, child) in fields {
                path.push(PathElement::Field(k.clone()));
                match node.field(k) {
                    None => errs.push(at(path, "field not declared in schema".into())),
                    Some(f) => check_at(child, f.node, path, errs),
                }
                path.pop();
            }
        }
        (Shape::List(kind), Value::Array(items)) => {
            let item_node = node.item();
            let mut seen: Vec<PathElement> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if kind == ListKind::Atomic {
                    path.push(PathElement::Index(i));
                    check_at(item, item_node, path, errs);
                    path.pop();
                    continue;
                }
                match item_element(&kind, node, item) {
                    Err(e) => errs.push(at(path, format!("element {i}: {e}"))),
                    Ok(pe) => {
                        if seen.contains(&pe) {
                            errs.push(at(path, format!("duplicate entries for key {pe}")));
                            continue;
                        }
                        seen.push(pe.clone());
                        path.push(pe);
                        check_at(item, item_node, path, errs);
                        path.pop();
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "items": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"}, "v": {"type": "integer"}}}},
            "nested": {"type": "object", "properties": {"a": {"type": "string"}}}
        }}}})
    }

    fn paths(set: &FieldSet) -> Vec<String> {
        set.ordered().iter().map(|p| display(p)).collect()
    }

    /// Shared items follow the applied order; items only in the live list keep their place.
    #[test]
    fn merged_list_order_follows_the_configuration_for_shared_items() {
        let s = schema();
        let root = Node::Root(Some(&s));
        let live = json!({"spec": {"set": ["a", "b", "x"]}});
        let merged = merge(&live, &json!({"spec": {"set": ["b", "a"]}}), root);
        assert_eq!(merged["spec"]["set"], json!(["b", "x", "a"]));
        let merged = merge(&live, &json!({"spec": {"set": ["c", "a"]}}), root);
        assert_eq!(merged["spec"]["set"], json!(["c", "a", "b", "x"]));
        let live = json!({"spec": {"items": [{"name": "p", "v": 1}, {"name": "q", "v": 2}]}});
        let merged = merge(
            &live,
            &json!({"spec": {"items": [{"name": "q", "v": 3}]}}),
            root,
        );
        assert_eq!(
            merged["spec"]["items"],
            json!([{"name": "p", "v": 1}, {"name": "q", "v": 3}])
        );
    }

    /// Creating a map marks the map itself as added (`.`); leaves are added, changed or
    /// removed one by one; an empty map counts as a leaf.
    #[test]
    fn compare_marks_new_containers_and_leaves() {
        let s = schema();
        let root = Node::Root(Some(&s));
        let c = compare(
            &json!({"spec": {"nested": {"a": "x"}, "set": ["a"]}}),
            &json!({"spec": {"nested": {"a": "y"}, "set": ["b"], "items": [{"name": "n"}]}}),
            root,
        );
        assert_eq!(
            paths(&c.added),
            [
                ".spec.items",
                ".spec.items[name=\"n\"]",
                ".spec.items[name=\"n\"].name",
                ".spec.set[=\"b\"]"
            ]
        );
        assert_eq!(paths(&c.modified), [".spec.nested.a"]);
        assert_eq!(paths(&c.removed), [".spec.set[=\"a\"]"]);
        let c = compare(&json!({}), &json!({"spec": {}}), root);
        assert_eq!(paths(&c.added), [".spec"]);
    }

    /// Removing the last owned field of a declared struct removes the struct too once its
    /// parents are counted as owned.
    #[test]
    fn named_parents_make_emptied_structs_go() {
        let s = schema();
        let root = Node::Root(Some(&s));
        let v = json!({"spec": {"nested": {"a": "x"}}, "metadata": {"name": "n"}});
        let set = field_set(&json!({"spec": {"nested": {"a": "x"}}}), root);
        assert_eq!(paths(&set), [".spec.nested.a"]);
        let named = with_named_parents(&set, root);
        assert_eq!(paths(&named), [".spec", ".spec.nested", ".spec.nested.a"]);
        assert_eq!(remove(&v, &named, root), json!({"metadata": {"name": "n"}}));
        assert_eq!(remove(&v, &set, root), json!({"metadata": {"name": "n"}}));
    }

    #[test]
    fn check_reports_undeclared_fields_wrong_kinds_and_bad_items() {
        let s = schema();
        let root = Node::Root(Some(&s));
        let errs = check(
            &json!({"spec": {"bogus": 1, "set": ["a", "a"], "items": [{"v": 1}], "nested": "x"},
                    "metadata": {"labels": {"a": "b"}, "odd": 1}}),
            root,
        );
        assert_eq!(
            errs,
            [
                ".metadata.odd: field not declared in schema",
                ".spec.bogus: field not declared in schema",
                ".spec.items: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)",
                ".spec.nested: expected map, got \"x\"",
                ".spec.set: duplicate entries for key [=\"a\"]"
            ]
        );
    }
}
