//! `opctl init` starts a git repository as `cargo new` does: in a directory
//! outside any repository (or ignored by the one around it), not inside an
//! existing one, not with `--vcs none`; no commit is made; a refused init
//! starts none, and a missing git is refused before anything is written.

mod common;

use std::path::Path;
use std::process::Command;

use common::{opctl_fails, opctl_ok, project_dir, snapshot};

fn git(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}

#[test]
fn a_new_project_gets_a_repository_without_a_commit() {
    let (_tmp, dir) = project_dir("demo");
    let run = opctl_ok(&dir, &["init", "--domain", "example.com"]);
    assert!(
        run.stdout.contains("in a new git repository"),
        "{}",
        run.stdout
    );
    assert!(dir.join(".git").is_dir());
    let (ok, top) = git(&dir, &["rev-parse", "--show-toplevel"]);
    assert!(ok);
    assert_eq!(
        Path::new(top.trim()).canonicalize().expect("toplevel"),
        dir.canonicalize().expect("dir")
    );
    let (has_commit, _) = git(&dir, &["rev-parse", "--verify", "--quiet", "HEAD"]);
    assert!(!has_commit, "opctl init makes no commit, as cargo new");
    // Everything opctl wrote is there to be added; target/ is ignored.
    let (_, status) = git(
        &dir,
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignored",
        ],
    );
    for file in [
        "?? PROJECT",
        "?? Cargo.lock",
        "?? .opctl/history.yaml",
        "?? .gitignore",
    ] {
        assert!(status.lines().any(|l| l == file), "{file} in:\n{status}");
    }
    std::fs::create_dir(dir.join("target")).expect("mkdir");
    std::fs::write(dir.join("target/x"), "built").expect("write");
    let (_, ignored) = git(&dir, &["check-ignore", "target/x"]);
    assert_eq!(ignored.trim(), "target/x");
}

#[test]
fn no_repository_with_vcs_none_or_inside_an_existing_one() {
    let (_tmp, dir) = project_dir("demo");
    let run = opctl_ok(&dir, &["init", "--domain", "example.com", "--vcs", "none"]);
    assert!(!dir.join(".git").exists());
    assert!(!run.stdout.contains("git repository"), "{}", run.stdout);

    // A project in a subdirectory of a repository belongs to it.
    let (_tmp, outer) = project_dir("monorepo");
    assert!(git(&outer, &["init", "-q"]).0);
    let dir = outer.join("operators").join("demo");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let run = opctl_ok(&dir, &["init", "--domain", "example.com"]);
    assert!(!dir.join(".git").exists());
    assert!(!run.stdout.contains("git repository"), "{}", run.stdout);
    // So does one at the repository's root.
    let (_tmp, root) = project_dir("existing");
    assert!(git(&root, &["init", "-q"]).0);
    opctl_ok(&root, &["init", "--domain", "example.com"]);
    let (has_commit, _) = git(&root, &["rev-parse", "--verify", "--quiet", "HEAD"]);
    assert!(!has_commit);

    // A directory the repository ignores gets a repository of its own.
    std::fs::write(outer.join(".gitignore"), "/scratch\n").expect("write");
    let dir = outer.join("scratch").join("demo");
    std::fs::create_dir_all(&dir).expect("mkdir");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    assert!(dir.join(".git").is_dir());
}

#[test]
fn a_refused_init_starts_no_repository_and_a_missing_git_is_refused_first() {
    let (_tmp, dir) = project_dir("demo");
    let line = opctl_fails(&dir, &["init", "--domain", "Example.com"]);
    assert!(line.contains("invalid --domain"), "{line}");
    assert!(!dir.join(".git").exists());
    // Refused while writing (git init runs beside the scaffolding): the
    // repository it made goes too.
    std::fs::write(dir.join("Makefile"), "all:\n").expect("write");
    let line = opctl_fails(&dir, &["init", "--domain", "example.com"]);
    assert!(line.contains("would overwrite Makefile"), "{line}");
    assert!(!dir.join(".git").exists());
    std::fs::remove_file(dir.join("Makefile")).expect("remove");

    // Without git on PATH: refused with the way out, nothing written.
    let empty = tempfile::tempdir().expect("temp dir");
    let run = |args: &[&str]| {
        Command::new(common::opctl_bin())
            .args(args)
            .current_dir(&dir)
            .env("PATH", empty.path())
            .output()
            .expect("opctl runs")
    };
    let out = run(&["init", "--domain", "example.com"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        "error: cannot run git to start the project's repository; install git, or pass --vcs none"
    );
    assert!(snapshot(&dir).is_empty() && !dir.join(".git").exists());
    let out = run(&["init", "--domain", "example.com", "--vcs", "none"]);
    assert!(out.status.success(), "{out:?}");
    assert!(dir.join("PROJECT").is_file() && !dir.join(".git").exists());
}
