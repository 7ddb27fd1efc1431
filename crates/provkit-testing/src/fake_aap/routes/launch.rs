//! `POST …/launch/` for job templates and workflow job templates, with AWX's prompt rules.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::super::app::{App, Ctx, FORBIDDEN, Resp};
use super::super::ovalue::{OMap, OValue, omap_get, omap_insert, parse_extra_vars};
use super::super::pyjson::python_json_error;
use super::super::render;
use super::super::spec::SurveySpec;
use super::super::state::{Common, NewJob, State, Template, WfNode, WorkflowJob};
use super::super::survey;
use super::common::{no_match, tpl_model};
use super::paths::{TplKind, TplRef};
use super::templates::{caller_user, resolve, survey_of};

/// Parses a JSON request body the way AWX's parser does (`{}` when empty).
pub(crate) fn parse_body(ctx: &Ctx<'_>) -> Result<OMap, Resp> {
    if ctx.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(OMap::new());
    }
    let ct = ctx
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime != "application/json" {
        return Err(Resp::detail(
            415,
            "You did not use correct Content-Type in your HTTP request. If you are using our REST API, the Content-Type must be application/json",
        ));
    }
    let text = match std::str::from_utf8(ctx.body) {
        Ok(t) => t,
        Err(e) => {
            let pos = e.valid_up_to();
            let byte = ctx.body.get(pos).copied().unwrap_or(0);
            return Err(Resp::detail(
                400,
                &format!(
                    "JSON parse error - 'utf-8' codec can't decode byte 0x{byte:02x} in position {pos}: invalid start byte\nPossible cause: trailing comma."
                ),
            ));
        }
    };
    match serde_json::from_str::<OValue>(text) {
        Ok(OValue::Object(m)) => Ok(m),
        Ok(OValue::Null) => Ok(OMap::new()),
        Ok(_) => Err(Resp::detail(400, "JSON parse error - not a JSON object")),
        Err(e) => {
            let msg = python_json_error(text).unwrap_or_else(|| e.to_string());
            Err(Resp::detail(
                400,
                &format!("JSON parse error - {msg}\nPossible cause: trailing comma."),
            ))
        }
    }
}

type Errors = Map<String, Value>;

fn err(errors: &mut Errors, key: &str, msg: impl Into<String>) {
    let entry = errors.entry(key.to_owned()).or_insert_with(|| json!([]));
    if let Some(a) = entry.as_array_mut() {
        a.push(json!(msg.into()));
    }
}

fn as_string(v: &OValue) -> Option<String> {
    match v {
        OValue::String(s) => Some(s.clone()),
        OValue::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn as_int(v: &OValue) -> Option<i64> {
    match v {
        OValue::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        OValue::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_bool(v: &OValue) -> Option<bool> {
    match v {
        OValue::Bool(b) => Some(*b),
        OValue::Number(n) if n.as_i64() == Some(1) => Some(true),
        OValue::Number(n) if n.as_i64() == Some(0) => Some(false),
        OValue::String(s) => match s.as_str() {
            "true" | "True" | "TRUE" | "1" | "yes" | "on" | "y" | "t" => Some(true),
            "false" | "False" | "FALSE" | "0" | "no" | "off" | "n" | "f" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A typed launch prompt value.
#[derive(Clone, Debug, PartialEq)]
enum Prompt {
    Str(String),
    Int(i64),
    Bool(bool),
    Ids(Vec<i64>),
}

impl Prompt {
    fn to_json(&self) -> Value {
        match self {
            Prompt::Str(s) => json!(s),
            Prompt::Int(i) => json!(i),
            Prompt::Bool(b) => json!(b),
            Prompt::Ids(v) => json!(v),
        }
    }
}

enum Kind {
    Str,
    Int { min: Option<i64> },
    Bool,
    Choice(&'static [&'static str]),
    Verbosity,
    Pk,
    Ids,
    Object,
}

fn validate_field(
    st: &State,
    key: &str,
    kind: &Kind,
    v: &OValue,
    errors: &mut Errors,
) -> Option<Prompt> {
    match kind {
        Kind::Str => match as_string(v) {
            Some(s) => Some(Prompt::Str(s)),
            None => {
                err(errors, key, "Not a valid string.");
                None
            }
        },
        Kind::Int { min } => match v {
            OValue::Bool(_) => {
                err(errors, key, "A valid integer is required.");
                None
            }
            _ => match as_int(v) {
                Some(i) if min.is_some_and(|m| i < m) => {
                    err(
                        errors,
                        key,
                        format!(
                            "Ensure this value is greater than or equal to {}.",
                            min.unwrap_or(0)
                        ),
                    );
                    None
                }
                Some(i) => Some(Prompt::Int(i)),
                None => {
                    err(errors, key, "A valid integer is required.");
                    None
                }
            },
        },
        Kind::Bool => match as_bool(v) {
            Some(b) => Some(Prompt::Bool(b)),
            None => {
                err(errors, key, "Must be a valid boolean.");
                None
            }
        },
        Kind::Choice(choices) => match as_string(v) {
            Some(s) if choices.contains(&s.as_str()) => Some(Prompt::Str(s)),
            _ => {
                err(
                    errors,
                    key,
                    format!("\"{}\" is not a valid choice.", v.py_str()),
                );
                None
            }
        },
        Kind::Verbosity => match as_int(v) {
            Some(i) if (0..=5).contains(&i) && !matches!(v, OValue::Bool(_)) => {
                Some(Prompt::Int(i))
            }
            _ => {
                err(
                    errors,
                    key,
                    format!("\"{}\" is not a valid choice.", v.py_str()),
                );
                None
            }
        },
        Kind::Pk => match v {
            OValue::Number(_) | OValue::String(_) => match as_int(v) {
                Some(i)
                    if key.starts_with("inventory")
                        && st.inventory(u64::try_from(i).unwrap_or(0)).is_none() =>
                {
                    err(
                        errors,
                        key,
                        format!("Invalid pk \"{}\" - object does not exist.", v.py_str()),
                    );
                    None
                }
                Some(i) => Some(Prompt::Int(i)),
                None => {
                    err(
                        errors,
                        key,
                        format!(
                            "Incorrect type. Expected pk value, received {}.",
                            v.py_type()
                        ),
                    );
                    None
                }
            },
            other => {
                err(
                    errors,
                    key,
                    format!(
                        "Incorrect type. Expected pk value, received {}.",
                        other.py_type()
                    ),
                );
                None
            }
        },
        Kind::Ids => match v {
            OValue::Array(items) => {
                let ids: Option<Vec<i64>> = items.iter().map(as_int).collect();
                match ids {
                    Some(ids) => Some(Prompt::Ids(ids)),
                    None => {
                        err(
                            errors,
                            key,
                            "Incorrect type. Expected pk value, received str.",
                        );
                        None
                    }
                }
            }
            OValue::Object(_) => {
                err(errors, key, format!("Cannot use dictionary for {key}"));
                None
            }
            other => {
                err(
                    errors,
                    key,
                    format!(
                        "Expected a list of items but got type \"{}\".",
                        other.py_type()
                    ),
                );
                None
            }
        },
        Kind::Object => match v {
            OValue::Object(_) => Some(Prompt::Str(String::new())),
            _ => {
                err(errors, key, "Expected a dictionary of items.");
                None
            }
        },
    }
}

const JT_FIELDS: &[(&str, Kind)] = &[
    ("inventory", Kind::Pk),
    ("inventory_id", Kind::Pk),
    ("credentials", Kind::Ids),
    ("credential_passwords", Kind::Object),
    ("scm_branch", Kind::Str),
    ("diff_mode", Kind::Bool),
    ("job_tags", Kind::Str),
    ("skip_tags", Kind::Str),
    ("limit", Kind::Str),
    ("job_type", Kind::Choice(&["run", "check"])),
    ("verbosity", Kind::Verbosity),
    ("execution_environment", Kind::Pk),
    ("labels", Kind::Ids),
    ("forks", Kind::Int { min: Some(0) }),
    ("job_slice_count", Kind::Int { min: Some(0) }),
    ("timeout", Kind::Int { min: None }),
    ("instance_groups", Kind::Ids),
];

const WF_FIELDS: &[(&str, Kind)] = &[
    ("inventory", Kind::Pk),
    ("inventory_id", Kind::Pk),
    ("limit", Kind::Str),
    ("scm_branch", Kind::Str),
    ("labels", Kind::Ids),
    ("skip_tags", Kind::Str),
    ("job_tags", Kind::Str),
];

/// Null checks, `extra_vars` parsing and per-field type checks.
fn validate_fields(
    st: &State,
    body: &OMap,
    fields: &[(&'static str, Kind)],
    errors: &mut Errors,
) -> (Option<OMap>, Vec<(&'static str, Prompt)>) {
    let mut extra = None;
    if let Some(v) = omap_get(body, "extra_vars") {
        if *v == OValue::Null {
            err(errors, "extra_vars", "This field may not be null.");
        } else {
            match parse_extra_vars(v) {
                Ok(m) => extra = Some(m),
                Err(msg) => err(errors, "extra_vars", msg),
            }
        }
    }
    let mut prompts = Vec::new();
    for (name, kind) in fields {
        let Some(v) = omap_get(body, name) else {
            continue;
        };
        if *v == OValue::Null {
            err(errors, name, "This field may not be null.");
            continue;
        }
        if let Some(p) = validate_field(st, name, kind, v, errors) {
            let key: &'static str = if *name == "inventory_id" {
                "inventory"
            } else {
                name
            };
            prompts.push((key, p));
        }
    }
    (extra, prompts)
}

/// `POST …/launch/`.
pub(crate) fn launch(app: &App, ctx: &Ctx<'_>, prefix: &str, kind: TplKind, r: &TplRef) -> Resp {
    let user = match caller_user(ctx) {
        Ok(u) => u.clone(),
        Err(e) => return e,
    };
    let mut st = app.lock();
    st.sync(ctx.now);
    let id = match resolve(&st, kind, r, &user) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let Some(t) = st.templates.get(&id) else {
        return no_match(tpl_model(kind));
    };
    if !State::can_start(&user, t) {
        return Resp::detail(403, FORBIDDEN);
    }
    let body = match parse_body(ctx) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let launched_by = Some((user.id, user.username.clone()));
    match kind {
        TplKind::Job => launch_job_template(&mut st, ctx, prefix, id, &body, launched_by),
        TplKind::Workflow => launch_workflow_template(&mut st, ctx, prefix, id, &body, launched_by),
    }
}

/// Checks the launch's `extra_vars` against the survey (errors under
/// `variables_needed_to_start`); returns the survey's defaults and the names of its variables.
fn check_survey<'t>(
    survey: Option<&'t SurveySpec>,
    launch_vars: &OMap,
    errors: &mut Errors,
) -> (OMap, Vec<&'t str>) {
    let Some(sv) = survey else {
        return (OMap::new(), Vec::new());
    };
    let (errs, defaults) = survey::validate(sv, launch_vars);
    if !errs.is_empty() {
        errors.insert("variables_needed_to_start".into(), json!(errs));
    }
    let vars = sv.spec.iter().map(|q| q.variable.as_str()).collect();
    (defaults, vars)
}

/// The template's `extra_vars` overlaid with the survey defaults, then the accepted launch vars.
fn effective_vars(template_vars: &OMap, survey_defaults: OMap, accepted_vars: OMap) -> OMap {
    let mut vars = template_vars.clone();
    for (k, v) in survey_defaults.into_iter().chain(accepted_vars) {
        omap_insert(&mut vars, k, v);
    }
    vars
}

/// The accepted prompt `name`, if the launch gave one.
fn accepted_prompt(accepted: &[(&'static str, Prompt)], name: &str) -> Option<Prompt> {
    accepted
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| p.clone())
}

/// The accepted text prompt `name`, else `default`.
fn str_prompt(accepted: &[(&'static str, Prompt)], name: &str, default: &str) -> String {
    match accepted_prompt(accepted, name) {
        Some(Prompt::Str(s)) => s,
        _ => default.to_owned(),
    }
}

fn launch_job_template(
    st: &mut State,
    ctx: &Ctx<'_>,
    prefix: &str,
    id: u64,
    body: &OMap,
    launched_by: Option<(u64, String)>,
) -> Resp {
    let mut errors = Errors::new();
    let (extra, prompts) = validate_fields(st, body, JT_FIELDS, &mut errors);
    if !errors.is_empty() {
        return Resp::json(400, &Value::Object(errors));
    }
    let Some(t @ Template::Job(jt)) = st.templates.get(&id) else {
        return no_match("JobTemplate");
    };
    let s = &jt.spec;
    let a = &s.ask;
    let mut ignored = Map::new();
    let mut accepted: Vec<(&'static str, Prompt)> = Vec::new();
    for (name, p) in prompts {
        if name == "credential_passwords" {
            continue;
        }
        let (current, ask) = match name {
            "inventory" => (jt.inventory_id.map(|i| Prompt::Int(i as i64)), a.inventory),
            "credentials" => (Some(Prompt::Ids(Vec::new())), a.credential),
            "scm_branch" => (Some(Prompt::Str(s.scm_branch.clone())), a.scm_branch),
            "diff_mode" => (Some(Prompt::Bool(s.diff_mode)), a.diff_mode),
            "job_tags" => (Some(Prompt::Str(s.job_tags.clone())), a.tags),
            "skip_tags" => (Some(Prompt::Str(s.skip_tags.clone())), a.skip_tags),
            "limit" => (Some(Prompt::Str(s.limit.clone())), a.limit),
            "job_type" => (Some(Prompt::Str(s.job_type.clone())), a.job_type),
            "verbosity" => (Some(Prompt::Int(i64::from(s.verbosity))), a.verbosity),
            "execution_environment" => (None, a.execution_environment),
            "labels" => (Some(Prompt::Ids(Vec::new())), a.labels),
            "forks" => (Some(Prompt::Int(i64::from(s.forks))), a.forks),
            "job_slice_count" => (
                Some(Prompt::Int(i64::from(s.job_slice_count))),
                a.job_slice_count,
            ),
            "timeout" => (Some(Prompt::Int(i64::from(s.timeout))), a.timeout),
            "instance_groups" => (Some(Prompt::Ids(Vec::new())), a.instance_groups),
            _ => (None, false),
        };
        if current.as_ref() == Some(&p) {
            continue;
        }
        if ask {
            accepted.push((name, p));
        } else {
            ignored.insert(name.to_owned(), p.to_json());
        }
    }
    // extra_vars
    let launch_vars = extra.unwrap_or_default();
    let (survey_defaults, survey_vars) = check_survey(survey_of(t), &launch_vars, &mut errors);
    let survey_passwords = survey::password_variables(survey_of(t));
    let mut accepted_vars = OMap::new();
    let mut ignored_vars = OMap::new();
    for (k, v) in &launch_vars {
        if a.variables || survey_vars.contains(&k.as_str()) {
            accepted_vars.push((k.clone(), v.clone()));
        } else if omap_get(&jt.extra_vars, k) == Some(v) {
            // identical to the template's value: dropped silently
        } else {
            ignored_vars.push((k.clone(), v.clone()));
        }
    }
    if !ignored_vars.is_empty() {
        ignored.insert("extra_vars".into(), OValue::Object(ignored_vars).to_json());
    }
    let prompt = |name: &str| accepted_prompt(&accepted, name);
    let inventory = match prompt("inventory") {
        Some(Prompt::Int(i)) => u64::try_from(i).ok(),
        _ => jt.inventory_id,
    };
    if inventory.is_none() {
        errors.insert(
            "resources_needed_to_start".into(),
            json!(["Job Template inventory is missing or undefined."]),
        );
    }
    let passwords = match omap_get(body, "credential_passwords") {
        Some(OValue::Object(m)) => m.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let lacking: Vec<&String> = s
        .passwords_needed_to_start
        .iter()
        .filter(|p| !passwords.contains(p) && omap_get(body, p).is_none())
        .collect();
    if !lacking.is_empty() {
        errors.insert("passwords_needed_to_start".into(), json!(lacking));
    }
    if !errors.is_empty() {
        return Resp::json(400, &Value::Object(errors));
    }
    // Effective values.
    let vars = effective_vars(&jt.extra_vars, survey_defaults, accepted_vars);
    let str_of = |name: &str, default: &str| str_prompt(&accepted, name, default);
    let int_of = |name: &str, default: i64| match prompt(name) {
        Some(Prompt::Int(i)) => i,
        _ => default,
    };
    let slice_count =
        u32::try_from(int_of("job_slice_count", i64::from(s.job_slice_count))).unwrap_or(1);
    let hosts = inventory
        .and_then(|i| st.inventory(i))
        .map_or(1, |i| i.hosts);
    let new = NewJob {
        template: id,
        extra_vars: vars.clone(),
        launched_by: launched_by.clone(),
        launch_type: "manual",
        inventory,
        limit: str_of("limit", &s.limit),
        job_tags: str_of("job_tags", &s.job_tags),
        skip_tags: str_of("skip_tags", &s.skip_tags),
        scm_branch: str_of("scm_branch", &s.scm_branch),
        job_type: str_of("job_type", &s.job_type),
        verbosity: u8::try_from(int_of("verbosity", i64::from(s.verbosity))).unwrap_or(0),
        forks: u32::try_from(int_of("forks", i64::from(s.forks))).unwrap_or(0),
        timeout: u32::try_from(int_of("timeout", i64::from(s.timeout))).unwrap_or(0),
        diff_mode: match prompt("diff_mode") {
            Some(Prompt::Bool(b)) => b,
            _ => s.diff_mode,
        },
        job_slice_count: slice_count,
        survey_passwords: Vec::new(),
    };
    let org_id = jt.org_id;
    let name = s.name.clone();
    let description = s.description.clone();
    let allow_simultaneous = s.allow_simultaneous;
    if let Some(Template::Job(jt)) = st.templates.get_mut(&id) {
        jt.launches += 1;
    }
    let ignored = Value::Object(ignored);
    let slices = slice_count.min(hosts);
    if slices > 1 {
        let nodes = (0..slices)
            .map(|_| WfNode {
                id: 0,
                ujt: Some(id),
                identifier: st.uuid4(),
                failure_handled: false,
                approval: false,
                job: None,
            })
            .collect();
        let wf = WorkflowJob {
            extra_vars_map: vars.clone(),
            c: Common {
                id: 0,
                name,
                description,
                created: ctx.now,
                launch_type: "manual",
                extra_vars: OValue::Object(survey::masked(&vars, &survey_passwords)).py_dumps(),
                launched_by,
                org_id: Some(org_id),
                template: Some(id),
                cancel_at: None,
                parent_workflow: None,
                inventory,
                limit: new.limit.clone(),
                job_tags: new.job_tags.clone(),
                skip_tags: new.skip_tags.clone(),
                scm_branch: new.scm_branch.clone(),
                allow_simultaneous,
            },
            wfjt: None,
            job_template: Some(id),
            is_sliced: true,
            parallel: true,
            nodes,
            pending: Duration::ZERO,
            stuck_pending: false,
            started: None,
            ended: None,
        };
        let wf_id = st.create_workflow(wf, ctx.now);
        return workflow_created(st, ctx, prefix, wf_id, ignored);
    }
    let Some(job_id) = st.create_job(new, ctx.now, None, 0, false) else {
        return no_match("JobTemplate");
    };
    let Some(mut v) = render::job_json(st, job_id, ctx.now, prefix, true) else {
        return no_match("Job");
    };
    // The launch answer is the job detail without these three (§13.2).
    if let Some(m) = v.as_object_mut() {
        for key in ["custom_virtualenv", "host_status_counts", "playbook_counts"] {
            m.remove(key);
        }
    }
    v["job"] = json!(job_id);
    v["ignored_fields"] = ignored;
    Resp::json(201, &v).header("location", format!("{prefix}jobs/{job_id}/"))
}

fn workflow_created(
    st: &mut State,
    ctx: &Ctx<'_>,
    prefix: &str,
    wf_id: u64,
    ignored: Value,
) -> Resp {
    let Some(mut v) = render::workflow_json(st, wf_id, ctx.now, prefix, true) else {
        return no_match("WorkflowJob");
    };
    v["workflow_job"] = json!(wf_id);
    v["ignored_fields"] = ignored;
    Resp::json(201, &v).header("location", format!("{prefix}workflow_jobs/{wf_id}/"))
}

fn launch_workflow_template(
    st: &mut State,
    ctx: &Ctx<'_>,
    prefix: &str,
    id: u64,
    body: &OMap,
    launched_by: Option<(u64, String)>,
) -> Resp {
    let mut errors = Errors::new();
    let (extra, prompts) = validate_fields(st, body, WF_FIELDS, &mut errors);
    if !errors.is_empty() {
        return Resp::json(400, &Value::Object(errors));
    }
    let Some(t @ Template::Workflow(wt)) = st.templates.get(&id) else {
        return no_match("WorkflowJobTemplate");
    };
    let s = &wt.spec;
    let mut accepted: Vec<(&'static str, Prompt)> = Vec::new();
    for (name, p) in prompts {
        let (current, ask) = match name {
            "inventory" => (
                wt.inventory_id.map(|i| Prompt::Int(i as i64)),
                s.ask_inventory_on_launch,
            ),
            "limit" => (Some(Prompt::Str(s.limit.clone())), s.ask_limit_on_launch),
            "scm_branch" => (
                Some(Prompt::Str(s.scm_branch.clone())),
                s.ask_scm_branch_on_launch,
            ),
            "labels" => (Some(Prompt::Ids(Vec::new())), s.ask_labels_on_launch),
            "skip_tags" => (
                Some(Prompt::Str(s.skip_tags.clone())),
                s.ask_skip_tags_on_launch,
            ),
            "job_tags" => (Some(Prompt::Str(s.job_tags.clone())), s.ask_tags_on_launch),
            _ => (None, false),
        };
        if current.as_ref() == Some(&p) {
            continue;
        }
        if ask {
            accepted.push((name, p));
        } else {
            err(
                &mut errors,
                name,
                "Field is not configured to prompt on launch.",
            );
        }
    }
    let launch_vars = extra.unwrap_or_default();
    let (survey_defaults, survey_vars) = check_survey(survey_of(t), &launch_vars, &mut errors);
    let survey_passwords = survey::password_variables(survey_of(t));
    let mut accepted_vars = OMap::new();
    let mut rejected = Vec::new();
    for (k, v) in &launch_vars {
        if s.ask_variables_on_launch || survey_vars.contains(&k.as_str()) {
            accepted_vars.push((k.clone(), v.clone()));
        } else if omap_get(&wt.extra_vars, k) != Some(v) {
            rejected.push(k.clone());
        }
    }
    if !rejected.is_empty() {
        err(
            &mut errors,
            "extra_vars",
            format!(
                "Variables {} are not allowed on launch. Check the Prompt on Launch setting on the Workflow Job Template to include Extra Variables.",
                rejected.join(", ")
            ),
        );
    }
    if !errors.is_empty() {
        return Resp::json(400, &Value::Object(errors));
    }
    let vars = effective_vars(&wt.extra_vars, survey_defaults, accepted_vars);
    let prompt = |name: &str| accepted_prompt(&accepted, name);
    let str_of = |name: &str, default: &str| str_prompt(&accepted, name, default);
    let inventory = match prompt("inventory") {
        Some(Prompt::Int(i)) => u64::try_from(i).ok(),
        _ => wt.inventory_id,
    };
    let nodes: Vec<WfNode> = wt
        .nodes
        .iter()
        .map(|n| WfNode {
            id: 0,
            ujt: n.ujt,
            identifier: n.identifier.clone(),
            failure_handled: n.failure_handled,
            approval: n.approval,
            job: None,
        })
        .collect();
    let wf = WorkflowJob {
        extra_vars_map: vars.clone(),
        c: Common {
            id: 0,
            name: s.name.clone(),
            description: s.description.clone(),
            created: ctx.now,
            launch_type: "manual",
            extra_vars: OValue::Object(survey::masked(&vars, &survey_passwords)).py_dumps(),
            launched_by,
            org_id: Some(wt.org_id),
            template: Some(id),
            cancel_at: None,
            parent_workflow: None,
            inventory,
            limit: str_of("limit", &s.limit),
            job_tags: str_of("job_tags", &s.job_tags),
            skip_tags: str_of("skip_tags", &s.skip_tags),
            scm_branch: str_of("scm_branch", &s.scm_branch),
            allow_simultaneous: s.allow_simultaneous,
        },
        wfjt: Some(id),
        job_template: None,
        is_sliced: false,
        parallel: false,
        nodes,
        pending: s.pending,
        stuck_pending: s.stuck_pending,
        started: None,
        ended: None,
    };
    if let Some(Template::Workflow(wt)) = st.templates.get_mut(&id) {
        wt.launches += 1;
    }
    let wf_id = st.create_workflow(wf, ctx.now);
    workflow_created(st, ctx, prefix, wf_id, json!({}))
}
