//! The new project's version control, as `cargo new` does it: a git
//! repository is started unless the directory is already in one (and not
//! ignored by it) or `--vcs none` is given. No commit is made, as by cargo:
//! committing needs the user's name and e-mail, and the first commit is
//! theirs to word.

use std::path::Path;
use std::process::{Command, Output};

/// `opctl init --vcs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Vcs {
    /// Start a git repository (unless the directory is in one already).
    Git,
    /// No version control.
    None,
}

/// Whether `opctl init` is to start a repository in `root`; checked before
/// anything is written, so that a missing git fails the command cleanly.
pub fn repository_to_start(root: &Path, vcs: Vcs) -> anyhow::Result<bool> {
    if vcs == Vcs::None {
        return Ok(false);
    }
    let inside = git(root, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        anyhow::anyhow!(
            "cannot run git to start the project's repository; install git, or pass --vcs none"
        )
    })?;
    if !inside.status.success() {
        return Ok(true);
    }
    // A directory the enclosing repository ignores (a scratch directory in
    // a repository's target/, say) gets a repository of its own, as with
    // `cargo new`; the repository's own root never is ignored.
    let toplevel = String::from_utf8_lossy(&inside.stdout).trim().to_owned();
    if same_dir(Path::new(&toplevel), root) {
        return Ok(false);
    }
    let ignored = git(root, &["check-ignore", "-q", &root.to_string_lossy()]);
    Ok(ignored.is_ok_and(|out| out.status.success()))
}

/// Starts the repository (no commit: see the module documentation).
pub fn start_repository(root: &Path) -> anyhow::Result<()> {
    let out = git(root, &["init", "--quiet"]);
    match out {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => anyhow::bail!(
            "the project is scaffolded, but `git init` failed ({}); run `git init` yourself",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(err) => anyhow::bail!(
            "the project is scaffolded, but git could not run ({err}); run `git init` yourself"
        ),
    }
}

fn git(root: &Path, args: &[&str]) -> std::io::Result<Output> {
    Command::new("git").args(args).current_dir(root).output()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
