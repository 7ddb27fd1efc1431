//! The fleet harness end to end on the product path (kube-runtime `Controller`s running
//! provkit-kube's `Provisioner` with the real `AapProvider`, against the fake API server and the
//! fake AAP over loopback): a CI-sized fleet under every kind of chaos, and a calm one.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use provkit_examples::fleet::{FleetConfig, run_fleet};
use provkit_examples::{CrashPoint, RunMetrics, TimeScale};

/// Chaos on both fakes, crashes from the fakes' side at every phase of the launch path, two
/// replicas with leader kills, refused status writes: every resource converges with no
/// duplicate, no lost job id, no early finalizer release and no launch while its status could
/// not be written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_converges_exactly_once_under_chaos_crashes_refused_writes_and_two_replicas() {
    let mut config = FleetConfig::new(300).everything();
    config.scale = TimeScale::new(10.0);
    config.arrival = Duration::from_secs(120);
    config.think = Duration::from_secs(60);
    config.refused_fraction = 0.05;
    config.concurrency = 32;
    config.purges = 3;
    config.probe = Duration::ZERO;
    config.deadline = Duration::from_secs(3600);
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
    assert_eq!(report.audit.jobs, 3 * 300 + report.audit.purged, "{text}");
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
    let mut config = FleetConfig::new(100);
    config.scale = TimeScale::new(10.0);
    config.arrival = Duration::from_secs(60);
    config.think = Duration::from_secs(30);
    config.concurrency = 16;
    config.probe = Duration::ZERO;
    config.deadline = Duration::from_secs(3600);
    let report = run_fleet(config).await.unwrap();
    let text = report.render();
    assert!(report.ok(), "{text}");
    assert_eq!(report.audit.jobs, 300, "{text}");
    assert_eq!(
        RunMetrics::get(&report.metrics.finalizers_released),
        100,
        "{text}"
    );
    assert!(report.crashes.is_empty(), "{text}");
}
