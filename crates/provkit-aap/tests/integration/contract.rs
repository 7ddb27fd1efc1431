//! Issue 27 (5): `ScriptedProvider` answers as `AapProvider` does. One scenario table runs
//! against both — the scripted provider, and `AapProvider` over the fake AAP on loopback — and
//! each scenario must give the same outcome on both, the outcome the row expects.

use std::time::Duration;

use provkit_aap::AapProvider;
use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    DeprovisionAction, IdempotencyKey, LaunchContext, ProviderError, ProvisionStatus,
    ProvisioningProvider, ResourceMeta, ResourceView,
};
use provkit_testing::fake_aap::{FakeAapServer, JobScript, Mode};
use provkit_testing::scripted::{ScriptedProvider, StatusStep};

use crate::support::{builder, eventually, quick, server_with};

/// What a scenario observed, in terms both providers can be compared in.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    NotFound,
    /// An error other than NotFound (never "the job is gone").
    Error,
    Triggered {
        /// The provider's fresh view of the latest provision job: `Some(terminal?)`.
        provision: Option<bool>,
    },
    Waiting {
        provision: Option<bool>,
    },
    /// The lookup's answer: `Some(same id as the launch)`.
    Found(Option<bool>),
    /// A job's state after the scenario.
    State(JobState),
}

fn status_outcome(r: Result<ProvisionStatus, ProviderError>) -> Outcome {
    match r {
        Ok(s) => Outcome::State(s.state),
        Err(e) if e.is_not_found() => Outcome::NotFound,
        Err(_) => Outcome::Error,
    }
}

/// Which provider a scenario runs on, and how its jobs behave.
enum Side {
    Scripted(ScriptedProvider),
    Aap(Box<(AapProvider, FakeAapServer)>),
}

impl Side {
    fn provider(&self) -> &dyn ProvisioningProvider {
        match self {
            Side::Scripted(p) => p,
            Side::Aap(aap) => &aap.0,
        }
    }

    /// Waits until job `id` has ended in the backend (without asking the provider).
    async fn until_ended(&self, id: &str) {
        if let Side::Aap(aap) = self {
            let server = &aap.1;
            let id: u64 = id.parse().unwrap();
            eventually(|| async {
                server
                    .jobs()
                    .iter()
                    .any(|j| j.id == id && !matches!(j.status, "pending" | "waiting" | "running"))
            })
            .await;
        }
    }
}

/// Both sides, with jobs that run until canceled (`running`) or end successfully at once, and
/// lookups that read at most `cap` jobs.
async fn sides(running: bool, cap: usize) -> [Side; 2] {
    let scripted = ScriptedProvider::new().with_lookup_cap(cap);
    if running {
        scripted.set_default_statuses([StatusStep::State(JobState::Running)]);
    }
    let script = if running {
        quick(JobScript::run_until_canceled()).with_cancel_delay(Duration::from_millis(50))
    } else {
        quick(JobScript::successful(Duration::from_millis(30)))
    };
    let server = server_with(Mode::Awx, |b| b.default_script(script)).await;
    let aap = AapProvider::with_prefix(
        builder(&server).max_lookup_items(cap).build().unwrap(),
        "osac",
    );
    [Side::Scripted(scripted), Side::Aap(Box::new((aap, server)))]
}

fn resource(uid: &str) -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "VirtualNetwork".into(),
            name: uid.into(),
            namespace: Some("ns".into()),
            uid: uid.into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "VirtualNetwork", "metadata": {"name": uid, "namespace": "ns", "uid": uid}, "spec": {}}),
    )
}

fn key(uid: &str, job_type: &JobType, attempt: &str) -> IdempotencyKey {
    IdempotencyKey::for_attempt(uid, job_type, attempt, None)
}

fn recorded_running(id: &str) -> Vec<JobStatus> {
    vec![JobStatus::new(
        id,
        JobType::Provision,
        JobState::Running,
        chrono::DateTime::UNIX_EPOCH,
    )]
}

/// Launches a provision job for `r` and returns its id.
async fn launch(side: &Side, r: &ResourceView) -> String {
    let ctx = LaunchContext::new().with_idempotency_key(key(&r.uid, &JobType::Provision, "launch"));
    side.provider()
        .trigger_provision(r, &ctx)
        .await
        .unwrap()
        .job_id
}

async fn deprovision(side: &Side, r: &ResourceView, jobs: &[JobStatus]) -> Outcome {
    let ctx = LaunchContext::new().with_idempotency_key(key(&r.uid, &JobType::Deprovision, ""));
    match side.provider().trigger_deprovision(r, jobs, &ctx).await {
        Ok(d) => {
            let provision = d.provision_job_status.map(|s| s.state.is_terminal());
            match d.action {
                DeprovisionAction::Triggered => Outcome::Triggered { provision },
                DeprovisionAction::Waiting => Outcome::Waiting { provision },
                other => panic!("neither provider answers {other} here"),
            }
        }
        Err(e) if e.is_not_found() => Outcome::NotFound,
        Err(_) => Outcome::Error,
    }
}

/// A lookup's outcome: `Found(Some(the job found is job `launched`))`, `Found(None)`, or the
/// kind of error.
async fn lookup(
    p: &dyn ProvisioningProvider,
    r: &ResourceView,
    job_type: JobType,
    k: &IdempotencyKey,
    launched: &str,
) -> Outcome {
    match p.find_job_by_idempotency_key(r, &job_type, k).await {
        Ok(found) => Outcome::Found(found.map(|f| f.job_id == launched)),
        Err(e) if e.is_not_found() => Outcome::NotFound,
        Err(_) => Outcome::Error,
    }
}

/// One scenario on one side: the outcomes it observed, in order.
async fn scenario(name: &str, side: &Side) -> Vec<Outcome> {
    let p = side.provider();
    let r = resource(&format!("contract-{name}"));
    match name {
        "status of an id never issued" => vec![
            status_outcome(p.provision_status(&r, "999999999").await),
            status_outcome(p.deprovision_status(&r, "999999999").await),
        ],
        "status of a malformed id" => vec![
            status_outcome(p.provision_status(&r, "job-x").await),
            status_outcome(p.deprovision_status(&r, "").await),
        ],
        "deprovision without jobs" => vec![deprovision(side, &r, &[]).await],
        "deprovision while the provision job runs" => {
            let id = launch(side, &r).await;
            let first = deprovision(side, &r, &recorded_running(&id)).await;
            side.until_ended(&id).await;
            vec![first, status_outcome(p.provision_status(&r, &id).await)]
        }
        "deprovision after the provision job ended unseen" => {
            let id = launch(side, &r).await;
            side.until_ended(&id).await;
            vec![deprovision(side, &r, &recorded_running(&id)).await]
        }
        "lookups" => {
            let used = key(&r.uid, &JobType::Provision, "launch");
            let unused = key(&r.uid, &JobType::Provision, "unused");
            let id = launch(side, &r).await;
            vec![
                lookup(p, &r, JobType::Provision, &unused, &id).await,
                lookup(p, &r, JobType::Provision, &used, &id).await,
                lookup(p, &r, JobType::Deprovision, &used, &id).await,
            ]
        }
        "a lookup that reaches the cap" => {
            // Three other objects' jobs of the template, newer than nothing of this one's.
            for other in 0..3 {
                launch(side, &resource(&format!("contract-cap-{other}"))).await;
            }
            let k = key(&r.uid, &JobType::Provision, "launch");
            vec![lookup(p, &r, JobType::Provision, &k, "").await]
        }
        other => panic!("no scenario {other}"),
    }
}

#[tokio::test]
async fn the_scripted_provider_answers_as_the_aap_provider_does() {
    use Outcome as O;
    const NO_CAP: usize = ScriptedProvider::DEFAULT_LOOKUP_CAP;
    let table: Vec<(&str, bool, usize, Vec<Outcome>)> = vec![
        (
            "status of an id never issued",
            false,
            NO_CAP,
            vec![O::NotFound, O::NotFound],
        ),
        (
            "status of a malformed id",
            false,
            NO_CAP,
            vec![O::Error, O::Error],
        ),
        (
            "deprovision without jobs",
            false,
            NO_CAP,
            vec![O::Triggered { provision: None }],
        ),
        (
            "deprovision while the provision job runs",
            true,
            NO_CAP,
            vec![
                O::Waiting {
                    provision: Some(false),
                },
                O::State(JobState::Canceled),
            ],
        ),
        (
            "deprovision after the provision job ended unseen",
            false,
            NO_CAP,
            vec![O::Triggered {
                provision: Some(true),
            }],
        ),
        (
            "lookups",
            false,
            NO_CAP,
            vec![O::Found(None), O::Found(Some(true)), O::Found(None)],
        ),
        ("a lookup that reaches the cap", false, 2, vec![O::Error]),
    ];
    for (name, running, cap, expected) in table {
        let [scripted, aap] = sides(running, cap).await;
        let on_aap = scenario(name, &aap).await;
        let on_scripted = scenario(name, &scripted).await;
        assert_eq!(on_aap, expected, "AapProvider over the fake AAP: {name}");
        assert_eq!(
            on_scripted, on_aap,
            "ScriptedProvider differs from AapProvider: {name}"
        );
    }
}
