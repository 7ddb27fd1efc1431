//! [`AapProvider`]: a [`ProvisioningProvider`] that launches AAP job or workflow templates.
//!
//! - Template names: explicit and/or `{prefix}-{create|delete}-{kind}` ([`TemplateNames`]).
//! - extra_vars: the EDA envelope ([`build_extra_vars`]), `metadata.managedFields` removed, the
//!   whole launch body capped ([`AapProviderBuilder::max_payload_bytes`]).
//! - Status mapping of spec §4.4 ([`map_status`]); workflow jobs are polled and cancelled at
//!   `/workflow_jobs/` while the job id stays the bare number Go writes. The kind of each id is
//!   remembered: free for jobs this process launched, one `unified_jobs/?id=` request otherwise.
//! - Exactly-once launches: the idempotency key goes into extra_vars as
//!   [`IDEMPOTENCY_KEY_VAR`]; [`find_job_by_idempotency_key`](ProvisioningProvider::find_job_by_idempotency_key)
//!   lists the template's jobs created since the attempt began and matches the key client-side.
//! - Templates that would drop the payload: before the first launch of a template its launch
//!   requirements are read (`GET …/launch/`, cached per template) and a template that does not
//!   prompt for variables is refused with [`Error::TemplateIgnoresExtraVars`]. A launch answer
//!   that still lists `extra_vars` under `ignored_fields` gets its job canceled and the attempt
//!   reported `Failed` with that message.
//! - Purged jobs: only the job detail's authoritative 404 (`No Job matches the given query.`)
//!   is [`ProviderError::NotFound`]; a non-numeric id, a decoding failure or any other 404 is a
//!   plain error (retried by the engine, never a relaunch).
//! - Deprovision: cancel a running provision job first (spec §4.5).

mod attempts;
mod extra_vars;
mod naming;
mod status;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::{Clock, JobState, JobStatus, JobType, SystemClock, find_latest_job_by_type};
use provkit_lifecycle::{
    BoxError, DeprovisionResult, FoundJob, IdempotencyKey, IdempotencySupport, LaunchContext,
    ProviderError, ProvisionResult, ProvisionStatus, ProvisioningProvider, ResourceView,
};

pub use crate::marker::{IDEMPOTENCY_KEY_VAR, find_marked_job};
use attempts::Attempts;
pub use extra_vars::{ExtraVarsError, build_extra_vars, payload};
pub use naming::{NamingError, OSAC_KIND_SUFFIXES, TemplateAction, TemplateNames, kebab_case};
pub use status::{
    MAX_EVENT_DETAILS_BYTES, MAX_FAILED_EVENTS, map_status, provision_status,
    provision_status_with_outputs,
};

use crate::api::AapApi;
use crate::client::AapClient;
use crate::error::Error;
use crate::types::{CancelOutcome, JobKind, LaunchRequest, Launched, Template, TemplateKind};

/// Default cap on the launch body (1 MiB: below common gateway/ingress body limits).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1024 * 1024;

/// Builds an [`AapProvider`].
#[must_use]
pub struct AapProviderBuilder {
    api: Arc<dyn AapApi>,
    names: TemplateNames,
    clock: Arc<dyn Clock>,
    max_payload_bytes: usize,
    lookup_window: Duration,
    clock_skew: Duration,
}

impl fmt::Debug for AapProviderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AapProviderBuilder")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl AapProviderBuilder {
    /// Replaces the template naming rules.
    pub fn templates(mut self, names: TemplateNames) -> Self {
        self.names = names;
        self
    }

    /// Explicit provision template (wins over the prefix).
    pub fn provision_template(mut self, name: impl Into<String>) -> Self {
        self.names = self.names.provision(name);
        self
    }

    /// Explicit deprovision template (wins over the prefix).
    pub fn deprovision_template(mut self, name: impl Into<String>) -> Self {
        self.names = self.names.deprovision(name);
        self
    }

    /// Template prefix (`{prefix}-{create|delete}-{kind}`).
    pub fn template_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.names = self.names.prefix(prefix);
        self
    }

    /// Adds a kind → template-suffix override (none built in; [`TemplateNames::osac`] has OSAC's).
    pub fn kind_suffix(mut self, kind: impl Into<String>, suffix: impl Into<String>) -> Self {
        self.names = self.names.kind_suffix(kind, suffix);
        self
    }

    /// The wall clock (default [`SystemClock`]) used to date launch attempts.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Refuse launch bodies above this size before any request (default 1 MiB).
    pub fn max_payload_bytes(mut self, bytes: usize) -> Self {
        self.max_payload_bytes = bytes;
        self
    }

    /// How far back an idempotency lookup searches when this process did not see the attempt
    /// start (default 24 h; never before the resource's `creationTimestamp`).
    pub fn lookup_window(mut self, window: Duration) -> Self {
        self.lookup_window = window;
        self
    }

    /// Allowance for clock skew between this host and AAP in lookups (default 5 min).
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = skew;
        self
    }

    /// Builds the provider.
    pub fn build(self) -> AapProvider {
        AapProvider {
            api: self.api,
            names: self.names,
            clock: self.clock,
            max_payload_bytes: self.max_payload_bytes,
            lookup_window: self.lookup_window,
            clock_skew: self.clock_skew,
            kinds: RwLock::new(HashMap::new()),
            attempts: Mutex::new(Attempts::default()),
            checked: RwLock::new(HashSet::new()),
        }
    }
}

/// The AAP [`ProvisioningProvider`].
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use provkit_aap::{AapClient, AapProvider};
/// use provkit_lifecycle::{LaunchContext, ProvisioningProvider, ResourceMeta, ResourceView};
/// let client = AapClient::builder("https://aap.example.com").token("t").build()?;
/// let provider = AapProvider::builder(client).template_prefix("osac").build();
/// let resource = ResourceView::new(ResourceMeta { kind: "VirtualNetwork".into(), name: "net-a".into(), namespace: Some("tenant".into()), uid: "uid-1".into(), ..Default::default() },
///     serde_json::json!({"kind": "VirtualNetwork", "metadata": {"name": "net-a"}, "spec": {}}));
/// let result = provider.trigger_provision(&resource, &LaunchContext::new()).await?; // osac-create-virtual-network
/// println!("launched job {}", result.job_id);
/// # Ok(()) }
/// ```
pub struct AapProvider {
    api: Arc<dyn AapApi>,
    names: TemplateNames,
    clock: Arc<dyn Clock>,
    max_payload_bytes: usize,
    lookup_window: Duration,
    clock_skew: Duration,
    kinds: RwLock<HashMap<u64, JobKind>>,
    attempts: Mutex<Attempts>,
    /// Templates whose launch requirements were checked and keep `extra_vars`.
    checked: RwLock<HashSet<(TemplateKind, u64)>>,
}

impl fmt::Debug for AapProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AapProvider")
            .field("names", &self.names)
            .field("max_payload_bytes", &self.max_payload_bytes)
            .finish_non_exhaustive()
    }
}

/// Something that can serve as the provider's AAP API.
pub trait IntoAapApi {
    /// Converts into a shared API handle.
    fn into_api(self) -> Arc<dyn AapApi>;
}

impl IntoAapApi for AapClient {
    fn into_api(self) -> Arc<dyn AapApi> {
        Arc::new(self)
    }
}

impl IntoAapApi for Arc<dyn AapApi> {
    fn into_api(self) -> Arc<dyn AapApi> {
        self
    }
}

/// `text` without the ` (request id …)` of every AAP error in `error`'s source chain.
fn without_request_ids(error: &ProviderError, mut text: String) -> String {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(id) = e.downcast_ref::<Error>().and_then(Error::request_id) {
            text = text.replace(&format!(" (request id {id})"), "");
        }
        current = e.source();
    }
    text
}

/// How long a 429 without `Retry-After` holds the engine off.
pub const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(10);

/// AAP asks callers to hold off — a 429, a 503 with `Retry-After`, or the client's open circuit
/// breaker: the engine's rate-limit outcome (requeue after the wait, nothing recorded).
fn throttled(err: &Error) -> Option<Duration> {
    err.throttle(DEFAULT_RATE_LIMIT_WAIT)
}

// Provider errors name what failed and, in a few words, why (`Error::brief`); the AAP error is
// their `source`, so its own message (request, status, request id, the server's text) appears once
// in an error chain, never twice.

fn certain(message: &str, err: Error) -> ProviderError {
    ProviderError::launch_not_made(format!("{message}: {}", err.brief()), Some(Box::new(err)))
}

/// An [`ProviderError::Other`] for `err` after `context`.
fn other(context: &str, err: Error) -> ProviderError {
    ProviderError::Other {
        message: format!("{context}: {}", err.brief()),
        source: Some(Box::new(err)),
    }
}

/// `err` with `context` in front of its message and its source kept: one error, not a second
/// layer repeating the first. Typed errors (rate limits, not found) are kept as they are.
fn in_context(context: &str, err: ProviderError) -> ProviderError {
    match err {
        ProviderError::Other { message, source } => ProviderError::Other {
            message: format!("{context}: {message}"),
            source,
        },
        ProviderError::LaunchNotMade { message, source } => ProviderError::LaunchNotMade {
            message: format!("{context}: {message}"),
            source,
        },
        ProviderError::OutcomeUnknown { message, source } => ProviderError::OutcomeUnknown {
            message: format!("{context}: {message}"),
            source,
        },
        typed => typed,
    }
}

fn launch_error(kind: TemplateKind, err: Error) -> ProviderError {
    let what = match kind {
        TemplateKind::JobTemplate => "job template",
        TemplateKind::WorkflowJobTemplate => "workflow template",
    };
    if let Some(wait) = throttled(&err) {
        return ProviderError::rate_limited(wait);
    }
    let message = format!("failed to launch {what}");
    if err.is_outcome_unknown() {
        ProviderError::outcome_unknown(format!("{message}: {}", err.brief()), Some(Box::new(err)))
    } else {
        certain(&message, err)
    }
}

/// Maps a read error about `what`: only AWX's authoritative "No … matches the given query." 404
/// is [`ProviderError::NotFound`] (the object is gone); a throttle is a rate limit; anything else
/// is an error to retry.
fn query_error(what: String, err: Error) -> ProviderError {
    if err.is_no_match() {
        ProviderError::not_found_with_source(what, err)
    } else if let Some(wait) = throttled(&err) {
        ProviderError::rate_limited(wait)
    } else {
        other(&what, err)
    }
}

impl AapProvider {
    /// Starts a builder (no template names configured yet).
    pub fn builder(api: impl IntoAapApi) -> AapProviderBuilder {
        AapProviderBuilder {
            api: api.into_api(),
            names: TemplateNames::default(),
            clock: Arc::new(SystemClock),
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            lookup_window: Duration::from_secs(24 * 3600),
            clock_skew: Duration::from_secs(300),
        }
    }

    /// Go's `NewAAPProvider`: explicit template names.
    pub fn with_templates(
        api: impl IntoAapApi,
        provision: impl Into<String>,
        deprovision: impl Into<String>,
    ) -> Self {
        Self::builder(api)
            .templates(TemplateNames::explicit(provision, deprovision))
            .build()
    }

    /// Go's `NewAAPProviderWithPrefix`: names derived from a prefix, with no kind overrides
    /// (OSAC users: [`AapProvider::osac`]).
    pub fn with_prefix(api: impl IntoAapApi, prefix: impl Into<String>) -> Self {
        Self::builder(api)
            .templates(TemplateNames::with_prefix(prefix))
            .build()
    }

    /// The OSAC preset: the template names the Go OSAC operator derives ([`TemplateNames::osac`]:
    /// prefix `osac`, `ClusterOrder` → `osac-create-hosted-cluster`). Migrating from
    /// `with_prefix(api, "osac")` before the preset existed is this one call.
    pub fn osac(api: impl IntoAapApi) -> Self {
        Self::builder(api).templates(TemplateNames::osac()).build()
    }

    /// The naming rules.
    pub fn template_names(&self) -> &TemplateNames {
        &self.names
    }

    fn template_name(
        &self,
        action: TemplateAction,
        resource: &ResourceView,
    ) -> Result<String, ProviderError> {
        self.names
            .resolve(action, &resource.kind)
            .map_err(|e| ProviderError::launch_not_made(e.to_string(), None))
    }

    async fn template(&self, name: &str) -> Result<Template, ProviderError> {
        self.api
            .get_template(name)
            .await
            .map_err(|err| match throttled(&err) {
                Some(wait) => ProviderError::rate_limited(wait),
                None => certain(&format!("failed to get template {name:?}"), err),
            })
    }

    /// Attempts made at or before this instant are forgotten (`now - lookup_window`).
    fn horizon(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - chrono::Duration::from_std(self.lookup_window).unwrap_or(chrono::Duration::days(1))
    }

    fn remember_kind(&self, id: u64, kind: JobKind) {
        self.kinds
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, kind);
    }

    async fn launch(
        &self,
        name: &str,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<Launch, ProviderError> {
        let template = self.template(name).await?;
        let vars = resource
            .json()
            .map_err(BoxError::from)
            .and_then(|json| build_extra_vars(json, ctx).map_err(BoxError::from))
            .map_err(|e| {
                // Flattened (no source): the message already holds the whole chain.
                ProviderError::launch_not_made(
                    format!(
                        "failed to extract extra vars: {}",
                        provkit_lifecycle::ErrorChain(&*e)
                    ),
                    None,
                )
            })?;
        let request = LaunchRequest::new(vars);
        let size = encoded_len(&request);
        if size > self.max_payload_bytes {
            return Err(ProviderError::launch_not_made(
                format!(
                    "launch payload for {} is {size} bytes, above the {}-byte limit; nothing was sent to AAP",
                    resource.display_name(),
                    self.max_payload_bytes
                ),
                None,
            ));
        }
        self.check_template(&template).await?;
        if let Some(key) = &ctx.idempotency_key {
            let now = self.clock.now();
            let mut attempts = self
                .attempts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            attempts.record(key.as_str(), now, self.horizon(now));
        }
        let launched = self
            .api
            .launch(&template, &request)
            .await
            .map_err(|e| launch_error(template.kind, e))?;
        self.remember_kind(launched.id, launched.kind);
        if launched.ignored_fields.contains_key("extra_vars") {
            return Ok(Launch::PayloadIgnored(
                self.cancel_payloadless(&template, &launched).await,
                launched,
            ));
        }
        Ok(Launch::Ok(launched))
    }

    /// Before the first launch of `template`: its launch requirements must keep `extra_vars`.
    async fn check_template(&self, template: &Template) -> Result<(), ProviderError> {
        let key = (template.kind, template.id);
        if self
            .checked
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&key)
        {
            return Ok(());
        }
        let requirements = self
            .api
            .launch_requirements(template)
            .await
            .map_err(|err| match throttled(&err) {
                Some(wait) => ProviderError::rate_limited(wait),
                None => certain("failed to read the template's launch requirements", err),
            })?;
        requirements
            .check(template)
            .map_err(|err| certain("refusing to launch", err))?;
        self.checked
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key);
        Ok(())
    }

    /// AAP accepted a launch but dropped its `extra_vars`: forget the template's check, cancel
    /// the job (a 405 means it already ended, which changes nothing) and describe what happened.
    async fn cancel_payloadless(&self, template: &Template, launched: &Launched) -> String {
        self.checked
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&(template.kind, template.id));
        let canceled = match self.api.cancel(launched.kind, launched.id).await {
            Ok(CancelOutcome::Accepted) => "canceled".to_owned(),
            Ok(CancelOutcome::AlreadyFinished) => {
                "already finished (cancel answered 405)".to_owned()
            }
            Err(err) => {
                tracing::warn!(job_id = launched.id, error = %provkit_lifecycle::ErrorChain(&err), "cancel of a job without its payload failed");
                format!("not canceled ({})", err.brief())
            }
        };
        tracing::warn!(
            job_id = launched.id,
            template = %template.name,
            "AAP ignored the launch's extra_vars; job {canceled}"
        );
        format!(
            "AAP ignored the launch's extra_vars: {} {:?} (id {}) does not prompt for variables on launch; job {} {canceled} so it does not run without its payload; enable \"Prompt on launch\" for Variables (ask_variables_on_launch) on the template",
            template.kind.as_str(),
            template.name,
            template.id,
            launched.id
        )
    }

    /// A recorded job id as an AAP id. A non-numeric id is an error, not "purged": the engine
    /// retries the poll and never relaunches because of it.
    fn parse_id(job_id: &str) -> Result<u64, ProviderError> {
        job_id.trim().parse::<u64>().map_err(|_| {
            ProviderError::other(format!(
                "job id {job_id:?} is not an AAP job id (AAP ids are decimal numbers)"
            ))
        })
    }

    /// The kind of job `id`: remembered, or resolved with one `unified_jobs/?id=` request.
    async fn kind_of(&self, id: u64) -> Result<JobKind, ProviderError> {
        if let Some(kind) = self
            .kinds
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
        {
            return Ok(*kind);
        }
        match self.api.find_job_kind(id).await {
            Ok(Some(kind)) => {
                self.remember_kind(id, kind);
                Ok(kind)
            }
            // Not listed: the job detail decides (its "No Job matches" 404 is authoritative).
            Ok(None) => Ok(JobKind::Job),
            Err(err) => Err(query_error(format!("failed to get job: AAP job {id}"), err)),
        }
    }

    async fn status(&self, job_id: &str) -> Result<ProvisionStatus, ProviderError> {
        let id = Self::parse_id(job_id)?;
        let kind = self.kind_of(id).await?;
        let job = self.api.get_unified(kind, id).await.map_err(|e| {
            query_error(format!("failed to get job: AAP {} {id}", kind.as_str()), e)
        })?;
        Ok(provision_status_with_outputs(self.api.as_ref(), job_id, &job).await)
    }

    async fn since(&self, resource: &ResourceView, key: &IdempotencyKey) -> DateTime<Utc> {
        let skew =
            chrono::Duration::from_std(self.clock_skew).unwrap_or(chrono::Duration::minutes(5));
        let horizon = self.horizon(self.clock.now());
        let remembered = self
            .attempts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key.as_str(), horizon);
        if let Some(at) = remembered {
            return at - skew;
        }
        let window =
            chrono::Duration::from_std(self.lookup_window).unwrap_or(chrono::Duration::days(1));
        let mut since = self.clock.now() - window;
        let created = resource
            .json()
            .ok()
            .and_then(|json| json.pointer("/metadata/creationTimestamp"))
            .and_then(serde_json::Value::as_str)
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.with_timezone(&Utc));
        if let Some(created) = created {
            since = since.max(created);
        }
        since - skew
    }
}

#[async_trait::async_trait]
impl ProvisioningProvider for AapProvider {
    fn name(&self) -> &str {
        "aap"
    }

    /// The error text without AAP's per-request `(request id …)` (it differs on every
    /// request; it stays in the error's `Display` and the `aap.request` span for logs).
    fn error_status_text(&self, error: &ProviderError, text: String) -> String {
        without_request_ids(error, text)
    }

    async fn trigger_provision(
        &self,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<ProvisionResult, ProviderError> {
        let name = self.template_name(TemplateAction::Create, resource)?;
        match self.launch(&name, resource, ctx).await? {
            Launch::Ok(launched) => Ok(ProvisionResult::new(
                launched.id.to_string(),
                JobState::Pending,
                "Provisioning job triggered",
            )),
            Launch::PayloadIgnored(message, launched) => Ok(ProvisionResult::new(
                launched.id.to_string(),
                JobState::Failed,
                message,
            )),
        }
    }

    async fn provision_status(
        &self,
        _resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(job_id).await
    }

    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        let mut provision_status = None;
        // A provision job recorded in a final state cannot run any more: nothing to cancel,
        // and nothing to read (one request per deletion saved).
        if let Some(latest) = find_latest_job_by_type(jobs, &JobType::Provision)
            .filter(|j| j.job_id.trim().parse::<u64>().is_ok())
            .filter(|j| !j.state.is_terminal())
        {
            match self.status(&latest.job_id).await {
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(in_context("failed to get provision job status", err)),
                Ok(st) if st.state.is_terminal() => provision_status = Some(st),
                Ok(st) => {
                    let id = Self::parse_id(&latest.job_id)?;
                    let kind = self.kind_of(id).await?;
                    match self.api.cancel(kind, id).await {
                        Ok(CancelOutcome::Accepted) => {
                            tracing::info!(
                                job_id = id,
                                "cancel of the running provision job accepted; waiting for it to stop"
                            );
                            return Ok(
                                DeprovisionResult::waiting(true).with_provision_job_status(st)
                            );
                        }
                        Ok(CancelOutcome::AlreadyFinished) => provision_status = Some(st),
                        Err(err) if err.is_no_match() => provision_status = Some(st),
                        Err(err) => {
                            if let Some(wait) = throttled(&err) {
                                return Err(ProviderError::rate_limited(wait));
                            }
                            // Go's wrapping, word for word.
                            return Err(other(
                                "failed to cancel provision job: failed to cancel job",
                                err,
                            ));
                        }
                    }
                }
            }
        }
        let name = self.template_name(TemplateAction::Delete, resource)?;
        // A deprovision job whose payload was dropped is canceled; its poll reports it.
        let launched = match self.launch(&name, resource, ctx).await? {
            Launch::Ok(launched) | Launch::PayloadIgnored(_, launched) => launched,
        };
        let mut result = DeprovisionResult::triggered(launched.id.to_string(), true);
        if let Some(st) = provision_status {
            result = result.with_provision_job_status(st);
        }
        Ok(result)
    }

    async fn deprovision_status(
        &self,
        _resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(job_id).await
    }

    fn idempotency_support(&self) -> IdempotencySupport {
        IdempotencySupport::Lookup
    }

    async fn find_job_by_idempotency_key(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.find_job_by_idempotency_key_since(resource, job_type, key, None)
            .await
    }

    /// Lists the template's jobs created since `since` minus the clock-skew allowance (or, when
    /// `since` is `None`, since this process's first launch of `key`, else within the lookup
    /// window and not before the resource's creation), newest first, until the key is found.
    /// Reaching the client's list cap without a match is an error, never "not found".
    async fn find_job_by_idempotency_key_since(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<DateTime<Utc>>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let action = match job_type {
            JobType::Provision => TemplateAction::Create,
            JobType::Deprovision => TemplateAction::Delete,
            JobType::Other(_) => return Ok(None),
        };
        let name = self.template_name(action, resource)?;
        let template = self
            .template(&name)
            .await
            .map_err(|e| in_context("idempotency lookup", e))?;
        let since = match since {
            Some(at) => {
                at - chrono::Duration::from_std(self.clock_skew)
                    .unwrap_or(chrono::Duration::minutes(5))
            }
            None => self.since(resource, key).await,
        };
        // Newest first, stopping at the first page holding the key (see
        // `AapApi::newest_job_with_key`): one request in the usual case.
        let find = |kind: JobKind| async move {
            self.api
                .newest_job_with_key(kind, template.kind, template.id, since, key.as_str())
                .await
                .map_err(|e| {
                    query_error(
                        format!(
                            "idempotency lookup: failed to list the jobs of template {}",
                            template.id
                        ),
                        e,
                    )
                })
        };
        let Some(job) = find(template.kind.job_kind()).await? else {
            return Ok(None);
        };
        // A sliced job template's children carry the key too; the launch created their workflow job.
        let job = if job.kind == JobKind::Job
            && template.kind == TemplateKind::JobTemplate
            && job.launch_type.as_deref() == Some("workflow")
        {
            find(JobKind::WorkflowJob).await?.unwrap_or(job)
        } else {
            job
        };
        self.remember_kind(job.id, job.kind);
        Ok(Some(FoundJob::new(
            job.id.to_string(),
            map_status(job.status.as_str()),
            job.status.as_str(),
        )))
    }
}

/// What a launch produced.
enum Launch {
    /// A job that received its payload.
    Ok(Launched),
    /// A job whose `extra_vars` AAP ignored (canceled); the message says so.
    PayloadIgnored(String, Launched),
}

/// The length of `value`'s JSON encoding, counted without building it (`usize::MAX` if it does not
/// serialise).
fn encoded_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::encoded_len;

    #[test]
    fn encoded_len_counts_the_bytes_serde_json_would_write() {
        let value = serde_json::json!({"extra_vars": {"name": "net-<a>", "n": [1, 2.5, null]}});
        let bytes = serde_json::to_vec(&value).unwrap_or_default();
        assert_eq!(encoded_len(&value), bytes.len());
        // A map with non-string keys does not serialise.
        let bad = std::collections::HashMap::from([((1u8, 2u8), 3u8)]);
        assert_eq!(encoded_len(&bad), usize::MAX);
    }
}
