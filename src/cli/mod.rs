//! The command line: one module per command.

use clap::{Parser, Subcommand};

pub mod completion;
pub mod create_api;
pub mod create_webhook;
pub mod edit;
pub mod envtest;
pub mod files;
pub mod init;
pub mod manifests;
pub mod upgrade;

const EXAMPLES: &str = "\
Examples:
  mkdir guestbook && cd guestbook
  opctl init --domain example.com
  opctl create api --group webapp --version v1 --kind Guestbook
  opctl create api --group apps --version v1 --kind Deployment --resource=false
  opctl create webhook --group webapp --version v1 --kind Guestbook --defaulting --programmatic-validation
  opctl manifests
  opctl edit --helm
  cargo test && make test-e2e";

/// Scaffold, generate and test Kubernetes operators written in Rust.
#[derive(Debug, Parser)]
#[command(name = "opctl", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scaffold a new operator project in the current directory.
    Init(init::Args),
    /// Add an API (a kind and/or its controller) or a webhook to the project.
    #[command(subcommand)]
    Create(CreateCommand),
    /// Regenerate CRDs, RBAC and webhook configuration from the code.
    Manifests(manifests::Args),
    /// Change a setting of the project (add a Helm chart).
    Edit(edit::Args),
    /// Run an embedded Kubernetes API server for tests.
    #[command(subcommand)]
    Envtest(envtest::Command),
    /// Print the opctl version.
    #[command(after_help = "Examples:\n  opctl version")]
    Version,
    /// List the files of the project and who owns each (for regeneration checks).
    #[command(hide = true)]
    Files(files::Args),
    /// Print a shell completion script.
    Completion(completion::Args),
    /// Bring the project to the current scaffold, merging your edits.
    Upgrade(upgrade::Args),
}

#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Add a kind (types, CRD, sample) and/or a controller for it.
    Api(create_api::Args),
    /// Add admission webhooks (defaulting, validation) for a kind.
    Webhook(create_webhook::Args),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Init(args) => init::run(args),
        Command::Create(CreateCommand::Api(args)) => create_api::run(args),
        Command::Create(CreateCommand::Webhook(args)) => create_webhook::run(args),
        Command::Manifests(args) => manifests::run(args),
        Command::Edit(args) => edit::run(args),
        Command::Envtest(cmd) => envtest::run(cmd),
        Command::Version => {
            println!("opctl {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Completion(args) => completion::run(args),
        Command::Upgrade(args) => upgrade::run(args),
        Command::Files(args) => files::run(args),
    }
}

/// The directory the command works in.
pub fn current_dir() -> anyhow::Result<std::path::PathBuf> {
    std::env::current_dir().map_err(|err| {
        anyhow::anyhow!("cannot use the current directory: {err}; cd to an existing directory")
    })
}
