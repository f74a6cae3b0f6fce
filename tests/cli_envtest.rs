//! `opctl envtest run` driven as a user drives it: with faults (the real
//! kubectl receives the injected failure, envtest logs it on one line, a
//! malformed spec is refused before anything starts, and the command is
//! told the spec in OPCTL_ENVTEST_FAULTS), with `--controllers` (unknown
//! names refused, a bare server), serving and signals.

mod common;

use std::process::Command;

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
        !run.stderr.contains("warning: the scheduler"),
        "the default simulation has Nodes:\n{}",
        run.stderr
    );
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

/// The scheduler without Nodes: a warning at start, and each Pod marked
/// as kube-scheduler marks it on a cluster without Nodes (its
/// ErrNoNodesAvailable: PodScheduled=False, reason Unschedulable, and a
/// FailedScheduling event with the same message).
#[test]
fn the_scheduler_without_nodes_warns_and_marks_the_pods() {
    let (_tmp, dir) = project_dir("no-nodes");
    let script = r#"set -e
kubectl run lonely --image=registry.k8s.io/pause:3.10 >/dev/null
for _ in $(seq 100); do
  reason=$(kubectl get pod lonely -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')
  [ -n "$reason" ] && break
  sleep 0.1
done
kubectl get pod lonely -o jsonpath='{range .status.conditions[*]}{.type}|{.status}|{.reason}|{.message}{"\n"}{end}'
for _ in $(seq 100); do
  events=$(kubectl get events --field-selector involvedObject.name=lonely -o jsonpath='{range .items[*]}{.type}|{.reason}|{.source.component}|{.message}{"\n"}{end}')
  [ -n "$events" ] && break
  sleep 0.1
done
echo "$events"
"#;
    let run = opctl(
        &dir,
        &[
            "envtest",
            "run",
            "--simulate",
            "scheduler",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(run.ok, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("warning: the scheduler is simulated without Nodes")
            && run.stderr.contains("add `nodes` to --simulate"),
        "{}",
        run.stderr
    );
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines.contains(&"PodScheduled|False|Unschedulable|no nodes available to schedule pods"),
        "{}",
        run.stdout
    );
    assert!(
        lines.contains(
            &"Warning|FailedScheduling|default-scheduler|no nodes available to schedule pods"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn the_command_learns_the_faults_from_its_environment() {
    let (_tmp, dir) = project_dir("faults-env");
    let script = "echo \"faults=${OPCTL_ENVTEST_FAULTS-unset}\"";
    let run = opctl(
        &dir,
        &[
            "envtest", "run", "--faults", "default", "--", "sh", "-c", script,
        ],
    );
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "faults=default");
    // Without faults it is not set, even when opctl's own environment has it.
    let run = Command::new(common::opctl_bin())
        .args(["envtest", "run", "--", "sh", "-c", script])
        .current_dir(&dir)
        .env("OPCTL_ENVTEST_FAULTS", "stale")
        .output()
        .expect("opctl runs");
    assert!(run.status.success());
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "faults=unset");
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

#[test]
fn controllers_are_chosen_as_kube_controller_manager_chooses_them() {
    let (_tmp, dir) = project_dir("controllers");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    for list in ["*,-deploymnet-controller", "garbagecollector,foo"] {
        let line = opctl_fails(
            &dir,
            &[
                "envtest",
                "run",
                "--controllers",
                list,
                "--",
                "sh",
                "-c",
                &touch,
            ],
        );
        assert!(
            line.starts_with("error: invalid --controllers: \"")
                && line.contains("is not in the list of known controllers: ")
                && line.contains("deployment-controller"),
            "{line}"
        );
        assert!(!marker.exists(), "the command ran despite {list:?}");
    }
    // A bare server: nothing makes a namespace's ServiceAccount or root CA,
    // nothing gives a Deployment its ReplicaSet.
    let script = "kubectl create namespace bare >/dev/null \
        && kubectl create deployment web --image=nginx -n bare >/dev/null \
        && sleep 1 \
        && kubectl get serviceaccounts,configmaps,replicasets -n bare -o name \
        && kubectl get storageclasses,nodes -o name";
    let run = opctl(
        &dir,
        &[
            "envtest",
            "run",
            "--simulate",
            "none",
            "--controllers=",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(run.ok, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.trim(), "", "{}", run.stdout);
    // The default runs them all (no Node with --simulate none).
    let script = "kubectl create namespace full >/dev/null \
        && kubectl create deployment web --image=nginx -n full >/dev/null \
        && kubectl wait -n full --for=jsonpath='{.status.replicas}'=1 deployment/web --timeout=20s >/dev/null \
        && kubectl get serviceaccount/default configmap/kube-root-ca.crt -n full -o name";
    let run = opctl(
        &dir,
        &[
            "envtest",
            "run",
            "--simulate",
            "none",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(run.ok, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.trim(),
        "serviceaccount/default\nconfigmap/kube-root-ca.crt"
    );
}

/// Waits (bounded) until `path` exists.
fn wait_for(path: &std::path::Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{} never appeared", path.display());
}

fn send_signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {signal} {pid}");
}

#[test]
fn run_serves_https_with_a_token_by_default_and_plain_http_on_request() {
    let (_tmp, dir) = project_dir("serving");
    // The kubeconfig names an HTTPS server with its CA and a token, in a
    // private directory (0700, the file 0600) that is gone after the run.
    let script = "grep -q 'server: https://127.0.0.1:' \"$KUBECONFIG\" \
        && grep -q 'certificate-authority-data: ' \"$KUBECONFIG\" \
        && grep -q 'token: ' \"$KUBECONFIG\" \
        && dirname \"$KUBECONFIG\" \
        && stat -c %a \"$(dirname \"$KUBECONFIG\")\" \"$KUBECONFIG\" \
        && kubectl get namespace default -o name";
    let run = opctl(&dir, &["envtest", "run", "--", "sh", "-c", script]);
    assert!(run.ok, "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[1..],
        ["700", "600", "namespace/default"],
        "{}",
        run.stdout
    );
    let private = std::path::Path::new(lines[0]);
    assert!(
        private.starts_with(std::env::temp_dir())
            && private
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("opctl-envtest-")),
        "{}",
        private.display()
    );
    assert!(!private.exists(), "{} is left behind", private.display());

    let script = "grep -q 'server: http://127.0.0.1:' \"$KUBECONFIG\" && kubectl get namespace default -o name";
    let run = opctl(
        &dir,
        &[
            "envtest",
            "run",
            "--insecure-http",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(run.ok, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.trim(), "namespace/default");
}

#[test]
fn start_keeps_its_kubeconfig_in_a_private_directory_removed_at_exit() {
    use std::io::BufRead;
    let mut server = std::process::Command::new(common::opctl_bin())
        .args(["envtest", "start"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("opctl envtest start runs");
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the serving line");
    let kubeconfig = line
        .split("kubeconfig written to ")
        .nth(1)
        .and_then(|rest| rest.split(" (export").next())
        .unwrap_or_else(|| panic!("no kubeconfig in {line:?}"));
    let kubeconfig = std::path::PathBuf::from(kubeconfig);
    let private = kubeconfig.parent().expect("a directory").to_path_buf();
    assert!(
        line.starts_with("envtest serving https://127.0.0.1:"),
        "{line}"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| {
            std::fs::metadata(p).expect("exists").permissions().mode() & 0o777
        };
        assert_eq!(mode(&private), 0o700, "{}", private.display());
        assert_eq!(mode(&kubeconfig), 0o600, "{}", kubeconfig.display());
    }
    let out = std::process::Command::new("kubectl")
        .args(["get", "namespace", "default", "-o", "name"])
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .expect("kubectl runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "namespace/default",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    send_signal(server.id(), "-TERM");
    let status = server.wait().expect("opctl exits");
    assert!(status.success(), "{status:?}");
    assert!(!private.exists(), "{} is left behind", private.display());
}

#[test]
fn run_passes_a_signal_to_its_command_and_stops_the_server_after_it() {
    let (_tmp, dir) = project_dir("signals");
    // On TERM the command still reaches the server, writes what it saw and
    // exits 7; opctl exits with that status.
    let script = dir.join("command.sh");
    std::fs::write(
        &script,
        "trap 'kubectl get namespace default -o name > \"$OUT/during-term\" 2>&1; echo term > \"$OUT/trapped\"; exit 7' TERM\n\
         echo ready > \"$OUT/ready\"\n\
         while :; do sleep 0.1; done\n",
    )
    .expect("script written");
    let mut run = std::process::Command::new(common::opctl_bin())
        .args(["envtest", "run", "--", "sh"])
        .arg(&script)
        .env("OUT", &dir)
        .current_dir(&dir)
        .spawn()
        .expect("opctl envtest run runs");
    wait_for(&dir.join("ready"));
    send_signal(run.id(), "-TERM");
    let status = run.wait().expect("opctl exits");
    assert_eq!(status.code(), Some(7), "{status:?}");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    assert_eq!(read("trapped").trim(), "term");
    assert_eq!(read("during-term").trim(), "namespace/default");
}

/// A fresh temp directory for one opctl process (its TMPDIR), and whether
/// anything is left in it afterwards.
fn leftovers(tmp: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `opctl envtest start` stopped by SIGTERM as soon as it prints its ready
/// line, ten times over: every time it exits 0 by itself (not killed by the
/// signal) and its private kubeconfig directory is gone. Stopped at points
/// during its start-up, it leaves nothing behind either.
#[test]
fn start_stopped_at_any_moment_exits_cleanly_and_leaves_nothing() {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let spawn = |tmp: &std::path::Path| {
        std::process::Command::new(common::opctl_bin())
            .args(["envtest", "start", "--simulate", "none"])
            .env("TMPDIR", tmp)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("opctl envtest start runs")
    };
    for round in 0..10 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut server = spawn(tmp.path());
        let mut line = String::new();
        std::io::BufReader::new(server.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the serving line");
        send_signal(server.id(), "-TERM");
        assert!(
            line.starts_with("envtest serving "),
            "round {round}: {line:?}"
        );
        let status = server.wait().expect("opctl exits");
        assert_eq!(
            (status.code(), status.signal()),
            (Some(0), None),
            "round {round}: {status:?}"
        );
        assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "round {round}");
    }
    for delay_ms in [0, 5, 20, 50, 100, 200, 400] {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut server = spawn(tmp.path());
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        send_signal(server.id(), "-TERM");
        let status = server.wait().expect("opctl exits");
        // In the first instants of the process, before its handlers are in
        // place, the signal may still kill it: nothing is written then.
        assert!(
            status.code() == Some(0) || status.signal() == Some(15),
            "SIGTERM after {delay_ms} ms: {status:?}"
        );
        assert_eq!(
            leftovers(tmp.path()),
            Vec::<String>::new(),
            "SIGTERM after {delay_ms} ms"
        );
    }
}

/// `opctl envtest run` stopped by SIGTERM right as its command starts (the
/// command signals opctl itself), five times over: it passes the signal on
/// and exits with the command's status (143), never by the signal, and its
/// private kubeconfig directory is gone. Stopped at points during its
/// start-up, it leaves nothing behind either.
#[test]
fn run_stopped_at_any_moment_exits_cleanly_and_leaves_nothing() {
    use std::os::unix::process::ExitStatusExt;
    let spawn = |tmp: &std::path::Path, script: &str| {
        std::process::Command::new(common::opctl_bin())
            .args([
                "envtest",
                "run",
                "--simulate",
                "none",
                "--",
                "sh",
                "-c",
                script,
            ])
            .env("TMPDIR", tmp)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("opctl envtest run runs")
    };
    for round in 0..5 {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut run = spawn(tmp.path(), "kill -TERM $PPID; sleep 20");
        let status = run.wait().expect("opctl exits");
        assert_eq!(
            (status.code(), status.signal()),
            (Some(128 + 15), None),
            "round {round}: {status:?}"
        );
        assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "round {round}");
    }
    for delay_ms in [5, 20, 50, 100, 200, 400] {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut run = spawn(tmp.path(), "sleep 20");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        send_signal(run.id(), "-TERM");
        let status = run.wait().expect("opctl exits");
        assert!(
            status.code() == Some(128 + 15) || status.signal() == Some(15),
            "SIGTERM after {delay_ms} ms: {status:?}"
        );
        assert_eq!(
            leftovers(tmp.path()),
            Vec::<String>::new(),
            "SIGTERM after {delay_ms} ms"
        );
    }
}
