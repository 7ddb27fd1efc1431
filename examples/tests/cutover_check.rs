//! Runs the cut-over check's logic (examples/cutover_check.rs) on examples/data/cutover-sample.json.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../cutover_check.rs"]
#[allow(dead_code)]
mod cutover_check;

use chrono::{DateTime, Utc};
use cutover_check::{ObjectReport, check_object, objects, render, summary};
use provkit_lifecycle::Action;
use serde_json::json;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-07-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn sample() -> Vec<ObjectReport> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/cutover-sample.json"
    ))
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    objects(&doc)
        .into_iter()
        .map(|o| check_object(o, now()).unwrap())
        .collect()
}

fn by_name<'a>(reports: &'a [ObjectReport], name: &str) -> &'a ObjectReport {
    reports
        .iter()
        .find(|r| r.object == format!("Subnet tenant-a/{name}"))
        .unwrap()
}

#[test]
fn sample_decisions() {
    let reports = sample();
    assert_eq!(reports.len(), 8);
    let expect = [
        ("subnet-ready", Action::Skip, false),
        ("subnet-provisioning", Action::Poll, false),
        ("subnet-failing", Action::Backoff, false),
        ("subnet-spec-changed", Action::Trigger, false),
        ("subnet-legacy", Action::Skip, false),
        ("subnet-field-order", Action::Trigger, true),
        ("subnet-new", Action::Trigger, false),
        ("subnet-deleting", Action::Skip, false),
    ];
    for (name, action, cutover) in expect {
        let r = by_name(&reports, name);
        assert_eq!(
            (r.decision, r.reprovision_by_cutover),
            (action, cutover),
            "{name}: {}",
            r.note
        );
    }
}

#[test]
fn sample_versions_and_notes() {
    let reports = sample();
    // Spec {"cidr":"10.0.1.0/24","network":"net-a"} hashed over Go's bytes, as Go stored it.
    let ready = by_name(&reports, "subnet-ready");
    assert_eq!(ready.desired, "60d9e1f9720e19ab");
    assert_eq!(ready.stored_desired.as_deref(), Some("60d9e1f9720e19ab"));
    assert_eq!(
        ready.latest_job,
        Some(("101".into(), "Succeeded".into(), "60d9e1f9720e19ab".into()))
    );
    // Two failures 5 minutes apart: backoff 10 minutes from 11:55, so 5 minutes left at 12:00.
    let failing = by_name(&reports, "subnet-failing");
    assert!(
        failing.note.contains("retry in 300s (backoff 600s)"),
        "{}",
        failing.note
    );
    assert!(by_name(&reports, "subnet-legacy").note.contains("adopted"));
    // Go hashed the struct in declaration order (network, cidr); a Value hashes sorted keys.
    let order = by_name(&reports, "subnet-field-order");
    assert_eq!(order.stored_desired.as_deref(), Some("b3fd2dffca55429d"));
    assert_eq!(order.desired, "53ea6b1b50c17705");
    assert!(order.note.contains("RE-PROVISION"));
    assert!(
        by_name(&reports, "subnet-deleting")
            .note
            .contains("being deleted")
    );
    assert!(by_name(&reports, "subnet-new").latest_job.is_none());
}

#[test]
fn backoff_becomes_due_later() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/cutover-sample.json"
    ))
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let failing = objects(&doc)
        .into_iter()
        .find(|o| o["metadata"]["name"] == "subnet-failing")
        .unwrap();
    let later = now() + chrono::Duration::minutes(6);
    let r = check_object(failing, later).unwrap();
    assert_eq!(r.decision, Action::Backoff);
    assert!(r.note.contains("elapsed, retries now"), "{}", r.note);
}

#[test]
fn single_object_and_bad_history() {
    let single = json!({"kind": "Subnet", "metadata": {"name": "x"}, "spec": {"key": "value"}});
    assert_eq!(objects(&single).len(), 1);
    let r = check_object(&single, now()).unwrap();
    assert_eq!(
        (r.desired.as_str(), r.decision),
        ("90f31220e6080755", Action::Trigger)
    );
    let bad = json!({"kind": "Subnet", "metadata": {"name": "y"}, "spec": {}, "status": {"provisioningJobs": 5}});
    assert!(
        check_object(&bad, now())
            .unwrap_err()
            .message
            .contains("provisioningJobs")
    );
    assert!(check_object(&json!({"kind": "Subnet"}), now()).is_err());
}

#[test]
fn table_and_summary() {
    let reports = sample();
    let table = render(&reports);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 9);
    assert!(lines[0].starts_with("OBJECT"));
    // Columns are aligned: DECISION starts at the same offset in every line.
    let col = lines[0].find("DECISION").unwrap();
    for l in &lines[1..] {
        let rest = &l[col..];
        assert!(
            ["Skip", "Trigger", "Poll", "Backoff", "Requeue"]
                .iter()
                .any(|d| rest.starts_with(d)),
            "{l}"
        );
    }
    assert_eq!(
        summary(&reports),
        "8 object(s); Skip: 3, Trigger: 3, Poll: 1, Backoff: 1; re-provisioned by the cut-over: 1"
    );
}
