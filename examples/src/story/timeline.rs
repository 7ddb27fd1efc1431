//! The timeline and the jobs table, rebuilt from the records: each reconcile's cached copy and
//! the API server's object before and after it, the AAP requests and API-server requests it made.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_aap::provider::TemplateAction;
use provkit_core::{JobState, JobType};
use provkit_testing::fake_aap::LoggedRequest;

use super::records::{RESOURCES, Reconciled, Recorder, Snap, jobs_of, lock};
use crate::report::Table;
use crate::stack::{Stack, TimeScale};

/// Labels an AAP request (`launch`, `poll 12`, …) and the kind it concerns, if any.
fn aap_call(
    r: &LoggedRequest,
    templates: &HashMap<u64, String>,
    names: &[(String, String)],
    jobs: &HashMap<u64, String>,
) -> Option<(String, String)> {
    let parts: Vec<&str> = r.path.trim_matches('/').split('/').collect();
    let num = |i: usize| parts.get(i).and_then(|p| p.parse::<u64>().ok());
    let at = |name: &str| parts.iter().position(|p| *p == name);
    if at("unified_job_templates").is_some() {
        return names
            .iter()
            .find(|(name, _)| r.query.contains(&format!("name={name}")))
            .map(|(_, kind)| (kind.clone(), "template lookup".into()));
    }
    if let Some(i) = at("job_templates") {
        let kind = num(i + 1).and_then(|t| templates.get(&t)).cloned();
        let tail = parts.get(i + 2).copied().unwrap_or("");
        return match (r.method.as_str(), tail, kind) {
            ("POST", "launch", Some(k)) => Some((k, "launch".into())),
            ("GET", "launch", Some(k)) => Some((k, "launch check".into())),
            ("GET", "jobs", Some(k)) => Some((k, "lookup by key".into())),
            _ => None,
        };
    }
    if let Some(i) = at("jobs") {
        let Some(id) = num(i + 1) else {
            let kind = templates
                .iter()
                .find(|(t, _)| {
                    r.query.contains(&format!("job_template={t}&"))
                        || r.query.ends_with(&format!("job_template={t}"))
                })
                .map(|(_, k)| k.clone())?;
            return Some((kind, "lookup by key".into()));
        };
        let kind = jobs.get(&id)?.clone();
        let tail = parts.get(i + 2).copied().unwrap_or("");
        return match (r.method.as_str(), tail) {
            ("GET", "") => Some((kind, format!("poll {id}"))),
            ("POST", "cancel") => Some((kind, format!("cancel {id}"))),
            (_, t) => Some((kind, format!("{} {id}/{t}", r.method))),
        };
    }
    None
}

fn kind_of(name: &str) -> &'static str {
    RESOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, k)| k)
}

/// What a reconcile did, from its records.
fn decision(r: &Reconciled, calls: &[String]) -> String {
    let launched = calls.iter().any(|c| c == "launch");
    let new_jobs: Vec<&(String, JobType, JobState, String)> = r
        .after
        .jobs
        .iter()
        .filter(|j| !r.before.has_job(&j.0))
        .collect();
    let stale = r.before.jobs.iter().any(|j| !r.copy.has_job(&j.0));
    if let Err(e) = &r.result {
        return format!("error: {e}");
    }
    if !r.before.exists {
        return "cached copy of an object already gone → nothing to do".into();
    }
    if !r.copy.finalizer && !r.copy.deleting {
        return "add finalizer".into();
    }
    if let Some(job) = new_jobs.first() {
        let what = if job.1 == JobType::Deprovision {
            "deprovision"
        } else {
            "provision"
        };
        return if launched {
            let retry = r
                .copy
                .jobs
                .iter()
                .rev()
                .find(|j| j.1 == JobType::Provision)
                .is_some_and(|j| j.2 == JobState::Failed && job.1 == JobType::Provision);
            if retry {
                format!("backoff elapsed → retry: launch {what} job {}", job.0)
            } else {
                format!("launch {what} job {}", job.0)
            }
        } else {
            format!(
                "adopt {what} job {} (found by the launch intent's key)",
                job.0
            )
        };
    }
    if stale && !launched {
        return "stale cached copy → stale-cache check → no launch".into();
    }
    if r.after.exists && !r.after.finalizer && r.copy.deleting {
        return "deprovisioned → remove finalizer".into();
    }
    if !r.after.exists {
        return "deprovisioned → finalizer removed".into();
    }
    let latest_failed = r
        .after
        .jobs
        .iter()
        .rev()
        .find(|j| j.1 == JobType::Provision)
        .is_some_and(|j| j.2 == JobState::Failed);
    if calls
        .iter()
        .any(|c| c.starts_with("poll") || c.starts_with("cancel"))
    {
        return if r.copy.deleting {
            "deprovisioning".into()
        } else {
            "poll".into()
        };
    }
    if latest_failed && !r.copy.deleting {
        return "backing off".into();
    }
    "nothing to do".into()
}

fn job_state(s: &Snap) -> String {
    s.jobs
        .last()
        .map(|(id, t, st, _)| {
            let t = if *t == JobType::Deprovision {
                "deprov "
            } else {
                ""
            };
            format!("{t}{id} {}", st.as_str())
        })
        .unwrap_or_default()
}

/// The production-time label of a real offset.
fn clock(scale: TimeScale, at: Duration) -> String {
    let s = scale.production(at).as_secs();
    format!("{:02}:{:02}", s / 60, s % 60)
}

pub(super) fn timeline(stack: &Stack, rec: &Recorder) -> String {
    let scale = stack.scale();
    let aap = stack.aap();
    let mut templates = HashMap::new();
    let mut names = Vec::new();
    for (_, kind) in RESOURCES {
        for action in [TemplateAction::Create, TemplateAction::Delete] {
            names.push((stack.template_name(action, kind), kind.to_owned()));
            if let Some(id) = stack.template_id(action, kind) {
                templates.insert(id, kind.to_owned());
            }
        }
    }
    let jobs: HashMap<u64, String> = aap
        .jobs()
        .iter()
        .filter_map(|j| Some((j.id, templates.get(&j.template?)?.clone())))
        .collect();
    let requests = aap.requests();
    let calls: Vec<(DateTime<Utc>, String, String)> = requests
        .iter()
        .filter_map(|r| aap_call(r, &templates, &names, &jobs).map(|(k, c)| (r.at, k, c)))
        .collect();
    let mut rows: Vec<(Duration, u8, Vec<String>)> = Vec::new();
    for n in lock(&rec.notes).iter() {
        rows.push((
            n.at,
            0,
            vec![
                clock(scale, n.at),
                n.name.clone(),
                n.text.clone(),
                String::new(),
                String::new(),
                String::new(),
            ],
        ));
    }
    for r in lock(&rec.done).iter() {
        let kind = kind_of(&r.name);
        let mine: Vec<String> = calls
            .iter()
            .filter(|(at, k, _)| k == kind && *at >= r.start && *at <= r.end)
            .map(|(_, _, c)| c.clone())
            .collect();
        let what = decision(r, &mine);
        let requeue = match &r.result {
            // A converged object comes back after the resync period (10 minutes by default).
            Ok(Some(delay)) if *delay >= Duration::from_secs(300) => " · resync",
            Ok(Some(_)) | Err(_) => "",
            Ok(None) => " · await change",
        };
        rows.push((
            r.at,
            1,
            vec![
                clock(scale, r.at),
                r.name.clone(),
                format!("{what}{requeue}"),
                mine.join(", "),
                r.api_calls.join(", "),
                format!("{} · {}", job_state(&r.after), r.after.phase())
                    .trim_start_matches(" · ")
                    .to_owned(),
            ],
        ));
    }
    rows.sort_by_key(|(at, order, _)| (*at, *order));
    let mut t = Table::new(&[
        "time",
        "resource",
        "reconcile / event",
        "AAP calls",
        "API-server calls",
        "latest job · state",
    ]);
    for (_, _, cells) in rows {
        t.row(cells);
    }
    t.render()
}

pub(super) fn jobs_table(stack: &Stack) -> String {
    let mut t = Table::new(&[
        "resource",
        ">provision jobs",
        ">deprovision jobs",
        "AAP job states",
    ]);
    for (name, kind) in RESOURCES {
        let p = jobs_of(stack, kind, TemplateAction::Create);
        let d = jobs_of(stack, kind, TemplateAction::Delete);
        let states: Vec<String> = p
            .iter()
            .chain(d.iter())
            .map(|j| format!("{} {}", j.id, j.status))
            .collect();
        t.row(vec![
            name.to_owned(),
            p.len().to_string(),
            d.len().to_string(),
            states.join(", "),
        ]);
    }
    t.render()
}
