//! Template detail, `survey_spec/` and the launch pre-flight document (`GET …/launch/`).

use serde_json::{Value, json};

use super::super::app::{App, Ctx, FORBIDDEN, Resp, UNAUTHENTICATED};
use super::super::render;
use super::super::spec::SurveySpec;
use super::super::state::{State, Template, User};
use super::common::{no_match, tpl_model};
use super::paths::{TplKind, TplRef};

/// Resolves a template reference for `user` (invisible or missing → 404).
pub(crate) fn resolve(st: &State, kind: TplKind, r: &TplRef, user: &User) -> Result<u64, Resp> {
    let kind_ok = |t: &Template| match kind {
        TplKind::Job => matches!(t, Template::Job(_)),
        TplKind::Workflow => matches!(t, Template::Workflow(_)),
    };
    let found = match r {
        TplRef::Id(id) => st.templates.get(id).filter(|t| kind_ok(t)),
        TplRef::Named {
            name,
            org: Some(org),
        } => st.templates.values().find(|t| {
            kind_ok(t) && t.name() == name && st.org(t.org_id()).is_some_and(|o| o.name == *org)
        }),
        TplRef::Named { name, org: None } => st
            .templates
            .values()
            .filter(|t| kind_ok(t) && t.name() == name)
            .min_by_key(|t| (t.org_id(), t.id())),
    };
    match found {
        Some(t) if State::can_see(user, t) => Ok(t.id()),
        Some(_) if matches!(r, TplRef::Named { .. }) => Err(Resp::detail(404, "Not found.")),
        _ => Err(no_match(tpl_model(kind))),
    }
}

/// The authenticated caller's user (none → 401).
pub(crate) fn caller_user<'a>(ctx: &'a Ctx<'_>) -> Result<&'a User, Resp> {
    ctx.caller
        .as_ref()
        .map(|c| &c.user)
        .ok_or_else(|| Resp::detail(401, UNAUTHENTICATED))
}

/// `GET job_templates/<id>/` and `workflow_job_templates/<id>/`.
pub(crate) fn detail(app: &App, ctx: &Ctx<'_>, prefix: &str, kind: TplKind, r: &TplRef) -> Resp {
    let user = match caller_user(ctx) {
        Ok(u) => u,
        Err(e) => return e,
    };
    let mut st = app.lock();
    st.sync(ctx.now);
    let id = match resolve(&st, kind, r, user) {
        Ok(id) => id,
        Err(e) => return e,
    };
    match render::template_json(&mut st, id, ctx.now, prefix, user, true) {
        Some(v) => Resp::json(200, &v),
        None => no_match(tpl_model(kind)),
    }
}

/// `GET …/survey_spec/`.
pub(crate) fn survey_spec(app: &App, ctx: &Ctx<'_>, kind: TplKind, r: &TplRef) -> Resp {
    let user = match caller_user(ctx) {
        Ok(u) => u,
        Err(e) => return e,
    };
    let st = app.lock();
    let id = match resolve(&st, kind, r, user) {
        Ok(id) => id,
        Err(e) => return e,
    };
    match st.templates.get(&id) {
        Some(t) => Resp::json(200, &render::survey_spec_json(t)),
        None => no_match(tpl_model(kind)),
    }
}

/// Names of required survey questions when the survey applies.
pub(crate) fn variables_needed(t: &Template) -> Vec<String> {
    survey_of(t).map_or_else(Vec::new, |s| {
        s.spec
            .iter()
            .filter(|q| q.required)
            .map(|q| q.variable.clone())
            .collect()
    })
}

/// The template's survey when it is enabled.
pub(crate) fn survey_of(t: &Template) -> Option<&SurveySpec> {
    match t {
        Template::Job(j) if j.spec.survey_enabled => j.spec.survey_spec.as_ref(),
        Template::Workflow(w) if w.spec.survey_enabled => w.spec.survey_spec.as_ref(),
        _ => None,
    }
}

/// `GET …/launch/`.
pub(crate) fn launch_info(app: &App, ctx: &Ctx<'_>, kind: TplKind, r: &TplRef) -> Resp {
    let user = match caller_user(ctx) {
        Ok(u) => u,
        Err(e) => return e,
    };
    let st = app.lock();
    let id = match resolve(&st, kind, r, user) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let Some(t) = st.templates.get(&id) else {
        return no_match(tpl_model(kind));
    };
    if !State::can_start(user, t) {
        return Resp::detail(403, FORBIDDEN);
    }
    let vars_needed = variables_needed(t);
    let inventory = |inv: Option<u64>| match inv.and_then(|i| st.inventory(i)) {
        Some(i) => json!({"name": i.name, "id": i.id}),
        None => json!({"name": Value::Null, "id": Value::Null}),
    };
    let body = match t {
        Template::Job(jt) => {
            let s = &jt.spec;
            let a = &s.ask;
            let any_ask = [
                a.scm_branch,
                a.diff_mode,
                a.variables,
                a.limit,
                a.tags,
                a.skip_tags,
                a.job_type,
                a.verbosity,
                a.inventory,
                a.credential,
                a.execution_environment,
                a.labels,
                a.forks,
                a.job_slice_count,
                a.timeout,
                a.instance_groups,
            ]
            .iter()
            .any(|x| *x);
            let can_start = jt.inventory_id.is_some()
                && !any_ask
                && s.passwords_needed_to_start.is_empty()
                && vars_needed.is_empty();
            json!({
                "can_start_without_user_input": can_start,
                "passwords_needed_to_start": s.passwords_needed_to_start,
                "ask_scm_branch_on_launch": a.scm_branch, "ask_variables_on_launch": a.variables,
                "ask_tags_on_launch": a.tags, "ask_diff_mode_on_launch": a.diff_mode,
                "ask_skip_tags_on_launch": a.skip_tags, "ask_job_type_on_launch": a.job_type,
                "ask_limit_on_launch": a.limit, "ask_verbosity_on_launch": a.verbosity,
                "ask_inventory_on_launch": a.inventory, "ask_credential_on_launch": a.credential,
                "ask_execution_environment_on_launch": a.execution_environment,
                "ask_labels_on_launch": a.labels, "ask_forks_on_launch": a.forks,
                "ask_job_slice_count_on_launch": a.job_slice_count, "ask_timeout_on_launch": a.timeout,
                "ask_instance_groups_on_launch": a.instance_groups,
                "survey_enabled": s.survey_enabled && s.survey_spec.is_some(),
                "variables_needed_to_start": vars_needed,
                "credential_needed_to_start": false,
                "inventory_needed_to_start": jt.inventory_id.is_none(),
                "job_template_data": {"name": s.name, "id": id, "description": s.description},
                "defaults": {
                    "extra_vars": s.extra_vars, "diff_mode": s.diff_mode, "limit": s.limit,
                    "job_tags": s.job_tags, "skip_tags": s.skip_tags, "job_type": s.job_type,
                    "verbosity": s.verbosity, "inventory": inventory(jt.inventory_id),
                    "scm_branch": s.scm_branch, "execution_environment": {}, "forks": s.forks,
                    "job_slice_count": s.job_slice_count, "timeout": s.timeout, "instance_groups": [],
                },
            })
        }
        Template::Workflow(wt) => {
            let s = &wt.spec;
            json!({
                "ask_inventory_on_launch": s.ask_inventory_on_launch, "ask_limit_on_launch": s.ask_limit_on_launch,
                "ask_scm_branch_on_launch": s.ask_scm_branch_on_launch,
                "ask_variables_on_launch": s.ask_variables_on_launch,
                "ask_labels_on_launch": s.ask_labels_on_launch, "ask_skip_tags_on_launch": s.ask_skip_tags_on_launch,
                "ask_tags_on_launch": s.ask_tags_on_launch,
                "can_start_without_user_input": vars_needed.is_empty(),
                "defaults": {"extra_vars": s.extra_vars, "inventory": inventory(wt.inventory_id),
                             "limit": s.limit, "scm_branch": s.scm_branch, "skip_tags": s.skip_tags,
                             "job_tags": s.job_tags},
                "survey_enabled": s.survey_enabled && s.survey_spec.is_some(),
                "variables_needed_to_start": vars_needed,
                "node_templates_missing": [],
                "node_prompts_rejected": [],
                "workflow_job_template_data": {"name": s.name, "id": id, "description": s.description},
            })
        }
    };
    Resp::json(200, &body)
}
