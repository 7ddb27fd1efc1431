//! The provkit demo: a provisioning story on the product path.
//!
//! ```text
//! cargo run --example demo                 # the story at 1:100 (a 30 s poll interval takes 300 ms)
//! cargo run --example demo -- --scale 0.02 # slower
//! ```
//!
//! kube-runtime `Controller`s run provkit-kube `Provisioner`s over a `kube::Client` on
//! provkit-testing's fake API server, with the real `AapProvider` / `AapClient` against the fake
//! AAP server over loopback HTTP, in real time with every duration scaled by one factor. The
//! story: provision, failure + backoff, spec change, A-B-A, delete while running, a stale
//! reconcile, and a controller crash right after a launch with its recovery. Every step is
//! checked against AAP's records and the API server's state; a failed expectation exits non-zero.
//! Then one completion arrives by push (AAP's job status websocket wakes the object at once) and
//! its latency is shown.

use std::process::ExitCode;

use clap::Parser;
use provkit_examples::stack::TimeScale;
use provkit_examples::story::{self, DEFAULT_SCALE, SHOWN};

/// Command line.
#[derive(Debug, Parser)]
#[command(
    about = "provkit demo: the provisioning lifecycle through provkit-kube and kube-runtime against in-process fakes"
)]
struct Args {
    /// Real time per production time (0.01: a 30 s poll interval takes 300 ms).
    #[arg(long, default_value_t = DEFAULT_SCALE)]
    scale: f64,
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
    let scale = TimeScale::new(args.scale);
    println!("provkit demo — the product path against in-process fakes");
    println!(
        "  controllers: kube-runtime Controller + provkit-kube Provisioner, one per kind, over a kube::Client on provkit-testing's FakeApiServer"
    );
    println!(
        "  provider:    provkit-aap AapProvider / AapClient → fake AAP over 127.0.0.1 (templates pk-create-<kind> / pk-delete-<kind>)"
    );
    println!(
        "  extra_vars:  OSAC's osac_job_vars envelope (osac-project/osac 232f1752e); the VirtualNetwork playbook reads osac_job_vars.resource.spec"
    );
    println!(
        "  time:        real time, scale {scale}; times below are production time (poll 30 s, backoff 2 → 30 min)"
    );
    println!(
        "               job timestamps in the status are whole seconds (as Go writes them): one real second is {} here,\n               so a backoff counted from a failed job's timestamp can look that much short\n",
        provkit_examples::metrics::fmt_duration(
            scale.production(std::time::Duration::from_secs(1))
        )
    );
    let report = match story::run(scale).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("demo failed to run: {}", provkit_kube::ErrorChain(&e));
            return ExitCode::from(2);
        }
    };
    println!("{}", report.timeline);
    println!("{}", report.jobs);
    let verbs: Vec<String> = report
        .api_requests
        .iter()
        .map(|(v, n)| format!("{v} {n}"))
        .collect();
    println!(
        "requests: AAP {} · API server {}",
        report.aap_requests,
        verbs.join(", ")
    );
    println!(
        "wall time {:.1} s for {} of production time (scale {})\n",
        report.wall.as_secs_f64(),
        provkit_examples::metrics::fmt_duration(report.production),
        report.scale
    );
    println!(
        "{SHOWN}'s final status, read back through kube::Api:\n{}\n",
        report.status_document
    );
    for c in &report.checks {
        if c.ok {
            println!("  ✓ {}", c.what);
        } else {
            println!("  ✗ {}\n      found: {}", c.what, c.found);
        }
    }
    // Issue 28: one completion arriving by push, with its latency.
    let pushed = match provkit_examples::push_demo::run(scale).await {
        Ok(episode) => {
            println!("\n{}", episode.render());
            let ok = episode.came_by_push();
            if ok {
                println!(
                    "  ✓ the completion came by push: one wake-up, one confirming GET, before any poll"
                );
            } else {
                println!("  ✗ the completion did not come by push: {episode:?}");
            }
            ok
        }
        Err(e) => {
            eprintln!(
                "push episode failed to run: {}",
                provkit_kube::ErrorChain(&e)
            );
            false
        }
    };
    let ok = report.all_met() && pushed;
    println!(
        "\n{}",
        if ok {
            "demo: every expectation met"
        } else {
            "demo: EXPECTATIONS FAILED"
        }
    );
    println!(
        "\nRead next:\n  docs/lifecycle.md                 the decisions above, exactly-once launches, the crash-point table\n  docs/status-conditions-phases.md  the status document: who writes which field\n  crates/provkit-kube/README.md     Provisioner inside kube-runtime's Controller\n  examples/operator/                a complete operator (CRD, callbacks, leader election)\n  docs/performance.md               the fleet run: thousands of resources, chaos, crashes"
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
