//! The provkit example operator: a `VirtualNetwork` CRD provisioned through AAP.
//!
//! ```text
//! cargo run --example operator -- crd | kubectl apply -f -      # install the CRD
//! cargo run --example operator                                  # KUBECONFIG + AAP_* env
//! cargo run --example operator -- --fake-aap                    # in-process fake AAP
//! ```
//!
//! Environment for the real AAP: `AAP_HOSTNAME` (or the Go operator's `OSAC_AAP_URL`),
//! `AAP_TOKEN` (or `OSAC_AAP_TOKEN`, `AAP_TOKEN_FILE`, `AAP_USERNAME`/`AAP_PASSWORD`),
//! `AAP_VALIDATE_CERTS=false` to skip TLS verification. Templates are
//! `<prefix>-create-virtual-network` and `<prefix>-delete-virtual-network`
//! (`--template-prefix`, default `OSAC_AAP_TEMPLATE_PREFIX` or `osac`).
//!
//! High availability: run one replica, or several with leader election (the default): only the
//! holder of the `coordination.k8s.io` Lease reconciles, and a replica that loses it exits.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, SystemClock};
use provkit_example_operator::controller::{self, Context};
use provkit_example_operator::crd::{VirtualNetwork, crd_yaml};
use provkit_example_operator::leadership;
use provkit_kube::LeaderElector;
use provkit_lifecycle::{LifecyclePolicy, ProvisioningProvider};
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec};

#[derive(Parser, Debug)]
#[command(
    name = "operator",
    about = "VirtualNetwork operator provisioned through AAP (provkit example)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Use an in-process fake AAP server instead of the AAP_* environment.
    #[arg(long)]
    fake_aap: bool,
    /// Template prefix: `<prefix>-create-virtual-network` / `<prefix>-delete-virtual-network`
    /// (default: $OSAC_AAP_TEMPLATE_PREFIX or `osac`).
    #[arg(long)]
    template_prefix: Option<String>,
    /// Only watch this namespace (default: all namespaces).
    #[arg(long)]
    namespace: Option<String>,
    /// Job status poll interval in seconds.
    #[arg(long, default_value_t = 30)]
    poll_interval: u64,
    /// Run without leader election (only safe with exactly one replica).
    #[arg(long)]
    no_leader_election: bool,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "provkit-example-operator")]
    lease_name: String,
    /// Namespace of the Lease (default: the client's default namespace).
    #[arg(long)]
    lease_namespace: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the VirtualNetwork CRD as YAML.
    Crd,
}

async fn fake_aap(prefix: &str) -> Result<FakeAapServer, Box<dyn std::error::Error>> {
    let template = |action: &str| JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10))),
        ..JobTemplateSpec::new(format!("{prefix}-{action}-virtual-network"), "osac")
    };
    let server = FakeAap::builder()
        .organization("osac")
        .job_template(template("create"))
        .job_template(template("delete"))
        .start()
        .await?;
    tracing::info!(url = %server.api_base(), "started in-process fake AAP");
    Ok(server)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if let Some(Command::Crd) = cli.command {
        print!("{}", crd_yaml()?);
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,provkit_kube=debug".into()),
        )
        .init();

    // Fail fast without a cluster, before starting anything.
    let client = Client::try_default().await?;
    let prefix = cli
        .template_prefix
        .clone()
        .or_else(|| std::env::var("OSAC_AAP_TEMPLATE_PREFIX").ok())
        .unwrap_or_else(|| "osac".into());
    // Keep the fake server alive for the whole run.
    let mut _fake = None;
    let aap = if cli.fake_aap {
        let server = fake_aap(&prefix).await?;
        let client = AapClient::builder(server.base_url())
            .token(server.token())
            .build()?;
        _fake = Some(server);
        client
    } else {
        AapClient::from_env()?
    };
    let provider: Arc<dyn ProvisioningProvider> = Arc::new(AapProvider::with_prefix(aap, prefix));

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("operator-{}", std::process::id()));
    let policy = LifecyclePolicy::default()
        .with_poll_interval(Duration::from_secs(cli.poll_interval.max(1)));
    let ctx = Arc::new(Context::new(
        client.clone(),
        provider,
        policy,
        clock.clone(),
        &identity,
    ));
    let api: Api<VirtualNetwork> = match &cli.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };

    if cli.no_leader_election {
        tracing::warn!("leader election disabled: run exactly one replica");
        controller::run(api, ctx, std::future::pending()).await;
        return Ok(());
    }

    let leases: Api<Lease> = match &cli.lease_namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::default_namespaced(client.clone()),
    };
    let elector = LeaderElector::new(
        leases,
        cli.lease_name.clone(),
        identity,
        Duration::from_secs(15),
        clock,
    );
    leadership::acquire(&elector, Duration::from_secs(2)).await;
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel();
    let holder = tokio::spawn(async move {
        let why = leadership::hold(&elector, Duration::from_secs(5)).await;
        tracing::error!(?why, "lost leadership; stopping the controller");
        let _ = lost_tx.send(());
    });
    controller::run(api, ctx, async move {
        let _ = lost_rx.await;
    })
    .await;
    if holder.is_finished() {
        // Exit non-zero so the pod restarts as a standby candidate.
        std::process::exit(1);
    }
    holder.abort();
    Ok(())
}
