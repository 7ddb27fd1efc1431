//! The 409 an apply gets when it would change fields other managers own.
//!
//! Shape from the server-side apply documentation ("Conflicts") and the API conventions:
//! reason `Conflict`, the message `Apply failed with N conflict(s): …` naming each manager and
//! path, and one `details.causes` entry per conflicting field with reason
//! `FieldManagerConflict`, message `conflict with "<manager>"…` and the field path.

use serde_json::{Value, json};

use super::managers::{Conflicts, ManagerId};
use super::path::display;
use crate::fake_apiserver::status::ApiStatus;

/// The status of a refused apply.
pub(crate) fn status(conflicts: &Conflicts) -> ApiStatus {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(id, path)| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {}", id.describe()),
                "field": display(path),
            })
        })
        .collect();
    ApiStatus::new(409, "Conflict", message(conflicts)).with_details(json!({ "causes": causes }))
}

fn message(conflicts: &Conflicts) -> String {
    if let [(id, path)] = conflicts.as_slice() {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            id.describe(),
            display(path)
        );
    }
    let mut managers: Vec<&ManagerId> = Vec::new();
    for (id, _) in conflicts {
        if !managers.contains(&id) {
            managers.push(id);
        }
    }
    managers.sort_by_key(|id| id.identifier());
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {}:", m.describe()));
        for (_, path) in conflicts.iter().filter(|(id, _)| id == m) {
            lines.push(format!("- {}", display(path)));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}
