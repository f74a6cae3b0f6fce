//! `opctl envtest run|start`: the embedded Kubernetes API server for tests.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::Context;
use opctl_envtest::WebhookRoute;
use opctl_envtest::{Config, Controllers, Envtest, FaultSpec, Serving};
use opctl_envtest::{NodeSpec, NodeTaint, Simulation};

const RUN_EXAMPLES: &str = "Examples:
  # Run the e2e tests of a generated operator against a fresh server
  opctl envtest run --crds config/crd/bases -- cargo test --test e2e

  # Try kubectl against it (HTTPS with a CA and a token made at start)
  opctl envtest run -- kubectl get namespaces

  # Plain HTTP without authentication, for a client that cannot do TLS
  opctl envtest run --insecure-http --port 8080 -- curl -s http://127.0.0.1:8080/version

  # Three simulated nodes, one tainted, and wait for a Deployment to roll out
  opctl envtest run --simulate all --nodes 3 --node-taint envtest-node-3=dedicated=gpu:NoSchedule -- \
    sh -c 'kubectl create deployment web --image=nginx --replicas=3 && kubectl rollout status deployment/web'

  # Nodes and kubelets only: Pods with spec.nodeName run, nothing schedules others
  opctl envtest run --simulate nodes,kubelet -- cargo test --test e2e

  # A bare API server, as controller-runtime's envtest starts (kube-apiserver + etcd)
  opctl envtest run --simulate none --controllers= -- go test ./...

  # kube-controller-manager's controllers without the Deployment controller
  opctl envtest run --controllers='*,-deployment-controller' -- cargo test --test e2e

  # Send the calls of webhooks behind Service system/webhook-service (port 443)
  # to a manager listening on 127.0.0.1:9443
  opctl envtest run --webhook-route system/webhook-service:443=127.0.0.1:9443 -- make test-e2e

  # The e2e tests under faults: about 10% of writes fail, watches are cut every 5 s
  opctl envtest run --faults default -- cargo test --test e2e

  # Fail 20% of Pod creates with 500 and every other Deployment update with 409,
  # repeatably (each injected fault is logged to stderr and counted in /metrics)
  opctl envtest run --faults 'create@pods:500=20%,update@deployments.apps:409=50%' --faults-seed 42 -- make test-e2e

Fault spec: comma-separated items, each a profile (default), seed=N,
  user=PATTERN (fault only that user's requests; PATTERN may end in *, e.g.
  user=system:serviceaccount:* spares envtest's administrator), or a rule
  VERBS[@RESOURCES]:FAULT=AMOUNT
  VERBS      * | reads | writes | get list watch create update patch apply delete deletecollection, joined by +
  RESOURCES  plural[.group][/subresource], joined by + (default: every resource)
  FAULT      500, 429 (with Retry-After), 409 (not on create), 504: AMOUNT is a percentage (10%)
             cut (watch only): AMOUNT is a lifetime (5s, 500ms) or a number of events (20events)
             compact (watch only): AMOUNT is how often the watch history is dropped (30s)";

const START_EXAMPLES: &str = "Examples:
  # Serve on a random port; the printed line says where the kubeconfig is
  # (in a private directory removed when the server stops)
  opctl envtest start --crds config/crd/bases

  # Serve on a fixed port with the kubeconfig at a known place
  opctl envtest start --port 8080 --kubeconfig /tmp/envtest.kubeconfig
  KUBECONFIG=/tmp/envtest.kubeconfig kubectl get ns

  # Reach a manager's webhook server on 127.0.0.1:9443 through its Service
  opctl envtest start --webhook-route system/webhook-service:443=127.0.0.1:9443

  # Count the requests clients made (kube-apiserver's apiserver_request_total)
  KUBECONFIG=/tmp/envtest.kubeconfig kubectl get --raw /metrics";

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Start the server, run COMMAND with KUBECONFIG pointing at it, stop, exit with its status.
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Serve until interrupted (SIGINT or SIGTERM).
    #[command(after_help = START_EXAMPLES)]
    Start(StartArgs),
}

/// What `run` and `start` share: how the server is set up.
#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    #[command(flatten)]
    pub simulation: SimulationArgs,
    /// kube-controller-manager's controllers to run, as its own --controllers
    /// takes them: '*' (all), NAME, -NAME, comma-separated (repeatable); empty
    /// for none (docs/envtest.md, "kube-controller-manager's controllers").
    #[arg(long, value_name = "NAMES", default_value = "*", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    pub controllers: Vec<String>,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Directory (or file) of CRD YAML to install before serving.
    #[arg(long, value_name = "DIR")]
    pub crds: Option<PathBuf>,
    /// Send admission webhook calls for a Service port to HOST:PORT (repeatable).
    #[arg(long = "webhook-route", value_name = "NS/NAME:PORT=HOST:PORT")]
    pub webhook_routes: Vec<WebhookRoute>,
    /// Inject faults: a profile (default) and/or rules VERBS[@RESOURCES]:FAULT=AMOUNT
    /// such as writes:500=10%,watch:cut=5s (docs/envtest.md, "Fault injection");
    /// `run` gives its command OPCTL_ENVTEST_FAULTS=SPEC.
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<String>,
    /// Seed of the fault draws; the same seed fails the same requests again.
    #[arg(long = "faults-seed", value_name = "N")]
    pub faults_seed: Option<String>,
    /// Serve plain HTTP without authentication instead of HTTPS (a CA and
    /// an administrator's token made at start, both in the kubeconfig).
    #[arg(long = "insecure-http")]
    pub insecure_http: bool,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Where to write the kubeconfig (default: a private directory, made
    /// fresh and removed at exit).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

/// The workload simulation (see docs/envtest-workloads.md).
#[derive(Debug, Clone, clap::Args)]
pub struct SimulationArgs {
    /// Parts of the simulation to run: all (the default), none, or a
    /// comma-separated list of nodes, scheduler, kubelet, provisioner
    /// (kube-controller-manager's controllers: --controllers).
    #[arg(long, value_name = "PARTS", default_value = "all")]
    pub simulate: String,
    /// How many simulated Nodes to register (envtest-node-1, envtest-node-2, ...).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub nodes: usize,
    /// Taint a simulated Node (repeatable), e.g. envtest-node-2=dedicated=gpu:NoSchedule.
    #[arg(long = "node-taint", value_name = "NODE=KEY[=VALUE]:EFFECT")]
    pub node_taints: Vec<NodeTaint>,
    /// Register a simulated Node whose kubelet reports NotReady (repeatable).
    /// At run time, annotate a Node envtest.opctl.dev/kubelet=not-ready,
    /// =stopped (unreachable: its Pods are evicted) or =running.
    #[arg(long = "node-not-ready", value_name = "NODE")]
    pub not_ready: Vec<String>,
}

impl SimulationArgs {
    fn simulation(&self) -> anyhow::Result<Simulation> {
        let mut sim = Simulation {
            nodes: NodeSpec::numbered(self.nodes),
            ..Simulation::default()
        };
        sim.select_parts(&self.simulate)
            .map_err(anyhow::Error::msg)?;
        sim.adjust_nodes(&self.node_taints, &self.not_ready)
            .map_err(|e| anyhow::anyhow!("--node-taint/--node-not-ready: {e}"))?;
        if sim.scheduler && sim.nodes.is_empty() {
            eprintln!("{}", NO_NODES_WARNING);
        }
        Ok(sim)
    }
}

/// Said at start when the scheduler runs without simulated Nodes: Pods
/// then stay Pending, as on a cluster without Nodes, where kube-scheduler
/// marks them as this one does.
const NO_NODES_WARNING: &str = "warning: the scheduler is simulated without Nodes (--simulate without `nodes`, or --nodes 0): Pods stay Pending, with PodScheduled=False and a FailedScheduling event \"no nodes available to schedule pods\", as kube-scheduler leaves them; add `nodes` to --simulate, or register Nodes yourself";

fn config(args: ServerArgs) -> anyhow::Result<Config> {
    if let Some(dir) = &args.crds
        && !dir.exists()
    {
        anyhow::bail!("--crds {}: no such file or directory", dir.display());
    }
    let mut faults = match &args.faults {
        Some(spec) => spec
            .parse::<FaultSpec>()
            .map_err(|e| anyhow::anyhow!("invalid --faults {e}; see `opctl envtest run --help`"))?,
        None => FaultSpec::default(),
    };
    if let Some(seed) = &args.faults_seed {
        if args.faults.is_none() {
            anyhow::bail!("--faults-seed {seed} without --faults: add --faults default (or rules)");
        }
        faults.seed = Some(seed.parse().map_err(|_| {
            anyhow::anyhow!("invalid --faults-seed {seed:?}: expected a whole number, e.g. 42")
        })?);
    }
    let controllers = args
        .controllers
        .join(",")
        .parse::<Controllers>()
        .map_err(|e| anyhow::anyhow!("invalid --controllers: {e}"))?;
    Ok(Config {
        port: args.port,
        controllers,
        crd_paths: args.crds.into_iter().collect(),
        webhook_routes: args.webhook_routes,
        faults,
        simulation: args.simulation.simulation()?,
        serving: if args.insecure_http {
            Serving::Http
        } else {
            Serving::Https
        },
        ..Config::default()
    })
}

/// envtest logs to stderr (injected faults, failing webhooks); `OPCTL_LOG`
/// filters, e.g. `OPCTL_LOG=warn` hides the fault lines.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPCTL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,opctl_envtest=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn run(cmd: Command) -> anyhow::Result<()> {
    init_logging();
    match cmd {
        Command::Run(args) => {
            let code = runtime()?.block_on(run_command(args))?;
            if code != 0 {
                std::process::exit(code);
            }
            Ok(())
        }
        Command::Start(args) => runtime()?.block_on(serve(args)),
    }
}

/// A shell-style exit code for a finished child.
fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    1
}

/// The signals that ask opctl to stop, SIGINT and SIGTERM, listened for
/// from the moment this is made: made before anything is started or
/// written, so that a signal at any later moment (during start-up, right
/// after the ready line) is caught and opctl stops cleanly, removing the
/// private kubeconfig directory, instead of dying by the signal.
struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn listen() -> anyhow::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen =
                |kind: SignalKind| signal(kind).context("cannot listen for SIGINT and SIGTERM");
            Ok(StopSignals {
                interrupt: listen(SignalKind::interrupt())?,
                terminate: listen(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    /// The next stop signal (its number); one that came since [`listen`]
    /// returns at once.
    ///
    /// [`listen`]: StopSignals::listen
    async fn recv(&mut self) -> i32 {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => libc::SIGINT,
                _ = self.terminate.recv() => libc::SIGTERM,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            2
        }
    }
}

/// A directory only its owner can enter (0700), made fresh under the temp
/// directory with an unpredictable name, removed when dropped: where the
/// kubeconfig (and the administrator's token in it) lives.
fn private_dir() -> anyhow::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("opctl-envtest-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder
        .tempdir()
        .context("cannot create a private directory for the kubeconfig")
}

/// How long the command may take to exit after opctl passed it a signal,
/// before it is killed.
const CHILD_GRACE: Duration = Duration::from_secs(10);

/// Sends `signal` to the child's process group (the command and what it started).
#[cfg(unix)]
fn signal_group(child: &tokio::process::Child, signal: i32) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) has no memory effects; a group already gone gives ESRCH.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// Waits for the command. A SIGINT or SIGTERM to opctl goes on to the
/// command's process group, which then has [`CHILD_GRACE`] to exit before
/// it is killed; the server keeps serving all that time.
async fn supervise(
    child: &mut tokio::process::Child,
    signals: &mut StopSignals,
) -> std::io::Result<ExitStatus> {
    let signal = tokio::select! {
        status = child.wait() => return status,
        signal = signals.recv() => signal,
    };
    #[cfg(unix)]
    signal_group(child, signal);
    #[cfg(not(unix))]
    {
        let _ = signal;
        let _ = child.start_kill();
    }
    match tokio::time::timeout(CHILD_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            eprintln!(
                "opctl envtest: the command did not exit within {}s of the signal; killing it",
                CHILD_GRACE.as_secs()
            );
            #[cfg(unix)]
            signal_group(child, libc::SIGKILL);
            let _ = child.start_kill();
            child.wait().await
        }
    }
}

/// Set for the command `envtest run` starts when faults are injected: the
/// `--faults` value, so that tests can allow for retried requests.
pub const FAULTS_ENV: &str = "OPCTL_ENVTEST_FAULTS";

/// How the start-up ended.
enum Started {
    Serving(Envtest),
    /// A stop signal (its number) came first: the start-up was abandoned
    /// before anything was written.
    Stopped(i32),
}

async fn start_server(config: Config, signals: &mut StopSignals) -> anyhow::Result<Started> {
    tokio::select! {
        env = Envtest::start(config) => env.map(Started::Serving),
        signal = signals.recv() => Ok(Started::Stopped(signal)),
    }
}

async fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    let mut signals = StopSignals::listen()?;
    let faults = args.server.faults.clone();
    let config = config(args.server)?;
    let env = match start_server(config, &mut signals).await? {
        Started::Serving(env) => env,
        // Stopped before the command ran: the shell's code for a command
        // ended by that signal, as if the command had been.
        Started::Stopped(signal) => return Ok(128 + signal),
    };
    let dir = private_dir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    env.write_kubeconfig(&kubeconfig)?;
    let (program, rest) = args
        .command
        .split_first()
        .context("no COMMAND given after --")?;
    let mut command = tokio::process::Command::new(program);
    command.args(rest).env("KUBECONFIG", &kubeconfig);
    match &faults {
        Some(spec) => command.env(FAULTS_ENV, spec),
        None => command.env_remove(FAULTS_ENV),
    };
    // Its own process group: a signal opctl passes on reaches what the
    // command started too (cargo test and its test binaries, say).
    #[cfg(unix)]
    command.process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            env.shutdown().await;
            anyhow::bail!("cannot run {program:?}: {e}");
        }
    };
    let status = supervise(&mut child, &mut signals).await;
    env.shutdown().await;
    drop(dir);
    let status = status.with_context(|| format!("waiting for {program:?}"))?;
    Ok(exit_code(status))
}

async fn serve(args: StartArgs) -> anyhow::Result<()> {
    let mut signals = StopSignals::listen()?;
    let config = config(args.server)?;
    let Started::Serving(env) = start_server(config, &mut signals).await? else {
        return Ok(());
    };
    let (path, dir) = match args.kubeconfig {
        Some(p) => (p, None),
        None => {
            let dir = private_dir()?;
            (dir.path().join("kubeconfig"), Some(dir))
        }
    };
    env.write_kubeconfig(&path)?;
    println!(
        "envtest serving {}; kubeconfig written to {} (export KUBECONFIG={})",
        env.base_url(),
        path.display(),
        shell_quote(&path)
    );
    signals.recv().await;
    env.shutdown().await;
    // Removes the private directory with the kubeconfig.
    drop(dir);
    Ok(())
}

fn shell_quote(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Command,
    }

    #[test]
    fn run_takes_the_command_after_double_dash() {
        let cli = Cli::try_parse_from([
            "opctl", "run", "--port", "8080", "--", "kubectl", "get", "ns",
        ])
        .expect("parses");
        match cli.cmd {
            Command::Run(args) => {
                assert_eq!(args.server.port, 8080);
                assert_eq!(args.command, vec!["kubectl", "get", "ns"]);
            }
            other => panic!("parsed as {other:?}"),
        }
        assert!(
            Cli::try_parse_from(["opctl", "run"]).is_err(),
            "COMMAND is required"
        );
    }

    #[test]
    fn webhook_routes_repeat_and_bad_ones_are_refused() {
        let cli = Cli::try_parse_from([
            "opctl",
            "start",
            "--webhook-route",
            "system/webhook-service:443=127.0.0.1:9443",
            "--webhook-route",
            "other/hooks:8443=[::1]:9000",
        ])
        .expect("parses");
        let Command::Start(args) = cli.cmd else {
            panic!("parsed as {:?}", cli.cmd);
        };
        let routes: Vec<String> = args
            .server
            .webhook_routes
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(
            routes,
            [
                "system/webhook-service:443=127.0.0.1:9443",
                "other/hooks:8443=[::1]:9000"
            ]
        );
        let err = Cli::try_parse_from(["opctl", "run", "--webhook-route", "svc:443", "--", "true"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected NAMESPACE/NAME:PORT=HOST:PORT"),
            "{err}"
        );
    }

    #[test]
    fn missing_crd_directory_is_named_in_the_error() {
        let err = config(server_args(&["--crds", "/no/such/dir"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--crds /no/such/dir: no such file or directory"
        );
    }

    fn server_args(args: &[&str]) -> ServerArgs {
        let mut argv = vec!["opctl", "start"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("parses").cmd {
            Command::Start(args) => args.server,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn fault_specs_and_seeds_reach_the_config_or_are_refused() {
        let valid =
            config(server_args(&["--faults", "default", "--faults-seed", "7"])).expect("valid");
        assert_eq!(valid.faults.seed, Some(7));
        assert_eq!(valid.faults.rules.len(), 5);
        for (args, message) in [
            (
                &["--faults", "writes:500=200%"][..],
                "invalid --faults \"writes:500=200%\": \"200%\" is not a percentage above 0 and at most 100, e.g. 10%; see `opctl envtest run --help`",
            ),
            (
                &["--faults", "default", "--faults-seed", "x"][..],
                "invalid --faults-seed \"x\": expected a whole number, e.g. 42",
            ),
            (
                &["--faults-seed", "3"][..],
                "--faults-seed 3 without --faults: add --faults default (or rules)",
            ),
        ] {
            assert_eq!(config(server_args(args)).unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn simulation_flags_shape_the_nodes_and_bad_ones_are_named() {
        let cli = Cli::try_parse_from([
            "opctl",
            "start",
            "--nodes",
            "3",
            "--node-taint",
            "envtest-node-2=gpu=yes:NoSchedule",
            "--node-not-ready",
            "envtest-node-3",
            "--simulate",
            "nodes,kubelet",
        ])
        .expect("parses");
        let Command::Start(args) = cli.cmd else {
            panic!("parsed as {:?}", cli.cmd);
        };
        let sim = args.server.simulation.simulation().expect("valid");
        assert_eq!(sim.nodes.len(), 3);
        assert_eq!(sim.nodes[1].taints[0].to_string(), "gpu=yes:NoSchedule");
        assert!(!sim.nodes[2].ready);
        assert!(sim.kubelet && !sim.scheduler && !sim.provisioner);
        let cli = Cli::try_parse_from(["opctl", "start", "--node-not-ready", "envtest-node-9"])
            .expect("parses");
        let Command::Start(args) = cli.cmd else {
            panic!("parsed as {:?}", cli.cmd);
        };
        let err = args.server.simulation.simulation().unwrap_err().to_string();
        assert!(
            err.contains("no simulated node \"envtest-node-9\""),
            "{err}"
        );
        let err = Cli::try_parse_from(["opctl", "start", "--node-taint", "envtest-node-1=gpu"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("KEY[=VALUE]:EFFECT"), "{err}");
    }

    #[test]
    fn controllers_take_kube_controller_manager_syntax_and_unknown_names_are_refused() {
        use opctl_envtest::Controller;
        let all = config(server_args(&[])).expect("valid");
        assert_eq!(all.controllers, Controllers::all());
        let none = config(server_args(&["--simulate", "none", "--controllers="])).expect("valid");
        assert_eq!(none.controllers, Controllers::none());
        assert!(none.simulation.is_off());
        let some = config(server_args(&[
            "--controllers",
            "*,-deployment-controller",
            "--controllers",
            "-podgc",
        ]))
        .expect("valid");
        assert_eq!(
            some.controllers,
            Controllers::all()
                .without(Controller::Deployment)
                .without(Controller::PodGarbageCollector)
        );
        let recording = "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller";
        let replay = config(server_args(&["--controllers", recording])).expect("valid");
        assert_eq!(replay.controllers, Controllers::transcript_recording());
        let err = config(server_args(&["--controllers", "*,-deploymnet-controller"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid --controllers: \"deploymnet-controller\" is not in the list of known controllers: "),
            "{err}"
        );
        assert!(
            err.contains("deployment-controller") && !err.contains('\n'),
            "{err}"
        );
        let err = config(server_args(&["--simulate", "nodes,controllers"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--controllers"), "{err}");
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        let status = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .status()
            .expect("sh runs");
        assert_eq!(exit_code(status), 3);
        assert_eq!(shell_quote(Path::new("/tmp/a b")), "'/tmp/a b'");
        assert_eq!(shell_quote(Path::new("/tmp/ab")), "/tmp/ab");
    }
}
