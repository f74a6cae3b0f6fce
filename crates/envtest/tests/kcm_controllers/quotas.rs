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

#[tokio::test]
async fn an_update_that_grows_usage_is_charged_and_refused_beyond_the_quota() {
    let api = no_nodes();
    let ns = api.namespace("quotaupd").await;
    let quota_path = format!("/api/v1/namespaces/{ns}/resourcequotas/q");
    api.create(
        &format!("/api/v1/namespaces/{ns}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"services": "5", "services.nodeports": "1"}}}),
    )
    .await;
    api.until(&quota_path, "the quota's status", |q| {
        q.is_some_and(|q| q["status"]["used"]["services.nodeports"] == "0")
    })
    .await;
    let service = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}})
    };
    for name in ["a", "b"] {
        api.create(&format!("/api/v1/namespaces/{ns}/services"), service(name))
            .await;
    }
    // A relabelled Service grows nothing: admitted without a charge.
    api.patch(
        &format!("/api/v1/namespaces/{ns}/services/a"),
        json!({"metadata": {"labels": {"x": "y"}}}),
    )
    .await;
    // Becoming a NodePort Service takes the one node port the quota allows...
    api.patch(
        &format!("/api/v1/namespaces/{ns}/services/a"),
        json!({"spec": {"type": "NodePort"}}),
    )
    .await;
    let quota = api.get(&quota_path).await.expect("quota");
    assert_eq!(
        quota["status"]["used"]["services.nodeports"], "1",
        "{quota}"
    );
    assert_eq!(quota["status"]["used"]["services"], "2", "{quota}");
    // ...so the second cannot.
    let refused = api
        .send(
            crate::support::http::HttpRequest::new(
                "PATCH",
                format!("/api/v1/namespaces/{ns}/services/b"),
            )
            .header("Content-Type", "application/merge-patch+json")
            .with_body(json!({"spec": {"type": "NodePort"}}).to_string()),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    let status = refused.json().expect("Status");
    assert_eq!(
        status["message"],
        "services \"b\" is forbidden: exceeded quota: q, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"
    );
}
