//! A second, independent client: the Python `kubernetes` package from PyPI,
//! installed by this test into a virtualenv under the cargo target directory
//! (reused when present), runs the scripts in tests/python against envtest;
//! so does Kopf, the Python operator framework, with a tiny operator and
//! with its admission webhook server.
//!
//! Missing python3 or pip fails the test with the reason; it never skips.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use support::http::{Http, HttpRequest};

/// The pinned packages: the client (its 33.x line matches Kubernetes 1.33),
/// and Kopf, the Python operator framework, with certbuilder, which Kopf's
/// webhook server needs to make its self-signed certificate.
const PACKAGES: &[&str] = &["kubernetes==33.1.0", "kopf==1.45.2", "certbuilder==0.14.2"];

fn venv_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv")
}

fn run(cmd: &mut Command, what: &str) -> String {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({:?}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The virtualenv's python, with the pinned packages installed (once per
/// run; an existing venv with the same pins is reused).
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let dir = venv_dir();
        let python = dir.join("bin/python");
        let marker = dir.join("installed.txt");
        let pins = PACKAGES.join(" ");
        if std::fs::read_to_string(&marker).ok().as_deref() == Some(pins.as_str())
            && python.exists()
        {
            return python;
        }
        match Command::new("python3").arg("--version").output() {
            Ok(out) if out.status.success() => {}
            _ => panic!(
                "python3 is not on PATH: the Python-client suite needs Python 3 with venv and pip"
            ),
        }
        run(
            Command::new("python3")
                .args(["-m", "venv", "--clear"])
                .arg(&dir),
            "creating the virtualenv (python3 -m venv; on Debian install python3-venv)",
        );
        run(
            Command::new(&python).args(["-m", "pip", "--version"]),
            "pip in the virtualenv (install python3-pip)",
        );
        run(
            Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(PACKAGES),
            "pip install of the Python kubernetes client and Kopf",
        );
        std::fs::write(&marker, &pins)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", marker.display()));
        python
    })
}

fn create_namespace(base_url: &str, ns: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let body =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let request = HttpRequest::new("POST", "/api/v1/namespaces").json(&body);
    let response = runtime
        .block_on(Http::new(base_url).send(&request, Duration::from_secs(10)))
        .unwrap_or_else(|e| panic!("creating namespace {ns}: {e}"));
    assert_eq!(
        response.status,
        201,
        "creating namespace {ns}: {}",
        response.text()
    );
}

/// Runs tests/python/<script> against the shared server in a new namespace.
fn run_script(script: &str) {
    run_script_on(server::shared(), script);
}

/// A server with the workload simulation (nodes, scheduler, kubelet,
/// workload controllers), as `Config::default()` runs it.
fn simulated() -> &'static server::Background {
    static SIMULATED: OnceLock<server::Background> = OnceLock::new();
    SIMULATED.get_or_init(|| server::background(opctl_envtest::Config::default()))
}

/// Runs tests/python/<script> against `shared` in a new namespace.
fn run_script_on(shared: &server::Background, script: &str) {
    let python = python();
    let ns = server::unique_name("py");
    create_namespace(&shared.base_url, &ns);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let out = run(
        Command::new(python)
            .arg(dir.join(script))
            .current_dir(&dir)
            .env("KUBECONFIG", &shared.kubeconfig)
            .env("TEST_NAMESPACE", &ns)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        &format!("tests/python/{script}"),
    );
    assert!(
        out.contains(": ok"),
        "{script} did not report success:\n{out}"
    );
}

#[test]
fn python_client_crud_and_selectors_on_configmaps() {
    run_script("configmaps.py");
}

#[test]
fn python_client_custom_objects() {
    run_script("custom_objects.py");
}

#[test]
fn python_client_watch_sees_added_modified_deleted() {
    run_script("watch_events.py");
}

#[test]
fn python_client_sees_the_bytes_kube_apiserver_writes() {
    run_script("wire_bytes.py");
}

#[test]
fn python_client_authenticates_with_service_account_tokens() {
    run_script("service_account_tokens.py");
}

#[test]
fn python_client_sees_a_deployment_roll_out_and_a_job_complete() {
    run_script_on(simulated(), "workloads.py");
}

#[test]
fn python_client_sees_a_statefulset_get_bound_claims() {
    run_script_on(simulated(), "statefulset_claims.py");
}

#[test]
fn python_client_sees_the_endpoint_slices_of_a_service() {
    run_script_on(simulated(), "endpoint_slices.py");
}

#[test]
fn a_kopf_operator_handles_a_creation_and_patches_its_status() {
    run_script("kopf_operator.py");
}

#[test]
fn kopfs_webhook_server_with_its_self_signed_certificate_admits_and_refuses() {
    run_script("kopf_webhooks.py");
}
