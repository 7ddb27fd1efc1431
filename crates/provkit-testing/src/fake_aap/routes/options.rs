//! `OPTIONS` metadata as Django REST framework serves it (`name`, `description`, `renders`,
//! `parses`, `actions` with per-method field metadata). The official `awx` CLI reads `actions`
//! before every command (list filters from `GET`, create options from `POST`, launch options from
//! the launch endpoint's `POST`), so every field carries a `type`.

use serde_json::{Map, Value, json};

use super::lists::{JOB_FIELDS, TEMPLATE_FIELDS};
use super::paths::{Api, Route};

/// The DRF field type of a listed field (as the awx CLI understands them).
fn field_type(field: &str) -> &'static str {
    match field {
        "id" | "job_slice_count" | "verbosity" | "forks" | "timeout" => "integer",
        "organization"
        | "inventory"
        | "project"
        | "job_template"
        | "workflow_job_template"
        | "unified_job_template"
        | "unified_job_node__workflow_job" => "id",
        "created" | "modified" | "started" | "finished" => "datetime",
        "elapsed" => "decimal",
        "extra_vars" => "json",
        "failed" | "allow_simultaneous" | "survey_enabled" | "diff_mode" => "boolean",
        f if f.starts_with("ask_") => "boolean",
        "status" | "type" | "launch_type" | "job_type" => "choice",
        _ => "string",
    }
}

fn fields(names: &[&str], filterable: bool) -> Value {
    let mut m = Map::new();
    for name in names.iter().filter(|n| !n.contains("__")) {
        m.insert(
            (*name).to_owned(),
            json!({"type": field_type(name), "label": name.replace('_', " "), "help_text": "",
                   "filterable": filterable, "required": false}),
        );
    }
    Value::Object(m)
}

const LAUNCH_FIELDS: &[&str] = &[
    "extra_vars",
    "inventory",
    "limit",
    "job_tags",
    "skip_tags",
    "job_type",
    "verbosity",
    "diff_mode",
    "scm_branch",
    "forks",
    "timeout",
    "job_slice_count",
];

/// The `OPTIONS` body for `route`.
pub(crate) fn metadata(route: &Route) -> Value {
    let (name, actions) = match route {
        Route::Api { api, .. } => match api {
            Api::Templates(_) | Api::UnifiedJobTemplates => {
                ("Templates", json!({"GET": fields(TEMPLATE_FIELDS, true)}))
            }
            Api::Jobs(_) | Api::UnifiedJobs | Api::TemplateJobs(..) => {
                ("Jobs", json!({"GET": fields(JOB_FIELDS, true)}))
            }
            Api::Template(..) => ("Template", json!({"GET": fields(TEMPLATE_FIELDS, false)})),
            Api::Job(..) => ("Job", json!({"GET": fields(JOB_FIELDS, false)})),
            Api::Launch(..) => (
                "Launch",
                json!({"POST": fields(LAUNCH_FIELDS, false), "GET": {}}),
            ),
            Api::Organizations => {
                let mut post = fields(&["name", "description"], false);
                post["name"]["required"] = json!(true);
                (
                    "Organizations",
                    json!({"GET": fields(&["id", "name", "description"], true), "POST": post}),
                )
            }
            Api::Users => (
                "Users",
                json!({"GET": fields(&["id", "username", "is_superuser"], true)}),
            ),
            _ => ("Resource", json!({"GET": {}})),
        },
        _ => ("Root", json!({"GET": {}})),
    };
    json!({
        "name": name,
        "description": "",
        "renders": ["application/json", "text/html"],
        "parses": ["application/json"],
        "types": [],
        "actions": actions,
    })
}
