//! Controllers scaffolded for built-in kinds work under `opctl envtest`: one
//! project with a controller (`create api --resource=false`) for every kind
//! opctl offers of the API groups envtest added beyond the workloads
//! (policy, networking, autoscaling, discovery, scheduling, storage, node,
//! and PersistentVolume/PersistentVolumeClaim), and both webhooks for
//! Ingress; `opctl manifests`, then `make test-e2e`. Each kind's generated
//! e2e test creates the kind's sample (src/project/builtin_samples.rs),
//! waits for its controller to reconcile it (as a ServiceAccount holding
//! only the role `opctl manifests` wrote) and checks the reconcile cost no
//! API request.
//!
//! One project, one build, sharing the workspace's target directory with
//! generated_project.rs and the reference projects: 254 to 333 s on 2
//! cores shared with other builds, nearly all of it compiling the project
//! (its e2e tests take 14 s).

mod common;

use std::path::Path;
use std::process::Command;

use heck::ToSnakeCase;

use common::{build_env, opctl_ok, project_dir};

/// The kinds, as `create api` names them; autoscaling/v1 is served but not
/// offered (a controller watches the preferred version, v2).
const KINDS: &[(&str, &str, &str)] = &[
    ("core", "v1", "PersistentVolume"),
    ("core", "v1", "PersistentVolumeClaim"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("discovery", "v1", "EndpointSlice"),
    ("networking", "v1", "Ingress"),
    ("networking", "v1", "IngressClass"),
    ("networking", "v1", "NetworkPolicy"),
    ("node", "v1", "RuntimeClass"),
    ("policy", "v1", "PodDisruptionBudget"),
    ("scheduling", "v1", "PriorityClass"),
    ("storage", "v1", "CSIDriver"),
    ("storage", "v1", "CSINode"),
    ("storage", "v1", "CSIStorageCapacity"),
    ("storage", "v1", "StorageClass"),
    ("storage", "v1", "VolumeAttachment"),
];

/// The generated e2e test of a controller for `kind`, passed.
fn test_name(kind: &str) -> String {
    format!("a_{}_is_reconciled ... ok", kind.to_snake_case())
}

/// Runs `make target` in `dir` with the workspace's opctl; its output.
fn make(dir: &Path, target: &str) -> String {
    let out = Command::new("make")
        .arg(target)
        .arg(format!("OPCTL={}", common::opctl_bin()))
        .current_dir(dir)
        .envs(build_env())
        .output()
        .expect("make runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "make {target}:\n{text}");
    text
}

#[test]
fn controllers_of_built_in_kinds_reconcile_under_envtest() {
    let (_tmp, dir) = project_dir("builtin-kinds");
    opctl_ok(&dir, &["init", "--domain", "example.com"]);
    for (group, version, kind) in KINDS {
        opctl_ok(
            &dir,
            &[
                "create",
                "api",
                "--group",
                group,
                "--version",
                version,
                "--kind",
                kind,
                "--controller",
                "--resource=false",
            ],
        );
    }
    opctl_ok(
        &dir,
        &[
            "create",
            "webhook",
            "--group",
            "networking",
            "--version",
            "v1",
            "--kind",
            "Ingress",
            "--defaulting",
            "--programmatic-validation",
        ],
    );
    let out = Command::new(common::opctl_bin())
        .arg("manifests")
        .current_dir(&dir)
        .envs(build_env())
        .output()
        .expect("opctl runs");
    assert!(
        out.status.success(),
        "opctl manifests:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Every kind's controller, the webhooks, and the tests `opctl init`
    // writes. (Not under injected faults: generated_project.rs runs those,
    // and these controllers make no writes a fault could hit.)
    let mut expected: Vec<String> = KINDS.iter().map(|(_, _, k)| test_name(k)).collect();
    expected.extend(
        [
            "the_defaulting_webhook_of_ingress_v1_is_called ... ok",
            "the_validating_webhook_of_ingress_v1_is_called ... ok",
            "the_manager_serves_probes_and_metrics_and_stops_on_sigterm ... ok",
            "a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops ... ok",
        ]
        .map(String::from),
    );
    let passed = format!("{} passed; 0 failed", expected.len());
    let text = make(&dir, "test-e2e");
    for test in &expected {
        assert!(text.contains(test.as_str()), "{test}:\n{text}");
    }
    assert!(text.contains(&passed), "{passed}:\n{text}");
}
