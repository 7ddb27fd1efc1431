//! A faithful fake AAP / AWX controller API server.
//!
//! The fake is a stateful axum application that reproduces the controller REST API as real
//! AWX 24.6 answers it (paths, bodies, status codes, headers, pagination, prompt rules, job
//! state machine), in three layouts ([`Mode`]): plain AWX under `/api/v2/`, AAP 2.5+ behind
//! the gateway under `/api/controller/v2/` (with `/api/v2/` answering 404), or both.
//!
//! * In-process: [`FakeAap::builder`] → [`FakeAapBuilder::start`] binds a random port on
//!   127.0.0.1 (optionally HTTPS with a generated CA, [`FakeAapBuilder::https`]), or
//!   [`FakeAap::router`] for `tower::ServiceExt::oneshot` tests without a socket.
//! * Standalone: the `fake-aap` binary (`--listen`, `--mode`, `--fixtures`, `--token`).
//!
//! Job progress is computed from the server's clock whenever a job is read (no background
//! tasks): share a [`provkit_core::ManualClock`] with the code under test, or call
//! [`FakeAap::advance`], and every job moves at once. A served fake also pushes job status
//! changes over AWX's websocket (`/websocket/`, aap-observed.md §13.4): one task reads each
//! job's timeline at the moments it changes (at least every 50 ms of wall time, so a moved clock
//! is noticed); see [`FakeAap::websocket_stats`] and the `websocket_*` faults.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use provkit_testing::fake_aap::{FakeAap, JobScript, JobTemplateSpec};
//! use std::time::Duration;
//! use tower::ServiceExt as _;
//!
//! let aap = FakeAap::builder()
//!     .organization("osac")
//!     .job_template(JobTemplateSpec {
//!         script: Some(JobScript::successful(Duration::from_secs(5))),
//!         ..JobTemplateSpec::new("create-network", "osac")
//!     })
//!     .build()?;
//! let req = http::Request::post("/api/v2/job_templates/create-network++osac/launch/")
//!     .header("authorization", format!("Bearer {}", aap.admin_token()))
//!     .header("content-type", "application/json")
//!     .body(axum::body::Body::from(r#"{"extra_vars": {"cidr": "10.0.0.0/24"}}"#))?;
//! let resp = aap.router().oneshot(req).await?;
//! assert_eq!(resp.status(), 201);
//! aap.advance(Duration::from_secs(60));
//! assert_eq!(aap.jobs()[0].status, "successful");
//! # Ok(()) }
//! ```

mod announce;
mod app;
mod build_state;
mod clock;
mod error;
mod faults;
mod filter;
mod http;
mod ovalue;
mod pagination;
mod playbook;
mod pyjson;
mod query;
mod render;
mod request_log;
mod routes;
mod script;
mod server;
mod snapshot;
mod spec;
mod state;
mod survey;
mod tls;
mod websocket;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::{Clock, SystemClock};

pub use error::FakeAapError;
pub use faults::{Fault, FaultAction, FaultId, RetryAfter, Strike, Trigger};
pub use ovalue::{OMap, OValue};
pub use request_log::{Counters, Endpoint, LoggedRequest};
pub use script::{FailedEvent, Hold, JobScript, Outcome, ScriptRule, Status};
pub use server::FakeAapServer;
pub use snapshot::{JobRecord, JobsSnapshot};
pub use spec::{
    AskFlags, Fixtures, InventorySpec, JobTemplateSpec, Mode, OrganizationSpec, Scope, Settings,
    SurveyQuestion, SurveySpec, TokenSpec, UserSpec, WorkflowJobTemplateSpec, WorkflowNodeSpec,
};
pub use websocket::WebsocketStats;

use self::app::App;
use self::state::{Template, Unified};

/// What [`FakeAap::jobs_footprint`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobsFootprint {
    /// Jobs and workflow jobs held (deleted ones excluded).
    pub jobs: usize,
    /// The sum of their `extra_vars` texts' lengths, in bytes.
    pub extra_vars_bytes: usize,
}

/// A job as the inspection API reports it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct JobInfo {
    /// Unified job id.
    pub id: u64,
    /// `job` or `workflow_job`.
    pub kind: &'static str,
    /// Template id (job template, or workflow job template for workflow jobs).
    pub template: Option<u64>,
    /// Job name (the template's name).
    pub name: String,
    /// Status now.
    pub status: &'static str,
    /// `extra_vars` exactly as the API shows it (a JSON string): every launch variable, secrets
    /// included, except the answers to `password` survey questions (the template's, or a
    /// launching workflow's), shown as `$encrypted$` as AWX shows them.
    pub extra_vars: String,
    /// `launch_type` (`manual`, `workflow`, …).
    pub launch_type: &'static str,
    /// Parent workflow job for workflow children.
    pub parent_workflow: Option<u64>,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// What the template's playbook reads ([`JobTemplateSpec::reads`]) from this job's
    /// `extra_vars`: each path with its value, or Ansible's undefined-variable error.
    pub reads: Vec<(String, Result<serde_json::Value, String>)>,
    /// When the job ended (terminal status), by the server's clock.
    pub finished: Option<DateTime<Utc>>,
}

/// Handle to a fake AAP server's state: build the axum router, inspect and steer it.
/// Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct FakeAap {
    app: Arc<App>,
}

/// Builder for [`FakeAap`] and [`FakeAapServer`].
#[derive(Debug, Default)]
pub struct FakeAapBuilder {
    fixtures: Fixtures,
    clock: Option<Arc<dyn Clock>>,
    https: bool,
    listen: Option<SocketAddr>,
}

impl FakeAapBuilder {
    /// Starts from fixtures (e.g. read by [`Fixtures::from_yaml`]).
    #[must_use]
    pub fn fixtures(mut self, fixtures: Fixtures) -> Self {
        self.fixtures = fixtures;
        self
    }

    /// API layout (default AWX).
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.fixtures.settings.mode = mode;
        self
    }

    /// The server's clock (default [`SystemClock`]); share a `ManualClock` with the code under test.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Serve HTTPS with a generated certificate (see [`FakeAapServer::ca_pem`]).
    #[must_use]
    pub fn https(mut self, on: bool) -> Self {
        self.https = on;
        self
    }

    /// Listen address (default `127.0.0.1:0`); must be loopback.
    #[must_use]
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = Some(addr);
        self
    }

    /// Adds an organization.
    #[must_use]
    pub fn organization(mut self, name: &str) -> Self {
        self.fixtures.organizations.push(OrganizationSpec {
            name: name.to_owned(),
            ..OrganizationSpec::default()
        });
        self
    }

    /// Adds a user.
    #[must_use]
    pub fn user(mut self, username: &str, password: &str, is_superuser: bool) -> Self {
        self.fixtures.users.push(UserSpec {
            id: None,
            username: username.to_owned(),
            password: password.to_owned(),
            is_superuser,
        });
        self
    }

    /// Adds a bearer token for `user`.
    #[must_use]
    pub fn token(mut self, token: &str, user: &str, scope: Scope) -> Self {
        self.fixtures.tokens.push(TokenSpec {
            token: token.to_owned(),
            user: user.to_owned(),
            scope,
            expires: None,
            description: String::new(),
            controller_issued: false,
        });
        self
    }

    /// Adds an inventory.
    #[must_use]
    pub fn inventory(mut self, spec: InventorySpec) -> Self {
        self.fixtures.inventories.push(spec);
        self
    }

    /// Adds a job template.
    #[must_use]
    pub fn job_template(mut self, spec: JobTemplateSpec) -> Self {
        self.fixtures.job_templates.push(spec);
        self
    }

    /// Adds a workflow job template.
    #[must_use]
    pub fn workflow_job_template(mut self, spec: WorkflowJobTemplateSpec) -> Self {
        self.fixtures.workflow_job_templates.push(spec);
        self
    }

    /// Default script of jobs whose template declares none.
    #[must_use]
    pub fn default_script(mut self, script: JobScript) -> Self {
        self.fixtures.default_script = Some(script);
        self
    }

    /// Delay between `POST cancel/` on a started job and its `canceled` status (default 2 s, as
    /// observed on real AWX).
    #[must_use]
    pub fn cancel_delay(mut self, delay: Duration) -> Self {
        self.fixtures.settings.cancel_delay = delay;
        self
    }

    /// Lifetime of tokens minted at `POST /api/gateway/v1/tokens/` (default one year).
    #[must_use]
    pub fn gateway_token_lifetime(mut self, lifetime: Duration) -> Self {
        self.fixtures.settings.gateway_token_lifetime = lifetime;
        self
    }

    /// Request-log ring size (0 turns the log off; default 1000).
    #[must_use]
    pub fn request_log_capacity(mut self, capacity: usize) -> Self {
        self.fixtures.settings.request_log_capacity = capacity;
        self
    }

    /// Seed for all randomness (token secrets, fault fractions, identifiers).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.fixtures.settings.seed = seed;
        self
    }

    /// Builds the in-process fake (no socket).
    pub fn build(self) -> Result<FakeAap, FakeAapError> {
        let clock: Arc<dyn Clock> = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let clock = clock::OffsetClock::new(clock);
        let st = build_state::build_state(&self.fixtures, clock.now())?;
        let settings = &self.fixtures.settings;
        let app = App {
            counters: request_log::Counters::default(),
            ring: request_log::RequestRing::new(settings.request_log_capacity),
            faults: RwLock::new(Arc::new(Vec::new())),
            faults_on: AtomicBool::new(false),
            next_fault_id: AtomicU64::new(1),
            fault_seed: AtomicU64::new(settings.seed),
            mode: settings.mode,
            version: settings.version.clone(),
            node: settings.node.clone(),
            max_body: settings.max_body_bytes,
            observer: crate::observe::ObserverSlot::default(),
            websocket: websocket::Hub::default(),
            clock,
            state: Mutex::new(st),
        };
        Ok(FakeAap { app: Arc::new(app) })
    }

    /// Builds and serves on a loopback socket.
    pub async fn start(self) -> Result<FakeAapServer, FakeAapError> {
        let addr = self
            .listen
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let https = self.https;
        let fake = self.build()?;
        FakeAapServer::launch(fake, addr, https).await
    }
}

impl FakeAap {
    /// A builder with the default fixtures (organization `Default`, superuser `admin` /
    /// `password`, write token `fake-aap-admin-token`, `Demo Inventory` with 3 hosts).
    pub fn builder() -> FakeAapBuilder {
        FakeAapBuilder::default()
    }

    /// The axum router (for `tower::ServiceExt::oneshot`, or to serve yourself).
    pub fn router(&self) -> axum::Router {
        let app = self.app.clone();
        axum::Router::new().fallback(move |req: ::http::Request<axum::body::Body>| {
            let app = app.clone();
            async move { app.handle(req).await }
        })
    }

    /// The API layout.
    pub fn mode(&self) -> Mode {
        self.app.mode
    }

    /// `/api/v2/` or `/api/controller/v2/` (gateway mode).
    pub fn api_prefix(&self) -> &'static str {
        match self.app.mode {
            Mode::Gateway | Mode::Aap27 => routes::CONTROLLER_PREFIX,
            Mode::Awx | Mode::Both => routes::AWX_PREFIX,
        }
    }

    /// The first write-scoped token (by id).
    pub fn admin_token(&self) -> String {
        let st = self.app.lock();
        let mut toks: Vec<_> = st
            .tokens
            .values()
            .filter(|t| t.scope == Scope::Write)
            .collect();
        toks.sort_by_key(|t| t.id);
        toks.first().map(|t| t.token.clone()).unwrap_or_default()
    }

    /// The server clock's current time.
    pub fn now(&self) -> DateTime<Utc> {
        self.app.clock.now()
    }

    /// Moves the server's clock forward (on top of its base clock); every job moves at once.
    pub fn advance(&self, by: Duration) {
        self.app.clock.advance(by);
    }

    /// All jobs and workflow jobs, oldest first, with their status now.
    pub fn jobs(&self) -> Vec<JobInfo> {
        let now = self.now();
        let mut st = self.app.lock();
        st.sync(now);
        let ids: Vec<u64> = st.jobs.iter().flatten().map(|u| u.common().id).collect();
        ids.into_iter()
            .filter_map(|id| job_info(&mut st, id, now))
            .collect()
    }

    /// How many jobs and workflow jobs the server holds and how large their stored
    /// `extra_vars` texts are, counted under its lock without copying a job — for memory
    /// reports that must not become part of the peak they report ([`FakeAap::jobs`] copies
    /// every job).
    pub fn jobs_footprint(&self) -> JobsFootprint {
        let st = self.app.lock();
        let mut footprint = JobsFootprint::default();
        for job in st.jobs.iter().flatten() {
            footprint.jobs += 1;
            footprint.extra_vars_bytes += job.common().extra_vars.len();
        }
        footprint
    }

    /// One job or workflow job.
    pub fn job(&self, id: u64) -> Option<JobInfo> {
        let now = self.now();
        let mut st = self.app.lock();
        st.sync(now);
        job_info(&mut st, id, now)
    }

    /// The job-template jobs now, for [`restore_jobs`](Self::restore_jobs) in another
    /// process (e.g. written to a file as JSON).
    ///
    /// ```
    /// use provkit_testing::fake_aap::{FakeAap, JobTemplateSpec};
    /// let build = || FakeAap::builder().organization("osac").job_template(JobTemplateSpec::new("create", "osac")).build().unwrap();
    /// let before = build();
    /// let snap = before.snapshot_jobs();
    /// assert!(snap.jobs.is_empty());
    /// let after = build();
    /// after.restore_jobs(&snap).unwrap();
    /// assert_eq!(after.jobs(), before.jobs());
    /// ```
    pub fn snapshot_jobs(&self) -> JobsSnapshot {
        snapshot::take(&self.app.lock())
    }

    /// Recreates the jobs of a [`snapshot_jobs`](Self::snapshot_jobs) answer (same ids,
    /// templates by name, `extra_vars`, creation times and cancel requests) in a fake that has
    /// no jobs yet; their status follows from the clock as before.
    ///
    /// # Errors
    /// [`FakeAapError::InvalidFixtures`] when the fake already has jobs, a template is missing
    /// or an id repeats.
    pub fn restore_jobs(&self, snap: &JobsSnapshot) -> Result<(), FakeAapError> {
        snapshot::restore(&mut self.app.lock(), snap)
            .map_err(|reason| FakeAapError::InvalidFixtures { reason })
    }

    /// Template id by name (and organization name, if given; else the first by organization).
    pub fn template_id(&self, name: &str, organization: Option<&str>) -> Option<u64> {
        let st = self.app.lock();
        st.templates
            .values()
            .filter(|t| t.name() == name)
            .filter(|t| {
                organization.is_none_or(|o| st.org(t.org_id()).is_some_and(|x| x.name == o))
            })
            .min_by_key(|t| (t.org_id(), t.id()))
            .map(Template::id)
    }

    /// Successful API launches of a template (`POST …/launch/` answered 201).
    pub fn launch_count(&self, template: u64) -> u64 {
        let st = self.app.lock();
        match st.templates.get(&template) {
            Some(Template::Job(t)) => t.launches,
            Some(Template::Workflow(t)) => t.launches,
            None => 0,
        }
    }

    /// Deletes a job as an AAP-side purge (cleanup job) would: later reads get 404.
    pub fn purge_job(&self, id: u64) -> Result<(), FakeAapError> {
        let now = self.now();
        let mut st = self.app.lock();
        if st.purge(id, now) {
            Ok(())
        } else {
            Err(FakeAapError::NotFound { kind: "job", id })
        }
    }

    /// Sets a token's expiry; after it, requests with the token get 401.
    pub fn set_token_expiry(&self, token: &str, expires: DateTime<Utc>) -> bool {
        let mut st = self.app.lock();
        match st.tokens.get_mut(token) {
            Some(t) => {
                t.expires = expires;
                true
            }
            None => false,
        }
    }

    /// Uses `script` for the next launch of `template` (then the template's usual script).
    pub fn push_script(&self, template: u64, rule: ScriptRule) -> Result<(), FakeAapError> {
        let mut st = self.app.lock();
        match st.templates.get_mut(&template) {
            Some(Template::Job(t)) => {
                t.rules.insert(0, rule);
                Ok(())
            }
            _ => Err(FakeAapError::NotFound {
                kind: "job template",
                id: template,
            }),
        }
    }

    /// Replaces the launch prompts (`ask_*_on_launch`) of job template `template`, as an admin
    /// editing the template would; later launches and `GET …/launch/` follow the new flags.
    pub fn set_job_template_ask(&self, template: u64, ask: AskFlags) -> Result<(), FakeAapError> {
        let mut st = self.app.lock();
        match st.templates.get_mut(&template) {
            Some(Template::Job(t)) => {
                t.spec.ask = ask;
                Ok(())
            }
            _ => Err(FakeAapError::NotFound {
                kind: "job template",
                id: template,
            }),
        }
    }

    /// Replaces the default script of `template`.
    pub fn set_template_script(
        &self,
        template: u64,
        script: JobScript,
    ) -> Result<(), FakeAapError> {
        let mut st = self.app.lock();
        match st.templates.get_mut(&template) {
            Some(Template::Job(t)) => {
                t.script = Some(Arc::new(script));
                Ok(())
            }
            _ => Err(FakeAapError::NotFound {
                kind: "job template",
                id: template,
            }),
        }
    }

    /// Installs a fault; returns its id.
    pub fn add_fault(&self, fault: Fault) -> FaultId {
        let id = FaultId(self.app.next_fault_id.fetch_add(1, Ordering::Relaxed));
        let seed =
            self.app.fault_seed.load(Ordering::Relaxed) ^ id.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let installed = Arc::new(faults::Installed {
            id,
            fault,
            seen: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
        });
        let mut list = self
            .app
            .faults
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next: Vec<_> = list.iter().cloned().collect();
        next.push(installed);
        *list = Arc::new(next);
        self.app.faults_on.store(true, Ordering::Relaxed);
        id
    }

    /// Calls `observer` at each [`Phase`](crate::observe::Phase) of every request from now on
    /// (replacing any earlier one); it may abandon a request (see [`crate::observe`]).
    pub fn observe(&self, observer: crate::observe::RequestObserver) {
        self.app.observer.set(Some(observer));
    }

    /// Removes the request observer.
    pub fn clear_observer(&self) {
        self.app.observer.set(None);
    }

    /// Removes one fault.
    pub fn remove_fault(&self, id: FaultId) {
        let mut list = self
            .app
            .faults
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next: Vec<_> = list.iter().filter(|f| f.id != id).cloned().collect();
        self.app
            .faults_on
            .store(!next.is_empty(), Ordering::Relaxed);
        *list = Arc::new(next);
    }

    /// Removes all faults.
    pub fn clear_faults(&self) {
        let mut list = self
            .app
            .faults
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *list = Arc::new(Vec::new());
        self.app.faults_on.store(false, Ordering::Relaxed);
    }

    /// How many calls a fault has hit.
    pub fn fault_hits(&self, id: FaultId) -> u64 {
        let list = self
            .app
            .faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        list.iter()
            .find(|f| f.id == id)
            .map_or(0, |f| f.hits.load(Ordering::Relaxed))
    }

    /// The logged requests (oldest first, at most the ring's capacity).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.app.ring.snapshot()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.app.ring.clear();
    }

    /// Resizes the request-log ring (0 turns it off).
    pub fn set_request_log_capacity(&self, capacity: usize) {
        self.app.ring.set_capacity(capacity);
    }

    /// Per-endpoint and per-status-class counters.
    pub fn counters(&self) -> &Counters {
        &self.app.counters
    }
}

fn job_info(st: &mut state::State, id: u64, now: DateTime<Utc>) -> Option<JobInfo> {
    // `reads` are what the playbook saw when the job was created, from the real variables (the
    // record's text shows survey passwords as `$encrypted$`).
    let (kind, template, name, extra_vars, launch_type, parent, created, reads) =
        match st.unified(id)? {
            Unified::Job(j) => (
                "job",
                j.c.template,
                j.c.name.clone(),
                j.c.extra_vars.clone(),
                j.c.launch_type,
                j.c.parent_workflow,
                j.c.created,
                j.reads.clone(),
            ),
            Unified::Workflow(w) => (
                "workflow_job",
                w.wfjt.or(w.job_template),
                w.c.name.clone(),
                w.c.extra_vars.clone(),
                w.c.launch_type,
                None,
                w.c.created,
                Vec::new(),
            ),
        };
    let (status, finished) = match st.unified(id)? {
        Unified::Job(_) => {
            let snap = st.job_snapshot(id, now)?;
            (snap.status.as_str(), snap.finished)
        }
        Unified::Workflow(_) => {
            st.sync(now);
            let snap = st.workflow_snapshot(id, now)?;
            (snap.status.as_str(), snap.finished)
        }
    };
    Some(JobInfo {
        reads,
        id,
        kind,
        template,
        name,
        status,
        extra_vars,
        launch_type,
        parent_workflow: parent,
        created,
        finished,
    })
}
