//! [`AapClient`]: the operations.

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::call::{Call, CallAuth};
use crate::circuit::CircuitState;
use crate::config::{AapClientBuilder, builder_from_lookup};
use crate::endpoints::api_path;
use crate::error::{Error, Result, TemplateCandidate};
use crate::gateway_token::{GatewayToken, GatewayTokenOptions};
use crate::inner::{Inner, TemplateKey};
use crate::key_scan::{Ends, KeyLookupMeter, KeyLookupStats, LookupCall, Read, ScanKey, Span};
use crate::response::RawResponse;
use crate::types::{
    AapJobEvent, AapJobStatus, CancelOutcome, Job, JobKind, JobWire, LaunchRequest, Launched,
    ListedJob, Page, Template, TemplateKind,
};
use crate::window_read::{JobWindow, WindowEnd, WindowJobs};

/// The "too large to display" notice AWX returns instead of stdout above 1 MiB.
const STDOUT_TOO_LARGE: &str = "Standard Output too large to display";

impl AapClientBuilder {
    /// Builds the client. No request is made; the API root is discovered on first use.
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid URL, proxy, CA PEM or header value, or gateway token
    /// minting without username/password.
    pub fn build(self) -> Result<AapClient> {
        Ok(AapClient::from_inner(Arc::new(self.into_inner()?)))
    }
}

/// A client for the AAP / AWX controller REST API. Cheap to clone (shared connection pool,
/// template cache and rate limiter).
///
/// ```no_run
/// # async fn run() -> Result<(), provkit_aap::Error> {
/// use provkit_aap::{AapClient, CancelOutcome, LaunchRequest};
/// let client = AapClient::from_env()?;
/// let template = client.get_template("osac-create-virtual-network").await?;
/// let launched = client.launch(&template, &LaunchRequest::default()).await?;
/// let job = client.get_unified(launched.kind, launched.id).await?;
/// println!("job {} is {}", job.id, job.status.as_str());
/// if client.cancel(launched.kind, launched.id).await? == CancelOutcome::AlreadyFinished {
///     println!("too late to cancel");
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct AapClient {
    inner: Arc<Inner>,
}

fn candidate(value: &Value) -> Option<(Template, TemplateCandidate)> {
    let kind_str = value.get("type")?.as_str()?;
    let kind = TemplateKind::from_type(kind_str)?;
    let id = value.get("id")?.as_u64()?;
    let organization_name = value
        .pointer("/summary_fields/organization/name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let template = Template {
        id,
        name: value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        kind,
        organization: value.get("organization").and_then(Value::as_u64),
        organization_name: organization_name.clone(),
    };
    Some((
        template,
        TemplateCandidate {
            id,
            kind: kind_str.to_owned(),
            organization: organization_name,
        },
    ))
}

impl AapClient {
    /// Starts a builder for the AAP at `url`.
    ///
    /// `url` may be the bare host (`https://aap.example.com`, the API root is discovered), the
    /// Go operator's form (`https://aap.example.com/api/controller`), or a full base
    /// (`https://awx.example.com/api/v2/`).
    pub fn builder(url: impl Into<String>) -> AapClientBuilder {
        AapClientBuilder::new(url)
    }

    /// A builder configured from the environment: `AAP_HOSTNAME` / `AAP_HOST` / `OSAC_AAP_URL`,
    /// `AAP_TOKEN` / `OSAC_AAP_TOKEN` (or `AAP_TOKEN_FILE`, or `AAP_USERNAME` + `AAP_PASSWORD`),
    /// `AAP_VALIDATE_CERTS=false` / `AAP_INSECURE_SKIP_VERIFY=true` /
    /// `OSAC_AAP_INSECURE_SKIP_VERIFY=true`, `AAP_REQUEST_TIMEOUT` (seconds).
    ///
    /// # Errors
    /// [`Error::Config`] when no host is set or a value does not parse.
    pub fn builder_from_env() -> Result<AapClientBuilder> {
        builder_from_lookup(|key| std::env::var(key).ok())
    }

    /// [`builder_from_env`](Self::builder_from_env) then `build()`.
    ///
    /// # Errors
    /// As [`builder_from_env`](Self::builder_from_env) and [`AapClientBuilder::build`].
    pub fn from_env() -> Result<Self> {
        Self::builder_from_env()?.build()
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// Scheme, host and port (links are joined with this only).
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// The controller API base path (`/api/v2/` or `/api/controller/v2/`), discovered on first
    /// use unless configured.
    ///
    /// # Errors
    /// [`Error::Discovery`] when the host does not look like AWX/AAP.
    pub async fn api_base(&self) -> Result<String> {
        self.inner.base().await.map(str::to_owned)
    }

    /// The state of the circuit breaker this client shares with its clones (see
    /// [`AapClientBuilder::circuit_breaker`]).
    ///
    /// ```
    /// use provkit_aap::{AapClient, CircuitState};
    /// let client = AapClient::builder("https://aap.example.com").build()?;
    /// assert_eq!(client.circuit_state(), CircuitState::Closed);
    /// # Ok::<(), provkit_aap::Error>(())
    /// ```
    pub fn circuit_state(&self) -> CircuitState {
        self.inner.breaker.state()
    }

    /// How long the circuit breaker will still refuse every request unsent (it is open and its
    /// cool-down has not ended); `None` while a request may be sent (closed, or half-open: a
    /// probe may go).
    ///
    /// ```
    /// let client = provkit_aap::AapClient::builder("https://aap.example.com").build()?;
    /// assert_eq!(client.launch_refused_for(), None);
    /// # Ok::<(), provkit_aap::Error>(())
    /// ```
    pub fn launch_refused_for(&self) -> Option<std::time::Duration> {
        self.inner.breaker.refused_for()
    }

    pub(crate) async fn path(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<String> {
        Ok(api_path(self.inner.base().await?, segments, query))
    }

    pub(crate) async fn get_value(&self, path: String) -> Result<Value> {
        self.inner
            .send(&Call::get(path, self.inner.max_body_bytes))
            .await?
            .json()
    }

    /// Mints an AAP 2.5+ platform gateway token from a username and password
    /// (`POST /api/gateway/v1/tokens/` with Basic auth and `{"description", "application": null,
    /// "scope"}`). Use the returned token's [`secret`](GatewayToken::secret) as the bearer token of
    /// a client (AAP 2.7 accepts nothing else at the controller), and
    /// [`revoke_gateway_token`](Self::revoke_gateway_token) it when done. Never retried (a retry
    /// could mint twice).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), provkit_aap::Error> {
    /// use provkit_aap::{AapClient, GatewayTokenOptions};
    /// let login = AapClient::builder("https://aap.example.com").build()?;
    /// let token = login
    ///     .mint_gateway_token("admin", "password", &GatewayTokenOptions::new("osac-installer"))
    ///     .await?;
    /// let client = AapClient::builder("https://aap.example.com")
    ///     .gateway_token(&token)
    ///     .build()?;
    /// # let _ = client; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Unauthorized`] for a wrong username/password; [`Error::NotFound`] when the host
    /// has no gateway (plain AWX); HTTP/decoding errors.
    pub async fn mint_gateway_token(
        &self,
        username: &str,
        password: &str,
        options: &GatewayTokenOptions,
    ) -> Result<GatewayToken> {
        let gateway = self.inner.gateway_root().await?;
        let basic = crate::auth::basic_header(username, password)?;
        self.inner.mint_at(&gateway, basic, options).await
    }

    /// Revokes gateway token `id` (`DELETE /api/gateway/v1/tokens/<id>/`) with this client's
    /// credentials.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown (or already revoked) token; HTTP errors.
    pub async fn revoke_gateway_token(&self, id: u64) -> Result<()> {
        let gateway = self.inner.gateway_root().await?;
        let call = Call::delete(format!("{gateway}v1/tokens/{id}/"), CallAuth::Configured);
        self.inner.send(&call).await.map(drop)
    }

    /// `GET ping/` (no authentication needed): version and instance health.
    ///
    /// # Errors
    /// Any HTTP or decoding error.
    pub async fn ping(&self) -> Result<Value> {
        let path = self.path(&["ping"], &[]).await?;
        self.get_value(path).await
    }

    /// AAP's clock: the `Date` header of one `GET ping/` (whole seconds, RFC 9110 format), or
    /// `None` when the answer has none (or an unreadable one). The provider brackets this call
    /// with its own clock to bound the clock offset before it has launched anything
    /// (`docs/aap.md`, "Clock skew is measured").
    ///
    /// The header is the web server's clock (nginx in front of AWX's Django, same host); behind
    /// another proxy that writes its own `Date` it is that proxy's clock (unverified on an AAP
    /// gateway).
    ///
    /// # Errors
    /// Any HTTP error of the request.
    pub async fn server_time(&self) -> Result<Option<DateTime<Utc>>> {
        let path = self.path(&["ping"], &[]).await?;
        let raw = self
            .inner
            .send(&Call::get(path, self.inner.max_body_bytes))
            .await?;
        Ok(raw
            .date
            .as_deref()
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .map(DateTime::<Utc>::from))
    }

    /// `GET me/`: validates the credentials and returns the calling user.
    ///
    /// # Errors
    /// [`Error::Unauthorized`] for bad or expired credentials.
    pub async fn me(&self) -> Result<Value> {
        let path = self.path(&["me"], &[]).await?;
        let page: Page =
            serde_json::from_value(self.get_value(path.clone()).await?).unwrap_or(Page {
                next: None,
                results: vec![],
            });
        Ok(page.results.into_iter().next().unwrap_or(Value::Null))
    }

    /// Looks a launchable template up by name, in the client's default organization if set.
    ///
    /// # Errors
    /// As [`get_template_in`](Self::get_template_in).
    pub async fn get_template(&self, name: &str) -> Result<Template> {
        let org = self.inner.organization.clone();
        self.get_template_in(name, org.as_deref()).await
    }

    /// Looks a launchable template up by name with **one** request
    /// (`unified_job_templates/?name=…&type=job_template,workflow_job_template[&organization__name=…]`).
    /// Successful lookups are cached per (name, organization) until a launch of that template
    /// answers 404 or [`clear_template_cache`](Self::clear_template_cache) is called; failed
    /// ones — not found, forbidden, ambiguous — for
    /// [`template_miss_ttl`](AapClientBuilder::template_miss_ttl) (default 10 s).
    ///
    /// # Errors
    /// [`Error::TemplateNotFound`] for no match, [`Error::AmbiguousTemplate`] for several (same
    /// name in several organizations, or a job template and a workflow template sharing it);
    /// auth and server errors are reported as such, never as "not found".
    pub async fn get_template_in(
        &self,
        name: &str,
        organization: Option<&str>,
    ) -> Result<Template> {
        let key = (name.to_owned(), organization.map(str::to_owned));
        if let Some(hit) = self.cached_lookup(&key) {
            return hit;
        }
        // Single flight: concurrent cold lookups of one key wait for the first one's answer
        // instead of each sending a request. A lookup that failed for a reason about the
        // template (not found, forbidden, ambiguous) is shared through the negative cache; any
        // other failure is not: the next waiter then tries on its own.
        let flight = Arc::clone(
            self.inner
                .template_fetches
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(key.clone())
                .or_default(),
        );
        let _turn = flight.lock().await;
        if let Some(hit) = self.cached_lookup(&key) {
            return hit;
        }
        let result = self.fetch_template(name, organization, &key).await;
        if let Err(err) = &result {
            self.remember_miss(&key, err);
        }
        self.inner
            .template_fetches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&key);
        result
    }

    /// The cached answer for `key`: a template, or a failed lookup that has not expired.
    fn cached_lookup(&self, key: &TemplateKey) -> Option<Result<Template>> {
        if let Some(hit) = self
            .inner
            .templates
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
        {
            return Some(Ok(hit.clone()));
        }
        let now = self.inner.clock.now();
        self.inner
            .template_misses
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .filter(|miss| miss.live(now))
            .map(|miss| {
                tracing::debug!(template = %key.0, "template lookup answered from the negative cache");
                Err(miss.error())
            })
    }

    /// Remembers a failed lookup for the configured TTL when it says something about the template.
    fn remember_miss(&self, key: &TemplateKey, err: &Error) {
        let ttl = self.inner.template_miss_ttl;
        if ttl.is_zero() {
            return;
        }
        let until = self.inner.clock.now()
            + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::seconds(10));
        if let Some(miss) = crate::template_miss::Miss::of(err, until) {
            self.inner
                .template_misses
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key.clone(), miss);
        }
    }

    /// The one request behind [`get_template_in`](Self::get_template_in); caches a unique match.
    async fn fetch_template(
        &self,
        name: &str,
        organization: Option<&str>,
        key: &TemplateKey,
    ) -> Result<Template> {
        let mut query = vec![
            ("name", name),
            ("type", "job_template,workflow_job_template"),
        ];
        if let Some(org) = organization {
            query.push(("organization__name", org));
        }
        let path = self.path(&["unified_job_templates"], &query).await?;
        let page: Page =
            serde_json::from_value(self.get_value(path.clone()).await?).map_err(|e| {
                Error::Decode {
                    ctx: Box::new(crate::error::RequestContext::new(http::Method::GET, path)),
                    message: "not a list page".into(),
                    source: Some(e),
                }
            })?;
        let mut found: Vec<_> = page
            .results
            .iter()
            .filter_map(candidate)
            .filter(|(t, _)| t.name == name || t.name.is_empty())
            .collect();
        match found.len() {
            0 => Err(Error::TemplateNotFound {
                name: name.to_owned(),
                organization: organization.map(str::to_owned),
            }),
            1 => {
                let (template, _) = found.remove(0);
                self.inner
                    .template_misses
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(key);
                self.inner
                    .templates
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key.clone(), template.clone());
                Ok(template)
            }
            _ => Err(Error::AmbiguousTemplate {
                name: name.to_owned(),
                candidates: found.into_iter().map(|(_, c)| c).collect(),
            }),
        }
    }

    /// Empties the template cache, the negative cache of failed lookups included.
    pub fn clear_template_cache(&self) {
        self.inner
            .templates
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.inner
            .template_misses
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    fn forget_template(&self, kind: TemplateKind, id: u64) {
        self.inner
            .templates
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|_, t| !(t.id == id && t.kind == kind));
    }

    /// Launches a template of either kind.
    ///
    /// # Errors
    /// As [`launch_job_template`](Self::launch_job_template).
    pub async fn launch(&self, template: &Template, request: &LaunchRequest) -> Result<Launched> {
        self.launch_kind(template.kind, template.id, request).await
    }

    /// `POST job_templates/<id>/launch/` with `extra_vars` as a JSON object. **Never retried**.
    ///
    /// Reads the new job's id from `job` / `workflow_job` / `id` and its kind from `type` (a sliced
    /// job template creates a workflow job). Non-empty `ignored_fields` are logged as a warning
    /// and returned.
    ///
    /// # Errors
    /// HTTP errors (a 404 also drops the template from the cache); use
    /// [`Error::is_outcome_unknown`] to tell "certainly not launched" from "maybe launched".
    pub async fn launch_job_template(&self, id: u64, request: &LaunchRequest) -> Result<Launched> {
        self.launch_kind(TemplateKind::JobTemplate, id, request)
            .await
    }

    /// `POST workflow_job_templates/<id>/launch/`. **Never retried**.
    ///
    /// # Errors
    /// As [`launch_job_template`](Self::launch_job_template).
    pub async fn launch_workflow_template(
        &self,
        id: u64,
        request: &LaunchRequest,
    ) -> Result<Launched> {
        self.launch_kind(TemplateKind::WorkflowJobTemplate, id, request)
            .await
    }

    async fn launch_kind(
        &self,
        kind: TemplateKind,
        id: u64,
        request: &LaunchRequest,
    ) -> Result<Launched> {
        let id_text = id.to_string();
        let path = self
            .path(&[kind.endpoint(), &id_text, "launch"], &[])
            .await?;
        let body = serde_json::to_vec(request).map_err(|e| Error::Config {
            message: "launch request is not serializable".into(),
            source: Some(Box::new(e)),
        })?;
        let mut call = Call::post(path, body, false, self.inner.max_body_bytes);
        call.send_by = request.send_by;
        let resp = match self.inner.send(&call).await {
            Ok(resp) => resp,
            Err(err) => {
                if err.is_not_found() {
                    self.forget_template(kind, id);
                }
                return Err(err);
            }
        };
        let value: Value = resp.json()?;
        let launched =
            Launched::from_value(&value, kind.job_kind()).ok_or_else(|| Error::Decode {
                ctx: Box::new(resp.ctx.clone()),
                message: "launch response has no job id".into(),
                source: None,
            })?;
        if !launched.ignored_fields.is_empty() {
            let fields: Vec<&String> = launched.ignored_fields.keys().collect();
            tracing::warn!(
                template_id = id,
                job_id = launched.id,
                ignored_fields = ?fields,
                "AAP ignored launch fields the template does not prompt for"
            );
        }
        tracing::info!(
            template_id = id,
            job_id = launched.id,
            kind = launched.kind.as_str(),
            "launched AAP job"
        );
        Ok(launched)
    }

    /// `GET jobs/<id>/`.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown id; HTTP/decoding errors.
    pub async fn get_job(&self, id: u64) -> Result<Job> {
        self.get_unified(JobKind::Job, id).await
    }

    /// `GET workflow_jobs/<id>/`.
    ///
    /// # Errors
    /// As [`get_job`](Self::get_job).
    pub async fn get_workflow_job(&self, id: u64) -> Result<Job> {
        self.get_unified(JobKind::WorkflowJob, id).await
    }

    /// The detail of a job of the given kind.
    ///
    /// # Errors
    /// As [`get_job`](Self::get_job).
    pub async fn get_unified(&self, kind: JobKind, id: u64) -> Result<Job> {
        let path = self.path(&[kind.endpoint(), &id.to_string()], &[]).await?;
        let resp = self
            .inner
            .send(&Call::get(path, self.inner.max_body_bytes))
            .await?;
        // Fast path: read only the fields we use; anything unusual goes through the tolerant path.
        let value = match serde_json::from_slice::<JobWire>(&resp.body) {
            Ok(wire) if !resp.is_html() => wire.into_value(),
            _ => resp.json::<Value>()?,
        };
        let job = Job::from_value(&value, kind).ok_or_else(|| Error::Decode {
            ctx: Box::new(resp.ctx.clone()),
            message: "job detail has no id".into(),
            source: None,
        })?;
        if let AapJobStatus::Other(status) = &job.status {
            tracing::warn!(job_id = id, status = %status, "unknown AAP job status; treated as not finished");
        }
        Ok(job)
    }

    /// The kind of unified job `id` (`unified_jobs/?id=<id>`); `None` if there is none (or it is
    /// neither a job nor a workflow job).
    ///
    /// # Errors
    /// HTTP/decoding errors.
    pub async fn find_job_kind(&self, id: u64) -> Result<Option<JobKind>> {
        let id_text = id.to_string();
        let path = self.path(&["unified_jobs"], &[("id", &id_text)]).await?;
        // A body that is not a list page is an error, never "no such job".
        let page: Page =
            serde_json::from_value(self.get_value(path.clone()).await?).map_err(|e| {
                Error::Decode {
                    ctx: Box::new(crate::error::RequestContext::new(http::Method::GET, path)),
                    message: "not a list page".into(),
                    source: Some(e),
                }
            })?;
        Ok(page
            .results
            .iter()
            .filter(|v| v.get("id").and_then(Value::as_u64) == Some(id))
            .find_map(|v| {
                v.get("type")
                    .and_then(Value::as_str)
                    .and_then(JobKind::from_type)
            }))
    }

    /// `POST jobs/<id>/cancel/`.
    ///
    /// # Errors
    /// As [`cancel`](Self::cancel).
    pub async fn cancel_job(&self, id: u64) -> Result<CancelOutcome> {
        self.cancel(JobKind::Job, id).await
    }

    /// `POST workflow_jobs/<id>/cancel/`.
    ///
    /// # Errors
    /// As [`cancel`](Self::cancel).
    pub async fn cancel_workflow_job(&self, id: u64) -> Result<CancelOutcome> {
        self.cancel(JobKind::WorkflowJob, id).await
    }

    /// Requests cancellation: 202 → [`CancelOutcome::Accepted`], 405 →
    /// [`CancelOutcome::AlreadyFinished`]. Retried on transient errors (cancel is idempotent).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown job; other HTTP errors.
    pub async fn cancel(&self, kind: JobKind, id: u64) -> Result<CancelOutcome> {
        let path = self
            .path(&[kind.endpoint(), &id.to_string(), "cancel"], &[])
            .await?;
        let call = Call::post(path, b"{}".to_vec(), true, self.inner.max_body_bytes);
        match self.inner.send(&call).await {
            Ok(_) => Ok(CancelOutcome::Accepted),
            Err(err) if err.is_method_not_allowed() => Ok(CancelOutcome::AlreadyFinished),
            Err(err) => Err(err),
        }
    }

    /// `GET <kind>/<id>/cancel/` → `can_cancel`.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown job; HTTP/decoding errors.
    pub async fn can_cancel(&self, kind: JobKind, id: u64) -> Result<bool> {
        let path = self
            .path(&[kind.endpoint(), &id.to_string(), "cancel"], &[])
            .await?;
        let value = self.get_value(path).await?;
        Ok(value
            .get("can_cancel")
            .and_then(Value::as_bool)
            .unwrap_or(false))
    }

    /// A job's standard output as text (`stdout/?format=txt`), falling back to
    /// `format=txt_download` when AWX says it is too large to display.
    ///
    /// # Errors
    /// HTTP errors; [`Error::BodyTooLarge`] above the stdout cap.
    pub async fn job_stdout(&self, id: u64) -> Result<String> {
        let id_text = id.to_string();
        let mut text = self.stdout_format(&id_text, "txt").await?;
        if text.trim_start().starts_with(STDOUT_TOO_LARGE) {
            text = self.stdout_format(&id_text, "txt_download").await?;
        }
        Ok(text)
    }

    async fn stdout_format(&self, id: &str, format: &str) -> Result<String> {
        let path = self
            .path(&["jobs", id, "stdout"], &[("format", format)])
            .await?;
        let mut call = Call::get(path, self.inner.max_stdout_bytes);
        call.accept = "text/plain, */*";
        let resp = self.inner.send(&call).await?;
        Ok(String::from_utf8_lossy(&resp.body).into_owned())
    }

    /// Every item of a list endpoint, following `next` links (root-relative, joined with the
    /// host only) until `null`, an "Invalid page." 404 on a later page, or the item cap (a
    /// warning; the result is truncated).
    ///
    /// # Errors
    /// HTTP/decoding errors, including an "Invalid page." 404 of the **first** page (a page
    /// number past the end); a later "Invalid page." ends the walk quietly.
    pub async fn list(&self, endpoint: &str, query: &[(&str, &str)]) -> Result<Vec<Value>> {
        let first = self.path(&[endpoint], query).await?;
        crate::pagination::collect(&self.inner, first).await
    }

    /// Jobs of `kind` created from template `template_id` after `since`, newest first
    /// (`jobs/?job_template=<id>&created__gt=<t>&order_by=-id`, or `workflow_jobs/?workflow_job_template=…`;
    /// `(WorkflowJob, JobTemplate)` lists a sliced job template's workflow jobs), decoded with
    /// `extra_vars`. The server refuses to filter on `extra_vars`; match them client-side.
    ///
    /// # Errors
    /// HTTP/decoding errors.
    pub async fn jobs_created_since(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
    ) -> Result<Vec<Job>> {
        let id_text = template_id.to_string();
        let since_text = since.to_rfc3339_opts(SecondsFormat::Micros, true);
        let query = jobs_since_query(template_kind, &id_text, &since_text);
        let items = self.list(kind.endpoint(), &query).await?;
        Ok(items
            .iter()
            .filter_map(|v| Job::from_value(v, kind))
            .collect())
    }

    /// The newest job of `kind` created from template `template_id` after `since` whose
    /// `extra_vars` carry `key` under [`IDEMPOTENCY_KEY_VAR`](crate::marker::IDEMPOTENCY_KEY_VAR).
    ///
    /// Same query as [`jobs_created_since`](Self::jobs_created_since) — newest first
    /// (`order_by=-id`: ids grow with creation, so the first match is the newest one) with the
    /// largest page AWX serves (`page_size=200`) — but it stops paging at the first match instead
    /// of listing every job of the window.
    ///
    /// A lookup that fails part-way (a page timed out, the circuit opened, the item cap was
    /// reached) is remembered by every clone of this client: the next lookup of the same key,
    /// kind, template and `since` reads only the jobs newer than those it read (`id__gt`) and
    /// then the older ones it had not reached (`id__lt`), so a long window is read to its end
    /// across attempts even when each attempt is cut short.
    ///
    /// # Errors
    /// HTTP/decoding errors.
    pub async fn newest_job_with_key(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        key: &str,
    ) -> Result<Option<Job>> {
        let scan = ScanKey {
            kind,
            template_kind,
            template_id,
            since,
            until: None,
            key: key.to_owned(),
        };
        let mut pages = 0;
        let found = self.newest_walk(&scan, &mut pages).await;
        self.inner
            .key_scans
            .stats
            .record(read_pages(pages, &found), LookupCall::Unbounded, false);
        found
    }

    /// What the idempotency-key lookups of this client and its clones cost so far (calls,
    /// pages requested, the most pages of one call).
    #[must_use]
    pub fn key_lookup_stats(&self) -> KeyLookupStats {
        self.inner.key_scans.stats.stats()
    }

    /// A handle on the counters of [`key_lookup_stats`](Self::key_lookup_stats) that outlives
    /// the client (for reports over many clients).
    #[must_use]
    pub fn key_lookup_meter(&self) -> KeyLookupMeter {
        self.inner.key_scans.stats.clone()
    }

    /// The first job of `kind` created from template `template_id` in `(since, until)` whose
    /// `extra_vars` carry `key`, read from the end where it is expected first: one launch
    /// attempt's window (its intent time minus the clock-skew allowance, to its launch deadline
    /// plus the allowance).
    ///
    /// Reads a page (`page_size=200`) from the window's start (`order_by=id`), or from its end
    /// (`order_by=-id`) with `from_end`, then one from the other end, in turn, each between the
    /// ids the earlier pages reached (`id__gt`, `id__lt`), until a page holds the key or the rest
    /// of the window. The attempt's job was created moments after the window starts (or, for a
    /// launch whose answer came back or failed, moments before it ends), so it is on the first
    /// page in the usual case, and on the second when it is at the other end (a launch that ran
    /// into the timeout after AAP created its job). The walk stays within the window
    /// (`created__gt`, `created__lt`) and reads no job twice, so proving absence costs the
    /// window's pages, not the fleet's history. At most
    /// [`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call) pages a call
    /// ([`Error::LookupUnfinished`] after them). A walk cut short (a page timed out, the circuit
    /// opened, the budget) is remembered by every clone of this client: the next call continues
    /// between the two ids reached. The window is fixed, so every page read is progress that
    /// stays.
    ///
    /// # Errors
    /// HTTP/decoding errors; [`Error::LookupUnfinished`] at the page budget;
    /// [`Error::ListIncomplete`] at the lookup item cap.
    #[allow(clippy::too_many_arguments)] // the window's parts, as `newest_job_with_key` has them
    pub async fn first_job_with_key_between(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
        from_end: bool,
        key: &str,
    ) -> Result<Option<Job>> {
        let scan = ScanKey {
            kind,
            template_kind,
            template_id,
            since,
            until: Some((until, from_end)),
            key: key.to_owned(),
        };
        let scans = &self.inner.key_scans;
        let mut ends = scans.ends.get(&scan).unwrap_or_default();
        let mut pages = 0;
        let found = self
            .window_walk(&scan, (until, from_end), &mut ends, &mut pages)
            .await;
        let unfinished = matches!(found, Err(Error::LookupUnfinished { .. }));
        let call = LookupCall::Window {
            found: matches!(found, Ok(Some(_))),
        };
        scans
            .stats
            .record(read_pages(pages, &found), call, unfinished);
        match &found {
            Ok(_) => scans.ends.done(&scan),
            Err(_) if ends != Ends::default() => scans.ends.keep(scan, ends),
            Err(_) => {}
        }
        found
    }

    /// One call's worth of a read of the jobs in `window`: oldest first (`order_by=id`,
    /// `page_size=200`) above job id `after` (`id__gt`), for at most
    /// [`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call) pages, until
    /// every one of `keys` was met. Returns the jobs carrying an idempotency key (any: a caller
    /// may answer later lookups from them) and the highest id read, the caller's cursor: pages are read whole, so a call cut short by a failed page
    /// keeps what it read ([`WindowEnd::Failed`]) and the next call continues above it. Counted
    /// in [`key_lookup_stats`](Self::key_lookup_stats) as one bounded lookup.
    ///
    /// The provider reads the span of the launch windows of the intents it inherited this way,
    /// once they have closed: one read answers all of them.
    ///
    /// # Errors
    /// HTTP/decoding errors of the first page; [`Error::ListIncomplete`] at the client's item
    /// cap.
    pub async fn jobs_between(
        &self,
        window: &JobWindow,
        after: Option<u64>,
        keys: &[String],
    ) -> Result<WindowJobs> {
        let first = self.window_page(window, (after, None), false).await?;
        let mut pages = 0;
        let kind = window.kind;
        let mut wanted: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let asked = wanted.len();
        let mut keyed = Vec::new();
        let mut last = None;
        let found = crate::pagination::find_first(
            &self.inner,
            first,
            decode_job_page,
            &mut pages,
            Some(self.inner.lookup_pages_per_call),
            |item| {
                let job = Job::from_value(&item.into_value(), kind)?;
                last = Some(last.map_or(job.id, |l: u64| l.max(job.id)));
                let key = job
                    .extra_vars
                    .get(crate::marker::IDEMPOTENCY_KEY_VAR)
                    .and_then(serde_json::Value::as_str)?;
                wanted.remove(key);
                keyed.push(job);
                (!keys.is_empty() && wanted.is_empty()).then_some(())
            },
        )
        .await;
        let unfinished = matches!(found, Err(Error::LookupUnfinished { .. }));
        // Met keys are answered; the rest only once the read reached its window's end.
        let answered = match &found {
            Ok(_) => asked,
            Err(_) => asked - wanted.len(),
        };
        self.inner.key_scans.stats.record(
            read_pages(pages, &found),
            LookupCall::Shared {
                answered: answered as u64,
            },
            unfinished,
        );
        let end = match found {
            Ok(Some(())) => WindowEnd::Met,
            Ok(None) => WindowEnd::Ended,
            Err(e @ Error::LookupUnfinished { .. }) => WindowEnd::Paused(e),
            Err(e) if last.is_some() => WindowEnd::Failed(e),
            Err(e) => return Err(e),
        };
        Ok(WindowJobs { keyed, last, end })
    }

    async fn newest_walk(&self, scan: &ScanKey, pages: &mut u32) -> Result<Option<Job>> {
        let scan = scan.clone();
        let scans = &self.inner.key_scans;
        let Some(known) = scans.spans.get(&scan) else {
            let mut read = Read::default();
            let found = self.key_walk(&scan, None, &mut read, pages).await;
            match (&found, read.span()) {
                (Err(_), Some(span)) => scans.spans.keep(scan, span),
                (Err(_), None) => {}
                (Ok(_), _) => scans.spans.done(&scan),
            }
            return found;
        };
        // The jobs created since the last attempt first (they are the newest), then the older
        // ones it did not reach: the first match is still the newest.
        let mut newer = Read::default();
        let found = self
            .key_walk(&scan, Some(("id__gt", known.top)), &mut newer, pages)
            .await;
        if !matches!(found, Ok(None)) {
            if found.is_ok() {
                scans.spans.done(&scan);
            }
            return found;
        }
        let top = newer.span().map_or(known.top, |s| s.top.max(known.top));
        let mut older = Read::default();
        let found = self
            .key_walk(&scan, Some(("id__lt", known.bottom)), &mut older, pages)
            .await;
        match &found {
            Ok(_) => scans.spans.done(&scan),
            Err(_) => {
                let bottom = older.span().map_or(known.bottom, |s| s.bottom);
                scans.spans.keep(scan, Span { top, bottom });
            }
        }
        found
    }

    /// One walk of `scan`'s unbounded window (narrowed by `ids`, an `id__gt` / `id__lt` term),
    /// newest first, to the first job carrying the key, noting in `read` the id of every job of
    /// every page read and in `pages` the pages read.
    async fn key_walk(
        &self,
        scan: &ScanKey,
        ids: Option<(&str, u64)>,
        read: &mut Read,
        pages: &mut u32,
    ) -> Result<Option<Job>> {
        let id_text = scan.template_id.to_string();
        let since_text = scan.since.to_rfc3339_opts(SecondsFormat::Micros, true);
        let bound = ids.map(|(term, id)| (term, id.to_string()));
        let mut query = jobs_since_query(scan.template_kind, &id_text, &since_text).to_vec();
        if let Some((term, id)) = &bound {
            query.insert(2, (term, id.as_str()));
        }
        let first = self.path(&[scan.kind.endpoint()], &query).await?;
        // Each page is decoded into slim `JobWire`s (a list item is mostly `related` and
        // `summary_fields`) and dropped before the next one is fetched.
        crate::pagination::find_first(&self.inner, first, decode_job_page, pages, None, |item| {
            let job = Job::from_value(&item.into_value(), scan.kind)?;
            read.saw(job.id);
            crate::marker::carries_key(&job, &scan.key).then_some(job)
        })
        .await
    }
}

impl AapClient {
    /// The first `limit` (at most 200) events of job `id` flagged `failed`, in event order —
    /// **one** request: `jobs/<id>/job_events/?failed=true&order_by=counter&page_size=<limit>`.
    /// AWX marks the parents of a failed event failed too; [`AapJobEvent::is_task_failure`]
    /// tells them apart.
    ///
    /// # Errors
    /// HTTP/decoding errors.
    pub async fn failed_job_events(&self, id: u64, limit: usize) -> Result<Vec<AapJobEvent>> {
        let id_text = id.to_string();
        let size = limit.clamp(1, 200).to_string();
        let path = self
            .path(
                &["jobs", &id_text, "job_events"],
                &[
                    ("failed", "true"),
                    ("order_by", "counter"),
                    ("page_size", &size),
                ],
            )
            .await?;
        let (items, _) = self
            .inner
            .page(path, crate::pagination::decode_value_page)
            .await?;
        Ok(items.iter().filter_map(AapJobEvent::from_value).collect())
    }

    /// The jobs workflow job `id` ran (its nodes' jobs), in the order they finished — **one**
    /// request: `jobs/?unified_job_node__workflow_job=<id>&order_by=finished&page_size=200`.
    ///
    /// # Errors
    /// HTTP/decoding errors.
    pub async fn workflow_node_jobs(&self, id: u64) -> Result<Vec<Job>> {
        let id_text = id.to_string();
        let path = self
            .path(
                &["jobs"],
                &[
                    ("unified_job_node__workflow_job", &id_text),
                    ("order_by", "finished"),
                    ("page_size", "200"),
                ],
            )
            .await?;
        let (items, _) = self
            .inner
            .page(path, crate::pagination::decode_value_page)
            .await?;
        Ok(items
            .iter()
            .filter_map(|v| Job::from_value(v, JobKind::Job))
            .collect())
    }
}

/// A jobs list page: slim [`JobWire`] items in the usual case; anything unusual (HTML, a
/// non-object item, a field of an unexpected shape, duplicate keys) goes through the tolerant
/// JSON-tree path, so the outcome matches decoding the page as [`Value`]s.
pub(crate) fn decode_job_page(resp: &RawResponse) -> Result<Page<ListedJob>> {
    match serde_json::from_slice::<Page<JobWire>>(&resp.body) {
        Ok(page) if !resp.is_html() => Ok(Page {
            next: page.next,
            results: page.results.into_iter().map(ListedJob::Wire).collect(),
        }),
        _ => {
            let page: Page = resp.json()?;
            Ok(Page {
                next: page.next,
                results: page.results.into_iter().map(ListedJob::Full).collect(),
            })
        }
    }
}

/// The page requests a lookup call sent: the pages read, plus the one that failed (none when
/// the circuit breaker refused it, or when the call stopped at its page budget).
pub(crate) fn read_pages<T>(read: u32, found: &Result<T>) -> u32 {
    let failed = found
        .as_ref()
        .err()
        .is_some_and(|e| !e.is_circuit_open() && !matches!(e, Error::LookupUnfinished { .. }));
    read + u32::from(failed)
}

impl AapClient {
    /// The path of the first page (200 jobs) of `window`'s jobs between the ids `low` and
    /// `high` (`id__gt`, `id__lt`, each when given), oldest first or `newest_first`.
    pub(crate) async fn window_page(
        &self,
        window: &JobWindow,
        (low, high): (Option<u64>, Option<u64>),
        newest_first: bool,
    ) -> Result<String> {
        let id_text = window.template_id.to_string();
        let since_text = window.since.to_rfc3339_opts(SecondsFormat::Micros, true);
        let until_text = window.until.to_rfc3339_opts(SecondsFormat::Micros, true);
        let (low, high) = (low.map(|id| id.to_string()), high.map(|id| id.to_string()));
        let [filter, since, _, page_size] =
            jobs_since_query(window.template_kind, &id_text, &since_text);
        let mut query = vec![filter, since, ("created__lt", until_text.as_str())];
        if let Some(low) = &low {
            query.push(("id__gt", low.as_str()));
        }
        if let Some(high) = &high {
            query.push(("id__lt", high.as_str()));
        }
        query.push(("order_by", if newest_first { "-id" } else { "id" }));
        query.push(page_size);
        self.path(&[window.kind.endpoint()], &query).await
    }
}

/// `jobs/` query for a template's jobs created after `since`, newest first, 200 a page.
pub(crate) fn jobs_since_query<'a>(
    template_kind: TemplateKind,
    id_text: &'a str,
    since_text: &'a str,
) -> [(&'a str, &'a str); 4] {
    let filter = match template_kind {
        TemplateKind::JobTemplate => "job_template",
        TemplateKind::WorkflowJobTemplate => "workflow_job_template",
    };
    [
        (filter, id_text),
        ("created__gt", since_text),
        ("order_by", "-id"),
        ("page_size", "200"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RequestContext;
    use crate::pagination::decode_value_page;

    fn resp(content_type: &str, body: &str) -> RawResponse {
        RawResponse {
            status: reqwest::StatusCode::OK,
            content_type: Some(content_type.into()),
            location: None,
            retry_after: None,
            date: None,
            body: body.as_bytes().to_vec(),
            ctx: RequestContext::new(http::Method::GET, "/api/v2/jobs/"),
        }
    }

    /// What the tolerant JSON-tree path reads from the same page.
    fn via_values(resp: &RawResponse) -> (Option<String>, Vec<Option<Job>>) {
        let page = decode_value_page(resp).unwrap();
        let jobs = page
            .results
            .iter()
            .map(|v| Job::from_value(v, JobKind::Job))
            .collect();
        (page.next, jobs)
    }

    fn via_slim(resp: &RawResponse) -> (Option<String>, Vec<Option<Job>>) {
        let page = decode_job_page(resp).unwrap();
        let jobs = page
            .results
            .into_iter()
            .map(|item| Job::from_value(&item.into_value(), JobKind::Job))
            .collect();
        (page.next, jobs)
    }

    #[test]
    fn slim_job_pages_decode_like_json_trees() {
        let big = r#""related": {"stdout": "/api/v2/jobs/7/stdout/"}, "summary_fields": {"inventory": {"id": 1}, "source_workflow_job": {"id": 3}}"#;
        let cases = [
            // extra_vars as a JSON string and as an object; unknown fields skipped.
            format!(
                r#"{{"next": "/api/v2/jobs/?page=2", "results": [
                    {{"id": 7, "type": "job", "status": "running", "created": "2026-01-01T00:00:00Z",
                      "extra_vars": "{{\"provkit_idempotency_key\": \"k1\"}}", {big}}},
                    {{"id": 6, "status": "successful", "extra_vars": {{"provkit_idempotency_key": "k2"}}}},
                    {{"id": "5", "extra_vars": "not json"}},
                    {{"type": "job"}}
                ]}}"#
            ),
            // A non-object item: the tolerant path skips it.
            r#"{"next": null, "results": [3, {"id": 2, "extra_vars": "{}"}]}"#.to_owned(),
            // Duplicate keys: the last one wins, as in a JSON tree.
            r#"{"results": [{"id": 1, "status": "failed", "status": "successful"}]}"#.to_owned(),
            // `summary_fields` of an unexpected shape.
            r#"{"results": [{"id": 1, "summary_fields": "x"}]}"#.to_owned(),
            r#"{"results": []}"#.to_owned(),
        ];
        for body in &cases {
            let resp = resp("application/json", body);
            assert_eq!(via_slim(&resp), via_values(&resp), "{body}");
        }
        let (next, jobs) = via_slim(&resp("application/json", &cases[0]));
        assert_eq!(next.as_deref(), Some("/api/v2/jobs/?page=2"));
        assert_eq!(jobs.len(), 4);
        assert!(jobs[0].as_ref().is_some_and(|j| j.id == 7
            && crate::marker::carries_key(j, "k1")
            && j.source_workflow_job == Some(3)));
        assert!(
            jobs[1]
                .as_ref()
                .is_some_and(|j| crate::marker::carries_key(j, "k2"))
        );
    }

    #[test]
    fn html_job_pages_are_decode_errors_like_json_pages() {
        let resp = resp("text/html", "<html><body>login</body></html>");
        assert!(matches!(decode_job_page(&resp), Err(Error::Decode { .. })));
        assert!(matches!(
            decode_value_page(&resp),
            Err(Error::Decode { .. })
        ));
    }
}
