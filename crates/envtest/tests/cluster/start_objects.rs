//! The objects a cluster has before anyone writes: the `default/kubernetes`
//! Service, Endpoints and EndpointSlice naming the server, the built-in
//! PriorityClasses, and the `kube-root-ca.crt` ConfigMap in every namespace.

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::common::{client, eventually, json, kubectl, namespace};
use crate::server;

fn server_port() -> i32 {
    let base = &server::shared().base_url;
    base.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port in the base URL")
}

/// `default/kubernetes` is the server: a ClusterIP Service on the first
/// address of the range, port 443 in front of the port the server listens
/// on, and Endpoints and an EndpointSlice naming that address and port.
#[tokio::test]
async fn the_kubernetes_service_names_the_server() {
    let client = client().await;
    let service = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes Service");
    let spec = service.spec.expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    let port = &spec.ports.expect("ports")[0];
    assert_eq!(
        (port.name.as_deref(), port.port, port.protocol.as_deref()),
        (Some("https"), 443, Some("TCP"))
    );
    assert_eq!(
        service.metadata.labels.expect("labels").get("provider"),
        Some(&"kubernetes".to_string())
    );

    let endpoints = Api::<Endpoints>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes Endpoints");
    let subset = &endpoints.subsets.expect("subsets")[0];
    assert_eq!(
        subset.addresses.as_ref().expect("addresses")[0].ip,
        "127.0.0.1"
    );
    assert_eq!(subset.ports.as_ref().expect("ports")[0].port, server_port());

    let slice = Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes EndpointSlice");
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(slice.endpoints[0].addresses, vec!["127.0.0.1".to_string()]);
    assert_eq!(
        slice.ports.expect("ports")[0].port,
        Some(server_port()),
        "the slice names the server's port"
    );
    // kubectl finds it too, by the label the EndpointSlice controller uses.
    let listed = json(&kubectl().ok(&[
        "get",
        "endpointslices",
        "-n",
        "default",
        "-l",
        "kubernetes.io/service-name=kubernetes",
        "-o",
        "json",
    ]));
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn the_built_in_priority_classes_exist() {
    let client = client().await;
    let classes: Api<PriorityClass> = Api::all(client);
    for (name, value) in [
        ("system-cluster-critical", 2_000_000_000),
        ("system-node-critical", 2_000_001_000),
    ] {
        let class = classes.get(name).await.expect("a built-in PriorityClass");
        assert_eq!(class.value, value, "{name}");
        assert_eq!(
            class.preemption_policy.as_deref(),
            Some("PreemptLowerPriority")
        );
    }
    let out = kubectl().ok(&["get", "priorityclasses", "-o", "name"]);
    assert!(
        out.contains("priorityclass.scheduling.k8s.io/system-node-critical"),
        "{out}"
    );
}

/// Every namespace, new ones included, gets `kube-root-ca.crt`; deleting or
/// editing it does not last.
#[tokio::test]
async fn every_namespace_has_the_root_ca_config_map() {
    let client = client().await;
    let ns = namespace(&client, "rootca").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let published = eventually("kube-root-ca.crt in a new namespace", async || {
        config_maps.get_opt("kube-root-ca.crt").await.ok().flatten()
    })
    .await;
    let data = published.data.expect("data");
    assert!(data.contains_key("ca.crt"), "{data:?}");
    assert!(
        published
            .metadata
            .annotations
            .expect("annotations")
            .contains_key("kubernetes.io/description")
    );
    let original = data["ca.crt"].clone();

    let edit = json!({"data": {"ca.crt": "not a CA"}});
    config_maps
        .patch(
            "kube-root-ca.crt",
            &PatchParams::default(),
            &Patch::Merge(&edit),
        )
        .await
        .expect("edited");
    eventually("the edit undone", async || {
        let cm = config_maps.get("kube-root-ca.crt").await.ok()?;
        (cm.data?.get("ca.crt")? == &original).then_some(())
    })
    .await;

    config_maps
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("kube-root-ca.crt put back", async || {
        config_maps.get_opt("kube-root-ca.crt").await.ok().flatten()
    })
    .await;

    let default_ns: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    assert!(
        default_ns
            .get_opt("kube-root-ca.crt")
            .await
            .expect("get")
            .is_some(),
        "the namespaces a cluster starts with have it too"
    );
}
