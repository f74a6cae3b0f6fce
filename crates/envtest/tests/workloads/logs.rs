//! `kubectl logs` (and kube-rs's `Api::logs`) of Pods on simulated Nodes:
//! the lines the simulated kubelet reports for each run of a container,
//! read with `--previous`, `--tail`, `--timestamps` and `-f` as on a
//! cluster, the kubelet's refusals for containers that never started, and
//! exec refused (no process runs).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use crate::common::{FAILING_PODS, client, kubectl, namespace, wait_for_field};

#[tokio::test]
async fn logs_of_simulated_containers_follow_their_runs() {
    let ns = namespace("logs");
    let k = kubectl();
    k.ok(&["run", "-n", &ns, "web", "--image=nginx:1.27"]);
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], FAILING_PODS);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=Ready",
        "pod/web",
        "--timeout=60s",
    ]);

    let log = k.ok(&["logs", "-n", &ns, "web"]);
    assert_eq!(
        log,
        "opctl envtest: started container \"web\" (restart 0) from image docker.io/library/nginx:1.27\n\
         opctl envtest: the simulation runs no process, so nothing else is logged\n"
    );
    let stamped = k.ok(&["logs", "-n", &ns, "web", "--timestamps", "--tail=1"]);
    let (time, line) = stamped.split_once(' ').expect("a timestamp");
    assert!(
        time.len() == 30 && time.ends_with(".000000000Z"),
        "{stamped}"
    );
    assert_eq!(
        line,
        "opctl envtest: the simulation runs no process, so nothing else is logged\n"
    );
    // Following ends with what there is: no process will write more.
    assert_eq!(k.ok(&["logs", "-n", &ns, "web", "-f"]), log);
    let previous = k.fails(&["logs", "-n", &ns, "web", "--previous"]);
    assert!(
        previous.contains("previous terminated container \"web\" in pod \"web\" not found"),
        "{previous}"
    );
    let exec = k.fails(&["exec", "-n", &ns, "web", "--", "true"]);
    assert!(exec.contains("runs no containers"), "{exec}");

    wait_for_field(
        &ns,
        ("pod", "crashing"),
        "{.status.containerStatuses[0].lastState.terminated.exitCode}",
        |v| v == "1",
    );
    let crashed = k.ok(&["logs", "-n", &ns, "crashing", "--previous"]);
    assert!(
        crashed.ends_with(
            "opctl envtest: container \"app\" exited with code 1 (Error): its image reference contains \"envtest-crashloop\"\n"
        ),
        "{crashed}"
    );

    wait_for_field(
        &ns,
        ("pod", "unpullable"),
        "{.status.containerStatuses[0].state.waiting.reason}",
        |v| v == "ImagePullBackOff",
    );
    let waiting = k.fails(&["logs", "-n", &ns, "unpullable"]);
    assert!(
        waiting.contains("container \"app\" in pod \"unpullable\" is waiting to start: trying and failing to pull image"),
        "{waiting}"
    );

    let pods: Api<Pod> = Api::namespaced(client().await, &ns);
    let last = pods
        .logs(
            "web",
            &LogParams {
                tail_lines: Some(1),
                ..LogParams::default()
            },
        )
        .await
        .expect("kube-rs reads the log");
    assert_eq!(
        last,
        "opctl envtest: the simulation runs no process, so nothing else is logged\n"
    );
    let err = pods
        .logs(
            "web",
            &LogParams {
                tail_lines: Some(-1),
                ..LogParams::default()
            },
        )
        .await
        .expect_err("a negative tail is refused");
    assert!(
        err.to_string()
            .contains("tailLines: Invalid value: -1: must be greater than or equal to 0"),
        "{err}"
    );
}
