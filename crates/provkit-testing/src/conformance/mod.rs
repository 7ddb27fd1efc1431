//! Conformance tests for [`ProvisioningProvider`] implementations (object_store `integration.rs`
//! style): public async functions that take `&dyn ProvisioningProvider` plus capability flags, and
//! panic with a clear message when the provider breaks the trait's contract.
//!
//! Not a stable part of the public API: new checks may be added in any release.
//!
//! ```
//! use provkit_lifecycle::{ResourceMeta, ResourceView};
//! use provkit_testing::conformance::{self, Capabilities};
//! use provkit_testing::scripted::ScriptedProvider;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let provider = ScriptedProvider::new();
//! let resource = |uid: &str| ResourceView::new(ResourceMeta { kind: "Subnet".into(), name: uid.into(), namespace: Some("ns".into()), uid: uid.into(), ..Default::default() }, serde_json::json!({}));
//! conformance::run_all(&provider, &resource, Capabilities::default()).await;
//! # });
//! ```

use std::time::Duration;

use provkit_core::{JobStatus, JobType};
use provkit_lifecycle::{
    DeprovisionAction, DeprovisionResult, IdempotencyKey, IdempotencySupport, LaunchContext,
    ProvisionStatus, ProvisioningProvider, ResourceView,
};

/// What the provider under test can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// The provider implements `find_job_by_idempotency_key` (reports something other than
    /// [`IdempotencySupport::Unsupported`]).
    pub idempotency_lookup: bool,
    /// `trigger_deprovision` may answer Skipped for a resource without provision jobs.
    pub deprovision_may_skip: bool,
    /// How many status calls a fresh job may need before it is terminal.
    pub max_polls: usize,
    /// Delay between status calls (for backends whose jobs progress in real time).
    pub poll_delay: Duration,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self {
            idempotency_lookup: true,
            deprovision_may_skip: false,
            max_polls: 20,
            poll_delay: Duration::ZERO,
        }
    }
}

impl Capabilities {
    /// Sets `idempotency_lookup`.
    #[must_use]
    pub fn with_idempotency_lookup(mut self, on: bool) -> Self {
        self.idempotency_lookup = on;
        self
    }

    /// Sets `deprovision_may_skip`.
    #[must_use]
    pub fn with_deprovision_may_skip(mut self, on: bool) -> Self {
        self.deprovision_may_skip = on;
        self
    }

    /// Sets `max_polls` and `poll_delay`.
    #[must_use]
    pub fn with_polling(mut self, max_polls: usize, poll_delay: Duration) -> Self {
        self.max_polls = max_polls;
        self.poll_delay = poll_delay;
        self
    }
}

/// Runs every check, each on a fresh resource from `resource(uid)`.
pub async fn run_all(
    provider: &dyn ProvisioningProvider,
    resource: &dyn Fn(&str) -> ResourceView,
    caps: Capabilities,
) {
    name_is_stable(provider).await;
    provision_launch_and_poll(provider, &resource("conformance-provision"), caps).await;
    status_of_unknown_job_is_not_found(provider, &resource("conformance-unknown")).await;
    idempotency_lookup(provider, &resource("conformance-idempotency"), caps).await;
    deprovision_without_provision_jobs(provider, &resource("conformance-deprovision"), caps).await;
    deprovision_after_provision(provider, &resource("conformance-deprovision-after"), caps).await;
}

/// `name()` is non-empty and stable.
pub async fn name_is_stable(provider: &dyn ProvisioningProvider) {
    let first = provider.name().to_owned();
    assert!(!first.is_empty(), "provider name must not be empty");
    assert_eq!(provider.name(), first, "provider name must be stable");
}

/// A launch returns a non-empty id and a non-terminal or terminal state; polling that id reaches a
/// terminal state within `caps.max_polls`, reporting the same id. Returns the final status.
pub async fn provision_launch_and_poll(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
    caps: Capabilities,
) -> ProvisionStatus {
    let key = IdempotencyKey::for_attempt(&resource.uid, &JobType::Provision, "conformance", None);
    let launched = match provider
        .trigger_provision(resource, &LaunchContext::new().with_idempotency_key(key))
        .await
    {
        Ok(r) => r,
        Err(e) => panic!("trigger_provision failed: {e}"),
    };
    assert!(
        !launched.job_id.trim().is_empty(),
        "trigger_provision must return a non-empty job id"
    );
    poll_until_terminal(
        provider,
        resource,
        &JobType::Provision,
        &launched.job_id,
        caps,
    )
    .await
}

async fn poll_until_terminal(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
    job_type: &JobType,
    job_id: &str,
    caps: Capabilities,
) -> ProvisionStatus {
    for _ in 0..caps.max_polls.max(1) {
        let status = match job_type {
            JobType::Deprovision => provider.deprovision_status(resource, job_id).await,
            _ => provider.provision_status(resource, job_id).await,
        };
        let status = match status {
            Ok(s) => s,
            Err(e) => panic!("{} status of job {job_id} failed: {e}", job_type.as_str()),
        };
        assert!(
            status.job_id.is_empty() || status.job_id == job_id,
            "status of job {job_id} reported job id {}",
            status.job_id
        );
        if status.state.is_terminal() {
            return status;
        }
        if !caps.poll_delay.is_zero() {
            tokio::time::sleep(caps.poll_delay).await;
        }
    }
    panic!(
        "{} job {job_id} did not reach a terminal state in {} polls",
        job_type.as_str(),
        caps.max_polls
    );
}

/// Status of a job id the backend never issued is [`ProviderError::NotFound`](provkit_lifecycle::ProviderError::NotFound)
/// (the engine relies on it to fail purged jobs instead of polling them forever).
pub async fn status_of_unknown_job_is_not_found(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
) {
    let missing = "999999999";
    match provider.provision_status(resource, missing).await {
        Err(e) => assert!(
            e.is_not_found(),
            "status of an unknown job must be NotFound, got: {e}"
        ),
        Ok(s) => panic!("status of an unknown job must fail, got {:?}", s.state),
    }
    match provider.deprovision_status(resource, missing).await {
        Err(e) => assert!(
            e.is_not_found(),
            "deprovision status of an unknown job must be NotFound, got: {e}"
        ),
        Ok(s) => panic!(
            "deprovision status of an unknown job must fail, got {:?}",
            s.state
        ),
    }
}

/// With lookup support: a job launched with key K is found by K (same id), and an unused key finds
/// nothing. Without: the provider reports `Unsupported` and lookups fail with `Unsupported`.
pub async fn idempotency_lookup(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
    caps: Capabilities,
) {
    let support = provider.idempotency_support();
    let key = IdempotencyKey::for_attempt(
        &resource.uid,
        &JobType::Provision,
        "conformance-lookup",
        None,
    );
    if !caps.idempotency_lookup {
        assert_eq!(
            support,
            IdempotencySupport::Unsupported,
            "provider without lookup must say so"
        );
        match provider
            .find_job_by_idempotency_key(resource, &JobType::Provision, &key)
            .await
        {
            Err(e) => assert!(
                e.is_unsupported(),
                "lookup without support must be Unsupported, got: {e}"
            ),
            Ok(found) => panic!("lookup without support must fail, got {found:?}"),
        }
        return;
    }
    assert_ne!(
        support,
        IdempotencySupport::Unsupported,
        "provider with lookup must report it"
    );
    let unused = IdempotencyKey::for_attempt(
        &resource.uid,
        &JobType::Provision,
        "conformance-unused",
        None,
    );
    match provider
        .find_job_by_idempotency_key(resource, &JobType::Provision, &unused)
        .await
    {
        Ok(None) => {}
        other => panic!("lookup of an unused key must be Ok(None), got {other:?}"),
    }
    let launched = match provider
        .trigger_provision(
            resource,
            &LaunchContext::new().with_idempotency_key(key.clone()),
        )
        .await
    {
        Ok(r) => r,
        Err(e) => panic!("trigger_provision failed: {e}"),
    };
    match provider
        .find_job_by_idempotency_key(resource, &JobType::Provision, &key)
        .await
    {
        Ok(Some(found)) => assert_eq!(
            found.job_id, launched.job_id,
            "lookup must find the launched job"
        ),
        other => panic!("lookup of a used key must find the job, got {other:?}"),
    }
    match provider
        .find_job_by_idempotency_key(resource, &JobType::Deprovision, &key)
        .await
    {
        Ok(None) => {}
        other => panic!("lookup must not return a job of another type, got {other:?}"),
    }
}

/// Calls `trigger_deprovision` with a fresh deprovision idempotency key; panics on an error.
async fn trigger_deprovision(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
    jobs: &[JobStatus],
) -> DeprovisionResult {
    let key = IdempotencyKey::for_attempt(&resource.uid, &JobType::Deprovision, "", None);
    match provider
        .trigger_deprovision(
            resource,
            jobs,
            &LaunchContext::new().with_idempotency_key(key),
        )
        .await
    {
        Ok(r) => r,
        Err(e) => panic!("trigger_deprovision failed: {e}"),
    }
}
/// A deprovision trigger without provision jobs launches (or, if allowed, skips); a launched job has a
/// non-empty id and its status reaches a terminal state.
pub async fn deprovision_without_provision_jobs(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
    caps: Capabilities,
) {
    let result = trigger_deprovision(provider, resource, &[]).await;
    match result.action {
        DeprovisionAction::Triggered => {
            let Some(id) = result.job_id.filter(|id| !id.trim().is_empty()) else {
                panic!("a Triggered deprovision must carry a non-empty job id");
            };
            poll_until_terminal(provider, resource, &JobType::Deprovision, &id, caps).await;
        }
        DeprovisionAction::Skipped => assert!(
            caps.deprovision_may_skip,
            "provider skipped deprovision unexpectedly"
        ),
        DeprovisionAction::Waiting => {
            panic!("nothing to wait for without provision jobs, got Waiting")
        }
        other => panic!("unexpected deprovision action {other}"),
    }
}

/// Deprovision after a finished provision job: the provider receives the history, does not wait for a
/// terminal job, and launches (or skips).
pub async fn deprovision_after_provision(
    provider: &dyn ProvisioningProvider,
    resource: &ResourceView,
    caps: Capabilities,
) {
    let status = provision_launch_and_poll(provider, resource, caps).await;
    let job = JobStatus::new(
        status.job_id.clone(),
        JobType::Provision,
        status.state.clone(),
        chrono::DateTime::UNIX_EPOCH,
    );
    let jobs = vec![job];
    let result = trigger_deprovision(provider, resource, &jobs).await;
    match result.action {
        DeprovisionAction::Triggered => {
            assert!(
                result.job_id.is_some_and(|id| !id.trim().is_empty()),
                "Triggered needs a job id"
            );
        }
        DeprovisionAction::Skipped => assert!(
            caps.deprovision_may_skip,
            "provider skipped deprovision unexpectedly"
        ),
        DeprovisionAction::Waiting => panic!(
            "a terminal provision job ({:?}) must not make deprovision wait",
            status.state
        ),
        other => panic!("unexpected deprovision action {other}"),
    }
    if let Some(reported) = result.provision_job_status {
        assert!(
            reported.state.is_terminal(),
            "reported provision job state must be terminal, got {:?}",
            reported.state
        );
    }
}
