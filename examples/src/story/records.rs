//! What the story records: the story's resources, a summary of one copy of an object, and the
//! observer every controller reports each reconcile to.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use provkit_aap::provider::TemplateAction;
use provkit_core::{Clock, JobState, JobType, SystemClock};
use provkit_kube::{ProvisionedResource, ReconcileError};
use provkit_testing::fake_aap::JobInfo;
use provkit_testing::fake_apiserver::FakeApiServer;
use tokio::time::Instant;

use crate::stack::{ReconcileObserver, Stack};

/// The story's four resources: `(name, kind)`.
pub const RESOURCES: [(&str, &str); 4] = [
    ("net-a", "VirtualNetwork"),
    ("vol-b", "Volume"),
    ("cluster-c", "Cluster"),
    ("vm-d", "ComputeInstance"),
];

/// What one copy of an object shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Snap {
    pub(super) exists: bool,
    pub(super) finalizer: bool,
    pub(super) deleting: bool,
    pub(super) desired: String,
    pub(super) intent: Option<String>,
    pub(super) jobs: Vec<(String, JobType, JobState, String)>,
}

impl Snap {
    pub(super) fn of<K: ProvisionedResource>(obj: &K) -> Self {
        let status = obj.provisioning_status();
        Snap {
            exists: true,
            finalizer: !obj.finalizers().is_empty(),
            deleting: obj.meta().deletion_timestamp.is_some(),
            desired: status
                .map(|s| s.desired_config_version.clone())
                .unwrap_or_default(),
            intent: status
                .and_then(|s| s.launch_intent.as_ref())
                .map(|i| i.idempotency_key.clone()),
            jobs: status
                .map(|s| {
                    s.provisioning_jobs
                        .iter()
                        .map(|j| {
                            (
                                j.job_id.clone(),
                                j.job_type.clone(),
                                j.state.clone(),
                                j.config_version.clone(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    pub(super) fn has_job(&self, id: &str) -> bool {
        self.jobs.iter().any(|j| j.0 == id)
    }

    /// `ready`, `provisioning`, `failed`, `deleting`, `deleted`.
    pub(super) fn phase(&self) -> String {
        if !self.exists {
            return "deleted".into();
        }
        if self.deleting {
            return "deleting".into();
        }
        let latest = self.jobs.iter().rev().find(|j| j.1 == JobType::Provision);
        match latest {
            Some((_, _, JobState::Succeeded, v)) if *v == self.desired => "ready".into(),
            Some((_, _, JobState::Failed, _)) => "failed".into(),
            _ => "provisioning".into(),
        }
    }
}

/// The API server's copy of `K` `name`, read without a request.
pub(super) fn server_copy<K: ProvisionedResource>(api: &FakeApiServer, name: &str) -> Snap {
    api.objects::<K>()
        .iter()
        .find(|o| o.name_any() == name)
        .map(Snap::of)
        .unwrap_or_default()
}

/// One finished reconcile.
#[derive(Clone, Debug)]
pub(super) struct Reconciled {
    pub(super) name: String,
    pub(super) start: DateTime<Utc>,
    pub(super) end: DateTime<Utc>,
    pub(super) at: Duration,
    pub(super) copy: Snap,
    pub(super) before: Snap,
    pub(super) after: Snap,
    pub(super) api_calls: Vec<String>,
    /// The requeue delay (`None`: await change), or the error.
    pub(super) result: Result<Option<Duration>, String>,
}

#[derive(Debug)]
pub(super) struct Open {
    pub(super) start: DateTime<Utc>,
    pub(super) at: Duration,
    pub(super) copy: Snap,
    pub(super) before: Snap,
    pub(super) requests: usize,
}

/// A user action or a story event on the timeline.
#[derive(Clone, Debug)]
pub(super) struct Note {
    pub(super) at: Duration,
    pub(super) name: String,
    pub(super) text: String,
}

/// The observer every controller reports to: records each reconcile, and the story's notes.
#[derive(Debug)]
pub(super) struct Recorder {
    pub(super) t0: Mutex<Instant>,
    pub(super) api: FakeApiServer,
    pub(super) replica: Mutex<String>,
    pub(super) open: Mutex<HashMap<String, Open>>,
    pub(super) done: Mutex<Vec<Reconciled>>,
    pub(super) notes: Mutex<Vec<Note>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Recorder {
    pub(super) fn note(&self, name: &str, text: impl Into<String>) {
        lock(&self.notes).push(Note {
            at: lock(&self.t0).elapsed(),
            name: name.to_owned(),
            text: text.into(),
        });
    }
}

impl<K: ProvisionedResource> ReconcileObserver<K> for Recorder {
    fn started(&self, obj: &K) {
        let name = obj.name_any();
        let open = Open {
            start: SystemClock.now(),
            at: lock(&self.t0).elapsed(),
            copy: Snap::of(obj),
            before: server_copy::<K>(&self.api, &name),
            requests: self.api.requests().len(),
        };
        lock(&self.open).insert(name, open);
    }

    fn finished(&self, obj: &K, result: &Result<Action, ReconcileError>) {
        let name = obj.name_any();
        let Some(open) = lock(&self.open).remove(&name) else {
            return;
        };
        let replica = lock(&self.replica).clone();
        let plural = K::plural(&());
        let needle = format!("/{plural}/{name}");
        let api_calls = self
            .api
            .requests()
            .iter()
            .skip(open.requests)
            .filter(|r| r.client == replica && r.path.contains(&needle))
            .map(|r| {
                let verb = r.verb.map_or("?", |v| v.as_str());
                let status = if r.path.contains(&format!("{needle}/status")) {
                    "/status"
                } else {
                    ""
                };
                if r.status >= 400 {
                    format!("{verb}{status} ({})", r.status)
                } else {
                    format!("{verb}{status}")
                }
            })
            .collect();
        lock(&self.done).push(Reconciled {
            name: name.clone(),
            start: open.start,
            end: SystemClock.now(),
            at: open.at,
            copy: open.copy,
            before: open.before,
            after: server_copy::<K>(&self.api, &name),
            api_calls,
            result: match result {
                Ok(a) => Ok(requeue_of(a)),
                Err(e) => Err(provkit_kube::ErrorChain(e).to_string()),
            },
        });
    }
}

/// AAP's jobs of `kind`'s template for `action`.
pub(super) fn jobs_of(stack: &Stack, kind: &str, action: TemplateAction) -> Vec<JobInfo> {
    let template = stack.template_id(action, kind);
    stack
        .aap()
        .jobs()
        .into_iter()
        .filter(|j| j.template.is_some() && j.template == template)
        .collect()
}

/// The delay of a requeue, `None` for an await-change. kube's `Action` keeps it private; its
/// `Debug` form (`Action { requeue_after: Some(853.6ms) }`) shows it in `Duration`'s units.
fn requeue_of(action: &Action) -> Option<Duration> {
    let text = format!("{action:?}");
    let (_, rest) = text.split_once("Some(")?;
    let (value, _) = rest.split_once(')')?;
    let split = value.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => number,
        "ms" => number / 1e3,
        "µs" => number / 1e6,
        "ns" => number / 1e9,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}
