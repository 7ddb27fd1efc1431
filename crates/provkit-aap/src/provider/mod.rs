//! [`AapProvider`]: a [`ProvisioningProvider`] that launches AAP job or workflow templates.
//!
//! - Template names: explicit and/or `{prefix}-{create|delete}-{kind}` ([`TemplateNames`]).
//! - extra_vars: the resource (`metadata.managedFields` removed) and the launch context's keys in
//!   the provider's [`Envelope`] (a named choice: OSAC's current `osac_job_vars` for
//!   [`AapProvider::osac`], the legacy `ansible_eda` event, or the neutral `provkit_job_vars` of
//!   the builder), the whole launch body capped ([`AapProviderBuilder::max_payload_bytes`]).
//! - Secrets: the launch context's secret values (admin kubeconfig, back-end passwords, fields
//!   marked secret) are sent — AWX keeps them in the job record — but never appear in this
//!   provider's errors or logs: a launch error that echoes one is redacted
//!   ([`provkit_lifecycle::Redactor`]).
//! - Status mapping of spec §4.4 ([`map_status`]); workflow jobs are polled and cancelled at
//!   `/workflow_jobs/` while the job id stays the bare number Go writes. The kind of each id is
//!   remembered (free for jobs this process launched) or follows from its template (cached); one
//!   `unified_jobs/?id=` request only when the job detail of that kind answers "No … matches"
//!   (a sliced job template's workflow job).
//! - Exactly-once launches: the idempotency key goes into extra_vars as
//!   [`IDEMPOTENCY_KEY_VAR`]; [`find_job_by_idempotency_key`](ProvisioningProvider::find_job_by_idempotency_key)
//!   lists the template's jobs of the attempt's window and matches the key client-side. With
//!   the attempt's intent time (`find_job_by_idempotency_key_since`), the window is bounded on
//!   both sides: a launch leaves the client only while AAP can still act on it before its
//!   [launch deadline](AapProviderBuilder::launch_deadline) (the deadline less
//!   [`max_launch_processing`](AapProviderBuilder::max_launch_processing), checked after the
//!   client's rate limiter), and the clock offset to AAP is measured from launch answers (before the first one, from
//!   one `Date` header of `GET ping/`), so the window is
//!   `[intent + offset.low, intent + deadline + offset.high]`, read oldest first, at most
//!   [`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call) pages per call.
//!   An intent this provider did not launch (another process's, or its own before a restart)
//!   is read only once that window has closed on AAP's clock — its launch may still be in
//!   AAP's hands — and is answered before that with a [`RetryLater`](provkit_lifecycle::RetryLater)
//!   error (the reconcile comes back at the window's end). With
//!   [`tag_attempts`](AapProviderBuilder::tag_attempts), an attempt on a job template that
//!   prompts for skip tags also carries its key as a skip tag, its intent records that
//!   ([`launch_marker`](ProvisioningProvider::launch_marker)), and its lookup is one query by
//!   the tag once the window has closed ([`find_job_by_marker`](ProvisioningProvider::find_job_by_marker)).
//! - Templates that would drop the payload: before the first launch of a template its launch
//!   requirements are read (`GET …/launch/`, cached per template) and a template that does not
//!   prompt for variables is refused with [`Error::TemplateIgnoresExtraVars`]. A launch answer
//!   that still lists `extra_vars` under `ignored_fields` gets its job canceled and the attempt
//!   reported `Failed` with that message.
//! - Purged jobs: only the job detail's authoritative 404 (answered by AWX's API: see [`Error::is_no_match`])
//!   is [`ProviderError::NotFound`]; a non-numeric id, a decoding failure or any other 404 is a
//!   plain error (retried by the engine, never a relaunch).
//! - Deprovision: cancel a running provision job first (spec §4.5).

mod attempts;
mod envelope;
mod extra_vars;
mod inherited;
mod naming;
mod shared_read;
mod skew;
mod status;
mod tagged;
mod windows;

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
pub use crate::skip_tag::with_skip_tag;
use attempts::Attempts;
pub use envelope::{Envelope, UnknownEnvelope};
pub use extra_vars::{ExtraVarsError, build_extra_vars, payload};
pub use naming::{NamingError, OSAC_KIND_SUFFIXES, TemplateAction, TemplateNames, kebab_case};
use skew::SkewEstimator;
pub use status::{
    MAX_EVENT_DETAILS_BYTES, MAX_FAILED_EVENTS, map_status, provision_status,
    provision_status_with_outputs,
};
use windows::Windows;

use crate::api::AapApi;
use crate::client::AapClient;
use crate::error::Error;
use crate::types::{CancelOutcome, JobKind, LaunchRequest, Launched, Template, TemplateKind};

/// Default [`AapProviderBuilder::launch_deadline`].
pub const DEFAULT_LAUNCH_DEADLINE: Duration = Duration::from_secs(60);

/// `Date` probes a provider makes before its offset to AAP is measured (a failed probe is
/// tried again by a later lookup, up to this many).
const MAX_CLOCK_PROBES: u32 = 3;

/// Default cap on the launch body (1 MiB: below common gateway/ingress body limits).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 1024 * 1024;

/// Builds an [`AapProvider`].
#[must_use]
pub struct AapProviderBuilder {
    api: Arc<dyn AapApi>,
    names: TemplateNames,
    envelope: Envelope,
    clock: Arc<dyn Clock>,
    max_payload_bytes: usize,
    lookup_window: Duration,
    clock_skew: Duration,
    launch_deadline: Duration,
    max_launch_processing: Option<Duration>,
    tag_attempts: bool,
}

impl fmt::Debug for AapProviderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AapProviderBuilder")
            .field("names", &self.names)
            .field("envelope", &self.envelope)
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

    /// The extra_vars [`Envelope`] (default [`Envelope::Neutral`]; [`AapProvider::osac`] uses
    /// [`Envelope::OsacJobVars`]).
    pub fn envelope(mut self, envelope: Envelope) -> Self {
        self.envelope = envelope;
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

    /// Allowance for clock skew between this host and AAP in lookups until the skew is measured
    /// (default 5 min). The offset is measured from launch answers (the `created` of the
    /// launched job against the local times around the request) and, before the first one, from
    /// one `Date` header (`GET ping/`, whole seconds); each sample is widened by a drift margin of
    /// 50 ms and 1 ms per second of its age, and their intersection is used. The allowance
    /// applies only while no probe answered (docs/aap.md of the repository describes the
    /// failure modes).
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = skew;
        self
    }

    /// How long after its durable launch intent an attempt's job, if any, exists on AAP
    /// (default 60 s): a lookup of an intent's job ends at `intent + deadline` (plus the skew
    /// allowance) instead of at the lookup's own time — for a launch this provider sent and did
    /// not see answered, at `sent + deadline`. To keep that true, a launch request may leave
    /// the client only until `intent + deadline −` [`max_launch_processing`](Self::max_launch_processing)
    /// (checked where the request is written, after the client's rate limiter and circuit
    /// breaker: later, it is refused with nothing sent and the next attempt records a fresh
    /// intent), and one still unanswered at `intent + deadline` is abandoned (outcome unknown).
    pub fn launch_deadline(mut self, deadline: Duration) -> Self {
        self.launch_deadline = deadline;
        self
    }

    /// How long after a launch request left this client AWX may still create its job (default:
    /// half the [`launch_deadline`](Self::launch_deadline)): AWX finishes a request whose
    /// client gave up, so this is the client's request timeout plus the longest wait of a
    /// request in front of AWX (a proxy's or the gateway's queue). Launches are sent only
    /// during the first `launch_deadline − max_launch_processing` after their intent; a value
    /// not below the deadline refuses every launch (with that reason, nothing sent). Too small a
    /// value is the exactly-once failure mode the repository's docs/aap.md calls (3): a job
    /// created after its window was read is missed and the attempt launched a second time.
    pub fn max_launch_processing(mut self, processing: Duration) -> Self {
        self.max_launch_processing = Some(processing);
        self
    }

    /// Tags each launch attempt with its idempotency key as a skip tag (default: off), so that
    /// the attempt's idempotency lookup is one exact query
    /// (`jobs/?job_template=<id>&skip_tags__contains=<key>`) instead of a read of the attempt's
    /// launch window, whatever the template's launch rate.
    ///
    /// Applies to job templates with "Prompt on launch" for skip tags
    /// (`ask_skip_tags_on_launch`); the launch repeats the template's own skip tags (read again
    /// at most a minute before a launch) and adds the key, which no task carries, so nothing
    /// is skipped that was not before. Other templates (workflow templates keep their prompts
    /// where AWX cannot filter them) are looked up by their window as before. The attempt's
    /// durable intent records the tag before its launch
    /// ([`LaunchIntent::marker`](provkit_core::LaunchIntent::marker)), and only intents that
    /// recorded it are looked up by it.
    ///
    /// Failure mode: a template whose skip-tag prompt is turned off and on again within one
    /// launch's deadline, while a tagged launch's answer is lost, can make an attempt launch
    /// twice (turning it off is detected: the lookup then reads the window).
    pub fn tag_attempts(mut self, on: bool) -> Self {
        self.tag_attempts = on;
        self
    }

    /// Builds the provider.
    pub fn build(self) -> AapProvider {
        AapProvider {
            api: self.api,
            names: self.names,
            envelope: self.envelope,
            clock: self.clock,
            max_payload_bytes: self.max_payload_bytes,
            lookup_window: self.lookup_window,
            clock_skew: self.clock_skew,
            launch_deadline: self.launch_deadline,
            max_launch_processing: self
                .max_launch_processing
                .unwrap_or(self.launch_deadline / 2),
            skew: Mutex::new(SkewEstimator::default()),
            clock_probes: tokio::sync::Mutex::new(0),
            windows: Mutex::new(Windows::default()),
            inherited: Mutex::new(inherited::Inherited::with_margin(
                chrono::Duration::from_std(self.launch_deadline)
                    .unwrap_or(chrono::Duration::seconds(60)),
            )),
            kinds: RwLock::new(HashMap::new()),
            attempts: Mutex::new(Attempts::default()),
            checked: RwLock::new(HashSet::new()),
            tag_attempts: self.tag_attempts,
            skip_tags: Mutex::new(tagged::SkipTags::default()),
            prompt_reads: tokio::sync::Mutex::new(()),
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
    envelope: Envelope,
    clock: Arc<dyn Clock>,
    max_payload_bytes: usize,
    lookup_window: Duration,
    clock_skew: Duration,
    launch_deadline: Duration,
    /// How long after a launch request leaves the client AWX may still create its job.
    max_launch_processing: Duration,
    /// AAP's clock against this host's, measured from launch answers.
    skew: Mutex<SkewEstimator>,
    /// `Date` probes made while the offset was unmeasured (one at a time, at most
    /// [`MAX_CLOCK_PROBES`]).
    clock_probes: tokio::sync::Mutex<u32>,
    /// The window of each intent being looked up, fixed at its first lookup.
    windows: Mutex<Windows>,
    /// The inherited intents being looked up, answered by shared reads of their windows.
    inherited: Mutex<inherited::Inherited>,
    kinds: RwLock<HashMap<u64, JobKind>>,
    attempts: Mutex<Attempts>,
    /// Templates whose launch requirements were checked and keep `extra_vars`.
    checked: RwLock<HashSet<(TemplateKind, u64)>>,
    /// Launch attempts carry their key as a skip tag ([`AapProviderBuilder::tag_attempts`]).
    tag_attempts: bool,
    /// What each template's launch requirements said of skip tags, and the tagged lookups.
    skip_tags: Mutex<tagged::SkipTags>,
    /// One read of a template's prompt for tagged lookups at a time.
    prompt_reads: tokio::sync::Mutex<()>,
}

impl fmt::Debug for AapProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AapProvider")
            .field("names", &self.names)
            .field("envelope", &self.envelope)
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

/// Maps a read error about `what`: only AWX's authoritative 404 ([`Error::is_no_match`])
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
            envelope: Envelope::default(),
            clock: Arc::new(SystemClock),
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            lookup_window: Duration::from_secs(24 * 3600),
            clock_skew: Duration::from_secs(300),
            launch_deadline: DEFAULT_LAUNCH_DEADLINE,
            max_launch_processing: None,
            tag_attempts: false,
        }
    }

    /// Go's `NewAAPProvider`: explicit template names, the builder's neutral [`Envelope`] (OSAC
    /// playbooks: [`AapProvider::osac`], or the builder with [`Envelope::OsacJobVars`]).
    pub fn with_templates(
        api: impl IntoAapApi,
        provision: impl Into<String>,
        deprovision: impl Into<String>,
    ) -> Self {
        Self::builder(api)
            .templates(TemplateNames::explicit(provision, deprovision))
            .build()
    }

    /// Go's `NewAAPProviderWithPrefix`: names derived from a prefix, with no kind overrides and
    /// the builder's neutral [`Envelope`] (OSAC users: [`AapProvider::osac`]). Like every shortcut
    /// constructor it reads the system clock; in tests with a `ManualClock` add
    /// [`with_clock`](Self::with_clock) (or use [`builder`](Self::builder)`.clock(..)`), or
    /// idempotency lookups and launch deadlines measure real time while the jobs run in virtual
    /// time.
    pub fn with_prefix(api: impl IntoAapApi, prefix: impl Into<String>) -> Self {
        Self::builder(api)
            .templates(TemplateNames::with_prefix(prefix))
            .build()
    }

    /// The OSAC preset: the template names the Go OSAC operator derives ([`TemplateNames::osac`]:
    /// prefix `osac`, `ClusterOrder` → `osac-create-hosted-cluster`) and the extra_vars of its
    /// newest `extractExtraVars` ([`Envelope::OsacJobVars`]: `osac_job_vars.resource`, since
    /// osac-project/osac `232f1752e`). Migrating from `with_prefix(api, "osac")` is this one call;
    /// playbooks not yet migrated to `osac_job_vars` keep the old shape with
    /// `AapProvider::builder(api).templates(TemplateNames::osac()).envelope(Envelope::AnsibleEda)`.
    pub fn osac(api: impl IntoAapApi) -> Self {
        Self::builder(api)
            .templates(TemplateNames::osac())
            .envelope(Envelope::OsacJobVars)
            .build()
    }

    /// The same provider reading `clock` (as [`AapProviderBuilder::clock`]): the shortcut
    /// constructors ([`with_prefix`](Self::with_prefix), [`osac`](Self::osac),
    /// [`with_templates`](Self::with_templates)) start on the system clock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use provkit_aap::{AapClient, AapProvider};
    /// use provkit_core::ManualClock;
    /// let client = AapClient::builder("https://aap.example.com").token("t").build().unwrap();
    /// let clock = Arc::new(ManualClock::new(chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()));
    /// let provider = AapProvider::with_prefix(client, "osac").with_clock(clock);
    /// # let _ = provider;
    /// ```
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The naming rules.
    pub fn template_names(&self) -> &TemplateNames {
        &self.names
    }

    /// The extra_vars envelope.
    pub fn envelope(&self) -> Envelope {
        self.envelope
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

    /// The name and the template whose jobs are `resource`'s jobs of `job_type`, for a lookup;
    /// `None` for a job type this provider launches no job of.
    async fn lookup_template(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
    ) -> Result<Option<(String, Template)>, ProviderError> {
        let Some(action) = lookup_action(job_type) else {
            return Ok(None);
        };
        let name = self.template_name(action, resource)?;
        let template = self
            .template(&name)
            .await
            .map_err(|e| in_context("idempotency lookup", e))?;
        Ok(Some((name, template)))
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
        let redactor = ctx.redactor();
        self.launch_unredacted(name, resource, ctx)
            .await
            .map_err(|e| e.redacted(&redactor))
    }

    async fn launch_unredacted(
        &self,
        name: &str,
        resource: &ResourceView,
        ctx: &LaunchContext,
    ) -> Result<Launch, ProviderError> {
        // Until the launch request is attempted, nothing is sent for this attempt's intent.
        let intent = attempt_intent(ctx);
        self.mark_not_sent(intent, true);
        let template = self.template(name).await?;
        let envelope = self.envelope;
        let vars = resource
            .json()
            .map_err(BoxError::from)
            .and_then(|json| envelope.build(json, ctx).map_err(BoxError::from))
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
        let mut request = LaunchRequest::new(vars);
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
        self.check_template(name, &template).await?;
        if let Some(tag) = &ctx.attempt_marker {
            // The intent promised this tag: a launch without it would be missed by the lookup.
            // A marker other than the attempt's key is not this provider's: refused unsent too.
            let own = ctx
                .idempotency_key
                .as_ref()
                .is_some_and(|k| k.as_str() == tag);
            let Some(skip_tags) = self.tagged_launch_value(name, tag).filter(|_| own) else {
                return Err(ProviderError::launch_not_made(
                    format!(
                        "launch not sent: the attempt's intent records that its launch carries the skip tag {tag:?}, but template {name:?} no longer prompts for skip tags (ask_skip_tags_on_launch), or the marker is not this provider's (its key); the next attempt records a fresh intent"
                    ),
                    None,
                ));
            };
            request.skip_tags = Some(skip_tags);
        }
        let tagged = request.skip_tags.is_some();
        if let Some(key) = &ctx.idempotency_key {
            let now = self.clock.now();
            let mut attempts = self
                .attempts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            attempts.record(key.as_str(), now, self.horizon(now));
        }
        let sent = self.clock.now();
        let launched = match ctx.attempt_started {
            None => {
                self.mark_not_sent(intent, false);
                self.api.launch(&template, &request).await
            }
            Some(at) => {
                let left = |until: DateTime<Utc>| {
                    (until - sent).to_std().ok().filter(|d| !d.is_zero())
                };
                let send_until = self.send_window().map(|window| at + window);
                let (Some(to_send), Some(to_answer)) =
                    (send_until.and_then(left), left(at + self.deadline()))
                else {
                    return Err(ProviderError::launch_not_made(
                        format!(
                            "launch not sent: the attempt's intent is older than its send window ({:?}: the launch deadline {:?} less the longest launch processing {:?}); the next attempt records a fresh intent",
                            self.launch_deadline.saturating_sub(self.max_launch_processing),
                            self.launch_deadline,
                            self.max_launch_processing
                        ),
                        None,
                    ));
                };
                self.mark_not_sent(intent, false);
                let now = tokio::time::Instant::now();
                let request = request.send_by(now + to_send);
                match tokio::time::timeout(to_answer, self.api.launch(&template, &request)).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        return Err(ProviderError::outcome_unknown(
                            format!(
                                "launch abandoned unanswered at the launch deadline ({:?} after the attempt's intent)",
                                self.launch_deadline
                            ),
                            None,
                        ));
                    }
                }
            }
        }
        .map_err(|e| launch_error(template.kind, e))
        .inspect(|_| self.note_launch(intent, sent))
        .inspect_err(|e| {
            self.note_launch(intent, sent);
            if e.launch_certainty() == provkit_lifecycle::LaunchCertainty::NotMade {
                self.mark_not_sent(intent, true);
            }
        })?;
        if let Some(created) = launched.created {
            let received = self.clock.now();
            self.skew
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .observe(sent, received, created);
        }
        self.remember_kind(launched.id, launched.kind);
        if tagged && launched.ignored_fields.contains_key("skip_tags") {
            // The job exists without the tag (its id is answered here, so nothing is lost);
            // later attempts carry none until the template prompts again.
            tracing::warn!(template = %name, job = launched.id, "AAP ignored the launch's skip tags: the template no longer prompts for them");
            self.tag_ignored(name);
        }
        if launched.ignored_fields.contains_key("extra_vars") {
            return Ok(Launch::PayloadIgnored(
                self.cancel_payloadless(&template, &launched).await,
                launched,
            ));
        }
        Ok(Launch::Ok(launched))
    }

    /// Before the first launch of `template` (named `name`): its launch requirements must keep
    /// `extra_vars`. With [tagged attempts](AapProviderBuilder::tag_attempts), they are read
    /// again when older than a minute (the template's own skip tags, which a tagged launch repeats).
    async fn check_template(&self, name: &str, template: &Template) -> Result<(), ProviderError> {
        let key = (template.kind, template.id);
        if self
            .checked
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&key)
            && !self.prompt_stale(name)
        {
            return Ok(());
        }
        let read = (tokio::time::Instant::now(), self.clock.now());
        let requirements = self
            .api
            .launch_requirements(template)
            .await
            .map_err(|err| match throttled(&err) {
                Some(wait) => ProviderError::rate_limited(wait),
                None => certain("failed to read the template's launch requirements", err),
            })?;
        self.note_requirements(name, template, &requirements, read);
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

    /// Notes that the launch of `intent` was sent at `sent` and ended now.
    fn note_launch(&self, intent: Option<(&str, DateTime<Utc>)>, sent: DateTime<Utc>) {
        if let Some((key, at)) = intent {
            let ended = self.clock.now();
            self.windows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .launched(key, at, (sent, ended));
        }
    }

    /// Notes whether the launch of `intent` (key, intent time) is certainly not sent.
    fn mark_not_sent(&self, intent: Option<(&str, DateTime<Utc>)>, not_sent: bool) {
        if let Some((key, at)) = intent {
            self.windows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .not_sent(key, at, not_sent);
        }
    }

    /// [`AapProviderBuilder::launch_deadline`] as a time delta.
    fn deadline(&self) -> chrono::TimeDelta {
        chrono::Duration::from_std(self.launch_deadline).unwrap_or(chrono::Duration::seconds(60))
    }

    /// How long after its intent a launch may leave the client: the deadline less the longest
    /// launch processing; `None` when that leaves no time.
    fn send_window(&self) -> Option<chrono::TimeDelta> {
        self.launch_deadline
            .checked_sub(self.max_launch_processing)
            .filter(|window| !window.is_zero())
            .and_then(|window| chrono::Duration::from_std(window).ok())
    }

    /// The kind of job `id` if remembered (launched or looked up by this process).
    fn remembered_kind(&self, id: u64) -> Option<JobKind> {
        self.kinds
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .copied()
    }

    /// The kind of the jobs `action`'s template of `resource` creates, from the client's template
    /// cache: a workflow job template's jobs are workflow jobs, a job template's are jobs (unless
    /// it is sliced; the job detail's 404 then sends the caller to `unified_jobs/?id=`). `None`
    /// when the template is unknown.
    /// The kind of the jobs `action`'s template of `resource` launches (the template is cached
    /// by the client). `None` when no such template can be named or read for good (not found,
    /// ambiguous, forbidden); a failure to read it (a fault, the open circuit) is the status
    /// read's error: the next poll asks again, instead of one `unified_jobs/?id=` request per
    /// job while AAP is failing (issue 33).
    async fn template_job_kind(
        &self,
        action: TemplateAction,
        resource: &ResourceView,
    ) -> Result<Option<JobKind>, ProviderError> {
        let Ok(name) = self.template_name(action, resource) else {
            return Ok(None);
        };
        match self.api.get_template(&name).await {
            Ok(template) => Ok(Some(template.kind.job_kind())),
            Err(
                Error::TemplateNotFound { .. }
                | Error::AmbiguousTemplate { .. }
                | Error::Forbidden { .. },
            ) => Ok(None),
            // Never `NotFound` (that would say the job is gone): a rate limit or an error.
            Err(err) => Err(match throttled(&err) {
                Some(wait) => ProviderError::rate_limited(wait),
                None => other(&format!("failed to get job: AAP template {name:?}"), err),
            }),
        }
    }

    /// The kind of job `id`: remembered, or resolved with one `unified_jobs/?id=` request.
    async fn kind_of(&self, id: u64) -> Result<JobKind, ProviderError> {
        if let Some(kind) = self.remembered_kind(id) {
            return Ok(kind);
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

    /// The status of job `job_id`, created by `action`'s template of `resource`. Its kind is
    /// remembered, else the template's (no request: the template is cached); only when the
    /// job detail of that kind answers "No … matches" (a sliced job template's workflow job, a
    /// template that changed kind) does `unified_jobs/?id=` decide.
    async fn status(
        &self,
        action: TemplateAction,
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        let id = Self::parse_id(job_id)?;
        let (kind, guessed) = match self.remembered_kind(id) {
            Some(kind) => (kind, false),
            None => match self.template_job_kind(action, resource).await? {
                Some(kind) => (kind, true),
                None => (self.kind_of(id).await?, false),
            },
        };
        let get = |kind: JobKind| async move {
            self.api.get_unified(kind, id).await.map_err(|e| {
                query_error(format!("failed to get job: AAP {} {id}", kind.as_str()), e)
            })
        };
        let job = match get(kind).await {
            Err(err) if guessed && err.is_not_found() => match self.kind_of(id).await? {
                other_kind if other_kind != kind => get(other_kind).await?,
                _ => return Err(err),
            },
            answer => answer?,
        };
        self.remember_kind(id, job.kind);
        Ok(provision_status_with_outputs(self.api.as_ref(), job_id, &job).await)
    }

    /// Before a lookup's window is derived from the clock offset: while nothing measured it
    /// (no launch answered yet, e.g. right after a restart), one `Date` probe (`GET ping/`)
    /// bounds it within about a second instead of the configured allowance. One probe at a
    /// time; concurrent lookups wait for it and use its sample.
    async fn measure_clock(&self) {
        let measured = || {
            self.skew
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_measured()
        };
        if measured() {
            return;
        }
        let mut probes = self.clock_probes.lock().await;
        if measured() || *probes >= MAX_CLOCK_PROBES {
            return;
        }
        *probes += 1;
        let sent = self.clock.now();
        match self.api.server_time().await {
            Ok(Some(date)) => {
                let received = self.clock.now();
                self.skew
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .observe_date(sent, received, date);
            }
            // No `Date` header: asking again will not help.
            Ok(None) => *probes = MAX_CLOCK_PROBES,
            Err(err) => {
                tracing::debug!(error = %err, "AAP clock probe failed; the configured clock-skew allowance applies");
            }
        }
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
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(TemplateAction::Create, resource, job_id).await
    }

    async fn trigger_deprovision(
        &self,
        resource: &ResourceView,
        jobs: &[JobStatus],
        ctx: &LaunchContext,
    ) -> Result<DeprovisionResult, ProviderError> {
        // Until the delete template's launch is sent, nothing is sent under this attempt's
        // intent — also when the deprovision only waits for a cancel below: a later lookup of
        // the intent by this provider needs no request (and no wait for its window).
        self.mark_not_sent(attempt_intent(ctx), true);
        let mut provision_status = None;
        // A provision job recorded in a final state cannot run any more: nothing to cancel,
        // and nothing to read (one request per deletion saved).
        if let Some(latest) = find_latest_job_by_type(jobs, &JobType::Provision)
            .filter(|j| j.job_id.trim().parse::<u64>().is_ok())
            .filter(|j| !j.state.is_terminal())
        {
            match self
                .status(TemplateAction::Create, resource, &latest.job_id)
                .await
            {
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
        resource: &ResourceView,
        job_id: &str,
    ) -> Result<ProvisionStatus, ProviderError> {
        self.status(TemplateAction::Delete, resource, job_id).await
    }

    fn idempotency_support(&self) -> IdempotencySupport {
        IdempotencySupport::Lookup
    }

    /// While the client's circuit breaker is open, the rest of its cool-down: the launch would
    /// be refused unsent (see [`AapClient::launch_refused_for`](crate::AapClient::launch_refused_for)).
    fn launch_refused_for(
        &self,
        _resource: &ResourceView,
        _job_type: &JobType,
    ) -> Option<Duration> {
        self.api.launch_refused_for()
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

    /// With [tagged attempts](AapProviderBuilder::tag_attempts): the attempt's key as a skip
    /// tag, when its template is a job template prompting for skip tags (its launch
    /// requirements are read here when not read within the last minute: the launch that
    /// follows would read them anyway). `None` when they cannot be read.
    async fn launch_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
    ) -> Option<String> {
        if !self.tag_attempts {
            return None;
        }
        let action = lookup_action(job_type)?;
        let name = self.template_name(action, resource).ok()?;
        if self.prompt_stale(&name) {
            let template = self.template(&name).await.ok()?;
            self.check_template(&name, &template).await.ok()?;
        }
        self.tag_for(&name, key)
    }

    /// One query by the skip tag the intent's launch carried (see
    /// [`tag_attempts`](AapProviderBuilder::tag_attempts)); where that cannot prove
    /// absence, the attempt's window is read as without a marker.
    async fn find_job_by_marker(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: DateTime<Utc>,
        marker: &str,
    ) -> Result<Option<FoundJob>, ProviderError> {
        self.tagged_lookup(resource, job_type, key, since, marker)
            .await
    }

    /// With `since` (the attempt's intent time): lists the template's jobs created from `since`
    /// plus the measured clock offset's low bound to `since` plus the launch deadline plus its
    /// high bound, oldest first, until the key is found or the window ends (the window is fixed
    /// at the intent's first lookup, so a lookup cut short continues where it stopped). An
    /// intent this provider did not launch (inherited) is read only once that window, and every
    /// inherited window overlapping it that this provider was asked about, has closed on AAP's
    /// clock (waiting at most one launch deadline past its own); before, the answer is an error
    /// with a [`RetryLater`](provkit_lifecycle::RetryLater) source and no request is made. Then
    /// one read of their span ([`AapApi::jobs_between`]) answers all of them. An intent this
    /// provider launched is first read between sending the launch and its answer (or giving
    /// up), from that end; when that read meets no job, the window from the send to the launch
    /// deadline after it is read like an inherited one, once closed (AWX finishes a launch
    /// whose client left, so its job can appear after the client gave up). Without
    /// it: since this process's first launch of `key`, else within the lookup window and not
    /// before the resource's creation, newest first, up to now.
    /// Reaching the client's list cap without a match is an error, never "not found".
    async fn find_job_by_idempotency_key_since(
        &self,
        resource: &ResourceView,
        job_type: &JobType,
        key: &IdempotencyKey,
        since: Option<DateTime<Utc>>,
    ) -> Result<Option<FoundJob>, ProviderError> {
        let Some((_, template)) = self.lookup_template(resource, job_type).await? else {
            return Ok(None);
        };
        // An intent's attempt: its job was created between the intent and the launch deadline
        // (AAP's clock: the measured offset's bounds), read oldest first up to that end. Without
        // an intent: since the attempt began (or the lookup window), newest first, up to now.
        let intent = since;
        if let Some(at) = intent
            && self
                .windows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_jobless(key.as_str(), at)
        {
            // This provider refused or was refused the intent's launch before any job existed,
            // or proved its own launch of it created none.
            return Ok(None);
        }
        let finished = || {
            if let Some(at) = intent {
                self.windows
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .done(key.as_str(), at);
            }
        };
        let mut inherited = None;
        let mut first_read = None;
        let (since, until) = match since {
            Some(at) => {
                self.measure_clock().await;
                let default = chrono::Duration::from_std(self.clock_skew)
                    .unwrap_or(chrono::Duration::minutes(5));
                let offset = self
                    .skew
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .bounds(default, self.clock.now());
                let mut windows = self
                    .windows
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // This provider's own launch of the intent bounds the job's creation more
                // tightly: between sending the request and its answer (or giving up on it).
                // Its job is expected just before the answer (or the failure) that ended it, so
                // that window is read first, from its end.
                let own = windows.launch_of(key.as_str(), at);
                // An intent time without a sub-second part may come from a writer that
                // truncated it to the second (provkit before intents kept microseconds): its
                // attempt may have been sent up to a second after the time read.
                let legacy = if provkit_core::timestamp::micro::is_whole_second(&at) {
                    chrono::Duration::seconds(1)
                } else {
                    chrono::Duration::zero()
                };
                first_read = own.filter(|_| !windows.was_read_to_answer(key.as_str(), at));
                let (sent, ended) = match (first_read, own) {
                    (Some(launch), _) => launch,
                    // AWX may finish the request up to the deadline after it was sent.
                    (None, Some((sent, _))) => (sent, sent + self.deadline()),
                    (None, None) => (at, at + self.deadline() + legacy),
                };
                let (since, until) =
                    windows.fix(key.as_str(), at, (sent + offset.low, ended + offset.high));
                drop(windows);
                // Another process's attempt (or this process's before a restart), and the
                // rest of an own launch's deadline: the launch may still be in AAP's hands (a
                // deposed leader still waiting for it; a request whose client left, which AWX
                // finishes), so a job may yet appear in the window. It is read once the window
                // has closed on AAP's clock, together with the other windows overlapping it.
                inherited = first_read.is_none().then_some(offset.low);
                (since, Some((until, first_read.is_some())))
            }
            None => (self.since(resource, key).await, None),
        };
        // Stopping at the first page holding the key: one request in the usual case.
        let find = |kind: JobKind| async move {
            match until {
                Some((until, from_end)) => {
                    self.api
                        .first_job_with_key_between(
                            kind,
                            template.kind,
                            template.id,
                            since,
                            until,
                            from_end,
                            key.as_str(),
                        )
                        .await
                }
                None => {
                    self.api
                        .newest_job_with_key(kind, template.kind, template.id, since, key.as_str())
                        .await
                }
            }
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
        let found = match (intent, inherited) {
            (Some(at), Some(offset_low)) => {
                let window = (since, until.map_or(since, |(until, _)| until));
                let kind = template.kind.job_kind();
                match self
                    .shared_lookup(&template, kind, key.as_str(), at, window, offset_low)
                    .await?
                {
                    shared_read::Shared::Found(job) => Some(*job),
                    shared_read::Shared::Absent => None,
                    shared_read::Shared::Unsupported => find(kind).await?,
                }
            }
            _ => find(template.kind.job_kind()).await?,
        };
        let Some(job) = found else {
            let Some(at) = intent else {
                finished();
                return Ok(None);
            };
            // Its own launch's window up to the launch's end holds no job: AWX may still
            // create it (a request whose client gave up is finished), so the window up to the
            // launch deadline after the send is read once closed. After that read, only this
            // provider sends under its own intent, so no job can appear later.
            if first_read.is_some() {
                self.windows
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .read_to_answer(key.as_str(), at);
                return self
                    .find_job_by_idempotency_key_since(resource, job_type, key, intent)
                    .await;
            }
            self.windows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .own_launch_absent(key.as_str(), at);
            finished();
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
        finished();
        self.remember_kind(job.id, job.kind);
        Ok(Some(FoundJob::new(
            job.id.to_string(),
            map_status(job.status.as_str()),
            job.status.as_str(),
        )))
    }
}

/// The template action whose jobs are `job_type`'s (none for other job types: this provider
/// launches none).
fn lookup_action(job_type: &JobType) -> Option<TemplateAction> {
    match job_type {
        JobType::Provision => Some(TemplateAction::Create),
        JobType::Deprovision => Some(TemplateAction::Delete),
        JobType::Other(_) => None,
    }
}

/// The intent of the attempt `ctx` launches under: its idempotency key and intent time, when
/// the engine gave both.
fn attempt_intent(ctx: &LaunchContext) -> Option<(&str, DateTime<Utc>)> {
    ctx.idempotency_key
        .as_ref()
        .zip(ctx.attempt_started)
        .map(|(key, at)| (key.as_str(), at))
}

/// How long until a window ending at `until` (AAP's clock) has certainly closed, when AAP's
/// clock reads at least `aap_now_low`; `None` once it has.
fn window_open_for(until: DateTime<Utc>, aap_now_low: DateTime<Utc>) -> Option<Duration> {
    (until - aap_now_low).to_std().ok().filter(|d| !d.is_zero())
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
