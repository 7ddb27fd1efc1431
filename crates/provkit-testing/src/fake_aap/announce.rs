//! What the fake's websocket announces, and when: every unified job's status changes as AWX
//! sends them to `jobs-status_changed` subscribers (aap-observed.md §13.4).
//!
//! As observed: `pending` when the job is created, `running` when it starts (**no `waiting`
//! message**), then the final status — `successful`/`failed` with `finished`, `error`
//! **without** `finished`, `canceled` **twice** (first without, then with `finished`). A node
//! job of a workflow carries `workflow_job_id` and `workflow_node_id`. Jobs are never advanced by
//! this module: it only reads their timeline (computed from the clock) at the moments it changes,
//! kept in a queue of due checks, so thousands of jobs cost a heap entry each.
//! `jobs-summary` messages are not sent (the client ignores them).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::script::{Hold, Status};
use super::state::{State, Unified};

/// How often a job whose next change cannot be read from its timeline (queued behind another
/// job, a workflow waiting for its nodes) is looked at again.
const RECHECK: Duration = Duration::from_millis(500);

/// What was last announced of a job that is not final yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Announced {
    Pending,
    Running,
    /// The final status was announced: nothing more.
    Done,
}

/// The due checks and what was announced so far.
#[derive(Debug, Default)]
pub(crate) struct Announcer {
    due: BinaryHeap<Reverse<(DateTime<Utc>, u64)>>,
    announced: HashMap<u64, Announced>,
}

impl Announcer {
    /// Looks at job `id` at `at` (a creation, a cancel).
    pub(crate) fn watch(&mut self, id: u64, at: DateTime<Utc>) {
        self.due.push(Reverse((at, id)));
    }

    /// When the next check is due.
    pub(crate) fn next_due(&self) -> Option<DateTime<Utc>> {
        self.due.peek().map(|Reverse((t, _))| *t)
    }
}

fn add(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t + chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX / 4)
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A job's status now, when it ended (`finished`), and when to look again (`None`: only a
/// cancel or a purge can change it).
type Timeline = (Status, Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// One job's identity in its messages.
struct Subject {
    id: u64,
    kind: &'static str,
    template: Option<u64>,
    workflow: Option<(u64, u64)>,
}

impl Subject {
    fn message(&self, status: Status, finished: Option<DateTime<Utc>>) -> Value {
        let mut m = json!({
            "unified_job_id": self.id,
            "status": status.as_str(),
            "type": self.kind,
            "group_name": "jobs",
            "unified_job_template_id": self.template,
        });
        if status == Status::Running {
            m["instance_group_name"] = if self.kind == "job" {
                json!("default")
            } else {
                Value::Null
            };
        }
        if let Some((wf, node)) = self.workflow {
            m["workflow_job_id"] = json!(wf);
            m["workflow_node_id"] = json!(node);
        }
        if let Some(t) = finished {
            m["finished"] = json!(stamp(t));
        }
        m
    }
}

impl State {
    /// The messages due by `now`, in order.
    pub(crate) fn announcements(&mut self, now: DateTime<Utc>) -> Vec<Value> {
        let mut out = Vec::new();
        if self.announcer.next_due().is_none_or(|t| t > now) {
            return out;
        }
        self.sync(now);
        while let Some(Reverse((t, id))) = self.announcer.due.peek().copied() {
            if t > now {
                break;
            }
            self.announcer.due.pop();
            self.announce(id, now, &mut out);
        }
        out
    }

    fn subject(&self, id: u64) -> Option<Subject> {
        let u = self.unified(id)?;
        let c = u.common();
        let workflow = c.parent_workflow.and_then(|wf| {
            let node = self
                .workflow(wf)?
                .nodes
                .iter()
                .find(|n| n.job == Some(id))?
                .id;
            Some((wf, node))
        });
        Some(match u {
            Unified::Job(_) => Subject {
                id,
                kind: "job",
                template: c.template,
                workflow,
            },
            Unified::Workflow(w) => Subject {
                id,
                kind: "workflow_job",
                template: w.wfjt.or(w.job_template),
                workflow,
            },
        })
    }

    /// Status now, when it ends (`finished`), and when to look again (`None`: only a cancel or
    /// a purge can change it).
    fn timeline(&mut self, id: u64, now: DateTime<Utc>) -> Option<Timeline> {
        match self.unified(id)? {
            Unified::Job(job) => {
                let hold = job.script.hold;
                let canceling = job.c.cancel_at.is_some();
                let release = self.release_of(id, now);
                let snap = self.job_snapshot(id, now)?;
                // The whole timeline as known now (no memoization at a future time).
                let far = add(now, Duration::from_secs(100 * 365 * 86_400));
                let whole = self.job_snapshot_with_release(id, release, far)?;
                let next = [whole.started, whole.terminal_at]
                    .into_iter()
                    .flatten()
                    .filter(|t| *t > now)
                    .min();
                let next = match next {
                    Some(t) => Some(t),
                    None if !snap.status.is_active() => None,
                    None if release.is_none() => Some(add(now, RECHECK)),
                    None if hold != Hold::None && !canceling => None,
                    None => Some(add(now, RECHECK)),
                };
                Some((snap.status, snap.finished, next))
            }
            Unified::Workflow(_) => {
                let snap = self.workflow_snapshot(id, now)?;
                let next = snap.status.is_active().then(|| add(now, RECHECK));
                Some((snap.status, snap.finished, next))
            }
        }
    }

    fn announce(&mut self, id: u64, now: DateTime<Utc>, out: &mut Vec<Value>) {
        let (Some(subject), Some((status, finished, next))) =
            (self.subject(id), self.timeline(id, now))
        else {
            self.announcer.announced.remove(&id);
            return;
        };
        let before = self.announcer.announced.get(&id).copied();
        if before == Some(Announced::Done) {
            return;
        }
        if before.is_none() {
            // Every job is announced `pending` at its creation.
            out.push(subject.message(Status::Pending, None));
        }
        let mut now_announced = before.unwrap_or(Announced::Pending);
        if status == Status::Running && now_announced != Announced::Running {
            out.push(subject.message(Status::Running, None));
            now_announced = Announced::Running;
        }
        if !status.is_active() {
            match status {
                Status::Error => out.push(subject.message(status, None)),
                Status::Canceled => {
                    out.push(subject.message(status, None));
                    out.push(subject.message(status, finished));
                }
                _ => out.push(subject.message(status, finished)),
            }
            now_announced = Announced::Done;
        } else if let Some(t) = next {
            self.announcer.watch(id, t);
        }
        self.announcer.announced.insert(id, now_announced);
    }
}
