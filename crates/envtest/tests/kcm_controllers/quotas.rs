//! The resourcequota controller: status from spec, usage recalculated when
//! objects go, creates charged by admission.

use serde_json::{Value, json};

use crate::api::no_nodes;

fn managers(quota: &Value) -> Vec<(String, String)> {
    quota["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["manager"].as_str().unwrap_or("").to_string(),
                m["subresource"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_quota_is_counted_charged_and_replenished() {
    let api = no_nodes();
    let ns = api.namespace("quota").await;
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas/q");
    api.until(
        &format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"),
        "the root CA",
        |c| c.is_some(),
    )
    .await;
    api.create(
        &format!("/api/v1/namespaces/{ns}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"configmaps": "3", "pods": "2", "requests.cpu": "1", "example.com/other": "4"}}}),
    )
    .await;
    // The controller's first look: hard from spec, every covered resource
    // counted, zeros included; what no evaluator covers is left out.
    let quota = api
        .until(&path, "the quota's status", |q| {
            q.is_some_and(|q| q["status"]["used"].is_object())
        })
        .await
        .expect("quota");
    assert_eq!(
        quota["status"],
        json!({"hard": {"configmaps": "3", "example.com/other": "4", "pods": "2", "requests.cpu": "1"},
            "used": {"configmaps": "1", "pods": "0", "requests.cpu": "0"}})
    );
    assert!(
        managers(&quota).contains(&("kube-controller-manager".to_string(), "status".to_string())),
        "{quota}"
    );
    // A create is charged by admission, as kube-apiserver.
    api.create(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra"}}),
    )
    .await;
    let quota = api.get(&path).await.expect("quota");
    assert_eq!(quota["status"]["used"]["configmaps"], "2");
    assert!(
        managers(&quota).contains(&("kube-apiserver".to_string(), "status".to_string())),
        "{quota}"
    );
    // A delete is replenished by the controller.
    api.delete(&format!("/api/v1/namespaces/{ns}/configmaps/extra"))
        .await;
    api.until(&path, "used configmaps back to 1", |q| {
        q.is_some_and(|q| q["status"]["used"]["configmaps"] == "1")
    })
    .await;
    // A new hard limit is mirrored and counted at once.
    api.patch(&path, json!({"spec": {"hard": {"services": "1"}}}))
        .await;
    let quota = api
        .until(&path, "the new limit in status", |q| {
            q.is_some_and(|q| q["status"]["hard"]["services"] == "1")
        })
        .await
        .expect("quota");
    assert_eq!(quota["status"]["used"]["services"], "0");
}
