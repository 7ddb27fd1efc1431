//! The provkit demo: a provisioning story against an in-process fake AAP server.
//!
//! ```text
//! cargo run --example demo                      # the story, as a timeline
//! cargo run --example demo -- --resources 200   # the same story for 200 resources, with a progress bar
//! ```
//!
//! The real lifecycle engine drives the real `AapProvider` and `AapClient` over loopback HTTP against
//! the fake AAP server (templates that fail on the first try or run for ten minutes). Job durations,
//! polls and backoffs run on a virtual clock, so the whole story takes a second or two. The program
//! checks every expectation of the story and exits non-zero if one fails.
#![allow(clippy::unwrap_used)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use provkit_examples::report::{EndpointCounts, Table, call_table, endpoint_table};
use provkit_examples::story::{Story, name_of, run_story, templates};
use provkit_examples::{Advance, Backend, BackendConfig, PurgeLog, Sim, SimConfig, VirtualClock};

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "provkit demo: the provisioning lifecycle against an in-process fake AAP server")]
struct Args {
    /// Run the story for this many resources (roles cycle: network, volume, cluster, instance);
    /// more than 4 shows a progress bar instead of the timeline.
    #[arg(long, default_value_t = 4)]
    resources: usize,
    /// Concurrent reconciles.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
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
    match run(&args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("demo failed to run: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    let total = args.resources.max(1);
    let story_mode = total <= 4;
    let wall = tokio::time::Instant::now();
    let clock = VirtualClock::new();
    let backend = Backend::start(&BackendConfig::new(templates(total)), &clock, total).await?;
    println!(
        "provkit demo — fake AAP at {} (in-process, loopback)",
        backend.server.base_url()
    );
    println!(
        "engine: provkit-lifecycle (poll every 30 s, backoff 2 → 30 min) · provider: AapProvider, templates sim-create-<kind> / sim-delete-<kind>"
    );
    println!(
        "time runs on a virtual clock shared by the engine, the work queue and the fake AAP server\n"
    );

    let mut config = SimConfig::new(total);
    config.concurrency = args.concurrency.max(1);
    config.advance = if story_mode {
        Advance::WhenIdle
    } else {
        Advance::Pipelined
    };
    let sim = Sim::new(config, clock.clone(), &backend);
    let progress = (!story_mode).then(|| {
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40.cyan/blue} {pos}/{len} resources through their story  [{elapsed}]",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let story = Story::new(total, story_mode, progress.clone());
    let purged = PurgeLog::default();
    let (audit, end) = run_story(&sim, &story, &purged).await;
    if let Some(bar) = &progress {
        bar.finish();
    }
    let elapsed = wall.elapsed();

    if story_mode {
        println!("{}", story.timeline(&sim));
    }
    println!(
        "virtual time: {} in {:.2} s of wall time ({end:?})\n",
        provkit_examples::metrics::fmt_duration(clock.elapsed()),
        elapsed.as_secs_f64()
    );

    let mut jobs = Table::new(&[
        "resource",
        ">provision jobs",
        ">deprovision jobs",
        ">attempts (needed)",
    ]);
    let shown = if story_mode { total } else { 8.min(total) };
    for index in 0..shown {
        jobs.row(vec![
            name_of(index, total),
            audit.provision_launches[index].to_string(),
            audit.deprovision_launches[index].to_string(),
            audit.attempts[index].to_string(),
        ]);
    }
    if shown < total {
        jobs.row(vec![
            format!("… ({} more)", total - shown),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    let sum = |v: &[u32]| v.iter().map(|n| u64::from(*n)).sum::<u64>();
    jobs.row(vec![
        "total".into(),
        sum(&audit.provision_launches).to_string(),
        sum(&audit.deprovision_launches).to_string(),
        sum(&audit.attempts).to_string(),
    ]);
    println!("{}", jobs.render());
    let counts = EndpointCounts::read(backend.aap());
    println!("{}", endpoint_table(&counts, total));
    println!("{}", call_table(&backend.calls, total));

    let (passed, failed) = story.check(&sim, &audit);
    println!("duplicates: {}", audit.duplicates);
    println!("lost job ids: {}", audit.lost);
    println!(
        "early finalizer releases: {}",
        provkit_examples::RunMetrics::get(&sim.metrics.early_releases)
    );
    println!();
    for p in &passed {
        println!("  ✓ {p}");
    }
    for f in &failed {
        println!("  ✗ {f}");
    }
    let wall_ok = elapsed < Duration::from_secs(20);
    if !wall_ok {
        println!(
            "  ✗ the story took {:.1} s of wall time (budget 20 s)",
            elapsed.as_secs_f64()
        );
    }
    let ok = failed.is_empty() && wall_ok;
    println!(
        "\n{}",
        if ok {
            "demo: every expectation met"
        } else {
            "demo: EXPECTATIONS FAILED"
        }
    );
    let sim = Arc::clone(&sim);
    drop(sim);
    Ok(ok)
}
