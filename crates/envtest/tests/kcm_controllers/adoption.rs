//! Orphans a controller's selector matches are adopted; what it owns and no
//! longer selects is released.

use serde_json::json;

use crate::api::{controller_uid, no_nodes, pod};

#[tokio::test]
async fn a_replicaset_adopts_a_matching_orphan_and_releases_a_relabelled_pod() {
    let api = no_nodes();
    let ns = api.namespace("adopt").await;
    let orphan = api
        .create(
            &format!("/api/v1/namespaces/{ns}/pods"),
            pod("orphan", json!({"app": "web"})),
        )
        .await;
    let rs = api
        .create(
            &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await;
    let rs_uid = rs["metadata"]["uid"].as_str().expect("uid").to_string();
    let pods = api
        .until_items(
            &format!("/api/v1/namespaces/{ns}/pods"),
            "the orphan adopted and one more Pod",
            |p| p.len() == 2 && p.iter().all(|p| controller_uid(p) == Some(rs_uid.as_str())),
        )
        .await;
    let adopted = pods
        .iter()
        .find(|p| p["metadata"]["name"] == "orphan")
        .expect("the orphan");
    assert_eq!(adopted["metadata"]["uid"], orphan["metadata"]["uid"]);
    assert_eq!(
        adopted["metadata"]["ownerReferences"],
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs_uid,
            "controller": true, "blockOwnerDeletion": true}])
    );
    let owner_entry = adopted["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["manager"] == "kube-controller-manager")
        .expect("the adoption's managedFields");
    assert!(
        owner_entry["fieldsV1"]["f:metadata"]["f:ownerReferences"]
            .as_object()
            .is_some_and(|r| r.contains_key(&format!("k:{{\"uid\":\"{rs_uid}\"}}"))),
        "{owner_entry}"
    );
    // Relabelled, it is released and replaced.
    api.patch(
        &format!("/api/v1/namespaces/{ns}/pods/orphan"),
        json!({"metadata": {"labels": {"app": "other"}}}),
    )
    .await;
    let released = api
        .until(
            &format!("/api/v1/namespaces/{ns}/pods/orphan"),
            "the relabelled Pod released",
            |p| p.is_some_and(|p| p["metadata"].get("ownerReferences").is_none()),
        )
        .await
        .expect("pod");
    assert_eq!(released["metadata"]["labels"]["app"], "other");
    api.until_items(
        &format!("/api/v1/namespaces/{ns}/pods?labelSelector=app%3Dweb"),
        "a replacement",
        |p| p.len() == 2,
    )
    .await;
}

#[tokio::test]
async fn a_deployment_adopts_an_orphan_replicaset_it_selects() {
    let api = no_nodes();
    let ns = api.namespace("adoptrs").await;
    api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "loose", "labels": {"app": "api", "v": "1"}},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "api", "v": "1"}},
                "template": {"metadata": {"labels": {"app": "api", "v": "1"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}),
    )
    .await;
    let d = api
        .create(
            &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "api"}},
                    "template": {"metadata": {"labels": {"app": "api"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
        )
        .await;
    let d_uid = d["metadata"]["uid"].as_str().expect("uid").to_string();
    api.until(
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets/loose"),
        "the orphan ReplicaSet adopted",
        |rs| rs.is_some_and(|rs| controller_uid(rs) == Some(d_uid.as_str())),
    )
    .await;
}
