//! Fleet simulation: N resources provisioned, changed once and deleted through the real engine and
//! `AapProvider` against the fake AAP server over loopback HTTP, optionally under chaos.
//!
//! ```text
//! cargo run --release --example fleet -- --resources 10000 --concurrency 64 [--chaos] [--seed S]
//! ```
//!
//! Exits non-zero when any correctness check fails (duplicate launches, lost job ids, early finalizer
//! releases, resources not converged, launches that differ from the jobs needed). The performance
//! targets (wall ÷ request bound ≤ 1.3 without chaos, peak RSS ≤ 200 MiB) are reported, not enforced.
#![allow(clippy::unwrap_used)]

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use provkit_examples::fleet::{FleetConfig, run_fleet};

/// mimalloc unless built with `--no-default-features` (docs/performance.md has the figures for
/// both allocators).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "provkit fleet simulation against an in-process fake AAP server")]
struct Args {
    /// Number of resources.
    #[arg(long, default_value_t = 1000)]
    resources: usize,
    /// Concurrent reconciles.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Inject faults (5xx, 429, resets, timeouts, malformed JSON, lost launch responses) and purge jobs.
    #[arg(long)]
    chaos: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Fraction of reconciles after a status write that read a stale copy.
    #[arg(long, default_value_t = 0.2)]
    stale_fraction: f64,
    /// Seconds (virtual) over which the resources are created.
    #[arg(long, default_value_t = 600)]
    arrival_secs: u64,
    /// Jobs to purge from AAP mid-run (chaos only; default max(3, resources / 1000)).
    #[arg(long)]
    purges: Option<usize>,
    /// Seconds (wall) of the plain-loop throughput probe.
    #[arg(long, default_value_t = 2.0)]
    probe_secs: f64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
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
    let mut config = FleetConfig::new(args.resources.max(1));
    config.concurrency = args.concurrency.max(1);
    config.chaos = args.chaos;
    config.seed = args.seed;
    config.stale_fraction = args.stale_fraction.clamp(0.0, 1.0);
    config.arrival = Duration::from_secs(args.arrival_secs);
    if let Some(p) = args.purges {
        config.purges = p;
    }
    config.probe = Duration::from_secs_f64(args.probe_secs.max(0.1));
    config.progress = !args.quiet;
    match run_fleet(config).await {
        Ok(report) => {
            println!("{}", report.render());
            if report.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("fleet failed to start: {e}");
            ExitCode::from(2)
        }
    }
}
