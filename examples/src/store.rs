//! An in-memory "API server" with a lagging "informer cache", and conflict-safe status writes.
//!
//! Each object has two copies:
//! - the **API-server copy** (the truth): every write goes there, guarded by `resourceVersion`;
//! - the **cache copy** a reconcile reads, like a controller's informer cache. Spec changes and
//!   deletions reach it at once (they are the watch events that trigger reconciles), but after a
//!   reconcile that wrote the status, a configurable fraction of objects keep their *old* cache copy
//!   for one more reconcile: that reconcile reads a deliberately stale status (the informer-cache
//!   race the engine's stale-cache check exists for).
//!
//! Status writes follow provkit-kube's rule: a `resourceVersion` precondition, and on a conflict a
//! re-read and a merge of the job lists by `jobID` (see [`merge_jobs`]). Every job id ever written
//! is remembered, so the audit can find jobs AAP ran that no status ever recorded.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, SecondsFormat, Utc};
use provkit_core::{Clock, JobStatus, append_job};
use provkit_lifecycle::{ResourceMeta, ResourceView};
use serde_json::{Value, json};

use crate::clock::VirtualClock;

/// The API group/version of the simulated resources.
pub const API_VERSION: &str = "sim.provkit.io/v1";

/// One simulated custom resource.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Object {
    /// Index in the store (the work-queue key).
    pub index: usize,
    /// Kind, e.g. `VirtualNetwork` (decides the AAP templates).
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.creationTimestamp`.
    pub created: DateTime<Utc>,
    /// `metadata.generation` (bumped by spec changes).
    pub generation: u64,
    /// `metadata.resourceVersion` (bumped by every write).
    pub resource_version: u64,
    /// `metadata.deletionTimestamp`.
    pub deleting: Option<DateTime<Utc>>,
    /// Whether the controller's finalizer is present.
    pub finalizer: bool,
    /// `spec` (shared: status writes copy the object, not the spec).
    pub spec: Arc<Value>,
    /// `status.provisioningJobs`.
    pub jobs: Vec<JobStatus>,
}

impl Object {
    /// The object as the JSON document a provider receives.
    pub fn to_json(&self) -> Value {
        let mut meta = json!({
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "generation": self.generation,
            "resourceVersion": self.resource_version.to_string(),
            "creationTimestamp": self.created.to_rfc3339_opts(SecondsFormat::Secs, true),
        });
        if let Some(map) = meta.as_object_mut() {
            if self.finalizer {
                map.insert("finalizers".into(), json!(["sim.provkit.io/provisioning"]));
            }
            if let Some(t) = self.deleting {
                map.insert(
                    "deletionTimestamp".into(),
                    json!(t.to_rfc3339_opts(SecondsFormat::Secs, true)),
                );
            }
        }
        json!({
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "metadata": meta,
            "spec": &*self.spec,
            "status": {"provisioningJobs": self.jobs},
        })
    }

    /// The kube-free view the lifecycle engine and the provider take. Its JSON is rendered only
    /// when a provider asks for it (a launch), as a controller holding the informer's `Arc` would.
    pub fn view(self: &Arc<Self>) -> ResourceView {
        let object = self.clone();
        ResourceView::lazy(
            ResourceMeta {
                kind: self.kind.clone(),
                name: self.name.clone(),
                namespace: Some(self.namespace.clone()),
                uid: self.uid.clone(),
                ..Default::default()
            },
            move || Ok(object.to_json()),
        )
        .with_api_version(API_VERSION)
    }
}

/// A failed status write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// Somebody else wrote the object since `expected` was read.
    #[error(
        "conflict: object {name} is at resourceVersion {actual}, the write expected {expected}"
    )]
    Conflict {
        /// The object's name.
        name: String,
        /// The version the writer read.
        expected: u64,
        /// The server's version.
        actual: u64,
    },
    /// The object no longer exists.
    #[error("object {index} no longer exists")]
    Gone {
        /// The object's index.
        index: usize,
    },
    /// Still conflicting after the allowed attempts.
    #[error("status write of {name} still conflicted after {attempts} attempts")]
    Conflicts {
        /// The object's name.
        name: String,
        /// Attempts made.
        attempts: u32,
    },
}

#[derive(Debug, Default)]
struct Slot {
    api: Option<Arc<Object>>,
    cache: Option<Arc<Object>>,
    /// The next reconcile reads the (old) cache copy, then the cache catches up.
    lag_next_read: bool,
    /// Spec changes / deletions since the running reconcile started.
    events: u64,
}

/// What a reconcile read from the cache.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CachedRead {
    /// The copy (`None`: the object is gone).
    pub object: Option<Arc<Object>>,
    /// True when the copy is older than the API server's.
    pub stale: bool,
    /// The event counter at the start (for [`ApiServer::end_reconcile`]).
    events: u64,
}

/// Counters of the store.
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Status writes that succeeded.
    pub writes: AtomicU64,
    /// Status writes rejected with a conflict.
    pub conflicts: AtomicU64,
    /// Reconciles that read a stale cache copy.
    pub stale_reads: AtomicU64,
}

/// The in-memory API server.
#[derive(Debug)]
pub struct ApiServer {
    clock: VirtualClock,
    slots: Vec<Mutex<Slot>>,
    stale_fraction: f64,
    rng: Mutex<fastrand::Rng>,
    recorded: Mutex<HashSet<String>>,
    max_history: NonZeroUsize,
    /// Counters.
    pub stats: StoreStats,
}

impl ApiServer {
    /// A store for `capacity` objects; `stale_fraction` of the reconciles after a status write read
    /// the previous copy (seeded by `seed`).
    pub fn new(clock: VirtualClock, capacity: usize, stale_fraction: f64, seed: u64) -> Self {
        Self {
            clock,
            slots: (0..capacity).map(|_| Mutex::new(Slot::default())).collect(),
            stale_fraction: stale_fraction.clamp(0.0, 1.0),
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            recorded: Mutex::new(HashSet::new()),
            max_history: provkit_core::DEFAULT_MAX_JOB_HISTORY,
            stats: StoreStats::default(),
        }
    }

    fn slot(&self, index: usize) -> Option<MutexGuard<'_, Slot>> {
        self.slots
            .get(index)
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Creates object `index` (with the controller's finalizer already added).
    pub fn create(&self, index: usize, kind: &str, name: &str, spec: Value) -> Option<Arc<Object>> {
        let mut slot = self.slot(index)?;
        let obj = Arc::new(Object {
            index,
            kind: kind.to_owned(),
            name: name.to_owned(),
            namespace: "tenant-a".to_owned(),
            uid: format!("00000000-5eed-4000-8000-{index:012}"),
            created: self.clock.now(),
            generation: 1,
            resource_version: 1,
            deleting: None,
            finalizer: true,
            spec: Arc::new(spec),
            jobs: Vec::new(),
        });
        slot.api = Some(obj.clone());
        slot.cache = Some(obj.clone());
        slot.lag_next_read = false;
        slot.events += 1;
        Some(obj)
    }

    fn event(&self, index: usize, f: impl FnOnce(&mut Object)) -> Option<Arc<Object>> {
        let mut slot = self.slot(index)?;
        let mut obj = Object::clone(slot.api.as_ref()?);
        f(&mut obj);
        obj.resource_version += 1;
        let obj = Arc::new(obj);
        slot.api = Some(obj.clone());
        slot.cache = Some(obj.clone());
        slot.lag_next_read = false;
        slot.events += 1;
        Some(obj)
    }

    /// Replaces the spec (a watch event: the cache sees it at once).
    pub fn update_spec(&self, index: usize, spec: Value) -> Option<Arc<Object>> {
        self.event(index, |o| {
            o.spec = Arc::new(spec);
            o.generation += 1;
        })
    }

    /// Marks the object for deletion (it stays until the finalizer is removed).
    pub fn delete(&self, index: usize) -> Option<Arc<Object>> {
        let now = self.clock.now();
        self.event(index, |o| {
            if o.deleting.is_none() {
                o.deleting = Some(now);
            }
        })
    }

    /// Removes the finalizer; a deleted object then disappears. Returns whether it was present.
    pub fn remove_finalizer(&self, index: usize) -> bool {
        let Some(mut slot) = self.slot(index) else {
            return false;
        };
        let Some(api) = slot.api.clone() else {
            return false;
        };
        if !api.finalizer {
            return false;
        }
        if api.deleting.is_some() {
            slot.api = None;
            slot.cache = None;
        } else {
            let mut obj = Object::clone(&api);
            obj.finalizer = false;
            obj.resource_version += 1;
            let obj = Arc::new(obj);
            slot.api = Some(obj.clone());
            slot.cache = Some(obj);
        }
        slot.events += 1;
        true
    }

    /// Makes the next reconcile of `index` read `old` (an earlier copy) instead of the current one:
    /// the demo's racing reconcile on a stale cache.
    pub fn force_stale_read(&self, index: usize, old: Arc<Object>) {
        if let Some(mut slot) = self.slot(index)
            && slot.api.is_some()
        {
            slot.cache = Some(old);
            slot.lag_next_read = true;
        }
    }

    /// The start of a reconcile: the cache copy (possibly stale).
    pub fn begin_reconcile(&self, index: usize) -> CachedRead {
        let Some(mut slot) = self.slot(index) else {
            return CachedRead {
                object: None,
                stale: false,
                events: 0,
            };
        };
        let object = slot.cache.clone();
        let stale = match (&object, &slot.api) {
            (Some(c), Some(a)) => c.resource_version != a.resource_version,
            _ => false,
        };
        if std::mem::take(&mut slot.lag_next_read) || stale {
            slot.cache = slot.api.clone();
        }
        if stale {
            self.stats.stale_reads.fetch_add(1, Ordering::Relaxed);
        }
        CachedRead {
            object,
            stale,
            events: slot.events,
        }
    }

    /// The end of a reconcile: the cache catches up with the API server, except that after a
    /// status write a fraction of objects keep the old copy for one more reconcile.
    pub fn end_reconcile(&self, index: usize, read: &CachedRead, wrote: bool) {
        let lag = wrote && self.stale_fraction > 0.0 && {
            let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
            rng.f64() < self.stale_fraction
        };
        let Some(mut slot) = self.slot(index) else {
            return;
        };
        if lag && slot.events == read.events {
            slot.cache = read.object.clone();
            slot.lag_next_read = true;
        } else {
            slot.cache = slot.api.clone();
            slot.lag_next_read = false;
        }
    }

    /// An uncached read (what the stale-cache check uses).
    pub fn fresh(&self, index: usize) -> Option<Arc<Object>> {
        self.slot(index)?.api.clone()
    }

    /// Writes the job list if the object is still at `expected` (`resourceVersion` precondition).
    /// Returns the new version.
    ///
    /// # Errors
    /// [`WriteError::Conflict`] or [`WriteError::Gone`].
    pub fn write_jobs(
        &self,
        index: usize,
        expected: u64,
        jobs: Vec<JobStatus>,
    ) -> Result<Arc<Object>, WriteError> {
        let mut slot = self.slot(index).ok_or(WriteError::Gone { index })?;
        let api = slot.api.clone().ok_or(WriteError::Gone { index })?;
        if api.resource_version != expected {
            self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
            return Err(WriteError::Conflict {
                name: api.name.clone(),
                expected,
                actual: api.resource_version,
            });
        }
        let mut obj = Object::clone(&api);
        obj.jobs = jobs;
        obj.resource_version += 1;
        let obj = Arc::new(obj);
        slot.api = Some(obj.clone());
        drop(slot);
        {
            let mut recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
            for job in obj.jobs.iter().filter(|j| !j.job_id.is_empty()) {
                if !recorded.contains(&job.job_id) {
                    recorded.insert(job.job_id.clone());
                }
            }
        }
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        Ok(obj)
    }

    /// Whether any status write ever recorded `job_id`.
    pub fn was_recorded(&self, job_id: &str) -> bool {
        self.recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(job_id)
    }

    /// The history cap used by merges.
    pub fn max_history(&self) -> NonZeroUsize {
        self.max_history
    }
}

/// Merges our job list into the server's (provkit-kube's rule): start from the server's list; a job
/// with the same non-empty id is replaced by ours unless the server's copy is terminal and ours is
/// not; a job the server lacks is appended (history cap applies), except one older than every
/// server job while the server's list is full (the other writer trimmed it).
pub fn merge_jobs(server: &[JobStatus], ours: &[JobStatus], cap: NonZeroUsize) -> Vec<JobStatus> {
    let mut out = server.to_vec();
    let oldest = server.iter().filter_map(|j| j.timestamp).min();
    for job in ours {
        if job.job_id.is_empty() {
            continue;
        }
        match out.iter_mut().find(|j| j.job_id == job.job_id) {
            Some(existing) => {
                if !existing.state.is_terminal() || job.state.is_terminal() {
                    *existing = job.clone();
                }
            }
            None => {
                let trimmed_by_other = server.len() >= cap.get()
                    && oldest.is_some_and(|o| job.timestamp.is_none_or(|t| t < o));
                if !trimmed_by_other {
                    append_job(&mut out, job.clone(), cap);
                }
            }
        }
    }
    out
}

/// A reconcile's status writer: remembers the `resourceVersion` across the flush and the final
/// write, and merges with the server's list on a conflict (up to five attempts).
#[derive(Debug)]
pub struct StatusSession {
    store: Arc<ApiServer>,
    index: usize,
    known: Mutex<(u64, Vec<JobStatus>)>,
    wrote: std::sync::atomic::AtomicBool,
}

impl StatusSession {
    /// A session for a reconcile that read `copy`.
    pub fn new(store: Arc<ApiServer>, copy: &Object) -> Self {
        Self {
            store,
            index: copy.index,
            known: Mutex::new((copy.resource_version, copy.jobs.clone())),
            wrote: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether a write succeeded in this session.
    pub fn wrote(&self) -> bool {
        self.wrote.load(Ordering::Relaxed)
    }

    /// Writes `jobs` (merged with what the server holds).
    ///
    /// # Errors
    /// [`WriteError::Gone`], or [`WriteError::Conflicts`] after five conflicting attempts.
    pub fn write(&self, jobs: &[JobStatus]) -> Result<(), WriteError> {
        let cap = self.store.max_history();
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        for _ in 0..5 {
            let merged = merge_jobs(&known.1, jobs, cap);
            match self.store.write_jobs(self.index, known.0, merged) {
                Ok(obj) => {
                    *known = (obj.resource_version, obj.jobs.clone());
                    self.wrote.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                Err(WriteError::Conflict { .. }) => {
                    let fresh = self
                        .store
                        .fresh(self.index)
                        .ok_or(WriteError::Gone { index: self.index })?;
                    *known = (fresh.resource_version, fresh.jobs.clone());
                }
                Err(e) => return Err(e),
            }
        }
        let name = self
            .store
            .fresh(self.index)
            .map(|o| o.name.clone())
            .unwrap_or_default();
        Err(WriteError::Conflicts { name, attempts: 5 })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use provkit_core::{JobState, JobType};

    fn job(id: &str, state: JobState, secs: i64) -> JobStatus {
        JobStatus::new(
            id,
            JobType::Provision,
            state,
            DateTime::from_timestamp(secs, 0).unwrap(),
        )
    }

    #[test]
    fn merge_keeps_other_writers_jobs_and_never_unterminates() {
        let cap = NonZeroUsize::new(10).unwrap();
        let server = vec![
            job("1", JobState::Succeeded, 1),
            job("2", JobState::Running, 2),
        ];
        let ours = vec![
            job("1", JobState::Running, 1),
            job("3", JobState::Pending, 3),
        ];
        let merged = merge_jobs(&server, &ours, cap);
        let ids: Vec<_> = merged
            .iter()
            .map(|j| (j.job_id.as_str(), j.state.clone()))
            .collect();
        assert_eq!(
            ids,
            [
                ("1", JobState::Succeeded),
                ("2", JobState::Running),
                ("3", JobState::Pending)
            ]
        );
    }

    #[test]
    fn stale_copy_is_read_once_then_caught_up() {
        let clock = VirtualClock::new();
        let store = Arc::new(ApiServer::new(clock, 1, 1.0, 7));
        store.create(0, "VirtualNetwork", "net", json!({"cidr": "10.0.0.0/24"}));
        let read = store.begin_reconcile(0);
        let copy = read.object.clone().unwrap();
        let session = StatusSession::new(store.clone(), &copy);
        session.write(&[job("7", JobState::Pending, 5)]).unwrap();
        store.end_reconcile(0, &read, session.wrote());
        let stale = store.begin_reconcile(0);
        assert!(stale.stale);
        assert!(stale.object.unwrap().jobs.is_empty());
        let fresh = store.begin_reconcile(0);
        assert!(!fresh.stale);
        assert_eq!(fresh.object.unwrap().jobs.len(), 1);
        assert!(store.was_recorded("7"));
    }

    #[test]
    fn conflicting_write_merges() {
        let clock = VirtualClock::new();
        let store = Arc::new(ApiServer::new(clock, 1, 0.0, 7));
        let obj = store.create(0, "VirtualNetwork", "net", json!({})).unwrap();
        let a = StatusSession::new(store.clone(), &obj);
        let b = StatusSession::new(store.clone(), &obj);
        a.write(&[job("1", JobState::Pending, 1)]).unwrap();
        b.write(&[job("2", JobState::Pending, 2)]).unwrap();
        let ids: Vec<_> = store
            .fresh(0)
            .unwrap()
            .jobs
            .iter()
            .map(|j| j.job_id.clone())
            .collect();
        assert_eq!(ids, ["1", "2"]);
        assert_eq!(store.stats.conflicts.load(Ordering::Relaxed), 1);
    }
}
