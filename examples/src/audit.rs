//! The end-of-run audit against AAP's own records (the fake's job list, plus the jobs the run
//! purged) and the API server's (the status writes it accepted, as the harness's observer saw
//! them): duplicate launches, lost job ids, launches per resource.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};

use provkit_aap::provider::IDEMPOTENCY_KEY_VAR;
use provkit_testing::fake_aap::{FakeAap, JobInfo};

use crate::backend::TEMPLATE_PREFIX;
use crate::harness::Records;

/// Jobs the simulation purged from AAP (captured before the purge, so the audit still sees them),
/// with when each was purged: from then on AAP holds no job for its attempt key, so a launch with
/// that key afterwards is the engine doing its job, not a duplicate.
#[derive(Debug, Default)]
pub struct PurgeLog {
    jobs: Mutex<Vec<(JobInfo, DateTime<Utc>)>>,
}

impl PurgeLog {
    /// Purges job `id` from `aap`, remembering it. Returns whether it existed.
    pub fn purge(&self, aap: &FakeAap, id: u64) -> bool {
        let Some(mut info) = aap.job(id) else {
            return false;
        };
        if aap.purge_job(id).is_err() {
            return false;
        }
        info.extra_vars = key_only(&info.extra_vars);
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((info, aap.now()));
        true
    }

    /// Purged jobs so far.
    pub fn len(&self) -> usize {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// True when nothing was purged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn snapshot(&self) -> Vec<(JobInfo, DateTime<Utc>)> {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// `extra_vars` reduced to the idempotency key (as JSON text).
fn key_only(extra_vars: &str) -> String {
    let key = serde_json::from_str::<serde_json::Value>(extra_vars)
        .ok()
        .and_then(|v| v.get(IDEMPOTENCY_KEY_VAR).cloned());
    match key {
        Some(k) => serde_json::json!({ IDEMPOTENCY_KEY_VAR: k }).to_string(),
        None => "{}".to_owned(),
    }
}

/// A job of an attempt: its id, and when it was purged from AAP (if it was).
type Launched = (u64, Option<DateTime<Utc>>);

/// Whether AAP held none of an attempt's `earlier` jobs at `launched`: each had been purged by
/// then (a launch with the same key is then no duplicate).
fn all_gone_before(earlier: &[Launched], launched: DateTime<Utc>) -> bool {
    earlier
        .iter()
        .all(|(_, purged)| purged.is_some_and(|at| at <= launched))
}

/// Which attempt a job belongs to, read from its idempotency key (`pk1-<uid>-<p|d|o>-<hash>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The object's uid.
    pub uid: String,
    /// `true` for provision, `false` for deprovision.
    pub provision: bool,
    /// The key.
    pub key: String,
}

/// Parses the attempt of a job from its `extra_vars` JSON text.
pub fn attempt_of(extra_vars: &str) -> Option<Attempt> {
    let vars: serde_json::Value = serde_json::from_str(extra_vars).ok()?;
    let key = vars.get(IDEMPOTENCY_KEY_VAR)?.as_str()?.to_owned();
    let rest = key.strip_prefix("pk1-")?;
    let (rest, _hash) = rest.rsplit_once('-')?;
    let (uid, tag) = rest.rsplit_once('-')?;
    Some(Attempt {
        uid: uid.to_owned(),
        provision: tag == "p",
        key,
    })
}

/// The audit's findings.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Audit {
    /// Jobs AAP ran for the simulation (purged ones included).
    pub jobs: usize,
    /// Jobs purged mid-run.
    pub purged: usize,
    /// A second (third, …) job for the same attempt, launched while AAP still held an earlier
    /// job with that key.
    pub duplicates: usize,
    /// Jobs launched for an attempt whose earlier job had been purged from AAP by then (the
    /// engine cannot see a purged job: launching again is correct).
    pub relaunched_after_purge: usize,
    /// Purged jobs no status write had recorded when they were purged (the engine had not
    /// learned their id yet: after the purge AAP could not tell it).
    pub purged_unrecorded: usize,
    /// Up to ten examples of duplicates.
    pub duplicate_examples: Vec<String>,
    /// Jobs without an idempotency key.
    pub unkeyed: usize,
    /// Jobs AAP still holds that no status write ever recorded.
    pub lost: usize,
    /// Up to ten examples of lost job ids.
    pub lost_examples: Vec<String>,
    /// Jobs still pending/waiting/running at the end (purged jobs excluded).
    pub still_active: usize,
    /// Provision jobs per resource.
    pub provision_launches: Vec<u32>,
    /// Deprovision jobs per resource.
    pub deprovision_launches: Vec<u32>,
    /// Distinct attempts (idempotency keys) per resource: the jobs that were needed.
    pub attempts: Vec<u32>,
}

impl Audit {
    /// Audits `aap`'s jobs from the run's templates against the status writes the API server
    /// accepted.
    pub fn run(aap: &FakeAap, records: &Records, purged: &PurgeLog, resources: usize) -> Self {
        let prefix = format!("{TEMPLATE_PREFIX}-");
        // One job at a time (ids are sequential; purges leave short gaps), so the audit does not
        // hold a copy of every job's extra_vars at once.
        let mut jobs: Vec<JobInfo> = Vec::new();
        let mut misses = 0;
        let mut id = 1;
        while misses < 1000 {
            match aap.job(id) {
                Some(mut info) => {
                    misses = 0;
                    if info.name.starts_with(&prefix) && info.parent_workflow.is_none() {
                        // Keep only the idempotency key of extra_vars.
                        info.extra_vars = key_only(&info.extra_vars);
                        jobs.push(info);
                    }
                }
                None => misses += 1,
            }
            id += 1;
        }
        let purged_jobs = purged.snapshot();
        let mut audit = Audit {
            purged: purged_jobs.len(),
            provision_launches: vec![0; resources],
            deprovision_launches: vec![0; resources],
            attempts: vec![0; resources],
            ..Audit::default()
        };
        jobs.retain(|j| j.name.starts_with(&prefix) && j.parent_workflow.is_none());
        audit.still_active = jobs
            .iter()
            .filter(|j| matches!(j.status, "new" | "pending" | "waiting" | "running"))
            .count();
        let mut jobs: Vec<(JobInfo, Option<DateTime<Utc>>)> =
            jobs.into_iter().map(|j| (j, None)).collect();
        jobs.extend(purged_jobs.into_iter().map(|(j, at)| (j, Some(at))));
        jobs.sort_by_key(|(j, _)| j.id);
        audit.jobs = jobs.len();
        // Per attempt key: (job id, when it was purged) in launch order.
        let mut by_key: HashMap<String, Vec<Launched>> = HashMap::new();
        for (job, purged_at) in &jobs {
            if !records.was_recorded(&job.id.to_string()) {
                if purged_at.is_some() {
                    audit.purged_unrecorded += 1;
                } else {
                    audit.lost += 1;
                    if audit.lost_examples.len() < 10 {
                        audit
                            .lost_examples
                            .push(format!("job {} ({}, {})", job.id, job.name, job.status));
                    }
                }
            }
            let Some(attempt) = attempt_of(&job.extra_vars) else {
                audit.unkeyed += 1;
                continue;
            };
            let index = records.index_of_uid(&attempt.uid).unwrap_or(usize::MAX);
            if index < resources {
                if attempt.provision {
                    audit.provision_launches[index] += 1;
                } else {
                    audit.deprovision_launches[index] += 1;
                }
            }
            let earlier = by_key.entry(attempt.key.clone()).or_default();
            if earlier.is_empty() && index < resources {
                audit.attempts[index] += 1;
            }
            if !earlier.is_empty() {
                // A duplicate unless every earlier job of the attempt was gone from AAP when
                // this one was launched.
                if all_gone_before(earlier, job.created) {
                    audit.relaunched_after_purge += 1;
                } else {
                    audit.duplicates += 1;
                    if audit.duplicate_examples.len() < 10 {
                        let ids: Vec<u64> = earlier.iter().map(|(id, _)| *id).collect();
                        let created: Vec<String> = jobs
                            .iter()
                            .filter(|(j, _)| {
                                attempt_of(&j.extra_vars).is_some_and(|a| a.key == attempt.key)
                            })
                            .map(|(j, _)| {
                                format!(
                                    "job {} created {}",
                                    j.id,
                                    j.created
                                        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                                )
                            })
                            .collect();
                        audit.duplicate_examples.push(format!(
                            "{}: job {} launched while AAP held jobs {ids:?} ({}); its attempts:\n        {}",
                            attempt.key,
                            job.id,
                            created.join(", "),
                            records.trail(&attempt.key).join("\n        ")
                        ));
                    }
                }
            }
            earlier.push((job.id, *purged_at));
        }
        audit
    }

    /// Launches (provision + deprovision) of resource `index`.
    pub fn launches(&self, index: usize) -> u32 {
        self.provision_launches.get(index).copied().unwrap_or(0)
            + self.deprovision_launches.get(index).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_is_a_duplicate_while_aap_holds_an_earlier_job_of_its_attempt() {
        let t = |s: i64| DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0).unwrap_or_default();
        // (earlier jobs, launch time, duplicate?)
        let cases: [(&[Launched], i64, bool); 5] = [
            (&[(6, None)], 10, true),
            (&[(6, Some(t(5)))], 10, false),
            (&[(6, Some(t(5)))], 5, false),
            (&[(6, Some(t(20)))], 10, true),
            (&[(6, Some(t(5))), (8, None)], 10, true),
        ];
        for (earlier, at, duplicate) in cases {
            assert_eq!(
                !all_gone_before(earlier, t(at)),
                duplicate,
                "{earlier:?} at {at}"
            );
        }
    }

    #[test]
    fn parses_attempt_keys() {
        let vars = r#"{"provkit_idempotency_key": "pk1-00000000-5eed-4000-8000-000000000042-d-0123456789abcdef"}"#;
        assert_eq!(
            attempt_of(vars),
            Some(Attempt {
                uid: "00000000-5eed-4000-8000-000000000042".into(),
                provision: false,
                key: "pk1-00000000-5eed-4000-8000-000000000042-d-0123456789abcdef".into()
            })
        );
        assert_eq!(attempt_of(r#"{"x": 1}"#), None);
        assert_eq!(attempt_of("not json"), None);
    }
}
