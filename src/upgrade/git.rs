//! `opctl upgrade` rewrites files in place: it wants a clean git tree, so
//! that `git diff` shows what it did and `git checkout .` undoes it.

use std::path::Path;
use std::process::Command;

/// Fails unless `root` is in a git work tree without uncommitted changes.
pub fn require_clean(root: &Path) -> anyhow::Result<()> {
    let out = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=normal", "."])
        .current_dir(root)
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        _ => anyhow::bail!(
            "{} is not in a git work tree: opctl upgrade rewrites files in place, so commit the project to git first (git init && git add -A && git commit), or pass --force",
            root.display()
        ),
    };
    let dirty = String::from_utf8_lossy(&out.stdout).lines().count();
    if dirty > 0 {
        anyhow::bail!(
            "the git tree has {dirty} uncommitted change{}: commit or stash them first, so that the upgrade's changes can be reviewed and undone, or pass --force",
            if dirty == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
