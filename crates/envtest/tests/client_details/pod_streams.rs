//! `kubectl logs` and `kubectl exec` on a Pod no node runs answer as a
//! real server does: an empty log, exec refused because the Pod has no host,
//! and kube-apiserver's messages for a container the Pod does not have.

use crate::kubectl_support::Kubectl;
use crate::server;

#[test]
fn logs_and_exec_of_a_pod_without_a_node() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let ns = server::unique_name("streams");
    k.ok(&["create", "namespace", &ns]);
    k.ok(&["run", "web", "-n", &ns, "--image=nginx"]);

    assert_eq!(k.ok(&["logs", "web", "-n", &ns]), "");
    let wrong = k.fails(&["logs", "web", "-n", &ns, "-c", "sidecar"]);
    assert!(
        wrong.contains("container sidecar is not valid for pod web"),
        "{wrong}"
    );
    let exec = k.fails(&["exec", "web", "-n", &ns, "--", "true"]);
    assert!(
        exec.contains("pod web does not have a host assigned"),
        "{exec}"
    );
}
