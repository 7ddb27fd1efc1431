//! The end-of-run audit against AAP's own records (the fake's job list, plus the jobs the run
//! purged) and the API server's (the status writes it accepted, as the harness's observer saw
//! them): duplicate launches, lost job ids, launches per resource.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use provkit_aap::provider::IDEMPOTENCY_KEY_VAR;
use provkit_testing::fake_aap::{FakeAap, JobInfo};

use crate::backend::TEMPLATE_PREFIX;
use crate::harness::Records;

/// Jobs the simulation purged from AAP (captured before the purge, so the audit still sees them).
#[derive(Debug, Default)]
pub struct PurgeLog {
    jobs: Mutex<Vec<JobInfo>>,
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
            .push(info);
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

    fn snapshot(&self) -> Vec<JobInfo> {
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
    /// A second (third, …) job for the same attempt.
    pub duplicates: usize,
    /// Up to ten examples of duplicates.
    pub duplicate_examples: Vec<String>,
    /// Jobs without an idempotency key.
    pub unkeyed: usize,
    /// Jobs AAP ran that no status write ever recorded.
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
        jobs.extend(purged_jobs);
        audit.jobs = jobs.len();
        let mut by_key: HashMap<String, Vec<u64>> = HashMap::new();
        for job in &jobs {
            if !records.was_recorded(&job.id.to_string()) {
                audit.lost += 1;
                if audit.lost_examples.len() < 10 {
                    audit
                        .lost_examples
                        .push(format!("job {} ({}, {})", job.id, job.name, job.status));
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
            let ids = by_key.entry(attempt.key.clone()).or_default();
            if ids.is_empty() && index < resources {
                audit.attempts[index] += 1;
            }
            ids.push(job.id);
        }
        let mut dups: Vec<(&String, &Vec<u64>)> =
            by_key.iter().filter(|(_, ids)| ids.len() > 1).collect();
        dups.sort();
        for (key, ids) in dups {
            audit.duplicates += ids.len() - 1;
            if audit.duplicate_examples.len() < 10 {
                audit
                    .duplicate_examples
                    .push(format!("{key}: jobs {ids:?}"));
            }
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
