//! The new project's version control, as `cargo new` does it: a git
//! repository is started unless the directory is already in one (and not
//! ignored by it) or `--vcs none` is given. No commit is made, as by cargo:
//! committing needs the user's name and e-mail, and the first commit is
//! theirs to word.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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

/// `git init` in a new project, run beside the scaffolding (it only makes
/// `.git/`, which no scaffolded file touches), so that a new project costs
/// about the time of the slower of the two; [`Starting::finish`] waits for
/// it, [`Starting::undo`] removes what it made when the scaffolding failed.
pub struct Starting {
    root: PathBuf,
    child: Option<Child>,
    spawn_error: Option<std::io::Error>,
}

/// Starts `git init --quiet` in `root` (no commit: see the module
/// documentation).
pub fn start_repository(root: &Path) -> Starting {
    let child = Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let (child, spawn_error) = match child {
        Ok(child) => (Some(child), None),
        Err(err) => (None, Some(err)),
    };
    Starting {
        root: root.to_path_buf(),
        child,
        spawn_error,
    }
}

impl Starting {
    /// Waits for `git init`; its failure is reported with the way out.
    pub fn finish(mut self) -> anyhow::Result<()> {
        if let Some(err) = self.spawn_error.take() {
            anyhow::bail!(
                "the project is scaffolded, but git could not run ({err}); run `git init` yourself"
            );
        }
        let Some(child) = self.child.take() else {
            return Ok(());
        };
        match child.wait_with_output() {
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

    /// Waits for `git init` and removes the repository it made: the
    /// scaffolding failed, and a refused `opctl init` leaves nothing.
    pub fn undo(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(self.root.join(".git"));
    }
}

fn git(root: &Path, args: &[&str]) -> std::io::Result<Output> {
    Command::new("git").args(args).current_dir(root).output()
}
