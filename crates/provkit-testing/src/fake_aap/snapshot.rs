//! A serialisable record of the fake's job-template jobs ([`JobsSnapshot`]), so a process that
//! embeds the fake (the example operator's `--fake-aap-state`) keeps its jobs across restarts.
//!
//! A job's status is computed from its creation time, its template's script and a cancel
//! request, so those (with its id, template and `extra_vars`) are all a restore needs to answer
//! as before. Workflow jobs and their nodes are not recorded: after a restore their ids answer
//! 404, as purged jobs do. Hand-written (a few fields of the fake's private state; no crate
//! serialises it).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ovalue::parse_extra_vars_str;
use super::state::{NewJob, State, Template, Unified};

/// The fake's job-template jobs at one moment; serde-serialisable (JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobsSnapshot {
    /// The id the next job gets (ids of unrecorded jobs stay used).
    pub next_id: u64,
    /// The recorded jobs, by id.
    pub jobs: Vec<JobRecord>,
}

/// One job of a job template, as [`JobsSnapshot`] records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JobRecord {
    /// Unified job id.
    pub id: u64,
    /// The job template's name.
    pub template: String,
    /// `extra_vars` exactly as the API shows them (a JSON string).
    pub extra_vars: String,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// When a cancel was requested, if one was.
    pub cancel_requested: Option<DateTime<Utc>>,
}

pub(crate) fn take(st: &State) -> JobsSnapshot {
    let jobs = st
        .jobs
        .iter()
        .flatten()
        .filter_map(|u| match u {
            Unified::Job(j) if j.c.parent_workflow.is_none() => {
                let template = match j.c.template.and_then(|t| st.templates.get(&t)) {
                    Some(Template::Job(t)) => t.spec.name.clone(),
                    _ => return None,
                };
                Some(JobRecord {
                    id: j.c.id,
                    template,
                    extra_vars: j.c.extra_vars.clone(),
                    created: j.c.created,
                    cancel_requested: j.c.cancel_at,
                })
            }
            _ => None,
        })
        .collect();
    JobsSnapshot {
        next_id: st.jobs.len() as u64 + 1,
        jobs,
    }
}

/// Replays `snap` into a fake without jobs; `Err(reason)` names what does not fit.
pub(crate) fn restore(st: &mut State, snap: &JobsSnapshot) -> Result<(), String> {
    if !st.jobs.is_empty() {
        return Err("jobs can only be restored into a fake without jobs".into());
    }
    let mut records: Vec<&JobRecord> = snap.jobs.iter().collect();
    records.sort_by_key(|r| r.id);
    for r in records {
        if r.id <= st.jobs.len() as u64 {
            return Err(format!("job id {} appears twice", r.id));
        }
        while (st.jobs.len() as u64) + 1 < r.id {
            st.jobs.push(None);
        }
        let template = st
            .templates
            .values()
            .find_map(|t| match t {
                Template::Job(jt) if jt.spec.name == r.template => Some(jt.id),
                _ => None,
            })
            .ok_or_else(|| format!("job {}: no job template {:?}", r.id, r.template))?;
        let extra_vars =
            parse_extra_vars_str(&r.extra_vars).map_err(|e| format!("job {}: {e}", r.id))?;
        let new = NewJob {
            template,
            extra_vars,
            launched_by: None,
            launch_type: "manual",
            inventory: None,
            limit: String::new(),
            job_tags: String::new(),
            skip_tags: String::new(),
            scm_branch: String::new(),
            job_type: "run".into(),
            verbosity: 0,
            forks: 0,
            timeout: 0,
            diff_mode: false,
            job_slice_count: 1,
            survey_passwords: Vec::new(),
        };
        let id = st
            .create_job(new, r.created, None, 0, false)
            .ok_or_else(|| format!("job {}: template {template} is not a job template", r.id))?;
        if let Some(Some(Unified::Job(j))) = st.jobs.last_mut() {
            j.c.extra_vars.clone_from(&r.extra_vars);
            j.c.cancel_at = r.cancel_requested;
        }
        debug_assert_eq!(id, r.id);
    }
    while (st.jobs.len() as u64) + 1 < snap.next_id {
        st.jobs.push(None);
    }
    Ok(())
}
