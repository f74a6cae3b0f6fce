//! StatefulSets: ordered Pods with claims, revisions, rolling updates and scaling.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::common::{WAIT, client, get_json, kubectl, namespace, wait_for_field};

const DB: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: pg, image: "postgres:16", readinessProbe: {exec: {command: [pg_isready]}}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"#;

/// Pod watch events (`ADDED db-0 ready=false`, ...) until `done` accepts them.
async fn watch_pods(
    pods: &Api<Pod>,
    rv: &str,
    start: impl FnOnce(),
    done: impl Fn(&[(String, String, bool)]) -> bool,
) -> Vec<(String, String, bool)> {
    let mut stream = pods
        .watch(&WatchParams::default().timeout(60), rv)
        .await
        .expect("watch")
        .boxed();
    start();
    let mut seen = Vec::new();
    while let Some(event) = stream.try_next().await.expect("watch event") {
        let (kind, pod) = match event {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            WatchEvent::Deleted(p) => ("DELETED", p),
            _ => continue,
        };
        let pod = serde_json::to_value(pod).expect("json");
        let ready = pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        seen.push((kind.to_string(), name, ready));
        if done(&seen) {
            return seen;
        }
    }
    panic!("the watch ended before: {seen:#?}");
}

fn list_rv(list_rv: Option<String>) -> String {
    list_rv.expect("a list resourceVersion")
}

#[tokio::test]
async fn a_statefulset_creates_pods_in_order_with_claims_and_rolls_from_the_top() {
    let ns = namespace("sts");
    let k = kubectl();
    let pods: Api<Pod> = Api::namespaced(client().await, &ns);
    let rv = list_rv(
        pods.list(&ListParams::default())
            .await
            .expect("list")
            .metadata
            .resource_version,
    );
    let all_ready = |seen: &[(String, String, bool)]| {
        ["db-0", "db-1", "db-2"]
            .iter()
            .all(|n| seen.iter().any(|(_, name, ready)| name == n && *ready))
    };
    let seen = watch_pods(
        &pods,
        &rv,
        || {
            k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], DB);
        },
        all_ready,
    )
    .await;
    // OrderedReady: each Pod is created once the one before it is Ready.
    for i in 1..3 {
        let added = seen
            .iter()
            .position(|(kind, name, _)| kind == "ADDED" && *name == format!("db-{i}"))
            .expect("added");
        let before_ready = seen[..added]
            .iter()
            .any(|(_, name, ready)| *name == format!("db-{}", i - 1) && *ready);
        assert!(
            before_ready,
            "db-{i} came before db-{} was Ready: {seen:#?}",
            i - 1
        );
    }
    let out = k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "statefulset/db",
        "--timeout=60s",
    ]);
    // The API defaults `partition: 0`, so kubectl words it as a partitioned roll out.
    assert!(
        out.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{out}"
    );

    let set = get_json(&["get", "-n", &ns, "statefulset", "db"]);
    let status = &set["status"];
    let revision = status["updateRevision"]
        .as_str()
        .expect("updateRevision")
        .to_string();
    assert_eq!(status["currentRevision"], revision.as_str());
    for field in [
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
    ] {
        assert_eq!(status[field], 3, "{field}: {status}");
    }
    assert_eq!(status["observedGeneration"], 1);
    let pod = get_json(&["get", "-n", &ns, "pod", "db-1"]);
    assert_eq!(pod["spec"]["hostname"], "db-1");
    assert_eq!(pod["spec"]["subdomain"], "db");
    assert_eq!(
        pod["metadata"]["labels"]["controller-revision-hash"],
        revision.as_str()
    );
    assert_eq!(
        pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "db-1"
    );
    assert_eq!(
        pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
        "1"
    );
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    let volume = pod["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == "data")
        .expect("the data volume")
        .clone();
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], "data-db-1");
    for i in 0..3 {
        let claim = get_json(&["get", "-n", &ns, "pvc", &format!("data-db-{i}")]);
        assert_eq!(claim["status"]["phase"], "Bound", "{claim}");
        assert_eq!(claim["metadata"]["labels"]["app"], "db");
    }
    let history = get_json(&["get", "-n", &ns, "controllerrevisions"]);
    let first = &history["items"][0];
    assert_eq!(first["metadata"]["name"], revision.as_str());
    assert_eq!(first["revision"], 1);
    assert!(
        revision.ends_with(
            first["metadata"]["labels"]["controller.kubernetes.io/hash"]
                .as_str()
                .unwrap_or("?")
        ),
        "{first}"
    );
    assert_eq!(first["metadata"]["ownerReferences"][0]["name"], "db");

    // A new image: the Pods are replaced from the highest ordinal down.
    let rv = list_rv(
        pods.list(&ListParams::default())
            .await
            .expect("list")
            .metadata
            .resource_version,
    );
    let seen = watch_pods(
        &pods,
        &rv,
        || {
            k.ok(&[
                "set",
                "image",
                "-n",
                &ns,
                "statefulset/db",
                "pg=postgres:17",
            ]);
        },
        |seen| seen.iter().filter(|(kind, ..)| kind == "DELETED").count() == 3,
    )
    .await;
    let deleted: Vec<&str> = seen
        .iter()
        .filter(|(kind, ..)| kind == "DELETED")
        .map(|(_, name, _)| name.as_str())
        .collect();
    assert_eq!(deleted, ["db-2", "db-1", "db-0"]);
    let out = k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "statefulset/db",
        "--timeout=60s",
    ]);
    assert!(
        out.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{out}"
    );
    let set = get_json(&["get", "-n", &ns, "statefulset", "db"]);
    let updated = set["status"]["updateRevision"]
        .as_str()
        .expect("updateRevision");
    assert_ne!(updated, revision);
    assert_eq!(set["status"]["currentRevision"], updated);
    assert_eq!(set["status"]["updatedReplicas"], 3);
    assert_eq!(set["status"]["observedGeneration"], 2);
    let images = k.ok(&[
        "get",
        "-n",
        &ns,
        "pods",
        "-l",
        "app=db",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images, "postgres:17 postgres:17 postgres:17");
    let history = get_json(&["get", "-n", &ns, "controllerrevisions"]);
    assert_eq!(history["items"].as_array().map(Vec::len), Some(2));

    // Scaling down removes the highest ordinals; their claims stay.
    k.ok(&["scale", "-n", &ns, "statefulset/db", "--replicas=1"]);
    wait_for_field(&ns, ("statefulset", "db"), "{.status.replicas}", |v| {
        v == "1"
    });
    k.eventually(
        &[
            "get",
            "-n",
            &ns,
            "pods",
            "-l",
            "app=db",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ],
        WAIT,
        |r| r.stdout == "db-0",
    );
    get_json(&["get", "-n", &ns, "pvc", "data-db-2"]);
}

const CRASHING: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: NAME}
spec:
  serviceName: NAME
  replicas: 3
  podManagementPolicy: POLICY
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: app, image: "example.com/app:envtest-crashloop"}]
"#;

#[test]
fn ordered_ready_waits_for_readiness_and_parallel_does_not() {
    let ns = namespace("sts-policy");
    let k = kubectl();
    for (name, policy) in [("ordered", "OrderedReady"), ("parallel", "Parallel")] {
        let yaml = CRASHING.replace("NAME", name).replace("POLICY", policy);
        k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], &yaml);
    }
    wait_for_field(
        &ns,
        ("statefulset", "parallel"),
        "{.status.replicas}",
        |v| v == "3",
    );
    let parallel = get_json(&["get", "-n", &ns, "statefulset", "parallel"]);
    assert!(parallel["status"]["readyReplicas"].is_null(), "{parallel}");
    // ordered-0 crash loops, so ordered-1 is never made.
    wait_for_field(
        &ns,
        ("pod", "ordered-0"),
        "{.status.containerStatuses[0].restartCount}",
        |v| v.parse::<i64>().unwrap_or(0) >= 2,
    );
    let names = k.ok(&[
        "get",
        "-n",
        &ns,
        "pods",
        "-l",
        "app=ordered",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    assert_eq!(names, "ordered-0");
    let set = get_json(&["get", "-n", &ns, "statefulset", "ordered"]);
    assert_eq!(set["status"]["replicas"], json!(1), "{set}");
    assert_eq!(set["status"]["availableReplicas"], Value::from(0));
}
