//! The simple-deployment manager: keeps a Pod next to every Deployment in the
//! namespaces it watches (src/controller/deployment.rs).

mod controller;

use std::time::Duration;

use clap::Parser;

use simple_deployment::manager;

/// simple-deployment: for every Deployment in the watched namespaces, keeps a
/// Pod of the same name that echoes that name every second.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Namespaces whose Deployments get a Pod (repeat the flag or separate
    /// with commas); Deployments elsewhere are ignored.
    #[arg(
        long = "namespace",
        env = "WATCH_NAMESPACE",
        value_delimiter = ',',
        default_value = "simple-deployment",
        value_parser = namespace_name
    )]
    namespaces: Vec<String>,

    /// Image of the Pods' `echo` container.
    #[arg(long, env = "POD_IMAGE", default_value = "ubi8", value_parser = image_name)]
    image: String,

    /// Seconds between two checks of a Deployment's Pod when nothing changes
    /// (changes to Deployments and their Pods are acted on at once).
    #[arg(
        long,
        env = "RESYNC_SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    resync_seconds: u64,

    #[command(flatten)]
    manager: manager::Options,
}

impl Cli {
    fn settings(&self) -> controller::deployment::Settings {
        controller::deployment::Settings {
            image: self.image.clone(),
            resync: Duration::from_secs(self.resync_seconds),
        }
    }
}

/// A namespace name (a DNS-1123 label): never empty, so the manager cannot
/// end up watching every namespace by accident.
fn namespace_name(value: &str) -> Result<String, String> {
    let value = value.trim();
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let valid = !value.is_empty()
        && value.len() <= 63
        && value.starts_with(alnum)
        && value.ends_with(alnum)
        && value.chars().all(|c| alnum(c) || c == '-');
    if valid {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} is not a namespace name (lowercase letters, digits and '-', at most 63)"
        ))
    }
}

fn image_name(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.is_empty() || value.contains(char::is_whitespace) {
        Err(format!("{value:?} is not an image reference"))
    } else {
        Ok(value.to_owned())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let settings = cli.settings();
    let scope = manager::WatchScope::from_namespaces(cli.namespaces);
    let manager = manager::Manager::new(manager::PROJECT, cli.manager, scope).await?;
    let manager = controller::deployment::register(manager, settings);
    // +opctl:scaffold:controllers
    manager.run().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("manager").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The default and the environment variable of the flag `--long`
    /// (read from the definition, so whatever the environment holds).
    fn default_and_env(long: &str) -> (Vec<String>, Option<String>) {
        let command = Cli::command();
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(long))
            .unwrap_or_else(|| panic!("--{long} exists"));
        let defaults = arg
            .get_default_values()
            .iter()
            .map(|value| value.to_string_lossy().into_owned())
            .collect();
        let env = arg
            .get_env()
            .map(|name| name.to_string_lossy().into_owned());
        (defaults, env)
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
    fn defaults_are_those_of_the_original_operator() {
        let namespace = default_and_env("namespace");
        assert_eq!(
            namespace,
            (
                vec!["simple-deployment".to_owned()],
                Some("WATCH_NAMESPACE".to_owned())
            )
        );
        let image = default_and_env("image");
        assert_eq!(
            image,
            (vec!["ubi8".to_owned()], Some("POD_IMAGE".to_owned()))
        );
        let resync = default_and_env("resync-seconds");
        assert_eq!(
            resync,
            (vec!["10".to_owned()], Some("RESYNC_SECONDS".to_owned()))
        );
    }

    #[test]
    fn flags_override_the_defaults() {
        let cli = parse(&[
            "--namespace=a,b",
            "--namespace",
            "c",
            "--image=registry.example/ubi:9",
            "--resync-seconds=3",
        ])
        .expect("parses");
        assert_eq!(cli.namespaces, ["a", "b", "c"]);
        assert_eq!(cli.settings().image, "registry.example/ubi:9");
        assert_eq!(cli.settings().resync, Duration::from_secs(3));
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["--namespace="][..],
            &["--namespace=a,,b"],
            &["--namespace=Default"],
            &["--namespace=-a"],
            &["--image="],
            &["--image=a b"],
            &["--resync-seconds=0"],
            &["--resync-seconds=soon"],
        ] {
            assert!(parse(args).is_err(), "{args:?} should be refused");
        }
    }
}
