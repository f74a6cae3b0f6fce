//! The reference projects in `testdata/` are operators made by opctl. For each
//! one this proves three things:
//! - it is what opctl generates: replaying the commands recorded in
//!   `opctl-commands.sh` reproduces every scaffold-owned file byte for byte;
//! - its derived manifests are current: `opctl manifests` changes nothing;
//! - it works: it is fmt- and clippy-clean and its unit tests and its e2e
//!   tests (under `opctl envtest`, through `make test-e2e`, and again under
//!   injected API faults through `make test-e2e-faults`) pass.
//!
//! All builds share the workspace's target directory.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use common::{build_env, opctl_bin, opctl_ok, project_dir, snapshot};

/// The file in each reference project that records how opctl made it.
const COMMANDS_FILE: &str = "opctl-commands.sh";

fn reference_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// The `opctl ...` lines of the commands file, split into arguments
/// (the file is a plain shell script; its commands need no quoting).
fn recorded_commands(project: &Path) -> Vec<Vec<String>> {
    let path = project.join(COMMANDS_FILE);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} must exist: {e}", path.display()));
    let commands: Vec<Vec<String>> = text
        .lines()
        .map(str::trim)
        .filter_map(|line| line.strip_prefix("opctl "))
        .map(|args| args.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert!(
        commands
            .first()
            .is_some_and(|c| c.first().is_some_and(|a| a == "init")),
        "{} must start with `opctl init`",
        path.display()
    );
    commands
}

/// Paths (relative) that `opctl files --owner OWNER` lists for the project in `dir`.
fn files_owned_by(dir: &Path, owner: &str) -> BTreeSet<String> {
    opctl_ok(dir, &["files", "--owner", owner])
        .stdout
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The reference project and the trees these tests make from it build a
/// crate of the same name in the shared target directory, where cargo tells
/// the copies apart only by the modification times of their sources: the
/// library of a regenerated tree (with the scaffold's example types) would
/// pass for the reference's, which then fails to compile against it. So the
/// builds take turns, and each first marks its tree's sources as the newest.
static BUILDS: Mutex<()> = Mutex::new(());

/// Waits for this test's turn to build the project in `dir`.
fn build_turn(dir: &Path) -> MutexGuard<'static, ()> {
    let turn = BUILDS.lock().unwrap_or_else(PoisonError::into_inner);
    let now = SystemTime::now();
    for rel in snapshot(dir).keys() {
        let path = dir.join(rel);
        let touched = std::fs::File::options()
            .append(true)
            .open(&path)
            .and_then(|file| file.set_modified(now));
        touched.unwrap_or_else(|e| panic!("cannot touch {}: {e}", path.display()));
    }
    turn
}

fn regenerates_byte_for_byte(name: &str) {
    let reference = reference_dir(name);
    let (_tmp, fresh) = project_dir(name);
    let _turn = build_turn(&fresh);
    for args in recorded_commands(&reference) {
        // `opctl manifests` builds the project: in the shared target directory.
        let run = Command::new(opctl_bin())
            .args(&args)
            .current_dir(&fresh)
            .envs(build_env())
            .output()
            .expect("opctl runs");
        assert!(
            run.status.success(),
            "opctl {args:?} failed:\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    let scaffold_owned = files_owned_by(&fresh, "scaffold");
    assert!(
        !scaffold_owned.is_empty(),
        "opctl lists no scaffold-owned files"
    );
    assert_eq!(
        scaffold_owned,
        files_owned_by(&reference, "scaffold"),
        "{name}: the committed PROJECT describes a different scaffold than the recorded commands"
    );
    let mut differing = Vec::new();
    for rel in &scaffold_owned {
        let regenerated = std::fs::read(fresh.join(rel));
        let committed = std::fs::read(reference.join(rel));
        match (regenerated, committed) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(_), Ok(_)) => differing.push(format!("{rel}: contents differ")),
            (_, Err(_)) => differing.push(format!("{rel}: missing from testdata/{name}")),
            (Err(_), _) => differing.push(format!("{rel}: not regenerated")),
        }
    }
    assert!(
        differing.is_empty(),
        "testdata/{name} differs from what its recorded commands generate \
         (scaffold-owned files must not be edited by hand):\n  {}",
        differing.join("\n  ")
    );
}

/// A reference project takes opctl-runtime from `../../crates/runtime`:
/// points a copy of one elsewhere at the crate by its absolute path.
fn runtime_from_repository(copy: &Path) {
    let manifest = copy.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("Cargo.toml");
    let relative = "path = \"../../crates/runtime\"";
    assert!(
        text.contains(relative),
        "{}: {relative}",
        manifest.display()
    );
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/runtime");
    let absolute = format!("path = {:?}", runtime.display().to_string());
    std::fs::write(&manifest, text.replace(relative, &absolute)).expect("write Cargo.toml");
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in snapshot(from) {
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().expect("file has a parent")).expect("mkdir");
        std::fs::write(dest, bytes).expect("write copy");
    }
}

fn manifests_are_current(name: &str) {
    let reference = reference_dir(name);
    let (_tmp, copy) = project_dir(name);
    copy_tree(&reference, &copy);
    runtime_from_repository(&copy);
    let before = snapshot(&copy);
    let _turn = build_turn(&copy);
    let run = Command::new(opctl_bin())
        .arg("manifests")
        .current_dir(&copy)
        .envs(build_env())
        .output()
        .expect("opctl manifests runs");
    assert!(
        run.status.success(),
        "opctl manifests failed in testdata/{name}:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let after = snapshot(&copy);
    let changed: Vec<&String> = after
        .iter()
        .filter(|(rel, bytes)| before.get(*rel) != Some(*bytes))
        .map(|(rel, _)| rel)
        .chain(before.keys().filter(|rel| !after.contains_key(*rel)))
        .filter(|rel| rel.as_str() != "Cargo.lock")
        .collect();
    assert!(
        changed.is_empty(),
        "testdata/{name}: `opctl manifests` changed {changed:?}; run it there and commit the result"
    );
}

/// Runs `program args` in the reference project with the shared target dir.
fn run_in(dir: &Path, program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(build_env())
        .status()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        status.success(),
        "`{program} {}` failed in {}",
        args.join(" "),
        dir.display()
    );
}

fn builds_and_passes_its_tests(name: &str) {
    let dir = reference_dir(name);
    let opctl = format!("OPCTL={}", opctl_bin());
    let _turn = build_turn(&dir);
    // Both crates of the workspace: the manager and its API types (api/).
    run_in(&dir, "cargo", &["fmt", "--all", "--check"]);
    run_in(
        &dir,
        "cargo",
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
    run_in(&dir, "make", &["test", &opctl]);
    run_in(&dir, "make", &["test-e2e", &opctl]);
    // The same tests with API faults injected into the manager's requests.
    run_in(&dir, "make", &["test-e2e-faults", &opctl]);
}

macro_rules! reference_project {
    ($module:ident, $dir:literal) => {
        mod $module {
            #[test]
            fn scaffold_owned_files_regenerate_byte_for_byte() {
                super::regenerates_byte_for_byte($dir);
            }

            #[test]
            fn manifests_are_current() {
                super::manifests_are_current($dir);
            }

            #[test]
            fn builds_lints_and_passes_unit_and_e2e_tests() {
                super::builds_and_passes_its_tests($dir);
            }
        }
    };
}

/// `N` free local ports, distinct from each other: every port is held
/// until all are picked (a port released at once can be picked again).
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [std::net::TcpListener; N] = std::array::from_fn(|_| {
        std::net::TcpListener::bind("127.0.0.1:0").expect("a free local port")
    });
    listeners.map(|listener| listener.local_addr().expect("its address").port())
}

/// What the database README says for a real cluster, and what its e2e
/// harness expects there, agree: with the CRD installed by `make install`
/// (its conversion pointed at the deployed webhook Service) and the
/// operator deployed and watching only its own namespace, the conversion
/// tests pass with `E2E_USE_EXISTING_CLUSTER=true`, their own managers
/// running without a webhook server. Under `opctl envtest` the deployed
/// operator is its manager binary run here with `--webhook-self-signed`
/// (cert-manager's part: a certificate for the Service, its CA in the CRD)
/// behind the webhook Service of config/default, whose calls envtest sends
/// to 127.0.0.1:<targetPort>. And without that Service the harness stops
/// at once, naming it.
#[test]
fn database_e2e_tests_against_a_cluster_with_the_operator_deployed() {
    let dir = reference_dir("database");
    let _turn = build_turn(&dir);
    run_in(&dir, "cargo", &["build", "--locked", "--bin", "database"]);
    let (_tmp, scratch) = project_dir("deployed");
    let script = r#"set -eu
make install OPCTL="$OPCTL" >/dev/null
kubectl create namespace database-system >/dev/null
# The Service as config/default names it, its targetPort the port of the
# manager standing in for the deployed one.
sed -e 's/name: webhook-service/name: database-webhook-service/' \
    -e 's/namespace: system/namespace: database-system/' \
    -e "s/targetPort: 9443/targetPort: $WEBHOOK_PORT/" config/webhook/service.yaml |
  kubectl apply -f - >/dev/null
"$CARGO_TARGET_DIR/debug/database" --namespace database-system \
  --webhook-self-signed --webhook-bind-address "127.0.0.1:$WEBHOOK_PORT" \
  --webhook-cert-dir "$SCRATCH/certs" \
  --health-probe-bind-address "127.0.0.1:$HEALTH_PORT" \
  --metrics-bind-address "127.0.0.1:$METRICS_PORT" --metrics-secure=false \
  2>"$SCRATCH/deployed.log" &
deployed=$!
trap 'kill $deployed' EXIT
ready=
for _ in $(seq 300); do
  if curl -sf "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null; then ready=1; break; fi
  sleep 0.1
done
[ -n "$ready" ] || { echo "the deployed manager never got ready"; cat "$SCRATCH/deployed.log"; exit 1; }
E2E_USE_EXISTING_CLUSTER=true cargo test --locked --test e2e -- --ignored --test-threads=1 \
  the_crd_is_installed_and_established a_database_created_in_v2_reads_as_v1_and_back \
  kubectl_get_dbs_shows_the_preferred_versions_columns
# Without the Service the harness says what is missing, at once.
kubectl -n database-system delete service database-webhook-service >/dev/null
if E2E_USE_EXISTING_CLUSTER=true cargo test --locked --test e2e -- --ignored \
    a_database_created_in_v2_reads_as_v1_and_back >"$SCRATCH/missing.log" 2>&1; then
  echo "the tests passed without the deployed webhook Service"; exit 1
fi
grep -F "the cluster has no Service database-system/database-webhook-service" "$SCRATCH/missing.log"
"#;
    let [webhook, health, metrics] = free_ports();
    let out = Command::new(opctl_bin())
        .args(["envtest", "run", "--", "bash", "-c", script])
        .current_dir(&dir)
        .envs(build_env())
        .env("OPCTL", opctl_bin())
        .env("SCRATCH", &scratch)
        .env("WEBHOOK_PORT", webhook.to_string())
        .env("HEALTH_PORT", health.to_string())
        .env("METRICS_PORT", metrics.to_string())
        .output()
        .expect("opctl runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("3 passed"), "{text}");
    assert!(
        text.contains("E2E_USE_EXISTING_CLUSTER=true: the webhooks are served by the manager `make deploy` installs"),
        "{text}"
    );
}

reference_project!(simple_deployment, "simple-deployment");
reference_project!(database, "database");
reference_project!(sidecarset, "sidecarset");

/// Every directory in testdata/ is a reference project covered above.
const COVERED: &[&str] = &["simple-deployment", "database", "sidecarset"];
/// testdata/ directories that are not reference projects: `upgrade` holds
/// projects made by an earlier opctl, which tests/upgrade_project.rs upgrades.
const NOT_REFERENCE_PROJECTS: &[&str] = &["upgrade"];

#[test]
fn every_reference_project_is_covered() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut present: Vec<String> = std::fs::read_dir(&testdata)
        .expect("testdata/ exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !NOT_REFERENCE_PROJECTS.contains(&name.as_str()))
        .collect();
    present.sort();
    let mut covered: Vec<String> = COVERED.iter().map(|s| s.to_string()).collect();
    covered.sort();
    assert_eq!(
        present, covered,
        "add a reference_project! line per testdata/ project"
    );
}
