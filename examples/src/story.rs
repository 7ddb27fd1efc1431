//! The demo's story: a handful of resources through every lifecycle path, with explicit
//! expectations.
//!
//! Resources cycle through four roles (index mod 4):
//!
//! | role | kind | what happens | expected AAP jobs |
//! |---|---|---|---|
//! | `net` | `VirtualNetwork` | provision A → spec change to B → revert to A → delete | 3 provision (A, B, A), 1 deprovision |
//! | `vol` | `Volume` | first job fails → backoff → retry succeeds | 2 provision (failed, successful) |
//! | `cluster` | `Cluster` | deleted while its (long) provision job runs → cancel → deprovision | 1 provision (canceled), 1 deprovision |
//! | `vm` | `ComputeInstance` | a racing reconcile on a stale copy right after the launch | 1 provision; the stale reconcile launches nothing |

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::{Clock, compute_desired_config_version};
use provkit_lifecycle::{DeprovisionStep, ProvisionStep};
use serde_json::{Value, json};

use crate::audit::{Audit, PurgeLog, attempt_of};
use crate::backend::KindTemplates;
use crate::instrumented::Op;
use crate::report::Table;
use crate::sim::{EngineResult, Observer, ReconcileReport, Sim};

/// The role of resource `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// A-B-A then delete.
    Net,
    /// Fail once, back off, succeed.
    Vol,
    /// Deleted while provisioning.
    Cluster,
    /// Racing stale reconcile.
    Vm,
}

impl Role {
    /// The role of resource `index`.
    pub fn of(index: usize) -> Self {
        match index % 4 {
            0 => Role::Net,
            1 => Role::Vol,
            2 => Role::Cluster,
            _ => Role::Vm,
        }
    }

    /// The resource kind.
    pub fn kind(self) -> &'static str {
        match self {
            Role::Net => "VirtualNetwork",
            Role::Vol => "Volume",
            Role::Cluster => "Cluster",
            Role::Vm => "ComputeInstance",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Role::Net => "net",
            Role::Vol => "vol",
            Role::Cluster => "cluster",
            Role::Vm => "vm",
        }
    }
}

/// The resource name of `index` (`net-a`, `vol-b`, … for the first four; numbered after).
pub fn name_of(index: usize, total: usize) -> String {
    let role = Role::of(index);
    if total <= 4 {
        format!(
            "{}-{}",
            role.prefix(),
            (b'a' + u8::try_from(index).unwrap_or(0)) as char
        )
    } else {
        format!("{}-{index:05}", role.prefix())
    }
}

/// The templates of the story for `total` resources (the volume template fails its first launch
/// per volume; all first launches happen within the first minute, before any retry).
pub fn templates(total: usize) -> Vec<KindTemplates> {
    let volumes = (0..total).filter(|i| Role::of(*i) == Role::Vol).count();
    vec![
        KindTemplates::new(
            Role::Net.kind(),
            Duration::from_secs(45),
            Duration::from_secs(20),
        ),
        KindTemplates::new(
            Role::Vol.kind(),
            Duration::from_secs(30),
            Duration::from_secs(20),
        )
        .failing_first(u32::try_from(volumes).unwrap_or(u32::MAX)),
        KindTemplates::new(
            Role::Cluster.kind(),
            Duration::from_secs(600),
            Duration::from_secs(40),
        ),
        KindTemplates::new(
            Role::Vm.kind(),
            Duration::from_secs(40),
            Duration::from_secs(20),
        ),
    ]
}

fn spec_a(index: usize) -> Value {
    json!({"cidr": format!("10.{}.0.0/24", index % 250), "mtu": 1500, "labels": {"tier": "gold"}})
}

fn spec_b(index: usize) -> Value {
    json!({"cidr": format!("10.{}.0.0/23", index % 250), "mtu": 9000, "labels": {"tier": "gold"}})
}

/// The short config version of a spec (first 8 hex digits).
fn version(spec: &Value) -> String {
    compute_desired_config_version(spec)
        .unwrap_or_default()
        .chars()
        .take(8)
        .collect()
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    First,
    Changed,
    Reverted,
    Deleting,
    Finished,
}

#[derive(Debug, Default)]
struct Seen {
    phase: Phase,
    backoff_seen: bool,
    stale_forced: bool,
    stale_requeues: u32,
    stale_launches: u32,
    cancels: u32,
    released: bool,
    done: bool,
}

/// One timeline line.
#[derive(Clone, Debug)]
struct Line {
    at: DateTime<Utc>,
    seq: u64,
    cells: [String; 6],
}

/// The observer that drives the story and records the timeline.
#[derive(Debug)]
pub struct Story {
    total: usize,
    seen: Mutex<Vec<Seen>>,
    lines: Mutex<Vec<Line>>,
    seq: std::sync::atomic::AtomicU64,
    keep_lines: bool,
    progress: Option<indicatif::ProgressBar>,
    me: Weak<Story>,
}

impl Story {
    /// A story over `total` resources; `keep_lines` records the timeline; `progress` ticks once
    /// per finished resource.
    pub fn new(
        total: usize,
        keep_lines: bool,
        progress: Option<indicatif::ProgressBar>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            total,
            seen: Mutex::new((0..total).map(|_| Seen::default()).collect()),
            lines: Mutex::new(Vec::new()),
            seq: std::sync::atomic::AtomicU64::new(0),
            keep_lines,
            progress,
        })
    }

    fn line(&self, at: DateTime<Utc>, cells: [String; 6]) {
        if self.keep_lines {
            let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Line { at, seq, cells });
        }
    }

    fn user(&self, sim: &Sim, index: usize, what: &str) {
        self.line(
            sim.clock.now(),
            [
                name_of(index, self.total),
                format!("» {what}"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        );
    }

    fn finish(&self, seen: &mut Seen) {
        if !seen.done {
            seen.done = true;
            if let Some(p) = &self.progress {
                p.inc(1);
            }
        }
    }

    /// Creates the resources (staggered by 5 s of virtual time) and schedules the user actions that
    /// do not depend on progress (the cluster deletions).
    pub fn start(self: &Arc<Self>, sim: &Arc<Sim>) {
        for index in 0..self.total {
            let at = sim
                .clock
                .after(Duration::from_secs(5 * (index as u64 % 12)));
            let (story, s) = (self.clone(), sim.clone());
            sim.queue.at(
                at,
                Box::new(move || {
                    let role = Role::of(index);
                    let spec = spec_a(index);
                    story.user(
                        &s,
                        index,
                        &format!("create {} (spec v{})", role.kind(), version(&spec)),
                    );
                    s.create(index, role.kind(), &name_of(index, story.total), spec);
                    if role == Role::Cluster {
                        let (story2, s2) = (story.clone(), s.clone());
                        s.queue.at(
                            s.clock.after(Duration::from_secs(120)),
                            Box::new(move || {
                                story2.user(&s2, index, "delete (provision job still running)");
                                s2.delete(index);
                            }),
                        );
                    }
                }),
            );
        }
    }

    fn later(self: &Arc<Self>, sim: &Arc<Sim>, index: usize, after: Duration, what: &'static str) {
        let (story, s) = (self.clone(), sim.clone());
        sim.queue.at(
            sim.clock.after(after),
            Box::new(move || match what {
                "B" => {
                    let spec = spec_b(index);
                    story.user(&s, index, &format!("spec change → v{}", version(&spec)));
                    s.change_spec(index, spec);
                }
                "A" => {
                    let spec = spec_a(index);
                    story.user(
                        &s,
                        index,
                        &format!("revert spec → v{} (A-B-A)", version(&spec)),
                    );
                    s.change_spec(index, spec);
                }
                _ => {
                    story.user(&s, index, "delete");
                    s.delete(index);
                }
            }),
        );
    }

    /// Prints the timeline (sorted by virtual time).
    pub fn timeline(&self, sim: &Sim) -> String {
        let mut lines = self
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        lines.sort_by_key(|l| (l.at, l.seq));
        let mut t = Table::new(&["time", "resource", "decision", "AAP calls", ">job", "state"]);
        for l in lines {
            let [res, decision, calls, job, state, phase] = l.cells;
            let state = match (state.is_empty(), phase.is_empty()) {
                (true, _) => phase,
                (false, true) => state,
                (false, false) => format!("{state} · {phase}"),
            };
            t.row(vec![
                sim.clock.label(l.at),
                res,
                decision,
                calls,
                job,
                state,
            ]);
        }
        t.render()
    }

    /// Checks every expectation of the story; returns `(passed, failed)` descriptions.
    pub fn check(&self, sim: &Sim, audit: &Audit) -> (Vec<String>, Vec<String>) {
        let jobs = sim.aap.jobs();
        let mut by_resource: BTreeMap<usize, Vec<&provkit_testing::fake_aap::JobInfo>> =
            BTreeMap::new();
        for job in &jobs {
            if let Some(a) = attempt_of(&job.extra_vars) {
                by_resource.entry(a.index).or_default().push(job);
            }
        }
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let mut failed = Vec::new();
        let mut passed = Vec::new();
        let mut per_role: BTreeMap<Role, usize> = BTreeMap::new();
        for index in 0..self.total {
            let role = Role::of(index);
            let name = name_of(index, self.total);
            let mine = by_resource.get(&index).cloned().unwrap_or_default();
            let statuses = |create: bool| -> Vec<&str> {
                mine.iter()
                    .filter(|j| {
                        j.name
                            .contains(if create { "-create-" } else { "-delete-" })
                    })
                    .map(|j| j.status)
                    .collect()
            };
            let (prov, deprov) = (statuses(true), statuses(false));
            let s = &seen[index];
            let obj = sim.store.fresh(index);
            let mut problems = Vec::new();
            match role {
                Role::Net => {
                    if prov != ["successful"; 3] {
                        problems.push(format!(
                            "provision jobs {prov:?}, expected 3 successful (A, B, A)"
                        ));
                    }
                    if deprov != ["successful"] || !s.released || obj.is_some() {
                        problems.push(format!(
                            "deprovision {deprov:?}, released {}, expected deleted",
                            s.released
                        ));
                    }
                    let versions: Vec<String> = mine
                        .iter()
                        .filter(|j| j.name.contains("-create-"))
                        .filter_map(|j| serde_json::from_str::<Value>(&j.extra_vars).ok())
                        .map(|v| version(&v["ansible_eda"]["event"]["payload"]["spec"]))
                        .collect();
                    if versions.len() == 3
                        && (versions[0] != versions[2] || versions[0] == versions[1])
                    {
                        problems.push(format!("config versions {versions:?}, expected A, B, A"));
                    }
                }
                Role::Vol => {
                    if prov != ["failed", "successful"] {
                        problems.push(format!(
                            "provision jobs {prov:?}, expected [failed, successful]"
                        ));
                    }
                    if !s.backoff_seen {
                        problems.push("the retry was not a Backoff decision".into());
                    }
                    let created: Vec<DateTime<Utc>> = mine.iter().map(|j| j.created).collect();
                    let backoff = sim.engine.policy().backoff.base;
                    if let [first, second] = created[..]
                        && (second - first).to_std().unwrap_or_default() < backoff
                    {
                        problems.push(format!(
                            "retry came {}s after the failed job, before the backoff",
                            (second - first).num_seconds()
                        ));
                    }
                    if !obj.as_deref().is_some_and(crate::sim::is_converged) {
                        problems.push("not converged".into());
                    }
                }
                Role::Cluster => {
                    if prov != ["canceled"] {
                        problems.push(format!("provision jobs {prov:?}, expected [canceled]"));
                    }
                    if s.cancels == 0 {
                        problems.push("no cancel request".into());
                    }
                    if deprov != ["successful"] || !s.released || obj.is_some() {
                        problems.push(format!(
                            "deprovision {deprov:?}, released {}, expected deleted",
                            s.released
                        ));
                    }
                }
                Role::Vm => {
                    if prov != ["successful"] {
                        problems.push(format!("provision jobs {prov:?}, expected exactly one"));
                    }
                    if s.stale_requeues == 0 {
                        problems.push("no reconcile stopped by the stale-cache check".into());
                    }
                    if s.stale_launches > 0 {
                        problems.push(format!(
                            "{} launch(es) from a stale reconcile",
                            s.stale_launches
                        ));
                    }
                    if !obj.as_deref().is_some_and(crate::sim::is_converged) {
                        problems.push("not converged".into());
                    }
                }
            }
            if problems.is_empty() {
                *per_role.entry(role).or_default() += 1;
            } else if failed.len() < 20 {
                failed.push(format!("{name}: {}", problems.join("; ")));
            }
        }
        let describe = |role: Role| match role {
            Role::Net => {
                "provision → success; spec change → re-provision; A-B-A revert → re-provision; delete → deprovision"
            }
            Role::Vol => "provision → failure → backoff (≥ base) → retry → success",
            Role::Cluster => {
                "deletion while the provision job runs → cancel → deprovision → finalizer removed"
            }
            Role::Vm => "racing reconcile on a stale copy → stale-cache check → no launch",
        };
        for role in [Role::Net, Role::Vol, Role::Cluster, Role::Vm] {
            let of_role = (0..self.total).filter(|i| Role::of(*i) == role).count();
            if of_role > 0 {
                let ok = per_role.get(&role).copied().unwrap_or(0);
                let line = format!("{} ({ok}/{of_role}): {}", role.kind(), describe(role));
                if ok == of_role {
                    passed.push(line);
                } else {
                    failed.push(line);
                }
            }
        }
        let global = [
            ("duplicate launches", audit.duplicates),
            ("lost job ids", audit.lost),
            (
                "early finalizer releases",
                usize::try_from(crate::metrics::RunMetrics::get(&sim.metrics.early_releases))
                    .unwrap_or(usize::MAX),
            ),
            ("unkeyed jobs", audit.unkeyed),
        ];
        for (what, n) in global {
            if n == 0 {
                passed.push(format!("{what}: 0"));
            } else {
                failed.push(format!("{what}: {n}"));
            }
        }
        (passed, failed)
    }
}

fn phase_label(report: &ReconcileReport) -> String {
    match &report.after {
        None if report.released => "deleted".into(),
        None => "gone".into(),
        Some(o) if o.deleting.is_some() => "deleting".into(),
        Some(o) if crate::sim::is_converged(o) => "ready".into(),
        Some(_) => "provisioning".into(),
    }
}

impl Observer for Story {
    fn reconciled(&self, sim: &Arc<Sim>, report: &ReconcileReport) {
        let index = report.index;
        let (decision, job, state) = report.describe();
        let calls: Vec<String> = report.calls.iter().map(ToString::to_string).collect();
        let decision = if report.stale {
            format!("{decision} (stale copy)")
        } else {
            decision
        };
        if !matches!(report.result, EngineResult::Gone) {
            self.line(
                report.at,
                [
                    name_of(index, self.total),
                    decision,
                    calls.join(", "),
                    job,
                    state,
                    phase_label(report),
                ],
            );
        }
        let this = self.me.upgrade();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(s) = seen.get_mut(index) else { return };
        s.cancels +=
            u32::try_from(report.calls.iter().filter(|c| c.op == Op::Cancel).count()).unwrap_or(0);
        let launched = report.calls.iter().any(|c| c.op == Op::Launch);
        if report.stale && launched {
            s.stale_launches += 1;
        }
        if report.released {
            s.released = true;
        }
        match &report.result {
            EngineResult::Provision(Ok(o)) => match &o.step {
                ProvisionStep::BackingOff { .. } => s.backoff_seen = true,
                ProvisionStep::Launched { .. }
                    if o.action == provkit_lifecycle::Action::Backoff =>
                {
                    s.backoff_seen = true;
                }
                ProvisionStep::StaleCache => s.stale_requeues += 1,
                ProvisionStep::Launched { .. }
                    if Role::of(index) == Role::Vm && !s.stale_forced =>
                {
                    // The racing reconcile: an event arrives right away, and the informer cache has not
                    // seen our status write yet.
                    s.stale_forced = true;
                    if let Some(copy) = report.copy.clone() {
                        sim.store.force_stale_read(index, copy);
                        sim.queue.schedule(index, sim.clock.now());
                    }
                }
                _ => {}
            },
            EngineResult::Deprovision(Ok(o))
                if matches!(o.step, DeprovisionStep::Finished { .. }) => {}
            _ => {}
        }
        let converged = report.converged();
        let role = Role::of(index);
        let Some(this) = this else { return };
        match (role, s.phase) {
            (Role::Net, Phase::First) if converged => {
                s.phase = Phase::Changed;
                this.later(sim, index, Duration::from_secs(30), "B");
            }
            (Role::Net, Phase::Changed) if converged && spec_is(report, &spec_b(index)) => {
                s.phase = Phase::Reverted;
                this.later(sim, index, Duration::from_secs(30), "A");
            }
            (Role::Net, Phase::Reverted) if converged && spec_is(report, &spec_a(index)) => {
                s.phase = Phase::Deleting;
                this.later(sim, index, Duration::from_secs(30), "delete");
            }
            (Role::Net | Role::Cluster, _) if report.released => {
                s.phase = Phase::Finished;
                self.finish(s);
            }
            (Role::Vol | Role::Vm, _) if converged => {
                s.phase = Phase::Finished;
                self.finish(s);
            }
            _ => {}
        }
    }
}

fn spec_is(report: &ReconcileReport, spec: &Value) -> bool {
    report.after.as_ref().is_some_and(|o| *o.spec == *spec)
}

/// Runs the whole story (used by the demo and the tests).
pub async fn run_story(
    sim: &Arc<Sim>,
    story: &Arc<Story>,
    purged: &PurgeLog,
) -> (Audit, crate::queue::DriveEnd) {
    story.start(sim);
    let end = sim
        .run(
            story.clone(),
            sim.clock.after(Duration::from_secs(6 * 3600)),
        )
        .await;
    let audit = Audit::run(&sim.aap, &sim.store, purged, story.total);
    (audit, end)
}
