//! `opctl edit`: changes a setting of an existing project, recorded in
//! PROJECT and kept by every later command.

use crate::project::Project;
use crate::scaffold::{self, plans};

const EXAMPLES: &str = "\
Examples:
  opctl edit --helm      # a Helm chart in dist/chart, kept in sync by `opctl manifests`
  helm install <project> dist/chart --namespace <project>-system --create-namespace";

/// Change a setting of the project in the current directory.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Add a Helm chart of the operator in dist/chart (from config/), which
    /// `opctl manifests` keeps in sync.
    #[arg(long)]
    pub helm: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.helm {
        anyhow::bail!(
            "nothing to change: pass --helm to add a Helm chart in dist/chart (`opctl edit --helm`)"
        );
    }
    let root = super::current_dir()?;
    let mut project = Project::load(&root)?;
    project.helm = true;
    let plan = plans::edit(&project, &root)?;
    let report = scaffold::apply(&root, &plan, "")?;
    // No step of its own: a replay takes the setting from PROJECT.
    scaffold::pristine::record(&root, &project, None)?;
    report.print();
    println!();
    println!("The Helm chart is in dist/chart; `opctl manifests` keeps it in sync with config/.");
    println!(
        "Next: helm install {name} dist/chart --namespace {name}-system --create-namespace",
        name = project.project_name
    );
    Ok(())
}
