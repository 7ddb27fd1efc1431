//! Cut-over check for teams replacing the Go OSAC operator with a provkit-based one.
//!
//! Lists the `Subnet` objects the Go operator provisioned — through a `kube::Client` (the current
//! kubeconfig, `KUBECONFIG`), or from a `kubectl get subnets -o json` file — as a **typed**
//! kube-derive CRD, and reports per object what provkit's engine would do on take-over, with
//! [`provkit_kube::cutover::check_cutover_all`]: the config version computed from the typed
//! object exactly as `Provisioner` computes it (the spec struct in Go field order, inside Go's
//! `{Spec, ImplementationStrategy}` wrapper), the version Go stored, the latest provision job,
//! the action and why.
//!
//! ```text
//! cargo run --example cutover_check                       # all namespaces, current kubeconfig
//! cargo run --example cutover_check -- --namespace tenant-a --now 2026-07-01T12:00:00Z
//! kubectl get subnets -A -o json > subnets.json && cargo run --example cutover_check -- --file subnets.json
//! ```
//!
//! Against the fake API server (provkit-testing's `fake-apiserver` binary writes a kubeconfig):
//!
//! ```text
//! cargo run -p provkit-testing --features fake-apiserver-bin --bin fake-apiserver -- \
//!     --listen 127.0.0.1:18080 --crd subnets.yaml --kubeconfig-out /tmp/fake.kubeconfig
//! KUBECONFIG=/tmp/fake.kubeconfig cargo run --example cutover_check
//! ```
//!
//! Exit status: 0 when no object would be re-provisioned because of the cut-over itself, 2 when
//! some would (`RE-PROVISION`), 1 on bad input or an unreachable API server.
//!
//! **Your own kind.** Replace [`Subnet`] with your CRD type and its
//! [`ProvisionedResource`] impl (the one your controller uses); the rest is unchanged.
#![allow(clippy::unwrap_used)]

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use kube::api::{Api, ListParams, ObjectList};
use kube::{Client, CustomResource};
use provkit_core::{Clock as _, ConfigHasher, SpecWithStrategy, SystemClock};
use provkit_kube::cutover::{CutoverError, CutoverReport, check_cutover_all};
use provkit_kube::{ProvisionedResource, ProvisioningStatus};
use provkit_lifecycle::LifecyclePolicy;
use provkit_lifecycle::decide::Action;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation the Go networking controllers stamp `spec.implementationStrategy` into; the
/// config version hashes it with the spec (`{Spec, ImplementationStrategy}`).
pub(crate) const STRATEGY_ANNOTATION: &str = "osac.openshift.io/implementation-strategy";

/// The Go operator's `Subnet` spec: fields in Go declaration order (`network` before `cidr`),
/// which is the order Go's `encoding/json` writes and hashes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "osac.openshift.io",
    version = "v1alpha1",
    kind = "Subnet",
    namespaced,
    status = "SubnetStatus"
)]
pub(crate) struct SubnetSpec {
    /// The virtual network.
    pub(crate) network: String,
    /// The subnet's range.
    pub(crate) cidr: String,
}

/// The status: the Go operator's provisioning fields.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub(crate) struct SubnetStatus {
    /// `provisioningJobs`, `desiredConfigVersion`, …
    #[serde(flatten)]
    pub(crate) provisioning: ProvisioningStatus,
}

impl Subnet {
    fn strategy(&self) -> &str {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(STRATEGY_ANNOTATION))
            .map_or("", String::as_str)
    }
}

impl ProvisionedResource for Subnet {
    fn config_source(&self) -> impl Serialize + '_ {
        SpecWithStrategy::new(&self.spec, self.strategy())
    }
    fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
        self.status.as_ref().map(|s| &s.provisioning)
    }
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
        &mut self
            .status
            .get_or_insert_with(Default::default)
            .provisioning
    }
}

/// Every `Subnet` in `namespace` (all namespaces when `None`), from the API server.
///
/// # Errors
/// The list request's error.
pub(crate) async fn list_subnets(
    client: Client,
    namespace: Option<&str>,
) -> Result<Vec<Subnet>, kube::Error> {
    let api: Api<Subnet> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    Ok(api.list(&ListParams::default()).await?.items)
}

/// The objects of a `kubectl get -o json` document (a `List` or one object), typed.
///
/// # Errors
/// When the document is neither.
pub(crate) fn parse_subnets(text: &str) -> Result<Vec<Subnet>, serde_json::Error> {
    match serde_json::from_str::<ObjectList<Subnet>>(text) {
        Ok(list) => Ok(list.items),
        Err(_) => serde_json::from_str::<Subnet>(text).map(|s| vec![s]),
    }
}

/// The library check for every object, under the policy and hasher the controller uses.
pub(crate) fn check(
    objects: &[Subnet],
    now: DateTime<Utc>,
) -> Vec<Result<CutoverReport, CutoverError>> {
    check_cutover_all(
        objects,
        &LifecyclePolicy::default(),
        &ConfigHasher::default(),
        now,
    )
}

/// Renders reports as an aligned table.
pub(crate) fn render(reports: &[CutoverReport]) -> String {
    let header = ["OBJECT", "DESIRED", "STORED", "LATEST JOB", "ACTION", "WHY"].map(str::to_owned);
    let rows: Vec<[String; 6]> = reports
        .iter()
        .map(|r| {
            let job = r.latest_job.as_ref().map_or_else(
                || "-".to_owned(),
                |j| format!("{} {} @{}", j.job_id, j.state, or_none(&j.config_version)),
            );
            let mut why = r.reason.to_string();
            if r.deleting {
                why.push_str("; being deleted (deprovision path)");
            }
            [
                r.object.clone(),
                r.desired.clone(),
                r.stored_desired.clone().unwrap_or_else(|| "-".into()),
                job,
                r.action.to_string(),
                why,
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn or_none(version: &str) -> &str {
    if version.is_empty() {
        "(none)"
    } else {
        version
    }
}

/// Counts per action and the re-provisions the cut-over itself would cause.
pub(crate) fn summary(reports: &[CutoverReport]) -> String {
    let order = [
        Action::Skip,
        Action::Trigger,
        Action::Poll,
        Action::Backoff,
        Action::Requeue,
    ];
    let counts: Vec<String> = order
        .iter()
        .map(|a| (a, reports.iter().filter(|r| r.action == *a).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(a, n)| format!("{a}: {n}"))
        .collect();
    let cutover = reports
        .iter()
        .filter(|r| r.reprovisions_because_of_cutover())
        .count();
    format!(
        "{} object(s); {}; re-provisioned by the cut-over: {cutover}",
        reports.len(),
        counts.join(", ")
    )
}

/// 2 when an object would be re-provisioned because of the cut-over, 1 when an object could not
/// be checked, 0 otherwise.
pub(crate) fn exit_status(results: &[Result<CutoverReport, CutoverError>]) -> u8 {
    if results.iter().any(|r| {
        r.as_ref()
            .is_ok_and(CutoverReport::reprovisions_because_of_cutover)
    }) {
        2
    } else if results.iter().any(Result::is_err) {
        1
    } else {
        0
    }
}

/// Prints the table and summary of `results`; returns the exit status.
pub(crate) fn report(results: &[Result<CutoverReport, CutoverError>]) -> u8 {
    let mut reports = Vec::new();
    for r in results {
        match r {
            Ok(r) => reports.push(r.clone()),
            Err(e) => eprintln!("skipped {}", provkit_kube::ErrorChain(e)),
        }
    }
    print!("{}", render(&reports));
    println!("\n{}", summary(&reports));
    exit_status(results)
}

struct Args {
    file: Option<String>,
    namespace: Option<String>,
    now: Option<DateTime<Utc>>,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        file: None,
        namespace: None,
        now: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--now" => {
                let t = args.next().ok_or("--now needs a time")?;
                let t = DateTime::parse_from_rfc3339(&t)
                    .map_err(|e| format!("--now needs an RFC 3339 time: {e}"))?;
                out.now = Some(t.with_timezone(&Utc));
            }
            "--namespace" | "-n" => {
                out.namespace = Some(args.next().ok_or("--namespace needs a name")?);
            }
            "--file" | "-f" => {
                out.file = Some(args.next().ok_or("--file needs a path (- for stdin)")?);
            }
            "-h" | "--help" => {
                return Err("usage: cutover_check [--namespace NS] [--file FILE|-] [--now RFC3339]\n\
                     Lists Subnets through the current kubeconfig, or reads `kubectl get subnets -o json` output."
                    .to_owned());
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(out)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(1);
        }
    };
    let objects = match &args.file {
        Some(path) => {
            let text = if path == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            };
            match text.map_err(|e| e.to_string()).and_then(|t| {
                parse_subnets(&t).map_err(|e| format!("not a Subnet or a list of them: {e}"))
            }) {
                Ok(objects) => objects,
                Err(e) => {
                    eprintln!("cannot read {path}: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        None => {
            let listed = match Client::try_default().await {
                Ok(client) => list_subnets(client, args.namespace.as_deref()).await,
                Err(e) => Err(e),
            };
            match listed {
                Ok(objects) => objects,
                Err(e) => {
                    eprintln!("cannot list Subnets: {}", provkit_kube::ErrorChain(&e));
                    return ExitCode::from(1);
                }
            }
        }
    };
    let now = args.now.unwrap_or_else(|| SystemClock.now());
    ExitCode::from(report(&check(&objects, now)))
}
