//! `opctl envtest run|start` (not yet implemented).

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Start the server, run COMMAND with KUBECONFIG pointing at it, stop, exit with its status.
    Run,
    /// Serve until interrupted.
    Start,
}

pub fn run(_cmd: Command) -> anyhow::Result<()> {
    anyhow::bail!("opctl envtest is not implemented yet")
}
