//! Deployments, ReplicaSets and Jobs.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

use crate::common::{WAIT, client, condition, get_json, kubectl, namespace};

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_deployment_rolls_out_and_rolls_to_a_new_image() {
    let ns = namespace("deploy");
    let k = kubectl();
    k.ok(&[
        "create",
        "deployment",
        "-n",
        &ns,
        "web",
        "--image=nginx:1.26",
        "--replicas=3",
    ]);
    let out = k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let rs = items(&get_json(&["get", "-n", &ns, "replicasets"]));
    assert_eq!(rs.len(), 1, "{rs:?}");
    let hash = rs[0]["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .expect("hash label")
        .to_string();
    assert_eq!(rs[0]["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(
        rs[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(rs[0]["status"]["readyReplicas"], 3);
    let pods = items(&get_json(&["get", "-n", &ns, "pods", "-l", "app=web"]));
    assert_eq!(pods.len(), 3);
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Running"
        && p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"));

    k.ok(&[
        "set",
        "image",
        "-n",
        &ns,
        "deployment/web",
        "nginx=nginx:1.27",
    ]);
    let out = k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let d = get_json(&["get", "-n", &ns, "deployment", "web"]);
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    assert_eq!(
        (
            d["status"]["updatedReplicas"].clone(),
            d["status"]["availableReplicas"].clone()
        ),
        (json!(3), json!(3))
    );
    assert_eq!(
        condition(&d, "Available").expect("Available")["status"],
        "True"
    );
    assert_eq!(
        condition(&d, "Progressing").expect("Progressing")["reason"],
        "NewReplicaSetAvailable"
    );
    let rs = items(&get_json(&["get", "-n", &ns, "replicasets"]));
    assert_eq!(rs.len(), 2, "{rs:?}");
    let old = rs
        .iter()
        .find(|r| r["metadata"]["labels"]["pod-template-hash"] == hash.as_str())
        .expect("old ReplicaSet kept");
    assert_eq!(old["spec"]["replicas"], 0);
    // The old Pods terminate; only new ones remain.
    k.eventually(
        &[
            "get",
            "-n",
            &ns,
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ],
        WAIT,
        |r| r.stdout.split_whitespace().collect::<Vec<_>>() == ["nginx:1.27"; 3],
    );
    let events = k.ok(&[
        "get",
        "-n",
        &ns,
        "events",
        "--field-selector",
        "involvedObject.name=web",
    ]);
    assert!(events.contains("ScalingReplicaSet"), "{events}");

    k.ok(&["scale", "-n", &ns, "deployment/web", "--replicas=1"]);
    k.eventually(
        &[
            "get",
            "-n",
            &ns,
            "deployment",
            "web",
            "-o",
            "jsonpath={.status.replicas}/{.status.availableReplicas}",
        ],
        WAIT,
        |r| r.stdout == "1/1",
    );
    k.ok(&["rollout", "undo", "-n", &ns, "deployment/web"]);
    k.ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ]);
    let d = get_json(&["get", "-n", &ns, "deployment", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
}

#[tokio::test]
async fn a_replicaset_keeps_its_pods_and_they_go_with_it() {
    let ns = namespace("rs");
    let client = client().await;
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "cache"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "cache"}},
            "template": {"metadata": {"labels": {"app": "cache"}}, "spec": {"containers": [{"name": "redis", "image": "redis:7"}]}},
        },
    }))
    .expect("ReplicaSet");
    sets.create(&PostParams::default(), &rs)
        .await
        .expect("create");
    let ready = |rs: &ReplicaSet| rs.status.as_ref().and_then(|s| s.ready_replicas) == Some(2);
    let cache = wait_for(&sets, "cache", ready).await;
    assert_eq!(
        cache.status.as_ref().and_then(|s| s.available_replicas),
        Some(2)
    );
    assert_eq!(
        cache.status.as_ref().and_then(|s| s.observed_generation),
        Some(1)
    );

    let listed = pods
        .list(&ListParams::default().labels("app=cache"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 2);
    let victim = listed.items[0].metadata.name.clone().expect("name");
    pods.delete(&victim, &DeleteParams::default())
        .await
        .expect("delete a Pod");
    // A replacement comes; the deleted one goes.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let now = pods
            .list(&ListParams::default().labels("app=cache"))
            .await
            .expect("list");
        let names: Vec<String> = now
            .items
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        let running = now
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        if !names.contains(&victim) && running == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no replacement: {names:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    sets.delete("cache", &DeleteParams::default())
        .await
        .expect("delete the ReplicaSet");
    let deadline = std::time::Instant::now() + WAIT;
    while !pods
        .list(&ListParams::default().labels("app=cache"))
        .await
        .expect("list")
        .items
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the ReplicaSet's Pods stayed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn wait_for(
    api: &Api<ReplicaSet>,
    name: &str,
    done: impl Fn(&ReplicaSet) -> bool,
) -> ReplicaSet {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let got = api.get(name).await.expect("get");
        if done(&got) {
            return got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not reached: {:?}",
            got.status
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

const JOBS: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox, command: ["true"]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: doomed}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: "busybox:envtest-crashloop"}]
"#;

#[test]
fn jobs_complete_or_fail_as_their_pods_do() {
    let ns = namespace("jobs");
    let k = kubectl();
    k.ok_stdin(&["apply", "-n", &ns, "-f", "-"], JOBS);
    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=complete",
        "job/batch",
        "--timeout=60s",
    ]);
    let job = get_json(&["get", "-n", &ns, "job", "batch"]);
    assert_eq!(job["status"]["succeeded"], 3, "{}", job["status"]);
    assert!(job["status"]["completionTime"].is_string());
    assert_eq!(
        condition(&job, "SuccessCriteriaMet").expect("SuccessCriteriaMet")["status"],
        "True"
    );
    assert_eq!(
        condition(&job, "Complete").expect("Complete")["reason"],
        "CompletionsReached"
    );
    let pods = items(&get_json(&[
        "get",
        "-n",
        &ns,
        "pods",
        "-l",
        "job-name=batch",
    ]));
    assert_eq!(pods.len(), 3);
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Succeeded"));

    k.ok(&[
        "wait",
        "-n",
        &ns,
        "--for=condition=failed",
        "job/doomed",
        "--timeout=60s",
    ]);
    let job = get_json(&["get", "-n", &ns, "job", "doomed"]);
    assert_eq!(job["status"]["failed"], 2, "{}", job["status"]);
    assert_eq!(
        condition(&job, "Failed").expect("Failed")["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(
        condition(&job, "FailureTarget").expect("FailureTarget")["status"],
        "True"
    );
}
