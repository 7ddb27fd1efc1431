//! Cut-over check for teams replacing the Go OSAC operator with a provkit-based one.
//!
//! Reads objects as `kubectl get <kind> -o json` prints them (a `List` or a single object) from a
//! file argument or stdin, and reports, per object:
//!
//! - the desired config version provkit computes from `.spec`,
//! - the version the Go operator stored in `.status.desiredConfigVersion` (a mismatch means
//!   provkit hashes this spec differently and **would re-provision it**),
//! - the latest provision job (by timestamp) from `.status.provisioningJobs` and its
//!   `configVersion`,
//! - the decision the engine would take (Skip / Trigger / Poll / Backoff / Requeue), from
//!   provkit-lifecycle's pure decision functions and the default policy.
//!
//! ```text
//! kubectl get subnets -A -o json > subnets.json
//! cargo run --example cutover_check -- subnets.json
//! kubectl get computeinstances -A -o json | cargo run --example cutover_check
//! cargo run --example cutover_check -- examples/data/cutover-sample.json --now 2026-07-01T12:00:00Z
//! ```
//!
//! Exit status: 0 when no object would be re-provisioned because of the cut-over itself, 2 when
//! some would (hash mismatch), 1 on bad input.
//!
//! **Spec type.** This program reads untyped JSON, so the spec is hashed as a `serde_json::Value`,
//! whose keys are sorted like a Go map. The Go operator hashes its spec *struct* (fields in
//! declaration order) or a wrapper (`{Spec, ImplementationStrategy}`), so this program can report
//! a false RE-PROVISION. For exact results use the library check on your typed CRD:
//! `provkit_kube::cutover::check_cutover` (it hashes `ProvisionedResource::config_source()` as the
//! controller does; see docs/migrating-from-go.md).
#![allow(clippy::unwrap_used)]

use std::fmt;
use std::io::Read as _;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use provkit_core::{Clock as _, JobStatus, JobType, SystemClock, find_latest_job_by_type};
use provkit_lifecycle::decide::{
    Action, Backoff, LegacyJobs, backoff_remaining, cache_is_stale, compute_backoff_from_jobs,
    evaluate_action_with_check,
};
use serde_json::Value;

/// The type the spec is hashed as. Replace it with your CRD's spec type for exact results.
pub(crate) type Spec = serde_json::Value;

/// The report for one object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ObjectReport {
    /// `Kind namespace/name`.
    pub(crate) object: String,
    /// What provkit computes from `.spec`.
    pub(crate) desired: String,
    /// `.status.desiredConfigVersion`, if present.
    pub(crate) stored_desired: Option<String>,
    /// The latest provision job's id, state and config version.
    pub(crate) latest_job: Option<(String, String, String)>,
    /// The engine's decision.
    pub(crate) decision: Action,
    /// A short explanation.
    pub(crate) note: String,
    /// True when the decision is a launch caused only by a hash that differs from Go's.
    pub(crate) reprovision_by_cutover: bool,
}

/// A problem with one object of the input.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ObjectError {
    /// `Kind namespace/name` (as far as known).
    pub(crate) object: String,
    /// What is wrong.
    pub(crate) message: String,
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.object, self.message)
    }
}

/// The objects of a `kubectl get -o json` document: the `items` of a `List`, or the object itself.
pub(crate) fn objects(doc: &Value) -> Vec<&Value> {
    match doc.get("items").and_then(Value::as_array) {
        Some(items)
            if doc
                .get("kind")
                .and_then(Value::as_str)
                .is_none_or(|k| k.ends_with("List")) =>
        {
            items.iter().collect()
        }
        _ => vec![doc],
    }
}

fn object_name(obj: &Value) -> String {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("?");
    let meta = obj.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Evaluates one object at time `now` (the decision functions never read the clock themselves).
///
/// # Errors
/// When the object has no `.spec`, the spec cannot be hashed, or the job history does not decode.
pub(crate) fn check_object(obj: &Value, now: DateTime<Utc>) -> Result<ObjectReport, ObjectError> {
    let object = object_name(obj);
    let err = |message: String| ObjectError {
        object: object.clone(),
        message,
    };
    let spec_value = obj.get("spec").ok_or_else(|| err("no .spec".into()))?;
    let spec: Spec =
        serde_json::from_value(spec_value.clone()).map_err(|e| err(format!("spec: {e}")))?;
    let desired = provkit_core::compute_desired_config_version(&spec)
        .map_err(|e| err(format!("hash: {e}")))?;
    let status = obj.get("status");
    let stored_desired = status
        .and_then(|s| s.get("desiredConfigVersion"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let jobs: Vec<JobStatus> = match status.and_then(|s| s.get("provisioningJobs")) {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| err(format!("status.provisioningJobs: {e}")))?,
    };

    // kubectl reads from the API server, so this copy *is* the fresh copy the stale check reads.
    let latest = find_latest_job_by_type(&jobs, &JobType::Provision);
    let eval = evaluate_action_with_check(&jobs, &desired, LegacyJobs::Adopt, || {
        cache_is_stale(latest, &jobs, true)
    });
    let latest_job = latest.map(|j| {
        (
            j.job_id.clone(),
            j.state.to_string(),
            j.config_version.clone(),
        )
    });
    let hash_mismatch = stored_desired.as_deref().is_some_and(|s| s != desired);
    let latest_matches_go =
        latest.is_some_and(|j| Some(j.config_version.as_str()) == stored_desired.as_deref());

    let mut reprovision_by_cutover = false;
    let mut note = match eval.action {
        Action::Skip if eval.adopt_legacy => {
            "legacy job (no configVersion): adopted, not re-provisioned".to_owned()
        }
        Action::Skip => "config applied".to_owned(),
        Action::Poll => "provision job in flight: polled until it finishes".to_owned(),
        Action::Requeue => "API server shows a job the cache does not: requeue".to_owned(),
        Action::Backoff => {
            let backoff = compute_backoff_from_jobs(&jobs, &desired, Backoff::default());
            match backoff_remaining(backoff, latest.and_then(|j| j.timestamp), now) {
                Some(rest) => format!(
                    "failed at this version: retry in {}s (backoff {}s)",
                    rest.as_secs(),
                    backoff.as_secs()
                ),
                None => format!(
                    "failed at this version: backoff {}s elapsed, retries now",
                    backoff.as_secs()
                ),
            }
        }
        Action::Trigger if hash_mismatch && latest_matches_go => {
            reprovision_by_cutover = true;
            "RE-PROVISION: provkit's hash differs from the one Go stored".to_owned()
        }
        Action::Trigger if latest.is_none() => "no provision job yet: launches".to_owned(),
        Action::Trigger => "spec changed since the latest job: launches".to_owned(),
    };
    if hash_mismatch && !reprovision_by_cutover {
        note.push_str("; WARNING: stored desiredConfigVersion differs from provkit's");
    }
    if obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        note.push_str("; being deleted (deprovision path)");
    }
    Ok(ObjectReport {
        object,
        desired,
        stored_desired,
        latest_job,
        decision: eval.action,
        note,
        reprovision_by_cutover,
    })
}

/// Renders reports as an aligned table.
pub(crate) fn render(reports: &[ObjectReport]) -> String {
    let header = [
        "OBJECT",
        "DESIRED",
        "STORED",
        "LATEST JOB",
        "JOB VERSION",
        "DECISION",
        "NOTE",
    ];
    let rows: Vec<[String; 7]> = reports
        .iter()
        .map(|r| {
            let (job, version) = match &r.latest_job {
                Some((id, state, v)) => (
                    format!("{id} {state}"),
                    if v.is_empty() {
                        "(none)".into()
                    } else {
                        v.clone()
                    },
                ),
                None => ("-".into(), "-".into()),
            };
            [
                r.object.clone(),
                r.desired.clone(),
                r.stored_desired.clone().unwrap_or_else(|| "-".into()),
                job,
                version,
                r.decision.to_string(),
                r.note.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&header.map(str::to_owned));
    for row in &rows {
        line(row);
    }
    out
}

/// Counts per decision, as `Skip: 2, Trigger: 1, …` (decisions with no object omitted).
pub(crate) fn summary(reports: &[ObjectReport]) -> String {
    let order = [
        Action::Skip,
        Action::Trigger,
        Action::Poll,
        Action::Backoff,
        Action::Requeue,
    ];
    let counts: Vec<String> = order
        .iter()
        .map(|a| (a, reports.iter().filter(|r| r.decision == *a).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(a, n)| format!("{a}: {n}"))
        .collect();
    let cutover = reports.iter().filter(|r| r.reprovision_by_cutover).count();
    format!(
        "{} object(s); {}; re-provisioned by the cut-over: {cutover}",
        reports.len(),
        counts.join(", ")
    )
}

fn main() -> ExitCode {
    let mut path = None;
    let mut now = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--now" => match args.next().map(|t| DateTime::parse_from_rfc3339(&t)) {
                Some(Ok(t)) => now = Some(t.with_timezone(&Utc)),
                _ => {
                    eprintln!("--now needs an RFC 3339 time, e.g. 2026-07-01T12:00:00Z");
                    return ExitCode::from(1);
                }
            },
            "-h" | "--help" => {
                println!(
                    "usage: cutover_check [FILE|-] [--now RFC3339]\nReads `kubectl get <kind> -o json` output (stdin when no FILE)."
                );
                return ExitCode::SUCCESS;
            }
            _ => path = Some(arg),
        }
    }
    let mut text = String::new();
    let read = match path.as_deref() {
        None | Some("-") => std::io::stdin().read_to_string(&mut text).map(|_| ()),
        Some(p) => std::fs::read_to_string(p).map(|t| text = t),
    };
    if let Err(e) = read {
        eprintln!("cannot read input: {e}");
        return ExitCode::from(1);
    }
    let doc: Value = match serde_json::from_str(&text) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("input is not JSON: {e}");
            return ExitCode::from(1);
        }
    };
    let now = now.unwrap_or_else(|| SystemClock.now());
    let mut reports = Vec::new();
    let mut failed = false;
    for obj in objects(&doc) {
        match check_object(obj, now) {
            Ok(r) => reports.push(r),
            Err(e) => {
                eprintln!("skipped {e}");
                failed = true;
            }
        }
    }
    print!("{}", render(&reports));
    println!("\n{}", summary(&reports));
    if reports.iter().any(|r| r.reprovision_by_cutover) {
        ExitCode::from(2)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
