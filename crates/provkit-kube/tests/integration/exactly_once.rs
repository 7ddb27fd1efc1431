//! Exactly-once launches on the path users run: `Provisioner::reconcile` over a `kube::Client`
//! (served by the in-memory [`ObjectStore`]) with `AapProvider` + `AapClient` talking to the
//! fake AAP over 127.0.0.1. Every "restart" builds a new `Lifecycle`, `AapProvider` and
//! `AapClient` from nothing but the persisted object.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, JobType, ManualClock};
use provkit_kube::{
    LAUNCH_BLOCKED_CONDITION, NoCallbacks, ProvisionedResource, Provisioner, ReconcileError,
};
use provkit_lifecycle::{Lifecycle, LifecycleError};
use provkit_testing::fake_aap::{
    AskFlags, FakeAap, FakeAapServer, Fault, FaultAction, JobScript, JobTemplateSpec,
};

use crate::fixtures::*;
use crate::store::{Hang, ObjectStore};

const POLL: Duration = Duration::from_secs(30);

struct World {
    server: FakeAapServer,
    clock: ManualClock,
    store: ObjectStore,
}

impl World {
    async fn start(create: JobTemplateSpec) -> Self {
        let clock = ManualClock::new(t(0));
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let server = FakeAap::builder()
            .clock(dyn_clock)
            .organization("osac")
            .job_template(create)
            .job_template(JobTemplateSpec {
                script: Some(JobScript::successful(Duration::from_secs(10))),
                ..JobTemplateSpec::new("osac-delete-network", "osac")
            })
            .start()
            .await
            .unwrap();
        Self {
            server,
            clock,
            store: ObjectStore::new(&Network::test().finalized()),
        }
    }

    async fn standard() -> Self {
        Self::start(JobTemplateSpec {
            script: Some(JobScript::successful(Duration::from_secs(120))),
            ..JobTemplateSpec::new("osac-create-network", "osac")
        })
        .await
    }

    fn aap(&self) -> &FakeAap {
        self.server.aap()
    }

    /// A new process: client, provider, engine and provisioner built from configuration only.
    fn process(&self) -> Provisioner<Network> {
        self.process_with(AapClient::builder(self.server.base_url()))
    }

    fn process_with(&self, builder: provkit_aap::AapClientBuilder) -> Provisioner<Network> {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        let client = builder
            .token(self.server.token())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let provider = AapProvider::builder(client)
            .template_prefix("osac")
            .clock(clock.clone())
            .build();
        Provisioner::new(
            self.store.client(),
            Lifecycle::new(Arc::new(provider), clock),
            FINALIZER,
        )
    }

    async fn reconcile(&self, p: &Provisioner<Network>) -> Result<Action, ReconcileError> {
        self.reconcile_obj(p, self.store.object()).await
    }

    async fn reconcile_obj(
        &self,
        p: &Provisioner<Network>,
        obj: Network,
    ) -> Result<Action, ReconcileError> {
        p.reconcile(Arc::new(obj), &NoCallbacks).await
    }

    fn launches(&self) -> usize {
        self.aap()
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/launch/"))
            .count()
    }

    fn provision_jobs(&self) -> Vec<String> {
        self.store
            .object()
            .provisioning_jobs()
            .iter()
            .filter(|j| j.job_type == JobType::Provision)
            .map(|j| j.job_id.clone())
            .collect()
    }

    /// Runs reconciles of a fresh process a poll interval apart until the job is recorded and
    /// polled, then checks exactly one AAP job exists and is the one recorded.
    async fn settle_and_check_one_job(&self) {
        let p = self.process();
        for _ in 0..4 {
            let _ = self.reconcile(&p).await;
            self.clock.advance(POLL);
        }
        let jobs = self.aap().jobs();
        assert_eq!(jobs.len(), 1, "AAP jobs: {jobs:?}");
        assert_eq!(self.provision_jobs(), [jobs[0].id.to_string()]);
        let status = self.store.object();
        assert!(
            status
                .provisioning_status()
                .and_then(|s| s.launch_intent.as_ref())
                .is_none(),
            "the intent is cleared once its job is recorded: {:?}",
            status.status
        );
    }

    /// Starts a reconcile of a fresh process in a task, waits until `reached` says the crash
    /// point is reached, then kills the task (the process dies there).
    async fn crash_when(&self, reached: impl AsyncFn(&World) -> ()) {
        let p = self.process();
        let obj = Arc::new(self.store.object());
        let task = tokio::spawn(async move { p.reconcile(obj, &NoCallbacks).await });
        reached(self).await;
        task.abort();
        let _ = task.await;
    }
}

async fn until(mut cond: impl FnMut() -> bool) {
    for _ in 0..4000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("condition never became true");
}

#[tokio::test]
async fn refused_status_writes_launch_nothing_then_exactly_one_job() {
    let w = World::standard().await;
    w.store.refuse_status_writes(true);
    let p = w.process();
    for _ in 0..5 {
        let err = w.reconcile(&p).await.unwrap_err();
        assert!(
            matches!(
                &err,
                ReconcileError::Status { .. } | ReconcileError::Lifecycle { .. }
            ),
            "{err:?}"
        );
        w.clock.advance(POLL);
    }
    assert_eq!(
        w.aap().jobs().len(),
        0,
        "no AAP job while status writes are refused"
    );
    assert_eq!(w.launches(), 0);

    w.store.refuse_status_writes(false);
    for _ in 0..4 {
        let _ = w.reconcile(&p).await.unwrap();
        w.clock.advance(POLL);
    }
    assert_eq!(w.aap().jobs().len(), 1);
    assert_eq!(w.provision_jobs(), [w.aap().jobs()[0].id.to_string()]);
}

#[tokio::test]
async fn crash_after_the_intent_write_gives_one_job() {
    let w = World::standard().await;
    w.store.hang(Some(Hang::AfterStatusPatch(1)));
    w.crash_when(async |w: &World| w.store.parked.notified().await)
        .await;
    assert_eq!(w.aap().jobs().len(), 0);
    assert!(
        w.store
            .object()
            .provisioning_status()
            .unwrap()
            .launch_intent
            .is_some(),
        "the intent was persisted"
    );
    w.store.hang(None);
    w.settle_and_check_one_job().await;
}

#[tokio::test]
async fn crash_with_the_launch_sent_and_unanswered_gives_one_job() {
    let w = World::standard().await;
    w.aap().add_fault(
        Fault::new(
            "POST",
            "/api/*/launch/",
            FaultAction::Latency(Duration::from_secs(3600)),
        )
        .after(),
    );
    w.crash_when(async |w: &World| until(|| w.aap().jobs().len() == 1).await)
        .await;
    w.aap().clear_faults();
    w.settle_and_check_one_job().await;
}

#[tokio::test]
async fn crash_after_the_launch_answer_before_the_flush_gives_one_job() {
    let w = World::standard().await;
    // Status patch 1 is the intent, 2 the flush: the process dies before the flush lands.
    w.store.hang(Some(Hang::BeforeStatusPatch(2)));
    w.crash_when(async |w: &World| w.store.parked.notified().await)
        .await;
    assert_eq!(w.aap().jobs().len(), 1);
    assert!(
        w.provision_jobs().is_empty(),
        "the job id was never persisted"
    );
    w.store.hang(None);
    w.settle_and_check_one_job().await;
}

#[tokio::test]
async fn crash_after_the_flush_gives_one_job() {
    let w = World::standard().await;
    w.store.hang(Some(Hang::AfterStatusPatch(2)));
    w.crash_when(async |w: &World| w.store.parked.notified().await)
        .await;
    assert_eq!(w.provision_jobs().len(), 1);
    w.store.hang(None);
    w.settle_and_check_one_job().await;
}

#[tokio::test]
async fn a_non_prompting_template_is_refused_with_a_typed_error_and_no_job() {
    let w = World::start(JobTemplateSpec {
        ask: AskFlags::default(),
        ..JobTemplateSpec::new("osac-create-network", "osac")
    })
    .await;
    let p = w.process();
    let err = w.reconcile(&p).await.unwrap_err();
    let ReconcileError::Lifecycle {
        source: LifecycleError::TriggerProvision { source, .. },
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    let aap_err = std::error::Error::source(source)
        .and_then(|e| e.downcast_ref::<provkit_aap::Error>())
        .unwrap_or_else(|| panic!("{source:?}"));
    assert!(
        matches!(aap_err, provkit_aap::Error::TemplateIgnoresExtraVars { name, .. } if name == "osac-create-network"),
        "{aap_err:?}"
    );
    assert!(
        aap_err.to_string().contains("ask_variables_on_launch"),
        "{aap_err}"
    );
    assert_eq!(w.aap().jobs().len(), 0);
    assert_eq!(w.launches(), 0);
}

#[tokio::test]
async fn ignored_extra_vars_in_a_launch_answer_cancel_the_job_and_fail_the_attempt() {
    let w = World::standard().await;
    let p = w.process();
    // The template is checked (and prompts) before the first launch; then an admin turns the
    // prompt off, and the next attempt's answer lists extra_vars under ignored_fields.
    let _ = w.reconcile(&p).await.unwrap();
    w.clock.advance(Duration::from_secs(200));
    let _ = w.reconcile(&p).await.unwrap();
    assert_eq!(w.aap().jobs()[0].status, "successful");
    let template = w
        .aap()
        .template_id("osac-create-network", Some("osac"))
        .unwrap();
    w.aap()
        .set_job_template_ask(template, AskFlags::default())
        .unwrap();
    let mut changed = w.store.object();
    changed.spec.cidr = "10.1.0.0/24".into();
    let _ = w.reconcile_obj(&p, changed).await.unwrap();
    let jobs = w.aap().jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    let second = &jobs[1];
    assert_eq!(second.extra_vars, "{}", "AAP dropped the payload");
    assert_eq!(w.aap().job(second.id).unwrap().status, "canceled");
    let recorded = w.store.object();
    let latest = recorded.provisioning_jobs().last().unwrap();
    assert_eq!(latest.job_id, second.id.to_string());
    assert_eq!(latest.state, provkit_core::JobState::Failed);
    assert!(
        latest.message.contains("ignored the launch's extra_vars"),
        "{}",
        latest.message
    );
}

#[tokio::test]
async fn a_lookup_that_cannot_prove_absence_blocks_the_launch() {
    let w = World::standard().await;
    // A first attempt whose answer is lost leaves a pending intent.
    w.aap()
        .add_fault(Fault::new("POST", "/api/*/launch/", FaultAction::ConnectionReset).before());
    let small_cap = || w.process_with(AapClient::builder(w.server.base_url()).max_list_items(3));
    let _ = w.reconcile(&small_cap()).await.unwrap_err();
    w.aap().clear_faults();
    assert!(
        w.store
            .object()
            .provisioning_status()
            .unwrap()
            .launch_intent
            .is_some()
    );
    // Other resources' jobs of the same template fill the window beyond the list cap.
    let template = w
        .aap()
        .template_id("osac-create-network", Some("osac"))
        .unwrap();
    let other = AapClient::builder(w.server.base_url())
        .token(w.server.token())
        .build()
        .unwrap();
    let t = other.get_template("osac-create-network").await.unwrap();
    for _ in 0..4 {
        other
            .launch(&t, &provkit_aap::LaunchRequest::default())
            .await
            .unwrap();
    }
    let before = w.aap().jobs().len();
    let err = w.reconcile(&small_cap()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            ReconcileError::Lifecycle {
                source: LifecycleError::IdempotencyLookup { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(w.aap().jobs().len(), before, "nothing launched");
    assert_eq!(w.aap().launch_count(template), 4);
    let obj = w.store.object();
    let blocked = provkit_kube::status::find_condition(
        &obj.provisioning_status().unwrap().conditions,
        LAUNCH_BLOCKED_CONDITION,
    )
    .unwrap_or_else(|| panic!("{:?}", obj.status));
    assert!(blocked.message.contains("list cap"), "{}", blocked.message);
}

/// Request economy of one launch (printed for the report): the AAP requests and API-server
/// writes of the reconcile that launches, and of the poll after it.
#[tokio::test]
async fn one_launch_costs_one_intent_write_and_one_launch_requirements_read() {
    let w = World::standard().await;
    let p = w.process();
    let _ = w.reconcile(&p).await.unwrap();
    let by_verb = |reqs: &[provkit_testing::fake_aap::LoggedRequest]| {
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for r in reqs {
            let endpoint = r
                .path
                .split('?')
                .next()
                .unwrap_or_default()
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
    let launch_writes = w.store.writes();
    println!("launch reconcile: AAP {launch_aap:?}; API-server writes {launch_writes:?}");
    assert_eq!(
        launch_aap.into_iter().collect::<Vec<_>>(),
        [
            ("GET api".to_owned(), 1), // API root discovery, once per client
            ("GET api/v2/job_templates/launch".to_owned(), 1), // once per template and process
            ("GET api/v2/unified_job_templates".to_owned(), 1), // cached by the client
            ("POST api/v2/job_templates/launch".to_owned(), 1),
        ]
    );
    // The intent write and the flush that records the job (and clears the intent).
    assert_eq!(launch_writes.len(), 2, "{launch_writes:?}");
    w.aap().clear_requests();
    w.clock.advance(POLL);
    let _ = w.reconcile(&p).await.unwrap();
    let poll_aap = by_verb(&w.aap().requests());
    println!(
        "poll reconcile: AAP {poll_aap:?}; API-server writes {:?}",
        &w.store.writes()[2..]
    );
    assert_eq!(poll_aap.values().sum::<usize>(), 1, "{poll_aap:?}");
}
