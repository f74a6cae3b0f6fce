//! A project made with `opctl create api --image` (kubebuilder's
//! deploy-image plugin) works: scaffolded in a fresh directory, `opctl
//! manifests` (twice: nothing changes), then in the project `cargo fmt
//! --all --check`, `cargo clippy --workspace --all-targets -- -D warnings`,
//! `make test` (the types' and the controller's unit tests) and `make
//! test-e2e` under `opctl envtest run`: the Memcached's Deployment is
//! created with its replicas, image, port and security context, follows a
//! new `size`, and the Memcached reports `Available=True`; its defaulting
//! and validating webhooks (examples on the metadata) are called. A second
//! kind without `--image-container-port` and `--run-as-user` builds beside it.
//!
//! It shares the workspace's target directory with the other generated and
//! reference projects, so their dependencies are built once.

mod common;

use std::path::Path;

use common::{opctl_bin, opctl_ok, project_dir, run_built, snapshot};

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_project_that_deploys_an_image_builds_and_passes_its_e2e_tests() {
    let (_tmp, dir) = project_dir("memcached-operator");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    opctl_ok(
        &dir,
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
    );
    opctl_ok(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Busybox",
            "--image",
            "busybox:1.36",
        ],
    );
    opctl_ok(
        &dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--defaulting",
            "--programmatic-validation",
        ],
    );
    run_built(&dir, opctl_bin(), &["manifests"]);
    let crd = read(&dir, "config/crd/bases/cache.example.com_memcacheds.yaml");
    for field in ["default: 11211", "maximum: 5.0", "minimum: 1.0"] {
        assert!(crd.contains(field), "{field}:\n{crd}");
    }
    let role = read(&dir, "config/rbac/role.yaml");
    assert!(role.contains("  - deployments\n"), "{role}");
    let before = snapshot(&dir);
    run_built(&dir, opctl_bin(), &["manifests"]);
    assert_eq!(
        snapshot(&dir),
        before,
        "a second opctl manifests changed files"
    );

    run_built(&dir, "cargo", &["fmt", "--all", "--check"]);
    run_built(
        &dir,
        "cargo",
        &[
            "clippy",
            "--all-targets",
            "--workspace",
            "--",
            "-D",
            "warnings",
        ],
    );
    let opctl = format!("OPCTL={}", opctl_bin());
    let unit = run_built(&dir, "make", &["test", &opctl]);
    for test in [
        "controller::memcached::tests::the_deployment_runs_the_image_with_the_size_and_is_owned ... ok",
        "controller::memcached::tests::the_status_follows_the_rollout ... ok",
        "cache::v1alpha1::memcached::tests::the_size_is_bounded_and_defaulted_by_the_crd ... ok",
        "cache::v1alpha1::memcached::tests::the_sample_is_valid ... ok",
        "cache::v1alpha1::busybox::tests::the_sample_is_valid ... ok",
        "webhook::cache::v1alpha1::memcached_defaulting::tests::the_object_is_marked ... ok",
        "webhook::cache::v1alpha1::memcached_validation::tests::an_invalid_object_is_denied_with_a_message ... ok",
    ] {
        assert!(unit.contains(test), "{test}:\n{unit}");
    }
    let e2e = run_built(&dir, "make", &["test-e2e", &opctl]);
    for test in [
        "a_memcached_runs_its_deployment_and_follows_its_size ... ok",
        "a_busybox_runs_its_deployment_and_follows_its_size ... ok",
        "the_defaulting_webhook_of_memcached_v1alpha1_is_called ... ok",
        "the_validating_webhook_of_memcached_v1alpha1_is_called ... ok",
    ] {
        assert!(e2e.contains(test), "{test}:\n{e2e}");
    }
}
