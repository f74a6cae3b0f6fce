//! A generated project depends on the manager runtime, `opctl-runtime`
//! (`crates/runtime`), through the copy `opctl init` puts in
//! `.opctl/runtime/` and a `[patch.crates-io]` line, until the crate is
//! published:
//! - the copy is the crate's sources, byte for byte, with a manifest of its
//!   own (no workspace inheritance, no dev-dependencies);
//! - the project resolves with nothing outside its directory (the runtime
//!   from the copy, not a workspace member), also from only what its
//!   Dockerfile copies into the image build (the build context, with
//!   `.dockerignore`);
//! - the project keeps only glue of its own: the scaffold-owned Rust of a
//!   fresh project stays within a few dozen lines.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{build_env, opctl_ok, project_dir, snapshot};

fn runtime_crate() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/runtime")
}

#[test]
fn the_copy_is_the_runtime_crate() {
    let (_tmp, dir) = project_dir("copied");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    let copy = snapshot(&dir.join(".opctl/runtime/src"));
    let sources = snapshot(&runtime_crate().join("src"));
    assert_eq!(
        copy.keys().collect::<Vec<_>>(),
        sources.keys().collect::<Vec<_>>(),
        "the copy has the crate's source files"
    );
    for (path, text) in &sources {
        assert!(
            copy[path] == *text,
            "src/{path} differs from crates/runtime"
        );
    }
    for doc in ["README.md", "CHANGELOG.md"] {
        let copied = std::fs::read(dir.join(".opctl/runtime").join(doc)).expect("copied");
        let original = std::fs::read(runtime_crate().join(doc)).expect("the crate's");
        assert!(copied == original, "{doc} differs");
    }
    let listed = opctl_ok(&dir, &["files", "--owner", "vendored"]).stdout;
    assert!(
        listed.lines().any(|l| l == ".opctl/runtime/src/lib.rs"),
        "{listed}"
    );
}

/// `cargo metadata` of the project in `dir`.
fn metadata(dir: &Path) -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--locked", "--format-version", "1", "--quiet"])
        .current_dir(dir)
        .envs(build_env())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo metadata in {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Checks that the project in `dir` takes opctl-runtime from its own copy
/// and that its only members are the manager and the API crate.
fn assert_self_contained(dir: &Path, name: &str) {
    let metadata = metadata(dir);
    let dir = dir.canonicalize().expect("a path");
    let packages = metadata["packages"].as_array().expect("packages");
    let manifest_of = |package: &str| {
        let found = packages.iter().find(|p| p["name"] == package);
        let found = found.unwrap_or_else(|| panic!("{package} is a package"));
        PathBuf::from(found["manifest_path"].as_str().expect("a path"))
    };
    assert_eq!(
        manifest_of("opctl-runtime"),
        dir.join(".opctl/runtime/Cargo.toml")
    );
    for package in packages.iter().filter(|p| p["source"].is_null()) {
        let path = PathBuf::from(package["manifest_path"].as_str().expect("a path"));
        assert!(
            path.starts_with(&dir),
            "{} comes from outside the project: {}",
            package["name"],
            path.display()
        );
    }
    let members = metadata["workspace_members"].as_array().expect("members");
    assert_eq!(members.len(), 2, "the manager and {name}-api: {members:?}");
}

#[test]
fn a_project_and_its_image_build_context_resolve_on_their_own() {
    let (_tmp, dir) = project_dir("standalone");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    assert_self_contained(&dir, "standalone");

    // What the Dockerfile copies, less what .dockerignore leaves out.
    let context = build_context(&dir);
    let (_tmp2, image) = project_dir("standalone");
    for (path, bytes) in &context {
        let to = image.join(path);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        std::fs::write(to, bytes).expect("write");
    }
    assert!(
        context.contains_key(".opctl/runtime/src/lib.rs"),
        "the image build gets the runtime"
    );
    assert_self_contained(&image, "standalone");
}

/// The files an image build of the project in `dir` sees: those its
/// Dockerfile's `COPY` lines name (before the first `FROM` of the final
/// stage), kept by its `.dockerignore` (`*`, then `!path` exceptions).
fn build_context(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let ignore = std::fs::read_to_string(dir.join(".dockerignore")).expect(".dockerignore");
    let mut lines = ignore
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    assert_eq!(lines.next(), Some("*"), "everything is left out but...");
    let kept: Vec<&str> = lines
        .map(|l| l.strip_prefix('!').expect("an exception"))
        .collect();
    let dockerfile = std::fs::read_to_string(dir.join("Dockerfile")).expect("Dockerfile");
    let copied: Vec<&str> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("COPY "))
        .filter(|l| !l.starts_with("--from"))
        .flat_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words[..words.len() - 1].to_vec()
        })
        .collect();
    let in_context = |path: &str| kept.iter().any(|k| path == *k || path.starts_with(k));
    let copied_by_build = |path: &str| copied.iter().any(|c| path == *c || path.starts_with(c));
    snapshot(dir)
        .into_iter()
        .filter(|(path, _)| in_context(path) && copied_by_build(path))
        .collect()
}

#[test]
fn a_fresh_project_keeps_only_glue_of_its_own() {
    let (_tmp, dir) = project_dir("lean");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    let scaffold_owned = opctl_ok(&dir, &["files", "--owner", "scaffold"]).stdout;
    let rust: Vec<&str> = scaffold_owned
        .lines()
        .filter(|path| path.ends_with(".rs") && !path.starts_with(".opctl/"))
        .collect();
    let lines: usize = rust
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(dir.join(path)).expect("readable");
            text.lines().count()
        })
        .sum();
    println!("scaffold-owned Rust of a fresh project: {lines} lines in {rust:?}");
    assert!(
        lines <= 300,
        "a fresh project carries {lines} lines of scaffold-owned Rust: {rust:?}"
    );
}
