//! `opctl envtest run` with faults, driven as a user drives it: the real
//! kubectl receives the injected failure, envtest logs it on one line, and
//! a malformed spec is refused before anything starts.

mod common;

use common::{opctl, opctl_fails, project_dir};

#[test]
fn an_injected_fault_reaches_kubectl_and_is_logged() {
    let (_tmp, dir) = project_dir("faults");
    let run = opctl(
        &dir,
        &[
            "envtest",
            "run",
            "--faults",
            "create@configmaps:500=100%",
            "--faults-seed",
            "1",
            "--",
            "kubectl",
            "create",
            "configmap",
            "c",
        ],
    );
    assert!(!run.ok, "kubectl's create fails: {}", run.stdout);
    assert!(
        run.stderr.contains(
            "Internal error occurred: fault injected by opctl envtest (rule create@configmaps:500=100%)"
        ),
        "{}",
        run.stderr
    );
    let logged: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("opctl_envtest::faults"))
        .collect();
    assert_eq!(logged.len(), 2, "{}", run.stderr);
    assert!(
        logged[0].contains(
            "injecting faults create@configmaps:500=100% with seed 1 (add seed=1 to the spec to repeat this run)"
        ),
        "{}",
        logged[0]
    );
    assert!(
        logged[1].contains(
            "fault 500: answered POST /api/v1/namespaces/default/configmaps with 500 (rule create@configmaps:500=100%)"
        ),
        "{}",
        logged[1]
    );
}

#[test]
fn a_malformed_fault_spec_is_refused_before_the_command_runs() {
    let (_tmp, dir) = project_dir("faults");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    for (spec, names) in [
        ("writes:500=110%", "\"110%\" is not a percentage"),
        ("chaos", "\"chaos\": not a profile (default)"),
        ("watch:cut=soon", "\"soon\" is not a duration"),
    ] {
        let line = opctl_fails(
            &dir,
            &["envtest", "run", "--faults", spec, "--", "sh", "-c", &touch],
        );
        assert!(line.starts_with("error: invalid --faults "), "{line}");
        assert!(line.contains(names), "{line}");
        assert!(!marker.exists(), "the command ran despite {spec:?}");
    }
}
