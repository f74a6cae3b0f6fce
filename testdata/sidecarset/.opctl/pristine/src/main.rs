//! The sidecarset manager: runs this operator's controllers.
//!
//! This file is yours: change flags and defaults here and hand settings to
//! the controllers. `opctl create api` registers new controllers at the
//! `+opctl:scaffold:controllers` marker, `opctl create webhook` admission
//! webhooks at `+opctl:scaffold:webhooks`.

mod controller;
mod webhook;
// +opctl:scaffold:modules

use clap::Parser;

use sidecarset::manager;

/// sidecarset: a Kubernetes operator.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Namespaces to watch (repeat the flag or separate with commas); all
    /// namespaces when none is given.
    #[arg(long = "namespace", env = "WATCH_NAMESPACE", value_delimiter = ',')]
    namespaces: Vec<String>,

    #[command(flatten)]
    manager: manager::Options,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let scope = manager::WatchScope::from_namespaces(cli.namespaces);
    let manager = manager::Manager::new(manager::PROJECT, cli.manager, scope).await?;
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
    fn the_arguments_of_the_manager_deployment_parse() {
        let yaml = include_str!("../config/manager/manager.yaml");
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_str_multiple(yaml).expect("config/manager/manager.yaml is YAML");
        let deployment = docs.iter().find(|doc| doc["kind"] == "Deployment");
        let deployment = deployment.expect("a Deployment");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let mut argv = vec!["manager".to_owned()];
        let args = container["args"].as_array().into_iter().flatten();
        argv.extend(args.filter_map(|arg| arg.as_str().map(str::to_owned)));
        let cli = Cli::try_parse_from(argv).expect("the Deployment's arguments parse");
        assert!(cli.manager.leader_elect);
        assert_eq!(cli.manager.metrics_bind_address.port(), 8443);
        assert_eq!(cli.manager.health_probe_bind_address.port(), 8081);
        assert_eq!(cli.manager.log_format, manager::LogFormat::Json);
    }

    #[test]
    fn all_namespaces_by_default() {
        let cli = Cli::try_parse_from(["manager"]).expect("parses");
        assert!(cli.namespaces.is_empty());
        let cli = Cli::try_parse_from(["manager", "--namespace=a,b"]).expect("parses");
        assert_eq!(cli.namespaces, ["a", "b"]);
    }
}
