//! Exactly-once launches on the path users run (issue 15): kube-runtime's `Controller` runs
//! provkit-kube's `Provisioner` over a `kube::Client` served by provkit-testing's
//! `FakeApiServer`, with `AapProvider` + `AapClient` talking to the fake AAP over 127.0.0.1.
//!
//! A **crash** aborts the task that runs the whole controller stack: in-flight reconciles are
//! dropped wherever they are. A **restart** builds a new `Controller`, `Provisioner`,
//! `Lifecycle`, `AapProvider` and `AapClient` from configuration only, so all that survives is
//! what the fake API server and the fake AAP hold. Crash points are set with fake-side
//! faults: a launch held before AAP handles it (no job) or after (a job, no answer), a status
//! patch the fake API server holds without applying it (`skip(1)` lets the intent write
//! through and holds the flush). A pass-through layer on the operator's client only reports
//! which request has gone out, so a test knows the crash point is reached.
//!
//! A request a process wrote to its socket before it died can still reach AAP. A real one
//! handles it within moments; here the test may move the manual clock first, and the fake
//! would create the job minutes (of AAP's clock) after its intent, which no real launch does.
//! So a dead process's requests that reach the fake AAP after its crash are never handled
//! (each process names itself in its User-Agent; see [`World::dead`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use provkit_aap::{AapClient, AapClientBuilder, AapProvider};
use provkit_core::{Clock, JobState, JobType, ManualClock};
use provkit_kube::{
    ErrorChain, LAUNCH_BLOCKED_CONDITION, NoCallbacks, ProvisionedResource, Provisioner,
    ReconcileError,
};
use provkit_lifecycle::{Lifecycle, LifecycleError, LifecyclePolicy};
use provkit_testing::fake_aap::{
    AskFlags, FakeAap, FakeAapServer, Fault, FaultAction, JobScript, JobTemplateSpec, Trigger,
};
use provkit_testing::fake_apiserver::{
    FakeApiServer, Fault as ApiFault, FaultEffect, RequestRecord, Verb,
};
use provkit_testing::observe::{Phase, RequestObserver, Verdict};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::fixtures::*;

/// The AAP-side time between polls (the shared `ManualClock`).
const POLL: Duration = Duration::from_secs(30);
/// Requeue delays in tokio time (the controller's real timers).
const TICK: Duration = Duration::from_millis(20);
const HOUR: Duration = Duration::from_secs(3600);

/// What the test's error policy saw: the whole cause chain and a tag for the typed error.
#[derive(Debug, Clone)]
struct Seen {
    chain: String,
    tag: String,
}

fn tag(err: &ReconcileError) -> String {
    match err {
        ReconcileError::Status { .. } => "status".into(),
        ReconcileError::Lifecycle {
            source: LifecycleError::IdempotencyLookup { .. },
            ..
        } => "idempotency-lookup".into(),
        ReconcileError::Lifecycle {
            source: LifecycleError::TriggerProvision { source, .. },
            ..
        } => match std::error::Error::source(source)
            .and_then(|e| e.downcast_ref::<provkit_aap::Error>())
        {
            Some(provkit_aap::Error::TemplateIgnoresExtraVars { name, .. }) => {
                format!("template-ignores-extra-vars:{name}")
            }
            _ => "trigger-provision".into(),
        },
        ReconcileError::Lifecycle { .. } => "lifecycle".into(),
        _ => "other".into(),
    }
}

struct Ctx {
    provisioner: Provisioner<Network>,
    reconciles: Arc<AtomicUsize>,
    errors: Arc<Mutex<Vec<Seen>>>,
}

async fn reconcile(obj: Arc<Network>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    ctx.provisioner.reconcile(obj, &NoCallbacks).await
}

fn error_policy(_obj: Arc<Network>, err: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    ctx.errors.lock().unwrap().push(Seen {
        chain: ErrorChain(err).to_string(),
        tag: tag(err),
    });
    Action::requeue(TICK)
}

/// The requests the operator's client sent, in order (method, path), seen before the fake
/// API server answers them.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<(String, String)>>>);

impl Wire {
    fn status_patches(&self) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, p)| m == "PATCH" && p.contains("/status"))
            .count()
    }
}

/// A pass-through `tower` layer over the fake API server's service that records each request.
#[derive(Clone)]
struct Tap<S> {
    inner: S,
    wire: Wire,
}

impl<S, B> tower::Service<http::Request<B>> for Tap<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.wire
            .0
            .lock()
            .unwrap()
            .push((req.method().to_string(), req.uri().path().to_owned()));
        self.inner.call(req)
    }
}

/// One running controller stack; dropping it (or [`crash`](Self::crash)) kills it.
struct Stack {
    task: Option<JoinHandle<()>>,
    /// The process's name (its User-Agent up to the `/`) and where it is recorded dead.
    name: String,
    dead: Dead,
    reconciles: Arc<AtomicUsize>,
    errors: Arc<Mutex<Vec<Seen>>>,
    wire: Wire,
}

impl Stack {
    /// The process dies: every in-flight reconcile is dropped where it is, and its requests
    /// still on the wire never reach AAP (recorded dead by `Drop`, once the task has ended).
    async fn crash(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    fn errors(&self) -> Vec<Seen> {
        self.errors.lock().unwrap().clone()
    }

    fn reconciles(&self) -> usize {
        self.reconciles.load(Ordering::SeqCst)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.dead.lock().unwrap().insert(self.name.clone());
    }
}

/// The names of the processes that died.
type Dead = Arc<Mutex<HashSet<String>>>;

struct World {
    aap: FakeAapServer,
    clock: ManualClock,
    server: FakeApiServer,
    /// The fake AAP abandons, as received, every request of a process named here.
    dead: Dead,
    /// The test's own observer of the fake AAP's requests, behind the one for the dead.
    observer: Arc<Mutex<Option<RequestObserver>>>,
    processes: AtomicUsize,
    /// Processes tag their launch attempts (`AapProviderBuilder::tag_attempts`).
    tagged: bool,
}

impl World {
    async fn start(create: JobTemplateSpec) -> Self {
        let clock = ManualClock::new(t(0));
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let aap = FakeAap::builder()
            .clock(dyn_clock.clone())
            .organization("osac")
            .job_template(create)
            .job_template(JobTemplateSpec {
                script: Some(JobScript::successful(Duration::from_secs(10))),
                ..JobTemplateSpec::new("osac-delete-network", "osac")
            })
            .start()
            .await
            .unwrap();
        let server = FakeApiServer::builder()
            .crd::<Network>()
            .clock(dyn_clock)
            .build();
        let dead = Dead::default();
        let observer: Arc<Mutex<Option<RequestObserver>>> = Arc::default();
        let (gone, then) = (dead.clone(), observer.clone());
        aap.aap().observe(Arc::new(move |req, phase| {
            if phase == Phase::Received && gone.lock().unwrap().contains(req.client) {
                return Verdict::Abandon;
            }
            let test = then.lock().unwrap().clone();
            test.map_or(Verdict::Continue, |observe| observe(req, phase))
        }));
        Self {
            aap,
            clock,
            server,
            dead,
            observer,
            processes: AtomicUsize::new(0),
            tagged: false,
        }
    }

    /// [`standard`](Self::standard) with a create template prompting for skip tags and
    /// processes that tag their launch attempts.
    async fn tagged() -> Self {
        let mut create = JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(120))),
            ..JobTemplateSpec::new("osac-create-network", "osac")
        };
        create.ask.skip_tags = true;
        Self {
            tagged: true,
            ..Self::start(create).await
        }
    }

    /// The marker the pending intent recorded (empty: none).
    fn intent_marker(&self) -> Option<String> {
        self.object()
            .provisioning_status()
            .and_then(|s| s.launch_intent.as_ref())
            .map(|i| i.marker.clone())
    }

    /// The job lists that read a launch window (not a query by skip tag).
    fn window_reads(&self) -> usize {
        self.job_lists()
            .iter()
            .filter(|r| r.query.contains("created__gt"))
            .count()
    }

    /// Sees every request the fake AAP receives from a live process (replacing the last).
    fn observe_aap(&self, observer: Option<RequestObserver>) {
        *self.observer.lock().unwrap() = observer;
    }

    async fn standard() -> Self {
        Self::start(JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(120))),
            ..JobTemplateSpec::new("osac-create-network", "osac")
        })
        .await
    }

    fn aap(&self) -> &FakeAap {
        self.aap.aap()
    }

    /// The user's client.
    fn user(&self) -> Api<Network> {
        Api::namespaced(self.server.client_named("user"), NS)
    }

    async fn create_network(&self) {
        let net = Network::new(
            NAME,
            NetworkSpec {
                cidr: "10.0.0.0/24".into(),
            },
        );
        self.user()
            .create(&PostParams::default(), &net)
            .await
            .unwrap();
    }

    async fn change_cidr(&self, cidr: &str) {
        self.user()
            .patch(
                NAME,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"cidr": cidr}})),
            )
            .await
            .unwrap();
    }

    /// The stored object (what survives a crash).
    fn object(&self) -> Network {
        self.server
            .objects::<Network>()
            .into_iter()
            .find(|n| n.metadata.name.as_deref() == Some(NAME))
            .unwrap()
    }

    /// A new process: client, provider, engine, provisioner and controller built from
    /// configuration only.
    fn process(&self) -> Stack {
        self.process_with(AapClient::builder(self.aap.base_url()))
    }

    fn process_with(&self, builder: AapClientBuilder) -> Stack {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        let name = format!(
            "process-{}",
            self.processes.fetch_add(1, Ordering::SeqCst) + 1
        );
        let aap = builder
            .user_agent(format!("{name}/1"))
            .token(self.aap.token())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let provider = AapProvider::builder(aap)
            .template_prefix("osac")
            .clock(clock.clone())
            .tag_attempts(self.tagged)
            .build();
        let mut policy = LifecyclePolicy::default().with_poll_interval(TICK);
        policy.min_requeue = TICK;
        let lifecycle = Lifecycle::new(Arc::new(provider), clock).with_policy(policy);
        let wire = Wire::default();
        let client = kube::Client::new(
            Tap {
                inner: self.server.service(),
                wire: wire.clone(),
            },
            NS,
        );
        let reconciles = Arc::new(AtomicUsize::new(0));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let ctx = Arc::new(Ctx {
            provisioner: Provisioner::new(client.clone(), lifecycle, FINALIZER)
                .with_field_manager("network-operator"),
            reconciles: reconciles.clone(),
            errors: errors.clone(),
        });
        let task = tokio::spawn(
            Controller::new(Api::<Network>::all(client), watcher::Config::default())
                .run(reconcile, error_policy, ctx)
                .for_each(|_| async {}),
        );
        Stack {
            task: Some(task),
            reconciles,
            errors,
            wire,
            name,
            dead: self.dead.clone(),
        }
    }

    fn launches(&self) -> usize {
        self.aap()
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/launch/"))
            .count()
    }

    fn provision_jobs(&self) -> Vec<String> {
        self.object()
            .provisioning_jobs()
            .iter()
            .filter(|j| j.job_type == JobType::Provision)
            .map(|j| j.job_id.clone())
            .collect()
    }

    /// The job-list requests (idempotency lookups) the fake AAP received so far.
    fn job_lists(&self) -> Vec<provkit_testing::fake_aap::LoggedRequest> {
        self.aap()
            .requests()
            .into_iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/jobs/"))
            .collect()
    }

    fn intent_pending(&self) -> bool {
        self.object()
            .provisioning_status()
            .and_then(|s| s.launch_intent.as_ref())
            .is_some()
    }

    fn latest_provision_state(&self) -> Option<JobState> {
        self.object()
            .provisioning_jobs()
            .iter()
            .rev()
            .find(|j| j.job_type == JobType::Provision)
            .map(|j| j.state.clone())
    }

    /// The operator's status patches the fake API server answered, with their status codes.
    fn status_writes(&self) -> Vec<RequestRecord> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| {
                r.verb == Some(Verb::Patch)
                    && r.client != "user"
                    && r.path.split('?').next().unwrap_or("").ends_with("/status")
            })
            .collect()
    }

    /// A fresh process, started once every earlier intent's launch window has closed, runs
    /// until the job is recorded and has succeeded; then exactly one AAP job exists, it is the
    /// one recorded, and the intent is cleared.
    async fn settle_and_check_one_job(&self) {
        self.clock.advance(PAST_THE_LAUNCH_WINDOW);
        let stack = self.process();
        until("a provision job is recorded", || {
            !self.provision_jobs().is_empty()
        })
        .await;
        self.clock.advance(Duration::from_secs(200));
        until("the recorded job succeeded", || {
            self.latest_provision_state() == Some(JobState::Succeeded)
        })
        .await;
        let jobs = self.aap().jobs();
        assert_eq!(jobs.len(), 1, "AAP jobs: {jobs:?}");
        assert_eq!(self.provision_jobs(), [jobs[0].id.to_string()]);
        assert!(
            !self.intent_pending(),
            "the intent is cleared once its job is recorded: {:?}",
            self.object().status
        );
        stack.crash().await;
    }

    /// A process creates the network while AAP holds every launch before handling it, and
    /// dies once the intent is persisted: the intent lands, no job can be created. The fault
    /// stays until the caller clears it.
    async fn crash_after_the_intent_write(&self) {
        self.aap()
            .add_fault(Fault::new("POST", "/api/*/launch/", FaultAction::Latency(HOUR)).before());
        let stack = self.process();
        self.create_network().await;
        until("the intent is persisted", || self.intent_pending()).await;
        stack.crash().await;
    }

    fn intent_time(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.object()
            .provisioning_status()
            .and_then(|s| s.launch_intent.as_ref())
            .map(|i| i.created_at)
    }
}

/// Past the launch window of any intent written before, and past the wait for the other
/// intents of the same hand-over: twice the provider's launch deadline (60 s by default) plus
/// the width of the clock offset its `Date` probe measures (about a second). A process reads
/// the window of an intent it did not launch only once that window has closed (its launch may
/// still be in AAP's hands), and waits up to one more deadline for the other inherited intents
/// to close too (one read answers them all); these tests' clock is manual: a restart is started
/// past both. (The deferral itself: `provkit-aap`'s
/// `bounded_lookup::an_inherited_intents_window_is_read_only_once_closed`, and the demo story's
/// crash of `cluster-c` on the real, scaled clock.)
const PAST_THE_LAUNCH_WINDOW: Duration = Duration::from_secs(125);

/// Polls `cond` every 5 ms; fails after 30 s (a hang, not a timing claim).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("never happened: {what}");
}

fn hold_status_patches() -> ApiFault {
    ApiFault::new(FaultEffect::Latency(HOUR))
        .verb(Verb::Patch)
        .resource("networks")
        .subresource(Some("status"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_status_writes_launch_nothing_then_exactly_one_job() {
    let w = World::standard().await;
    // The missing `networks/status` patch permission: RBAC's 403 on the status subresource.
    w.server.inject(
        ApiFault::new(FaultEffect::Forbidden)
            .verb(Verb::Patch)
            .resource("networks")
            .subresource(Some("status")),
    );
    let stack = w.process();
    w.create_network().await;
    // Five failed reconciles, one poll interval of AAP time apart, each refused at the
    // intent write.
    for n in 1..=5 {
        until("another failed reconcile", || stack.errors().len() >= n).await;
        w.clock.advance(POLL);
    }
    assert_eq!(
        w.aap().jobs().len(),
        0,
        "no AAP job while status writes are refused"
    );
    assert_eq!(w.launches(), 0);
    assert!(w.status_writes().iter().all(|r| r.status == 403));
    let errors = stack.errors();
    assert!(errors.len() >= 5, "{errors:?}");
    assert!(errors.iter().all(|e| e.tag == "status"), "{errors:?}");
    assert!(
        errors[0].chain.contains("forbidden"),
        "the 403 reaches the error chain: {}",
        errors[0].chain
    );

    w.server.clear_faults();
    until("the job is recorded", || !w.provision_jobs().is_empty()).await;
    w.clock.advance(Duration::from_secs(200));
    until("the job succeeded", || {
        w.latest_provision_state() == Some(JobState::Succeeded)
    })
    .await;
    assert_eq!(w.aap().jobs().len(), 1);
    assert_eq!(w.launches(), 1);
    assert_eq!(w.provision_jobs(), [w.aap().jobs()[0].id.to_string()]);
    stack.crash().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_intent_write_gives_one_job() {
    let w = World::standard().await;
    w.crash_after_the_intent_write().await;
    assert_eq!(w.aap().jobs().len(), 0);
    assert!(w.intent_pending(), "the intent survives the crash");
    assert!(w.provision_jobs().is_empty());
    w.aap().clear_faults();
    w.settle_and_check_one_job().await;
}

/// A restart right after a crash does not read the dead process's launch window while it is
/// still open (its launch may yet create a job): the attempt shows `LaunchBlocked`, reason
/// `IdempotencyLookupDeferred`, and AAP's job list is not read. That wait is no failed
/// reconcile: the error policy never sees it. Once the window has closed
/// (the manual clock moved past it, and a change of the object brings the reconcile back
/// before the requeue, which runs on real time), absence is proven and one job is launched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_inside_the_launch_window_defers_the_lookup_until_it_closes() {
    let w = World::standard().await;
    w.crash_after_the_intent_write().await;
    w.aap().clear_faults();
    let stack = w.process();
    let deferred = || {
        w.object()
            .provisioning_status()
            .and_then(|s| {
                provkit_kube::status::find_condition(&s.conditions, LAUNCH_BLOCKED_CONDITION)
                    .cloned()
            })
            .filter(|c| c.status == "True" && c.reason == "IdempotencyLookupDeferred")
    };
    until("LaunchBlocked shows the deferred lookup", || {
        deferred().is_some()
    })
    .await;
    let shown = deferred().unwrap();
    assert!(shown.message.contains("launch window"), "{}", shown.message);
    let job_lists = || w.job_lists().len();
    assert_eq!(job_lists(), 0, "no job list while the window is open");
    assert_eq!(w.aap().jobs().len(), 0);
    assert!(
        stack.errors().is_empty(),
        "a deferred lookup is a wait, not a reconcile error: {:?}",
        stack.errors()
    );
    w.clock.advance(PAST_THE_LAUNCH_WINDOW);
    w.user()
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"touched": "1"}}})),
        )
        .await
        .unwrap();
    until("the resource's job is recorded", || {
        w.provision_jobs().len() == 1
    })
    .await;
    assert_eq!(job_lists(), 1, "one read of the closed window");
    assert_eq!(w.aap().jobs().len(), 1);
    stack.crash().await;
}

/// What the provider knows of its own launch of an intent survives the intent's round trip
/// through the object's status: the intent time read back is the one the launch was made
/// under, to the microsecond. AAP refuses every launch with a 400 (nothing created, certainly),
/// so each reconcile clears the refused attempt's intent with its status write; the first such
/// write is refused (403), and the next reconcile reads the intent back from the object and
/// resolves it without reading AAP's job list (this process knows it sent nothing that created
/// a job). Before intents kept microseconds, the time read back lost its fraction, the provider
/// no longer recognised its own attempt, and every retry read the template's jobs of a whole
/// launch-deadline window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_launchs_intent_read_back_from_status_needs_no_job_list() {
    let w = World::standard().await;
    // A time with a fraction, as every real clock has.
    w.clock.advance(Duration::from_millis(250));
    let refused = w.aap().add_fault(Fault::new(
        "POST",
        "/api/*/launch/",
        FaultAction::json(400, &json!({"detail": "refused for the test"})),
    ));
    // Status patch 1 is the first intent, 2 the write that clears it: refused once.
    let clear_refused = w.server.inject(
        ApiFault::new(FaultEffect::Forbidden)
            .verb(Verb::Patch)
            .resource("networks")
            .subresource(Some("status"))
            .skip(1)
            .times(1),
    );
    let stack = w.process();
    w.create_network().await;
    until("three launches were refused", || {
        w.aap().fault_hits(refused) >= 3
    })
    .await;
    stack.crash().await;
    assert_eq!(
        w.server.fault_hits(clear_refused),
        1,
        "the first intent stayed on the object"
    );
    let job_lists = w.job_lists();
    assert!(
        job_lists.is_empty(),
        "no lookup of an attempt this process knows it did not send: {job_lists:?}"
    );
    assert_eq!(w.aap().jobs().len(), 0);
    w.aap().clear_faults();
    w.settle_and_check_one_job().await;
}

/// A 429 on the launch POST with a long `Retry-After` (certainly nothing created).
fn launch_rate_limited_once() -> Fault {
    Fault::new(
        "POST",
        "/api/*/launch/",
        FaultAction::too_many_requests(provkit_testing::fake_aap::RetryAfter::Seconds(3600)),
    )
    .trigger(Trigger::FirstN(1))
}

/// Issue 33: a launch the provider is certain made no job (here AAP's 429) leaves no intent
/// behind: the reconcile's status write clears it, so the process that inherits the object
/// (after a crash) has nothing to look up, reads no job list, and launches once. Before, the
/// intent stayed pending until the next launch replaced it, and every process that inherited
/// it read AAP's job list of its window to prove an absence known when the launch failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launch_certainly_not_made_leaves_no_intent_for_the_next_process() {
    let w = World::standard().await;
    let limited = w.aap().add_fault(launch_rate_limited_once());
    let stack = w.process();
    w.create_network().await;
    until("the launch was rate-limited", || {
        w.aap().fault_hits(limited) == 1
    })
    .await;
    until("the refused attempt's intent was cleared", || {
        stack.wire.status_patches() >= 2 && !w.intent_pending()
    })
    .await;
    assert_eq!(
        stack.wire.status_patches(),
        2,
        "the intent, then its clearing"
    );
    stack.crash().await;
    assert_eq!(w.aap().jobs().len(), 0);
    w.settle_and_check_one_job().await;
    assert_eq!(w.job_lists().len(), 0, "nothing pending to look up");
}

/// The crash point of that clearing: the process dies after the refused launch, with the
/// status write that clears its intent never applied. The intent stays pending; the next
/// process cannot know that launch made nothing, reads the closed window (one job list), and
/// launches once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_before_a_not_made_launchs_intent_is_cleared_gives_one_job() {
    let w = World::standard().await;
    let limited = w.aap().add_fault(launch_rate_limited_once());
    // Status patch 1 is the intent, 2 its clearing: the fake API server holds it unapplied.
    w.server.inject(hold_status_patches().skip(1));
    let stack = w.process();
    w.create_network().await;
    until("the clearing write is on the wire", || {
        stack.wire.status_patches() >= 2
    })
    .await;
    assert_eq!(w.aap().fault_hits(limited), 1);
    stack.crash().await;
    assert!(w.intent_pending(), "the clearing never reached the object");
    w.server.clear_faults();
    w.settle_and_check_one_job().await;
    assert_eq!(
        w.job_lists().len(),
        1,
        "one read of the inherited intent's window"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_with_the_launch_sent_and_unanswered_gives_one_job() {
    let w = World::standard().await;
    // AAP creates the job, then holds the answer.
    w.aap()
        .add_fault(Fault::new("POST", "/api/*/launch/", FaultAction::Latency(HOUR)).after());
    let stack = w.process();
    w.create_network().await;
    until("AAP created the job", || w.aap().jobs().len() == 1).await;
    stack.crash().await;
    assert!(w.intent_pending());
    assert!(
        w.provision_jobs().is_empty(),
        "the job id never reached the object"
    );
    w.aap().clear_faults();
    w.settle_and_check_one_job().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_launch_answer_before_the_flush_gives_one_job() {
    let w = World::standard().await;
    // Status patch 1 is the intent, 2 the flush: the fake API server holds the flush unapplied.
    w.server.inject(hold_status_patches().skip(1));
    let stack = w.process();
    w.create_network().await;
    until("the flush is on the wire", || {
        stack.wire.status_patches() >= 2
    })
    .await;
    assert_eq!(w.aap().jobs().len(), 1, "the launch was answered");
    stack.crash().await;
    assert!(w.intent_pending());
    assert!(
        w.provision_jobs().is_empty(),
        "the job id was never persisted"
    );
    w.server.clear_faults();
    w.settle_and_check_one_job().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_flush_gives_one_job() {
    let w = World::standard().await;
    // Everything after the flush is held: the process dies with the job recorded.
    w.server.inject(hold_status_patches().skip(2));
    let stack = w.process();
    w.create_network().await;
    until("the flush recorded the job", || {
        w.provision_jobs().len() == 1
    })
    .await;
    stack.crash().await;
    assert!(!w.intent_pending(), "the flush cleared the intent");
    w.server.clear_faults();
    w.settle_and_check_one_job().await;
}

/// A relaunch after a proven absence records a fresh attempt first (issue 33): a process dies
/// with its launch lost (AAP never acted on it); the next one proves the absence, writes a new
/// intent (a later time, same key) and dies before AAP handles that launch; the third finds the
/// pending fresh intent, proves absence in its window and launches once. The intent time of
/// every launch is its own, so a lookup may end a launch deadline after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_fresh_intent_of_a_relaunch_gives_one_job() {
    let w = World::standard().await;
    let launches = Arc::new(AtomicUsize::new(0));
    let seen = launches.clone();
    w.observe_aap(Some(Arc::new(move |req, phase| {
        if req.method == "POST" && req.path.ends_with("/launch/") {
            if phase == Phase::Received {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            Verdict::Abandon
        } else {
            Verdict::Continue
        }
    })));
    let stack = w.process();
    w.create_network().await;
    until("a launch was attempted", || {
        launches.load(Ordering::SeqCst) >= 1
    })
    .await;
    stack.crash().await;
    w.observe_aap(None);
    let first = w.intent_time().expect("the first intent is pending");
    assert_eq!(w.aap().jobs().len(), 0);

    // Later (past the window and the wait for a hand-over's other intents), AAP holds
    // launches before handling them: the relaunch's intent lands, no job.
    w.clock.advance(PAST_THE_LAUNCH_WINDOW);
    w.aap()
        .add_fault(Fault::new("POST", "/api/*/launch/", FaultAction::Latency(HOUR)).before());
    let stack = w.process();
    until("a fresh intent replaced the first", || {
        w.intent_time().is_some_and(|t| t > first)
    })
    .await;
    stack.crash().await;
    let fresh = w
        .intent_time()
        .expect("the fresh intent survives the crash");
    assert_eq!((fresh - first).to_std().ok(), Some(PAST_THE_LAUNCH_WINDOW));
    assert_eq!(w.aap().jobs().len(), 0);
    assert!(w.provision_jobs().is_empty());
    w.aap().clear_faults();
    w.settle_and_check_one_job().await;
    let job = &w.aap().jobs()[0];
    assert!(
        job.created >= fresh,
        "the job belongs to the fresh attempt's window"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_prompting_template_is_refused_with_a_typed_error_and_no_job() {
    let w = World::start(JobTemplateSpec {
        ask: AskFlags::default(),
        ..JobTemplateSpec::new("osac-create-network", "osac")
    })
    .await;
    let stack = w.process();
    w.create_network().await;
    until("the reconcile failed", || !stack.errors().is_empty()).await;
    let seen = &stack.errors()[0];
    assert_eq!(
        seen.tag, "template-ignores-extra-vars:osac-create-network",
        "{seen:?}"
    );
    assert!(seen.chain.contains("ask_variables_on_launch"), "{seen:?}");
    assert_eq!(w.aap().jobs().len(), 0);
    assert_eq!(w.launches(), 0);
    stack.crash().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_extra_vars_in_a_launch_answer_cancel_the_job_and_fail_the_attempt() {
    let w = World::standard().await;
    let stack = w.process();
    w.create_network().await;
    // The template is checked (and prompts) before the first launch.
    until("the first job is recorded", || {
        w.provision_jobs().len() == 1
    })
    .await;
    w.clock.advance(Duration::from_secs(200));
    until("the first job succeeded", || {
        w.latest_provision_state() == Some(JobState::Succeeded)
    })
    .await;
    // An admin turns the prompt off; the next attempt's answer lists extra_vars under
    // ignored_fields (this process cached the earlier check).
    let template = w
        .aap()
        .template_id("osac-create-network", Some("osac"))
        .unwrap();
    w.aap()
        .set_job_template_ask(template, AskFlags::default())
        .unwrap();
    w.change_cidr("10.1.0.0/24").await;
    until("the second attempt is recorded as failed", || {
        w.provision_jobs().len() == 2 && w.latest_provision_state() == Some(JobState::Failed)
    })
    .await;
    let jobs = w.aap().jobs();
    let second = &jobs[1];
    assert_eq!(second.extra_vars, "{}", "AAP dropped the payload");
    until("AAP canceled the job", || {
        w.aap().job(second.id).unwrap().status == "canceled"
    })
    .await;
    let recorded = w.object();
    let latest = recorded.provisioning_jobs().last().unwrap();
    assert_eq!(latest.job_id, second.id.to_string());
    assert_eq!(latest.state, JobState::Failed);
    assert!(
        latest.message.contains("ignored the launch's extra_vars"),
        "{}",
        latest.message
    );
    stack.crash().await;
    assert!(
        w.aap().jobs()[1..]
            .iter()
            .all(|j| w.aap().job(j.id).unwrap().status == "canceled"),
        "no job ran without its payload: {:?}",
        w.aap().jobs()
    );
}

/// A lookup cut short by the list cap proves nothing, so the launch waits (`LaunchBlocked`)
/// while later lookups fail too; once a lookup gets through, it continues past the ids the
/// capped one read (the resumable walk), proves absence, and the resource gets exactly one job.
///
/// The job list is refused after its first answer until the test lifts the fault: without that,
/// the retry after `TICK` resumed the walk and launched before the test looked, a race this test
/// lost one run in five to twenty (5 jobs where it asserted 4, or `LaunchBlocked` already gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_that_cannot_prove_absence_blocks_the_launch() {
    let w = World::standard().await;
    // A first process dies while its launch is unanswered (the fake never acts on it), leaving
    // a pending intent. (A connection reset instead let the process prove absence and launch
    // again before the crash; that second request, already sent, could reach the fake after the
    // fault was gone and create the resource's job, one run in about twenty.)
    let launches = Arc::new(AtomicUsize::new(0));
    let seen = launches.clone();
    w.observe_aap(Some(Arc::new(move |req, phase| {
        if req.method == "POST" && req.path.ends_with("/launch/") {
            if phase == Phase::Received {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            Verdict::Abandon
        } else {
            Verdict::Continue
        }
    })));
    let small_cap = || w.process_with(AapClient::builder(w.aap.base_url()).max_lookup_items(3));
    let stack = small_cap();
    w.create_network().await;
    until("a launch was attempted", || {
        launches.load(Ordering::SeqCst) >= 1
    })
    .await;
    stack.crash().await;
    w.observe_aap(None);
    assert!(w.intent_pending());
    assert_eq!(w.aap().jobs().len(), 0);
    // Other resources' jobs of the same template fill the window beyond the list cap.
    let template = w
        .aap()
        .template_id("osac-create-network", Some("osac"))
        .unwrap();
    let other = AapClient::builder(w.aap.base_url())
        .token(w.aap.token())
        .build()
        .unwrap();
    let tpl = other.get_template("osac-create-network").await.unwrap();
    for _ in 0..4 {
        other
            .launch(&tpl, &provkit_aap::LaunchRequest::default())
            .await
            .unwrap();
    }
    let others: Vec<u64> = w.aap().jobs().iter().map(|j| j.id).collect();
    // The first job-list answer goes through (the capped lookup), every later one is refused.
    w.clock.advance(PAST_THE_LAUNCH_WINDOW);
    let refused = w.aap().add_fault(
        Fault::new("GET", "*/v2/jobs/", FaultAction::server_error())
            .trigger(Trigger::AfterFirst(1)),
    );
    let stack = small_cap();
    until("the capped lookup failed", || {
        stack
            .errors()
            .iter()
            .any(|e| e.tag == "idempotency-lookup" && e.chain.contains("list cap"))
    })
    .await;
    until("a later lookup was refused", || {
        w.aap().fault_hits(refused) >= 1
    })
    .await;
    until("LaunchBlocked is in the status", || {
        w.object()
            .provisioning_status()
            .and_then(|s| {
                provkit_kube::status::find_condition(&s.conditions, LAUNCH_BLOCKED_CONDITION)
            })
            .is_some()
    })
    .await;
    assert_eq!(w.aap().jobs().len(), 4, "nothing launched for the resource");
    assert_eq!(w.aap().launch_count(template), 4);
    assert!(w.intent_pending(), "the unresolved intent is kept");
    // AAP answers again: the lookup continues where the capped one stopped, finds no job with
    // the key, and the launch goes out once.
    w.aap().remove_fault(refused);
    until("the resource's job is recorded", || {
        w.provision_jobs().len() == 1
    })
    .await;
    until("LaunchBlocked is cleared", || {
        w.object()
            .provisioning_status()
            .and_then(|s| {
                provkit_kube::status::find_condition(&s.conditions, LAUNCH_BLOCKED_CONDITION)
            })
            .is_none_or(|c| c.status != "True")
    })
    .await;
    stack.crash().await;
    let jobs = w.aap().jobs();
    assert_eq!(jobs.len(), 5, "one job for the resource: {jobs:?}");
    assert_eq!(w.aap().launch_count(template), 5);
    let own: Vec<u64> = jobs
        .iter()
        .map(|j| j.id)
        .filter(|id| !others.contains(id))
        .collect();
    assert_eq!(
        w.provision_jobs(),
        own.iter().map(u64::to_string).collect::<Vec<_>>(),
        "the recorded job is the one launched for the resource"
    );
    assert!(!w.intent_pending(), "the intent is resolved");
}

/// Issue 27 (3): every status write of the operator — the launch intent's write-ahead as well
/// as the flushes — is recorded under its field manager (the intent write sent none before,
/// so the API server named the User-Agent instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_write_carries_the_field_manager() {
    let w = World::standard().await;
    let stack = w.process();
    w.create_network().await;
    until("the job is recorded", || w.provision_jobs().len() == 1).await;
    // The fake logs a request after its answer is built, so after the watch shows the write:
    // wait for the log to hold the intent write and the flush that recorded the job.
    let operator_status_writes = || -> Vec<RequestRecord> {
        w.status_writes()
            .into_iter()
            .filter(|r| r.status < 300)
            .collect()
    };
    until("the intent write and the flush are logged", || {
        operator_status_writes().len() >= 2
    })
    .await;
    stack.crash().await;
    let status_writes = operator_status_writes();
    for r in &status_writes {
        assert_eq!(
            r.field_manager.as_deref(),
            Some("network-operator"),
            "{r:?}"
        );
    }
}

/// Request economy of one launch (printed for the report): from the object's creation until
/// its job is recorded, the AAP requests and the operator's API-server writes, by verb; then
/// the polls of the running job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_launch_costs_one_intent_write_and_one_launch_requirements_read() {
    let w = World::standard().await;
    // Hold everything after the flush, so the launch's requests are all that is counted.
    w.server.inject(hold_status_patches().skip(2));
    let stack = w.process();
    w.create_network().await;
    until("the job is recorded", || w.provision_jobs().len() == 1).await;
    // The fake logs a request after its answer is built, so after the watch shows the flush:
    // wait for the log to hold the three writes before the process stops.
    let operator_writes = || -> Vec<String> {
        w.server
            .requests()
            .into_iter()
            .filter(|r| {
                r.client != "user"
                    && r.status < 300
                    && matches!(r.verb, Some(Verb::Create | Verb::Update | Verb::Patch))
                    && r.path.contains("/networks/")
            })
            .map(|r| format!("{} {}", r.method, r.path.split('?').next().unwrap_or("")))
            .collect()
    };
    until("the finalizer, intent and flush writes are logged", || {
        operator_writes().len() >= 3
    })
    .await;
    stack.crash().await;
    let by_verb = |reqs: &[provkit_testing::fake_aap::LoggedRequest]| {
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for r in reqs {
            let endpoint = r
                .path
                .split('/')
                .filter(|s| !s.is_empty() && s.parse::<u64>().is_err())
                .collect::<Vec<_>>()
                .join("/");
            *counts
                .entry(format!("{} {endpoint}", r.method))
                .or_default() += 1;
        }
        counts
    };
    let launch_aap = by_verb(&w.aap().requests());
    let writes = operator_writes();
    println!("launch: AAP {launch_aap:?}; API-server writes {writes:?}");
    let launch_only: Vec<_> = launch_aap
        .into_iter()
        .filter(|(k, _)| !k.starts_with("GET api/v2/jobs"))
        .collect();
    assert_eq!(
        launch_only,
        [
            ("GET api".to_owned(), 1), // API root discovery, once per client
            ("GET api/v2/job_templates/launch".to_owned(), 1), // once per template and process
            ("GET api/v2/unified_job_templates".to_owned(), 1), // cached by the client
            ("POST api/v2/job_templates/launch".to_owned(), 1),
        ]
    );
    // The finalizer, the intent write and the flush that records the job (and clears the
    // intent).
    let base = format!("{BASE}/{NAME}");
    assert_eq!(
        writes,
        [
            format!("PATCH {base}"),
            format!("PATCH {base}/status"),
            format!("PATCH {base}/status"),
        ]
    );

    // Polls of the running job by a fresh process: at most one AAP request per reconcile,
    // and no API-server write while nothing changes.
    w.server.clear_faults();
    w.aap().clear_requests();
    let stack = w.process();
    // The first reconcile lands the status write the crashed process never finished.
    until("the first reconcile finished", || stack.reconciles() >= 2).await;
    let before_writes = w.status_writes().len();
    until("a few polls", || stack.reconciles() >= 7).await;
    stack.crash().await;
    let poll_aap = by_verb(&w.aap().requests());
    println!("polls of a running job: AAP {poll_aap:?}");
    let job_reads = poll_aap
        .iter()
        .filter(|(k, _)| k.starts_with("GET api/v2/jobs"))
        .map(|(_, n)| *n)
        .sum::<usize>();
    assert!(job_reads >= 1, "{poll_aap:?}");
    assert!(
        !poll_aap.keys().any(|k| k.starts_with("POST")),
        "{poll_aap:?}"
    );
    assert_eq!(
        w.status_writes().len(),
        before_writes,
        "no status write per poll"
    );
}

/// Tagged attempts (`AapProviderBuilder::tag_attempts`), crash point "launch sent, answer
/// lost": the intent persisted on the object records the skip tag before the launch; the next
/// process finds the job by one query by that tag, reads no launch window, and records it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tagged_crash_with_the_launch_sent_and_unanswered_gives_one_job_found_by_its_tag() {
    let w = World::tagged().await;
    w.aap()
        .add_fault(Fault::new("POST", "/api/*/launch/", FaultAction::Latency(HOUR)).after());
    let stack = w.process();
    w.create_network().await;
    until("AAP created the job", || w.aap().jobs().len() == 1).await;
    stack.crash().await;
    let marker = w.intent_marker().expect("the intent is pending");
    assert!(marker.starts_with("pk1-"), "the key is the tag: {marker:?}");
    let job = w.aap().jobs()[0].id;
    let aap = AapClient::builder(w.aap.base_url())
        .token(w.aap.token())
        .build()
        .unwrap();
    let skip_tags = aap.get_job(job).await.unwrap().skip_tags;
    assert_eq!(skip_tags, marker, "the launch carried the tag");
    w.aap().clear_faults();
    w.aap().clear_requests();
    w.settle_and_check_one_job().await;
    assert_eq!(w.window_reads(), 0, "no launch window was read");
    assert!(
        w.job_lists()
            .iter()
            .any(|r| r.query.contains("skip_tags__contains")),
        "the job was found by its tag"
    );
}

/// Tagged attempts, crash point "intent written, launch never handled": the next process's
/// query by tag proves the absence once the window has closed (and the template still prompts
/// for skip tags), then launches once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tagged_crash_after_the_intent_write_gives_one_job() {
    let w = World::tagged().await;
    w.crash_after_the_intent_write().await;
    assert!(w.intent_marker().is_some_and(|m| !m.is_empty()));
    assert_eq!(w.aap().jobs().len(), 0);
    w.aap().clear_faults();
    w.aap().clear_requests();
    w.settle_and_check_one_job().await;
    assert_eq!(w.window_reads(), 0, "absence proven by tag, no window read");
}

/// Tagged attempts, crash point "launch answered, flush lost".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tagged_crash_after_the_launch_answer_before_the_flush_gives_one_job() {
    let w = World::tagged().await;
    w.server.inject(hold_status_patches().skip(1));
    let stack = w.process();
    w.create_network().await;
    until("the flush is on the wire", || {
        stack.wire.status_patches() >= 2
    })
    .await;
    assert_eq!(w.aap().jobs().len(), 1, "the launch was answered");
    stack.crash().await;
    assert!(w.intent_marker().is_some_and(|m| !m.is_empty()));
    w.server.clear_faults();
    w.aap().clear_requests();
    w.settle_and_check_one_job().await;
    assert_eq!(w.window_reads(), 0);
}
