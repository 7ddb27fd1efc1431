//! JSON bodies of templates, jobs and workflow jobs, as AWX's serializers shape them.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::query::encode_named_url_part;
use super::script::Status;
use super::spec::SurveySpec;
use super::state::{State, Template, Unified, User};

/// ISO 8601 with microseconds and `Z`, as AWX prints datetimes.
pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

fn ts_opt(t: Option<DateTime<Utc>>) -> Value {
    t.map_or(Value::Null, |t| Value::String(ts(t)))
}

/// Elapsed seconds rounded to 3 decimals, always a JSON float (`0.0` when the job never started).
fn elapsed(
    started: Option<DateTime<Utc>>,
    finished: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Value {
    match started {
        None => json!(0.0),
        Some(s) => {
            let end = finished.unwrap_or(now);
            let micros = (end - s).num_microseconds().unwrap_or(0).max(0);
            let secs = (micros as f64 / 1000.0).round() / 1000.0;
            json!(secs)
        }
    }
}

/// `null` for an empty string, as AWX's serializers print unset text fields of workflow objects.
fn null_if_empty(s: &str) -> Value {
    if s.is_empty() { Value::Null } else { json!(s) }
}

fn launched_by(u: &Unified, p: &str) -> Value {
    match &u.common().launched_by {
        Some((id, name)) => {
            json!({"id": id, "name": name, "type": "user", "url": format!("{p}users/{id}/")})
        }
        None => json!({}),
    }
}

fn org_summary(st: &State, id: Option<u64>) -> Value {
    match id.and_then(|i| st.org(i)) {
        Some(o) => json!({"id": o.id, "name": o.name, "description": o.description}),
        None => Value::Null,
    }
}

fn inventory_summary(st: &State, id: Option<u64>) -> Option<Value> {
    id.and_then(|i| st.inventory(i)).map(|i| {
        json!({"id": i.id, "name": i.name, "description": "", "has_active_failures": false,
               "total_hosts": i.hosts, "kind": "", "organization_id": i.org_id})
    })
}

/// A job (`type: job`) body; `detail` adds the detail-only fields.
pub(crate) fn job_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
    detail: bool,
) -> Option<Value> {
    let snap = st.job_snapshot(id, now)?;
    let st: &State = st;
    let u = st.unified(id)?;
    let Unified::Job(job) = u else { return None };
    let c = &job.c;
    let node = st.settings.node.clone();
    let reached_waiting =
        matches!(snap.status, Status::Waiting | Status::Running) || snap.started.is_some();
    let terminal = !snap.status.is_active();
    let ran = snap.started.is_some();
    let (explanation, traceback, artifacts) = if terminal && snap.natural_end {
        (
            job.script.job_explanation.clone(),
            job.script.result_traceback.clone(),
            job.script.artifacts.clone(),
        )
    } else {
        (String::new(), String::new(), json!({}))
    };
    let event_done = match (snap.finished, snap.natural_end) {
        (Some(f), true) => job.script.event_processing_lag.is_some_and(|lag| {
            f + chrono::TimeDelta::from_std(lag).unwrap_or(chrono::TimeDelta::MAX / 4) <= now
        }),
        (Some(_), false) => true,
        (None, _) => false,
    };
    let template = c.template.and_then(|t| st.templates.get(&t));
    let template_name = template.map_or_else(|| c.name.clone(), |t| t.name().to_owned());
    let mut related = json!({
        "created_by": c.launched_by.as_ref().map(|(uid, _)| format!("{p}users/{uid}/")),
        "labels": format!("{p}jobs/{id}/labels/"),
        "inventory": c.inventory.map(|i| format!("{p}inventories/{i}/")),
        "project": format!("{p}projects/{}/", job.project),
        "organization": c.org_id.map(|o| format!("{p}organizations/{o}/")),
        "credentials": format!("{p}jobs/{id}/credentials/"),
        "unified_job_template": c.template.map(|t| format!("{p}job_templates/{t}/")),
        "stdout": format!("{p}jobs/{id}/stdout/"),
        "job_events": format!("{p}jobs/{id}/job_events/"),
        "job_host_summaries": format!("{p}jobs/{id}/job_host_summaries/"),
        "activity_stream": format!("{p}jobs/{id}/activity_stream/"),
        "notifications": format!("{p}jobs/{id}/notifications/"),
        "create_schedule": format!("{p}jobs/{id}/create_schedule/"),
        "job_template": c.template.map(|t| format!("{p}job_templates/{t}/")),
        "cancel": format!("{p}jobs/{id}/cancel/"),
        "relaunch": format!("{p}jobs/{id}/relaunch/"),
    });
    let mut summary = json!({
        "organization": org_summary(st, c.org_id),
        "inventory": inventory_summary(st, c.inventory),
        "project": {"id": job.project, "name": "Demo Project", "description": "", "status": "successful", "scm_type": "git"},
        "job_template": c.template.map(|t| json!({"id": t, "name": template_name, "description": c.description})),
        "unified_job_template": c.template.map(|t| json!({"id": t, "name": template_name, "description": c.description, "unified_job_type": "job"})),
        "created_by": c.launched_by.as_ref().map(|(uid, name)| json!({"id": uid, "username": name, "first_name": "", "last_name": ""})),
        "modified_by": c.launched_by.as_ref().map(|(uid, name)| json!({"id": uid, "username": name, "first_name": "", "last_name": ""})),
        "user_capabilities": {"delete": true, "start": true},
        "labels": {"count": 0, "results": []},
        "credentials": [],
    });
    if let Some(wf_id) = c.parent_workflow {
        let wf_status = st.workflow_snapshot(wf_id, now);
        if let (Some(wf), Some(ws)) = (st.workflow(wf_id), wf_status) {
            summary["source_workflow_job"] = json!({
                "id": wf_id, "name": wf.c.name, "description": wf.c.description,
                "status": ws.status.as_str(), "failed": ws.status.failed(),
                "elapsed": elapsed(ws.started, ws.finished, now),
            });
            related["source_workflow_job"] = json!(format!("{p}workflow_jobs/{wf_id}/"));
        }
    }
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_owned(), v);
    };
    put("id", json!(id));
    put("type", json!("job"));
    put("url", json!(format!("{p}jobs/{id}/")));
    put("related", related);
    put("summary_fields", summary);
    put("created", json!(ts(c.created)));
    put(
        "modified",
        json!(ts(snap.finished.or(snap.started).unwrap_or(c.created))),
    );
    put("name", json!(c.name));
    put("description", json!(c.description));
    put("job_type", json!(job.job_type));
    put("inventory", json!(c.inventory));
    put("project", json!(job.project));
    put("playbook", json!(job.playbook));
    put("scm_branch", json!(c.scm_branch));
    put("forks", json!(job.forks));
    put("limit", json!(c.limit));
    put("verbosity", json!(job.verbosity));
    put("extra_vars", json!(c.extra_vars));
    put("job_tags", json!(c.job_tags));
    put("force_handlers", json!(false));
    put("skip_tags", json!(c.skip_tags));
    put("start_at_task", json!(""));
    put("timeout", json!(job.timeout));
    put("use_fact_cache", json!(false));
    put("organization", json!(c.org_id));
    put("unified_job_template", json!(c.template));
    put("launch_type", json!(c.launch_type));
    put("status", json!(snap.status.as_str()));
    put("execution_environment", Value::Null);
    put("failed", json!(snap.status.failed()));
    put("started", ts_opt(snap.started));
    put("finished", ts_opt(snap.finished));
    put(
        "canceled_on",
        ts_opt(
            c.cancel_at
                .filter(|_| snap.status == Status::Canceled || snap.status.is_active()),
        ),
    );
    put("elapsed", elapsed(snap.started, snap.finished, now));
    put("job_explanation", json!(explanation));
    put(
        "execution_node",
        json!(if reached_waiting { node.as_str() } else { "" }),
    );
    put(
        "controller_node",
        json!(if reached_waiting { node.as_str() } else { "" }),
    );
    put("launched_by", launched_by(u, p));
    put(
        "work_unit_id",
        if ran {
            json!(job.work_unit_id)
        } else {
            Value::Null
        },
    );
    put("job_template", json!(c.template));
    put("passwords_needed_to_start", json!([]));
    put("allow_simultaneous", json!(c.allow_simultaneous));
    put("artifacts", artifacts);
    put("scm_revision", json!(""));
    put(
        "instance_group",
        if reached_waiting {
            json!(2)
        } else {
            Value::Null
        },
    );
    put("diff_mode", json!(job.diff_mode));
    put("job_slice_number", json!(job.job_slice_number));
    put("job_slice_count", json!(job.job_slice_count));
    put("webhook_service", json!(""));
    put("webhook_credential", Value::Null);
    put("webhook_guid", json!(""));
    if detail {
        put("job_args", json!(""));
        put("job_cwd", json!(""));
        put("job_env", json!({}));
        put("result_traceback", json!(traceback));
        put("event_processing_finished", json!(event_done));
        put(
            "host_status_counts",
            if terminal { json!({}) } else { Value::Null },
        );
        put(
            "playbook_counts",
            json!({"play_count": i32::from(ran), "task_count": i32::from(ran)}),
        );
        put("custom_virtualenv", Value::Null);
    }
    Some(Value::Object(m))
}

/// A workflow job body.
pub(crate) fn workflow_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
    detail: bool,
) -> Option<Value> {
    let snap = st.workflow_snapshot(id, now)?;
    let wf = st.workflow(id)?.clone();
    let c = &wf.c;
    let ujt = wf.wfjt.or(wf.job_template);
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_owned(), v);
    };
    let template_name = ujt
        .and_then(|t| st.templates.get(&t))
        .map(|t| t.name().to_owned());
    let mut related = json!({
        "created_by": c.launched_by.as_ref().map(|(uid, _)| format!("{p}users/{uid}/")),
        "labels": format!("{p}workflow_jobs/{id}/labels/"),
        "workflow_nodes": format!("{p}workflow_jobs/{id}/workflow_nodes/"),
        "notifications": format!("{p}workflow_jobs/{id}/notifications/"),
        "activity_stream": format!("{p}workflow_jobs/{id}/activity_stream/"),
        "cancel": format!("{p}workflow_jobs/{id}/cancel/"),
        "relaunch": format!("{p}workflow_jobs/{id}/relaunch/"),
    });
    match (wf.wfjt, wf.job_template) {
        (Some(t), _) => {
            related["workflow_job_template"] = json!(format!("{p}workflow_job_templates/{t}/"));
            related["unified_job_template"] = json!(format!("{p}workflow_job_templates/{t}/"));
        }
        (None, Some(t)) => {
            related["job_template"] = json!(format!("{p}job_templates/{t}/"));
            related["unified_job_template"] = json!(format!("{p}job_templates/{t}/"));
        }
        _ => {}
    }
    let summary = json!({
        "organization": org_summary(st, c.org_id),
        "workflow_job_template": wf.wfjt.map(|t| json!({"id": t, "name": template_name, "description": c.description})),
        "unified_job_template": ujt.map(|t| json!({"id": t, "name": template_name, "description": c.description,
            "unified_job_type": if wf.wfjt.is_some() { "workflow_job" } else { "job" }})),
        "created_by": c.launched_by.as_ref().map(|(uid, name)| json!({"id": uid, "username": name, "first_name": "", "last_name": ""})),
        "user_capabilities": {"delete": true, "start": true},
        "labels": {"count": 0, "results": []},
    });
    put("id", json!(id));
    put("type", json!("workflow_job"));
    put("url", json!(format!("{p}workflow_jobs/{id}/")));
    put("related", related);
    put("summary_fields", summary);
    put("created", json!(ts(c.created)));
    put(
        "modified",
        json!(ts(snap.finished.or(snap.started).unwrap_or(c.created))),
    );
    put("name", json!(c.name));
    put("description", json!(c.description));
    put("unified_job_template", json!(ujt));
    put("launch_type", json!(c.launch_type));
    put("status", json!(snap.status.as_str()));
    put("failed", json!(snap.status.failed()));
    put("started", ts_opt(snap.started));
    put("finished", ts_opt(snap.finished));
    put("canceled_on", ts_opt(c.cancel_at));
    put("elapsed", elapsed(snap.started, snap.finished, now));
    put("job_explanation", json!(snap.explanation));
    put(
        "launched_by",
        launched_by(&Unified::Workflow(Box::new(wf.clone())), p),
    );
    put("work_unit_id", Value::Null);
    put("workflow_job_template", json!(wf.wfjt));
    put("extra_vars", json!(c.extra_vars));
    put("allow_simultaneous", json!(c.allow_simultaneous));
    put("job_template", json!(wf.job_template));
    put("is_sliced_job", json!(wf.is_sliced));
    put("inventory", json!(c.inventory));
    put("limit", null_if_empty(&c.limit));
    put("scm_branch", null_if_empty(&c.scm_branch));
    put("webhook_service", json!(""));
    put("webhook_credential", Value::Null);
    put("webhook_guid", json!(""));
    put("skip_tags", null_if_empty(&c.skip_tags));
    put("job_tags", null_if_empty(&c.job_tags));
    if detail {
        put("job_args", json!(""));
        put("job_cwd", json!(""));
        put("job_env", json!({}));
        put("result_traceback", json!(""));
    }
    Some(Value::Object(m))
}

/// Any unified job.
pub(crate) fn unified_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
    detail: bool,
) -> Option<Value> {
    match st.unified(id)? {
        Unified::Job(_) => job_json(st, id, now, p, detail),
        Unified::Workflow(_) => workflow_json(st, id, now, p, detail),
    }
}

/// Nodes of a workflow job (`workflow_nodes/` results).
pub(crate) fn workflow_nodes_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
) -> Option<Vec<Value>> {
    let wf = st.workflow(id)?.clone();
    let mut out = Vec::new();
    for node in &wf.nodes {
        let job_summary = match node.job {
            Some(j) => {
                let snap = st.job_snapshot(j, now);
                snap.map(|s| {
                    json!({"id": j, "name": st.job(j).map(|x| x.c.name.clone()).unwrap_or_default(),
                           "description": "", "status": s.status.as_str(), "failed": s.status.failed(),
                           "elapsed": elapsed(s.started, s.finished, now), "type": "job",
                           "canceled_on": Value::Null})
                })
            }
            None => None,
        };
        let mut summary = json!({
            "workflow_job": {"id": id, "name": wf.c.name, "description": wf.c.description},
        });
        if let Some(js) = job_summary {
            summary["job"] = js;
        }
        if let Some(t) = node.ujt.and_then(|t| st.templates.get(&t)) {
            summary["unified_job_template"] = json!({"id": t.id(), "name": t.name(), "description": t.description(), "unified_job_type": "job"});
        }
        let mut related = json!({
            "workflow_job": format!("{p}workflow_jobs/{id}/"),
            "success_nodes": format!("{p}workflow_job_nodes/{}/success_nodes/", node.id),
            "failure_nodes": format!("{p}workflow_job_nodes/{}/failure_nodes/", node.id),
            "always_nodes": format!("{p}workflow_job_nodes/{}/always_nodes/", node.id),
        });
        if let Some(j) = node.job {
            related["job"] = json!(format!("{p}jobs/{j}/"));
        }
        if let Some(t) = node.ujt {
            related["unified_job_template"] = json!(format!("{p}job_templates/{t}/"));
        }
        let idx = wf.nodes.iter().position(|n| n.id == node.id).unwrap_or(0);
        let success_nodes: Vec<u64> = if wf.parallel {
            Vec::new()
        } else {
            wf.nodes.get(idx + 1).map(|n| n.id).into_iter().collect()
        };
        let do_not_run = match wf.ended {
            Some((t, _, _)) if t <= now => node.job.is_none(),
            _ => false,
        };
        out.push(json!({
            "id": node.id,
            "type": "workflow_job_node",
            "url": format!("{p}workflow_job_nodes/{}/", node.id),
            "related": related,
            "summary_fields": summary,
            "created": ts(wf.c.created),
            "modified": ts(wf.c.created),
            "extra_data": {},
            "inventory": Value::Null,
            "scm_branch": Value::Null,
            "job_type": Value::Null,
            "job_tags": Value::Null,
            "skip_tags": Value::Null,
            "limit": Value::Null,
            "diff_mode": Value::Null,
            "verbosity": Value::Null,
            "execution_environment": Value::Null,
            "forks": Value::Null,
            "job_slice_count": Value::Null,
            "timeout": Value::Null,
            "job": node.job,
            "workflow_job": id,
            "unified_job_template": node.ujt,
            "success_nodes": success_nodes,
            "failure_nodes": [],
            "always_nodes": [],
            "all_parents_must_converge": false,
            "do_not_run": do_not_run,
            "identifier": node.identifier,
        }));
    }
    Some(out)
}

fn capabilities(user: &User, t: &Template) -> Value {
    let start = State::can_start(user, t);
    json!({"edit": user.is_superuser, "delete": user.is_superuser, "start": start, "schedule": start, "copy": user.is_superuser})
}

fn named_url(p: &str, kind: &str, name: &str, org: &str) -> String {
    format!(
        "{p}{kind}/{}++{}/",
        encode_named_url_part(name),
        encode_named_url_part(org)
    )
}

/// Status and finish time of any unified job at `now`.
fn status_and_finished(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
) -> Option<(Status, Option<DateTime<Utc>>)> {
    match st.unified(id)? {
        Unified::Job(_) => st.job_snapshot(id, now).map(|s| (s.status, s.finished)),
        Unified::Workflow(_) => st
            .workflow_snapshot(id, now)
            .map(|s| (s.status, s.finished)),
    }
}

/// What both template bodies show of a template's runs.
struct RunsSummary {
    /// The template's `status` field.
    status: &'static str,
    /// `summary_fields.last_job`.
    last: Option<Value>,
    /// `summary_fields.recent_jobs`: up to 10 newest runs.
    recent: Vec<Value>,
    /// `last_job_run`: the last run's finish time.
    last_job_run: Value,
    /// `last_job_failed`.
    last_job_failed: bool,
}

fn runs_summary(st: &mut State, t: u64, now: DateTime<Utc>) -> RunsSummary {
    let status = st.template_status(t, now);
    let mut last = None;
    if let Some(l) = st.templates.get(&t).and_then(Template::last_job) {
        let name = st
            .unified(l)
            .map(|u| u.common().name.clone())
            .unwrap_or_default();
        if let Some((status, finished)) = status_and_finished(st, l, now) {
            last = Some(
                json!({"id": l, "name": name, "description": "", "finished": ts_opt(finished),
                                    "status": status.as_str(), "failed": status.failed()}),
            );
        }
    }
    // recent jobs: up to 10 newest of this template
    let ids: Vec<u64> = st
        .jobs
        .iter()
        .rev()
        .flatten()
        .filter(|u| {
            u.common().template == Some(t) && u.common().launch_type != "workflow"
                || matches!(u, Unified::Workflow(w) if w.wfjt == Some(t))
        })
        .take(10)
        .map(|u| u.common().id)
        .collect();
    let mut recent = Vec::new();
    for id in ids {
        let kind = if st.workflow(id).is_some() {
            "workflow_job"
        } else {
            "job"
        };
        if let Some((status, finished)) = status_and_finished(st, id, now) {
            recent.push(
                json!({"id": id, "status": status.as_str(), "finished": ts_opt(finished),
                               "canceled_on": Value::Null, "type": kind}),
            );
        }
    }
    let last_job_run = last
        .as_ref()
        .map(|l| l["finished"].clone())
        .unwrap_or(Value::Null);
    let last_job_failed = last
        .as_ref()
        .and_then(|l| l["status"].as_str())
        .is_some_and(|x| matches!(x, "failed" | "error" | "canceled"));
    RunsSummary {
        status,
        last,
        recent,
        last_job_run,
        last_job_failed,
    }
}

/// Name of the organization `id` (empty when unknown).
fn org_name(st: &State, id: u64) -> String {
    st.org(id).map(|o| o.name.clone()).unwrap_or_default()
}

/// Adds `last_job` and `survey` to a template's `summary_fields`, where there are such.
fn add_last_job_and_survey(summary: &mut Value, last: Option<Value>, survey: Option<&SurveySpec>) {
    if let Some(l) = last {
        summary["last_job"] = l;
    }
    if let Some(sv) = survey {
        summary["survey"] = json!({"title": sv.name, "description": sv.description});
    }
}

/// A job template body.
pub(crate) fn job_template_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
    user: &User,
    detail: bool,
) -> Option<Value> {
    let runs = runs_summary(st, id, now);
    let Some(t @ Template::Job(jt)) = st.templates.get(&id) else {
        return None;
    };
    let org = org_name(st, jt.org_id);
    let s = &jt.spec;
    let mut related = json!({
        "launch": format!("{p}job_templates/{id}/launch/"),
        "jobs": format!("{p}job_templates/{id}/jobs/"),
        "survey_spec": format!("{p}job_templates/{id}/survey_spec/"),
        "schedules": format!("{p}job_templates/{id}/schedules/"),
        "credentials": format!("{p}job_templates/{id}/credentials/"),
        "labels": format!("{p}job_templates/{id}/labels/"),
        "slice_workflow_jobs": format!("{p}job_templates/{id}/slice_workflow_jobs/"),
        "organization": format!("{p}organizations/{}/", jt.org_id),
        "project": format!("{p}projects/{}/", s.project),
        "webhook_key": format!("{p}job_templates/{id}/webhook_key/"),
    });
    if let Some(i) = jt.inventory_id {
        related["inventory"] = json!(format!("{p}inventories/{i}/"));
    }
    if let Some(l) = jt.last_job {
        related["last_job"] = json!(format!("{p}jobs/{l}/"));
    }
    if detail {
        related["named_url"] = json!(named_url(p, "job_templates", &s.name, &org));
    }
    let mut summary = json!({
        "organization": org_summary(st, Some(jt.org_id)),
        "inventory": inventory_summary(st, jt.inventory_id),
        "project": {"id": s.project, "name": "Demo Project", "description": "", "status": "successful", "scm_type": "git"},
        "execution_environment": Value::Null,
        "user_capabilities": capabilities(user, t),
        "labels": {"count": 0, "results": []},
        "recent_jobs": runs.recent,
        "credentials": [],
    });
    add_last_job_and_survey(&mut summary, runs.last, s.survey_spec.as_ref());
    let a = &s.ask;
    let mut first = json!({
        "id": id, "type": "job_template", "url": format!("{p}job_templates/{id}/"),
        "related": related, "summary_fields": summary,
        "created": ts(jt.created), "modified": ts(jt.created),
        "name": s.name, "description": s.description, "job_type": s.job_type,
        "inventory": jt.inventory_id, "project": s.project, "playbook": s.playbook,
        "scm_branch": s.scm_branch, "forks": s.forks, "limit": s.limit, "verbosity": s.verbosity,
        "extra_vars": s.extra_vars, "job_tags": s.job_tags, "force_handlers": false,
        "skip_tags": s.skip_tags, "start_at_task": "", "timeout": s.timeout, "use_fact_cache": false,
        "organization": jt.org_id, "last_job_run": runs.last_job_run,
    });
    let second = json!({
        "last_job_failed": runs.last_job_failed,
        "next_job_run": Value::Null, "status": runs.status, "execution_environment": Value::Null,
        "host_config_key": "",
        "ask_scm_branch_on_launch": a.scm_branch, "ask_diff_mode_on_launch": a.diff_mode,
        "ask_variables_on_launch": a.variables, "ask_limit_on_launch": a.limit,
        "ask_tags_on_launch": a.tags, "ask_skip_tags_on_launch": a.skip_tags,
        "ask_job_type_on_launch": a.job_type, "ask_verbosity_on_launch": a.verbosity,
        "ask_inventory_on_launch": a.inventory, "ask_credential_on_launch": a.credential,
        "ask_execution_environment_on_launch": a.execution_environment,
        "ask_labels_on_launch": a.labels, "ask_forks_on_launch": a.forks,
        "ask_job_slice_count_on_launch": a.job_slice_count, "ask_timeout_on_launch": a.timeout,
        "ask_instance_groups_on_launch": a.instance_groups,
        "survey_enabled": s.survey_enabled, "become_enabled": false, "diff_mode": s.diff_mode,
        "allow_simultaneous": s.allow_simultaneous, "custom_virtualenv": Value::Null,
        "job_slice_count": s.job_slice_count, "webhook_service": "", "webhook_credential": Value::Null,
        "prevent_instance_group_fallback": false,
    });
    if let (Value::Object(a), Value::Object(b)) = (&mut first, second) {
        a.extend(b);
    }
    Some(first)
}

/// A workflow job template body.
pub(crate) fn workflow_template_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
    user: &User,
    detail: bool,
) -> Option<Value> {
    let runs = runs_summary(st, id, now);
    let Some(t @ Template::Workflow(wt)) = st.templates.get(&id) else {
        return None;
    };
    let org = org_name(st, wt.org_id);
    let s = &wt.spec;
    let mut related = json!({
        "launch": format!("{p}workflow_job_templates/{id}/launch/"),
        "workflow_jobs": format!("{p}workflow_job_templates/{id}/workflow_jobs/"),
        "workflow_nodes": format!("{p}workflow_job_templates/{id}/workflow_nodes/"),
        "survey_spec": format!("{p}workflow_job_templates/{id}/survey_spec/"),
        "schedules": format!("{p}workflow_job_templates/{id}/schedules/"),
        "labels": format!("{p}workflow_job_templates/{id}/labels/"),
        "organization": format!("{p}organizations/{}/", wt.org_id),
    });
    if let Some(l) = wt.last_job {
        related["last_job"] = json!(format!("{p}workflow_jobs/{l}/"));
    }
    if detail {
        related["named_url"] = json!(named_url(p, "workflow_job_templates", &s.name, &org));
    }
    let mut summary = json!({
        "organization": org_summary(st, Some(wt.org_id)),
        "user_capabilities": capabilities(user, t),
        "labels": {"count": 0, "results": []},
        "recent_jobs": runs.recent,
    });
    if let Some(i) = inventory_summary(st, wt.inventory_id) {
        summary["inventory"] = i;
    }
    add_last_job_and_survey(&mut summary, runs.last, s.survey_spec.as_ref());
    Some(json!({
        "id": id, "type": "workflow_job_template", "url": format!("{p}workflow_job_templates/{id}/"),
        "related": related, "summary_fields": summary,
        "created": ts(wt.created), "modified": ts(wt.created),
        "name": s.name, "description": s.description,
        "last_job_run": runs.last_job_run,
        "last_job_failed": runs.last_job_failed,
        "next_job_run": Value::Null, "status": runs.status, "extra_vars": s.extra_vars,
        "organization": wt.org_id, "survey_enabled": s.survey_enabled,
        "allow_simultaneous": s.allow_simultaneous, "ask_variables_on_launch": s.ask_variables_on_launch,
        "inventory": wt.inventory_id, "limit": null_if_empty(&s.limit),
        "scm_branch": null_if_empty(&s.scm_branch),
        "ask_inventory_on_launch": s.ask_inventory_on_launch, "ask_scm_branch_on_launch": s.ask_scm_branch_on_launch,
        "ask_limit_on_launch": s.ask_limit_on_launch, "webhook_service": "", "webhook_credential": Value::Null,
        "ask_labels_on_launch": s.ask_labels_on_launch, "ask_skip_tags_on_launch": s.ask_skip_tags_on_launch,
        "ask_tags_on_launch": s.ask_tags_on_launch,
        "skip_tags": null_if_empty(&s.skip_tags),
        "job_tags": null_if_empty(&s.job_tags),
    }))
}

/// Any template.
pub(crate) fn template_json(
    st: &mut State,
    id: u64,
    now: DateTime<Utc>,
    p: &str,
    user: &User,
    detail: bool,
) -> Option<Value> {
    match st.templates.get(&id)? {
        Template::Job(_) => job_template_json(st, id, now, p, user, detail),
        Template::Workflow(_) => workflow_template_json(st, id, now, p, user, detail),
    }
}

/// `survey_spec/` body (`{}` without a survey; password defaults as `$encrypted$`).
pub(crate) fn survey_spec_json(t: &Template) -> Value {
    let spec = match t {
        Template::Job(j) => j.spec.survey_spec.as_ref(),
        Template::Workflow(w) => w.spec.survey_spec.as_ref(),
    };
    match spec {
        None => json!({}),
        Some(s) => {
            let mut v = serde_json::to_value(s).unwrap_or_else(|_| json!({}));
            if let Some(qs) = v.get_mut("spec").and_then(Value::as_array_mut) {
                for q in qs {
                    if q["type"] == "password"
                        && q["default"].as_str().is_some_and(|d| !d.is_empty())
                    {
                        q["default"] = json!("$encrypted$");
                    }
                }
            }
            v
        }
    }
}
