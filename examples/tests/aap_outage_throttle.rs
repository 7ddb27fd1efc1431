//! Issue 17's measured scenarios at CI size, on the product path (kube-runtime `Controller`s
//! running provkit-kube's `Provisioner` with the real `AapProvider` / `AapClient` against the
//! fake API server and the fake AAP over loopback): an AAP outage with jobs in flight, and a
//! fleet run against a rate-limited AAP. The assertions are the scenarios' count targets; the
//! recovery time is printed, not asserted.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use provkit_examples::TimeScale;
use provkit_examples::fleet::FleetConfig;
use provkit_examples::outage::{OutageConfig, run_outage};
use provkit_examples::throttle::{run_throttled, throttled};

/// 40 resources with 60 s provision jobs, polled every 10 s; AAP refuses connections for 60 s,
/// then answers 503 with `Retry-After` for 20 s: the circuit breaker keeps the fleet to about
/// one probe per second, each object's status and Events are written at most once during the
/// outage, and afterwards every resource converges and is deleted with exactly its two jobs,
/// no duplicate and no lost job id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aap_outage_costs_one_probe_per_second_and_one_status_write_per_object() {
    let mut config = OutageConfig::new(40);
    config.scale = TimeScale::new(0.25);
    config.concurrency = 16;
    config.arrival = Duration::from_secs(10);
    config.poll_interval = Duration::from_secs(10);
    config.create_job = Duration::from_secs(60);
    config.delete_job = Duration::from_secs(10);
    config.client_timeout = Duration::from_secs(10);
    config.lead_in = Duration::from_secs(10);
    config.refused = Duration::from_secs(60);
    config.unavailable = Duration::from_secs(20);
    config.retry_after = Duration::from_secs(8);
    config.deadline = Duration::from_secs(600);
    let config_concurrency = config.concurrency;
    let report = run_outage(config).await.unwrap();
    let text = report.render();
    println!("{text}");
    assert!(report.counts_ok(), "{text}");
    assert!(report.all_launched, "{text}");
    assert_eq!(report.converged_before, 0, "{text}");
    assert_eq!(report.audit.duplicates, 0, "{text}");
    assert_eq!(report.audit.lost, 0, "{text}");
    assert_eq!(report.not_converged, 0, "{text}");
    assert!(report.recovery.is_some(), "{text}");
    assert_eq!(report.audit.jobs, 80, "{text}");
    // The outage really met the breaker: it opened, refused requests, and probes reached AAP.
    assert!(report.breaker.opened >= 1.0, "{text}");
    assert!(report.breaker.rejections > 0.0, "{text}");
    assert!(report.aap.total >= 1, "{text}");
    assert!(report.aap_by_phase[1] >= 1, "{text}");
    assert!(report.aap.total <= report.request_budget(), "{text}");
    assert!(report.probes() <= 80, "{text}");
    // The requests that tripped the breaker: at most the threshold, or those already on their
    // way when the first failure came back if there were more (at most the concurrency).
    let on_their_way = u64::from(config_concurrency);
    assert!(
        report.tripping() <= report.tripping_budget().max(on_their_way),
        "{text}"
    );
    assert!(report.status_writes.max <= 1, "{text}");
    assert!(report.event_writes.max <= 1, "{text}");
}

/// 40 resources created within 10 s against an AAP limited to 4 requests per scenario second
/// (the client's token bucket, scaled): the fleet converges with exactly three jobs per
/// resource, the rate seen by the fake is never above the limit for more than a second at a
/// time, the limit was reached (the run was throttled), and the run took at least
/// requests ÷ limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_aap_is_never_sent_more_than_its_rate() {
    let mut config: FleetConfig = throttled(40);
    config.scale = TimeScale::new(0.25);
    config.poll_interval = Duration::from_secs(10);
    config.create_job = Duration::from_secs(20);
    config.delete_job = Duration::from_secs(10);
    config.client_timeout = Duration::from_secs(10);
    config.arrival = Duration::from_secs(10);
    config.think = Duration::from_secs(10);
    config.concurrency = 16;
    config.deadline = Duration::from_secs(3600);
    let limit = 4.0;
    let report = run_throttled(config, limit).await.unwrap();
    let text = report.render();
    println!("{text}");
    assert!(report.ok(), "{text}");
    assert_eq!(report.fleet.audit.jobs, 120, "{text}");
    assert!(report.rate.longest_above <= 1, "{text}");
    assert!(f64::from(report.rate.max) >= limit, "{text}");
    assert!(report.duration() >= report.bound(), "{text}");
}
