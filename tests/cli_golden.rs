//! Golden tests: the whole tree opctl generates for a few command sequences
//! (but its `Cargo.lock` and the runtime's copy in `.opctl/runtime/`),
//! compared byte for byte with tests/golden/<sequence>/. Any change to the
//! output shows up here for review; regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test cli_golden`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{opctl_ok, project_dir, snapshot};

fn golden_dir(sequence: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(sequence)
}

/// Runs `commands` in a fresh directory named `project` and compares the tree.
fn check(sequence: &str, project: &str, commands: &[&[&str]]) {
    let (_tmp, dir) = project_dir(project);
    for args in commands {
        opctl_ok(&dir, args);
    }
    let mut actual = snapshot(&dir);
    // The tested lock is the same in every project but for the project's
    // name (tests/scaffold_lock.rs checks it), and the copy of the runtime
    // under .opctl/runtime/ is crates/runtime (tests/vendored_runtime.rs):
    // neither is copied into each tree.
    assert!(
        actual.remove("Cargo.lock").is_some(),
        "{sequence}: no Cargo.lock"
    );
    let copy: Vec<String> = actual
        .keys()
        .filter(|path| path.starts_with(".opctl/runtime/"))
        .cloned()
        .collect();
    assert!(
        copy.contains(&".opctl/runtime/src/lib.rs".to_owned()),
        "{sequence}: no copy of the runtime"
    );
    for path in copy {
        actual.remove(&path);
    }
    let golden = golden_dir(sequence);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&golden);
        for (path, contents) in &actual {
            let target = golden.join(path);
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::write(target, contents).expect("write golden");
        }
        return;
    }
    assert!(
        golden.is_dir(),
        "no golden files for {sequence}: run UPDATE_GOLDEN=1 cargo test --test cli_golden"
    );
    let expected = snapshot(&golden);
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&actual),
        names(&expected),
        "the files of {sequence} differ"
    );
    for (path, contents) in &actual {
        let want = &expected[path];
        if contents != want {
            panic!(
                "{sequence}/{path} differs from the golden copy (UPDATE_GOLDEN=1 to accept):\n--- golden\n{}\n--- generated\n{}",
                String::from_utf8_lossy(want),
                String::from_utf8_lossy(contents)
            );
        }
    }
}

#[test]
fn init_only() {
    check("init", "guestbook", &[&["init", "--domain", "example.com"]]);
}

#[test]
fn namespaced_kind_cluster_kind_and_deployment_controller() {
    check(
        "three-apis",
        "database",
        &[
            &["init", "--domain", "org", "--owner", "Jane \"JD\" Doe"],
            &[
                "create",
                "api",
                "--group",
                "zalando",
                "--version",
                "v1",
                "--kind",
                "Database",
            ],
            &[
                "create",
                "api",
                "--group",
                "apps",
                "--version",
                "v1alpha1",
                "--kind",
                "SidecarSet",
                "--namespaced=false",
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
        ],
    );
}

#[test]
fn namespaced_project_with_two_versions_and_a_pod_controller() {
    check(
        "namespaced",
        "shop",
        &[
            &[
                "init",
                "--domain",
                "example.com",
                "--namespaced",
                "--license",
                "none",
            ],
            &[
                "create",
                "api",
                "--group",
                "core",
                "--version",
                "v1",
                "--kind",
                "Pod",
                "--resource=false",
            ],
            &[
                "create",
                "api",
                "--group",
                "web",
                "--version",
                "v1",
                "--kind",
                "NetworkPolicy",
                "--controller=false",
            ],
            &[
                "create",
                "api",
                "--group",
                "web",
                "--version",
                "v2beta1",
                "--kind",
                "NetworkPolicy",
                // Its controller cleans up outside the cluster.
                "--finalizer",
            ],
        ],
    );
}

#[test]
fn webhooks_for_a_kind_of_the_project_and_for_pods() {
    let webhook = |kind: &'static str, flag: &'static str| -> Vec<&'static str> {
        let (group, version) = match kind {
            "Pod" => ("core", "v1"),
            _ => ("apps", "v1alpha1"),
        };
        vec![
            "create",
            "webhook",
            "--group",
            group,
            "--version",
            version,
            "--kind",
            kind,
            flag,
        ]
    };
    let defaulting = webhook("SidecarSet", "--defaulting");
    let pods = webhook("Pod", "--defaulting");
    let validation = webhook("SidecarSet", "--programmatic-validation");
    check(
        "webhooks",
        "sidecarset",
        &[
            &["init", "--domain", "kruise.io"],
            &[
                "create",
                "api",
                "--group",
                "apps",
                "--version",
                "v1alpha1",
                "--kind",
                "SidecarSet",
                "--namespaced=false",
            ],
            &defaulting,
            &pods,
            // The other kind of webhook for SidecarSet, added later.
            &validation,
        ],
    );
}

#[test]
fn helm_chart_turned_on_then_a_webhook_added() {
    check(
        "helm",
        "database",
        &[
            &["init", "--domain", "org"],
            &[
                "create",
                "api",
                "--group",
                "zalando",
                "--version",
                "v1",
                "--kind",
                "Database",
            ],
            &["edit", "--helm"],
            // The chart follows: webhook Service, certificate and configurations.
            &[
                "create",
                "webhook",
                "--group",
                "zalando",
                "--version",
                "v1",
                "--kind",
                "Database",
                "--defaulting",
                "--programmatic-validation",
            ],
        ],
    );
}

#[test]
fn two_versions_of_a_kind_converting_through_the_hub() {
    let api = |version: &'static str, controller: &'static str| -> Vec<&'static str> {
        vec![
            "create",
            "api",
            "--group",
            "zalando",
            "--version",
            version,
            "--kind",
            "Database",
            controller,
        ]
    };
    let v1 = api("v1", "--controller=true");
    let v2 = api("v2", "--controller=false");
    check(
        "conversion",
        "database",
        &[
            &["init", "--domain", "zalando.org"],
            &v1,
            &v2,
            // v2 is the hub; v1 (the storage version, marked) is its spoke.
            &[
                "create",
                "webhook",
                "--group",
                "zalando",
                "--version",
                "v2",
                "--kind",
                "Database",
                "--conversion",
            ],
        ],
    );
}

#[test]
fn a_kind_that_deploys_an_image_with_a_helm_chart() {
    check(
        "deploy-image",
        "memcached-operator",
        &[
            &["init", "--domain", "example.com"],
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
                "--image-container-command",
                "memcached,-m=64,-o,modern,-v",
                "--run-as-user",
                "1001",
            ],
            &["edit", "--helm"],
        ],
    );
}
