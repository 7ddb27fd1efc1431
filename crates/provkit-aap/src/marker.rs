//! The idempotency marker: the extra_vars key a launch attempt carries, and recognising the job
//! that carries it. Shared by the client's paging lookup and the provider (hence its own module).

use serde_json::Value;

use crate::types::Job;

/// The extra_vars key holding the launch attempt's idempotency key (top level, next to
/// the envelope's variable in every [`Envelope`](crate::provider::Envelope)). The provider's lookup matches jobs on it.
pub const IDEMPOTENCY_KEY_VAR: &str = "provkit_idempotency_key";

/// The newest job (highest id) whose extra_vars carry `key` under [`IDEMPOTENCY_KEY_VAR`].
///
/// ```
/// use provkit_aap::{Job, JobKind};
/// use provkit_aap::provider::find_marked_job;
/// let jobs: Vec<Job> = [
///     serde_json::json!({"id": 12, "extra_vars": "{\"provkit_idempotency_key\": \"other\"}"}),
///     serde_json::json!({"id": 11, "extra_vars": "{\"provkit_idempotency_key\": \"k1\"}"}),
/// ].iter().filter_map(|v| Job::from_value(v, JobKind::Job)).collect();
/// assert_eq!(find_marked_job(&jobs, "k1").map(|j| j.id), Some(11));
/// assert!(find_marked_job(&jobs, "k2").is_none());
/// ```
pub fn find_marked_job<'a>(jobs: &'a [Job], key: &str) -> Option<&'a Job> {
    jobs.iter()
        .filter(|job| carries_key(job, key))
        .max_by_key(|job| job.id)
}

/// Whether `job`'s extra_vars carry `key` under [`IDEMPOTENCY_KEY_VAR`].
pub(crate) fn carries_key(job: &Job, key: &str) -> bool {
    job.extra_vars
        .get(IDEMPOTENCY_KEY_VAR)
        .and_then(Value::as_str)
        == Some(key)
}
