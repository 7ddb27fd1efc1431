//! Conflict-safe status writes: the **status flush** right after a trigger and the
//! end-of-reconcile status write.
//!
//! # The choice: merge patch + `resourceVersion` precondition, merging job lists on conflict
//!
//! Every write is a JSON merge patch on the `status` subresource that carries
//! `metadata.resourceVersion`. The API server rejects it with **409 Conflict** if anybody else
//! wrote the object since we read it. On a conflict the session re-reads the object from the
//! API server (uncached), merges the server's job list with ours **by `jobID`**, and retries
//! with the new `resourceVersion`, up to [`StatusWriteConfig::max_attempts`] times.
//!
//! Why not server-side apply: SSA detects conflicts between field managers only, and two
//! replicas of one controller write under the same manager — an applier never conflicts with
//! its own fields, so a stale apply would land (a `resourceVersion` in the apply configuration
//! makes it a precondition write like this one, with nothing gained). And a JSON merge patch
//! replaces arrays wholesale, and so does SSA for an atomic list. With SSA and `force`, a stale copy of `provisioningJobs` would silently
//! replace a concurrent writer's jobs — the duplicate-launch incident (osac-provisioning.md §8,
//! MGMT-24300) this write exists to prevent. Making the list an SSA list-map keyed by `jobID`
//! would require a key on every entry (Go accepts `""`) and a CRD schema change for existing
//! Go-managed resources. The precondition makes the lost update impossible instead, and works
//! with the CRDs as they are.
//!
//! # Merge rule (on conflict, and before every write)
//! Start from the server's list (the other writer's jobs and order are kept). For each of our
//! jobs: a job with the same non-empty `jobID` is replaced by ours, unless the server's copy
//! is terminal and ours is not (a job never leaves a terminal state); a job the server does
//! not have is appended (respecting the history cap), except one older than every server job
//! while the server list is full — the other writer trimmed it.
//!
//! Fields outside the job list: the flush sends only `provisioningJobs` and
//! `desiredConfigVersion`, so a concurrent writer's other status fields survive. The full
//! write sends our whole status (our other fields win, as in Go's `RetryOnConflict` + copy).
//!
//! # Clearing what this controller removed
//! A merge patch only changes the keys it names, and a field the status type skips when
//! `None` (`skip_serializing_if`) is simply absent from the serialized status — so a field a
//! callback removed would stay on the server forever. The full write therefore diffs against
//! the **last-read status as the Rust type sees it** — the object the reconcile started
//! with, which carries what this controller wrote last time: every key that was there and is
//! no longer in ours is sent as `null`, recursively through nested objects. Keys the Rust
//! type does not know (a Go operator's fields during a cut-over, another controller's fields)
//! never appear in that baseline — deserializing dropped them — so they are never cleared;
//! nor are keys a concurrent writer added after that read (seen only in a conflict re-read):
//! we did not remove them.
//!
//! # Field manager
//! [`StatusWriteConfig::field_manager`] is sent as `?fieldManager=` on every patch, so the
//! writes show up under that manager in `managedFields` (the controller name, not `unknown`).
//!
//! # The launch intent (`status.launchIntent`)
//! [`StatusSession::write_intent`] persists the engine's write-ahead launch intent with the same
//! precondition; a conflict is **not** retried (the object changed since the launch was decided,
//! so the reconcile starts over). Neither the flush nor the full write ever sends another
//! writer's or an unresolved intent away: they carry `launchIntent: null` only once the engine
//! resolved that very intent ([`StatusSession::resolve_intent`]), so the write that records the
//! job is the one that clears it. An intent resolved without a job (proven absent, or its launch
//! certainly made none: refused, rate-limited) is cleared by the reconcile's status write, made
//! for that alone when nothing else changed: a process that inherits the object then has no
//! job list to read for it.

use std::collections::HashSet;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Mutex;

use kube::Api;
use kube::api::{Patch, PatchParams};
use provkit_core::{JobStatus, LaunchIntent, append_job};
use serde_json::{Value, json};
use tracing::{debug, warn};

use crate::resource::ProvisionedResource;

/// Settings of a [`StatusSession`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusWriteConfig {
    /// Patch attempts before giving up on repeated conflicts (default 5).
    pub max_attempts: NonZeroU32,
    /// The history cap applied when merging (default 10, Go `DefaultMaxJobHistory`).
    pub max_history: NonZeroUsize,
    /// The `fieldManager` of every status patch (default none: the API server then derives
    /// the manager from the client's User-Agent).
    pub field_manager: Option<String>,
}

impl Default for StatusWriteConfig {
    fn default() -> Self {
        Self {
            max_attempts: NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN),
            max_history: NonZeroUsize::new(10).unwrap_or(NonZeroUsize::MIN),
            field_manager: None,
        }
    }
}

impl StatusWriteConfig {
    /// With another history cap.
    #[must_use]
    pub fn with_max_history(mut self, max_history: NonZeroUsize) -> Self {
        self.max_history = max_history;
        self
    }

    /// With a field manager for every status patch (usually the controller name).
    #[must_use]
    pub fn with_field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = Some(field_manager.into());
        self
    }

    /// With another attempt limit.
    #[must_use]
    pub fn with_max_attempts(mut self, max_attempts: NonZeroU32) -> Self {
        self.max_attempts = max_attempts;
        self
    }
}

/// A status write that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusWriteError {
    /// The object has no `metadata.name`.
    #[error("object has no name")]
    UnnamedObject,
    /// The status could not be serialized.
    #[error("failed to serialize the status of {name}")]
    Serialize {
        /// Object name.
        name: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The patch request failed with something other than a conflict.
    #[error("status patch of {name} failed")]
    Patch {
        /// Object name.
        name: String,
        /// The kube error.
        #[source]
        source: kube::Error,
    },
    /// Re-reading the object after a conflict failed.
    #[error("re-reading {name} after a status conflict failed")]
    Reread {
        /// Object name.
        name: String,
        /// The kube error.
        #[source]
        source: kube::Error,
    },
    /// The object disappeared while we tried to write its status.
    #[error("{name} no longer exists")]
    Gone {
        /// Object name.
        name: String,
    },
    /// The launch-intent write hit a conflict: the object changed since it was read, so nothing
    /// is launched in this reconcile.
    #[error("launch-intent write of {name} conflicted; the object changed since it was read")]
    IntentConflict {
        /// Object name.
        name: String,
    },
    /// The API server returned the object without a `metadata.resourceVersion`, so no
    /// precondition can be sent; nothing is written (an unconditional write could overwrite a
    /// launch intent recorded meanwhile).
    #[error("{name} was read without a resourceVersion; not writing without a precondition")]
    NoResourceVersion {
        /// Object name.
        name: String,
    },
    /// Every attempt hit a conflict.
    #[error("status patch of {name} still conflicted after {attempts} attempts")]
    Conflicts {
        /// Object name.
        name: String,
        /// Attempts made.
        attempts: u32,
    },
}

impl StatusWriteError {
    /// Whether retrying the whole reconcile later may succeed (conflicts and API errors).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            Self::UnnamedObject | Self::Serialize { .. } | Self::Gone { .. }
        )
    }
}

#[derive(Debug)]
struct Known {
    resource_version: Option<String>,
    server_jobs: Vec<JobStatus>,
    flushed_desired: Option<String>,
    /// The launch intent the API server holds, as last read or written.
    server_intent: Option<LaunchIntent>,
    /// Keys of intents the engine resolved in this session (cleared by the next write).
    resolved: HashSet<String>,
    /// The `resourceVersion`s the accepted writes since the last read returned, oldest first.
    written_since_read: Vec<String>,
    /// Everything but the status of the object the reconcile started from, as far as a status
    /// write leaves it alone (see [`Outside`]).
    base: Outside,
    /// A write returned an object whose [`Outside`] differs from `base`: it landed on a change
    /// by somebody else (after a conflict re-read), which the reconcile did not act on.
    landed_on_foreign_change: bool,
    /// The status of the copy read from the API server in this session (stale check, conflict
    /// re-read), unless a write came after it.
    read_status: Option<Value>,
    /// Status patches the API server accepted in this session.
    writes: u64,
    /// Status patches it refused with 409 Conflict in this session.
    conflicts: u64,
}

impl Known {
    /// A fresh copy was read from the API server (`status`: its status as JSON): its version,
    /// job list and intent become the view; writes before it are no longer the newest state.
    fn read<K: ProvisionedResource>(&mut self, fresh: &K, status: Option<Value>) {
        self.resource_version = fresh.meta().resource_version.clone();
        self.written_since_read.clear();
        self.read_status = status;
        self.server_jobs = fresh.provisioning_jobs().to_vec();
        self.server_intent = fresh
            .provisioning_status()
            .and_then(|s| s.launch_intent.clone());
    }

    /// The API server accepted a status write and answered with `written`.
    fn wrote<K: ProvisionedResource>(&mut self, written: &K) {
        self.writes += 1;
        if Outside::of(written) != self.base {
            self.landed_on_foreign_change = true;
        }
        self.resource_version = written.meta().resource_version.clone();
        self.written_since_read
            .extend(self.resource_version.clone());
        self.read_status = None;
    }

    /// What a job-history write does to `status.launchIntent`: `Some(None)` clears a resolved
    /// intent, `None` leaves the server's value alone.
    fn intent_update(&self) -> Option<Option<LaunchIntent>> {
        self.server_intent
            .as_ref()
            .filter(|i| self.resolved.contains(&i.idempotency_key))
            .map(|_| None)
    }
}

/// What a reconcile acts on besides the status — its generation (the spec), deletion,
/// finalizers, labels and annotations: a status write returns it unchanged, so a write that
/// returns another one landed on somebody else's change.
#[derive(Debug, Clone, PartialEq)]
struct Outside {
    generation: Option<i64>,
    deletion: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    finalizers: Option<Vec<String>>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl Outside {
    fn of<K: ProvisionedResource>(obj: &K) -> Self {
        let m = obj.meta();
        Self {
            generation: m.generation,
            deletion: m.deletion_timestamp.clone(),
            finalizers: m.finalizers.clone().filter(|f| !f.is_empty()),
            labels: m.labels.clone().filter(|l| !l.is_empty()),
            annotations: m.annotations.clone().filter(|a| !a.is_empty()),
        }
    }
}

/// Shallow-merges `patch`'s keys into `status` (both JSON objects).
fn merge_keys(status: &mut Value, patch: Value) {
    if let (Some(target), Value::Object(patch)) = (status.as_object_mut(), patch) {
        target.extend(patch);
    }
}

/// One reconcile's view of what the API server holds for an object: its last known
/// `resourceVersion` and job list. Created from the object the reconcile started with; every
/// successful write or conflict re-read updates it, so the flush and the end-of-reconcile
/// write chain their preconditions and never drop a job another writer persisted.
///
/// Methods take `&self`, so the flush can be called from a lifecycle callback while the
/// reconcile keeps the session.
#[derive(Debug)]
pub struct StatusSession<K: ProvisionedResource> {
    api: Api<K>,
    name: String,
    config: StatusWriteConfig,
    /// The status the reconcile started from, serialized from the Rust type.
    last_read: Value,
    known: Mutex<Known>,
}

impl<K: ProvisionedResource> StatusSession<K> {
    /// A session for `obj` (the copy the reconcile started with, e.g. from the cache).
    ///
    /// # Errors
    /// [`StatusWriteError::UnnamedObject`], [`StatusWriteError::Serialize`].
    pub fn new(api: Api<K>, obj: &K, config: StatusWriteConfig) -> Result<Self, StatusWriteError> {
        let name = obj
            .meta()
            .name
            .clone()
            .ok_or(StatusWriteError::UnnamedObject)?;
        let last_read = status_value(obj, &name)?;
        Ok(Self {
            api,
            name,
            config,
            last_read,
            known: Mutex::new(Known {
                resource_version: obj.meta().resource_version.clone(),
                server_jobs: obj.provisioning_jobs().to_vec(),
                flushed_desired: None,
                server_intent: obj
                    .provisioning_status()
                    .and_then(|s| s.launch_intent.clone()),
                resolved: HashSet::new(),
                written_since_read: Vec::new(),
                base: Outside::of(obj),
                landed_on_foreign_change: false,
                read_status: None,
                writes: 0,
                conflicts: 0,
            }),
        })
    }

    /// How many status patches of this session the API server accepted, and how many it
    /// refused with 409 Conflict (for metrics).
    #[must_use]
    pub fn write_counts(&self) -> (u64, u64) {
        let k = self.lock();
        (k.writes, k.conflicts)
    }

    /// The `resourceVersion`s this session's accepted status writes returned since its last
    /// read, oldest first: the versions of the watch events those writes cause; the last is
    /// the object's version unless somebody else wrote since.
    ///
    /// Empty once a write landed on somebody else's change that the reconcile did not act on:
    /// a write retried after a conflict re-read that returned the object with another
    /// generation, deletion, finalizers, labels or annotations than the reconcile started
    /// from (the user deleted the object while the reconcile recorded a poll). Those versions
    /// carry a change still to be reconciled, so they are nobody's echo.
    #[must_use]
    pub fn own_write_versions(&self) -> Vec<String> {
        let k = self.lock();
        if k.landed_on_foreign_change {
            return Vec::new();
        }
        k.written_since_read.clone()
    }

    /// The status of the freshest copy of the object this session read from the API server
    /// (the stale-cache check, a conflict re-read), when no write came after that read: what
    /// the API server holds, newer than the copy the reconcile started from.
    #[must_use]
    pub fn read_status(&self) -> Option<Value> {
        self.lock().read_status.clone()
    }

    /// The `resourceVersion` of the last write or read.
    #[must_use]
    pub fn resource_version(&self) -> Option<String> {
        self.lock().resource_version.clone()
    }

    /// The job list as last persisted (or read).
    #[must_use]
    pub fn server_jobs(&self) -> Vec<JobStatus> {
        self.lock().server_jobs.clone()
    }

    /// The desired config version the last successful [`flush_jobs`](Self::flush_jobs)
    /// persisted, if any.
    #[must_use]
    pub fn flushed_desired_config_version(&self) -> Option<String> {
        self.lock().flushed_desired.clone()
    }

    /// The unresolved launch intent the API server holds (as last read or written).
    #[must_use]
    pub fn pending_intent(&self) -> Option<LaunchIntent> {
        let k = self.lock();
        k.server_intent
            .clone()
            .filter(|i| !k.resolved.contains(&i.idempotency_key))
    }

    /// Marks the intent with `idempotency_key` resolved: the next job-history write (flush or
    /// full write) clears it. No request.
    pub fn resolve_intent(&self, idempotency_key: &str) {
        self.lock().resolved.insert(idempotency_key.to_owned());
    }

    /// Whether the API server holds an intent the engine resolved in this session (its job is
    /// recorded, it was proven absent, or its launch certainly made no job): the next status
    /// write clears it, and the reconcile writes even when nothing else changed, so that a
    /// process inheriting the object has nothing to look up.
    pub(crate) fn holds_resolved_intent(&self) -> bool {
        self.lock().intent_update().is_some()
    }

    /// Records a fresh copy of the object read from the API server (for example by the
    /// stale-cache check): its `resourceVersion`, job list and launch intent become the
    /// session's view, so later writes carry the fresh precondition.
    pub fn observe(&self, fresh: &K) {
        let status = status_value(fresh, &self.name).ok();
        self.lock().read(fresh, status);
    }

    /// Persists the launch intent (write-ahead, before the launch request): a merge patch of
    /// `status.launchIntent` ([`ProvisionedResource::launch_intent_patch`]) with the
    /// `resourceVersion` precondition. Not retried on conflict.
    ///
    /// # Errors
    /// [`StatusWriteError::IntentConflict`] on 409; any other patch error (a refused status
    /// write, 403, among them) as for the flush.
    pub async fn write_intent(&self, intent: &LaunchIntent) -> Result<(), StatusWriteError> {
        let rv = self.lock().resource_version.clone();
        let rv = match rv {
            Some(rv) => rv,
            None => {
                self.reread().await?;
                // Never write without a precondition: an object the API server returned
                // without a `resourceVersion` is not written at all (`""` would make the
                // patch unconditional).
                self.lock().resource_version.clone().ok_or_else(|| {
                    StatusWriteError::NoResourceVersion {
                        name: self.name.clone(),
                    }
                })?
            }
        };
        let body = json!({
            "metadata": { "resourceVersion": rv },
            "status": K::launch_intent_patch(Some(intent)),
        });
        match self
            .api
            .patch_status(&self.name, &self.patch_params(), &Patch::Merge(&body))
            .await
        {
            Ok(written) => {
                let mut k = self.lock();
                k.wrote(&written);
                k.server_intent = Some(intent.clone());
                k.resolved.remove(&intent.idempotency_key);
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                self.lock().conflicts += 1;
                debug!(object.name = %self.name, "launch-intent write conflicted");
                Err(StatusWriteError::IntentConflict {
                    name: self.name.clone(),
                })
            }
            Err(kube::Error::Api(status)) if status.is_not_found() => Err(StatusWriteError::Gone {
                name: self.name.clone(),
            }),
            Err(source) => Err(StatusWriteError::Patch {
                name: self.name.clone(),
                source,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The status flush: persists `jobs` (merged with the server's) and `desired_config_version`
    /// right after a trigger. Returns the job list that was persisted.
    ///
    /// Request body: `{"metadata":{"resourceVersion":…},"status":{"provisioningJobs":[…],"desiredConfigVersion":…}}`
    /// (the status part from [`ProvisionedResource::provisioning_status_patch`]).
    ///
    /// # Errors
    /// [`StatusWriteError`]; a 409 is retried after a re-read.
    pub async fn flush_jobs(
        &self,
        jobs: &[JobStatus],
        desired_config_version: &str,
    ) -> Result<Vec<JobStatus>, StatusWriteError> {
        let desired = desired_config_version.to_owned();
        let ours = jobs.to_vec();
        let (_, persisted) = self
            .write_loop(|server_jobs, _, intent| {
                let merged = merge_job_histories(server_jobs, &ours, self.config.max_history);
                let status = crate::ProvisioningStatus {
                    provisioning_jobs: merged.clone(),
                    desired_config_version: desired.clone(),
                    ..Default::default()
                };
                let mut patch = K::provisioning_status_patch(&status);
                if let Some(update) = intent {
                    merge_keys(&mut patch, K::launch_intent_patch(update.as_ref()));
                }
                Ok((patch, merged))
            })
            .await?;
        self.lock().flushed_desired = Some(desired);
        Ok(persisted)
    }

    /// The end-of-reconcile write: persists `obj`'s whole status, with its job list merged with
    /// the server's, and clears the fields of the last-read status that `obj` no longer has
    /// (see [Clearing what this controller removed](self#clearing-what-this-controller-removed)).
    /// Returns the object as the API server stored it.
    ///
    /// # Errors
    /// [`StatusWriteError`]; a 409 is retried after a re-read.
    pub async fn write_status(&self, obj: &K) -> Result<K, StatusWriteError> {
        let ours = obj.provisioning_jobs().to_vec();
        let (written, _) = self
            .write_loop(|server_jobs, last_read, intent| {
                let merged = merge_job_histories(server_jobs, &ours, self.config.max_history);
                let mut copy = obj.clone();
                let s = copy.provisioning_status_mut();
                s.provisioning_jobs = merged.clone();
                // Never send an intent away that the engine did not resolve: the diff against
                // the last read must not clear it either.
                s.launch_intent = None;
                let mut status = clearing_removed(last_read, status_value(&copy, &self.name)?);
                if let Some(map) = status.as_object_mut() {
                    map.remove("launchIntent");
                }
                if let Some(update) = intent {
                    merge_keys(&mut status, K::launch_intent_patch(update.as_ref()));
                }
                Ok((status, merged))
            })
            .await?;
        Ok(written)
    }

    async fn write_loop(
        &self,
        build: impl Fn(
            &[JobStatus],
            &Value,
            Option<Option<LaunchIntent>>,
        ) -> Result<(Value, Vec<JobStatus>), StatusWriteError>,
    ) -> Result<(K, Vec<JobStatus>), StatusWriteError> {
        let attempts = self.config.max_attempts.get();
        for attempt in 1..=attempts {
            let (rv, server_jobs, intent) = {
                let k = self.lock();
                (
                    k.resource_version.clone(),
                    k.server_jobs.clone(),
                    k.intent_update(),
                )
            };
            let Some(rv) = rv else {
                // Never write without a precondition: read first.
                self.reread().await?;
                continue;
            };
            let clears_intent = matches!(intent, Some(None));
            let (status, merged) = build(&server_jobs, &self.last_read, intent)?;
            let body = json!({ "metadata": { "resourceVersion": rv }, "status": status });
            match self
                .api
                .patch_status(&self.name, &self.patch_params(), &Patch::Merge(&body))
                .await
            {
                Ok(written) => {
                    let mut k = self.lock();
                    k.wrote(&written);
                    k.server_jobs = merged.clone();
                    if clears_intent {
                        k.server_intent = None;
                    }
                    return Ok((written, merged));
                }
                Err(kube::Error::Api(status)) if status.is_conflict() => {
                    self.lock().conflicts += 1;
                    debug!(object.name = %self.name, attempt, "status write conflicted; re-reading");
                    self.reread().await?;
                }
                Err(kube::Error::Api(status)) if status.is_not_found() => {
                    return Err(StatusWriteError::Gone {
                        name: self.name.clone(),
                    });
                }
                Err(source) => {
                    return Err(StatusWriteError::Patch {
                        name: self.name.clone(),
                        source,
                    });
                }
            }
        }
        warn!(object.name = %self.name, attempts, "status write gave up after repeated conflicts");
        Err(StatusWriteError::Conflicts {
            name: self.name.clone(),
            attempts,
        })
    }

    /// The parameters of every status patch: the configured field manager.
    fn patch_params(&self) -> PatchParams {
        PatchParams {
            field_manager: self.config.field_manager.clone(),
            ..PatchParams::default()
        }
    }

    async fn reread(&self) -> Result<(), StatusWriteError> {
        let fresh = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|source| StatusWriteError::Reread {
                name: self.name.clone(),
                source,
            })?
            .ok_or_else(|| StatusWriteError::Gone {
                name: self.name.clone(),
            })?;
        let status = status_value(&fresh, &self.name).ok();
        self.lock().read(&fresh, status);
        Ok(())
    }
}

/// `obj`'s `status` as JSON (`null` when it has none).
fn status_value<K: ProvisionedResource>(obj: &K, name: &str) -> Result<Value, StatusWriteError> {
    serde_json::to_value(obj)
        .map(|v| v.get("status").cloned().unwrap_or(Value::Null))
        .map_err(|source| StatusWriteError::Serialize {
            name: name.to_owned(),
            source,
        })
}

/// The merge patch that turns `last_read` into `ours`: `ours`, plus `null` for every key of
/// `last_read` that `ours` no longer has (recursively through objects both have). A status
/// removed as a whole clears its known keys one by one, never the whole `status`.
///
/// ```
/// use provkit_kube::flush::clearing_removed;
/// use serde_json::json;
///
/// let last_read = json!({"phase": "Failed", "network": {"id": "n-1", "gateway": "10.0.0.1"}});
/// let ours = json!({"network": {"id": "n-1"}});
/// assert_eq!(
///     clearing_removed(&last_read, ours),
///     json!({"phase": null, "network": {"id": "n-1", "gateway": null}})
/// );
/// ```
#[must_use]
pub fn clearing_removed(last_read: &Value, ours: Value) -> Value {
    let Value::Object(before) = last_read else {
        return ours;
    };
    let mut after = match ours {
        Value::Object(after) => after,
        Value::Null => serde_json::Map::new(),
        other => return other,
    };
    for (key, was) in before {
        let now = match after.remove(key) {
            None | Some(Value::Null) => Value::Null,
            Some(now) => clearing_removed(was, now),
        };
        after.insert(key.clone(), now);
    }
    Value::Object(after)
}

/// Merges two job histories by `jobID` (see the [module docs](self) for the rule).
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobState, JobStatus, JobType};
/// use provkit_kube::flush::merge_job_histories;
/// use std::num::NonZeroUsize;
///
/// let t = |m| Utc.with_ymd_and_hms(2026, 1, 1, 0, m, 0).unwrap();
/// let theirs = vec![JobStatus::new("1", JobType::Provision, JobState::Succeeded, t(0)),
///                   JobStatus::new("2", JobType::Provision, JobState::Running, t(1))];
/// let ours = vec![JobStatus::new("1", JobType::Provision, JobState::Succeeded, t(0)),
///                 JobStatus::new("3", JobType::Provision, JobState::Pending, t(2))];
/// let merged = merge_job_histories(&theirs, &ours, NonZeroUsize::new(10).unwrap());
/// let ids: Vec<_> = merged.iter().map(|j| j.job_id.as_str()).collect();
/// assert_eq!(ids, ["1", "2", "3"]);
/// ```
#[must_use]
pub fn merge_job_histories(
    theirs: &[JobStatus],
    ours: &[JobStatus],
    max_history: NonZeroUsize,
) -> Vec<JobStatus> {
    let mut merged = theirs.to_vec();
    let full = theirs.len() >= max_history.get();
    let oldest_theirs = theirs.iter().filter_map(|j| j.timestamp).min();
    for job in ours {
        let same = merged.iter_mut().find(|j| {
            if job.job_id.is_empty() {
                *j == job
            } else {
                j.job_id == job.job_id && j.job_type == job.job_type
            }
        });
        match same {
            Some(existing) => {
                let regresses = existing.state.is_terminal() && !job.state.is_terminal();
                if !regresses {
                    existing.clone_from(job);
                }
            }
            None => {
                let trimmed_by_them =
                    full && matches!((job.timestamp, oldest_theirs), (Some(t), Some(o)) if t < o);
                if !trimmed_by_them {
                    append_job(&mut merged, job.clone(), max_history);
                }
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::{TimeZone, Utc};
    use provkit_core::{JobState, JobType};

    fn job(id: &str, state: JobState, minute: u32) -> JobStatus {
        JobStatus::new(
            id,
            JobType::Provision,
            state,
            Utc.with_ymd_and_hms(2026, 1, 1, 0, minute, 0).unwrap(),
        )
    }

    fn ids(jobs: &[JobStatus]) -> Vec<&str> {
        jobs.iter().map(|j| j.job_id.as_str()).collect()
    }

    fn cap(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    #[test]
    fn union_keeps_their_order_and_appends_ours() {
        let theirs = vec![
            job("1", JobState::Succeeded, 0),
            job("9", JobState::Running, 5),
        ];
        let ours = vec![
            job("1", JobState::Succeeded, 0),
            job("2", JobState::Pending, 6),
        ];
        assert_eq!(
            ids(&merge_job_histories(&theirs, &ours, cap(10))),
            ["1", "9", "2"]
        );
    }

    #[test]
    fn ours_wins_for_same_id_unless_it_would_leave_a_terminal_state() {
        let theirs = vec![
            job("1", JobState::Running, 0),
            job("2", JobState::Failed, 1),
        ];
        let ours = vec![
            job("1", JobState::Succeeded, 0),
            job("2", JobState::Running, 1),
        ];
        let m = merge_job_histories(&theirs, &ours, cap(10));
        assert_eq!(m[0].state, JobState::Succeeded);
        assert_eq!(m[1].state, JobState::Failed);
    }

    #[test]
    fn a_job_the_other_writer_trimmed_is_not_resurrected() {
        let theirs: Vec<_> = (1..=3)
            .map(|i| job(&i.to_string(), JobState::Succeeded, i))
            .collect();
        let ours = vec![
            job("0", JobState::Succeeded, 0),
            job("4", JobState::Pending, 4),
        ];
        assert_eq!(
            ids(&merge_job_histories(&theirs, &ours, cap(3))),
            ["2", "3", "4"]
        );
    }

    #[test]
    fn same_id_different_type_are_distinct() {
        let theirs = vec![job("1", JobState::Succeeded, 0)];
        let mut d = job("1", JobState::Pending, 1);
        d.job_type = JobType::Deprovision;
        let m = merge_job_histories(&theirs, std::slice::from_ref(&d), cap(10));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn merging_is_idempotent() {
        let theirs = vec![job("1", JobState::Succeeded, 0)];
        let ours = vec![
            job("1", JobState::Succeeded, 0),
            job("2", JobState::Pending, 1),
        ];
        let once = merge_job_histories(&theirs, &ours, cap(10));
        assert_eq!(merge_job_histories(&once, &ours, cap(10)), once);
    }
}
