//! Nodes as a cluster shows them: a created Node is registered as its
//! kubelet would register it (capacity, allocatable, addresses, nodeInfo,
//! conditions) and tainted NotReady; the taints follow its conditions and
//! cordoning as the node lifecycle controller keeps them; field selectors on
//! `spec.unschedulable` select Nodes that never set it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::kube_support::shared_client;
use crate::server;

fn taint_keys(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

/// Polls `name` until `check` holds (at most 5 s).
async fn eventually(nodes: &Api<Node>, name: &str, check: impl Fn(&Node) -> bool) -> Node {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let node = nodes.get(name).await.expect("get node");
        if check(&node) || tokio::time::Instant::now() > deadline {
            return node;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_created_node_is_registered_and_tainted_until_ready() {
    let client = shared_client().await;
    let nodes: Api<Node> = Api::all(client);
    let name = server::unique_name("node-reg");
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let created = nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create");

    assert_eq!(
        taint_keys(&created),
        ["node.kubernetes.io/not-ready:NoSchedule"]
    );
    let status = created.status.clone().expect("status");
    let capacity = status.capacity.expect("capacity");
    assert_eq!(
        Some(&capacity),
        status.allocatable.as_ref(),
        "allocatable defaults to capacity"
    );
    for resource in ["cpu", "memory", "pods", "ephemeral-storage"] {
        assert!(capacity.contains_key(resource), "capacity lacks {resource}");
    }
    let info = status.node_info.expect("nodeInfo");
    assert_eq!(info.kubelet_version, "v1.32.13");
    assert_eq!(
        (info.operating_system.as_str(), info.architecture.as_str()),
        ("linux", "amd64")
    );
    let addresses = status.addresses.expect("addresses");
    assert!(
        addresses
            .iter()
            .any(|a| a.type_ == "Hostname" && a.address == name)
    );
    let conditions = status.conditions.expect("conditions");
    let ready = conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("KubeletNotReady"))
    );
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("kubernetes.io/hostname"), Some(&name));

    // The kubelet reports Ready: the lifecycle controller lifts the taint.
    let mut conditions = conditions.clone();
    for c in conditions.iter_mut().filter(|c| c.type_ == "Ready") {
        c.status = "True".into();
        c.reason = Some("KubeletReady".into());
    }
    nodes
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": conditions}})),
        )
        .await
        .expect("status patch");
    let ready = eventually(&nodes, &name, |n| taint_keys(n).is_empty()).await;
    assert_eq!(taint_keys(&ready), Vec::<String>::new());

    // Cordoning adds the unschedulable taint; the field selector sees it.
    nodes
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    let cordoned = eventually(&nodes, &name, |n| !taint_keys(n).is_empty()).await;
    assert_eq!(
        taint_keys(&cordoned),
        ["node.kubernetes.io/unschedulable:NoSchedule"]
    );
    let names = |list: kube::core::ObjectList<Node>| {
        list.items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect::<Vec<_>>()
    };
    let unschedulable = nodes
        .list(&ListParams::default().fields("spec.unschedulable=true"))
        .await
        .expect("list");
    assert!(names(unschedulable).contains(&name));
    nodes
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete");
}

#[tokio::test]
async fn nodes_that_never_set_unschedulable_select_as_false() {
    let client = shared_client().await;
    let nodes: Api<Node> = Api::all(client);
    let name = server::unique_name("node-sel");
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create");
    let schedulable = nodes
        .list(
            &ListParams::default()
                .fields(&format!("spec.unschedulable=false,metadata.name={name}")),
        )
        .await
        .expect("list");
    assert_eq!(schedulable.items.len(), 1);
    let err = nodes
        .list(&ListParams::default().fields("metadata.namespace=default"))
        .await
        .expect_err("Nodes have no namespace field label");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 400);
            assert_eq!(
                status.message,
                "field label not supported: metadata.namespace"
            );
        }
        other => panic!("expected a 400, got {other:?}"),
    }
    nodes
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete");
}
