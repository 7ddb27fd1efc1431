//! The AAP side of a run: the fake AAP server on a loopback socket (real time, job durations
//! already divided by the run's [`TimeScale`](crate::stack::TimeScale)), and the real
//! [`AapClient`] / [`AapProvider`] each controller incarnation builds anew; plus the AAP chaos mix.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use provkit_aap::metrics::AapMetrics;
use provkit_aap::{AapClient, AapProvider, CircuitBreakerConfig, RateLimit, RetryConfig};
use provkit_testing::fake_aap::{
    FakeAap, FakeAapServer, Fault, FaultAction, FaultId, JobScript, JobTemplateSpec, RetryAfter,
    ScriptRule, Strike, Trigger,
};

use crate::instrumented::{CallStats, CountingApi};

/// The template prefix: templates are `sim-create-<kind>` and `sim-delete-<kind>`.
pub const TEMPLATE_PREFIX: &str = "sim";

/// The AAP organization holding the templates.
pub const ORGANIZATION: &str = "Default";

/// The templates of one resource kind.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct KindTemplates {
    /// The resource kind (e.g. `VirtualNetwork` → `sim-create-virtual-network`).
    pub kind: String,
    /// Script of the provision jobs.
    pub create: JobScript,
    /// Per-launch rules of the provision template (e.g. fail the first N launches).
    pub create_rules: Vec<ScriptRule>,
    /// Script of the deprovision jobs.
    pub delete: JobScript,
}

impl KindTemplates {
    /// Provision jobs run `create_running`, deprovision jobs `delete_running` (both succeed;
    /// wall durations).
    pub fn new(
        kind: impl Into<String>,
        create_running: Duration,
        delete_running: Duration,
    ) -> Self {
        Self {
            kind: kind.into(),
            create: JobScript::successful(create_running),
            create_rules: Vec::new(),
            delete: JobScript::successful(delete_running),
        }
    }

    /// The first `n` provision launches of this kind fail.
    #[must_use]
    pub fn failing_first(mut self, n: u32) -> Self {
        if n > 0 {
            let mut rule = ScriptRule::fail_times(n);
            rule.script = rule
                .script
                .with_explanation("Playbook failed: simulated failure");
            self.create_rules.push(rule);
        }
        self
    }

    fn template(
        name: String,
        script: JobScript,
        rules: Vec<ScriptRule>,
        skip_tags_prompt: bool,
    ) -> JobTemplateSpec {
        let mut spec = JobTemplateSpec {
            allow_simultaneous: true,
            script: Some(script),
            scripts: rules,
            ..JobTemplateSpec::new(name, ORGANIZATION)
        };
        spec.ask.skip_tags = skip_tags_prompt;
        spec
    }
}

/// How the backend is built (wall durations: already scaled).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BackendConfig {
    /// Templates per resource kind.
    pub kinds: Vec<KindTemplates>,
    /// Request-log ring size on the fake (0 = off, for load runs).
    pub request_log: usize,
    /// Seed of the fake's randomness (fault fractions).
    pub seed: u64,
    /// The client's request timeout.
    pub client_timeout: Duration,
    /// The client's retry policy for idempotent calls.
    pub retry: RetryConfig,
    /// Delay between a cancel request and the job showing `canceled`.
    pub cancel_delay: Duration,
    /// The provider's allowance for clock skew in idempotency lookups (until measured).
    pub clock_skew: Duration,
    /// The provider's launch deadline after an attempt's intent (wall).
    pub launch_deadline: Duration,
    /// How long after a launch left the client AAP may still create its job (wall; `None`:
    /// the provider's default, half the deadline).
    pub max_launch_processing: Option<Duration>,
    /// Launch attempts carry their key as a skip tag (the templates prompt for skip tags, the
    /// provider tags: `AapProviderBuilder::tag_attempts`).
    pub tag_attempts: bool,
    /// More templates (e.g. a probe's), declared as they are.
    pub extra_templates: Vec<JobTemplateSpec>,
    /// The client's circuit breaker (wall durations; default: the library's).
    pub circuit_breaker: CircuitBreakerConfig,
    /// The client's request-rate limit (wall; `None`: none).
    pub rate_limit: Option<RateLimit>,
    /// provkit-aap's metrics, shared by every client built (`None`: none).
    pub metrics: Option<AapMetrics>,
}

impl BackendConfig {
    /// One `VirtualNetwork` template pair whose jobs run `create_job` / `delete_job` (scenario
    /// time), with the cancel delay, the client's timeout and its retry sleeps scaled by `scale`,
    /// the request log off: the fleet scenarios' AAP.
    pub fn scaled_fleet(
        scale: crate::stack::TimeScale,
        create_job: Duration,
        delete_job: Duration,
        client_timeout: Duration,
        seed: u64,
    ) -> Self {
        let mut bc = Self::new(vec![KindTemplates::new(
            "VirtualNetwork",
            scale.of(create_job),
            scale.of(delete_job),
        )]);
        bc.request_log = 0;
        bc.seed = seed;
        bc.cancel_delay = scale.of(Duration::from_secs(5));
        bc.client_timeout = scale.of(client_timeout);
        // Handled by AAP (also after the client left) within the slowest answer of the chaos
        // faults, and sent within 5 s of the intent (the template check and admission): AAP
        // finishes a launch whose client gave up, so a processing allowance shorter than its
        // slowest answer puts late jobs outside the lookup window (documented failure mode).
        bc.max_launch_processing = Some(scale.of(slowest_answer(client_timeout)));
        bc.launch_deadline = scale.of(slowest_answer(client_timeout) + Duration::from_secs(5));
        // Each attempt's lookup is one query by its skip tag, whatever the fleet's launch rate.
        bc.tag_attempts = true;
        bc.retry = RetryConfig::default()
            .max_retries(4)
            .initial_backoff(scale.of(Duration::from_millis(200)))
            .max_backoff(scale.of(Duration::from_secs(2)))
            .max_elapsed(scale.of(Duration::from_secs(20)));
        bc
    }

    /// Defaults: request log on (1000), 30 s timeout, the client's default retries.
    pub fn new(kinds: Vec<KindTemplates>) -> Self {
        Self {
            kinds,
            request_log: 1000,
            seed: 0x5eed,
            client_timeout: Duration::from_secs(30),
            retry: RetryConfig::default(),
            cancel_delay: Duration::from_secs(5),
            clock_skew: Duration::from_secs(2),
            launch_deadline: provkit_aap::provider::DEFAULT_LAUNCH_DEADLINE,
            max_launch_processing: None,
            tag_attempts: false,
            extra_templates: Vec::new(),
            circuit_breaker: CircuitBreakerConfig::default(),
            rate_limit: None,
            metrics: None,
        }
    }
}

/// The running fake AAP server; clients and providers are built from it per incarnation.
#[derive(Debug)]
pub struct Backend {
    /// The running fake (loopback).
    pub server: FakeAapServer,
    /// How clients are built.
    pub config: BackendConfig,
    /// Provider-call counters (shared by every incarnation).
    pub calls: Arc<CallStats>,
    /// The thread the fake serves on (dropped after `server`: its drop stops the thread).
    _thread: AapThread,
}

/// The fake AAP's own runtime thread. AAP is a process of its own: a request that holds the
/// fake's state lock for long (a job-list lookup scanning every job of a 10,000-resource run)
/// must stall AAP, not the runtime the controllers, their Lease renewals and the API server
/// run on — which it did when both shared two worker threads (leadership changes without a
/// crash in the 10,000-resource chaos run).
#[derive(Debug)]
struct AapThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for AapThread {
    fn drop(&mut self) {
        // The thread drops its runtime (the accept loop and every connection) and ends.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Errors while setting the backend up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The fake AAP server did not start.
    #[error("fake AAP server failed to start")]
    Fake(#[from] provkit_testing::fake_aap::FakeAapError),
    /// The AAP client could not be built.
    #[error("AAP client could not be built")]
    Client(#[from] provkit_aap::Error),
    /// The fake AAP's runtime thread could not start.
    #[error("the fake AAP's runtime thread could not start")]
    Thread(#[source] std::io::Error),
}

impl Backend {
    /// Starts the fake (system clock) on a runtime thread of its own; `resources` sizes the
    /// counters.
    ///
    /// # Errors
    /// [`BackendError`].
    pub async fn start(config: &BackendConfig, resources: usize) -> Result<Self, BackendError> {
        let mut builder = FakeAap::builder()
            .request_log_capacity(config.request_log)
            .seed(config.seed)
            .cancel_delay(config.cancel_delay);
        for k in &config.kinds {
            let suffix = provkit_aap::provider::kebab_case(&k.kind);
            builder = builder
                .job_template(KindTemplates::template(
                    format!("{TEMPLATE_PREFIX}-create-{suffix}"),
                    k.create.clone(),
                    k.create_rules.clone(),
                    config.tag_attempts,
                ))
                .job_template(KindTemplates::template(
                    format!("{TEMPLATE_PREFIX}-delete-{suffix}"),
                    k.delete.clone(),
                    Vec::new(),
                    config.tag_attempts,
                ));
        }
        for t in &config.extra_templates {
            builder = builder.job_template(t.clone());
        }
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("fake-aap".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(BackendError::Thread(e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let _ = ready_tx.send(builder.start().await.map_err(BackendError::from));
                    // Until the backend is dropped (a dropped sender ends the wait too).
                    let _ = stopped.await;
                });
            })
            .map_err(BackendError::Thread)?;
        let server = ready.await.map_err(|_| {
            BackendError::Thread(std::io::Error::other("the fake AAP's thread ended"))
        })??;
        Ok(Self {
            server,
            config: config.clone(),
            calls: Arc::new(CallStats::new(resources)),
            _thread: AapThread { stop: Some(stop) },
        })
    }

    /// A new client (its own connection pool and template cache) sending `user_agent`.
    ///
    /// # Errors
    /// [`BackendError::Client`].
    pub fn client(&self, user_agent: &str) -> Result<AapClient, BackendError> {
        let mut builder = AapClient::builder(self.server.base_url())
            .token(self.server.token())
            .timeout(self.config.client_timeout)
            .connect_timeout(self.config.client_timeout)
            .retry(self.config.retry.clone())
            .circuit_breaker(self.config.circuit_breaker.clone())
            .user_agent(user_agent)
            .proxy_from_env(false)
            .system_roots(false);
        if let Some(limit) = self.config.rate_limit {
            builder = builder.rate_limit(limit);
        }
        if let Some(metrics) = &self.config.metrics {
            builder = builder.metrics(metrics.clone());
        }
        Ok(builder.build()?)
    }

    /// A new provider on a new client (counted in [`Backend::calls`]).
    ///
    /// # Errors
    /// [`BackendError::Client`].
    pub fn provider(&self, user_agent: &str) -> Result<AapProvider, BackendError> {
        let api: Arc<dyn provkit_aap::AapApi> = Arc::new(CountingApi::new(
            self.client(user_agent)?,
            self.calls.clone(),
        ));
        let builder = AapProvider::builder(api)
            .template_prefix(TEMPLATE_PREFIX)
            .clock_skew(self.config.clock_skew)
            .launch_deadline(self.config.launch_deadline)
            .tag_attempts(self.config.tag_attempts);
        Ok(match self.config.max_launch_processing {
            Some(processing) => builder.max_launch_processing(processing),
            None => builder,
        }
        .build())
    }

    /// The fake's control handle.
    pub fn aap(&self) -> &FakeAap {
        self.server.aap()
    }
}

/// The installed chaos faults, with labels for the report.
#[derive(Clone, Debug, Default)]
pub struct Chaos {
    faults: Vec<(String, FaultId)>,
}

impl Chaos {
    /// Installs the chaos mix on `aap` (fractions are per request and seeded by the fake's seed):
    /// - 5 % 5xx: 2.5 % `500` JSON, 1 % `502` HTML, 1 % `503` HTML, 0.5 % `504` HTML;
    /// - 2 % `429`: 1 % `Retry-After: 1` (seconds), 1 % `Retry-After: <HTTP-date>` (1 s after
    ///   the install, so in the past for most of the run);
    /// - 1 % connection resets, 1 % responses slower than `client_timeout`;
    /// - 0.5 % malformed and 0.5 % truncated JSON bodies on `GET`s;
    /// - launch responses lost **after** the job was created: 2 % resets, 1 % `502`, 1 % too slow,
    ///   1 % malformed JSON.
    pub fn install(aap: &FakeAap, client_timeout: Duration) -> Self {
        let any = |path: &str, trigger: f64, strike: Strike, action: FaultAction| Fault {
            method: None,
            path: path.to_owned(),
            trigger: Trigger::Fraction(trigger),
            strike,
            action,
        };
        let on =
            |method: &str, path: &str, trigger: f64, strike: Strike, action: FaultAction| Fault {
                method: Some(method.to_owned()),
                ..any(path, trigger, strike, action)
            };
        let slow = slowest_answer(client_timeout);
        // Whole seconds are the header's resolution: 1 s (unscaled) is the shortest wait.
        let date = SystemTime::now() + Duration::from_secs(1);
        let launch = "/api/v2/*/launch/";
        let list: Vec<(&str, Fault)> = vec![
            (
                "500 JSON",
                any("*", 0.025, Strike::Before, FaultAction::server_error()),
            ),
            (
                "502 HTML",
                any("*", 0.01, Strike::Before, FaultAction::gateway_html(502)),
            ),
            (
                "503 HTML",
                any("*", 0.01, Strike::Before, FaultAction::gateway_html(503)),
            ),
            (
                "504 HTML",
                any("*", 0.005, Strike::Before, FaultAction::gateway_html(504)),
            ),
            (
                "429 Retry-After: 1",
                any(
                    "*",
                    0.01,
                    Strike::Before,
                    FaultAction::too_many_requests(RetryAfter::Seconds(1)),
                ),
            ),
            (
                "429 Retry-After: date",
                any(
                    "*",
                    0.01,
                    Strike::Before,
                    FaultAction::too_many_requests(RetryAfter::Date(date)),
                ),
            ),
            (
                "connection reset",
                any("*", 0.01, Strike::Before, FaultAction::ConnectionReset),
            ),
            (
                "slower than the client timeout",
                any("*", 0.01, Strike::Before, FaultAction::Latency(slow)),
            ),
            (
                "malformed JSON (GET)",
                on("GET", "*", 0.005, Strike::After, FaultAction::MalformedJson),
            ),
            (
                "truncated JSON (GET)",
                on("GET", "*", 0.005, Strike::After, FaultAction::TruncatedJson),
            ),
            (
                "launch reset after create",
                on(
                    "POST",
                    launch,
                    0.02,
                    Strike::After,
                    FaultAction::ConnectionReset,
                ),
            ),
            (
                "launch 502 after create",
                on(
                    "POST",
                    launch,
                    0.01,
                    Strike::After,
                    FaultAction::gateway_html(502),
                ),
            ),
            (
                "launch too slow after create",
                on(
                    "POST",
                    launch,
                    0.01,
                    Strike::After,
                    FaultAction::Latency(slow),
                ),
            ),
            (
                "launch malformed after create",
                on(
                    "POST",
                    launch,
                    0.01,
                    Strike::After,
                    FaultAction::MalformedJson,
                ),
            ),
        ];
        let faults = list
            .into_iter()
            .map(|(label, f)| (label.to_owned(), aap.add_fault(f)))
            .collect();
        Self { faults }
    }

    /// `(label, hits)` of every fault.
    pub fn hits(&self, aap: &FakeAap) -> Vec<(String, u64)> {
        self.faults
            .iter()
            .map(|(l, id)| (l.clone(), aap.fault_hits(*id)))
            .collect()
    }

    /// Removes the faults (before the audit).
    pub fn remove(&self, aap: &FakeAap) {
        for (_, id) in &self.faults {
            aap.remove_fault(*id);
        }
    }
}

/// The slowest answer of the chaos faults ("slower than the client timeout"): half the client
/// timeout past it.
pub fn slowest_answer(client_timeout: Duration) -> Duration {
    client_timeout + client_timeout / 2
}
