//! An operator test environment in one call (feature `operator`): the envtest of provkit.
//!
//! [`OperatorTestEnv`] starts, for one custom resource type `K`:
//! - the in-memory [fake API server](crate::fake_apiserver) with `K`'s CRD;
//! - the [fake AAP](crate::fake_aap) on a loopback port with your job templates;
//! - one shared [`ManualClock`] for both fakes, the `AapProvider` and your lifecycle (jobs run
//!   in virtual time: [`OperatorTestEnv::advance`]);
//! - a test-speed [`LifecyclePolicy`] ([`test_speed_policy`]: 100 ms polls, 10 ms minimum
//!   requeue — the default 30 s poll would make a test wait half a minute per job);
//! - **your own** reconcile function and error policy in kube-runtime's `Controller`, with the
//!   context your operator builds from the [`OperatorWiring`] it is handed.
//!
//! It then offers waits on outcomes (never on time), the launches per template, a job's
//! extra_vars as typed JSON, conditions by type, faults on both fakes, and a controller restart.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use kube::{CustomResource, runtime::controller::Action};
//! # use provkit_kube::{NoCallbacks, Provisioner, ReconcileError, ProvisioningStatus, HasProvisioningStatus};
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
//! # pub struct WidgetSpec { size: u32 }
//! # #[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
//! # pub struct WidgetStatus { #[serde(flatten)] provisioning: ProvisioningStatus }
//! # impl HasProvisioningStatus for WidgetStatus {
//! #     fn provisioning(&self) -> &ProvisioningStatus { &self.provisioning }
//! #     fn provisioning_mut(&mut self) -> &mut ProvisioningStatus { &mut self.provisioning }
//! # }
//! use provkit_testing::operator_env::OperatorTestEnv;
//!
//! async fn reconcile(obj: Arc<Widget>, ctx: Arc<Provisioner<Widget>>) -> Result<Action, ReconcileError> {
//!     ctx.reconcile(obj, &NoCallbacks).await
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let env = OperatorTestEnv::<Widget>::builder()
//!     .template("acme-create-widget")
//!     .template("acme-delete-widget")
//!     .template_prefix("acme")
//!     .start(|w| w.provisioner("example.com/finalizer"), reconcile, provkit_kube::error_policy)
//!     .await?;
//! env.create(&Widget::new("w", WidgetSpec { size: 1 })).await?;
//! env.wait_launches("acme-create-widget", 1).await?;
//! env.advance(std::time::Duration::from_secs(60));
//! env.wait_condition("w", "Succeeded", "True").await?;
//! # Ok(()) }
//! ```
//!
//! Hand-written (there is no envtest crate for kube-rs, and the pieces are this crate's fakes).

mod jobs;
mod wait;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::runtime::{Controller, watcher};
use kube::{CustomResourceExt, Resource};
use provkit_aap::{AapClient, AapProvider, AapProviderBuilder};
use provkit_core::{Clock, ManualClock};
use provkit_kube::{EventPublisher, NamespaceScope, Provisioner};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};
use crate::fake_apiserver::{FakeApiServer, Fault, FaultEffect, FaultId};

pub use wait::{DEFAULT_WAIT, EnvError, eventually};

/// The lifecycle policy of [`OperatorTestEnv`]: the default policy with running jobs polled
/// every 100 ms and a 10 ms smallest requeue, so a test sees a job's end a moment after it
/// advanced the clock past it. Use it when you wire a test by hand, too.
///
/// ```
/// let policy = provkit_testing::operator_env::test_speed_policy();
/// assert_eq!(policy.poll_interval, std::time::Duration::from_millis(100));
/// assert_eq!(policy.min_requeue, std::time::Duration::from_millis(10));
/// ```
#[must_use]
pub fn test_speed_policy() -> LifecyclePolicy {
    LifecyclePolicy::default()
        .with_poll_interval(Duration::from_millis(100))
        .with_min_requeue(Duration::from_millis(10))
}

/// What the environment hands your context factory: build your operator's context from these,
/// exactly as your `main` does from the real ones. A fresh wiring (a new `AapClient` and
/// `AapProvider`) is made on every (re)start, as a restarted process would have.
#[derive(Clone)]
#[non_exhaustive]
pub struct OperatorWiring {
    /// The operator's client on the fake API server (User-Agent `<controller>/test`, so its
    /// writes are attributed to the controller name in `managedFields` and the request log).
    pub client: kube::Client,
    /// The real `AapProvider`, on the fake AAP, with the shared clock.
    pub provider: Arc<AapProvider>,
    /// The shared manual clock.
    pub clock: Arc<dyn Clock>,
    /// The test-speed policy ([`test_speed_policy`] unless the builder was given another).
    pub policy: LifecyclePolicy,
    /// The controller name (Events' reporting controller, the client's User-Agent).
    pub controller_name: String,
}

impl fmt::Debug for OperatorWiring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorWiring")
            .field("policy", &self.policy)
            .field("controller_name", &self.controller_name)
            .finish_non_exhaustive()
    }
}

impl OperatorWiring {
    /// The lifecycle engine on [`provider`](Self::provider), [`clock`](Self::clock) and
    /// [`policy`](Self::policy).
    #[must_use]
    pub fn lifecycle(&self) -> Lifecycle {
        Lifecycle::new(self.provider.clone(), self.clock.clone()).with_policy(self.policy.clone())
    }

    /// A `Provisioner` for `K` with [`lifecycle`](Self::lifecycle), `finalizer` and Events
    /// published as the controller (instance `test-0`): the context of an operator that needs
    /// nothing else (`Provisioner<K>` is its own `AsRef<Provisioner<K>>`).
    #[must_use]
    pub fn provisioner<K: provkit_kube::ProvisionedResource>(
        &self,
        finalizer: &str,
    ) -> Provisioner<K> {
        let reporter = Reporter {
            controller: self.controller_name.clone(),
            instance: Some("test-0".into()),
        };
        Provisioner::new(self.client.clone(), self.lifecycle(), finalizer)
            .with_events(EventPublisher::new(self.client.clone(), reporter))
    }
}

/// Starts the controller task: the stored factory, reconcile and error policy over fresh wiring.
type Launcher = Box<dyn Fn(OperatorWiring) -> JoinHandle<()> + Send + Sync>;
/// Customises the provider built over the fake AAP.
type ProviderHook = Box<dyn Fn(AapProviderBuilder) -> AapProviderBuilder + Send + Sync>;

/// Builder of [`OperatorTestEnv`] (from [`OperatorTestEnv::builder`]).
pub struct OperatorTestEnvBuilder<K> {
    templates: Vec<JobTemplateSpec>,
    organization: String,
    template_prefix: Option<String>,
    namespace: String,
    controller_name: String,
    start_time: DateTime<Utc>,
    policy: LifecyclePolicy,
    provider: Option<ProviderHook>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for OperatorTestEnvBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorTestEnvBuilder")
            .field("templates", &self.templates.len())
            .field("organization", &self.organization)
            .field("template_prefix", &self.template_prefix)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// The script of a template added by name: the job succeeds after 10 s of virtual time.
const DEFAULT_JOB_RUNTIME: Duration = Duration::from_secs(10);

impl<K> OperatorTestEnvBuilder<K>
where
    K: Resource<DynamicType = ()>
        + CustomResourceExt
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + fmt::Debug
        + Send
        + Sync
        + 'static,
    K::Scope: NamespaceScope,
{
    fn new() -> Self {
        Self {
            templates: Vec::new(),
            organization: "Default".into(),
            template_prefix: None,
            namespace: "default".into(),
            controller_name: "provkit-test-operator".into(),
            start_time: Utc
                .with_ymd_and_hms(2030, 1, 1, 0, 0, 0)
                .single()
                .unwrap_or_default(),
            policy: test_speed_policy(),
            provider: None,
            _kind: std::marker::PhantomData,
        }
    }

    /// A job template whose jobs succeed after 10 s of virtual time.
    #[must_use]
    pub fn template(self, name: &str) -> Self {
        self.template_script(name, JobScript::successful(DEFAULT_JOB_RUNTIME))
    }

    /// A job template whose jobs follow `script` (failures, cancels, phases: [`JobScript`]).
    #[must_use]
    pub fn template_script(self, name: &str, script: JobScript) -> Self {
        let spec = JobTemplateSpec {
            script: Some(script),
            ..JobTemplateSpec::new(name, &self.organization)
        };
        self.job_template(spec)
    }

    /// A job template spelled out in full (surveys, prompts, inventory…). Its organization
    /// should be this builder's ([`organization`](Self::organization)).
    #[must_use]
    pub fn job_template(mut self, spec: JobTemplateSpec) -> Self {
        self.templates.push(spec);
        self
    }

    /// The fake AAP's organization of the templates added after this call (default `Default`).
    #[must_use]
    pub fn organization(mut self, name: &str) -> Self {
        name.clone_into(&mut self.organization);
        self
    }

    /// The provider's template prefix: `<prefix>-create-<kind>` / `<prefix>-delete-<kind>`
    /// (`AapProviderBuilder::template_prefix`). Without one, configure names with
    /// [`provider`](Self::provider).
    #[must_use]
    pub fn template_prefix(mut self, prefix: &str) -> Self {
        self.template_prefix = Some(prefix.to_owned());
        self
    }

    /// Customises the `AapProvider` beyond the prefix (template names, envelope…). The clock
    /// is set after this hook: it is always the shared clock.
    #[must_use]
    pub fn provider(
        mut self,
        configure: impl Fn(AapProviderBuilder) -> AapProviderBuilder + Send + Sync + 'static,
    ) -> Self {
        self.provider = Some(Box::new(configure));
        self
    }

    /// The namespace the objects of [`OperatorTestEnv::api`] live in (default `default`;
    /// created on the fake API server).
    #[must_use]
    pub fn namespace(mut self, name: &str) -> Self {
        name.clone_into(&mut self.namespace);
        self
    }

    /// The controller name (default `provkit-test-operator`).
    #[must_use]
    pub fn controller_name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.controller_name);
        self
    }

    /// The time the shared clock starts at (default 2030-01-01T00:00:00Z).
    #[must_use]
    pub fn start_time(mut self, at: DateTime<Utc>) -> Self {
        self.start_time = at;
        self
    }

    /// Replaces the test-speed policy handed to the context factory.
    #[must_use]
    pub fn policy(mut self, policy: LifecyclePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Starts both fakes and runs `reconcile` and `error_policy` in kube-runtime's
    /// `Controller` over `Api::all` of the operator's client, with the context
    /// `make_context(wiring)`. The factory, `reconcile` and `error_policy` are kept for
    /// [`OperatorTestEnv::restart_controller`].
    ///
    /// # Errors
    /// [`EnvError::FakeAap`] when a template is invalid or the fake AAP cannot bind a port;
    /// [`EnvError::AapClient`] when the client for it cannot be built.
    pub async fn start<Ctx, F, R, Fut, E>(
        self,
        make_context: F,
        reconcile: R,
        error_policy: E,
    ) -> Result<OperatorTestEnv<K>, EnvError>
    where
        Ctx: Send + Sync + 'static,
        F: Fn(OperatorWiring) -> Ctx + Send + Sync + 'static,
        R: Fn(Arc<K>, Arc<Ctx>) -> Fut + Clone + Send + Sync + 'static,
        Fut: futures::TryFuture<Ok = Action> + Send + 'static,
        Fut::Error: std::error::Error + Send + 'static,
        E: Fn(Arc<K>, &Fut::Error, Arc<Ctx>) -> Action + Clone + Send + Sync + 'static,
    {
        let clock = ManualClock::new(self.start_time);
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let mut aap = FakeAap::builder()
            .clock(dyn_clock.clone())
            .organization(&self.organization);
        let mut organizations = vec![self.organization.clone()];
        for spec in self.templates {
            if !organizations.contains(&spec.organization) {
                aap = aap.organization(&spec.organization);
                organizations.push(spec.organization.clone());
            }
            aap = aap.job_template(spec);
        }
        let aap = aap.start().await.map_err(EnvError::FakeAap)?;
        let server = FakeApiServer::builder()
            .crd::<K>()
            .namespace(self.namespace.clone())
            .default_namespace(self.namespace.clone())
            .clock(dyn_clock.clone())
            .build();

        let launcher: Launcher = Box::new(move |wiring: OperatorWiring| {
            let api = Api::<K>::all(wiring.client.clone());
            let ctx = Arc::new(make_context(wiring));
            let (reconcile, error_policy) = (reconcile.clone(), error_policy.clone());
            tokio::spawn(
                Controller::new(api, watcher::Config::default())
                    .run(reconcile, error_policy, ctx)
                    .for_each(|_| async {}),
            )
        });
        let env = OperatorTestEnv {
            clock,
            dyn_clock,
            aap,
            server,
            namespace: self.namespace,
            organizations,
            controller_name: self.controller_name,
            template_prefix: self.template_prefix,
            policy: self.policy,
            provider: self.provider,
            launcher,
            controller: Mutex::new(None),
            _kind: std::marker::PhantomData,
        };
        env.start_controller()?;
        Ok(env)
    }
}

/// A running operator test environment: the fakes, the clock and your controller. Dropping it
/// stops the controller and both fakes.
pub struct OperatorTestEnv<K> {
    clock: ManualClock,
    dyn_clock: Arc<dyn Clock>,
    aap: FakeAapServer,
    server: FakeApiServer,
    namespace: String,
    organizations: Vec<String>,
    controller_name: String,
    template_prefix: Option<String>,
    policy: LifecyclePolicy,
    provider: Option<ProviderHook>,
    launcher: Launcher,
    controller: Mutex<Option<JoinHandle<()>>>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for OperatorTestEnv<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorTestEnv")
            .field("clock", &self.clock.now())
            .field("aap", &self.aap.base_url())
            .field("namespace", &self.namespace)
            .field("controller_name", &self.controller_name)
            .finish_non_exhaustive()
    }
}

impl<K> Drop for OperatorTestEnv<K> {
    fn drop(&mut self) {
        if let Some(task) = self.controller.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

impl<K> OperatorTestEnv<K>
where
    K: Resource<DynamicType = ()>
        + CustomResourceExt
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + fmt::Debug
        + Send
        + Sync
        + 'static,
    K::Scope: NamespaceScope,
{
    /// Starts a builder.
    #[must_use]
    pub fn builder() -> OperatorTestEnvBuilder<K> {
        OperatorTestEnvBuilder::new()
    }

    fn wiring(&self) -> Result<OperatorWiring, EnvError> {
        let client = AapClient::builder(self.aap.base_url())
            .token(self.aap.token())
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(EnvError::AapClient)?;
        let mut builder = AapProvider::builder(client);
        if let Some(prefix) = &self.template_prefix {
            builder = builder.template_prefix(prefix.clone());
        }
        if let Some(configure) = &self.provider {
            builder = configure(builder);
        }
        let provider = builder.clock(self.dyn_clock.clone()).build();
        Ok(OperatorWiring {
            client: self
                .server
                .client_with_user_agent(&format!("{}/test", self.controller_name)),
            provider: Arc::new(provider),
            clock: self.dyn_clock.clone(),
            policy: self.policy.clone(),
            controller_name: self.controller_name.clone(),
        })
    }

    fn start_controller(&self) -> Result<(), EnvError> {
        let task = (self.launcher)(self.wiring()?);
        let mut slot = self
            .controller
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(old) = slot.replace(task) {
            old.abort();
        }
        Ok(())
    }

    /// Stops the controller as a crash would (in-flight reconciles are dropped, nothing is
    /// flushed) and starts it again with a fresh context, provider and AAP client from your
    /// factory: what survives is what the fakes hold, as after a process restart.
    ///
    /// # Errors
    /// [`EnvError::AapClient`] when the new AAP client cannot be built.
    pub fn restart_controller(&self) -> Result<(), EnvError> {
        self.stop_controller();
        self.start_controller()
    }

    /// Stops the controller as a crash would; [`restart_controller`](Self::restart_controller)
    /// starts it again.
    pub fn stop_controller(&self) {
        let mut slot = self
            .controller
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(task) = slot.take() {
            task.abort();
        }
    }

    /// The user's view: `K` objects in the environment's namespace (cluster-scoped kinds: all),
    /// through a client named `user`.
    #[must_use]
    pub fn api(&self) -> Api<K> {
        K::Scope::api(
            self.server.client_named("user"),
            Some(self.namespace.as_str()),
        )
    }

    /// Creates `obj` as the user (in the environment's namespace when it names none).
    ///
    /// # Errors
    /// The API server's answer ([`EnvError::Kube`]).
    pub async fn create(&self, obj: &K) -> Result<K, EnvError> {
        Ok(self.api().create(&PostParams::default(), obj).await?)
    }

    /// Merge-patches the object `name` as the user (`{"spec": {...}}` changes its spec).
    ///
    /// # Errors
    /// The API server's answer ([`EnvError::Kube`]).
    pub async fn merge_patch(&self, name: &str, patch: serde_json::Value) -> Result<K, EnvError> {
        let patch = kube::api::Patch::Merge(patch);
        Ok(self
            .api()
            .patch(name, &kube::api::PatchParams::default(), &patch)
            .await?)
    }

    /// Deletes the object `name` as the user (its finalizers keep it until they are removed).
    ///
    /// # Errors
    /// The API server's answer ([`EnvError::Kube`]).
    pub async fn delete(&self, name: &str) -> Result<(), EnvError> {
        self.api()
            .delete(name, &kube::api::DeleteParams::default())
            .await?;
        Ok(())
    }

    /// The shared manual clock.
    #[must_use]
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Moves the shared clock forward: jobs of the fake AAP progress by `by`.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// The fake API server (objects, Events, requests, [`FakeApiServer::inject`]).
    #[must_use]
    pub fn apiserver(&self) -> &FakeApiServer {
        &self.server
    }

    /// The fake AAP's state (jobs, requests, [`FakeAap::add_fault`], scripts).
    #[must_use]
    pub fn aap(&self) -> &FakeAap {
        self.aap.aap()
    }

    /// The running fake AAP server (its URL and token).
    #[must_use]
    pub fn aap_server(&self) -> &FakeAapServer {
        &self.aap
    }

    /// Injects a fault on the fake API server.
    pub fn inject_api_fault(&self, fault: Fault) -> FaultId {
        self.server.inject(fault)
    }

    /// Injects a fault on the fake AAP.
    pub fn inject_aap_fault(&self, fault: crate::fake_aap::Fault) -> crate::fake_aap::FaultId {
        self.aap().add_fault(fault)
    }

    /// The next `times` writes of the operator to `K`'s status subresource answer 500
    /// `InternalError` and change nothing (a refused status write).
    pub fn refuse_status_writes(&self, times: u32) -> FaultId {
        self.server.inject(
            Fault::new(FaultEffect::InternalError)
                .resource(K::plural(&()).into_owned())
                .subresource(Some("status"))
                .client(self.controller_name.clone())
                .times(times),
        )
    }
}
