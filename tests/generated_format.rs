//! Generated Rust is rustfmt-clean whatever the names: the shortest and the
//! longest accepted names, every built-in kind, namespaced and not, each
//! with controllers and webhooks, and kinds made with `--image`. (rustfmt
//! only, no compile: the full build is in generated_project.rs.)

mod common;

use std::path::Path;
use std::process::Command;

use common::{opctl_ok, project_dir, snapshot};

fn assert_rustfmt_clean(dir: &Path) {
    let files: Vec<String> = snapshot(dir)
        .into_keys()
        .filter(|p| p.ends_with(".rs"))
        // The pristine copies are the user files as generated, checked
        // where they live; rustfmt cannot resolve their modules.
        .filter(|p| !p.starts_with(".opctl/"))
        .collect();
    assert!(!files.is_empty());
    let out = Command::new("rustfmt")
        .args(["--edition", "2024", "--check"])
        .args(&files)
        .current_dir(dir)
        .output()
        .expect("rustfmt is installed (rustup component add rustfmt)");
    assert!(
        out.status.success(),
        "generated code in {} is not rustfmt-clean:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `opctl create webhook` with both kinds of webhook.
fn webhooks(dir: &Path, group: &str, version: &str, kind: &str) {
    opctl_ok(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            group,
            "--version",
            version,
            "--kind",
            kind,
            "--defaulting",
            "--programmatic-validation",
        ],
    );
}

fn api(dir: &Path, group: &str, version: &str, kind: &str, extra: &[&str]) {
    let mut args = vec![
        "create",
        "api",
        "--group",
        group,
        "--version",
        version,
        "--kind",
        kind,
    ];
    args.extend_from_slice(extra);
    opctl_ok(dir, &args);
}

#[test]
fn the_longest_names() {
    let (_tmp, dir) = project_dir("x");
    let project = format!("{}-{}", "p".repeat(20), "q".repeat(19));
    let group = "g".repeat(40);
    let kind = format!("K{}", "k".repeat(31));
    let other = format!("Z{}", "k".repeat(31));
    opctl_ok(
        &dir,
        &[
            "init",
            "--domain",
            "a-rather-long-domain-name.example.com",
            "--project-name",
            &project,
        ],
    );
    api(&dir, &group, "v1alpha1", &kind, &[]);
    api(&dir, &group, "v2beta1", &kind, &["--controller=false"]);
    api(&dir, &group, "v1alpha1", &other, &["--namespaced=false"]);
    let deployed = format!("Y{}", "k".repeat(31));
    let image = format!(
        "registry.example.com/{}/{}:1.0",
        "t".repeat(40),
        "i".repeat(60)
    );
    api(
        &dir,
        &group,
        "v1alpha1",
        &deployed,
        &[
            "--image",
            &image,
            "--image-container-port",
            "65535",
            "--run-as-user",
            "2147483647",
        ],
    );
    api(
        &dir,
        "admissionregistration",
        "v1",
        "ValidatingWebhookConfiguration",
        &["--resource=false"],
    );
    webhooks(&dir, &group, "v1alpha1", &kind);
    webhooks(&dir, &group, "v2beta1", &kind);
    webhooks(&dir, &group, "v1alpha1", &other);
    webhooks(&dir, "autoscaling", "v2", "HorizontalPodAutoscaler");
    webhooks(&dir, "core", "v1", "PersistentVolumeClaim");
    assert_rustfmt_clean(&dir);
}

#[test]
fn the_shortest_names() {
    let (_tmp, dir) = project_dir("x");
    opctl_ok(&dir, &["init", "--domain", "io", "--project-name", "a"]);
    api(&dir, "b", "v1", "C", &[]);
    api(&dir, "b", "v2", "C", &["--controller=false"]);
    api(&dir, "b", "v1", "D", &["--namespaced=false"]);
    api(&dir, "b", "v1", "E", &["--image", "e"]);
    api(
        &dir,
        "b",
        "v1",
        "F",
        &["--image", "f", "--image-container-port", "1"],
    );
    api(&dir, "core", "v1", "Pod", &["--resource=false"]);
    webhooks(&dir, "b", "v1", "C");
    webhooks(&dir, "b", "v1", "D");
    webhooks(&dir, "core", "v1", "Pod");
    assert_rustfmt_clean(&dir);
}

#[test]
fn every_built_in_kind() {
    let (_tmp, dir) = project_dir("builtins");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    let kinds = [
        (
            "admissionregistration",
            "v1",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration",
            "v1",
            "ValidatingWebhookConfiguration",
        ),
        ("apiextensions", "v1", "CustomResourceDefinition"),
        ("apps", "v1", "DaemonSet"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "ReplicaSet"),
        ("apps", "v1", "StatefulSet"),
        ("autoscaling", "v2", "HorizontalPodAutoscaler"),
        ("batch", "v1", "CronJob"),
        ("batch", "v1", "Job"),
        ("coordination", "v1", "Lease"),
        ("core", "v1", "ConfigMap"),
        ("core", "v1", "Endpoints"),
        ("core", "v1", "Event"),
        ("core", "v1", "Namespace"),
        ("core", "v1", "Node"),
        ("core", "v1", "PersistentVolume"),
        ("core", "v1", "PersistentVolumeClaim"),
        ("core", "v1", "Pod"),
        ("core", "v1", "Secret"),
        ("core", "v1", "Service"),
        ("core", "v1", "ServiceAccount"),
        ("discovery", "v1", "EndpointSlice"),
        ("networking", "v1", "Ingress"),
        ("networking", "v1", "IngressClass"),
        ("networking", "v1", "NetworkPolicy"),
        ("policy", "v1", "PodDisruptionBudget"),
        ("rbac", "v1", "ClusterRole"),
        ("rbac", "v1", "ClusterRoleBinding"),
        ("rbac", "v1", "Role"),
        ("rbac", "v1", "RoleBinding"),
        ("scheduling", "v1", "PriorityClass"),
        ("storage", "v1", "StorageClass"),
    ];
    for (group, version, kind) in kinds {
        api(&dir, group, version, kind, &["--resource=false"]);
        if group != "admissionregistration" {
            webhooks(&dir, group, version, kind);
        }
    }
    // events.k8s.io/v1 Event shares the module name `event` with core/v1 Event.
    let line = common::opctl_fails(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "events",
            "--version",
            "v1",
            "--kind",
            "Event",
            "--resource=false",
        ],
    );
    assert!(
        line.contains(
            "src/controller/event.rs already holds the controller of Event in group core"
        ) && line.contains("write the controller of Event in group events by hand"),
        "{line}"
    );
    assert_rustfmt_clean(&dir);
    let role = std::fs::read_to_string(dir.join("config/rbac/role.yaml")).expect("role");
    assert!(role.contains("  - rbac.authorization.k8s.io\n"), "{role}");
    assert!(role.contains("- apiGroups:\n  - \"\"\n"), "{role}");
}

#[test]
fn a_namespaced_project() {
    let (_tmp, dir) = project_dir("shop");
    opctl_ok(&dir, &["init", "--domain", "example.com", "--namespaced"]);
    api(&dir, "web", "v1", "Guestbook", &[]);
    api(&dir, "core", "v1", "ConfigMap", &["--resource=false"]);
    webhooks(&dir, "web", "v1", "Guestbook");
    webhooks(&dir, "core", "v1", "Namespace");
    assert_rustfmt_clean(&dir);
}

/// The `opctl init` and `opctl create` lines of the README's walkthrough, as
/// a new user types them (`opctl manifests` builds the project, which
/// generated_project.rs covers).
#[test]
fn the_readme_walkthrough() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let walkthrough = readme
        .split("## Walkthrough")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has a Walkthrough section");
    let commands: Vec<Vec<&str>> = walkthrough
        .lines()
        .map(|line| line.split(" #").next().unwrap_or_default().trim())
        .filter(|line| line.starts_with("opctl init") || line.starts_with("opctl create"))
        .map(|line| line.split_whitespace().skip(1).collect())
        .collect();
    assert!(commands.len() >= 6, "walkthrough commands: {commands:?}");
    let (_tmp, dir) = project_dir("guestbook");
    for args in &commands {
        opctl_ok(&dir, args);
    }
    assert_rustfmt_clean(&dir);
}
