//! Job and workflow-job detail, cancel, delete, stdout and workflow nodes.

use serde_json::json;

use super::super::app::{App, Ctx, Resp};
use super::super::query::parse_query;
use super::super::render;
use super::super::state::{State, Unified};
use super::common::{job_model, no_match};
use super::lists;
use super::paths::JobKind;

/// Output above this many bytes is only offered as a download (AWX `STDOUT_MAX_BYTES_DISPLAY`).
pub(crate) const STDOUT_MAX_BYTES_DISPLAY: usize = 1_048_576;

fn visible(st: &State, ctx: &Ctx<'_>, kind: JobKind, id: u64) -> bool {
    let Some(u) = st.unified(id) else {
        return false;
    };
    let kind_ok = match kind {
        JobKind::Job => matches!(u, Unified::Job(_)),
        JobKind::Workflow => matches!(u, Unified::Workflow(_)),
    };
    kind_ok
        && ctx
            .caller
            .as_ref()
            .is_some_and(|c| st.can_see_job(&c.user, u))
}

/// `GET jobs/<id>/`, `GET workflow_jobs/<id>/`, and `DELETE` of either.
pub(crate) fn detail(app: &App, ctx: &Ctx<'_>, prefix: &str, kind: JobKind, id: u64) -> Resp {
    let mut st = app.lock();
    st.sync(ctx.now);
    if !visible(&st, ctx, kind, id) {
        return no_match(job_model(kind));
    }
    if ctx.method == "DELETE" {
        if st
            .status_of(id, ctx.now)
            .is_some_and(super::super::script::Status::is_active)
        {
            return Resp::detail(403, "Cannot delete running job resource.");
        }
        st.purge(id, ctx.now);
        return Resp::empty(204);
    }
    let v = match kind {
        JobKind::Job => render::job_json(&mut st, id, ctx.now, prefix, true),
        JobKind::Workflow => render::workflow_json(&mut st, id, ctx.now, prefix, true),
    };
    match v {
        Some(v) => Resp::json(200, &v),
        None => no_match(job_model(kind)),
    }
}

/// `GET`/`POST …/cancel/`.
pub(crate) fn cancel(app: &App, ctx: &Ctx<'_>, kind: JobKind, id: u64) -> Resp {
    let mut st = app.lock();
    st.sync(ctx.now);
    if !visible(&st, ctx, kind, id) {
        return no_match(job_model(kind));
    }
    if ctx.method == "POST" {
        return match st.cancel(id, ctx.now) {
            Ok(()) => Resp::empty(202),
            Err(()) => Resp::method_not_allowed("POST"),
        };
    }
    let can_cancel = st
        .status_of(id, ctx.now)
        .is_some_and(super::super::script::Status::is_active);
    match kind {
        JobKind::Job => Resp::json(200, &json!({"can_cancel": can_cancel})),
        JobKind::Workflow => {
            let explanation = st
                .workflow_snapshot(id, ctx.now)
                .map_or("", |s| s.explanation);
            Resp::json(
                200,
                &json!({"can_cancel": can_cancel, "job_explanation": explanation}),
            )
        }
    }
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `GET jobs/<id>/stdout/?format=…`.
pub(crate) fn stdout(app: &App, ctx: &Ctx<'_>, id: u64) -> Resp {
    let mut st = app.lock();
    st.sync(ctx.now);
    if !visible(&st, ctx, JobKind::Job, id) {
        return no_match("Job");
    }
    let Some(snap) = st.job_snapshot(id, ctx.now) else {
        return no_match("Job");
    };
    let Some(job) = st.job(id) else {
        return no_match("Job");
    };
    let full = &job.script.stdout;
    // Reveal output progressively while running, by whole lines.
    let shown: &str = match (snap.started, snap.finished) {
        (None, _) => "",
        (Some(_), Some(_)) => full,
        (Some(s), None) => {
            let total = job.script.running.as_secs_f64();
            let done = (ctx.now - s).num_milliseconds().max(0) as f64 / 1000.0;
            let frac = if total <= 0.0 {
                1.0
            } else {
                (done / total).min(1.0)
            };
            let cut = (full.len() as f64 * frac) as usize;
            let end = full[..cut.min(full.len())].rfind('\n').map_or(0, |i| i + 1);
            &full[..end]
        }
    };
    let q = parse_query(ctx.query);
    let format = q
        .iter()
        .rev()
        .find(|(k, _)| k == "format")
        .map_or("api", |(_, v)| v.as_str());
    let too_large = shown.len() > STDOUT_MAX_BYTES_DISPLAY;
    let message = format!(
        "Standard Output too large to display ({} bytes), only download supported for sizes over {STDOUT_MAX_BYTES_DISPLAY} bytes.",
        shown.len()
    );
    match format {
        "txt" if too_large => Resp::text(200, message, "text/plain"),
        "ansi" if too_large => Resp::text(200, message, "text/plain"),
        "txt" => Resp::text(200, strip_ansi(shown), "text/plain"),
        "ansi" => Resp::text(200, shown.to_owned(), "text/plain"),
        "txt_download" | "ansi_download" => {
            let body = if format == "txt_download" {
                strip_ansi(shown)
            } else {
                shown.to_owned()
            };
            Resp::text(200, body, "text/plain").header(
                "content-disposition",
                format!("attachment; filename=\"job_{id}.txt\""),
            )
        }
        "json" | "api" => {
            let lines = shown.lines().count();
            if too_large {
                return Resp::json(
                    200,
                    &json!({"range": {"start": 0, "end": 1, "absolute_end": 1}, "content": message}),
                );
            }
            Resp::json(
                200,
                &json!({"range": {"start": 0, "end": lines, "absolute_end": lines}, "content": strip_ansi(shown)}),
            )
        }
        "html" => Resp::text(
            200,
            format!("<pre>{}</pre>", strip_ansi(shown)),
            "text/html",
        ),
        _ => Resp::detail(404, "Not found."),
    }
}

/// `GET workflow_jobs/<id>/workflow_nodes/`.
pub(crate) fn workflow_nodes(app: &App, ctx: &Ctx<'_>, prefix: &str, id: u64) -> Resp {
    let mut st = app.lock();
    st.sync(ctx.now);
    if !visible(&st, ctx, JobKind::Workflow, id) {
        return no_match("WorkflowJob");
    }
    let nodes = render::workflow_nodes_json(&mut st, id, ctx.now, prefix).unwrap_or_default();
    drop(st);
    lists::paginate_values(ctx, nodes)
}

/// `GET jobs/<id>/job_events/`: the scripted failed tasks of a job that ended naturally, each
/// as a `playbook_on_task_start` parent and a `runner_on_failed` event (both `failed: true`),
/// after a `playbook_on_start`; filters `failed` and `event`, `order_by=counter|-counter`,
/// paginated. Other events (ok tasks, stats) are not modelled.
pub(crate) fn job_events(app: &App, ctx: &Ctx<'_>, prefix: &str, id: u64) -> Resp {
    let mut st = app.lock();
    st.sync(ctx.now);
    if !visible(&st, ctx, JobKind::Job, id) {
        return no_match("Job");
    }
    let ended = st
        .job_snapshot(id, ctx.now)
        .is_some_and(|s| !s.status.is_active() && s.natural_end);
    let failures = match (ended, st.job(id)) {
        (true, Some(job)) => job.script.failed_events.clone(),
        _ => Vec::new(),
    };
    drop(st);
    let mut events = Vec::new();
    let mut counter = 1u64;
    let mut push = |events: &mut Vec<serde_json::Value>,
                    event: &str,
                    failed: bool,
                    task: &str,
                    host: &str,
                    data: serde_json::Value,
                    stdout: String| {
        events.push(json!({
            "id": id * 1000 + counter, "type": "job_event",
            "url": format!("{prefix}job_events/{}/", id * 1000 + counter),
            "job": id, "counter": counter, "event": event, "failed": failed, "changed": false,
            "task": task, "host_name": host, "event_data": data, "stdout": stdout,
            "start_line": counter - 1, "end_line": counter, "verbosity": 0,
        }));
        counter += 1;
    };
    if !failures.is_empty() {
        push(
            &mut events,
            "playbook_on_start",
            true,
            "",
            "",
            json!({}),
            String::new(),
        );
    }
    for f in &failures {
        push(
            &mut events,
            "playbook_on_task_start",
            true,
            &f.task,
            "",
            json!({"task": f.task}),
            format!("\nTASK [{}] ***", f.task),
        );
        push(
            &mut events,
            "runner_on_failed",
            true,
            &f.task,
            &f.host,
            json!({"task": f.task, "host": f.host, "res": {"changed": false, "msg": f.msg}}),
            format!(
                "\u{1b}[0;31mfatal: [{}]: FAILED! => {{\"changed\": false, \"msg\": {}}}\u{1b}[0m",
                f.host,
                json!(f.msg)
            ),
        );
    }
    let q = parse_query(ctx.query);
    let get = |k: &str| {
        q.iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    if let Some(v) = get("failed") {
        let want = matches!(v, "true" | "True" | "1");
        events.retain(|e| e["failed"] == want);
    }
    if let Some(v) = get("event") {
        events.retain(|e| e["event"] == v);
    }
    if get("order_by") == Some("-counter") {
        events.reverse();
    }
    lists::paginate_values(ctx, events)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ansi_is_stripped() {
        assert_eq!(
            super::strip_ansi("\u{1b}[0;32mok: [localhost]\u{1b}[0m\n"),
            "ok: [localhost]\n"
        );
    }
}
