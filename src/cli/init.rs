//! `opctl init` (not yet implemented).

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("this command is not implemented yet")
}
