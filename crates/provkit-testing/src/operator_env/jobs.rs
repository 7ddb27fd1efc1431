//! What AAP saw: launches per template and a job's extra_vars as typed JSON. Envelope-agnostic:
//! the extra_vars document is handed over whole (or at a JSON pointer you name), whichever
//! envelope the provider launched with.

use serde::de::DeserializeOwned;

use super::{EnvError, OperatorTestEnv};
use crate::fake_aap::JobInfo;

impl<K> OperatorTestEnv<K> {
    /// How many launches of the job template `template` the fake AAP accepted (over every
    /// organization of the environment).
    #[must_use]
    pub fn launches(&self, template: &str) -> u64 {
        let aap = self.aap.aap();
        self.organizations
            .iter()
            .filter_map(|org| aap.template_id(template, Some(org)))
            .map(|id| aap.launch_count(id))
            .sum()
    }

    /// The jobs of the job template `template`, oldest first.
    #[must_use]
    pub fn jobs(&self, template: &str) -> Vec<JobInfo> {
        let mut jobs: Vec<JobInfo> = self
            .aap
            .aap()
            .jobs()
            .into_iter()
            .filter(|j| j.name == template)
            .collect();
        jobs.sort_by_key(|j| j.id);
        jobs
    }

    /// The extra_vars of the latest job of `template`, deserialized into `T` (a struct of the
    /// fields your playbook reads, or `serde_json::Value`).
    ///
    /// # Errors
    /// [`EnvError::NoJob`]; [`EnvError::ExtraVars`] when they do not fit `T`.
    pub fn extra_vars<T: DeserializeOwned>(&self, template: &str) -> Result<T, EnvError> {
        self.extra_vars_at(template, "")
    }

    /// The part of the latest `template` job's extra_vars at the JSON pointer `pointer`
    /// (RFC 6901, e.g. `/osac_job_vars/resource/spec`; `""` is the whole document),
    /// deserialized into `T`. A pointer to nothing reads as `null`.
    ///
    /// # Errors
    /// [`EnvError::NoJob`]; [`EnvError::ExtraVars`] when the part does not fit `T`.
    pub fn extra_vars_at<T: DeserializeOwned>(
        &self,
        template: &str,
        pointer: &str,
    ) -> Result<T, EnvError> {
        let job = self.jobs(template).pop().ok_or_else(|| EnvError::NoJob {
            template: template.to_owned(),
        })?;
        let parse = |source| EnvError::ExtraVars {
            job: job.id,
            source,
        };
        let doc: serde_json::Value = serde_json::from_str(&job.extra_vars).map_err(parse)?;
        let part = doc.pointer(pointer).cloned().unwrap_or_default();
        serde_json::from_value(part).map_err(parse)
    }
}
