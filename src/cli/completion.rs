//! `opctl completion`: prints a shell completion script.

use clap::CommandFactory;
use clap_complete::Shell;

const EXAMPLES: &str = "\
Examples:
  opctl completion bash > ~/.local/share/bash-completion/completions/opctl
  opctl completion zsh > \"${fpath[1]}/_opctl\"
  opctl completion fish > ~/.config/fish/completions/opctl.fish";

/// Print a shell completion script.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut command = super::Cli::command();
    clap_complete::generate(args.shell, &mut command, "opctl", &mut std::io::stdout());
    Ok(())
}
