//! Discovery documents, ping, me, and the dispatcher for version-root resources.

use serde_json::{Map, Value, json};

use super::super::app::{App, Ctx, Resp};
use super::super::ovalue::{OValue, omap_get};
use super::super::render::ts;
use super::super::spec::Mode;
use super::super::state::{Org, User};
use super::launch;
use super::lists;
use super::paths::{AWX_PREFIX, CONTROLLER_PREFIX};

const VERSION_ROOT_KEYS: [(&str, &str); 53] = [
    ("ping", "ping"),
    ("instances", "instances"),
    ("instance_groups", "instance_groups"),
    ("receptor_addresses", "receptor_addresses"),
    ("config", "config"),
    ("settings", "settings"),
    ("me", "me"),
    ("dashboard", "dashboard"),
    ("organizations", "organizations"),
    ("users", "users"),
    ("execution_environments", "execution_environments"),
    ("projects", "projects"),
    ("project_updates", "project_updates"),
    ("teams", "teams"),
    ("credentials", "credentials"),
    ("credential_types", "credential_types"),
    ("credential_input_sources", "credential_input_sources"),
    ("applications", "applications"),
    ("tokens", "tokens"),
    ("metrics", "metrics"),
    ("inventory", "inventories"),
    ("constructed_inventory", "constructed_inventories"),
    ("inventory_sources", "inventory_sources"),
    ("inventory_updates", "inventory_updates"),
    ("groups", "groups"),
    ("hosts", "hosts"),
    ("host_metrics", "host_metrics"),
    ("host_metric_summary_monthly", "host_metric_summary_monthly"),
    ("job_templates", "job_templates"),
    ("jobs", "jobs"),
    ("ad_hoc_commands", "ad_hoc_commands"),
    ("system_job_templates", "system_job_templates"),
    ("system_jobs", "system_jobs"),
    ("schedules", "schedules"),
    ("roles", "roles"),
    ("notification_templates", "notification_templates"),
    ("notifications", "notifications"),
    ("labels", "labels"),
    ("unified_job_templates", "unified_job_templates"),
    ("unified_jobs", "unified_jobs"),
    ("activity_stream", "activity_stream"),
    ("workflow_job_templates", "workflow_job_templates"),
    ("workflow_jobs", "workflow_jobs"),
    ("workflow_approvals", "workflow_approvals"),
    ("workflow_job_template_nodes", "workflow_job_template_nodes"),
    ("workflow_job_nodes", "workflow_job_nodes"),
    ("mesh_visualizer", "mesh_visualizer"),
    ("bulk", "bulk"),
    ("analytics", "analytics"),
    ("service_index", "service-index"),
    ("role_definitions", "role_definitions"),
    ("role_user_assignments", "role_user_assignments"),
    ("role_team_assignments", "role_team_assignments"),
];

fn controller_doc(prefix: &str, with_oauth2: bool) -> Value {
    let mut v = json!({
        "description": "AWX REST API",
        "current_version": prefix,
        "available_versions": {"v2": prefix},
        "custom_logo": "",
        "custom_login_info": "",
        "login_redirect_override": "",
    });
    if with_oauth2 {
        v["oauth2"] = json!("/api/o/");
        v["swagger"] = json!("/api/swagger/");
    }
    v
}

/// `GET /api/`.
pub(crate) fn api_root(app: &App) -> Resp {
    match app.mode {
        Mode::Awx | Mode::Both => Resp::json(200, &controller_doc(AWX_PREFIX, true)),
        Mode::Gateway | Mode::Aap27 => Resp::json(
            200,
            &json!({"apis": {"gateway": "/api/gateway/", "controller": "/api/controller/", "eda": "/api/eda/", "galaxy": "/api/galaxy/"}}),
        ),
    }
}

/// `GET /api/controller/`.
pub(crate) fn controller_root() -> Resp {
    Resp::json(200, &controller_doc(CONTROLLER_PREFIX, false))
}

/// `GET /api/gateway/v1/`.
pub(crate) fn gateway_root() -> Resp {
    Resp::json(
        200,
        &json!({"tokens": "/api/gateway/v1/tokens/", "me": "/api/gateway/v1/me/", "ping": "/api/gateway/v1/ping/"}),
    )
}

pub(crate) fn version_root(prefix: &str) -> Resp {
    let mut m = Map::new();
    for (key, path) in VERSION_ROOT_KEYS {
        m.insert(key.to_owned(), json!(format!("{prefix}{path}/")));
    }
    Resp::json(200, &Value::Object(m))
}

pub(crate) fn ping(app: &App) -> Resp {
    let st = app.lock();
    let heartbeat = ts(app.clock.now());
    let node = &app.node;
    let install = {
        let mut rng = fastrand::Rng::with_seed(st.settings.seed ^ 0x1);
        super::super::state::uuid4(&mut rng)
    };
    Resp::json(
        200,
        &json!({
            "ha": false,
            "version": app.version,
            "active_node": node,
            "install_uuid": install,
            "instances": [{"node": node, "node_type": "hybrid", "uuid": "dabeb25c-6487-4e08-aa2c-3a979cc6bd57",
                           "heartbeat": heartbeat, "capacity": 220, "version": app.version}],
            "instance_groups": [
                {"name": "controlplane", "capacity": 220, "instances": [node]},
                {"name": "default", "capacity": 220, "instances": [node]},
            ],
        }),
    )
}

pub(crate) fn user_json(u: &User, prefix: &str, created: &str) -> Value {
    json!({
        "id": u.id, "type": "user", "url": format!("{prefix}users/{}/", u.id),
        "related": {"teams": format!("{prefix}users/{}/teams/", u.id),
                    "organizations": format!("{prefix}users/{}/organizations/", u.id),
                    "personal_tokens": format!("{prefix}users/{}/personal_tokens/", u.id),
                    "tokens": format!("{prefix}users/{}/tokens/", u.id)},
        "summary_fields": {"user_capabilities": {"edit": true, "delete": false}},
        "created": created, "modified": Value::Null,
        "username": u.username, "first_name": "", "last_name": "", "email": "",
        "is_superuser": u.is_superuser, "is_system_auditor": false, "password": "$encrypted$",
        "last_login": Value::Null,
    })
}

pub(crate) fn me(app: &App, ctx: &Ctx<'_>, prefix: &str) -> Resp {
    let Some(c) = &ctx.caller else {
        return Resp::detail(401, super::super::app::UNAUTHENTICATED);
    };
    let created = ts(app.lock().started_at);
    lists::paginate_values(ctx, vec![user_json(&c.user, prefix, &created)])
}

pub(crate) fn users(app: &App, ctx: &Ctx<'_>, prefix: &str) -> Resp {
    let st = app.lock();
    let created = ts(st.started_at);
    let v = st
        .users
        .iter()
        .map(|u| user_json(u, prefix, &created))
        .collect();
    drop(st);
    lists::paginate_values(ctx, v)
}

fn org_json(o: &Org, prefix: &str, created: &str) -> Value {
    json!({"id": o.id, "type": "organization", "url": format!("{prefix}organizations/{}/", o.id),
           "related": {}, "summary_fields": {}, "created": created, "modified": created,
           "name": o.name, "description": o.description, "max_hosts": 0, "custom_virtualenv": Value::Null,
           "default_environment": Value::Null})
}

/// `GET organizations/`, and `POST` (create: 201, or 400 for a missing or taken name).
pub(crate) fn organizations(app: &App, ctx: &Ctx<'_>, prefix: &str) -> Resp {
    if ctx.method == "POST" {
        let body = match launch::parse_body(ctx) {
            Ok(b) => b,
            Err(e) => return e,
        };
        let name = match omap_get(&body, "name") {
            Some(OValue::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            _ => return Resp::json(400, &json!({"name": ["This field is required."]})),
        };
        let description = match omap_get(&body, "description") {
            Some(OValue::String(s)) => s.clone(),
            _ => String::new(),
        };
        let mut st = app.lock();
        if st.orgs.iter().any(|o| o.name == name) {
            return Resp::json(
                400,
                &json!({"name": ["Organization with this Name already exists."]}),
            );
        }
        let id = st.orgs.iter().map(|o| o.id).max().unwrap_or(0) + 1;
        let org = Org {
            id,
            name,
            description,
        };
        let v = org_json(&org, prefix, &ts(ctx.now));
        st.orgs.push(org);
        return Resp::json(201, &v).header("location", format!("{prefix}organizations/{id}/"));
    }
    let st = app.lock();
    let created = ts(st.started_at);
    let v = st
        .orgs
        .iter()
        .map(|o| org_json(o, prefix, &created))
        .collect();
    drop(st);
    lists::paginate_values(ctx, v)
}

pub(crate) fn config(app: &App) -> Resp {
    Resp::json(
        200,
        &json!({"time_zone": "UTC", "license_info": {"license_type": "open", "valid_key": true},
                "version": app.version, "eula": "", "analytics_status": "off", "become_methods": []}),
    )
}
