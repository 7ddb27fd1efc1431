//! The command line of the operator binary (`main.rs`), here so its help text is tested.

use std::time::Duration;

use clap::{Parser, Subcommand};
use provkit_aap::provider::Envelope;
use provkit_kube::{InvalidLeaderElectionConfig, LeaderElectionConfig};

use crate::controller::CONTROLLER_NAME;

/// `operator [OPTIONS] [COMMAND]`.
#[derive(Parser, Debug)]
#[command(
    name = "operator",
    about = "VirtualNetwork operator provisioned through AAP (provkit example)"
)]
pub struct Cli {
    /// Subcommand; none runs the operator.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Use an in-process fake AAP server instead of the AAP_* environment. Demo only: without
    /// --fake-aap-state the fake keeps its jobs in memory and does NOT persist them, so after
    /// a restart (or a leader change) the operator finds its earlier jobs unknown to AAP and
    /// marks them purged.
    #[arg(long)]
    pub fake_aap: bool,
    /// With --fake-aap: keep the fake's jobs in this JSON file (loaded at start, rewritten
    /// every second and on shutdown), so a restarted operator still finds them.
    #[arg(long, value_name = "FILE", requires = "fake_aap")]
    pub fake_aap_state: Option<std::path::PathBuf>,
    /// Template prefix: `<prefix>-create-virtual-network` / `<prefix>-delete-virtual-network`
    /// (default: $OSAC_AAP_TEMPLATE_PREFIX or `osac`).
    #[arg(long)]
    pub template_prefix: Option<String>,
    /// The extra_vars envelope the playbooks read: `osac_job_vars` (OSAC's playbooks since
    /// osac-project/osac 232f1752e: `osac_job_vars.resource`), `ansible_eda` (the older
    /// `ansible_eda.event.payload`) or `neutral` (`provkit_job_vars.resource`).
    #[arg(long, default_value = "osac_job_vars")]
    pub envelope: Envelope,
    /// Only watch this namespace (default: all namespaces).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Job status poll interval in seconds.
    #[arg(long, default_value_t = 30)]
    pub poll_interval: u64,
    /// Learn at once when a job ends from AAP's job status websocket (the leader subscribes);
    /// polling stays the safety net. Off by default (see docs/aap.md, "Push").
    #[arg(long)]
    pub aap_push: bool,
    /// With --aap-push: seconds between polls of a running job while the websocket is up.
    #[arg(long, default_value_t = 600)]
    pub aap_push_safety_net: u64,
    /// Accept AWX webhook notifications at `POST /aap-webhook` on the metrics address as a
    /// second wake-up source, authenticated by the secret in this file (sent by the
    /// notification template in the `X-Provkit-Webhook-Secret` header). Never trusted for a
    /// job's outcome: the job is read from AAP.
    #[arg(long, value_name = "FILE")]
    pub aap_webhook_secret_file: Option<std::path::PathBuf>,
    /// Field manager of every write (status, finalizer, Events, Lease) and the User-Agent
    /// name the API server records in managedFields.
    #[arg(long, default_value = CONTROLLER_NAME)]
    pub field_manager: String,
    /// Run without leader election (only safe with exactly one replica).
    #[arg(long)]
    pub no_leader_election: bool,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = CONTROLLER_NAME)]
    pub lease_name: String,
    /// Namespace of the Lease (default: the client's default namespace).
    #[arg(long)]
    pub lease_namespace: Option<String>,
    /// Leader-election identity; must differ between replicas (default:
    /// `<$POD_NAME or $HOSTNAME or host name>_<random UUID>`).
    #[arg(long)]
    pub identity: Option<String>,
    /// Seconds a standby waits after the leader's last renewal before taking over.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// Seconds the leader keeps retrying a failed renewal before it stops reconciling
    /// (shorter than the lease duration).
    #[arg(long, default_value_t = 10)]
    pub renew_deadline: u64,
    /// Seconds between election attempts and between renewals.
    #[arg(long, default_value_t = 2)]
    pub retry_period: u64,
    /// Address of the HTTP server with `/metrics` (Prometheus) and `/healthz`; `off` disables
    /// it. It runs on every replica, leader or standby.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_bind_address: String,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the VirtualNetwork CRD as YAML.
    Crd,
}

impl Cli {
    /// The leader-election durations.
    ///
    /// # Errors
    /// [`InvalidLeaderElectionConfig`] unless retry period < renew deadline < lease duration.
    pub fn leader_election(&self) -> Result<LeaderElectionConfig, InvalidLeaderElectionConfig> {
        LeaderElectionConfig::new(
            Duration::from_secs(self.lease_duration),
            Duration::from_secs(self.renew_deadline),
            Duration::from_secs(self.retry_period),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn help_says_the_fake_aap_does_not_persist() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("does NOT persist"), "{help}");
        assert!(help.contains("--fake-aap-state <FILE>"), "{help}");
        let cli =
            Cli::try_parse_from(["operator", "--fake-aap", "--fake-aap-state", "s.json"]).unwrap();
        assert_eq!(
            cli.fake_aap_state.as_deref(),
            Some(std::path::Path::new("s.json"))
        );
        assert!(Cli::try_parse_from(["operator", "--fake-aap-state", "s.json"]).is_err());
    }

    #[test]
    fn defaults_are_client_go_durations_and_the_controller_name() {
        let cli = Cli::try_parse_from(["operator"]).unwrap();
        assert_eq!(
            cli.leader_election().unwrap(),
            LeaderElectionConfig::default()
        );
        assert_eq!(cli.field_manager, "provkit-example-operator");
        assert_eq!(cli.lease_name, "provkit-example-operator");
        let bad = Cli::try_parse_from(["operator", "--renew-deadline", "15"]).unwrap();
        assert!(bad.leader_election().is_err());
    }
}
