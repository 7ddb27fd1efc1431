//! The provkit example operator: a `VirtualNetwork` CRD provisioned through AAP.
//!
//! ```text
//! cargo run --example operator -- crd | kubectl apply -f -      # install the CRD
//! cargo run --example operator                                  # KUBECONFIG + AAP_* env
//! cargo run --example operator -- --fake-aap                    # in-process fake AAP
//! cargo run --example operator -- --fake-aap --fake-aap-state s.json   # … keeping its jobs
//! ```
//!
//! Environment for the real AAP: `AAP_HOSTNAME` (or the Go operator's `OSAC_AAP_URL`),
//! `AAP_TOKEN` (or `OSAC_AAP_TOKEN`, `AAP_TOKEN_FILE`, `AAP_USERNAME`/`AAP_PASSWORD`),
//! `AAP_VALIDATE_CERTS=false` to skip TLS verification. Templates are
//! `<prefix>-create-virtual-network` and `<prefix>-delete-virtual-network`
//! (`--template-prefix`, default `OSAC_AAP_TEMPLATE_PREFIX` or `osac`).
//!
//! `--aap-push` turns on push wake-ups: the leader subscribes to AAP's job status websocket and
//! a job's end wakes its object at once (polling stays the safety net; docs/aap.md, "Push").
//! `--aap-webhook-secret-file FILE` also accepts AWX webhook notifications at
//! `POST /aap-webhook` (header `X-Provkit-Webhook-Secret`) as a second wake-up source.
//!
//! High availability: run one replica, or several with leader election (the default): only the
//! holder of the `coordination.k8s.io` Lease reconciles (see the README).

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use prometheus_client::registry::Registry;
use provkit_aap::metrics::AapMetrics;
use provkit_aap::provider::TemplateNames;
use provkit_aap::{AapClient, AapProvider};
use provkit_core::{Clock, SystemClock};
use provkit_example_operator::cli::{Cli, Command};
use provkit_example_operator::controller::{self, Context};
use provkit_example_operator::crd::{VirtualNetwork, crd_yaml};
use provkit_example_operator::fake_aap;
use provkit_example_operator::{logging, metrics_server, webhook};
use provkit_kube::push::PushWakeups;
use provkit_kube::{LeaderElector, LeadershipEnd, default_identity, shutdown_signal};
use provkit_lifecycle::push::PollCadence;
use provkit_lifecycle::{LifecyclePolicy, ProvisioningProvider};
use provkit_testing::fake_aap::FakeAapServer;

/// The last save of `--fake-aap-state` when the operator stops.
fn save_fake_aap(fake: Option<&FakeAapServer>, state: Option<&std::path::Path>) {
    if let (Some(server), Some(path)) = (fake, state)
        && let Err(e) = fake_aap::save(server.aap(), path)
    {
        tracing::warn!(error = %provkit_kube::ErrorChain(&e), "saving the fake AAP state failed");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if let Some(Command::Crd) = cli.command {
        print!("{}", crd_yaml()?);
        return Ok(());
    }
    tracing::subscriber::set_global_default(logging::subscriber(
        std::io::stdout,
        logging::stdout_wants_ansi(),
    ))?;
    let election = cli.leader_election()?;

    // Fail fast without a cluster, before starting anything. Every request names the
    // controller in its User-Agent, so writes without a field manager (kube-runtime's
    // finalizer patches and Events) are attributed to it in managedFields.
    let mut config = kube::Config::infer().await?;
    provkit_kube::user_agent(&mut config, &cli.field_manager, env!("CARGO_PKG_VERSION"))?;
    let client = Client::try_from(config)?;
    let prefix = cli
        .template_prefix
        .clone()
        .or_else(|| std::env::var("OSAC_AAP_TEMPLATE_PREFIX").ok())
        .unwrap_or_else(|| "osac".into());
    // One registry for provkit's metrics and the AAP client's (requests, retries, rate limits,
    // circuit breaker), served on /metrics.
    let mut registry = Registry::default();
    let aap_metrics = AapMetrics::register(&mut registry);
    // Keep the fake server alive for the whole run.
    let mut fake = None;
    let aap = if cli.fake_aap {
        let state = cli.fake_aap_state.as_deref();
        let server = fake_aap::start(&prefix, cli.envelope, state).await?;
        let client = AapClient::builder(server.base_url())
            .token(server.token())
            .metrics(aap_metrics)
            .build()?;
        if let Some(path) = state {
            tokio::spawn(fake_aap::save_periodically(
                server.aap().clone(),
                path.to_owned(),
            ));
        }
        fake = Some(server);
        client
    } else {
        AapClient::builder_from_env()?
            .metrics(aap_metrics)
            .build()?
    };
    let push_client = cli.aap_push.then(|| aap.clone());
    // OSAC's template names and, by default, its current envelope (`--envelope`).
    let provider: Arc<dyn ProvisioningProvider> = Arc::new(
        AapProvider::builder(aap)
            .templates(TemplateNames::with_prefix(prefix).osac_kind_suffixes())
            .envelope(cli.envelope)
            .build(),
    );

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let identity = cli.identity.clone().unwrap_or_else(default_identity);
    let policy = LifecyclePolicy::default()
        .with_poll_interval(Duration::from_secs(cli.poll_interval.max(1)));
    let Context {
        mut provisioner,
        callbacks,
    } = Context::with_metrics(
        client.clone(),
        provider,
        policy,
        clock.clone(),
        &identity,
        &cli.field_manager,
        &mut registry,
    );
    let webhook_secret = match &cli.aap_webhook_secret_file {
        Some(path) => Some(std::fs::read_to_string(path)?.trim().to_owned()),
        None => None,
    };
    // Push wake-ups (opt-in): one subscription, opened by the leader only; the webhook
    // receiver feeds the same wake-ups.
    let push = (cli.aap_push || webhook_secret.is_some()).then(|| {
        let cadence = PollCadence::new(Duration::from_secs(cli.poll_interval.max(1)))
            .with_while_healthy(Duration::from_secs(cli.aap_push_safety_net));
        PushWakeups::new(cadence)
    });
    if let Some(w) = &push {
        provisioner = provisioner.with_push(w.clone());
    }
    let ctx = Arc::new(Context {
        provisioner,
        callbacks,
    });
    if cli.metrics_bind_address != "off" {
        let listener = tokio::net::TcpListener::bind(&cli.metrics_bind_address).await?;
        tracing::info!(address = %listener.local_addr()?, "serving /metrics and /healthz");
        let mut routes = metrics_server::router(Arc::new(registry));
        if let (Some(secret), Some(w)) = (webhook_secret, &push) {
            tracing::info!(path = webhook::PATH, "accepting AWX webhook notifications");
            routes = routes.merge(webhook::router(secret, w.clone()));
        }
        tokio::spawn(async move {
            if let Err(error) =
                metrics_server::serve_router(listener, routes, std::future::pending()).await
            {
                tracing::error!(%error, "the metrics server stopped");
            }
        });
    }
    let api: Api<VirtualNetwork> = match &cli.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };

    if cli.no_leader_election {
        tracing::warn!("leader election disabled: run exactly one replica");
        match push {
            Some(w) => controller::run_with_push(api, ctx, shutdown_signal(), push_client, w).await,
            None => controller::run(api, ctx, shutdown_signal()).await,
        }
        save_fake_aap(fake.as_ref(), cli.fake_aap_state.as_deref());
        return Ok(());
    }

    let leases: Api<Lease> = match &cli.lease_namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::default_namespaced(client.clone()),
    };
    let elector =
        LeaderElector::with_config(leases, cli.lease_name.clone(), identity, election, clock)
            .with_field_manager(cli.field_manager.clone());
    tracing::info!(identity = elector.identity(), lease = %cli.lease_name, "waiting for leadership");
    let end = elector
        .run(shutdown_signal(), |token| async move {
            match push {
                Some(w) => {
                    controller::run_with_push(api, ctx, token.cancelled_owned(), push_client, w)
                        .await;
                }
                None => controller::run(api, ctx, token.cancelled_owned()).await,
            }
        })
        .await;
    tracing::info!(?end, "stopped");
    save_fake_aap(fake.as_ref(), cli.fake_aap_state.as_deref());
    if let LeadershipEnd::Lost(_) = end {
        // Exit non-zero so the pod restarts as a standby candidate.
        std::process::exit(1);
    }
    Ok(())
}
