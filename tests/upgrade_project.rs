//! `opctl upgrade` of a project made by an earlier opctl: testdata/upgrade/
//! memcached was scaffolded with the layout `opctl.rs/v1` (one crate, the
//! API types under src/api) and changed by hand in its types and its
//! reconciler. A copy is upgraded to the current layout (a workspace with
//! the types in api/, the manager runtime a dependency vendored under
//! .opctl/runtime instead of a copy in src/manager/): the hand changes
//! survive in their new places, the result builds, is clippy-clean and
//! passes its unit and e2e tests, and a hand change that overlaps the
//! templates' is reported as a conflict.

mod common;

use std::path::Path;
use std::process::Command;

use common::{opctl_bin, project_dir, run_built, snapshot};

/// The old project and where each hand change lives after the upgrade.
const OLD_PROJECT: &str = "testdata/upgrade/memcached";
const TYPES: &str = "api/src/cache/v1alpha1/memcached.rs";
const TYPES_BEFORE: &str = "src/api/cache/v1alpha1/memcached.rs";
const CONTROLLER: &str = "src/controller/memcached.rs";

/// A committed copy of the old project in a fresh directory.
fn old_project() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project_dir("memcached");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(OLD_PROJECT);
    for (rel, bytes) in snapshot(&from) {
        let dest = dir.join(&rel);
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
        std::fs::write(dest, bytes).expect("copy");
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by an earlier opctl"]);
    (tmp, dir)
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The version of each package of a lock file that has one version only.
fn versions(lock: &str) -> std::collections::BTreeMap<String, String> {
    let mut seen: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for package in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            let line = package
                .lines()
                .find(|l| l.starts_with(&format!("{key} = ")));
            line.map(|l| l[key.len() + 3..].trim_matches('"').to_owned())
        };
        if let (Some(name), Some(version)) = (field("name"), field("version")) {
            seen.entry(name).or_default().push(version);
        }
    }
    seen.into_iter()
        .filter(|(_, versions)| versions.len() == 1)
        .map(|(name, mut versions)| (name, versions.remove(0)))
        .collect()
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn an_old_layout_is_upgraded_and_keeps_its_hand_changes() {
    let (_tmp, dir) = old_project();
    // Other commands send the user to `opctl upgrade`.
    let out = Command::new(opctl_bin())
        .arg("manifests")
        .current_dir(&dir)
        .output()
        .expect("opctl runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("run `opctl upgrade`"),
        "{err}"
    );

    let plan = run_built(&dir, opctl_bin(), &["upgrade", "--dry-run"]);
    for line in [
        format!("removed      {TYPES_BEFORE}"),
        "removed      src/crdgen.rs".to_owned(),
        "created      api/Cargo.toml".to_owned(),
        "updated      Cargo.toml".to_owned(),
        // The copy of the runtime goes; the crate is vendored instead.
        "removed      src/manager/cache.rs".to_owned(),
        "removed      src/manager/webhook/mod.rs".to_owned(),
        "updated      src/manager/mod.rs".to_owned(),
        "created      .opctl/runtime/Cargo.toml".to_owned(),
        "created      .opctl/runtime/src/lib.rs".to_owned(),
    ] {
        assert!(plan.contains(&line), "{line}:\n{plan}");
    }
    assert!(plan.contains(&format!(" {TYPES}\n")), "{plan}");
    assert!(!plan.contains("CONFLICT"), "{plan}");

    let out = run_built(&dir, opctl_bin(), &["upgrade"]);
    assert!(out.contains("Upgraded."), "{out}");
    assert!(read(&dir, "PROJECT").contains("layout: opctl.rs/v4"));
    assert!(!dir.join("src/api").exists() && !dir.join("src/crdgen.rs").exists());
    let manager = std::fs::read_dir(dir.join("src/manager")).expect("src/manager");
    let manager: Vec<String> = manager
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(manager, ["mod.rs"], "only the glue is left of the copy");
    assert!(read(&dir, "src/manager/mod.rs").contains("pub use opctl_runtime::*;"));
    assert!(read(&dir, "Cargo.toml").contains("opctl-runtime = { path = \".opctl/runtime\" }"));
    let types = read(&dir, TYPES);
    assert!(types.contains("pub size: Option<i32>,"), "{types}");
    assert!(read(&dir, CONTROLLER).contains("\"desired size\""));
    let crd = read(&dir, "config/crd/bases/cache.example.com_memcacheds.yaml");
    assert!(
        crd.contains("size:"),
        "the CRD has the hand-written field:\n{crd}"
    );
    let again = run_built(&dir, opctl_bin(), &["upgrade", "--dry-run"]);
    assert!(again.contains("up to date"), "{again}");
    // The lock moved to the versions this opctl tested, for every package
    // the scaffold has; cargo accepts it as it is.
    let tested = versions(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/Cargo.lock"),
        )
        .expect("templates/Cargo.lock"),
    );
    let upgraded = versions(&read(&dir, "Cargo.lock"));
    for (name, version) in &upgraded {
        if let Some(want) = tested.get(name) {
            assert_eq!(version, want, "{name} in the upgraded Cargo.lock");
        }
    }
    assert!(
        upgraded.contains_key("aws-lc-rs"),
        "the new provider is locked"
    );

    run_built(&dir, "cargo", &["fmt", "--all", "--check"]);
    run_built(
        &dir,
        "cargo",
        &[
            "clippy",
            "--locked",
            "--all-targets",
            "--workspace",
            "--",
            "-D",
            "warnings",
        ],
    );
    let opctl = format!("OPCTL={}", opctl_bin());
    run_built(&dir, "make", &["test", &opctl]);
    let e2e = run_built(&dir, "make", &["test-e2e", &opctl]);
    assert!(
        e2e.contains("the_validating_webhook_of_memcached_v1alpha1_is_called ... ok"),
        "{e2e}"
    );
}

#[test]
fn a_hand_change_where_the_templates_changed_is_a_conflict() {
    let (_tmp, dir) = old_project();
    // src/lib.rs is the user's; the current templates rewrote its first lines.
    let lib = read(&dir, "src/lib.rs");
    let (first, rest) = lib.split_once('\n').expect("lines");
    assert!(first.starts_with("//! memcached:"), "{first}");
    std::fs::write(
        dir.join("src/lib.rs"),
        format!("//! memcached: the team's cache operator.\n{rest}"),
    )
    .expect("write");
    git(&dir, &["commit", "-qam", "a hand change"]);

    // A merge with conflicts fails, as `git merge` does, naming the files.
    let upgrade = common::opctl(&dir, &["upgrade"]);
    assert!(!upgrade.ok, "an upgrade with a conflict exits non-zero");
    assert!(
        upgrade.stdout.contains("CONFLICT     src/lib.rs"),
        "{}",
        upgrade.stdout
    );
    assert!(
        upgrade
            .stderr
            .starts_with("error: 1 file needs your hand: resolve the conflict markers")
            && upgrade
                .stderr
                .contains("in src/lib.rs, then run `opctl manifests`"),
        "{}",
        upgrade.stderr
    );
    let lib = read(&dir, "src/lib.rs");
    for part in [
        "<<<<<<<",
        "the team's cache operator",
        "=======",
        "(`api`, the crate in api/)",
        ">>>>>>>",
    ] {
        assert!(lib.contains(part), "{part}:\n{lib}");
    }
    // The rest went through: the types moved with their hand change.
    assert!(read(&dir, TYPES).contains("pub size: Option<i32>,"));
}
