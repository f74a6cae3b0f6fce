//! The manager's command-line flags (flattened into the `Cli` of src/main.rs).

use std::net::SocketAddr;
use std::time::Duration;

/// How the manager runs: endpoints, leader election, logging, shutdown.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Address of the Prometheus metrics endpoint (/metrics).
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = "0.0.0.0:8080")]
    pub metrics_bind_address: SocketAddr,

    /// Address of the health probes (/healthz, /readyz).
    #[arg(
        long,
        env = "HEALTH_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:8081"
    )]
    pub health_probe_bind_address: SocketAddr,

    /// Run the controllers only while holding a Lease, so that one replica of several is active.
    #[arg(long, env = "LEADER_ELECT")]
    pub leader_elect: bool,

    /// Name of the leader-election Lease.
    #[arg(long, env = "LEADER_ELECTION_ID")]
    #[arg(default_value = "sidecarset-leader")]
    pub leader_election_id: String,

    /// Namespace of the leader-election Lease (in a cluster: the manager's own).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub leader_election_namespace: String,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Seconds to wait for in-flight reconciles after SIGTERM or SIGINT.
    #[arg(long, env = "SHUTDOWN_TIMEOUT_SECONDS", default_value_t = 5)]
    pub shutdown_timeout_seconds: u64,

    /// The admission webhook server.
    #[command(flatten)]
    pub webhook: super::webhook::Options,
}

impl Options {
    /// The grace period granted to controllers on shutdown.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_secs(self.shutdown_timeout_seconds)
    }
}

/// How log lines are written (to stderr; the level comes from RUST_LOG, default `info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        options: Options,
    }

    #[test]
    fn defaults_match_the_manager_deployment() {
        let cli = Cli::try_parse_from(["manager"]).expect("defaults parse");
        assert_eq!(cli.options.metrics_bind_address.port(), 8080);
        assert_eq!(cli.options.health_probe_bind_address.port(), 8081);
        assert!(!cli.options.leader_elect);
        assert_eq!(cli.options.log_format, LogFormat::Text);
        assert_eq!(cli.options.shutdown_timeout(), Duration::from_secs(5));
    }

    #[test]
    fn flags_override_defaults() {
        let cli = Cli::try_parse_from([
            "manager",
            "--leader-elect",
            "--log-format=json",
            "--metrics-bind-address=127.0.0.1:9090",
        ])
        .expect("flags parse");
        assert!(cli.options.leader_elect);
        assert_eq!(cli.options.log_format, LogFormat::Json);
        assert_eq!(cli.options.metrics_bind_address.port(), 9090);
    }

    #[test]
    fn a_bad_address_is_rejected() {
        assert!(Cli::try_parse_from(["manager", "--metrics-bind-address=nowhere"]).is_err());
    }
}
