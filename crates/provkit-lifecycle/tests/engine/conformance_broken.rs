//! Issue 27 (5): every check of provkit-testing's conformance suite fails on a provider broken
//! in that one way. `Broken` wraps a working `ScriptedProvider` and breaks one behaviour; each
//! row runs one conformance function on it and expects that check's own panic message (and the
//! unbroken provider passes the same function, so the row proves the check, not the setup).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext, ProviderError,
    ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceView,
};
use provkit_testing::conformance::{self, Capabilities};
use provkit_testing::scripted::{ScriptedProvider, StatusStep};

use super::support::resource;

/// The one way a [`Broken`] provider breaks the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Breakage {
    /// The unbroken provider (each row's control).
    Nothing,
    EmptyName,
    UnstableName,
    LaunchFails,
    LaunchWithoutId,
    StatusFails,
    StatusOfAnotherJob,
    NeverTerminal,
    UnknownJobFound,
    UnknownJobOtherError,
    UnknownDeprovisionJobFound,
    UnknownDeprovisionJobOtherError,
    ClaimsLookupWithout,
    LookupWithoutSupportAnswers,
    LookupWithoutSupportOtherError,
    DeniesLookup,
    UnusedKeyFound,
    UsedKeyNotFound,
    UsedKeyFindsAnotherJob,
    LookupIgnoresJobType,
    DeprovisionFails,
    DeprovisionWithoutId,
    DeprovisionSkips,
    DeprovisionWaits,
    ReportsRunningProvisionJob,
}

#[derive(Debug)]
struct Broken {
    inner: ScriptedProvider,
    breakage: Breakage,
    names: AtomicUsize,
}

impl Broken {
    /// A provider set up for `breakage`'s row; broken that way when `broken`, sound otherwise.
    fn new(breakage: Breakage, broken: bool) -> Self {
        let inner = match breakage {
            Breakage::ClaimsLookupWithout
            | Breakage::LookupWithoutSupportAnswers
            | Breakage::LookupWithoutSupportOtherError => {
                ScriptedProvider::new().with_idempotency_support(IdempotencySupport::Unsupported)
            }
            _ => ScriptedProvider::new(),
        };
        if broken && breakage == Breakage::NeverTerminal {
            inner.set_default_statuses([StatusStep::State(JobState::Running)]);
        }
        Self {
            inner,
            breakage: if broken { breakage } else { Breakage::Nothing },
            names: AtomicUsize::new(0),
        }
    }

    fn is(&self, breakage: Breakage) -> bool {
        self.breakage == breakage
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for Broken {
    fn name(&self) -> &str {
        match self.breakage {
            Breakage::EmptyName => "",
            Breakage::UnstableName if self.names.fetch_add(1, Ordering::Relaxed) > 0 => "other",
            _ => self.inner.name(),
        }
    }

    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        if self.is(Breakage::LaunchFails) {
            return Err(ProviderError::other("launch refused"));
        }
        let mut launched = self.inner.trigger_provision(resource, ctx).await?;
        if self.is(Breakage::LaunchWithoutId) {
            launched.job_id = " ".into();
        }
        Ok(launched)
    }

    async fn provision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        let unknown = job_id == "999999999";
        match self.breakage {
            Breakage::StatusFails if !unknown => Err(ProviderError::other("backend down")),
            Breakage::UnknownJobFound if unknown => Ok(ProvisionStatus::new(
                job_id,
                JobState::Succeeded,
                "successful",
            )),
            Breakage::UnknownJobOtherError if unknown => Err(ProviderError::other("HTTP 500")),
            _ => {
                let mut status = self.inner.provision_status(resource, job_id).await?;
                if self.is(Breakage::StatusOfAnotherJob) {
                    status.job_id = format!("{job_id}-other");
                }
                Ok(status)
            }
        }
    }

    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        match self.breakage {
            Breakage::DeprovisionFails => Err(ProviderError::other("deprovision refused")),
            Breakage::DeprovisionSkips => Ok(DeprovisionResult::skipped()),
            Breakage::DeprovisionWaits => Ok(DeprovisionResult::waiting(true)),
            _ => {
                let mut result = self.inner.trigger_deprovision(resource, jobs, ctx).await?;
                if self.is(Breakage::DeprovisionWithoutId) {
                    result.job_id = Some(String::new());
                }
                if self.is(Breakage::ReportsRunningProvisionJob) {
                    result.provision_job_status =
                        Some(ProvisionStatus::new("1", JobState::Running, "running"));
                }
                Ok(result)
            }
        }
    }

    async fn deprovision_status(
        &self,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        let unknown = job_id == "999999999";
        match self.breakage {
            Breakage::UnknownDeprovisionJobFound if unknown => Ok(ProvisionStatus::new(
                job_id,
                JobState::Succeeded,
                "successful",
            )),
            Breakage::UnknownDeprovisionJobOtherError if unknown => {
                Err(ProviderError::other("HTTP 500"))
            }
            _ => self.inner.deprovision_status(resource, job_id).await,
        }
    }

    fn idempotency_support(&self) -> IdempotencySupport {
        match self.breakage {
            Breakage::ClaimsLookupWithout => IdempotencySupport::CheapLookup,
            Breakage::DeniesLookup => IdempotencySupport::Unsupported,
            _ => self.inner.idempotency_support(),
        }
    }

    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let found = FoundJob::new("12345", JobState::Running, "running");
        match self.breakage {
            Breakage::LookupWithoutSupportAnswers => Ok(None),
            Breakage::LookupWithoutSupportOtherError => Err(ProviderError::other("HTTP 500")),
            Breakage::UnusedKeyFound => Ok(Some(found)),
            Breakage::UsedKeyNotFound => Ok(None),
            Breakage::UsedKeyFindsAnotherJob => Ok(self
                .inner
                .find_job_by_idempotency_key(resource, job_type, key)
                .await?
                .map(|_| found)),
            Breakage::LookupIgnoresJobType => {
                let mut any = None;
                for t in [JobType::Provision, JobType::Deprovision] {
                    any = any.or(self
                        .inner
                        .find_job_by_idempotency_key(resource, &t, key)
                        .await?);
                }
                Ok(any)
            }
            _ => {
                self.inner
                    .find_job_by_idempotency_key(resource, job_type, key)
                    .await
            }
        }
    }
}

/// Which conformance function a row runs.
#[derive(Clone, Copy, Debug)]
enum Check {
    Name,
    LaunchAndPoll,
    UnknownJob,
    Lookup { supported: bool },
    DeprovisionFirst,
    DeprovisionAfter,
}

async fn run(check: Check, provider: Arc<dyn ProvisioningProvider>) {
    let caps = Capabilities::default().with_polling(3, std::time::Duration::ZERO);
    let p = provider.as_ref();
    match check {
        Check::Name => conformance::name_is_stable(p).await,
        Check::LaunchAndPoll => {
            conformance::provision_launch_and_poll(p, &resource("c-launch"), caps).await;
        }
        Check::UnknownJob => {
            conformance::status_of_unknown_job_is_not_found(p, &resource("c-unknown")).await;
        }
        Check::Lookup { supported } => {
            conformance::idempotency_lookup(
                p,
                &resource("c-lookup"),
                caps.with_idempotency_lookup(supported),
            )
            .await;
        }
        Check::DeprovisionFirst => {
            conformance::deprovision_without_provision_jobs(p, &resource("c-deprov"), caps).await;
        }
        Check::DeprovisionAfter => {
            conformance::deprovision_after_provision(p, &resource("c-deprov-after"), caps).await;
        }
    }
}

/// The panic message of `check` run on `provider`, `None` when it passed.
async fn failure(check: Check, provider: Arc<dyn ProvisioningProvider>) -> Option<String> {
    let panic = tokio::spawn(run(check, provider)).await.err()?.into_panic();
    Some(
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default(),
    )
}

#[tokio::test]
async fn every_conformance_check_fails_on_a_provider_broken_that_way() {
    use Breakage as B;
    use Check as C;
    let table: &[(Breakage, Check, &str)] = &[
        (B::EmptyName, C::Name, "provider name must not be empty"),
        (B::UnstableName, C::Name, "provider name must be stable"),
        (B::LaunchFails, C::LaunchAndPoll, "trigger_provision failed"),
        (
            B::LaunchWithoutId,
            C::LaunchAndPoll,
            "must return a non-empty job id",
        ),
        (B::StatusFails, C::LaunchAndPoll, "provision status of job"),
        (B::StatusOfAnotherJob, C::LaunchAndPoll, "reported job id"),
        (
            B::NeverTerminal,
            C::LaunchAndPoll,
            "did not reach a terminal state",
        ),
        (
            B::UnknownJobFound,
            C::UnknownJob,
            "status of an unknown job must fail",
        ),
        (
            B::UnknownJobOtherError,
            C::UnknownJob,
            "status of an unknown job must be NotFound",
        ),
        (
            B::UnknownDeprovisionJobFound,
            C::UnknownJob,
            "deprovision status of an unknown job must fail",
        ),
        (
            B::UnknownDeprovisionJobOtherError,
            C::UnknownJob,
            "deprovision status of an unknown job must be NotFound",
        ),
        (
            B::ClaimsLookupWithout,
            C::Lookup { supported: false },
            "provider without lookup must say so",
        ),
        (
            B::LookupWithoutSupportAnswers,
            C::Lookup { supported: false },
            "lookup without support must fail",
        ),
        (
            B::LookupWithoutSupportOtherError,
            C::Lookup { supported: false },
            "lookup without support must be Unsupported",
        ),
        (
            B::DeniesLookup,
            C::Lookup { supported: true },
            "provider with lookup must report it",
        ),
        (
            B::UnusedKeyFound,
            C::Lookup { supported: true },
            "lookup of an unused key must be Ok(None)",
        ),
        (
            B::UsedKeyNotFound,
            C::Lookup { supported: true },
            "lookup of a used key must find the job",
        ),
        (
            B::UsedKeyFindsAnotherJob,
            C::Lookup { supported: true },
            "lookup must find the launched job",
        ),
        (
            B::LookupIgnoresJobType,
            C::Lookup { supported: true },
            "lookup must not return a job of another type",
        ),
        (
            B::DeprovisionFails,
            C::DeprovisionFirst,
            "trigger_deprovision failed",
        ),
        (
            B::DeprovisionWithoutId,
            C::DeprovisionFirst,
            "a Triggered deprovision must carry a non-empty job id",
        ),
        (
            B::DeprovisionSkips,
            C::DeprovisionFirst,
            "provider skipped deprovision unexpectedly",
        ),
        (
            B::DeprovisionWaits,
            C::DeprovisionFirst,
            "nothing to wait for without provision jobs",
        ),
        (
            B::DeprovisionWithoutId,
            C::DeprovisionAfter,
            "Triggered needs a job id",
        ),
        (
            B::DeprovisionSkips,
            C::DeprovisionAfter,
            "provider skipped deprovision unexpectedly",
        ),
        (
            B::DeprovisionWaits,
            C::DeprovisionAfter,
            "must not make deprovision wait",
        ),
        (
            B::ReportsRunningProvisionJob,
            C::DeprovisionAfter,
            "reported provision job state must be terminal",
        ),
    ];
    for &(breakage, check, expected) in table {
        // The same check passes on the unbroken provider (with the same lookup support).
        assert_eq!(
            failure(check, Arc::new(Broken::new(breakage, false))).await,
            None,
            "{check:?} fails on the unbroken provider ({breakage:?} row)"
        );
        let message = failure(check, Arc::new(Broken::new(breakage, true)))
            .await
            .unwrap_or_else(|| panic!("{check:?} passed on a provider broken by {breakage:?}"));
        assert!(
            message.contains(expected),
            "{breakage:?}: {check:?} failed with {message:?}, not {expected:?}"
        );
    }
}
