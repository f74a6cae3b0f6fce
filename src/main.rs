//! opctl: scaffold, generate and test Kubernetes operators written in Rust.

mod cli;
mod manifests;
mod project;
mod scaffold;
mod upgrade;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(err) = cli::run(cli) {
        // One line naming the problem (and, where known, the fix).
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
