//! What a v1.32 control plane without Nodes showed besides the recorded
//! objects (tests/fixtures/kcm-objects-v1.32/README.md, last paragraph).

use serde_json::json;

use crate::api::no_nodes;

#[tokio::test]
async fn every_namespace_gets_its_service_account_and_root_ca_back() {
    let api = no_nodes();
    let ns = api.namespace("defaults").await;
    let sa_path = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    let cm_path = format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
    let sa = api
        .until(&sa_path, "ServiceAccount default", |s| s.is_some())
        .await
        .expect("sa");
    assert!(sa.get("secrets").is_none(), "no token Secret: {sa}");
    let cm = api
        .until(&cm_path, "ConfigMap kube-root-ca.crt", |c| c.is_some())
        .await
        .expect("cm");
    assert!(cm["data"]["ca.crt"].is_string(), "{cm}");
    assert!(
        cm["metadata"]["annotations"]["kubernetes.io/description"].is_string(),
        "{cm}"
    );
    for path in [&sa_path, &cm_path] {
        let before = api.get(path).await.expect("exists");
        api.delete(path).await;
        api.until(path, "recreated", |o| {
            o.is_some_and(|o| o["metadata"]["uid"] != before["metadata"]["uid"])
        })
        .await;
    }
}

#[tokio::test]
async fn a_daemonset_without_nodes_gets_its_revision_and_a_zero_status() {
    let api = no_nodes();
    let ns = api.namespace("ds").await;
    api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/daemonsets"),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let ds = api
        .until(
            &format!("/apis/apps/v1/namespaces/{ns}/daemonsets/agent"),
            "the DaemonSet's status",
            |d| d.is_some_and(|d| d["status"]["observedGeneration"] == 1),
        )
        .await
        .expect("ds");
    assert_eq!(
        ds["status"],
        json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
            "numberMisscheduled": 0, "numberReady": 0, "observedGeneration": 1})
    );
    let revisions = api
        .items(&format!(
            "/apis/apps/v1/namespaces/{ns}/controllerrevisions"
        ))
        .await;
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert!(
        api.items(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_claim_without_a_class_is_told_no_volume_fits() {
    let api = no_nodes();
    let ns = api.namespace("claim").await;
    let claim = api
        .create(
            &format!("/api/v1/namespaces/{ns}/persistentvolumeclaims"),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}),
        )
        .await;
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let events = api
        .until_items(
            &format!("/api/v1/namespaces/{ns}/events"),
            "the FailedBinding event",
            |events| events.iter().any(|e| e["reason"] == "FailedBinding"),
        )
        .await;
    let event = events
        .iter()
        .find(|e| e["reason"] == "FailedBinding")
        .expect("event");
    assert_eq!(
        event["message"],
        "no persistent volumes available for this claim and no storage class is set"
    );
    assert_eq!(event["type"], "Normal");
    assert_eq!(event["source"]["component"], "persistentvolume-controller");
    assert_eq!(event["reportingComponent"], "persistentvolume-controller");
    assert_eq!(event["involvedObject"]["kind"], "PersistentVolumeClaim");
    let claim = api
        .get(&format!(
            "/api/v1/namespaces/{ns}/persistentvolumeclaims/data"
        ))
        .await
        .expect("claim");
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    assert!(claim["metadata"].get("annotations").is_none(), "{claim}");
}

#[tokio::test]
async fn a_budget_selecting_no_pod_is_told_so() {
    let api = no_nodes();
    let ns = api.namespace("pdb").await;
    api.create(
        &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "none"}}}}),
    )
    .await;
    let events = api
        .until_items(
            &format!("/api/v1/namespaces/{ns}/events"),
            "the NoPods event",
            |events| events.iter().any(|e| e["reason"] == "NoPods"),
        )
        .await;
    let event = events
        .iter()
        .find(|e| e["reason"] == "NoPods")
        .expect("event");
    assert_eq!(event["message"], "No matching pods found");
    assert_eq!(event["type"], "Normal");
    assert_eq!(event["source"]["component"], "controllermanager");
    assert_eq!(event["involvedObject"]["kind"], "PodDisruptionBudget");
    // The controller records the event before it writes the status, as
    // kube-controller-manager's disruption controller does.
    let pdb = api
        .until(
            &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/b"),
            "the budget's status",
            |pdb| pdb.is_some_and(|pdb| pdb["status"].get("conditions").is_some()),
        )
        .await
        .expect("pdb");
    assert_eq!(pdb["status"]["conditions"][0]["reason"], "InsufficientPods");
    assert_eq!(pdb["status"]["expectedPods"], 0);
}
