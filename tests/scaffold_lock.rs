//! Every scaffold carries `Cargo.lock` with the versions opctl's CI tested
//! (`templates/Cargo.lock`, see docs/scaffolding.md#dependency-versions):
//! - the lock agrees with the templates' `Cargo.toml` files, for a project
//!   with no option and one with every option: `cargo metadata --locked`
//!   accepts it, and no later command (`create api`, `create webhook`,
//!   `--image`, `edit --helm`) changes it;
//! - `newest_versions` (ignored; run it before a release or when a
//!   dependency ships) builds, lints and tests a scaffold with every option
//!   against the newest compatible versions of everything, so that the next
//!   deprecation or break is found here before users find it. With
//!   `OPCTL_REFRESH_LOCK=1` it then makes that lock the tested one
//!   (`scripts/refresh-scaffold-lock.sh`).

mod common;

use std::path::{Path, PathBuf};

use common::{cargo, opctl_ok, project_dir};

/// The project name the lock in templates/ is made with (its two packages
/// are renamed for each project).
const PLACEHOLDER: &str = "opctl-scaffold";

/// Every scaffolding option, one command each after `init`: a namespaced
/// kind with webhooks, a second version converted through a hub, a
/// cluster-scoped kind with a finalizer, a controller and a webhook for
/// built-in kinds, a kind deploying an image, and a Helm chart.
const EVERY_OPTION: &[&[&str]] = &[
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
    &[
        "create",
        "webhook",
        "--group",
        "web",
        "--version",
        "v1",
        "--kind",
        "Guestbook",
        "--defaulting",
        "--programmatic-validation",
    ],
    &[
        "create",
        "api",
        "--group",
        "web",
        "--version",
        "v2",
        "--kind",
        "Guestbook",
        "--controller=false",
    ],
    &[
        "create",
        "webhook",
        "--group",
        "web",
        "--version",
        "v2",
        "--kind",
        "Guestbook",
        "--conversion",
    ],
    &[
        "create",
        "api",
        "--group",
        "infra",
        "--version",
        "v1alpha1",
        "--kind",
        "ClusterPolicy",
        "--namespaced=false",
        "--finalizer",
    ],
    &[
        "create",
        "api",
        "--group",
        "apps",
        "--version",
        "v1",
        "--kind",
        "Deployment",
        "--resource=false",
    ],
    &[
        "create",
        "webhook",
        "--group",
        "core",
        "--version",
        "v1",
        "--kind",
        "Pod",
        "--defaulting",
    ],
    &[
        "create",
        "api",
        "--group",
        "cache",
        "--version",
        "v1alpha1",
        "--kind",
        "Memcached",
        "--image",
        "memcached:1.6",
        "--image-container-port",
        "11211",
        "--run-as-user",
        "1001",
    ],
    &["edit", "--helm"],
];

fn cargo_ok(dir: &Path, args: &[&str]) -> String {
    let (ok, out) = cargo(dir, args);
    assert!(ok, "cargo {args:?} failed in {}:\n{out}", dir.display());
    out
}

/// cargo accepts the project's lock as it is.
fn assert_lock_accepted(dir: &Path, after: &str) {
    let (ok, out) = cargo(
        dir,
        &["metadata", "--locked", "--format-version", "1", "--quiet"],
    );
    assert!(
        ok,
        "after {after}, Cargo.lock does not match the project's Cargo.toml files \
         (refresh templates/Cargo.lock with scripts/refresh-scaffold-lock.sh):\n{out}"
    );
}

fn lock(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("Cargo.lock")).expect("the project has a Cargo.lock")
}

#[test]
fn a_fresh_project_carries_a_lock_cargo_accepts() {
    let (_tmp, dir) = project_dir("guestbook");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    let written = lock(&dir);
    assert!(
        written.contains("name = \"guestbook\"\n")
            && written.contains("name = \"guestbook-api\"\n"),
        "the lock names the project's own packages"
    );
    assert!(
        !written.contains(PLACEHOLDER),
        "the placeholder name is gone"
    );
    assert_lock_accepted(&dir, "opctl init");
    assert_eq!(lock(&dir), written, "cargo changed nothing");
}

#[test]
fn no_later_command_changes_the_lock_of_a_project_with_every_option() {
    let (_tmp, dir) = project_dir("all-options");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    let written = lock(&dir);
    for args in EVERY_OPTION {
        opctl_ok(&dir, args);
        assert_eq!(lock(&dir), written, "opctl {args:?} changed Cargo.lock");
    }
    assert_lock_accepted(&dir, "every option");
    assert_eq!(lock(&dir), written, "cargo changed nothing");
}

/// templates/Cargo.lock in this repository.
fn template_lock() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/Cargo.lock")
}

/// `(name, version)` of every package a Cargo.lock names.
fn locked_packages(lock: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(lock).expect("a Cargo.lock");
    let lock: toml::Table = toml::from_str(&text).expect("Cargo.lock is TOML");
    let packages = lock["package"].as_array().expect("packages");
    packages
        .iter()
        .map(|p| {
            let field = |key: &str| p[key].as_str().expect("name and version").to_owned();
            (field("name"), field("version"))
        })
        .collect()
}

/// The part of a version a caret requirement keeps: releases with the same
/// key are compatible, so cargo may choose either for one requirement.
fn compatibility_key(version: &str) -> String {
    let parts: Vec<&str> = version.split(['.', '-', '+']).take(3).collect();
    match parts.as_slice() {
        ["0", "0", patch] => format!("0.0.{patch}"),
        ["0", minor, _] => format!("0.{minor}"),
        [major, ..] => (*major).to_owned(),
        [] => String::new(),
    }
}

/// Where opctl's own lock and the scaffold's both have a compatible release
/// of a package, it is the same release: tests build generated projects in
/// the workspace's target directory, and one differing release low in the
/// tree (pin-project-lite, cc) recompiled every crate above it for each
/// project. The reference projects are held to the same.
#[test]
fn the_workspace_and_reference_projects_lock_the_scaffold_releases() {
    let scaffold = locked_packages(&template_lock());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for lock in [
        "Cargo.lock",
        "testdata/database/Cargo.lock",
        "testdata/sidecarset/Cargo.lock",
        "testdata/simple-deployment/Cargo.lock",
    ] {
        let differing: Vec<String> = locked_packages(&root.join(lock))
            .into_iter()
            .filter_map(|(name, version)| {
                let key = compatibility_key(&version);
                scaffold
                    .iter()
                    .find(|(n, v)| *n == name && compatibility_key(v) == key && *v != version)
                    .map(|(_, v)| format!("{name} {version} (scaffold: {v})"))
            })
            .collect();
        assert!(
            differing.is_empty(),
            "{lock} locks other releases than templates/Cargo.lock: {differing:?}; \
             align it with `cargo update -p NAME@VERSION --precise SCAFFOLD_VERSION`"
        );
    }
}

#[test]
fn compatibility_keys_follow_caret_requirements() {
    assert_eq!(compatibility_key("1.13.0"), "1");
    assert_eq!(compatibility_key("0.23.48"), "0.23");
    assert_eq!(compatibility_key("0.0.7"), "0.0.7");
    assert_eq!(compatibility_key("2.0.0-rc.1"), "2");
}

#[test]
#[ignore = "builds a scaffold against the newest versions on crates.io; run before a release"]
fn newest_versions() {
    let (_tmp, dir) = project_dir(PLACEHOLDER);
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    for args in EVERY_OPTION {
        opctl_ok(&dir, args);
    }
    // The newest versions every requirement allows, and what is behind.
    std::fs::remove_file(dir.join("Cargo.lock")).expect("remove the lock");
    let resolved = cargo_ok(&dir, &["generate-lockfile", "--verbose"]);
    let behind: Vec<&str> = resolved
        .lines()
        .filter(|line| line.contains("(available:"))
        .collect();
    println!("Behind their newest release:\n  {}", behind.join("\n  "));
    cargo_ok(&dir, &["build", "--locked", "--workspace", "--all-targets"]);
    cargo_ok(
        &dir,
        &[
            "clippy",
            "--locked",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    );
    cargo_ok(&dir, &["test", "--locked", "--workspace"]);
    // Requirements held back on purpose, with the reason in the Cargo.toml
    // template; anything else behind is for a maintainer to look at.
    const HELD_BACK: &[&str] = &["json-patch"];
    let direct = direct_dependencies(&dir);
    let unexplained: Vec<&&str> = behind
        .iter()
        .filter(|line| {
            let name = line.split_whitespace().nth(1).unwrap_or_default();
            direct.iter().any(|d| d == name) && !HELD_BACK.contains(&name)
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "the templates ask for an older major of: {unexplained:?}; move them to the newest \
         (or hold one back in the Cargo.toml template with the reason, and here)"
    );
    if std::env::var_os("OPCTL_REFRESH_LOCK").is_some() {
        std::fs::copy(dir.join("Cargo.lock"), template_lock()).expect("refresh the lock");
        println!("templates/Cargo.lock refreshed");
    }
}

/// The names of the dependencies the project's manifests list directly.
fn direct_dependencies(dir: &Path) -> Vec<String> {
    let out = cargo_ok(
        dir,
        &[
            "metadata",
            "--locked",
            "--format-version",
            "1",
            "--no-deps",
            "--quiet",
        ],
    );
    let metadata: serde_json::Value = serde_json::from_str(&out).expect("cargo metadata JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    packages
        .iter()
        .flat_map(|p| p["dependencies"].as_array().into_iter().flatten())
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect()
}
