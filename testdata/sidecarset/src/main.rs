//! The sidecarset manager: the SidecarSet controller (status counts) and the
//! admission webhooks (SidecarSet defaulting and validation, sidecar
//! injection into Pods).
//!
//! `opctl create api` registers new controllers at the
//! `+opctl:scaffold:controllers` marker, `opctl create webhook` admission
//! webhooks at `+opctl:scaffold:webhooks`.

mod controller;
mod webhook;
// +opctl:scaffold:modules

use clap::Parser;

use sidecarset::manager;

/// sidecarset: injects the sidecar containers of SidecarSets into the Pods
/// they select, and counts those Pods.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    manager: manager::Options,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // A SidecarSet selects Pods in every namespace: there is no namespace flag.
    let scope = manager::WatchScope::AllNamespaces;
    let manager = manager::Manager::new(cli.manager, scope).await?;
    let manager = controller::sidecar_set::register(manager);
    // +opctl:scaffold:controllers
    let manager = webhook::register(manager);
    // +opctl:scaffold:webhooks
    manager.run().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn there_is_no_namespace_flag() {
        assert!(Cli::try_parse_from(["manager"]).is_ok());
        assert!(Cli::try_parse_from(["manager", "--namespace=a"]).is_err());
    }
}
