//! The README's walkthrough works as written: every command of the `sh`
//! blocks of its "Walkthrough" section is run literally, in order, by bash
//! in a fresh directory outside any git repository, with the opctl built for
//! these tests first on PATH. The commands are read from README.md, so the
//! test and the README cannot drift apart. That includes the git steps
//! (`opctl init` starts the repository, `git add -A && git commit`) and
//! `opctl upgrade --dry-run` / `opctl upgrade` on the committed project.
//!
//! The build and test steps are left out, each covered elsewhere on a
//! project with the same options: `cargo test --workspace`, `cargo clippy
//! ... -D warnings`, `make test-e2e` and `make test-e2e-faults` by
//! generated_project.rs (a namespaced and a cluster-scoped kind, a
//! Deployment controller, webhooks for a kind and for Pods),
//! generated_deploy_image.rs (`--image`) and reference_projects.rs (the
//! database project: a second version converted through a hub). `opctl
//! manifests` and `make build-installer` do run (they build the API crate).

mod common;

use std::path::Path;
use std::process::Command;

use common::{build_env, opctl_bin, project_dir};

/// Commands of the walkthrough this test does not run, as they start.
const COVERED_ELSEWHERE: &[&str] = &[
    "cargo test --workspace",
    "cargo clippy --workspace --all-targets -- -D warnings",
    "make test-e2e-faults",
    "make test-e2e",
];

/// The lines of the `sh` blocks of the README's "## Walkthrough" section.
fn walkthrough_commands(readme: &str) -> Vec<String> {
    let start = readme
        .find("\n## Walkthrough\n")
        .expect("README.md has a Walkthrough section");
    let section = &readme[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut commands = Vec::new();
    let mut in_block = false;
    for line in section[..end].lines() {
        if !in_block {
            in_block = line.trim() == "```sh";
        } else if line.trim() == "```" {
            in_block = false;
        } else if !line.trim().is_empty() {
            commands.push(line.to_owned());
        }
    }
    commands
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let commands = walkthrough_commands(&readme);
    let mut script = String::from("set -eu\n");
    let mut skipped = Vec::new();
    for command in &commands {
        match COVERED_ELSEWHERE.iter().find(|c| command.starts_with(*c)) {
            Some(known) => {
                skipped.push(*known);
                script.push_str(&format!(": skipped: {known}\n"));
            }
            None => {
                script.push_str(&format!("echo '+ {}'\n", command.replace('\'', "'\\''")));
                script.push_str(command);
                script.push('\n');
            }
        }
    }
    // Every command this test leaves out is still in the README, so the
    // list above stays true.
    for known in COVERED_ELSEWHERE {
        assert!(
            skipped.contains(known),
            "{known} is no longer in the walkthrough"
        );
    }
    for expected in [
        "opctl init --domain example.com",
        "git add -A && git commit",
        "opctl upgrade --dry-run",
        "opctl upgrade ",
    ] {
        assert!(
            commands.iter().any(|c| c.starts_with(expected)),
            "the walkthrough runs {expected:?}: {commands:#?}"
        );
    }

    // Outside any git repository (a temporary directory), as a newcomer's.
    let (_tmp, work) = project_dir("walkthrough");
    let bin = Path::new(opctl_bin())
        .parent()
        .expect("the binary's directory");
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .envs(build_env())
        // A newcomer has told git who they are.
        .env("GIT_AUTHOR_NAME", "Jane Doe")
        .env("GIT_AUTHOR_EMAIL", "jane@example.com")
        .env("GIT_COMMITTER_NAME", "Jane Doe")
        .env("GIT_COMMITTER_EMAIL", "jane@example.com")
        .output()
        .expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the walkthrough failed:\n{script}\n---\n{text}"
    );

    let project = work.join("guestbook");
    assert!(project.join("dist/install.yaml").is_file(), "{text}");
    assert!(project.join("dist/chart/Chart.yaml").is_file(), "{text}");
    let log = git(&project, &["log", "--format=%s"]);
    assert_eq!(log.trim(), "guestbook v0.1.0", "one commit, the README's");
    // The commit holds the whole project (nothing was left untracked), and
    // the upgrade with nothing to change left the tree clean.
    assert_eq!(git(&project, &["status", "--porcelain"]), "", "{text}");
    let tracked = git(&project, &["ls-files"]);
    for file in [
        "PROJECT",
        "Cargo.lock",
        ".opctl/history.yaml",
        "src/controller/guestbook.rs",
        "config/crd/bases/webapp.example.com_guestbooks.yaml",
    ] {
        assert!(
            tracked.lines().any(|l| l == file),
            "{file} is committed:\n{tracked}"
        );
    }
    assert!(
        !tracked.lines().any(|l| l.starts_with("target/")),
        "target/ is ignored"
    );
    assert_eq!(
        text.matches("The project is up to date with this opctl's scaffold.")
            .count(),
        2,
        "opctl upgrade --dry-run and opctl upgrade:\n{text}"
    );

    // The samples of both versions of Guestbook are objects of their own:
    // `kubectl apply -k config/samples` creates each.
    let out = Command::new(opctl_bin())
        .args(["envtest", "run", "--crds", "config/crd/bases", "--"])
        .args(["kubectl", "apply", "-k", "config/samples"])
        .current_dir(&project)
        .output()
        .expect("opctl runs");
    let applied = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{applied}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for created in [
        "guestbook.webapp.example.com/guestbook-sample created",
        "guestbook.webapp.example.com/guestbook-sample-v2 created",
    ] {
        assert!(
            applied.lines().any(|l| l == created),
            "{created}:\n{applied}"
        );
    }
}
