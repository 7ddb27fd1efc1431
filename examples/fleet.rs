//! Fleet run through the product path: N `VirtualNetwork`s created, provisioned, changed once
//! and deleted by a user client, reconciled by kube-runtime `Controller`s running provkit-kube's
//! `Provisioner` with the real `AapProvider` against the in-process fake API server and the fake
//! AAP over loopback, in real time scaled by one factor, optionally under chaos.
//!
//! ```text
//! cargo run --release --example fleet -- --resources 10000                  # the figures
//! cargo run --release --example fleet -- --resources 10000 --everything     # chaos + crashes
//! cargo run --release --example fleet -- --scenario outage --resources 10000  # AAP outage
//! cargo run --release --example fleet -- --scenario throttled --resources 1000 # AAP at 8 req/s
//! cargo run --release --example fleet -- --resources 10000 --push             # push wake-ups
//! ```
//!
//! `--push` (issue 28): the leader subscribes to the fake AAP's job status websocket; a job's
//! final status wakes its object at once and one `GET` confirms it; in-flight jobs are polled
//! every `--push-safety-net-secs` (600) while the stream is healthy. With `--chaos` /
//! `--everything` the websocket connections are also dropped about every `--push-drop-secs`
//! (30) scenario seconds. The report adds AAP job `GET`s per job, AAP requests per resource, the
//! completion latency (median, p99) and the stream's re-poll bursts.
//!
//! `--scenario outage` (issue 17): the resources' provision jobs are launched and being polled,
//! then AAP refuses connections for `--refused-secs` (600) scenario seconds, then answers 503
//! with `Retry-After: --retry-after-secs` (30) for `--unavailable-secs` (120), then recovers;
//! it prints the AAP requests during the outage (total and per scenario second), the status and
//! Event writes per object, the time from recovery until every resource converged, each against
//! its target, and the audit. `--scenario throttled`: the fleet run with the AAP client limited to
//! `--aap-rate` (8) requests per scenario second; it prints the per-second request rate the fake
//! saw, the seconds above the limit, and the run's duration against requests ÷ the rate. Both
//! exit non-zero when a target is missed.
//!
//! Exits non-zero when a correctness check fails (duplicate launches, lost job ids, early
//! finalizer releases, launches while the status could not be written, resources not converged,
//! launches that differ from the jobs needed). The performance targets (wall ≤ 1.5 ×
//! max(request bound, scaled timeline), peak RSS ≤ 300 MiB) are reported, not enforced.
#![allow(clippy::unwrap_used)]

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use provkit_examples::fleet::{FleetConfig, run_fleet};
use provkit_examples::outage::{OutageConfig, run_outage};
use provkit_examples::throttle::{AAP_REFERENCE_RATE, run_throttled, throttled};
use provkit_examples::{BackendError, TimeScale};

/// mimalloc unless built with `--no-default-features`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Which run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Scenario {
    /// Create, provision, change, provision, delete (optionally under chaos).
    Fleet,
    /// Jobs running, then AAP refuses connections, then 503 + Retry-After, then recovers.
    Outage,
    /// The fleet run with the AAP client rate-limited (`--aap-rate`).
    Throttled,
}

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "provkit fleet run through kube-runtime + provkit-kube against the fakes")]
struct Args {
    /// The run: fleet (default), outage or throttled.
    #[arg(long, value_enum, default_value_t = Scenario::Fleet)]
    scenario: Scenario,
    /// Number of resources.
    #[arg(long, default_value_t = 1000)]
    resources: usize,
    /// Real seconds per production second, in (0, 1] (0.1 = ten times faster), as the demo's.
    #[arg(long, default_value_t = 0.1)]
    scale: f64,
    /// kube-runtime reconcile concurrency per controller.
    #[arg(long, default_value_t = 64)]
    concurrency: u16,
    /// AAP faults and purges, API-server faults (conflicts, 5xx, dropped watches, one 410).
    #[arg(long)]
    chaos: bool,
    /// Crash replicas from the fakes' side on the launch path (and kill leaders).
    #[arg(long)]
    crashes: bool,
    /// Fraction of resources whose status writes are refused (403) for 5 poll intervals.
    #[arg(long, default_value_t = 0.0)]
    refused: f64,
    /// Replicas (2: leader election over the fake's Lease).
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Chaos + crashes + 2 % refused writes + two replicas.
    #[arg(long)]
    everything: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Scenario seconds over which the resources are created (fleet scenario; throttled: 60).
    #[arg(long, default_value_t = 600)]
    arrival_secs: u64,
    /// Longest scenario wait between convergence and the next user action (fleet; throttled: 60).
    #[arg(long, default_value_t = 300)]
    think_secs: u64,
    /// Wall seconds of each plain-loop probe (0: none; fleet scenario only).
    #[arg(long, default_value_t = 2.0)]
    probe_secs: f64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Outage: scenario seconds AAP refuses connections.
    #[arg(long, default_value_t = 600)]
    refused_secs: u64,
    /// Outage: then scenario seconds of 503 with Retry-After.
    #[arg(long, default_value_t = 120)]
    unavailable_secs: u64,
    /// Outage: the Retry-After of those 503s (scenario seconds; sent in whole wall seconds).
    #[arg(long, default_value_t = 30)]
    retry_after_secs: u64,
    /// Outage: failures in a row that open the AAP client's circuit breaker (0: no breaker).
    #[arg(long, default_value_t = 5)]
    breaker_threshold: u32,
    /// Throttled: AAP requests per scenario second.
    #[arg(long, default_value_t = AAP_REFERENCE_RATE)]
    aap_rate: f64,
    /// Push wake-ups: the leader subscribes to the fake AAP's job status websocket; a final
    /// status wakes its object at once, polling is the safety net.
    #[arg(long)]
    push: bool,
    /// With --push: the safety-net poll interval of in-flight jobs while the stream is healthy
    /// (scenario seconds).
    #[arg(long, default_value_t = 600)]
    push_safety_net_secs: u64,
    /// With --push: drop the websocket connections about every this many scenario seconds
    /// (default: 30 with --chaos or --everything, else never; 0: never).
    #[arg(long)]
    push_drop_secs: Option<u64>,
}

async fn outage(args: &Args) -> ExitCode {
    let mut config = OutageConfig::new(args.resources.max(1));
    config.scale = TimeScale::new(args.scale);
    config.concurrency = args.concurrency.max(1);
    config.replicas = args.replicas.clamp(1, 2);
    config.seed = args.seed;
    config.refused = Duration::from_secs(args.refused_secs);
    config.unavailable = Duration::from_secs(args.unavailable_secs);
    config.retry_after = Duration::from_secs(args.retry_after_secs);
    config.breaker.threshold = args.breaker_threshold;
    config.progress = !args.quiet;
    finish(
        "outage run",
        run_outage(config).await.map(|r| (r.render(), r.ok())),
    )
}

/// Prints a run's report and turns its verdict into the exit code (1: a target missed, 2: the
/// run did not start).
fn finish(what: &str, run: Result<(String, bool), BackendError>) -> ExitCode {
    match run {
        Ok((report, ok)) => {
            println!("{report}");
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("{what} failed to start: {e}");
            ExitCode::from(2)
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    if args.scenario == Scenario::Outage {
        return outage(&args).await;
    }
    let mut config = if args.scenario == Scenario::Throttled {
        throttled(args.resources.max(1))
    } else {
        FleetConfig::new(args.resources.max(1))
    };
    if args.everything {
        config = config.everything();
    }
    config.scale = TimeScale::new(args.scale);
    config.concurrency = args.concurrency.max(1);
    config.chaos |= args.chaos;
    config.crashes |= args.crashes;
    if args.refused > 0.0 {
        config.refused_fraction = args.refused.clamp(0.0, 1.0);
    }
    config.replicas = config.replicas.max(args.replicas).clamp(1, 2);
    config.seed = args.seed;
    if args.scenario == Scenario::Fleet {
        config.arrival = Duration::from_secs(args.arrival_secs);
        config.think = Duration::from_secs(args.think_secs);
        config.probe = Duration::from_secs_f64(args.probe_secs.max(0.0));
    }
    config.purges = (config.resources / 1000).max(3);
    if args.push {
        config.push = Some(Duration::from_secs(args.push_safety_net_secs));
        let drop_every = args
            .push_drop_secs
            .unwrap_or(if config.chaos { 30 } else { 0 });
        config.push_drop_every = (drop_every > 0).then(|| Duration::from_secs(drop_every));
    }
    config.progress = !args.quiet;
    if args.scenario == Scenario::Throttled {
        return finish(
            "throttled run",
            run_throttled(config, args.aap_rate)
                .await
                .map(|r| (r.render(), r.ok())),
        );
    }
    finish(
        "fleet",
        run_fleet(config).await.map(|r| (r.render(), r.ok())),
    )
}
