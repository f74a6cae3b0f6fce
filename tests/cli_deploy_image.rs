//! `opctl create api --image` (kubebuilder's deploy-image plugin): bad input
//! is refused with one line and nothing written; what it scaffolds is
//! recorded in PROJECT, so that replaying the history (or PROJECT alone)
//! and `opctl upgrade` make it again. The full build and e2e run of such a
//! project is in generated_deploy_image.rs.

mod common;

use std::path::Path;
use std::process::Command;

use common::{opctl_fails, opctl_ok, project_dir, snapshot};

const MEMCACHED: [&str; 8] = [
    "create",
    "api",
    "--group",
    "cache",
    "--version",
    "v1alpha1",
    "--kind",
    "Memcached",
];

fn init(dir: &Path) {
    opctl_ok(dir, &["init", "--domain", "example.com"]);
}

/// `create api` of Memcached with `extra`, expected to fail without
/// changing the tree; its one line.
fn refused(dir: &Path, extra: &[&str]) -> String {
    let before = snapshot(dir);
    let mut args = MEMCACHED.to_vec();
    args.extend_from_slice(extra);
    let line = opctl_fails(dir, &args);
    assert_eq!(snapshot(dir), before, "opctl {args:?} changed the tree");
    line
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn bad_deploy_image_flags_are_refused_with_one_line() {
    let (_tmp, dir) = project_dir("memcached-operator");
    init(&dir);
    for (extra, expected) in [
        (
            &["--image-container-port", "11211"][..],
            "--image-container-port sets up the Deployment of --image, but no --image was given; add --image",
        ),
        (
            &["--run-as-user", "1001"][..],
            "--run-as-user sets up the Deployment of --image, but no --image was given",
        ),
        (
            &["--image", "memcached:1.6", "--image-container-port", "0"][..],
            "--image-container-port \"0\" is not a port; give a number from 1 to 65535",
        ),
        (
            &[
                "--image",
                "memcached:1.6",
                "--image-container-port",
                "65536",
            ][..],
            "--image-container-port \"65536\" is not a port; give a number from 1 to 65535",
        ),
        (
            &["--image", "memcached:1.6", "--image-container-port", "http"][..],
            "is not a port",
        ),
        (
            &["--image", "memcached:1.6", "--run-as-user", "-1"][..],
            "--run-as-user -1 is not a user id; give a number from 0 to 2147483647",
        ),
        (
            &["--image", "memcached:1.6", "--run-as-user", "root"][..],
            "--run-as-user \"root\" is not a user id",
        ),
        (
            &["--image", "memcached:1.6", "--resource=false"][..],
            "but --resource=false leaves one out; drop --resource=false or --image",
        ),
        (
            &["--image", "memcached:1.6", "--controller=false"][..],
            "but --controller=false leaves one out; drop --controller=false or --image",
        ),
        (
            &["--image", ""][..],
            "--image is empty; give an image reference such as memcached:1.6",
        ),
        (&["--image", "  "][..], "--image is empty"),
        (
            &["--image", "memcached 1.6"][..],
            "is not an image reference",
        ),
        (&["--image", "mem\"cached"][..], "is not an image reference"),
        (
            &["--image", "memcached:1.6", "--namespaced=false"][..],
            "--image needs a namespaced kind",
        ),
        (
            &["--image", "memcached:1.6", "--finalizer"][..],
            "drop --finalizer or --image",
        ),
        (
            &["--image-container-command", "memcached,-v"][..],
            "--image-container-command sets up the Deployment of --image, but no --image was given",
        ),
        (
            &[
                "--image",
                "memcached:1.6",
                "--image-container-command",
                "memcached,,-v",
            ][..],
            "--image-container-command has an empty part or a control character; give the command and its arguments separated by commas",
        ),
    ] {
        let line = refused(&dir, extra);
        assert!(line.contains(expected), "{extra:?}: {line}");
    }
}

#[test]
fn the_settings_are_recorded_and_replayed() {
    let (_tmp, dir) = project_dir("memcached-operator");
    init(&dir);
    let mut args = MEMCACHED.to_vec();
    args.extend([
        "--image",
        "memcached:1.6",
        "--image-container-port",
        "11211",
        "--run-as-user",
        "1001",
    ]);
    let run = opctl_ok(&dir, &args);
    assert!(
        run.stdout
            .contains("which runs memcached:1.6 as a Deployment"),
        "{}",
        run.stdout
    );
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains(
            "  deployImage:\n    image: memcached:1.6\n    containerPort: 11211\n    runAsUser: 1001\n"
        ),
        "{project}"
    );
    let history = read(&dir, ".opctl/history.yaml");
    assert!(history.contains("image: memcached:1.6"), "{history}");
    let manager = read(&dir, "config/manager/manager.yaml");
    assert!(
        manager.contains("        - name: MEMCACHED_IMAGE\n          value: \"memcached:1.6\"\n"),
        "{manager}"
    );
    let controller = read(&dir, "src/controller/memcached.rs");
    for line in [
        "pub const IMAGE_ENV: &str = \"MEMCACHED_IMAGE\";",
        "pub const DEFAULT_IMAGE: &str = \"memcached:1.6\";",
        "const RUN_AS_USER: i64 = 1001;",
        "// +opctl:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch",
    ] {
        assert!(controller.contains(line), "{line}");
    }
    let types = read(&dir, "api/src/cache/v1alpha1/memcached.rs");
    assert!(types.contains("    pub const DEFAULT_CONTAINER_PORT: i32 = 11211;"));
    let sample = read(&dir, "config/samples/cache_v1alpha1_memcached.yaml");
    assert!(sample.contains("  size: 1\n"), "{sample}");
    assert!(sample.contains("  containerPort: 11211\n"), "{sample}");
    let role = read(&dir, "config/rbac/role.yaml");
    assert!(role.contains("  - deployments\n"), "{role}");

    // The history makes the same project again: nothing to upgrade.
    let run = opctl_ok(&dir, &["upgrade", "--dry-run", "--force"]);
    assert!(run.stdout.contains("up to date"), "{}", run.stdout);
    // So does PROJECT alone, without the history.
    std::fs::remove_file(dir.join(".opctl/history.yaml")).expect("remove the history");
    let run = opctl_ok(&dir, &["upgrade", "--dry-run", "--force"]);
    assert!(run.stdout.contains("up to date"), "{}", run.stdout);

    // A damaged record is refused as such.
    let damaged = project.replace("    containerPort: 11211\n", "    containerPort: 0\n");
    std::fs::write(dir.join("PROJECT"), damaged).expect("write PROJECT");
    let line = opctl_fails(&dir, &["manifests"]);
    assert!(
        line.contains("the PROJECT file is damaged") && line.contains("--image-container-port 0"),
        "{line}"
    );
}

#[test]
fn without_a_port_the_spec_has_an_optional_one() {
    let (_tmp, dir) = project_dir("memcached-operator");
    init(&dir);
    let mut args = MEMCACHED.to_vec();
    args.extend([
        "--image",
        "registry.example.com/cache/memcached@sha256:0123abcd",
    ]);
    opctl_ok(&dir, &args);
    let types = read(&dir, "api/src/cache/v1alpha1/memcached.rs");
    assert!(
        types.contains("pub container_port: Option<i32>,"),
        "{types}"
    );
    let sample = read(&dir, "config/samples/cache_v1alpha1_memcached.yaml");
    assert!(sample.contains("  # containerPort: 8080\n"), "{sample}");
    let controller = read(&dir, "src/controller/memcached.rs");
    assert!(!controller.contains("RUN_AS_USER"), "no --run-as-user");
    assert!(
        !controller.contains("COMMAND"),
        "no --image-container-command"
    );
    let project = read(&dir, "PROJECT");
    assert!(
        project.ends_with(
            "  deployImage:\n    image: registry.example.com/cache/memcached@sha256:0123abcd\n"
        ),
        "{project}"
    );
}

#[test]
fn a_kind_made_with_an_image_gets_webhooks_whose_examples_use_its_metadata() {
    let (_tmp, dir) = project_dir("memcached-operator");
    init(&dir);
    let mut args = MEMCACHED.to_vec();
    args.extend(["--image", "memcached:1.6"]);
    opctl_ok(&dir, &args);
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
    let defaulting = read(&dir, "src/webhook/cache/v1alpha1/memcached_defaulting.rs");
    assert!(
        defaulting.contains("const DEFAULTED_BY: &str"),
        "{defaulting}"
    );
    let validation = read(&dir, "src/webhook/cache/v1alpha1/memcached_validation.rs");
    assert!(validation.contains("const DENY: &str"), "{validation}");
    for text in [&defaulting, &validation] {
        assert!(!text.contains("spec.foo"), "{text}");
    }
    // No conversion between a version made with --image and one without:
    // their specs have nothing in common.
    let mut v1 = MEMCACHED.to_vec();
    v1[5] = "v1";
    v1.push("--controller=false");
    opctl_ok(&dir, &v1);
    let before = snapshot(&dir);
    let line = opctl_fails(
        &dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--conversion",
        ],
    );
    assert!(
        line.contains(
            "cache.example.com/v1alpha1 Memcached was scaffolded with --image and cache.example.com/v1 Memcached without"
        ),
        "{line}"
    );
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn the_help_shows_the_flags_and_an_example() {
    let out = Command::new(common::opctl_bin())
        .args(["create", "api", "--help"])
        .output()
        .expect("opctl runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for text in [
        "--image <IMAGE>",
        "--image-container-port <PORT>",
        "--run-as-user <UID>",
        "--image-container-command <COMMAND>",
        "--image memcached:1.6 --image-container-port 11211 --run-as-user 1001",
    ] {
        assert!(help.contains(text), "{text}:\n{help}");
    }
}
