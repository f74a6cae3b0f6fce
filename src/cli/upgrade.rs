//! `opctl upgrade`: brings the project to the current scaffold (see
//! [`crate::upgrade`]).

use crate::project::Project;
use crate::project::paths::LOCK_FILE;
use crate::upgrade::{self, Change};

const EXAMPLES: &str = "\
Examples:
  opctl upgrade --dry-run   # what would change
  opctl upgrade             # regenerate, merge your edits, run opctl manifests
  git diff                  # review; fix the files listed as CONFLICT";

/// Bring the project to the current scaffold: regenerate opctl's files, merge your edits into the new templates.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Print what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Run even outside git or with uncommitted changes.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let root = super::current_dir()?;
    let project = Project::load_for_upgrade(&root)?;
    if !args.force && !args.dry_run {
        upgrade::require_clean(&root)?;
    }
    let plan = upgrade::plan(&root, &project)?;
    for (path, change) in &plan.changes {
        println!("  {:<12} {path}", change.label());
    }
    let conflicts = plan.conflicts();
    if args.dry_run {
        if plan.changes.is_empty() {
            println!("The project is up to date with this opctl's scaffold.");
        } else {
            println!("\nDry run: nothing was written. Run `opctl upgrade` to apply.");
        }
        return Ok(());
    }
    upgrade::write(&root, &upgrade::current_layout(&project), &plan)?;
    let lock_merged = matches!(plan.changes.get(LOCK_FILE), Some(Change::Merge(_)));
    if !conflicts.is_empty() {
        // As `git merge` does: the tree is written, the command fails.
        let n = conflicts.len();
        let (files, verb) = if n == 1 {
            ("file", "needs")
        } else {
            ("files", "need")
        };
        let settle = if lock_merged {
            " (cargo settles the merged Cargo.lock on its next run)"
        } else {
            ""
        };
        anyhow::bail!(
            "{n} {files} {verb} your hand: resolve the conflict markers (<<<<<<< ours ... >>>>>>> theirs) in {}, then run `opctl manifests`{settle}",
            conflicts.join(", ")
        );
    }
    if lock_merged {
        upgrade::settle_lock(&root)?;
    }
    if plan.changes.is_empty() {
        println!("The project is up to date with this opctl's scaffold.");
    }
    let removed = plan
        .changes
        .values()
        .filter(|c| **c == Change::KeepRemoved)
        .count();
    if removed > 0 {
        println!("\nFiles you removed stay removed ({removed}).");
    }
    println!();
    // Even with no scaffold change, the manifests may lag the code.
    super::manifests::run(super::manifests::Args {})?;
    if !plan.changes.is_empty() {
        println!("Upgraded. Review with `git diff`, then cargo test && make test-e2e.");
    }
    Ok(())
}
