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
/// The enclosing repository is found as git finds it, by a `.git` in the
/// directory or above, without running git: a new project outside any
/// repository costs one `git init` and no other process.
pub fn repository_to_start(root: &Path, vcs: Vcs) -> anyhow::Result<bool> {
    if vcs == Vcs::None {
        return Ok(false);
    }
    let Some(top) = root.ancestors().find(|dir| dir.join(".git").exists()) else {
        if !on_path("git") {
            anyhow::bail!(
                "cannot run git to start the project's repository; install git, or pass --vcs none"
            );
        }
        return Ok(true);
    };
    if top == root {
        return Ok(false);
    }
    // A directory the enclosing repository ignores (a scratch directory in
    // a repository's target/, say) gets a repository of its own, as with
    // `cargo new`.
    let ignored = git(root, &["check-ignore", "-q", &root.to_string_lossy()]);
    Ok(ignored.is_ok_and(|out| out.status.success()))
}

/// Whether an executable `name` is in a directory of PATH.
fn on_path(name: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let file = dir.join(name);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            file.is_file() || file.with_extension("exe").is_file()
        }
    })
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
