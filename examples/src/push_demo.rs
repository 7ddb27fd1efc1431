//! The demo's push episode (issue 28): one `VirtualNetwork` provisioned by a controller built
//! with provkit-kube's `WakeupController` (kube-runtime's stable `applier`) and a
//! `Provisioner` with push wake-ups, subscribed to the fake AAP's job status websocket. The job's
//! final status wakes the object at once; one `GET` of the job confirms it; the latency from the
//! job's end in AAP to the status write recording `Succeeded` is measured.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use provkit_aap::push::{PushConfig, ReconnectBackoff};
use provkit_core::{Clock, SystemClock};
use provkit_example_operator::controller::{Context, error_policy, reconcile};
use provkit_example_operator::crd::{VirtualNetwork, VirtualNetworkSpec};
use provkit_kube::push::{PushWakeups, WakeupController};
use provkit_lifecycle::LifecyclePolicy;
use provkit_lifecycle::push::{PollCadence, PushHealth};
use provkit_testing::fake_apiserver::FakeApiServer;
use provkit_testing::observe::Verdict;
use serde_json::Value;

use crate::backend::{Backend, BackendConfig, BackendError, KindTemplates};
use crate::stack::TimeScale;

/// The episode's object.
pub const NAME: &str = "net-push";

/// What the episode measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PushEpisode {
    /// The AAP job.
    pub job_id: String,
    /// Job end in AAP → status `Succeeded` written (wall).
    pub latency: Duration,
    /// The same in production time.
    pub latency_production: Duration,
    /// `GET jobs/<id>/` requests for the job.
    pub job_gets: usize,
    /// The poll interval (production time) — what polling alone would wait, half of it on
    /// average.
    pub poll_interval: Duration,
    /// Objects woken by push.
    pub woken: u64,
}

impl PushEpisode {
    /// Whether the completion came by push: a wake-up, one confirming `GET`, and the status
    /// written before the first poll could have seen it.
    pub fn came_by_push(&self) -> bool {
        self.woken >= 1 && self.job_gets == 1 && self.latency_production < self.poll_interval
    }

    /// The episode's lines.
    pub fn render(&self) -> String {
        format!(
            "push: AAP job {} finished; its final status came over AAP's websocket and woke {NAME} at once:\n  status Succeeded written {:.0} ms later ({} of production time; a {} s poll notices a finished job {} s later on average) · {} GET of the job confirmed it",
            self.job_id,
            self.latency.as_secs_f64() * 1000.0,
            crate::metrics::fmt_duration(self.latency_production),
            self.poll_interval.as_secs(),
            self.poll_interval.as_secs() / 2,
            self.job_gets,
        )
    }
}

/// Runs the episode at `scale`.
///
/// # Errors
/// [`BackendError`] when the fake AAP or its client cannot be set up.
pub async fn run(scale: TimeScale) -> Result<PushEpisode, BackendError> {
    let poll = Duration::from_secs(30);
    let mut bc = BackendConfig::new(vec![KindTemplates::new(
        "VirtualNetwork",
        scale.of(Duration::from_secs(45)),
        scale.of(Duration::from_secs(20)),
    )]);
    bc.client_timeout = scale.timeout(Duration::from_secs(30));
    let backend = Backend::start(&bc, 1).await?;
    let api = FakeApiServer::builder().crd::<VirtualNetwork>().build();
    let written: Arc<Mutex<Option<DateTime<Utc>>>> = Arc::default();
    let seen = written.clone();
    api.observe(Arc::new(move |req, phase| {
        if phase == provkit_testing::observe::Phase::Handled
            && req.status == Some(200)
            && req.path.ends_with(&format!("/{NAME}/status"))
        {
            let body: Value = serde_json::from_slice(req.body).unwrap_or(Value::Null);
            let succeeded = body
                .pointer("/status/provisioningJobs")
                .and_then(Value::as_array)
                .is_some_and(|jobs| {
                    jobs.iter()
                        .any(|j| j.get("state").and_then(Value::as_str) == Some("Succeeded"))
                });
            if succeeded {
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert_with(|| SystemClock.now());
            }
        }
        Verdict::Continue
    }));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let policy = scale.policy(LifecyclePolicy::default().with_poll_interval(poll));
    let wakeups = PushWakeups::new(
        PollCadence::new(scale.of(poll)).with_while_healthy(scale.of(Duration::from_secs(600))),
    );
    let client = api.client_with_user_agent("push-demo/1");
    let Context {
        provisioner,
        callbacks,
    } = Context::new(
        client.clone(),
        Arc::new(backend.provider("push-demo/1")?),
        policy,
        clock,
        "push-demo",
        "push-demo",
    );
    let ctx = Arc::new(Context {
        provisioner: provisioner.with_push(wakeups.clone()),
        callbacks,
    });
    let aap = backend.client("push-demo/1")?;
    let config = PushConfig::default().backoff(ReconnectBackoff::new(
        scale.of(Duration::from_secs(1)),
        scale.of(Duration::from_secs(60)),
    ));
    let w = wakeups.clone();
    let signals = aap.job_status_stream_with(config).signals();
    let push = tokio::spawn(async move { w.run(signals).await });
    let controller = tokio::spawn(
        WakeupController::new(
            Api::<VirtualNetwork>::all(client.clone()),
            watcher::Config::default(),
            wakeups.triggers(),
        )
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {}),
    );
    let limit = scale
        .of(Duration::from_secs(3600))
        .max(Duration::from_secs(30));
    let started = tokio::time::Instant::now();
    while wakeups.health() != PushHealth::Healthy && started.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let nets: Api<VirtualNetwork> = Api::namespaced(client, "default");
    let net = VirtualNetwork::new(
        NAME,
        VirtualNetworkSpec {
            cidr: "10.9.0.0/24".into(),
            region: None,
        },
    );
    let _ = nets.create(&PostParams::default(), &net).await;
    let mut done = None;
    while started.elapsed() < limit {
        done = *written.lock().unwrap_or_else(PoisonError::into_inner);
        if done.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    push.abort();
    controller.abort();
    let job = backend
        .aap()
        .jobs()
        .into_iter()
        .find(|j| j.name.contains("create"));
    let job_id = job.as_ref().map(|j| j.id.to_string()).unwrap_or_default();
    let latency = match (done, job.and_then(|j| j.finished)) {
        (Some(w), Some(f)) => (w - f).to_std().unwrap_or_default(),
        _ => limit,
    };
    let path = format!("/jobs/{job_id}/");
    let job_gets = backend
        .aap()
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(&path))
        .count();
    Ok(PushEpisode {
        job_id,
        latency,
        latency_production: scale.production(latency),
        job_gets,
        poll_interval: poll,
        woken: wakeups.stats().woken,
    })
}
