//! Discovery documents, ping, me, and the dispatcher for version-root resources.

use serde_json::{Map, Value, json};

use super::super::http::{App, Ctx, Resp};
use super::super::render::ts;
use super::super::spec::Mode;
use super::super::state::User;
use super::{
    AWX_PREFIX, Api, CONTROLLER_PREFIX, JobKind, TplKind, jobs, launch, lists, templates, tokens,
};

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
    }
    v
}

/// `GET /api/`.
pub(crate) fn api_root(app: &App) -> Resp {
    match app.mode {
        Mode::Awx | Mode::Both => Resp::json(200, &controller_doc(AWX_PREFIX, true)),
        Mode::Gateway => Resp::json(
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

fn version_root(prefix: &str) -> Resp {
    let mut m = Map::new();
    for (key, path) in VERSION_ROOT_KEYS {
        m.insert(key.to_owned(), json!(format!("{prefix}{path}/")));
    }
    Resp::json(200, &Value::Object(m))
}

fn ping(app: &App) -> Resp {
    let st = app.lock();
    let heartbeat = ts(app.clock.now());
    let node = &app.node;
    let install = {
        let mut rng = fastrand::Rng::with_seed(st.settings.seed ^ 0x1);
        super::super::build_state::uuid4(&mut rng)
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
        "created": created, "modified": created,
        "username": u.username, "first_name": "", "last_name": "", "email": "",
        "is_superuser": u.is_superuser, "is_system_auditor": false, "password": "$encrypted$",
        "ldap_dn": "", "last_login": Value::Null, "external_account": Value::Null, "auth": [],
    })
}

fn me(app: &App, ctx: &Ctx<'_>, prefix: &str) -> Resp {
    let Some(c) = &ctx.caller else {
        return Resp::detail(401, super::super::http::UNAUTHENTICATED);
    };
    let created = ts(app.lock().started_at);
    lists::paginate_values(ctx, vec![user_json(&c.user, prefix, &created)])
}

fn users(app: &App, ctx: &Ctx<'_>, prefix: &str) -> Resp {
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

fn organizations(app: &App, ctx: &Ctx<'_>, prefix: &str) -> Resp {
    let st = app.lock();
    let created = ts(st.started_at);
    let v = st
        .orgs
        .iter()
        .map(|o| {
            json!({"id": o.id, "type": "organization", "url": format!("{prefix}organizations/{}/", o.id),
                   "related": {}, "summary_fields": {}, "created": created, "modified": created,
                   "name": o.name, "description": o.description, "max_hosts": 0, "custom_virtualenv": Value::Null,
                   "default_environment": Value::Null})
        })
        .collect();
    drop(st);
    lists::paginate_values(ctx, v)
}

fn config(app: &App) -> Resp {
    Resp::json(
        200,
        &json!({"time_zone": "UTC", "license_info": {"license_type": "open", "valid_key": true},
                "version": app.version, "eula": "", "analytics_status": "off", "become_methods": []}),
    )
}

/// Dispatches a resource under a version root.
pub(crate) fn api(app: &App, ctx: &Ctx<'_>, prefix: &str, api: &Api) -> Resp {
    match api {
        Api::VersionRoot => version_root(prefix),
        Api::Ping => ping(app),
        Api::Me => me(app, ctx, prefix),
        Api::Config => config(app),
        Api::Users => users(app, ctx, prefix),
        Api::Organizations => organizations(app, ctx, prefix),
        Api::Tokens => tokens::tokens(app, ctx, prefix, None),
        Api::PersonalTokens(user) => tokens::tokens(app, ctx, prefix, Some(user)),
        Api::TokenDetail(id) => tokens::token_detail(app, ctx, prefix, *id),
        Api::Templates(kind) => lists::templates(app, ctx, prefix, Some(*kind)),
        Api::UnifiedJobTemplates => lists::templates(app, ctx, prefix, None),
        Api::Template(kind, r) => templates::detail(app, ctx, prefix, *kind, r),
        Api::SurveySpec(kind, r) => templates::survey_spec(app, ctx, *kind, r),
        Api::Launch(kind, r) if ctx.method == "POST" => launch::launch(app, ctx, prefix, *kind, r),
        Api::Launch(kind, r) => templates::launch_info(app, ctx, *kind, r),
        Api::TemplateJobs(kind, r) => lists::template_jobs(app, ctx, prefix, *kind, r),
        Api::Jobs(kind) => lists::jobs(app, ctx, prefix, Some(*kind), None),
        Api::UnifiedJobs => lists::jobs(app, ctx, prefix, None, None),
        Api::Job(kind, id) => jobs::detail(app, ctx, prefix, *kind, *id),
        Api::Cancel(kind, id) => jobs::cancel(app, ctx, *kind, *id),
        Api::Stdout(id) => jobs::stdout(app, ctx, *id),
        Api::WorkflowNodes(id) => jobs::workflow_nodes(app, ctx, prefix, *id),
        Api::JobEvents(id) => jobs::job_events(app, ctx, prefix, *id),
    }
}

/// AWX's 404 text for an unknown object of a kind.
pub(crate) fn no_match(kind: &str) -> Resp {
    Resp::detail(404, &format!("No {kind} matches the given query."))
}

pub(crate) fn tpl_model(kind: TplKind) -> &'static str {
    match kind {
        TplKind::Job => "JobTemplate",
        TplKind::Workflow => "WorkflowJobTemplate",
    }
}

pub(crate) fn job_model(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Job => "Job",
        JobKind::Workflow => "WorkflowJob",
    }
}
