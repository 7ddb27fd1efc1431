//! The demo's story end to end on the product path (kube-runtime `Controller`s with provkit-kube
//! `Provisioner`s on the fake API server, the real `AapProvider` against the fake AAP over
//! loopback, real time at the demo's scale): every expectation holds, including the controller
//! crash right after a launch and the adoption of its job.
#![allow(clippy::unwrap_used)]

use provkit_examples::stack::TimeScale;
use provkit_examples::story::{self, DEFAULT_SCALE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_story_meets_every_expectation_through_the_product_path() {
    let report = story::run(TimeScale::new(DEFAULT_SCALE)).await.unwrap();
    let failed: Vec<_> = report.checks.iter().filter(|c| !c.ok).collect();
    assert!(
        failed.is_empty(),
        "failed: {failed:#?}\n{}\n{}",
        report.timeline,
        report.jobs
    );
    // net-a, vol-b ×2, cluster-c, vm-d, the two audits, and the crash before/after checks.
    assert_eq!(report.checks.len(), 11, "{:#?}", report.checks);
    assert!(report.timeline.contains("CRASH"), "{}", report.timeline);
    assert!(
        report.timeline.contains("found by the launch intent's key"),
        "{}",
        report.timeline
    );
    assert!(
        report.timeline.contains("stale-cache check → no launch"),
        "{}",
        report.timeline
    );
    let status: serde_json::Value = serde_json::from_str(&report.status_document).unwrap();
    assert_eq!(
        status["provisioningJobs"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );
}
