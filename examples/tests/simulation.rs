//! The fleet harness end to end on the product path (kube-runtime `Controller`s running
//! provkit-kube's `Provisioner` with the real `AapProvider`, against the fake API server and the
//! fake AAP over loopback): a CI-sized fleet under every kind of chaos, and a calm one.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use provkit_examples::fleet::{FleetConfig, run_fleet};
use provkit_examples::{CrashPoint, RunMetrics, TimeScale};

/// The CI-sized scenario: a short lifecycle (10 s polls, 20 s / 10 s jobs) at scale ×4, so
/// the scaled deadlines (3.75 s leases, 2.5 s client timeouts) hold on a loaded debug build.
fn short(mut config: FleetConfig) -> FleetConfig {
    config.scale = TimeScale::new(0.25);
    config.poll_interval = Duration::from_secs(10);
    config.create_job = Duration::from_secs(20);
    config.delete_job = Duration::from_secs(10);
    config.client_timeout = Duration::from_secs(10);
    config.arrival = Duration::from_secs(30);
    config.think = Duration::from_secs(20);
    config.refuse_for = Duration::from_secs(50);
    config.concurrency = 16;
    config.probe = Duration::ZERO;
    config.deadline = Duration::from_secs(3600);
    config
}

/// Chaos on both fakes, crashes from the fakes' side at every phase of the launch path, two
/// replicas with leader kills, refused status writes: every resource converges with no
/// duplicate, no lost job id, no early finalizer release and no launch while its status could
/// not be written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_converges_exactly_once_under_chaos_crashes_refused_writes_and_two_replicas() {
    let n = 100;
    let mut config = short(FleetConfig::new(n).everything());
    config.refused_fraction = 0.05;
    config.purges = 3;
    config.crash_plan.probability = 0.03;
    config.crash_plan.min_gap = Duration::from_secs(25);
    config.crash_plan.leader_kills_every = Some(Duration::from_secs(60));
    let report = run_fleet(config).await.unwrap();
    let text = report.render();
    println!("{text}");
    assert!(report.ok(), "{text}");
    assert_eq!(report.audit.duplicates, 0, "{text}");
    assert_eq!(report.audit.lost, 0, "{text}");
    assert_eq!(RunMetrics::get(&report.metrics.early_releases), 0, "{text}");
    assert_eq!(
        RunMetrics::get(&report.metrics.launches_while_refused),
        0,
        "{text}"
    );
    assert_eq!(report.not_converged, 0, "{text}");
    assert_eq!(report.unexpected_launches, 0, "{text}");
    assert_eq!(report.audit.jobs, 3 * n + report.audit.purged, "{text}");
    // The chaos really happened: faults hit, replicas crashed on the launch path and were
    // rebuilt, the standby took over after leader kills.
    assert!(
        report.faults.iter().map(|(_, hits)| hits).sum::<u64>() > 100,
        "{text}"
    );
    let on_launch_path: u64 = report
        .crashes
        .iter()
        .filter(|(p, _)| matches!(p, CrashPoint::Request(..)))
        .map(|(_, k)| k)
        .sum();
    assert!(on_launch_path >= 3, "{text}");
    assert!(report.leadership_starts >= 2, "{text}");
    assert!(report.status_conflicts > 0, "{text}");
}

/// No chaos: exactly three AAP jobs per resource, every finalizer released after its
/// deprovision job succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calm_fleet_launches_exactly_three_jobs_per_resource() {
    let mut config = short(FleetConfig::new(50));
    // The plain-loop probes run after the replicas stopped: they create objects and launch jobs
    // of their own, which a replica still running would provision (the audit would see it).
    config.probe = Duration::from_millis(300);
    let report = run_fleet(config).await.unwrap();
    let text = report.render();
    assert!(report.ok(), "{text}");
    assert_eq!(report.audit.jobs, 150, "{text}");
    assert_eq!(
        RunMetrics::get(&report.metrics.finalizers_released),
        50,
        "{text}"
    );
    assert!(report.crashes.is_empty(), "{text}");
}

/// Status writes refused (403) for 5 poll intervals from each object's creation: no AAP job while
/// refused, and each object still converges with exactly its three jobs once writes are allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_status_writes_launch_nothing_until_allowed() {
    let mut config = short(FleetConfig::new(20));
    config.refused_fraction = 0.25;
    config.deadline = Duration::from_secs(400);
    let report = run_fleet(config).await.unwrap();
    let text = report.render();
    assert_eq!(
        RunMetrics::get(&report.metrics.launches_while_refused),
        0,
        "{text}"
    );
    assert!(report.ok(), "{text}");
    assert_eq!(report.audit.jobs, 60, "{text}");
}
