//! The demo's story on the product path: four resources through every lifecycle path and one
//! controller crash, each step checked against AAP's records and the API server's state.
//!
//! | resource | kind | what happens | expected AAP jobs |
//! |---|---|---|---|
//! | `net-a` | `VirtualNetwork` | provision A → spec change to B → revert to A → delete | 3 provision (A, B, A), 1 deprovision |
//! | `vol-b` | `Volume` | first job fails → backoff → retry succeeds | 2 provision (failed, successful) |
//! | `cluster-c` | `Cluster` | **controller crash right after the launch** → restart → job adopted via the launch intent → deleted while the job runs → cancel → deprovision | 1 provision (canceled), 1 deprovision |
//! | `vm-d` | `ComputeInstance` | a racing reconcile on a stale informer copy right after the launch (its watch lags) | 1 provision; the stale reconcile launches nothing |
//!
//! Everything runs through [`crate::stack`]: kube-runtime `Controller`s with provkit-kube
//! `Provisioner`s over a `kube::Client` on the fake API server, the real `AapProvider` against
//! the fake AAP over loopback, real time scaled by one [`TimeScale`]. The timeline is rebuilt from
//! the records: each reconcile's cached copy and the API server's object before and after it, the
//! AAP requests and API-server requests it made.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, Resource};
use provkit_aap::provider::{IDEMPOTENCY_KEY_VAR, TemplateAction};
use provkit_core::compute_desired_config_version;
use provkit_kube::ProvisionedResource;
use provkit_testing::fake_aap::{Fault as AapFault, FaultAction, JobInfo, Trigger};
use provkit_testing::fake_apiserver::{Fault, FaultEffect, Verb};
use serde_json::Value;
use tokio::sync::Mutex as AsyncMutex;
use tokio::time::Instant;

use crate::stack::kinds::{
    Cluster, ClusterSpec, ComputeInstance, ComputeInstanceSpec, VirtualNetwork, VirtualNetworkSpec,
    Volume, VolumeSpec,
};
use crate::stack::{Controlled, KindJobs, Replica, Stack, StackConfig, StackError, TimeScale};
mod records;
mod timeline;

pub use records::RESOURCES;
use records::{Reconciled, Recorder, Snap, jobs_of, lock, server_copy};

/// The namespace of the story's objects.
pub const NAMESPACE: &str = "default";

/// The resource whose status document the demo prints.
pub const SHOWN: &str = "vol-b";

/// The default time scale of the story (1:100: a 30 s poll interval takes 300 ms).
pub const DEFAULT_SCALE: f64 = 0.01;

/// The longest the story waits for one step (production time) before it gives up: a hang
/// guard, not a timing claim.
const STEP_LIMIT: Duration = Duration::from_secs(4 * 3600);

/// A failure to run the story (not a failed expectation).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoryError {
    /// The stack did not start.
    #[error("the product stack did not start")]
    Stack(#[from] StackError),
    /// A user request to the API server failed.
    #[error("a user request to the API server failed")]
    Kube(#[from] kube::Error),
    /// A step never happened.
    #[error("gave up waiting: {0}")]
    Hang(String),
}

/// One checked expectation.
#[derive(Clone, Debug)]
pub struct Check {
    /// What was expected.
    pub what: String,
    /// Whether it held.
    pub ok: bool,
    /// What was found (for a failed check).
    pub found: String,
}

/// What a story run found.
#[derive(Debug)]
#[non_exhaustive]
pub struct StoryReport {
    /// The time scale.
    pub scale: TimeScale,
    /// The timeline table.
    pub timeline: String,
    /// The AAP jobs table (per resource).
    pub jobs: String,
    /// Every expectation, in story order.
    pub checks: Vec<Check>,
    /// The [`SHOWN`] resource's final `status`, as read back through `kube::Api` (pretty JSON).
    pub status_document: String,
    /// AAP requests answered.
    pub aap_requests: usize,
    /// API-server requests by verb.
    pub api_requests: BTreeMap<Verb, u64>,
    /// Wall time of the story.
    pub wall: Duration,
    /// The production time the story stands for (wall ÷ scale).
    pub production: Duration,
}

impl StoryReport {
    /// Whether every expectation held.
    #[must_use]
    pub fn all_met(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }
}

/// The story's AAP templates (production durations).
#[must_use]
pub fn kind_jobs() -> Vec<KindJobs> {
    vec![
        KindJobs::new(
            "VirtualNetwork",
            Duration::from_secs(45),
            Duration::from_secs(20),
        )
        .reading(&["osac_job_vars.resource.spec"]),
        KindJobs::new("Volume", Duration::from_secs(30), Duration::from_secs(20))
            .failing_first(1, Duration::from_secs(30)),
        KindJobs::new("Cluster", Duration::from_secs(600), Duration::from_secs(40)),
        KindJobs::new(
            "ComputeInstance",
            Duration::from_secs(40),
            Duration::from_secs(20),
        ),
    ]
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("tier".to_owned(), "gold".to_owned())])
}

fn spec_a() -> VirtualNetworkSpec {
    VirtualNetworkSpec {
        cidr: "10.0.0.0/24".into(),
        mtu: 1500,
        labels: labels(),
    }
}

fn spec_b() -> VirtualNetworkSpec {
    VirtualNetworkSpec {
        cidr: "10.0.0.0/23".into(),
        mtu: 9000,
        labels: labels(),
    }
}

/// The short config version of a spec (first 8 hex digits).
fn version(spec: &impl serde::Serialize) -> String {
    compute_desired_config_version(spec)
        .unwrap_or_default()
        .chars()
        .take(8)
        .collect()
}

/// The running operator: one replica with a controller per kind.
struct Operator {
    replica: Replica,
    vm: Controlled<ComputeInstance>,
}

fn start_operator(stack: &Stack, name: &str, rec: &Arc<Recorder>) -> Result<Operator, StackError> {
    *lock(&rec.replica) = name.to_owned();
    let mut replica = Replica::new(stack, name)?;
    replica.run::<VirtualNetwork>(rec.clone());
    replica.run::<Volume>(rec.clone());
    replica.run::<Cluster>(rec.clone());
    let vm = replica.run::<ComputeInstance>(rec.clone());
    Ok(Operator { replica, vm })
}

/// Everything the story's scripts share.
struct World {
    stack: Stack,
    rec: Arc<Recorder>,
    operator: AsyncMutex<Option<Operator>>,
    recovered: tokio::sync::watch::Sender<bool>,
    checks: Mutex<Vec<Check>>,
    poll: Duration,
    limit: Duration,
}

impl World {
    fn check(&self, what: impl Into<String>, ok: bool, found: impl Into<String>) {
        lock(&self.checks).push(Check {
            what: what.into(),
            ok,
            found: found.into(),
        });
    }

    /// Waits until `probe` returns `Some`, polling every few milliseconds.
    async fn until<T>(
        &self,
        what: &str,
        mut probe: impl FnMut() -> Option<T>,
    ) -> Result<T, StoryError> {
        let deadline = Instant::now() + self.limit;
        loop {
            if let Some(v) = probe() {
                return Ok(v);
            }
            if Instant::now() > deadline {
                return Err(StoryError::Hang(what.to_owned()));
            }
            tokio::time::sleep(self.poll).await;
        }
    }

    async fn sleep(&self, production: Duration) {
        tokio::time::sleep(self.stack.scale().of(production)).await;
    }

    fn jobs_of(&self, kind: &str, action: TemplateAction) -> Vec<JobInfo> {
        jobs_of(&self.stack, kind, action)
    }

    fn snap<K: ProvisionedResource>(&self, name: &str) -> Snap {
        server_copy::<K>(self.stack.api(), name)
    }

    fn user<K: ProvisionedResource + Resource<Scope = k8s_openapi::NamespaceResourceScope>>(
        &self,
    ) -> Api<K> {
        Api::namespaced(self.stack.user_client(), NAMESPACE)
    }

    /// Waits until `name` is ready with the job it last launched for `spec`.
    async fn ready<K: ProvisionedResource>(&self, name: &str) -> Result<Snap, StoryError> {
        self.until(&format!("{name} ready"), || {
            let s = self.snap::<K>(name);
            (s.phase() == "ready").then_some(s)
        })
        .await
    }

    async fn gone<K: ProvisionedResource>(&self, name: &str, kind: &str) -> Result<(), StoryError> {
        self.until(&format!("{name} deleted"), || {
            (!self.snap::<K>(name).exists).then_some(())
        })
        .await?;
        let deprov: Vec<&'static str> = self
            .jobs_of(kind, TemplateAction::Delete)
            .iter()
            .map(|j| j.status)
            .collect();
        self.check(
            format!("{name}: the finalizer was removed only after its deprovision job succeeded"),
            deprov == ["successful"],
            format!("deprovision jobs when the object disappeared: {deprov:?}"),
        );
        self.rec.note(name, "» object gone (finalizer removed)");
        Ok(())
    }
}

fn meta_of<K: Resource<DynamicType = ()> + CustomResourceExt>(obj: &mut K, name: &str) {
    obj.meta_mut().name = Some(name.to_owned());
    obj.meta_mut().namespace = Some(NAMESPACE.to_owned());
}

async fn net(w: &World) -> Result<(), StoryError> {
    let api = w.user::<VirtualNetwork>();
    let mut obj = VirtualNetwork::new("net-a", spec_a());
    meta_of(&mut obj, "net-a");
    w.rec.note(
        "net-a",
        format!("» create VirtualNetwork (spec v{})", version(&spec_a())),
    );
    api.create(&PostParams::default(), &obj).await?;
    w.ready::<VirtualNetwork>("net-a").await?;
    for (spec, label) in [(spec_b(), "spec change"), (spec_a(), "revert spec (A-B-A)")] {
        w.sleep(Duration::from_secs(30)).await;
        w.rec
            .note("net-a", format!("» {label} → v{}", version(&spec)));
        let desired = compute_desired_config_version(&spec).unwrap_or_default();
        api.patch(
            "net-a",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": spec })),
        )
        .await?;
        w.until("net-a re-provisioned", || {
            let s = w.snap::<VirtualNetwork>("net-a");
            (s.phase() == "ready" && s.desired == desired).then_some(())
        })
        .await?;
    }
    let prov = w.jobs_of("VirtualNetwork", TemplateAction::Create);
    let (a, b) = (
        serde_json::to_value(spec_a()).unwrap_or_default(),
        serde_json::to_value(spec_b()).unwrap_or_default(),
    );
    // What the playbook read from `osac_job_vars.resource.spec` (OSAC's current envelope).
    let specs: Vec<&str> = prov
        .iter()
        .filter_map(|j| j.reads.first().and_then(|(_, read)| read.as_ref().ok()))
        .map(|spec| {
            if *spec == a {
                "A"
            } else if *spec == b {
                "B"
            } else {
                "?"
            }
        })
        .collect();
    let statuses: Vec<&str> = prov.iter().map(|j| j.status).collect();
    w.check(
        "net-a: provision → spec change → A-B-A revert: 3 successful AAP jobs, their playbooks read osac_job_vars.resource.spec A, B, A",
        statuses == ["successful"; 3] && specs == ["A", "B", "A"],
        format!("jobs {statuses:?}, the playbooks read specs {specs:?}"),
    );
    w.sleep(Duration::from_secs(30)).await;
    w.rec.note("net-a", "» delete");
    api.delete("net-a", &DeleteParams::default()).await?;
    w.gone::<VirtualNetwork>("net-a", "VirtualNetwork").await
}

async fn vol(w: &World) -> Result<(), StoryError> {
    w.sleep(Duration::from_secs(5)).await;
    let spec = VolumeSpec {
        cidr: "10.1.0.0/24".into(),
        mtu: 1500,
        labels: labels(),
    };
    let mut obj = Volume::new("vol-b", spec.clone());
    meta_of(&mut obj, "vol-b");
    w.rec.note(
        "vol-b",
        format!(
            "» create Volume (spec v{}); its first job will fail",
            version(&spec)
        ),
    );
    w.user::<Volume>()
        .create(&PostParams::default(), &obj)
        .await?;
    let ready = w.ready::<Volume>("vol-b").await?;
    let jobs = w.jobs_of("Volume", TemplateAction::Create);
    let statuses: Vec<&str> = jobs.iter().map(|j| j.status).collect();
    let backoff = w.stack.policy().backoff.base;
    // The engine backs off from the failed job's recorded timestamp, which is whole-second
    // RFC 3339 (as Go writes it): at 1:100 one real second is 100 s of production time.
    let failed_at = w
        .stack
        .api()
        .objects::<Volume>()
        .iter()
        .filter_map(|v| {
            v.provisioning_status()?
                .provisioning_jobs
                .first()?
                .timestamp
        })
        .next();
    let gap = match (&jobs[..], failed_at) {
        ([_, second], Some(at)) => (second.created - at).to_std().unwrap_or_default(),
        _ => Duration::ZERO,
    };
    w.check(
        "vol-b: failure → backoff → retry: AAP jobs [failed, successful], the retry launched ≥ the 2 min backoff after the failed job's recorded timestamp",
        statuses == ["failed", "successful"] && gap >= backoff,
        format!(
            "jobs {statuses:?}, retry {} (production) after the failed job's timestamp",
            crate::metrics::fmt_duration(w.stack.scale().production(gap))
        ),
    );
    let recorded: Vec<String> = ready.jobs.iter().map(|j| j.0.clone()).collect();
    let ids: Vec<String> = jobs.iter().map(|j| j.id.to_string()).collect();
    w.check(
        "vol-b: the API server's status records both AAP jobs, the latest Succeeded",
        recorded == ids,
        format!("status jobs {recorded:?}, AAP jobs {ids:?}"),
    );
    Ok(())
}

async fn cluster(w: &World) -> Result<(), StoryError> {
    w.sleep(Duration::from_secs(10)).await;
    let aap = w.stack.aap();
    let template = w
        .stack
        .template_id(TemplateAction::Create, "Cluster")
        .unwrap_or_default();
    // The launch POST is answered only after the client gave up: the job exists in AAP, the
    // controller never learns its id.
    aap.add_fault(
        AapFault::new(
            "POST",
            &format!("*/job_templates/{template}/launch/"),
            FaultAction::Latency(Duration::from_secs(30)),
        )
        .after()
        .trigger(Trigger::Nth(1)),
    );
    let spec = ClusterSpec {
        cidr: "10.2.0.0/24".into(),
        mtu: 1500,
        labels: labels(),
    };
    let mut obj = Cluster::new("cluster-c", spec.clone());
    meta_of(&mut obj, "cluster-c");
    w.rec.note(
        "cluster-c",
        format!("» create Cluster (spec v{})", version(&spec)),
    );
    let created = Instant::now();
    w.user::<Cluster>()
        .create(&PostParams::default(), &obj)
        .await?;
    let job = w
        .until("the cluster's launch reaches AAP", || {
            w.jobs_of("Cluster", TemplateAction::Create)
                .into_iter()
                .next()
        })
        .await?;
    // Crash right after the launch: AAP has the job, the launch answer is not delivered yet.
    let operator = w.operator.lock().await.take();
    if let Some(op) = operator {
        op.replica.crash().await;
    }
    let key = serde_json::from_str::<Value>(&job.extra_vars)
        .ok()
        .and_then(|v| v[IDEMPOTENCY_KEY_VAR].as_str().map(str::to_owned))
        .unwrap_or_default();
    w.rec.note(
        "cluster-c",
        format!(
            "» CRASH after the launch: AAP has job {}, its answer never arrived",
            job.id
        ),
    );
    let at_crash = w.snap::<Cluster>("cluster-c");
    w.check(
        "cluster-c at the crash: the API server holds the launch intent of AAP's job, and no job",
        at_crash.intent.as_deref() == Some(key.as_str())
            && at_crash.jobs.is_empty()
            && !key.is_empty(),
        format!(
            "intent {:?}, jobs {:?}; AAP job {} key {key:?}",
            at_crash.intent, at_crash.jobs, job.id
        ),
    );
    w.rec.note(
        "cluster-c",
        format!(
            "» restart from the API server's state (intent …{})",
            key.get(key.len().saturating_sub(8)..).unwrap_or_default()
        ),
    );
    {
        let mut slot = w.operator.lock().await;
        *slot = Some(start_operator(&w.stack, "operator-1", &w.rec)?);
    }
    let id = job.id.to_string();
    let adopted = w
        .until("the cluster's job is adopted", || {
            let s = w.snap::<Cluster>("cluster-c");
            (s.has_job(&id) && s.intent.is_none()).then_some(s)
        })
        .await?;
    w.recovered.send_replace(true);
    let launches = w.jobs_of("Cluster", TemplateAction::Create).len();
    w.check(
        "cluster-c after the restart: AAP's one job is adopted by its idempotency key (recorded, intent cleared), no second launch",
        launches == 1 && adopted.jobs.len() == 1,
        format!("AAP provision jobs {launches}, status jobs {:?}", adopted.jobs),
    );
    // Deleted while the (ten-minute) job runs.
    let wait =
        Duration::from_secs(120).saturating_sub(w.stack.scale().production(created.elapsed()));
    w.sleep(wait).await;
    w.rec
        .note("cluster-c", "» delete (provision job still running)");
    w.user::<Cluster>()
        .delete("cluster-c", &DeleteParams::default())
        .await?;
    w.gone::<Cluster>("cluster-c", "Cluster").await?;
    let prov: Vec<&str> = w
        .jobs_of("Cluster", TemplateAction::Create)
        .iter()
        .map(|j| j.status)
        .collect();
    let cancels = aap
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(&format!("/jobs/{id}/cancel/")))
        .count();
    w.check(
        "cluster-c: deletion while the adopted job runs → cancel → deprovision → finalizer removed",
        prov == ["canceled"] && cancels >= 1,
        format!("provision jobs {prov:?}, cancel requests {cancels}"),
    );
    Ok(())
}

async fn vm(w: &World) -> Result<(), StoryError> {
    // After the crash recovery, so the racing reconcile meets the lagging cache of one replica.
    let mut recovered = w.recovered.subscribe();
    let _ = recovered.wait_for(|done| *done).await;
    let spec = ComputeInstanceSpec {
        cidr: "10.3.0.0/24".into(),
        mtu: 1500,
        labels: labels(),
    };
    let mut obj = ComputeInstance::new("vm-d", spec.clone());
    meta_of(&mut obj, "vm-d");
    w.rec.note(
        "vm-d",
        format!(
            "» create ComputeInstance (spec v{}); its watch lags 20 s",
            version(&spec)
        ),
    );
    w.user::<ComputeInstance>()
        .create(&PostParams::default(), &obj)
        .await?;
    let job = w
        .until("the instance's launch reaches AAP", || {
            w.jobs_of("ComputeInstance", TemplateAction::Create)
                .into_iter()
                .next()
        })
        .await?;
    // A racing event right after the launch: the controller reconciles its cached copy, which
    // does not show the job yet.
    w.rec
        .note("vm-d", "» an extra event: reconcile right after the launch");
    if let Some(op) = w.operator.lock().await.as_ref() {
        op.vm.trigger(NAMESPACE, "vm-d");
    }
    let id = job.id.to_string();
    w.ready::<ComputeInstance>("vm-d").await?;
    let done = lock(&w.rec.done).clone();
    let stale: Vec<&Reconciled> = done
        .iter()
        .filter(|r| r.name == "vm-d" && r.before.has_job(&id) && !r.copy.has_job(&id))
        .collect();
    let launches = w.jobs_of("ComputeInstance", TemplateAction::Create).len();
    let wrote = stale
        .iter()
        .any(|r| r.api_calls.iter().any(|c| c.starts_with("patch")));
    w.check(
        "vm-d: a reconcile of a stale cached copy (no job; the API server had it) → stale-cache check → no launch, no status write",
        !stale.is_empty() && launches == 1 && !wrote,
        format!("{} stale reconcile(s), AAP provision jobs {launches}, status written by one: {wrote}", stale.len()),
    );
    Ok(())
}

/// Final checks over every AAP job: one job per idempotency key, every job keyed, every job of a
/// surviving object recorded in its status.
fn audit(world: &World) {
    let jobs = world.stack.aap().jobs();
    let mut keys: HashMap<String, u32> = HashMap::new();
    let mut unkeyed = 0;
    for job in &jobs {
        match serde_json::from_str::<Value>(&job.extra_vars)
            .ok()
            .and_then(|v| v[IDEMPOTENCY_KEY_VAR].as_str().map(str::to_owned))
        {
            Some(k) => *keys.entry(k).or_default() += 1,
            None => unkeyed += 1,
        }
    }
    let duplicates: u32 = keys.values().map(|n| n - 1).sum();
    world.check(
        "AAP's records: 0 duplicate launches (one job per idempotency key), 0 unkeyed jobs",
        duplicates == 0 && unkeyed == 0,
        format!("{duplicates} duplicate(s), {unkeyed} unkeyed"),
    );
    let mut lost = Vec::new();
    for (name, kind) in [("vol-b", "Volume"), ("vm-d", "ComputeInstance")] {
        let snap = match kind {
            "Volume" => world.snap::<Volume>(name),
            _ => world.snap::<ComputeInstance>(name),
        };
        for job in world.jobs_of(kind, TemplateAction::Create) {
            if !snap.has_job(&job.id.to_string()) {
                lost.push(format!("{name}: {}", job.id));
            }
        }
    }
    world.check(
        "0 lost job ids: every AAP job of a remaining object is recorded in its status",
        lost.is_empty(),
        format!("not recorded: {lost:?}"),
    );
}

/// Runs the whole story at `scale` and checks every expectation.
///
/// # Errors
/// [`StoryError`] when the stack does not start, a user request fails or a step never happens
/// (a failed expectation is a failed [`Check`], not an error).
pub async fn run(scale: TimeScale) -> Result<StoryReport, StoryError> {
    let wall = Instant::now();
    let mut config = StackConfig::new(scale);
    config.kinds = kind_jobs();
    let stack = Stack::start(config).await?;
    stack.register::<VirtualNetwork>()?;
    stack.register::<Volume>()?;
    stack.register::<Cluster>()?;
    stack.register::<ComputeInstance>()?;
    // The instance controller's informer lags: every watch event reaches it 20 s late.
    stack.api().inject(
        Fault::new(FaultEffect::WatchLag(scale.of(Duration::from_secs(20))))
            .verb(Verb::Watch)
            .resource("computeinstances"),
    );
    let rec = Arc::new(Recorder {
        t0: Mutex::new(Instant::now()),
        api: stack.api().clone(),
        replica: Mutex::new(String::new()),
        open: Mutex::new(HashMap::new()),
        done: Mutex::new(Vec::new()),
        notes: Mutex::new(Vec::new()),
    });
    let operator = start_operator(&stack, "operator-0", &rec)?;
    let world = World {
        poll: Duration::from_millis(2),
        limit: scale.of(STEP_LIMIT),
        stack,
        rec,
        operator: AsyncMutex::new(Some(operator)),
        recovered: tokio::sync::watch::Sender::new(false),
        checks: Mutex::new(Vec::new()),
    };
    *lock(&world.rec.t0) = Instant::now();
    tokio::try_join!(net(&world), vol(&world), cluster(&world), vm(&world))?;
    audit(&world);
    let shown: Volume = world.user::<Volume>().get(SHOWN).await?;
    let status_document = serde_json::to_string_pretty(&shown.status).unwrap_or_default();
    if let Some(op) = world.operator.lock().await.take() {
        op.replica.crash().await;
    }
    let wall = wall.elapsed();
    Ok(StoryReport {
        scale,
        timeline: timeline::timeline(&world.stack, &world.rec),
        jobs: timeline::jobs_table(&world.stack),
        checks: lock(&world.checks).clone(),
        status_document,
        aap_requests: world.stack.aap().requests().len(),
        api_requests: world.stack.api().verb_counts(),
        wall,
        production: scale.production(wall),
    })
}
