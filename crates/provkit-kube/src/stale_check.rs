//! The stale-cache check: before launching a job, read the object **uncached** from the API
//! server and look for a non-terminal provision job the informer cache does not show yet
//! (Go `CheckAPIServerForNonTerminalProvisionJob`, osac-provisioning.md §3.5 and §8).

use kube::Api;
use provkit_core::{JobType, find_latest_job_by_type, has_job_id};
use tracing::{info, warn};

use crate::resource::ProvisionedResource;

/// What the stale-cache check answers when the API-server read fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnStaleCheckError {
    /// Fail open, like Go: log a warning and allow the trigger. A transient API error then
    /// cannot block provisioning, at the price of the (rare) duplicate the check exists to
    /// prevent.
    #[default]
    AllowTrigger,
    /// Fail closed: log a warning and report a non-terminal job, so the lifecycle requeues
    /// instead of launching.
    Requeue,
}

/// Reads `name` directly from the API server (a plain GET, never the reflector cache) and
/// returns `true` when its latest provision job (by timestamp) has an id and is not terminal,
/// i.e. a job is already running and the caller must **not** trigger another one.
///
/// # Guarantees
/// - Exactly one GET request.
/// - The config version of the job is not looked at (as in Go).
/// - An object that no longer exists (404) has no job: `false`.
///
/// # Errors
/// None are returned: on any other error the answer follows `on_error` and a warning is
/// logged.
///
/// ```no_run
/// # async fn demo<K: provkit_kube::ProvisionedResource>(api: kube::Api<K>) {
/// use provkit_kube::{api_server_has_non_terminal_provision_job, OnStaleCheckError};
/// if api_server_has_non_terminal_provision_job(&api, "my-object", OnStaleCheckError::AllowTrigger).await {
///     // requeue, do not launch
/// }
/// # }
/// ```
pub async fn api_server_has_non_terminal_provision_job<K: ProvisionedResource>(
    api: &Api<K>,
    name: &str,
    on_error: OnStaleCheckError,
) -> bool {
    let fresh = match read_fresh(api, name).await {
        Ok(Some(obj)) => obj,
        Ok(None) => return false,
        Err(_) => return on_error == OnStaleCheckError::Requeue,
    };
    let latest = find_latest_job_by_type(fresh.provisioning_jobs(), &JobType::Provision);
    let running = has_job_id(latest) && latest.is_some_and(|j| !j.state.is_terminal());
    if running {
        info!(
            object.name = name,
            job_id = latest.map(|j| j.job_id.as_str()).unwrap_or_default(),
            "skipping provision trigger: non-terminal job found via API server"
        );
    }
    running
}

/// The uncached read of every stale-cache check ([`api_server_has_non_terminal_provision_job`]
/// and the lifecycle hooks in `adapters`): one GET, never the reflector cache; a 404 is
/// `None`; a failure is logged here, once.
pub(crate) async fn read_fresh<K: ProvisionedResource>(
    api: &Api<K>,
    name: &str,
) -> Result<Option<K>, kube::Error> {
    api.get_opt(name).await.inspect_err(|error| {
        warn!(
            object.name = name,
            %error,
            "stale-cache check: reading the object from the API server failed"
        );
    })
}
