//! Paginated, filtered lists of templates and jobs.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::super::app::{App, Ctx, Resp, UNAUTHENTICATED};
use super::super::filter::{FVal, ListQuery, Term, compare, parse_list_query, row_matches};
use super::super::pagination::{PageReq, envelope, page_request, window};
use super::super::render;
use super::super::state::{State, Template, Unified};
use super::paths::{JobKind, TplKind, TplRef};
use super::templates::resolve;

/// Paginates an in-memory list of already-rendered objects.
pub(crate) fn paginate_values(ctx: &Ctx<'_>, all: Vec<Value>) -> Resp {
    let mut req = match page_request(ctx.query) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let range = match window(&mut req, all.len()) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let count = all.len();
    let page: Vec<Value> = all
        .into_iter()
        .skip(range.start)
        .take(range.len())
        .collect();
    envelope(ctx.path, ctx.query, req, count, &page)
}

pub(crate) const TEMPLATE_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "organization",
    "organization__name",
    "type",
    "status",
    "created",
    "modified",
    "inventory",
    "allow_simultaneous",
    "survey_enabled",
    "job_slice_count",
    "ask_variables_on_launch",
];

fn template_field(st: &mut State, id: u64, field: &str, now: DateTime<Utc>) -> (FVal, FVal) {
    let s = FVal::Str(String::new());
    let Some(t) = st.templates.get(&id) else {
        return (FVal::Null, s);
    };
    let org_id = t.org_id();
    match field {
        "id" => (FVal::Int(id as i64), FVal::Int(0)),
        "name" => (FVal::Str(t.name().to_owned()), s),
        "description" => (FVal::Str(t.description().to_owned()), s),
        "organization" => (FVal::Int(org_id as i64), FVal::Int(0)),
        "organization__name" => (
            FVal::Str(st.org(org_id).map(|o| o.name.clone()).unwrap_or_default()),
            s,
        ),
        "type" => (FVal::Str(t.type_str().to_owned()), s),
        "created" | "modified" => (FVal::Time(t.created()), FVal::Time(now)),
        "inventory" => {
            let inv = match t {
                Template::Job(j) => j.inventory_id,
                Template::Workflow(w) => w.inventory_id,
            };
            (
                inv.map_or(FVal::Null, |i| FVal::Int(i as i64)),
                FVal::Int(0),
            )
        }
        "allow_simultaneous" => {
            let v = match t {
                Template::Job(j) => j.spec.allow_simultaneous,
                Template::Workflow(w) => w.spec.allow_simultaneous,
            };
            (FVal::Bool(v), FVal::Bool(false))
        }
        "survey_enabled" => {
            let v = match t {
                Template::Job(j) => j.spec.survey_enabled,
                Template::Workflow(w) => w.spec.survey_enabled,
            };
            (FVal::Bool(v), FVal::Bool(false))
        }
        "ask_variables_on_launch" => {
            let v = match t {
                Template::Job(j) => j.spec.ask.variables,
                Template::Workflow(w) => w.spec.ask_variables_on_launch,
            };
            (FVal::Bool(v), FVal::Bool(false))
        }
        "job_slice_count" => match t {
            Template::Job(j) => (FVal::Int(i64::from(j.spec.job_slice_count)), FVal::Int(0)),
            Template::Workflow(_) => (FVal::Null, FVal::Int(0)),
        },
        "status" => (FVal::Str(st.template_status(id, now).to_owned()), s),
        _ => (FVal::Null, s),
    }
}

fn search_hit(q: &ListQuery, name: &str, description: &str) -> bool {
    q.search.as_ref().is_none_or(|s| {
        let s = s.to_lowercase();
        name.to_lowercase().contains(&s) || description.to_lowercase().contains(&s)
    })
}

/// `job_templates/`, `workflow_job_templates/`, `unified_job_templates/`.
pub(crate) fn templates(app: &App, ctx: &Ctx<'_>, prefix: &str, kind: Option<TplKind>) -> Resp {
    let Some(caller) = &ctx.caller else {
        return Resp::detail(401, UNAUTHENTICATED);
    };
    let known = |f: &str| TEMPLATE_FIELDS.contains(&f);
    let model = match kind {
        Some(TplKind::Job) => "JobTemplate",
        Some(TplKind::Workflow) => "WorkflowJobTemplate",
        None => "UnifiedJobTemplate",
    };
    let q = match parse_list_query(ctx.query, model, &known) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let mut req = match page_request(ctx.query) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut st = app.lock();
    st.sync(ctx.now);
    let candidates: Vec<u64> = st
        .templates
        .values()
        .filter(|t| match kind {
            Some(TplKind::Job) => matches!(t, Template::Job(_)),
            Some(TplKind::Workflow) => matches!(t, Template::Workflow(_)),
            None => true,
        })
        .filter(|t| State::can_see(&caller.user, t))
        .filter(|t| {
            q.types
                .as_ref()
                .is_none_or(|ty| ty.iter().any(|x| x == t.type_str()))
        })
        .filter(|t| search_hit(&q, t.name(), t.description()))
        .map(Template::id)
        .collect();
    let order: Vec<(String, bool)> = if q.order.is_empty() {
        vec![("name".into(), false), ("id".into(), false)]
    } else {
        q.order.clone()
    };
    let now = ctx.now;
    let page = sorted_page(
        &mut st,
        &q,
        &order,
        &mut req,
        candidates,
        |st, id, f| template_field(st, id, f, now),
        |st, id| render::template_json(st, id, now, prefix, &caller.user, false),
    );
    match page {
        Ok((count, results)) => envelope(ctx.path, ctx.query, req, count, &results),
        Err(e) => e,
    }
}

/// Keeps the `candidates` whose `field`s match `q`, sorts them by `order` and renders the page
/// `req` asks for; returns the match count and the rendered page.
fn sorted_page(
    st: &mut State,
    q: &ListQuery,
    order: &[(String, bool)],
    req: &mut PageReq,
    candidates: Vec<u64>,
    field: impl Fn(&mut State, u64, &str) -> (FVal, FVal),
    render_one: impl Fn(&mut State, u64) -> Option<Value>,
) -> Result<(usize, Vec<Value>), Resp> {
    let mut rows: Vec<(u64, Vec<FVal>)> = Vec::new();
    for id in candidates {
        if row_matches(q, &mut |f| field(st, id, f))? {
            let keys = order.iter().map(|(f, _)| field(st, id, f).0).collect();
            rows.push((id, keys));
        }
    }
    rows.sort_by(|a, b| compare(order, &a.1, &b.1));
    let range = window(req, rows.len())?;
    let results = rows[range]
        .iter()
        .filter_map(|(id, _)| render_one(st, *id))
        .collect();
    Ok((rows.len(), results))
}

pub(crate) const JOB_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "status",
    "type",
    "failed",
    "created",
    "modified",
    "started",
    "finished",
    "launch_type",
    "job_template",
    "workflow_job_template",
    "unified_job_template",
    "organization",
    "inventory",
    "unified_job_node__workflow_job",
    "job_template__name",
    "elapsed",
];

fn job_field(st: &mut State, id: u64, field: &str, now: DateTime<Utc>) -> (FVal, FVal) {
    let s = FVal::Str(String::new());
    let i0 = FVal::Int(0);
    let t0 = FVal::Time(now);
    let Some(u) = st.unified(id) else {
        return (FVal::Null, s);
    };
    let c = u.common();
    let opt = |v: Option<u64>| v.map_or(FVal::Null, |x| FVal::Int(x as i64));
    if let Some(v) = job_id_field(u, field) {
        return (opt(v), i0);
    }
    match field {
        "name" => (FVal::Str(c.name.clone()), s),
        "description" => (FVal::Str(c.description.clone()), s),
        "type" => (
            FVal::Str(
                if matches!(u, Unified::Job(_)) {
                    "job"
                } else {
                    "workflow_job"
                }
                .into(),
            ),
            s,
        ),
        "created" => (FVal::Time(c.created), t0),
        "launch_type" => (FVal::Str(c.launch_type.to_owned()), s),
        "skip_tags" => (FVal::Str(c.skip_tags.clone()), s),
        "job_template__name" => match u {
            Unified::Job(_) => (FVal::Str(c.name.clone()), s),
            Unified::Workflow(_) => (FVal::Null, s),
        },
        "status" | "failed" | "started" | "finished" | "modified" | "elapsed" => {
            let is_job = matches!(u, Unified::Job(_));
            let created = c.created;
            let (status, started, finished) = if is_job {
                match st.job_snapshot(id, now) {
                    Some(sn) => (sn.status, sn.started, sn.finished),
                    None => return (FVal::Null, s),
                }
            } else {
                match st.workflow_snapshot(id, now) {
                    Some(sn) => (sn.status, sn.started, sn.finished),
                    None => return (FVal::Null, s),
                }
            };
            let t = |x: Option<DateTime<Utc>>| x.map_or(FVal::Null, FVal::Time);
            match field {
                "status" => (FVal::Str(status.as_str().to_owned()), s),
                "failed" => (FVal::Bool(status.failed()), FVal::Bool(false)),
                "started" => (t(started), t0),
                "finished" => (t(finished), t0),
                "modified" => (FVal::Time(finished.or(started).unwrap_or(created)), t0),
                _ => {
                    let e =
                        started.map_or(0, |st| (finished.unwrap_or(now) - st).num_milliseconds());
                    (FVal::Int(e), i0)
                }
            }
        }
        _ => (FVal::Null, s),
    }
}

/// The id-valued fields of a unified job (`Some(None)` for a null one); `None` for other fields.
fn job_id_field(u: &Unified, field: &str) -> Option<Option<u64>> {
    let c = u.common();
    Some(match field {
        "id" => Some(c.id),
        "organization" => c.org_id,
        "inventory" => c.inventory,
        "unified_job_template" => c.template,
        "unified_job_node__workflow_job" => c.parent_workflow,
        "job_template" => match u {
            Unified::Job(_) => c.template,
            Unified::Workflow(w) => w.job_template,
        },
        "workflow_job_template" => match u {
            Unified::Workflow(w) => w.wfjt,
            Unified::Job(_) => None,
        },
        _ => return None,
    })
}

/// A cheap pre-filter from the query's **first** term when it is a plain `<id field>=<int>`:
/// [`row_matches`] evaluates terms in order and rejects a row at its first failing AND term, so
/// skipping the rows this term rejects changes neither the result nor which errors can surface.
/// `id=<n>` also turns the scan into one index lookup.
const ID_FIELDS: &[&str] = &[
    "id",
    "organization",
    "inventory",
    "unified_job_template",
    "unified_job_node__workflow_job",
    "job_template",
    "workflow_job_template",
];

/// A plain `<id field>=<integer>` term (it matches or not; it cannot fail on a row).
fn id_term(term: &Term) -> Option<(&str, i64)> {
    let want = term.plain_int_exact()?;
    ID_FIELDS
        .contains(&term.field.as_str())
        .then_some((term.field.as_str(), want))
}

fn leading_id_term(q: &ListQuery) -> Option<(&str, i64)> {
    id_term(q.terms.first()?)
}

/// The `created__gt` / `created__gte` moment of `q`, when only plain id terms come before it:
/// a row created earlier fails there before any term that could answer an error is read, so
/// leaving such rows out changes neither the results nor the errors.
fn leading_created_after(q: &ListQuery) -> Option<(DateTime<Utc>, bool)> {
    let (i, after) = q
        .terms
        .iter()
        .enumerate()
        .find_map(|(i, t)| t.plain_created_after().map(|after| (i, after)))?;
    q.terms[..i]
        .iter()
        .all(|t| id_term(t).is_some())
        .then_some(after)
}

/// `jobs/`, `workflow_jobs/`, `unified_jobs/` (and a template's jobs when `template` is set).
pub(crate) fn jobs(
    app: &App,
    ctx: &Ctx<'_>,
    prefix: &str,
    kind: Option<JobKind>,
    template: Option<u64>,
) -> Resp {
    let Some(caller) = &ctx.caller else {
        return Resp::detail(401, UNAUTHENTICATED);
    };
    // `skip_tags` is a column of jobs only: a workflow job keeps its prompts in a JSON field
    // (`char_prompts`), which AWX's filter backend does not reach.
    let known =
        |f: &str| JOB_FIELDS.contains(&f) || (f == "skip_tags" && kind == Some(JobKind::Job));
    let model = match kind {
        Some(JobKind::Job) => "Job",
        Some(JobKind::Workflow) => "WorkflowJob",
        None => "UnifiedJob",
    };
    let q = match parse_list_query(ctx.query, model, &known) {
        Ok(q) => q,
        Err(e) => return e,
    };
    let mut req = match page_request(ctx.query) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut st = app.lock();
    st.sync(ctx.now);
    // A `created__gt` term reads only the jobs created after it (those with the highest ids),
    // as AWX's index on `created` does: a lookup by idempotency key pages through the jobs of
    // its window, not through every job of the fake.
    let start =
        leading_created_after(&q).map_or(0, |(t, inclusive)| st.first_created_after(t, inclusive));
    let lead = leading_id_term(&q);
    let by_id: Vec<&Unified> = match lead {
        Some(("id", want)) => u64::try_from(want)
            .ok()
            .and_then(|id| st.unified(id))
            .into_iter()
            .collect(),
        _ => Vec::new(),
    };
    let scan: Box<dyn Iterator<Item = &Unified>> = match lead {
        Some(("id", _)) => Box::new(by_id.into_iter()),
        _ => Box::new(st.jobs[start..].iter().flatten()),
    };
    let candidates: Vec<u64> = scan
        .filter(|u| {
            lead.is_none_or(|(field, want)| {
                job_id_field(u, field).is_some_and(|v| v.map(|x| x as i64) == Some(want))
            })
        })
        .filter(|u| match kind {
            Some(JobKind::Job) => matches!(u, Unified::Job(_)),
            Some(JobKind::Workflow) => matches!(u, Unified::Workflow(_)),
            None => true,
        })
        .filter(|u| template.is_none_or(|t| u.common().template == Some(t)))
        .filter(|u| {
            q.types.as_ref().is_none_or(|ty| {
                let name = if matches!(u, Unified::Job(_)) {
                    "job"
                } else {
                    "workflow_job"
                };
                ty.iter().any(|x| x == name)
            })
        })
        .filter(|u| search_hit(&q, &u.common().name, &u.common().description))
        .filter(|u| st.can_see_job(&caller.user, u))
        .map(|u| u.common().id)
        .collect();
    let order: Vec<(String, bool)> = if q.order.is_empty() {
        vec![("id".into(), false)]
    } else {
        q.order.clone()
    };
    let now = ctx.now;
    let page = sorted_page(
        &mut st,
        &q,
        &order,
        &mut req,
        candidates,
        |st, id, f| job_field(st, id, f, now),
        |st, id| render::unified_json(st, id, now, prefix, false),
    );
    match page {
        Ok((count, results)) => envelope(ctx.path, ctx.query, req, count, &results),
        Err(e) => e,
    }
}

/// `job_templates/<id>/jobs/` and `workflow_job_templates/<id>/workflow_jobs/`.
pub(crate) fn template_jobs(
    app: &App,
    ctx: &Ctx<'_>,
    prefix: &str,
    kind: TplKind,
    r: &TplRef,
) -> Resp {
    let Some(caller) = &ctx.caller else {
        return Resp::detail(401, UNAUTHENTICATED);
    };
    let id = {
        let st = app.lock();
        match resolve(&st, kind, r, &caller.user) {
            Ok(id) => id,
            Err(e) => return e,
        }
    };
    let job_kind = match kind {
        TplKind::Job => JobKind::Job,
        TplKind::Workflow => JobKind::Workflow,
    };
    jobs(app, ctx, prefix, Some(job_kind), Some(id))
}
