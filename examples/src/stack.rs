//! The product stack: the fakes plus the controllers users run, for example programs.
//!
//! - [`Stack`]: provkit-testing's fake AAP server on 127.0.0.1 (one job template pair per
//!   resource kind, [`KindJobs`]) and its fake Kubernetes API server ([`FakeApiServer`], an
//!   in-process `kube::Client`) with the CRDs registered ([`Stack::register`]).
//! - [`Replica`]: one operator process. Each [`Replica::run`] starts a kube-runtime
//!   [`Controller`] for one kind, whose reconcile is provkit-kube's [`Provisioner`] over the real
//!   [`AapProvider`] / [`AapClient`] (loopback HTTP to the fake AAP). [`Replica::crash`] drops the
//!   whole process at once — controllers, watches and caches, provisioners, lifecycle engines,
//!   provider, client and every in-memory journal — so the next `Replica` is built from nothing
//!   but the API server's state (and AAP's).
//! - [`Controlled`]: what a running controller exposes to the program: extra per-object
//!   reconcile triggers ([`Controlled::trigger`], fed to `Controller::reconcile_on`) and a read of
//!   its informer cache ([`Controlled::cached`]).
//! - [`TimeScale`]: real time, every production duration (poll interval, backoff, job phases,
//!   cancel delay, error requeue, client timeouts and retry sleeps) multiplied by one factor, so
//!   relative timings stay as in production. Tokio's paused time is not used: it would fire
//!   client timeouts while a request waits on a real socket.
//!
//! Nothing here re-implements a product part: the API server, informer, queue and status writer
//! are provkit-testing's, kube-runtime's and provkit-kube's. [`ReconcileObserver`] only watches the
//! reconcile function (as a user's own wrapper would).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use provkit_examples::stack::{KindJobs, NoObserver, Replica, Stack, StackConfig, TimeScale, kinds::VirtualNetwork};
//!
//! let mut config = StackConfig::new(TimeScale::new(0.01));
//! config.kinds.push(KindJobs::new("VirtualNetwork", Duration::from_secs(45), Duration::from_secs(20)));
//! let stack = Stack::start(config).await?;
//! stack.register::<VirtualNetwork>()?;
//! let mut replica = Replica::new(&stack, "operator-0")?;
//! let networks = replica.run::<VirtualNetwork>(Arc::new(NoObserver));
//! // … create objects with `stack.user_client()`, watch them converge …
//! # let _ = networks;
//! replica.crash().await; // a restart is `Replica::new` again
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, CustomResourceExt};
use provkit_aap::provider::{Envelope, TemplateAction, TemplateNames};
use provkit_aap::{AapClient, AapProvider, RetryConfig};
use provkit_core::{Clock, SystemClock};
use provkit_kube::{
    ErrorBackoffConfig, ErrorChain, EventPublisher, NoCallbacks, ProvisionedResource, Provisioner,
    ReconcileError,
};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy, ProvisioningProvider};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec, ScriptRule};
use provkit_testing::fake_apiserver::FakeApiServer;
use tokio::task::JoinHandle;

pub mod kinds;

/// The template prefix: templates are `pk-create-<kind>` and `pk-delete-<kind>`.
pub const TEMPLATE_PREFIX: &str = "pk";

/// The AAP organization holding the templates.
pub const ORGANIZATION: &str = "Default";

/// The field manager and Events' reporting controller of every replica.
pub const CONTROLLER_NAME: &str = "provkit-examples";

/// The shortest client timeout a [`TimeScale`] hands out: on a shared machine the scheduler
/// alone can stall a loopback request for longer than a scaled 30 s; a floor only makes a
/// timeout rarer, it never changes a decision.
pub const TIMEOUT_FLOOR: Duration = Duration::from_secs(2);

/// Real time = production time × factor.
///
/// ```
/// use std::time::Duration;
/// use provkit_examples::stack::TimeScale;
/// let scale = TimeScale::new(0.01);
/// assert_eq!(scale.of(Duration::from_secs(30)), Duration::from_millis(300));
/// assert_eq!(scale.production(Duration::from_millis(300)), Duration::from_secs(30));
/// assert_eq!(scale.to_string(), "1:100 (30 s of production time take 300 ms)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeScale {
    factor: f64,
}

impl TimeScale {
    /// `factor` in `(0, 1]` (clamped; 1 = production speed).
    #[must_use]
    pub fn new(factor: f64) -> Self {
        let factor = if factor.is_finite() {
            factor.clamp(1e-4, 1.0)
        } else {
            1.0
        };
        Self { factor }
    }

    /// The factor.
    #[must_use]
    pub fn factor(self) -> f64 {
        self.factor
    }

    /// The real duration of a production duration.
    #[must_use]
    pub fn of(self, production: Duration) -> Duration {
        production.mul_f64(self.factor)
    }

    /// The production duration a real one stands for.
    #[must_use]
    pub fn production(self, real: Duration) -> Duration {
        real.div_f64(self.factor)
    }

    /// A client timeout: scaled, at least [`TIMEOUT_FLOOR`].
    #[must_use]
    pub fn timeout(self, production: Duration) -> Duration {
        self.of(production).max(TIMEOUT_FLOOR)
    }

    /// `policy` with its durations scaled (poll interval, backoff bounds, smallest requeue).
    #[must_use]
    pub fn policy(self, mut policy: LifecyclePolicy) -> LifecyclePolicy {
        policy.poll_interval = self.of(policy.poll_interval);
        policy.backoff.base = self.of(policy.backoff.base);
        policy.backoff.max = self.of(policy.backoff.max);
        policy.min_requeue = self.of(policy.min_requeue);
        policy
    }

    /// `script` with its phases, cancel delay and event-processing lag scaled.
    #[must_use]
    pub fn script(self, mut script: JobScript) -> JobScript {
        script.pending = self.of(script.pending);
        script.waiting = self.of(script.waiting);
        script.running = self.of(script.running);
        script.cancel_delay = script.cancel_delay.map(|d| self.of(d));
        script.event_processing_lag = script.event_processing_lag.map(|d| self.of(d));
        script
    }

    /// provkit-kube's per-object error backoff `production` (default: 1 s doubling to
    /// 5 min), its delays scaled.
    #[must_use]
    pub fn error_backoff(self, production: ErrorBackoffConfig) -> ErrorBackoffConfig {
        production
            .with_initial(self.of(production.initial))
            .with_max(self.of(production.max))
    }

    /// How long provkit-kube's Event recorder continues an Event's series (production:
    /// [`DEFAULT_EVENT_TTL`](provkit_kube::recorder::DEFAULT_EVENT_TTL), 6 minutes), scaled:
    /// a compressed run remembers as many Events as the production operator would.
    #[must_use]
    pub fn event_ttl(self) -> Duration {
        self.of(provkit_kube::recorder::DEFAULT_EVENT_TTL)
    }

    /// The AAP client's retry policy (production: 250 ms doubling to 10 s, 60 s in total), scaled.
    #[must_use]
    pub fn retry(self) -> RetryConfig {
        RetryConfig::default()
            .initial_backoff(self.of(Duration::from_millis(250)))
            .max_backoff(self.of(Duration::from_secs(10)))
            .max_elapsed(self.timeout(Duration::from_secs(60)))
    }
}

impl fmt::Display for TimeScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "1:{} (30 s of production time take {} ms)",
            (1.0 / self.factor).round(),
            self.of(Duration::from_secs(30)).as_millis()
        )
    }
}

/// The AAP job templates of one resource kind, in production durations.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct KindJobs {
    /// The resource kind (`VirtualNetwork` → templates `pk-create-virtual-network`, …).
    pub kind: String,
    /// Script of the provision jobs.
    pub create: JobScript,
    /// Per-launch rules of the provision template (e.g. fail the first N launches).
    pub create_rules: Vec<ScriptRule>,
    /// Script of the deprovision jobs.
    pub delete: JobScript,
    /// Variables the provision playbook reads (e.g. `osac_job_vars.resource.spec`): its jobs fail
    /// as Ansible does when one is undefined (see `JobTemplateSpec::reads`).
    pub create_reads: Vec<String>,
}

impl KindJobs {
    /// Provision jobs run `create_running`, deprovision jobs `delete_running` (both succeed).
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
            create_reads: Vec::new(),
        }
    }

    /// The provision playbook reads `paths` from its extra_vars.
    #[must_use]
    pub fn reading(mut self, paths: &[&str]) -> Self {
        self.create_reads = paths.iter().map(|p| (*p).to_owned()).collect();
        self
    }

    /// The first `n` provision launches of this kind fail (after `running`).
    #[must_use]
    pub fn failing_first(mut self, n: u32, running: Duration) -> Self {
        if n > 0 {
            let mut rule = ScriptRule::fail_times(n);
            rule.script = JobScript::ending(rule.script.outcome, running)
                .with_explanation("Playbook failed: simulated failure");
            self.create_rules.push(rule);
        }
        self
    }
}

/// How a [`Stack`] is built.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StackConfig {
    /// The time scale of everything.
    pub scale: TimeScale,
    /// Templates per resource kind.
    pub kinds: Vec<KindJobs>,
    /// The lifecycle policy in production durations (scaled by the stack).
    pub policy: LifecyclePolicy,
    /// Seed of both fakes' random choices.
    pub seed: u64,
    /// Fake AAP request-log ring size (0 = off, for load runs).
    pub aap_request_log: usize,
    /// Fake API server request-log size (0 = off).
    pub api_request_log: usize,
}

impl StackConfig {
    /// No kinds yet, the default policy, seed 42, request logs on.
    #[must_use]
    pub fn new(scale: TimeScale) -> Self {
        Self {
            scale,
            kinds: Vec::new(),
            policy: LifecyclePolicy::default(),
            seed: 42,
            aap_request_log: 100_000,
            api_request_log: 100_000,
        }
    }
}

/// A failure to build the stack or a replica.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StackError {
    /// The fake AAP server did not start.
    #[error("the fake AAP server did not start")]
    Aap(#[source] provkit_testing::fake_aap::FakeAapError),
    /// A CRD was refused by the fake API server.
    #[error("the fake API server refused a CRD")]
    Crd(#[source] provkit_testing::fake_apiserver::CrdError),
    /// A CRD did not serialise.
    #[error("a CRD did not serialise")]
    CrdJson(#[source] serde_json::Error),
    /// The AAP client could not be built.
    #[error("the AAP client could not be built")]
    Client(#[source] provkit_aap::Error),
}

/// The fakes: AAP on loopback, the API server in-process.
#[derive(Debug)]
pub struct Stack {
    aap: FakeAapServer,
    api: FakeApiServer,
    scale: TimeScale,
    policy: LifecyclePolicy,
}

impl Stack {
    /// Starts the fake AAP server (one template pair per kind, every duration scaled) and
    /// builds the fake API server (no CRD yet: [`register`](Self::register)).
    ///
    /// # Errors
    /// [`StackError::Aap`] when the server does not start.
    pub async fn start(config: StackConfig) -> Result<Self, StackError> {
        let scale = config.scale;
        let names = TemplateNames::with_prefix(TEMPLATE_PREFIX);
        let mut builder = FakeAap::builder()
            .organization(ORGANIZATION)
            .seed(config.seed)
            .cancel_delay(scale.of(Duration::from_secs(2)))
            .request_log_capacity(config.aap_request_log);
        for kind in &config.kinds {
            let template = |action, script: &JobScript, rules: &[ScriptRule]| JobTemplateSpec {
                allow_simultaneous: true,
                script: Some(scale.script(script.clone())),
                scripts: rules
                    .iter()
                    .map(|r| ScriptRule {
                        script: scale.script(r.script.clone()),
                        ..r.clone()
                    })
                    .collect(),
                ..JobTemplateSpec::new(
                    names.resolve(action, &kind.kind).unwrap_or_default(),
                    ORGANIZATION,
                )
            };
            builder = builder
                .job_template(JobTemplateSpec {
                    reads: kind.create_reads.clone(),
                    ..template(TemplateAction::Create, &kind.create, &kind.create_rules)
                })
                .job_template(template(TemplateAction::Delete, &kind.delete, &[]));
        }
        let aap = builder.start().await.map_err(StackError::Aap)?;
        let api = FakeApiServer::builder()
            .seed(config.seed)
            .request_log_limit(config.api_request_log)
            .build();
        Ok(Self {
            aap,
            api,
            scale,
            policy: config.policy,
        })
    }

    /// Registers the CRD of `K` (as `kubectl apply -f crd.yaml` would).
    ///
    /// # Errors
    /// [`StackError::Crd`] when the fake API server refuses it.
    pub fn register<K: CustomResourceExt>(&self) -> Result<(), StackError> {
        let crd = serde_json::to_value(K::crd()).map_err(StackError::CrdJson)?;
        self.api.register_crd_json(&crd).map_err(StackError::Crd)
    }

    /// The fake AAP's state (jobs, request log, faults).
    #[must_use]
    pub fn aap(&self) -> &FakeAap {
        self.aap.aap()
    }

    /// The fake AAP server (base URL, token).
    #[must_use]
    pub fn aap_server(&self) -> &FakeAapServer {
        &self.aap
    }

    /// The fake API server (objects, request log, faults).
    #[must_use]
    pub fn api(&self) -> &FakeApiServer {
        &self.api
    }

    /// The time scale.
    #[must_use]
    pub fn scale(&self) -> TimeScale {
        self.scale
    }

    /// The lifecycle policy replicas run, scaled.
    #[must_use]
    pub fn policy(&self) -> LifecyclePolicy {
        self.scale.policy(self.policy.clone())
    }

    /// The AAP template name of `kind` for `action` (`pk-create-virtual-network`).
    #[must_use]
    pub fn template_name(&self, action: TemplateAction, kind: &str) -> String {
        TemplateNames::with_prefix(TEMPLATE_PREFIX)
            .resolve(action, kind)
            .unwrap_or_default()
    }

    /// The AAP template id of `kind` for `action`.
    #[must_use]
    pub fn template_id(&self, action: TemplateAction, kind: &str) -> Option<u64> {
        self.aap()
            .template_id(&self.template_name(action, kind), Some(ORGANIZATION))
    }

    /// The client of a user (`kubectl`): requests logged under the client name `user`.
    #[must_use]
    pub fn user_client(&self) -> kube::Client {
        self.api.client_named("user")
    }
}

/// Watches a controller's reconcile function from outside (e.g. to tell a story); both
/// methods default to nothing. Called on the reconcile's task, so keep them short.
pub trait ReconcileObserver<K>: Send + Sync + 'static {
    /// A reconcile of `obj` (the informer cache's copy) starts.
    fn started(&self, obj: &K) {
        let _ = obj;
    }
    /// The reconcile of `obj` ended with `result`.
    fn finished(&self, obj: &K, result: &Result<Action, ReconcileError>) {
        let _ = (obj, result);
    }
}

/// An observer that observes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl<K> ReconcileObserver<K> for NoObserver {}

/// What one controller's reconcile function holds.
struct Ctx<K> {
    provisioner: Provisioner<K>,
    observer: Arc<dyn ReconcileObserver<K>>,
}

async fn reconcile<K: ProvisionedResource>(
    obj: Arc<K>,
    ctx: Arc<Ctx<K>>,
) -> Result<Action, ReconcileError> {
    ctx.observer.started(&obj);
    let result = ctx.provisioner.reconcile(obj.clone(), &NoCallbacks).await;
    ctx.observer.finished(&obj, &result);
    result
}

/// provkit-kube's per-object error backoff (its delays scaled, see [`Replica::new`]).
#[allow(clippy::needless_pass_by_value)] // kube-runtime's error-policy signature
fn error_policy<K: ProvisionedResource>(
    obj: Arc<K>,
    error: &ReconcileError,
    ctx: Arc<Ctx<K>>,
) -> Action {
    ctx.provisioner.error_policy(&obj, error)
}

/// One operator process: its own API-server client, AAP client and provider, and one
/// kube-runtime `Controller` per [`run`](Self::run) kind.
pub struct Replica {
    name: String,
    client: kube::Client,
    provider: Arc<dyn ProvisioningProvider>,
    clock: Arc<dyn Clock>,
    policy: LifecyclePolicy,
    error_backoff: ErrorBackoffConfig,
    event_ttl: Duration,
    concurrency: u16,
    tasks: Vec<JoinHandle<()>>,
}

impl fmt::Debug for Replica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("name", &self.name)
            .field("controllers", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// A process named `name` (its API-server client name, for faults and the request log, and
    /// its Events' instance) with a fresh `AapClient` and `AapProvider`; no controller yet.
    ///
    /// # Errors
    /// [`StackError::Client`] when the AAP client cannot be built.
    pub fn new(stack: &Stack, name: &str) -> Result<Self, StackError> {
        let scale = stack.scale;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let client = AapClient::builder(stack.aap.base_url())
            .token(stack.aap.token())
            .timeout(scale.timeout(Duration::from_secs(30)))
            .connect_timeout(scale.timeout(Duration::from_secs(10)))
            .retry(scale.retry())
            .build()
            .map_err(StackError::Client)?;
        // OSAC's current extra_vars: `osac_job_vars.resource` (osac-project/osac 232f1752e).
        // The launch deadline scaled like every other duration (production: the client's 30 s
        // timeout plus 30 s to send in): a restarted replica reads an inherited intent's window
        // once it has closed. The fake AAP handles a launch within the client's timeout.
        let provider = AapProvider::builder(client)
            .template_prefix(TEMPLATE_PREFIX)
            .envelope(Envelope::OsacJobVars)
            .clock(clock.clone())
            .launch_deadline(
                scale.timeout(Duration::from_secs(30)) + scale.of(Duration::from_secs(30)),
            )
            .max_launch_processing(scale.timeout(Duration::from_secs(30)))
            .build();
        Ok(Self {
            name: name.to_owned(),
            client: stack.api.client_named(name),
            provider: Arc::new(provider),
            clock,
            policy: stack.policy(),
            error_backoff: scale.error_backoff(ErrorBackoffConfig::default()),
            event_ttl: scale.event_ttl(),
            concurrency: 0,
            tasks: Vec::new(),
        })
    }

    /// Caps the concurrent reconciles of each controller started afterwards (kube-runtime's
    /// `controller::Config::concurrency`; 0 = unbounded, the default).
    #[must_use]
    pub fn with_concurrency(mut self, reconciles: u16) -> Self {
        self.concurrency = reconciles;
        self
    }

    /// The replica's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts a kube-runtime `Controller` for every `K` in every namespace, reconciling with a
    /// provkit-kube `Provisioner` (finalizer `provkit.dev/<kind>-finalizer`, Events from
    /// [`CONTROLLER_NAME`], their series TTL scaled: [`TimeScale::event_ttl`]) on this replica's provider.
    pub fn run<K>(&mut self, observer: Arc<dyn ReconcileObserver<K>>) -> Controlled<K>
    where
        K: ProvisionedResource + CustomResourceExt,
    {
        let finalizer = finalizer_of::<K>();
        let lifecycle = Lifecycle::new(self.provider.clone(), self.clock.clone())
            .with_policy(self.policy.clone());
        let reporter = Reporter {
            controller: CONTROLLER_NAME.into(),
            instance: Some(self.name.clone()),
        };
        let provisioner = Provisioner::new(self.client.clone(), lifecycle, finalizer)
            .with_field_manager(CONTROLLER_NAME)
            .with_error_backoff(self.error_backoff)
            .with_events(
                EventPublisher::new(self.client.clone(), reporter).with_ttl(self.event_ttl),
            );
        let ctx = Arc::new(Ctx {
            provisioner,
            observer,
        });
        let (trigger, triggers) = mpsc::unbounded();
        let config = kube::runtime::controller::Config::default().concurrency(self.concurrency);
        let controller = Controller::new(
            Api::<K>::all(self.client.clone()),
            watcher::Config::default(),
        )
        .with_config(config)
        .reconcile_on(triggers);
        let cache = controller.store();
        let name = self.name.clone();
        self.tasks.push(tokio::spawn(
            controller
                .run(reconcile, error_policy, ctx)
                .for_each(move |result| {
                    if let Err(error) = &result {
                        tracing::debug!(replica = %name, error = %ErrorChain(error), "controller error");
                    }
                    async {}
                }),
        ));
        Controlled { trigger, cache }
    }

    /// Kills the process: every controller future is dropped mid-flight (in-flight requests
    /// are abandoned, as with `kill -9`), and with them every cache, engine, provider and
    /// client of this replica. Returns once all of it is gone; its [`Controlled`] handles then
    /// trigger nothing ([`Controlled::trigger`] answers `false`).
    pub async fn crash(self) {
        let Self { tasks, .. } = self;
        for task in &tasks {
            task.abort();
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// The finalizer of `K`: `provkit.dev/<kind>-finalizer` (kind lowercased).
#[must_use]
pub fn finalizer_of<K: CustomResourceExt>() -> String {
    let crd = K::crd();
    format!(
        "provkit.dev/{}-finalizer",
        crd.spec.names.kind.to_ascii_lowercase()
    )
}

/// A running controller of one kind, as the program sees it.
pub struct Controlled<K: kube::Resource<DynamicType = ()> + 'static> {
    trigger: mpsc::UnboundedSender<ObjectRef<K>>,
    cache: Store<K>,
}

impl<K: kube::Resource<DynamicType = ()> + 'static> fmt::Debug for Controlled<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controlled").finish_non_exhaustive()
    }
}

impl<K> Controlled<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    /// Asks the controller to reconcile `namespace/name` now (its informer cache's copy), as
    /// an extra watch or a push notification would; `false` once the controller is gone.
    pub fn trigger(&self, namespace: &str, name: &str) -> bool {
        self.trigger
            .unbounded_send(ObjectRef::new(name).within(namespace))
            .is_ok()
    }

    /// The controller's informer-cache copy of `namespace/name`.
    #[must_use]
    pub fn cached(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.cache.get(&ObjectRef::new(name).within(namespace))
    }
}
