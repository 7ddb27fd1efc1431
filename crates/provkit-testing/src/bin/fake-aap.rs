//! `fake-aap`: a standalone fake AAP/AWX controller API server for laptops and CI.
//!
//! ```text
//! fake-aap --listen 127.0.0.1:18013 --mode awx|gateway|both|aap27 [--fixtures FILE] [--token T] [--https]
//! ```
//! Prints the base URL and the bearer token, serves until Ctrl-C.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use provkit_testing::fake_aap::{
    FakeAap, Fixtures, JobTemplateSpec, Mode, Scope, TokenSpec, WorkflowJobTemplateSpec,
};

/// A faithful fake AAP / AWX controller API server (loopback only).
#[derive(Debug, Parser)]
#[command(name = "fake-aap", version)]
struct Args {
    /// Address to listen on (must be a loopback address).
    #[arg(long, default_value = "127.0.0.1:18013")]
    listen: SocketAddr,
    /// API layout: awx (/api/v2/), gateway (/api/controller/v2/, /api/v2/ is 404), both, or
    /// aap27 (gateway layout; the controller refuses basic auth and controller-issued tokens).
    #[arg(long, default_value = "awx")]
    mode: Mode,
    /// Fixture file (JSON or YAML): organizations, users, tokens, templates, scripts, settings.
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// Bearer token for the `admin` user (write scope), added to the fixtures.
    #[arg(long)]
    token: Option<String>,
    /// Serve HTTPS with a generated certificate; the CA PEM is written next to the output.
    #[arg(long)]
    https: bool,
    /// Where to write the CA PEM in HTTPS mode.
    #[arg(long, default_value = "fake-aap-ca.pem")]
    ca_out: PathBuf,
}

fn load_fixtures(path: &PathBuf) -> Result<Fixtures, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let parsed = if is_json {
        Fixtures::from_json(&text)
    } else {
        Fixtures::from_yaml(&text)
    };
    parsed.map_err(|e| {
        let mut msg = format!("{}: {e}", path.display());
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(&format!(": {s}"));
            src = s.source();
        }
        msg
    })
}

/// Demo content used when no fixture file is given.
fn demo_fixtures() -> Fixtures {
    let mut fx = Fixtures::default();
    fx.organizations
        .push(provkit_testing::fake_aap::OrganizationSpec {
            name: "osac".into(),
            ..Default::default()
        });
    fx.job_templates.push(JobTemplateSpec {
        script: Some(
            provkit_testing::fake_aap::JobScript::successful(std::time::Duration::from_secs(5))
                .with_stdout(
                    "PLAY [create] ****\nTASK [network] ****\nok: [localhost]\nPLAY RECAP ****\n",
                ),
        ),
        ..JobTemplateSpec::new("osac-create-virtual-network", "osac")
    });
    fx.job_templates.push(JobTemplateSpec {
        script: Some(provkit_testing::fake_aap::JobScript::run_until_canceled()),
        ..JobTemplateSpec::new("osac-long-running", "osac")
    });
    fx.workflow_job_templates.push(WorkflowJobTemplateSpec::new(
        "osac-workflow",
        "osac",
        &["osac-create-virtual-network"],
    ));
    fx
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .try_init();
    let mut fixtures = match &args.fixtures {
        Some(p) => match load_fixtures(p) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("fake-aap: {e}");
                return ExitCode::from(2);
            }
        },
        None => demo_fixtures(),
    };
    fixtures.settings.mode = args.mode;
    if let Some(t) = &args.token {
        let admin = fixtures
            .users
            .iter()
            .find(|u| u.is_superuser)
            .map_or_else(|| "admin".to_owned(), |u| u.username.clone());
        fixtures.tokens.insert(
            0,
            TokenSpec {
                token: t.clone(),
                user: admin,
                scope: Scope::Write,
                expires: None,
                description: "--token".into(),
                controller_issued: false,
            },
        );
    }
    let server = match FakeAap::builder()
        .fixtures(fixtures)
        .listen(args.listen)
        .https(args.https)
        .start()
        .await
    {
        Ok(s) => s,
        Err(e) => {
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            eprintln!("fake-aap: {msg}");
            return ExitCode::from(1);
        }
    };
    println!(
        "fake-aap listening on {} (mode {:?})",
        server.base_url(),
        args.mode
    );
    println!("API base: {}", server.api_base());
    println!("token: {}", server.token());
    if let Some(pem) = server.ca_pem() {
        match std::fs::write(&args.ca_out, pem) {
            Ok(()) => println!("CA certificate: {}", args.ca_out.display()),
            Err(e) => eprintln!("fake-aap: cannot write {}: {e}", args.ca_out.display()),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    println!("fake-aap: shutting down");
    server.shutdown().await;
    ExitCode::SUCCESS
}
