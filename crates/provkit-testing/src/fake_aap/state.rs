//! The fake's state: templates, jobs, workflow jobs, users and tokens, and the lazy job clock.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::ovalue::{OMap, OValue, omap_get, omap_insert, parse_extra_vars_str};
use super::script::{JobScript, ScriptRule, Snapshot, Status, snapshot};
use super::spec::{JobTemplateSpec, Scope, Settings, WorkflowJobTemplateSpec};

pub(crate) const WORKFLOW_FAILED_EXPLANATION: &str =
    "No error handling paths found, marking workflow as failed";

#[derive(Clone, Debug)]
pub(crate) struct Org {
    pub id: u64,
    pub name: String,
    pub description: String,
}

#[derive(Clone, Debug)]
pub(crate) struct User {
    pub id: u64,
    pub username: String,
    pub password: String,
    pub is_superuser: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub id: u64,
    pub token: String,
    pub user_id: u64,
    pub scope: Scope,
    pub expires: DateTime<Utc>,
    pub description: String,
    pub created: DateTime<Utc>,
    /// Minted by the controller (not the gateway): refused at the component API in AAP 2.7 mode.
    pub controller_issued: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Inventory {
    pub id: u64,
    pub name: String,
    pub org_id: u64,
    pub hosts: u32,
}

#[derive(Debug)]
pub(crate) struct JobTemplate {
    pub id: u64,
    pub spec: JobTemplateSpec,
    pub org_id: u64,
    pub inventory_id: Option<u64>,
    pub extra_vars: OMap,
    pub created: DateTime<Utc>,
    pub script: Option<Arc<JobScript>>,
    pub rules: Vec<ScriptRule>,
    pub last_job: Option<u64>,
    pub launches: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct WfTemplateNode {
    pub ujt: Option<u64>,
    pub identifier: String,
    pub failure_handled: bool,
    pub approval: bool,
}

#[derive(Debug)]
pub(crate) struct WfTemplate {
    pub id: u64,
    pub spec: WorkflowJobTemplateSpec,
    pub org_id: u64,
    pub inventory_id: Option<u64>,
    pub extra_vars: OMap,
    pub created: DateTime<Utc>,
    pub nodes: Vec<WfTemplateNode>,
    pub last_job: Option<u64>,
    pub launches: u64,
}

#[derive(Debug)]
pub(crate) enum Template {
    Job(Box<JobTemplate>),
    Workflow(Box<WfTemplate>),
}

impl Template {
    pub(crate) fn id(&self) -> u64 {
        match self {
            Template::Job(t) => t.id,
            Template::Workflow(t) => t.id,
        }
    }
    pub(crate) fn name(&self) -> &str {
        match self {
            Template::Job(t) => &t.spec.name,
            Template::Workflow(t) => &t.spec.name,
        }
    }
    pub(crate) fn org_id(&self) -> u64 {
        match self {
            Template::Job(t) => t.org_id,
            Template::Workflow(t) => t.org_id,
        }
    }
    pub(crate) fn last_job(&self) -> Option<u64> {
        match self {
            Template::Job(t) => t.last_job,
            Template::Workflow(t) => t.last_job,
        }
    }
    pub(crate) fn visible_to(&self) -> Option<&Vec<String>> {
        match self {
            Template::Job(t) => t.spec.visible_to.as_ref(),
            Template::Workflow(t) => t.spec.visible_to.as_ref(),
        }
    }
    pub(crate) fn executable_by(&self) -> Option<&Vec<String>> {
        match self {
            Template::Job(t) => t.spec.executable_by.as_ref(),
            Template::Workflow(t) => t.spec.executable_by.as_ref(),
        }
    }
    pub(crate) fn type_str(&self) -> &'static str {
        match self {
            Template::Job(_) => "job_template",
            Template::Workflow(_) => "workflow_job_template",
        }
    }
    pub(crate) fn description(&self) -> &str {
        match self {
            Template::Job(t) => &t.spec.description,
            Template::Workflow(t) => &t.spec.description,
        }
    }
    pub(crate) fn created(&self) -> DateTime<Utc> {
        match self {
            Template::Job(t) => t.created,
            Template::Workflow(t) => t.created,
        }
    }
}

/// Fields shared by jobs and workflow jobs.
#[derive(Debug, Clone)]
pub(crate) struct Common {
    pub id: u64,
    pub name: String,
    pub description: String,
    pub created: DateTime<Utc>,
    pub launch_type: &'static str,
    /// The launch's `extra_vars` as AAP stores them (text; parsed only where needed).
    pub extra_vars: String,
    pub launched_by: Option<(u64, String)>,
    pub org_id: Option<u64>,
    pub template: Option<u64>,
    pub cancel_at: Option<DateTime<Utc>>,
    pub parent_workflow: Option<u64>,
    pub inventory: Option<u64>,
    pub limit: String,
    pub job_tags: String,
    pub skip_tags: String,
    pub scm_branch: String,
    pub allow_simultaneous: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub c: Common,
    pub project: u64,
    pub playbook: String,
    pub job_type: String,
    pub verbosity: u8,
    pub forks: u32,
    pub timeout: u32,
    pub diff_mode: bool,
    pub job_slice_number: u32,
    pub job_slice_count: u32,
    pub blocked_by: Option<u64>,
    pub release: Option<DateTime<Utc>>,
    pub script: Arc<JobScript>,
    pub work_unit_id: String,
    /// What the template's playbook read from the job's real variables (`JobTemplateSpec::reads`).
    pub reads: Vec<(String, Result<serde_json::Value, String>)>,
}

#[derive(Debug, Clone)]
pub(crate) struct WfNode {
    pub id: u64,
    pub ujt: Option<u64>,
    pub identifier: String,
    pub failure_handled: bool,
    pub approval: bool,
    pub job: Option<u64>,
}

#[derive(Debug, Clone)]
pub(crate) struct WorkflowJob {
    pub c: Common,
    /// The workflow's `extra_vars`, parsed (handed to every node's job).
    pub extra_vars_map: OMap,
    pub wfjt: Option<u64>,
    pub job_template: Option<u64>,
    pub is_sliced: bool,
    pub parallel: bool,
    pub nodes: Vec<WfNode>,
    pub pending: Duration,
    pub stuck_pending: bool,
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<(DateTime<Utc>, Status, &'static str)>,
}

#[derive(Debug, Clone)]
pub(crate) enum Unified {
    Job(Box<Job>),
    Workflow(Box<WorkflowJob>),
}

impl Unified {
    pub(crate) fn common(&self) -> &Common {
        match self {
            Unified::Job(j) => &j.c,
            Unified::Workflow(w) => &w.c,
        }
    }
}

/// What a workflow job looks like now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WfSnapshot {
    pub status: Status,
    pub started: Option<DateTime<Utc>>,
    pub finished: Option<DateTime<Utc>>,
    pub explanation: &'static str,
}

/// Parameters of a new job.
#[derive(Debug)]
pub(crate) struct NewJob {
    pub template: u64,
    pub extra_vars: OMap,
    pub launched_by: Option<(u64, String)>,
    pub launch_type: &'static str,
    pub inventory: Option<u64>,
    pub limit: String,
    pub job_tags: String,
    pub skip_tags: String,
    pub scm_branch: String,
    pub job_type: String,
    pub verbosity: u8,
    pub forks: u32,
    pub timeout: u32,
    pub diff_mode: bool,
    pub job_slice_count: u32,
    /// Password variables of a launching workflow's survey, shown as `$encrypted$` in this
    /// job's `extra_vars` too (besides its own template's).
    pub survey_passwords: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub settings: Settings,
    pub started_at: DateTime<Utc>,
    pub orgs: Vec<Org>,
    pub users: Vec<User>,
    pub tokens: HashMap<String, Token>,
    pub next_token_id: u64,
    pub inventories: Vec<Inventory>,
    pub templates: std::collections::BTreeMap<u64, Template>,
    pub jobs: Vec<Option<Unified>>,
    /// How much of `jobs` is known to be in creation order (for `created__gt` lists).
    pub created_order: CreatedOrder,
    pub next_node_id: u64,
    pub default_script: Arc<JobScript>,
    pub wake: BinaryHeap<Reverse<(DateTime<Utc>, u64)>>,
    pub stalled: BTreeSet<u64>,
    pub rng: fastrand::Rng,
    /// The websocket's due status checks (see `announce`).
    pub announcer: super::announce::Announcer,
}

/// Whether the jobs, in id order, were created in time order — true unless the fake's clock
/// was set back between two creations. Checked incrementally as jobs are appended.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CreatedOrder {
    checked: usize,
    last: Option<DateTime<Utc>>,
    broken: bool,
}

fn add(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t + chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX / 4)
}

impl State {
    pub(crate) fn org(&self, id: u64) -> Option<&Org> {
        self.orgs.iter().find(|o| o.id == id)
    }
    pub(crate) fn user(&self, id: u64) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }
    pub(crate) fn inventory(&self, id: u64) -> Option<&Inventory> {
        self.inventories.iter().find(|i| i.id == id)
    }
    /// The index of `jobs` from which on every job was created after `t` (at or after it with
    /// `inclusive`): a `created__gt` list then reads only those, as AWX's database index on
    /// `created` does. 0 (everything) when the jobs are not in creation order.
    pub(crate) fn first_created_after(&mut self, t: DateTime<Utc>, inclusive: bool) -> usize {
        let order = &mut self.created_order;
        if order.checked > self.jobs.len() {
            // The jobs were replaced (a restore): check again from the start.
            *order = CreatedOrder::default();
        }
        for u in self.jobs[order.checked..].iter().flatten() {
            let created = u.common().created;
            if order.last.is_some_and(|last| created < last) {
                order.broken = true;
            }
            order.last = Some(created);
        }
        order.checked = self.jobs.len();
        if order.broken {
            return 0;
        }
        let after = |c: DateTime<Utc>| if inclusive { c >= t } else { c > t };
        let mut start = self.jobs.len();
        while start > 0 {
            match &self.jobs[start - 1] {
                Some(u) if !after(u.common().created) => break,
                _ => start -= 1,
            }
        }
        start
    }

    pub(crate) fn unified(&self, id: u64) -> Option<&Unified> {
        let idx = usize::try_from(id).ok()?.checked_sub(1)?;
        self.jobs.get(idx)?.as_ref()
    }
    fn unified_mut(&mut self, id: u64) -> Option<&mut Unified> {
        let idx = usize::try_from(id).ok()?.checked_sub(1)?;
        self.jobs.get_mut(idx)?.as_mut()
    }
    pub(crate) fn job(&self, id: u64) -> Option<&Job> {
        match self.unified(id)? {
            Unified::Job(j) => Some(j),
            Unified::Workflow(_) => None,
        }
    }
    pub(crate) fn workflow(&self, id: u64) -> Option<&WorkflowJob> {
        match self.unified(id)? {
            Unified::Workflow(w) => Some(w),
            Unified::Job(_) => None,
        }
    }
    fn next_job_id(&self) -> u64 {
        self.jobs.len() as u64 + 1
    }

    pub(crate) fn uuid4(&mut self) -> String {
        uuid4(&mut self.rng)
    }

    // ---- job timeline -------------------------------------------------------------------

    /// When job `id` may leave `pending` (walks a non-simultaneous chain; memoizes past facts).
    pub(crate) fn release_of(&mut self, id: u64, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut chain = Vec::new();
        let mut cur = id;
        loop {
            let job = self.job(cur)?;
            if job.release.is_some() {
                break;
            }
            match job.blocked_by {
                Some(p) if self.job(p).is_some() => {
                    chain.push(cur);
                    cur = p;
                }
                _ => {
                    let created = job.c.created;
                    if let Some(Unified::Job(j)) = self.unified_mut(cur) {
                        j.release = Some(created);
                    }
                    break;
                }
            }
        }
        let mut pred_release = self.job(cur)?.release;
        let mut pred = cur;
        for &jid in chain.iter().rev() {
            let pred_end = match pred_release {
                Some(r) => {
                    self.job_snapshot_with_release(pred, Some(r), now)?
                        .terminal_at
                }
                None => None,
            };
            let job = self.job(jid)?;
            let release = pred_end.map(|e| e.max(job.c.created));
            if let (Some(e), Some(r)) = (pred_end, release)
                && e <= now
                && let Some(Unified::Job(j)) = self.unified_mut(jid)
            {
                j.release = Some(r);
            }
            pred_release = release;
            pred = jid;
        }
        pred_release
    }

    pub(crate) fn job_snapshot_with_release(
        &self,
        id: u64,
        release: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Option<Snapshot> {
        let job = self.job(id)?;
        let delay = job
            .script
            .cancel_delay
            .unwrap_or(self.settings.cancel_delay);
        let cancel = job.c.cancel_at.map(|k| (k, delay));
        Some(snapshot(&job.script, job.c.created, release, cancel, now))
    }

    /// The job's status at `now`.
    pub(crate) fn job_snapshot(&mut self, id: u64, now: DateTime<Utc>) -> Option<Snapshot> {
        let release = self.release_of(id, now);
        self.job_snapshot_with_release(id, release, now)
    }

    /// The workflow job's status at `now` (call [`State::sync`] first).
    pub(crate) fn workflow_snapshot(&self, id: u64, now: DateTime<Utc>) -> Option<WfSnapshot> {
        let wf = self.workflow(id)?;
        Some(match wf.ended {
            Some((t, status, explanation)) if t <= now => WfSnapshot {
                status,
                started: wf.started,
                finished: Some(t),
                explanation,
            },
            _ => WfSnapshot {
                status: if wf.started.is_some() {
                    Status::Running
                } else {
                    Status::Pending
                },
                started: wf.started,
                finished: None,
                explanation: "",
            },
        })
    }

    /// Status of any unified job (call [`State::sync`] first).
    pub(crate) fn status_of(&mut self, id: u64, now: DateTime<Utc>) -> Option<Status> {
        match self.unified(id)? {
            Unified::Job(_) => self.job_snapshot(id, now).map(|s| s.status),
            Unified::Workflow(_) => self.workflow_snapshot(id, now).map(|s| s.status),
        }
    }

    // ---- workflows ----------------------------------------------------------------------

    /// Brings every workflow job up to `now` (spawns children, ends workflows).
    ///
    /// Only due wake-ups are processed, so a request costs O(1) when nothing is due. Workflows
    /// whose next step is unknowable from the clock alone ("stalled": a child that never ends
    /// by itself) are re-examined only on cancel or purge, the only events that can unblock them.
    pub(crate) fn sync(&mut self, now: DateTime<Utc>) {
        while let Some(Reverse((t, id))) = self.wake.peek().copied() {
            if t > now {
                break;
            }
            self.wake.pop();
            self.advance_workflow(id, now);
        }
    }

    fn set_wf(&mut self, id: u64, f: impl FnOnce(&mut WorkflowJob)) {
        if let Some(Unified::Workflow(w)) = self.unified_mut(id) {
            f(w);
        }
    }

    fn advance_workflow(&mut self, id: u64, now: DateTime<Utc>) {
        let delay = self.settings.cancel_delay;
        for _ in 0..10_000 {
            let Some(wf) = self.workflow(id) else { return };
            if wf.ended.is_some() {
                return;
            }
            let cancel_at = wf.c.cancel_at;
            let (parallel, node_count) = (wf.parallel, wf.nodes.len());
            let Some(started) = wf.started else {
                let start = (!wf.stuck_pending).then(|| add(wf.c.created, wf.pending));
                match (start, cancel_at) {
                    (s, Some(k)) if s.is_none_or(|s| s >= k) => {
                        self.set_wf(id, |w| w.ended = Some((k, Status::Canceled, "")));
                        return;
                    }
                    (None, _) => return,
                    (Some(s), _) if s > now => {
                        self.wake.push(Reverse((s, id)));
                        return;
                    }
                    (Some(s), _) => {
                        self.set_wf(id, |w| w.started = Some(s));
                        let count = if parallel {
                            node_count
                        } else {
                            1.min(node_count)
                        };
                        for idx in 0..count {
                            self.spawn_node(id, idx, s);
                        }
                        if node_count == 0 {
                            self.set_wf(id, |w| w.ended = Some((s, Status::Successful, "")));
                            return;
                        }
                        continue;
                    }
                }
            };
            let cancel_end = cancel_at.map(|k| add(k, delay).max(started));
            let wf = self.workflow(id).cloned();
            let Some(wf) = wf else { return };
            // Progress of the nodes.
            let mut next_event: Option<DateTime<Utc>> = None;
            let mut unknown = false;
            let mut natural_end: Option<(DateTime<Utc>, Status, &'static str)> = None;
            if wf.parallel {
                let mut latest = started;
                let mut any_failed = false;
                let mut all_done = true;
                for node in &wf.nodes {
                    let Some(jid) = node.job else { continue };
                    match self.job_snapshot(jid, now) {
                        Some(s) => match s.terminal_at {
                            Some(e) if e <= now => {
                                latest = latest.max(e);
                                any_failed |= s.status.failed();
                            }
                            Some(e) => {
                                all_done = false;
                                next_event = Some(next_event.map_or(e, |n| n.min(e)));
                            }
                            None => {
                                all_done = false;
                                unknown = true;
                            }
                        },
                        None => any_failed = true,
                    }
                }
                if all_done {
                    natural_end = Some(if any_failed {
                        (latest, Status::Failed, WORKFLOW_FAILED_EXPLANATION)
                    } else {
                        (latest, Status::Successful, "")
                    });
                }
            } else {
                let current = wf.nodes.iter().rposition(|n| n.job.is_some() || n.approval);
                match current {
                    None => natural_end = Some((started, Status::Successful, "")),
                    Some(idx) if wf.nodes[idx].approval => {
                        // Approval pending forever: stays running.
                    }
                    Some(idx) => {
                        let jid = wf.nodes[idx].job.unwrap_or_default();
                        let snap = self.job_snapshot(jid, now);
                        let (end, ok) = match snap {
                            Some(s) => (s.terminal_at, !s.status.failed()),
                            None => (Some(now), false),
                        };
                        match end {
                            None => unknown = true,
                            Some(e) if e > now => next_event = Some(e),
                            Some(e) => {
                                let handled = ok || wf.nodes[idx].failure_handled;
                                let before_cancel = cancel_at.is_none_or(|k| e < k);
                                if !handled {
                                    natural_end =
                                        Some((e, Status::Failed, WORKFLOW_FAILED_EXPLANATION));
                                } else if idx + 1 < wf.nodes.len() {
                                    if before_cancel {
                                        self.spawn_node(id, idx + 1, e);
                                        continue;
                                    }
                                } else {
                                    natural_end = Some((e, Status::Successful, ""));
                                }
                            }
                        }
                    }
                }
            }
            if let Some((e, st, ex)) = natural_end
                && cancel_end.is_none_or(|ce| e < ce)
            {
                self.set_wf(id, |w| w.ended = Some((e, st, ex)));
                return;
            }
            if let Some(ce) = cancel_end {
                if ce <= now {
                    self.set_wf(id, |w| w.ended = Some((ce, Status::Canceled, "")));
                    return;
                }
                self.wake.push(Reverse((ce, id)));
            }
            if let Some(e) = next_event {
                self.wake.push(Reverse((e, id)));
            }
            if unknown {
                self.stalled.insert(id);
            }
            return;
        }
    }

    fn spawn_node(&mut self, wf_id: u64, idx: usize, at: DateTime<Utc>) {
        let Some(wf) = self.workflow(wf_id) else {
            return;
        };
        let Some(node) = wf.nodes.get(idx) else {
            return;
        };
        if node.approval || node.job.is_some() {
            return;
        }
        let Some(jt_id) = node.ujt else { return };
        let Some(Template::Job(jt)) = self.templates.get(&jt_id) else {
            return;
        };
        let mut vars = jt.extra_vars.clone();
        for (k, v) in &wf.extra_vars_map {
            omap_insert(&mut vars, k.clone(), v.clone());
        }
        let slice = if wf.is_sliced {
            (idx as u32 + 1, wf.nodes.len() as u32)
        } else {
            (0, 1)
        };
        let new = NewJob {
            template: jt_id,
            extra_vars: vars,
            launched_by: wf.c.launched_by.clone(),
            launch_type: "workflow",
            inventory: wf.c.inventory.or(jt.inventory_id),
            limit: if wf.c.limit.is_empty() {
                jt.spec.limit.clone()
            } else {
                wf.c.limit.clone()
            },
            job_tags: jt.spec.job_tags.clone(),
            skip_tags: jt.spec.skip_tags.clone(),
            scm_branch: jt.spec.scm_branch.clone(),
            job_type: jt.spec.job_type.clone(),
            verbosity: jt.spec.verbosity,
            forks: jt.spec.forks,
            timeout: jt.spec.timeout,
            diff_mode: jt.spec.diff_mode,
            job_slice_count: slice.1,
            survey_passwords: Vec::new(),
        };
        let sliced = wf.is_sliced;
        let new = NewJob {
            survey_passwords: match wf.wfjt.and_then(|t| self.templates.get(&t)) {
                Some(Template::Workflow(wt)) if wt.spec.survey_enabled => {
                    super::survey::password_variables(wt.spec.survey_spec.as_ref())
                }
                _ => Vec::new(),
            },
            ..new
        };
        let job_id = self.create_job(new, at, Some(wf_id), slice.0, sliced);
        self.set_wf(wf_id, |w| {
            if let Some(n) = w.nodes.get_mut(idx) {
                n.job = job_id;
            }
        });
    }

    // ---- creation -----------------------------------------------------------------------

    fn pick_script(&mut self, template: u64, vars: &OMap) -> Arc<JobScript> {
        let default = self.default_script.clone();
        let Some(Template::Job(jt)) = self.templates.get_mut(&template) else {
            return default;
        };
        for rule in &mut jt.rules {
            if rule.times == Some(0) {
                continue;
            }
            let matches = match &rule.when_extra_var {
                None => true,
                Some((k, v)) => extra_var_at(vars, k).is_some_and(|have| have == *v),
            };
            if matches {
                if let Some(t) = rule.times.as_mut() {
                    *t -= 1;
                }
                return Arc::new(rule.script.clone());
            }
        }
        jt.script.clone().unwrap_or(default)
    }

    /// Creates a job of job template `new.template`; returns its id.
    pub(crate) fn create_job(
        &mut self,
        new: NewJob,
        now: DateTime<Utc>,
        parent_workflow: Option<u64>,
        slice_number: u32,
        simultaneous: bool,
    ) -> Option<u64> {
        let id = self.next_job_id();
        let script = self.pick_script(new.template, &new.extra_vars);
        let work_unit_id: String = (0..8).map(|_| self.rng.alphanumeric()).collect();
        let Some(Template::Job(jt)) = self.templates.get(&new.template) else {
            return None;
        };
        let (script, reads) = if jt.spec.reads.is_empty() {
            (script, Vec::new())
        } else {
            let vars = OValue::Object(new.extra_vars.clone()).to_json();
            (
                super::playbook::run(script, &jt.spec.reads, &vars),
                super::playbook::reads(&vars, &jt.spec.reads),
            )
        };
        // The record shows survey password answers as `$encrypted$`; the playbook saw them.
        let own_survey = jt
            .spec
            .survey_spec
            .as_ref()
            .filter(|_| jt.spec.survey_enabled);
        let mut passwords = super::survey::password_variables(own_survey);
        passwords.extend(new.survey_passwords.iter().cloned());
        let allow = jt.spec.allow_simultaneous || simultaneous;
        let blocked_by = if allow { None } else { jt.last_job };
        let c = Common {
            id,
            name: jt.spec.name.clone(),
            description: jt.spec.description.clone(),
            created: now,
            launch_type: new.launch_type,
            // Only the text is kept: 30,000 parsed maps would dominate a fleet run's memory.
            extra_vars: OValue::Object(super::survey::masked(&new.extra_vars, &passwords))
                .py_dumps(),
            launched_by: new.launched_by,
            org_id: Some(jt.org_id),
            template: Some(jt.id),
            cancel_at: None,
            parent_workflow,
            inventory: new.inventory,
            limit: new.limit,
            job_tags: new.job_tags,
            skip_tags: new.skip_tags,
            scm_branch: new.scm_branch,
            allow_simultaneous: jt.spec.allow_simultaneous,
        };
        let job = Job {
            c,
            project: jt.spec.project,
            playbook: jt.spec.playbook.clone(),
            job_type: new.job_type,
            verbosity: new.verbosity,
            forks: new.forks,
            timeout: new.timeout,
            diff_mode: new.diff_mode,
            job_slice_number: slice_number,
            job_slice_count: new.job_slice_count.max(1),
            blocked_by,
            release: if blocked_by.is_none() {
                Some(now)
            } else {
                None
            },
            script,
            work_unit_id,
            reads,
        };
        self.jobs.push(Some(Unified::Job(Box::new(job))));
        self.announcer.watch(id, now);
        if let Some(Template::Job(jt)) = self.templates.get_mut(&new.template) {
            jt.last_job = Some(id);
        }
        Some(id)
    }

    /// Creates a workflow job (of a workflow job template, or the slice workflow of a job template).
    pub(crate) fn create_workflow(&mut self, mut wf: WorkflowJob, now: DateTime<Utc>) -> u64 {
        let id = self.next_job_id();
        wf.c.id = id;
        wf.c.created = now;
        for node in &mut wf.nodes {
            node.id = self.next_node_id;
            self.next_node_id += 1;
        }
        let template = wf.wfjt.or(wf.job_template);
        self.jobs.push(Some(Unified::Workflow(Box::new(wf))));
        self.announcer.watch(id, now);
        match template.and_then(|t| self.templates.get_mut(&t)) {
            Some(Template::Workflow(t)) => t.last_job = Some(id),
            Some(Template::Job(t)) => t.last_job = Some(id),
            None => {}
        }
        self.advance_workflow(id, now);
        id
    }

    /// Requests cancellation; `Ok(())` = 202, `Err(())` = 405 (already finished).
    pub(crate) fn cancel(&mut self, id: u64, now: DateTime<Utc>) -> Result<(), ()> {
        let status = self.status_of(id, now).ok_or(())?;
        if !status.is_active() {
            return Err(());
        }
        let already = self
            .unified(id)
            .and_then(|u| u.common().cancel_at)
            .is_some();
        if already {
            return Ok(());
        }
        let children: Vec<u64> = match self.unified_mut(id) {
            Some(Unified::Job(j)) => {
                j.c.cancel_at = Some(now);
                Vec::new()
            }
            Some(Unified::Workflow(w)) => {
                w.c.cancel_at = Some(now);
                w.nodes.iter().filter_map(|n| n.job).collect()
            }
            None => return Err(()),
        };
        self.announcer.watch(id, now);
        for child in children {
            if self.status_of(child, now).is_some_and(Status::is_active)
                && let Some(Unified::Job(j)) = self.unified_mut(child)
            {
                j.c.cancel_at.get_or_insert(now);
                self.announcer.watch(child, now);
            }
        }
        // Wake workflows that depend on this job, and every stalled one.
        let parent = self.unified(id).and_then(|u| u.common().parent_workflow);
        for wf in [Some(id), parent].into_iter().flatten() {
            if self.workflow(wf).is_some() {
                self.advance_workflow(wf, now);
                self.wake.push(Reverse((now, wf)));
            }
        }
        // A canceled job of a non-simultaneous template moves every job queued behind it, so
        // workflows waiting on such jobs must be re-examined now rather than at their old wake time.
        let queued_behind =
            matches!(self.unified(id), Some(Unified::Job(j)) if !j.c.allow_simultaneous);
        if queued_behind {
            let ids: BTreeSet<u64> = self.wake.drain().map(|Reverse((_, wf))| wf).collect();
            for wf in ids {
                self.advance_workflow(wf, now);
            }
        }
        self.recheck_stalled(now);
        Ok(())
    }

    /// Deletes a unified job as an AAP-side purge would.
    pub(crate) fn purge(&mut self, id: u64, now: DateTime<Utc>) -> bool {
        let idx = match usize::try_from(id).ok().and_then(|i| i.checked_sub(1)) {
            Some(i) if i < self.jobs.len() => i,
            _ => return false,
        };
        if self.jobs[idx].take().is_none() {
            return false;
        }
        for slot in self.jobs.iter_mut().flatten() {
            if let Unified::Job(j) = slot
                && j.blocked_by == Some(id)
                && j.release.is_none()
            {
                j.release = Some(j.c.created.max(now));
            }
        }
        let wfs: Vec<u64> = self
            .jobs
            .iter()
            .flatten()
            .filter_map(|u| match u {
                Unified::Workflow(w) if w.nodes.iter().any(|n| n.job == Some(id)) => Some(w.c.id),
                _ => None,
            })
            .collect();
        for wf in wfs {
            self.stalled.insert(wf);
        }
        self.recheck_stalled(now);
        true
    }

    fn recheck_stalled(&mut self, now: DateTime<Utc>) {
        let stalled: Vec<u64> = std::mem::take(&mut self.stalled).into_iter().collect();
        for id in stalled {
            self.advance_workflow(id, now);
        }
    }

    /// A template's `status` field: its last job's status (`error` shows as `failed`).
    pub(crate) fn template_status(&mut self, template: u64, now: DateTime<Utc>) -> &'static str {
        let Some(last) = self.templates.get(&template).and_then(Template::last_job) else {
            return "never updated";
        };
        match self.status_of(last, now) {
            None => "never updated",
            Some(Status::Error) => "failed",
            Some(s) => s.as_str(),
        }
    }

    /// Parses template `extra_vars` text leniently (invalid text counts as empty).
    pub(crate) fn parse_template_vars(text: &str) -> OMap {
        parse_extra_vars_str(text).unwrap_or_default()
    }

    /// Finds a user by Basic credentials.
    pub(crate) fn check_password(&self, username: &str, password: &str) -> Option<&User> {
        self.users
            .iter()
            .find(|u| u.username == username && u.password == password)
    }

    /// Whether `user` can see template `t`.
    pub(crate) fn can_see(user: &User, t: &Template) -> bool {
        user.is_superuser || t.visible_to().is_none_or(|v| v.contains(&user.username))
    }

    /// Whether `user` can launch template `t`.
    pub(crate) fn can_start(user: &User, t: &Template) -> bool {
        user.is_superuser
            || (Self::can_see(user, t)
                && t.executable_by().is_none_or(|v| v.contains(&user.username)))
    }

    /// Whether `user` can see a unified job (through its template).
    pub(crate) fn can_see_job(&self, user: &User, u: &Unified) -> bool {
        match u.common().template.and_then(|t| self.templates.get(&t)) {
            Some(t) => Self::can_see(user, t),
            None => true,
        }
    }
}

/// A random (seeded) UUID4 string.
pub(crate) fn uuid4(rng: &mut fastrand::Rng) -> String {
    let mut b = [0u8; 16];
    for x in &mut b {
        *x = rng.u8(..);
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The extra variable `path` of a launch as a playbook reads it: the top-level key `path`, or
/// else a dotted path into nested objects (`osac_job_vars.resource.spec.cidr`).
fn extra_var_at(vars: &OMap, path: &str) -> Option<serde_json::Value> {
    if let Some(v) = omap_get(vars, path) {
        return Some(v.to_json());
    }
    let mut segments = path.split('.');
    let mut value = omap_get(vars, segments.next()?)?.to_json();
    for segment in segments {
        value = value.get(segment)?.clone();
    }
    Some(value)
}
