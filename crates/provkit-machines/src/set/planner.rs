//! RollingUpdate and OnDelete planners (§A.6.4, §A.6.5): pure functions from buckets to a plan.

use provkit_core::k8s::MachineInfo;

use super::buckets::IndexBucket;
use super::plan::{Action, Plan, PlanEvent, WAIT_REQUEUE};

/// Parameters of the RollingUpdate planner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollingUpdateConfig {
    /// How many machines beyond `replicas` may exist during a rollout (upstream: 1, fixed).
    pub max_surge: i32,
}

impl Default for RollingUpdateConfig {
    fn default() -> Self {
        Self { max_surge: 1 }
    }
}

/// The classification of one bucket.
struct Classified<'a> {
    outdated: Vec<&'a MachineInfo>,
    pending: Vec<&'a MachineInfo>,
    updated_live: Vec<&'a MachineInfo>,
    ready: Vec<&'a MachineInfo>,
    deleting: Vec<&'a MachineInfo>,
}

fn classify(infos: &[MachineInfo]) -> Classified<'_> {
    let mut c = Classified {
        outdated: Vec::new(),
        pending: Vec::new(),
        updated_live: Vec::new(),
        ready: Vec::new(),
        deleting: Vec::new(),
    };
    for i in infos {
        let d = i.is_deleting();
        if i.needs_update() || d {
            c.outdated.push(i);
        }
        if !i.ready && !i.needs_update() && !d {
            c.pending.push(i);
        }
        if i.ready && !i.needs_update() && !d {
            c.updated_live.push(i);
        }
        if i.ready {
            c.ready.push(i);
        }
        if d {
            c.deleting.push(i);
        }
    }
    c
}

/// Wait checks shared by both strategies; returns whether a requeue is wanted.
fn wait_checks(index: i32, c: &Classified<'_>, events: &mut Vec<PlanEvent>) -> bool {
    let mut requeue = false;
    if let (true, Some(p), true) = (c.ready.is_empty(), c.pending.first(), c.deleting.is_empty()) {
        events.push(PlanEvent::WaitingForReady {
            index,
            name: p.name().to_owned(),
        });
        requeue = true;
    }
    if let (Some(o), Some(p)) = (c.outdated.first(), c.pending.first()) {
        events.push(PlanEvent::WaitingForReplacement {
            index,
            name: o.name().to_owned(),
            replacement: p.name().to_owned(),
        });
        requeue = true;
    }
    if let (Some(d), false) = (c.deleting.first(), c.updated_live.is_empty()) {
        events.push(PlanEvent::WaitingForRemoved {
            index,
            name: d.name().to_owned(),
        });
    }
    requeue
}

/// The buckets in index order (stable for equal indexes).
fn by_index(buckets: &[IndexBucket]) -> Vec<&IndexBucket> {
    let mut sorted: Vec<&IndexBucket> = buckets.iter().collect();
    sorted.sort_by_key(|b| b.index);
    sorted
}

fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Plans one RollingUpdate pass.
///
/// Per bucket, in ascending index order: a delete step (skipped for buckets with fewer than two
/// machines: a lone machine is never deleted), wait checks (requeue after [`WAIT_REQUEUE`] while
/// waiting for readiness or a pending replacement), and a create step limited by the surge
/// budget: `surge = machines − replicas` is computed once before any action, and each planned
/// create adds one; a create is planned only while `surge < max_surge`.
///
/// Deviations from upstream, by decision:
/// - the delete step treats only **live** (not deleting) up-to-date machines as replacements,
///   so a bucket `[outdated, up-to-date-but-deleting]` keeps its outdated machine (upstream
///   deletes it, leaving the index without a live machine) and plans another replacement;
/// - every planned create counts against the surge budget even if the executor's re-check later
///   skips it (upstream counts only actual creations), so a pass never exceeds the budget.
///
/// ```
/// use provkit_core::k8s::{MachineInfo, ObjectRef};
/// use provkit_machines::set::{plan_rolling_update, Action, IndexBucket, RollingUpdateConfig};
/// let ready = |i| MachineInfo::new(ObjectRef::default(), i).with_ready(true);
/// let buckets = vec![IndexBucket::new(0, vec![ready(0)]), IndexBucket::new(1, vec![])];
/// let plan = plan_rolling_update(&buckets, 2, RollingUpdateConfig::default());
/// assert_eq!(plan.actions, vec![Action::CreateIfNoFreshReplacement { index: 1 }]);
/// ```
#[must_use]
pub fn plan_rolling_update(
    buckets: &[IndexBucket],
    replicas: i32,
    config: RollingUpdateConfig,
) -> Plan {
    let mut plan = Plan::default();
    let total = len_i32(buckets.iter().map(|b| b.infos.len()).sum());
    let mut surge = total.saturating_sub(replicas);
    let mut requeue = false;
    for bucket in by_index(buckets) {
        let index = bucket.index;
        let c = classify(&bucket.infos);

        // 1. Delete step.
        if bucket.infos.len() >= 2 {
            let mut candidate: Option<&MachineInfo> = None;
            if let (Some(o), false) = (c.outdated.first(), c.updated_live.is_empty()) {
                candidate = Some(o);
            }
            if let Some(broken) = c.outdated.iter().find(|i| !i.ready) {
                candidate = Some(broken);
            }
            if c.updated_live.len() >= 2 {
                candidate = oldest(&c.updated_live);
            }
            if let Some(m) = candidate.filter(|m| !m.is_deleting()) {
                plan.events.push(PlanEvent::RemovingOldMachine {
                    index,
                    name: m.name().to_owned(),
                });
                plan.actions.push(Action::Delete {
                    index,
                    machine: Box::new(m.machine.clone()),
                });
            }
        }

        // 2. Wait checks.
        requeue |= wait_checks(index, &c, &mut plan.events);

        // 3. Create step.
        let needs_create = bucket.infos.is_empty()
            || (!c.outdated.is_empty() && c.updated_live.is_empty() && c.pending.is_empty());
        if needs_create {
            let name = c.outdated.first().map(|i| i.name().to_owned());
            if surge >= config.max_surge {
                plan.events
                    .push(PlanEvent::NoCapacityForExpansion { index, name });
            } else {
                plan.events
                    .push(PlanEvent::ReplacementPlanned { index, name });
                plan.actions
                    .push(Action::CreateIfNoFreshReplacement { index });
                surge = surge.saturating_add(1);
            }
        }
    }
    finish(plan, requeue)
}

fn oldest<'a>(infos: &[&'a MachineInfo]) -> Option<&'a MachineInfo> {
    // Stable: among equal creation times (or none), the first in order wins.
    let mut best: Option<&'a MachineInfo> = None;
    for i in infos {
        best = match best {
            Some(b) if !older(i, b) => Some(b),
            _ => Some(i),
        };
    }
    best
}

fn older(a: &MachineInfo, b: &MachineInfo) -> bool {
    match (a.machine.created_at(), b.machine.created_at()) {
        (Some(x), Some(y)) => x < y,
        (Some(_), None) => true,
        _ => false,
    }
}

fn finish(mut plan: Plan, requeue: bool) -> Plan {
    if requeue {
        plan.requeue_after = Some(WAIT_REQUEUE);
    }
    if plan.events.is_empty() && plan.actions.is_empty() {
        plan.events.push(PlanEvent::NoUpdatesRequired);
    }
    plan
}

/// Plans one OnDelete pass. Never deletes. Per bucket, ascending: skip buckets with nothing
/// outdated and nothing pending; run the wait checks; plan a create for an empty bucket or a
/// bucket holding exactly one machine that is outdated and deleting (the user deleted it);
/// a lone outdated machine that is not deleting only yields
/// [`PlanEvent::MachineRequiresUpdate`]. Several creates per pass are allowed.
///
/// ```
/// use provkit_core::k8s::{MachineInfo, ObjectRef, UpdateState};
/// use provkit_machines::set::{plan_on_delete, IndexBucket, PlanEvent};
/// let outdated = MachineInfo::new(ObjectRef::default(), 0)
///     .with_ready(true)
///     .with_update(UpdateState::needs_update(["zone"]));
/// let plan = plan_on_delete(&[IndexBucket::new(0, vec![outdated])]);
/// assert!(plan.actions.is_empty());
/// assert!(matches!(plan.events[0], PlanEvent::MachineRequiresUpdate { index: 0, .. }));
/// ```
#[must_use]
pub fn plan_on_delete(buckets: &[IndexBucket]) -> Plan {
    let mut plan = Plan::default();
    let mut requeue = false;
    for bucket in by_index(buckets) {
        let index = bucket.index;
        let c = classify(&bucket.infos);
        if c.outdated.is_empty() && !bucket.infos.is_empty() && c.pending.is_empty() {
            continue;
        }
        requeue |= wait_checks(index, &c, &mut plan.events);
        match bucket.infos.as_slice() {
            [] => {
                plan.events
                    .push(PlanEvent::ReplacementPlanned { index, name: None });
                plan.actions
                    .push(Action::CreateIfNoFreshReplacement { index });
            }
            [only] if only.is_deleting() => {
                plan.events.push(PlanEvent::ReplacementPlanned {
                    index,
                    name: Some(only.name().to_owned()),
                });
                plan.actions
                    .push(Action::CreateIfNoFreshReplacement { index });
            }
            [only] if only.needs_update() => {
                plan.events.push(PlanEvent::MachineRequiresUpdate {
                    index,
                    name: only.name().to_owned(),
                    diff: only.diff().to_vec(),
                });
            }
            _ => {}
        }
    }
    finish(plan, requeue)
}
