//! `fake-apiserver`: the in-memory fake Kubernetes API server as a standalone process, for
//! `kubectl`, an operator binary or curl.
//!
//! ```text
//! cargo run -p provkit-testing --features fake-apiserver-bin --bin fake-apiserver -- \
//!     --listen 127.0.0.1:18080 --crd vnet.yaml --kubeconfig-out /tmp/fake.kubeconfig
//! kubectl --kubeconfig /tmp/fake.kubeconfig get virtualnetworks
//! ```
//! Prints the URL, writes the kubeconfig if asked, serves until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use provkit_testing::fake_apiserver::FakeApiServer;

/// A stateful in-memory fake Kubernetes API server (loopback only).
#[derive(Debug, Parser)]
#[command(name = "fake-apiserver", version)]
struct Args {
    /// Address to listen on (must be a loopback address).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// CRD documents (YAML or JSON, several per file allowed) to serve.
    #[arg(long = "crd", value_name = "FILE", num_args = 1..)]
    crds: Vec<PathBuf>,
    /// Where to write a kubeconfig pointing at the server.
    #[arg(long, value_name = "FILE")]
    kubeconfig_out: Option<PathBuf>,
    /// Namespaces to create at start (besides `default` and `kube-system`).
    #[arg(long = "namespace", value_name = "NAME")]
    namespaces: Vec<String>,
}

async fn run(args: Args) -> Result<(), String> {
    if !args.listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on non-loopback {}",
            args.listen
        ));
    }
    let mut builder = FakeApiServer::builder();
    for path in &args.crds {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        builder = builder
            .crd_document(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for ns in args.namespaces {
        builder = builder.namespace(ns);
    }
    let server = builder.build();
    let handle = server
        .serve_on(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    if let Some(path) = &args.kubeconfig_out {
        std::fs::write(path, handle.kubeconfig())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("kubeconfig: {}", path.display());
    }
    println!("fake-apiserver listening on {}", handle.url());
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| format!("waiting for Ctrl-C: {e}"))?;
    handle.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fake-apiserver: {e}");
            ExitCode::FAILURE
        }
    }
}
