//! PodDisruptionBudgets (`policy/v1`) as a cluster keeps them: the
//! disruption controller writes their status from the Pods they select, and
//! `pods/eviction` honours it.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{api_error, client_without_retries, eventually, namespace};

/// A Running, Ready Pod labelled `app: web` (no kubelet runs, so the test
/// writes the status one would).
async fn ready_pod(pods: &Api<Pod>, name: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("created");
    let status = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status written");
}

async fn allowed(budgets: &Api<PodDisruptionBudget>, healthy: i32) -> i32 {
    eventually("the budget's status", async || {
        let status = budgets.get("web").await.ok()?.status?;
        (status.current_healthy == healthy).then_some(status.disruptions_allowed)
    })
    .await
}

#[tokio::test]
async fn eviction_honours_a_disruption_budget() {
    let client = client_without_retries().await;
    let ns = namespace(&client, "budget").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    }))
    .expect("budget");
    let created = budgets
        .create(&PostParams::default(), &budget)
        .await
        .expect("a policy/v1 PodDisruptionBudget is served");
    assert_eq!(created.metadata.generation, Some(1));

    ready_pod(&pods, "web-1").await;
    assert_eq!(
        allowed(&budgets, 1).await,
        0,
        "one healthy Pod, one required"
    );
    let refused = api_error(pods.evict("web-1", &EvictParams::default()).await);
    assert_eq!(refused.code, 429, "{refused:?}");
    assert_eq!(
        refused.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );

    ready_pod(&pods, "web-2").await;
    assert_eq!(
        allowed(&budgets, 2).await,
        1,
        "two healthy Pods, one required"
    );
    pods.evict("web-1", &EvictParams::default())
        .await
        .expect("evicted within the budget");
    let evicted = pods
        .get("web-1")
        .await
        .expect("a bound Pod goes gracefully");
    assert!(evicted.metadata.deletion_timestamp.is_some());
    assert_eq!(
        allowed(&budgets, 1).await,
        0,
        "the evicted Pod no longer counts as healthy"
    );
    let again = api_error(pods.evict("web-2", &EvictParams::default()).await);
    assert_eq!(again.code, 429, "{again:?}");
}
