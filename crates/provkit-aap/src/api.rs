//! [`AapApi`]: the operations [`AapProvider`](crate::AapProvider) needs, as a dyn-compatible
//! trait so the provider can run against a mock (feature `mock`) or any other implementation.

use chrono::{DateTime, Utc};

use crate::client::AapClient;
use crate::error::Result;
use crate::launch_check::LaunchRequirements;
use crate::skip_tag::TagLookup;
use crate::types::{
    AapJobEvent, CancelOutcome, Job, JobKind, LaunchRequest, Launched, Template, TemplateKind,
};
use crate::window_read::{JobWindow, WindowJobs};

/// The AAP operations the provider uses. Implemented by [`AapClient`].
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait AapApi: Send + Sync {
    /// Looks a launchable template up by name (see [`AapClient::get_template`]).
    async fn get_template(&self, name: &str) -> Result<Template>;
    /// A template's launch requirements (see [`AapClient::launch_requirements`]).
    async fn launch_requirements(&self, template: &Template) -> Result<LaunchRequirements>;
    /// Launches a template (never retried; see [`AapClient::launch`]). An implementation must
    /// not send the request after [`LaunchRequest::send_by`] (the provider's exactly-once
    /// windows rely on it); [`AapClient`] checks it after its own waits and answers
    /// [`Error::SendByPassed`](crate::Error::SendByPassed).
    async fn launch(&self, template: &Template, request: &LaunchRequest) -> Result<Launched>;
    /// A job's or workflow job's detail.
    async fn get_unified(&self, kind: JobKind, id: u64) -> Result<Job>;
    /// Cancels a job or workflow job (202 / 405 distinguished).
    async fn cancel(&self, kind: JobKind, id: u64) -> Result<CancelOutcome>;
    /// The kind of unified job `id`, if it exists.
    async fn find_job_kind(&self, id: u64) -> Result<Option<JobKind>>;
    /// Jobs of `kind` created by template `template_id` (of `template_kind`) after `since`, newest
    /// first, with their `extra_vars`.
    async fn jobs_created_since(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
    ) -> Result<Vec<Job>>;
    /// The newest job of `kind` created by template `template_id` after `since` whose
    /// `extra_vars` carry the idempotency key `key`; pages newest first and stops at the first
    /// match (see [`AapClient::newest_job_with_key`]).
    async fn newest_job_with_key(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        key: &str,
    ) -> Result<Option<Job>>;
    /// The first job of `kind` created by template `template_id` in `(since, until)` whose
    /// `extra_vars` carry the idempotency key `key`; reads a page from the window's start (its
    /// end with `from_end`), then one from the other end, in turn, and stops at the first match
    /// or where the two meet (see [`AapClient::first_job_with_key_between`]).
    #[allow(clippy::too_many_arguments)] // the window's parts, as `newest_job_with_key` has them
    async fn first_job_with_key_between(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
        from_end: bool,
        key: &str,
    ) -> Result<Option<Job>>;
    /// One call's worth of a read of the jobs in `window`, oldest first above job id `after`,
    /// until every one of `keys` was met (see [`AapClient::jobs_between`]). The default offers
    /// no such read ([`WindowEnd::Unsupported`](crate::WindowEnd::Unsupported)): the provider
    /// then reads each inherited intent's window on its own with
    /// [`first_job_with_key_between`](Self::first_job_with_key_between).
    async fn jobs_between(
        &self,
        window: &JobWindow,
        after: Option<u64>,
        keys: &[String],
    ) -> Result<WindowJobs> {
        let _ = (window, after, keys);
        Ok(WindowJobs::unsupported())
    }
    /// The newest job of job template `template_id` whose `skip_tags` hold `tag` (see
    /// [`AapClient::job_with_skip_tag`]). The default offers no such lookup
    /// ([`TagLookup::Unsupported`]): the provider then reads the attempt's window.
    async fn job_with_skip_tag(&self, template_id: u64, tag: &str) -> Result<TagLookup> {
        let _ = (template_id, tag);
        Ok(TagLookup::Unsupported)
    }
    /// The first `limit` events of job `id` flagged `failed` (one request; see
    /// [`AapClient::failed_job_events`]).
    async fn failed_job_events(&self, id: u64, limit: usize) -> Result<Vec<AapJobEvent>>;
    /// The jobs workflow job `id` ran, in finish order (one request; see
    /// [`AapClient::workflow_node_jobs`]).
    async fn workflow_node_jobs(&self, id: u64) -> Result<Vec<Job>>;
    /// AAP's clock from one cheap answer's `Date` header, if the API offers one (see
    /// [`AapClient::server_time`]); the default offers none (the provider then keeps its
    /// configured clock-skew allowance until its first launch answer).
    async fn server_time(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(None)
    }
    /// How long a launch would be refused without being sent (see
    /// [`AapClient::launch_refused_for`]); the default: never.
    fn launch_refused_for(&self) -> Option<std::time::Duration> {
        None
    }
}

#[async_trait::async_trait]
impl AapApi for AapClient {
    async fn get_template(&self, name: &str) -> Result<Template> {
        AapClient::get_template(self, name).await
    }
    async fn launch_requirements(&self, template: &Template) -> Result<LaunchRequirements> {
        AapClient::launch_requirements(self, template).await
    }
    async fn launch(&self, template: &Template, request: &LaunchRequest) -> Result<Launched> {
        AapClient::launch(self, template, request).await
    }
    async fn get_unified(&self, kind: JobKind, id: u64) -> Result<Job> {
        AapClient::get_unified(self, kind, id).await
    }
    async fn cancel(&self, kind: JobKind, id: u64) -> Result<CancelOutcome> {
        AapClient::cancel(self, kind, id).await
    }
    async fn find_job_kind(&self, id: u64) -> Result<Option<JobKind>> {
        AapClient::find_job_kind(self, id).await
    }
    async fn jobs_created_since(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
    ) -> Result<Vec<Job>> {
        AapClient::jobs_created_since(self, kind, template_kind, template_id, since).await
    }
    async fn newest_job_with_key(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        key: &str,
    ) -> Result<Option<Job>> {
        AapClient::newest_job_with_key(self, kind, template_kind, template_id, since, key).await
    }
    #[allow(clippy::too_many_arguments)]
    async fn first_job_with_key_between(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
        from_end: bool,
        key: &str,
    ) -> Result<Option<Job>> {
        AapClient::first_job_with_key_between(
            self,
            kind,
            template_kind,
            template_id,
            since,
            until,
            from_end,
            key,
        )
        .await
    }
    async fn jobs_between(
        &self,
        window: &JobWindow,
        after: Option<u64>,
        keys: &[String],
    ) -> Result<WindowJobs> {
        AapClient::jobs_between(self, window, after, keys).await
    }
    async fn job_with_skip_tag(&self, template_id: u64, tag: &str) -> Result<TagLookup> {
        Ok(AapClient::job_with_skip_tag(self, template_id, tag)
            .await?
            .map_or(TagLookup::Absent, |job| TagLookup::Found(Box::new(job))))
    }
    async fn failed_job_events(&self, id: u64, limit: usize) -> Result<Vec<AapJobEvent>> {
        AapClient::failed_job_events(self, id, limit).await
    }
    async fn workflow_node_jobs(&self, id: u64) -> Result<Vec<Job>> {
        AapClient::workflow_node_jobs(self, id).await
    }
    async fn server_time(&self) -> Result<Option<DateTime<Utc>>> {
        AapClient::server_time(self).await
    }
    fn launch_refused_for(&self) -> Option<std::time::Duration> {
        AapClient::launch_refused_for(self)
    }
}
