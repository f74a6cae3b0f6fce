//! The manager's command-line flags, flattened into a project's own command
//! line: the same flags, environment variables and defaults as
//! controller-runtime's scaffolded `main.go`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgAction;

/// How the manager runs: endpoints, controllers, leader election, logging,
/// shutdown and the webhook server. Flatten it into the project's `clap`
/// command line:
///
/// ```
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     manager: opctl_runtime::Options,
/// }
///
/// let cli = Cli::parse_from(["manager", "--leader-elect", "--metrics-secure=false"]);
/// assert!(cli.manager.leader_elect);
/// assert!(!cli.manager.metrics_secure);
/// ```
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Address of the Prometheus metrics endpoint (/metrics): HOST:PORT, or
    /// :PORT for every interface.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = ":8443")]
    #[arg(value_parser = listen_address)]
    pub metrics_bind_address: SocketAddr,

    /// Serve /metrics over HTTPS to callers that authenticate with a bearer
    /// token (TokenReview) and may `get` the path /metrics
    /// (SubjectAccessReview); false: plain HTTP to anyone, for local runs.
    #[arg(long, env = "METRICS_SECURE", action = ArgAction::Set)]
    #[arg(num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub metrics_secure: bool,

    /// Directory holding tls.crt and tls.key for the metrics endpoint,
    /// reloaded when they change; without it the manager makes a
    /// self-signed certificate at start-up.
    #[arg(long, env = "METRICS_CERT_DIR")]
    pub metrics_cert_dir: Option<PathBuf>,

    /// Address of the health probes (/healthz, /readyz): HOST:PORT, or
    /// :PORT for every interface.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
    #[arg(value_parser = listen_address)]
    pub health_probe_bind_address: SocketAddr,

    /// Reconciles one controller runs at once (per watched namespace); a
    /// controller never reconciles one object twice at the same time.
    #[arg(long, env = "MAX_CONCURRENT_RECONCILES", default_value_t = DEFAULT_MAX_CONCURRENT_RECONCILES)]
    #[arg(value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_reconciles: u16,

    /// Issue the writes of a reconcile's `Batch` together (the default) or,
    /// with false, one after another: slower under a backlog, but in a
    /// fixed order (for debugging, or to compare).
    #[arg(long, env = "BATCH_WRITES", action = ArgAction::Set)]
    #[arg(num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub batch_writes: bool,

    /// Seconds between two reconciles of every object when nothing changes
    /// (from the caches: no API request unless something differs).
    #[arg(long, env = "SYNC_PERIOD_SECONDS", default_value_t = 10 * 60 * 60)]
    #[arg(value_parser = clap::value_parser!(u64).range(1..))]
    pub sync_period_seconds: u64,

    /// Reconcile only while holding a Lease, so that one replica of several
    /// is active; every replica is ready, keeps its caches and serves.
    #[arg(long, env = "LEADER_ELECT")]
    pub leader_elect: bool,

    /// Name of the leader-election Lease [default: the project name, then
    /// "-leader"].
    #[arg(long, env = "LEADER_ELECTION_ID")]
    pub leader_election_id: Option<String>,

    /// Namespace of the leader-election Lease (in a cluster: the manager's own).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub leader_election_namespace: String,

    /// Seconds a leader's Lease stays valid without renewal: how long a
    /// replica waits before taking over from one that stopped without
    /// releasing it.
    #[arg(
        long,
        env = "LEADER_ELECTION_LEASE_DURATION_SECONDS",
        default_value_t = 15
    )]
    #[arg(value_parser = clap::value_parser!(u64).range(2..))]
    pub leader_election_lease_duration_seconds: u64,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Seconds to wait for in-flight reconciles after SIGTERM or SIGINT.
    #[arg(long, env = "SHUTDOWN_TIMEOUT_SECONDS", default_value_t = 5)]
    pub shutdown_timeout_seconds: u64,

    /// The admission webhook server (started only when the project
    /// registers webhooks or conversions).
    #[command(flatten)]
    pub webhook: crate::webhook::Options,
}

/// The default of `--max-concurrent-reconciles` (see docs/controllers.md
/// for the measurements behind it).
pub(crate) const DEFAULT_MAX_CONCURRENT_RECONCILES: u16 = 8;

impl Options {
    /// The grace period granted to controllers on shutdown.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_secs(self.shutdown_timeout_seconds)
    }

    /// How often every object is reconciled when nothing changes.
    pub fn sync_period(&self) -> Duration {
        Duration::from_secs(self.sync_period_seconds)
    }
}

/// An address to listen on: `HOST:PORT`, or `:PORT` for every IPv4
/// interface (as controller-runtime's flags take it).
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_owned(),
    };
    full.parse()
        .map_err(|_| format!("{text:?} is not HOST:PORT or :PORT"))
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
        assert_eq!(cli.options.metrics_bind_address.port(), 8443);
        assert!(cli.options.metrics_secure);
        assert_eq!(cli.options.metrics_cert_dir, None);
        assert_eq!(cli.options.health_probe_bind_address.port(), 8081);
        assert_eq!(
            cli.options.max_concurrent_reconciles,
            DEFAULT_MAX_CONCURRENT_RECONCILES
        );
        assert_eq!(cli.options.sync_period(), Duration::from_secs(36_000));
        assert!(!cli.options.leader_elect);
        assert_eq!(cli.options.leader_election_id, None);
        assert_eq!(cli.options.leader_election_lease_duration_seconds, 15);
        assert_eq!(cli.options.log_format, LogFormat::Text);
        assert_eq!(cli.options.shutdown_timeout(), Duration::from_secs(5));
        assert!(cli.options.webhook.enable_webhooks);
    }

    #[test]
    fn flags_override_defaults() {
        let cli = Cli::try_parse_from([
            "manager",
            "--leader-elect",
            "--leader-election-id=mine",
            "--log-format=json",
            "--metrics-bind-address=127.0.0.1:9090",
            "--metrics-secure=false",
            "--max-concurrent-reconciles=16",
        ])
        .expect("flags parse");
        assert!(cli.options.leader_elect);
        assert_eq!(cli.options.leader_election_id.as_deref(), Some("mine"));
        assert_eq!(cli.options.log_format, LogFormat::Json);
        assert_eq!(cli.options.metrics_bind_address.port(), 9090);
        assert!(!cli.options.metrics_secure);
        assert_eq!(cli.options.max_concurrent_reconciles, 16);
        assert!(cli.options.batch_writes);
        let cli = Cli::try_parse_from(["manager", "--batch-writes=false"]).expect("parses");
        assert!(!cli.options.batch_writes);
    }

    /// The arguments config/manager/manager.yaml gives the manager in every
    /// scaffolded project.
    #[test]
    fn the_arguments_of_the_scaffolded_deployment_parse() {
        let cli = Cli::try_parse_from([
            "manager",
            "--leader-elect",
            "--health-probe-bind-address=:8081",
            "--metrics-bind-address=:8443",
            "--log-format=json",
        ])
        .expect("the Deployment's arguments parse");
        assert!(cli.options.leader_elect);
        assert_eq!(
            cli.options.metrics_bind_address,
            "0.0.0.0:8443".parse().expect("an address")
        );
        assert_eq!(cli.options.health_probe_bind_address.port(), 8081);
        assert_eq!(cli.options.log_format, LogFormat::Json);
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            "--metrics-bind-address=nowhere",
            "--health-probe-bind-address=:http",
            "--max-concurrent-reconciles=0",
            "--sync-period-seconds=0",
            "--leader-election-lease-duration-seconds=1",
        ] {
            assert!(Cli::try_parse_from(["manager", bad]).is_err(), "{bad}");
        }
    }
}
