//! ReplicationControllers: the older kind kube-controller-manager's
//! ReplicaSet code also runs, with a plain label-map selector, `/scale` and
//! `/status`, through `kubectl get` and `kubectl scale`.

use serde_json::Value;

use crate::common::{get_json, kubectl, namespace, wait_for_field};

const RC: &str = r#"
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
"#;

fn running_pods(ns: &str) -> usize {
    get_json(&["get", "-n", ns, "pods", "-l", "app=web"])["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| {
            p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
        })
        .count()
}

#[test]
fn a_replication_controller_keeps_its_pods_and_scales() {
    let ns = namespace("rc");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], RC);
    // The selector and labels default to the template's labels.
    let rc = get_json(&["get", "-n", &ns, "rc", "web"]);
    assert_eq!(rc["spec"]["selector"]["app"], "web", "{rc}");
    assert_eq!(rc["metadata"]["labels"]["app"], "web", "{rc}");
    assert_eq!(rc["metadata"]["generation"], 1);
    wait_for_field(&ns, ("rc", "web"), "{.status.readyReplicas}", |v| v == "2");
    let pods = get_json(&["get", "-n", &ns, "pods", "-l", "app=web"]);
    let owner = &pods["items"][0]["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "ReplicationController", "{owner}");
    assert_eq!(owner["controller"], true);

    let table = k.table(&["get", "-n", &ns, "rc", "-o", "wide"]);
    assert_eq!(
        table[0],
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{table:?}"
    );
    let row = &table[1];
    assert_eq!(
        [&row[..4], &row[5..]].concat(),
        ["web", "2", "2", "2", "nginx", "nginx:1.27", "app=web"],
        "{table:?}"
    );

    let scale = k.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{ns}/replicationcontrollers/web/scale"),
    ]);
    let scale: Value = serde_json::from_str(&scale).expect("a Scale");
    assert_eq!(
        (
            &scale["kind"],
            &scale["spec"]["replicas"],
            &scale["status"]["selector"]
        ),
        (&"Scale".into(), &2.into(), &"app=web".into()),
        "{scale}"
    );

    let out = k.ok(&["scale", "-n", &ns, "rc/web", "--replicas=3"]);
    assert!(out.contains("scaled"), "{out}");
    wait_for_field(
        &ns,
        ("rc", "web"),
        "{.status.readyReplicas}/{.status.observedGeneration}",
        |v| v == "3/2",
    );
    assert_eq!(running_pods(&ns), 3);

    k.ok(&["scale", "-n", &ns, "rc/web", "--replicas=1"]);
    wait_for_field(&ns, ("rc", "web"), "{.status.replicas}", |v| v == "1");

    // A selector that does not select the template is refused as v1.32 refuses it.
    let bad = RC.replace("replicas: 2", "replicas: 2\n  selector: {app: other}");
    let err = k.fails_stdin(
        &["apply", "-n", &ns, "-f", "-"],
        &bad.replace("name: web", "name: bad"),
    );
    assert!(
        err.contains("spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: selector does not match labels in spec.template"),
        "{err}"
    );
}
