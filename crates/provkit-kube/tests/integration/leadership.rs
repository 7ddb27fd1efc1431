//! `LeaderElector::run` with two candidates against one in-memory Lease store (a minimal
//! stateful stub: GET / POST / PUT with `resourceVersion` preconditions, plus a "work" write
//! endpoint), with per-client faults: a partitioned client's requests fail as connection
//! errors. Time is tokio's paused clock, and the Lease's wall time follows it, so every
//! request is logged at a deterministic instant and the assertions are about the order of
//! requests in that log (issue 16, problems 1–3).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::client::Body;
use kube::{Api, Client};
use provkit_core::Clock;
use provkit_kube::{
    LeaderElectionConfig, LeaderElector, LeadershipEnd, LeadershipLost, unique_identity,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use crate::fixtures::{TokioClock, t};

const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/op";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases?";
const WORK: &str = "/api/v1/namespaces/default/configmaps/work?";

#[derive(Debug, Clone)]
struct Logged {
    client: String,
    method: Method,
    path: String,
    at: Instant,
    faulted: bool,
}

#[derive(Default)]
struct Cluster {
    lease: Mutex<Option<Value>>,
    rv: Mutex<u64>,
    log: Mutex<Vec<Logged>>,
    partitioned: Mutex<HashSet<String>>,
}

fn status(code: u16, reason: &str) -> (StatusCode, Value) {
    (
        StatusCode::from_u16(code).unwrap(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": reason, "reason": reason, "code": code}),
    )
}

impl Cluster {
    fn partition(&self, client: &str, on: bool) {
        let mut p = self.partitioned.lock().unwrap();
        if on {
            p.insert(client.to_owned());
        } else {
            p.remove(client);
        }
    }

    fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }

    fn holder(&self) -> Option<String> {
        self.lease
            .lock()
            .unwrap()
            .as_ref()
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
    }

    fn store(&self, mut lease: Value) -> Value {
        let mut rv = self.rv.lock().unwrap();
        *rv += 1;
        lease["metadata"]["resourceVersion"] = rv.to_string().into();
        lease["metadata"]["namespace"] = "default".into();
        *self.lease.lock().unwrap() = Some(lease.clone());
        lease
    }

    fn answer(&self, method: &Method, path: &str, body: Value) -> (StatusCode, Value) {
        let current = self.lease.lock().unwrap().clone();
        match (method.as_str(), path) {
            ("GET", LEASE) => {
                current.map_or_else(|| status(404, "NotFound"), |l| (StatusCode::OK, l))
            }
            ("POST", LEASES) if current.is_some() => status(409, "AlreadyExists"),
            ("POST", LEASES) => (StatusCode::CREATED, self.store(body)),
            ("PUT", p) if p.starts_with(LEASE) => {
                let rv = |v: &Value| v["metadata"]["resourceVersion"].clone();
                match current {
                    Some(c) if rv(&c) == rv(&body) => (StatusCode::OK, self.store(body)),
                    _ => status(409, "Conflict"),
                }
            }
            ("PATCH", WORK) => (
                StatusCode::OK,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "work", "namespace": "default"}}),
            ),
            _ => status(404, "NotFound"),
        }
    }

    /// A `kube::Client` named `name` whose requests this cluster answers.
    fn client(self: &Arc<Self>, name: &str) -> Client {
        let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let cluster = self.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            while let Some((req, send)) = handle.next_request().await {
                let method = req.method().clone();
                let path = req.uri().to_string();
                let faulted = cluster.partitioned.lock().unwrap().contains(&name);
                cluster.log.lock().unwrap().push(Logged {
                    client: name.clone(),
                    method: method.clone(),
                    path: path.clone(),
                    at: Instant::now(),
                    faulted,
                });
                if faulted {
                    send.send_error(std::io::Error::new(
                        std::io::ErrorKind::ConnectionRefused,
                        "connection refused",
                    ));
                    continue;
                }
                let bytes = req.into_body().collect_bytes().await.unwrap_or_default();
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let (code, reply) = cluster.answer(&method, &path, body);
                send.send_response(
                    Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&reply).unwrap()))
                        .unwrap(),
                );
            }
        });
        Client::new(svc, "default")
    }
}

/// A candidate: `LeaderElector::run` whose work writes every 500 ms until told to stop.
fn candidate(
    cluster: &Arc<Cluster>,
    name: &str,
    identity: String,
    clock: Arc<dyn Clock>,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) -> JoinHandle<LeadershipEnd> {
    let client = cluster.client(name);
    let elector = LeaderElector::with_config(
        Api::<Lease>::namespaced(client.clone(), "default"),
        "op",
        identity,
        LeaderElectionConfig::default(),
        clock,
    );
    let work_api = Api::<ConfigMap>::namespaced(client, "default");
    tokio::spawn(async move {
        elector
            .run(
                async move {
                    let _ = shutdown.await;
                },
                |token| async move {
                    loop {
                        tokio::select! {
                            () = token.cancelled() => return,
                            () = sleep(Duration::from_millis(500)) => {}
                        }
                        let _ = work_api
                            .patch("work", &PatchParams::default(), &Patch::Merge(json!({})))
                            .await;
                    }
                },
            )
            .await
    })
}

struct Two {
    cluster: Arc<Cluster>,
    start: Instant,
    a: JoinHandle<LeadershipEnd>,
    b: JoinHandle<LeadershipEnd>,
    stop_a: tokio::sync::oneshot::Sender<()>,
    stop_b: tokio::sync::oneshot::Sender<()>,
}

/// A starts first (and leads), B one second later as a standby.
async fn two_candidates(identity_a: String, identity_b: String) -> Two {
    let cluster = Arc::new(Cluster::default());
    let start = Instant::now();
    let clock: Arc<dyn Clock> = Arc::new(TokioClock { base: t(0), start });
    let (stop_a, rx_a) = tokio::sync::oneshot::channel();
    let (stop_b, rx_b) = tokio::sync::oneshot::channel();
    let a = candidate(&cluster, "a", identity_a, clock.clone(), rx_a);
    sleep(Duration::from_secs(1)).await;
    let b = candidate(&cluster, "b", identity_b, clock, rx_b);
    Two {
        cluster,
        start,
        a,
        b,
        stop_a,
        stop_b,
    }
}

fn work_writes<'a>(log: &'a [Logged], client: &'a str) -> impl Iterator<Item = &'a Logged> {
    log.iter()
        .filter(move |l| l.client == client && l.method == Method::PATCH && l.path == WORK)
}

/// The last Lease write of `client` that the store accepted.
fn last_renewal(log: &[Logged], client: &str) -> Instant {
    log.iter()
        .filter(|l| {
            l.client == client
                && !l.faulted
                && (l.method == Method::PUT || l.method == Method::POST)
                && l.path.contains("leases")
        })
        .map(|l| l.at)
        .max()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn candidates_started_with_the_same_pod_name_do_not_both_lead() {
    let (a, b) = (
        unique_identity("same-identity"),
        unique_identity("same-identity"),
    );
    assert_ne!(a, b);
    let two = two_candidates(a.clone(), b).await;
    sleep(Duration::from_secs(30)).await;
    let log = two.cluster.log();
    assert!(work_writes(&log, "a").count() > 10, "A leads");
    assert_eq!(
        work_writes(&log, "b").count(),
        0,
        "B never reconciles while A holds the lease"
    );
    assert_eq!(two.cluster.holder(), Some(a));
    assert!(!two.a.is_finished() && !two.b.is_finished());
}

#[tokio::test(start_paused = true)]
async fn shutdown_releases_the_lease_and_the_standby_takes_over_without_waiting_for_expiry() {
    let two = two_candidates(unique_identity("a"), unique_identity("b")).await;
    sleep(Duration::from_secs(5)).await;
    let _ = two.stop_a.send(()); // SIGTERM to A
    let end = two.a.await.unwrap();
    assert!(
        matches!(end, LeadershipEnd::Shutdown { released: true }),
        "{end:?}"
    );
    sleep(Duration::from_secs(10)).await;
    let log = two.cluster.log();
    let a_renewed = log
        .iter()
        .filter(|l| l.client == "a" && l.method == Method::PUT)
        .map(|l| l.at)
        .collect::<Vec<_>>();
    let released = *a_renewed.last().unwrap();
    let position = |pred: &dyn Fn(&Logged) -> bool| log.iter().rposition(pred).unwrap();
    let release_at = position(&|l| l.client == "a" && l.method == Method::PUT);
    let a_last_work = position(&|l| l.client == "a" && l.path == WORK);
    assert!(
        a_last_work < release_at,
        "A's work stopped before the release"
    );
    let b_first = work_writes(&log, "b")
        .map(|l| l.at)
        .min()
        .expect("B took over");
    let renewal_before_release = a_renewed[a_renewed.len() - 2];
    assert!(
        b_first < renewal_before_release + LeaderElectionConfig::default().lease_duration(),
        "B started before A's lease would have expired"
    );
    assert!(b_first >= released);
    let _ = two.stop_b.send(());
    assert!(matches!(
        two.b.await.unwrap(),
        LeadershipEnd::Shutdown { released: true }
    ));
    assert_eq!(two.cluster.holder(), None);
    let _ = two.start;
}

#[tokio::test(start_paused = true)]
async fn an_outage_shorter_than_the_renew_deadline_keeps_the_leader() {
    let two = two_candidates(unique_identity("a"), unique_identity("b")).await;
    // A renews at 0, 2, 4, … s. An outage from 9.5 s to 15.5 s fails the renewals at 10, 12
    // and 14 s; the one at 16 s is within the renew deadline (8 s + 10 s). (A leader that
    // gave up after two failed renewals 5 s apart, as the example operator did, is gone.)
    sleep(Duration::from_millis(8500)).await;
    two.cluster.partition("a", true);
    sleep(Duration::from_secs(6)).await;
    two.cluster.partition("a", false);
    sleep(Duration::from_secs(30)).await;
    let log = two.cluster.log();
    let failed_renewals = log
        .iter()
        .filter(|l| l.client == "a" && l.faulted && l.path.starts_with(LEASE))
        .count();
    assert!(
        failed_renewals >= 3,
        "three renewals failed: {failed_renewals}"
    );
    assert!(!two.a.is_finished(), "A is still leading");
    assert_eq!(work_writes(&log, "b").count(), 0, "B never reconciled");
    let after = work_writes(&log, "a")
        .filter(|l| !l.faulted)
        .map(|l| l.at)
        .max()
        .unwrap();
    assert!(
        after > two.start + Duration::from_secs(40),
        "A reconciles again after the outage"
    );
}

#[tokio::test(start_paused = true)]
async fn a_partitioned_leader_stops_at_its_renew_deadline_before_the_new_leader_starts() {
    let config = LeaderElectionConfig::default();
    let two = two_candidates(unique_identity("a"), unique_identity("b")).await;
    sleep(Duration::from_secs(5)).await;
    two.cluster.partition("a", true);
    let end = two.a.await.unwrap();
    assert!(
        matches!(
            end,
            LeadershipEnd::Lost(LeadershipLost::RenewDeadlineExceeded {
                last_error: Some(_),
                ..
            })
        ),
        "{end:?}"
    );
    sleep(Duration::from_secs(20)).await;
    let log = two.cluster.log();
    let renewed = last_renewal(&log, "a");
    let deadline = renewed + config.renew_deadline();
    // No request at all — work or Lease — by the old leader after its renew deadline:
    // the in-flight work was cancelled.
    let a_last = log
        .iter()
        .filter(|l| l.client == "a")
        .map(|l| l.at)
        .max()
        .unwrap();
    assert!(
        a_last < deadline,
        "A's last request {:?} after the deadline {:?}",
        a_last - two.start,
        deadline - two.start
    );
    // The new leader's first write comes no earlier than the deadline plus the skew margin
    // (lease duration − renew deadline).
    let b_first = work_writes(&log, "b")
        .map(|l| l.at)
        .min()
        .expect("B took over");
    let margin = config.lease_duration() - config.renew_deadline();
    assert!(
        b_first >= deadline + margin,
        "B wrote at {:?}",
        b_first - two.start
    );
    let _ = two.stop_b.send(());
    drop(two.stop_a);
    let _ = two.b.await;
}
