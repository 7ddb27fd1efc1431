//! The simulation harness end to end: a CI-sized fleet under chaos and the deletion race on a
//! stale cache (the demo's story runs on the product path: tests/demo_story.rs).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provkit_core::Clock;
use provkit_examples::fleet::{FleetConfig, run_fleet};
use provkit_examples::{
    Audit, Backend, BackendConfig, EngineResult, KindTemplates, Observer, PurgeLog,
    ReconcileReport, RunMetrics, Sim, SimConfig, VirtualClock,
};
use provkit_lifecycle::DeprovisionStep;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_of_500_converges_under_chaos_without_duplicates() {
    let mut config = FleetConfig::new(500);
    config.concurrency = 16;
    config.chaos = true;
    config.seed = 7;
    config.purges = 5;
    config.probe = Duration::from_millis(200);
    let report = run_fleet(config).await.unwrap();
    let text = report.render();
    assert!(report.ok(), "{text}");
    assert_eq!(report.audit.duplicates, 0, "{text}");
    assert_eq!(report.audit.lost, 0, "{text}");
    assert_eq!(RunMetrics::get(&report.metrics.early_releases), 0, "{text}");
    assert_eq!(report.not_converged, 0, "{text}");
    assert_eq!(report.unexpected_launches, 0, "{text}");
    // Chaos really happened: faults hit, purged jobs were re-launched, lost launch answers recovered.
    assert!(
        report.faults.iter().map(|(_, hits)| hits).sum::<u64>() > 100,
        "{text}"
    );
    assert!(report.audit.purged > 0, "{text}");
    assert_eq!(report.audit.jobs, 3 * 500 + report.audit.purged, "{text}");
    assert!(RunMetrics::get(&report.metrics.recovered) > 0, "{text}");
    assert!(
        RunMetrics::get(&report.metrics.stale_check_requeues) > 0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_without_chaos_launches_exactly_three_jobs_per_resource() {
    let mut config = FleetConfig::new(150);
    config.concurrency = 8;
    config.probe = Duration::from_millis(100);
    let report = run_fleet(config).await.unwrap();
    let text = report.render();
    assert!(report.ok(), "{text}");
    assert_eq!(report.audit.jobs, 450, "{text}");
    assert_eq!(report.poll_budget_exceeded, 0, "{text}");
    assert!(report.peak_rss.is_some());
}

/// Deletes its resource once provisioned; right after the deprovision launch, the next reconcile
/// reads the copy from before that launch.
struct DeleteWithStaleCopy {
    forced: AtomicBool,
    steps: Mutex<Vec<String>>,
}

impl Observer for DeleteWithStaleCopy {
    fn reconciled(&self, sim: &Arc<Sim>, report: &ReconcileReport) {
        self.steps.lock().unwrap().push(report.describe().0);
        if report.converged() {
            sim.delete(report.index);
        }
        if let EngineResult::Deprovision(Ok(o)) = &report.result
            && matches!(o.step, DeprovisionStep::Launched { .. })
            && !self.forced.swap(true, Ordering::SeqCst)
        {
            sim.store
                .force_stale_read(report.index, report.copy.clone().unwrap());
            sim.queue.schedule(report.index, sim.clock.now());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_reconcile_on_a_stale_copy_launches_no_second_deprovision_job() {
    let clock = VirtualClock::new();
    let kinds = vec![KindTemplates::new(
        "VirtualNetwork",
        Duration::from_secs(40),
        Duration::from_secs(40),
    )];
    let backend = Backend::start(&BackendConfig::new(kinds), &clock, 1)
        .await
        .unwrap();
    let sim = Sim::new(SimConfig::new(1), clock.clone(), &backend);
    let observer = Arc::new(DeleteWithStaleCopy {
        forced: AtomicBool::new(false),
        steps: Mutex::new(Vec::new()),
    });
    sim.create(
        0,
        "VirtualNetwork",
        "net",
        serde_json::json!({"cidr": "10.0.0.0/24"}),
    );
    sim.run(observer.clone(), clock.after(Duration::from_secs(3600)))
        .await;
    let steps = observer.steps.lock().unwrap().clone();
    assert!(observer.forced.load(Ordering::SeqCst), "{steps:#?}");
    assert!(
        steps
            .iter()
            .any(|s| s == "Deprovision: stale cache, no launch"),
        "{steps:#?}"
    );
    let audit = Audit::run(&sim.aap, &sim.store, &PurgeLog::default(), 1);
    assert_eq!(
        (audit.provision_launches[0], audit.deprovision_launches[0]),
        (1, 1),
        "{steps:#?}"
    );
    assert_eq!(audit.duplicates, 0);
    assert!(
        sim.store.fresh(0).is_none(),
        "the finalizer was released and the object is gone"
    );
}
