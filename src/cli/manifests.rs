//! `opctl manifests`: regenerates CRDs, RBAC, webhook configurations and
//! their kustomizations from the code.

use crate::project::Project;
use crate::scaffold::{IfExists, Outcome, Owner, Plan};

const EXAMPLES: &str = "\
Examples:
  opctl manifests        # after changing types in api/src, +opctl:rbac or +opctl:webhook markers
  make manifests         # the same, through the project's Makefile";

/// Regenerate CRDs (config/crd), RBAC (config/rbac/role.yaml) and webhook configurations (config/webhook/manifests.yaml) from the code.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    let root = super::current_dir()?;
    let project = Project::load(&root)?;
    let mut plan = Plan::default();
    for manifest in crate::manifests::generate(&root, &project)? {
        plan.file(
            manifest.path,
            manifest.contents,
            Owner::Generated,
            IfExists::Overwrite,
        );
    }
    let report = crate::scaffold::apply(&root, &plan, "")?;
    report.print();
    let changed = report.with(Outcome::Created).len() + report.with(Outcome::Updated).len();
    if changed == 0 {
        println!("Manifests are up to date.");
    }
    println!("Next: make test, then `make install` (CRDs) or `make test-e2e`.");
    Ok(())
}
