//! Server-side apply and field management: `managedFields` with real `fieldsV1` sets for
//! every write, and `application/apply-patch+yaml` merges with ownership and conflicts.
//!
//! - [`path`] and [`set`]: field paths and sets, and their `fieldsV1` form;
//! - [`schema`]: how a type's fields merge (struct or map, atomic, list types);
//! - [`walk`]: the fields a value sets, comparing, merging, removing, checking a config;
//! - [`managers`]: `managedFields` entries and the update and apply bookkeeping;
//! - [`conflict`]: the 409 of a conflicting apply;
//! - [`last_applied`]: kubectl's upgrade from client-side apply.
//!
//! The store calls [`record`] for every create and update; the apply request handler
//! ([`super::apply`]) merges with [`managers::apply`] and hands the store the result with
//! [`Recording::Applied`].

pub(crate) mod conflict;
pub(crate) mod last_applied;
pub(crate) mod managers;
pub(crate) mod path;
pub(crate) mod schema;
pub(crate) mod set;
pub(crate) mod walk;

use serde_json::Value;

use self::managers::{Ignore, Managed, ManagerId, Operation};
use self::schema::Node;
use super::meta;
use super::resource::ResourceType;

/// How a write's `managedFields` come about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Recording<'a> {
    /// A create, update or non-apply patch: recorded as the writer's `Update`.
    Update,
    /// An apply: the entries were computed with the merge (`None`: no entry is left).
    Applied(Option<&'a Value>),
}

/// The schema root of objects of `rt`.
pub(crate) fn root(rt: &ResourceType) -> Node<'_> {
    Node::Root(rt.schema.as_ref())
}

/// What a write to `subresource` of `rt` may own.
pub(crate) fn ignore(rt: &ResourceType, subresource: Option<&str>) -> Ignore {
    match subresource {
        Some("status") => Ignore::Spec,
        _ if rt.status_subresource => Ignore::Status,
        _ => Ignore::Nothing,
    }
}

/// The entries a non-apply write starts from: the request's own `managedFields` when it
/// sends valid ones to the main resource (`[]` or `[{}]` clears them), else the stored ones.
fn starting_point(old: Option<&Value>, body: Option<&Value>, subresource: bool) -> Managed {
    let stored = || {
        old.and_then(|o| o.pointer("/metadata/managedFields"))
            .and_then(|m| Managed::decode(m).ok())
            .unwrap_or_default()
    };
    if subresource {
        return stored();
    }
    match body {
        Some(Value::Array(items))
            if items.is_empty()
                || (items.len() == 1
                    && items[0].as_object().is_some_and(serde_json::Map::is_empty)) =>
        {
            Managed::default()
        }
        Some(list @ Value::Array(_)) => match Managed::decode(list) {
            Ok(m) if !m.entries.is_empty() => m,
            _ => stored(),
        },
        _ => stored(),
    }
}

/// Records a write in `new`'s `managedFields`: `old` is the stored object (`None` on
/// create), `body_managed` the `managedFields` the request carried.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(
    rt: &ResourceType,
    manager: &str,
    subresource: Option<&str>,
    recording: Recording<'_>,
    old: Option<&Value>,
    new: &mut Value,
    body_managed: Option<&Value>,
    now: &str,
) {
    let encoded = match recording {
        Recording::Applied(list) => list.cloned(),
        Recording::Update => {
            let mut managed = starting_point(old, body_managed, subresource.is_some());
            let api_version = rt.api_version();
            let id = ManagerId::new(manager, Operation::Update, &api_version, subresource);
            let writing = managers::Writing {
                id: &id,
                api_version: &api_version,
                root: root(rt),
                ignore: ignore(rt, subresource),
                now,
            };
            managers::update(old, new, &mut managed, writing);
            managed.encode()
        }
    };
    let m = meta::meta_mut(new);
    match encoded {
        Some(list) => {
            m.insert("managedFields".into(), list);
        }
        None => {
            m.remove("managedFields");
        }
    }
}
