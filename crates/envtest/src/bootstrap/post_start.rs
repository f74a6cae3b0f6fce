//! What kube-apiserver v1.32's own post-start hooks write: the built-in
//! PriorityClasses (`scheduling/bootstrap-system-priority-classes`) and the
//! `default/kubernetes` Service with the Endpoints and EndpointSlice that
//! name the server itself (the master endpoints reconciler).

use std::net::SocketAddr;

use serde_json::json;

use super::create;
use crate::app::App;

const SCHEDULING: &str = "scheduling.k8s.io";
/// The name of the Service, Endpoints and EndpointSlice of the server.
const KUBERNETES: &str = "kubernetes";
/// The first address of the Service range, which the allocator keeps for it.
const KUBERNETES_CLUSTER_IP: &str = "10.96.0.1";

pub(super) fn create_priority_classes(app: &App) -> anyhow::Result<()> {
    for class in crate::bootstrap_policy::priority_classes() {
        create(app, SCHEDULING, "v1", "priorityclasses", "", class)?;
    }
    Ok(())
}

/// The `kubernetes` Service: port 443 in front of the server's port.
pub(super) fn create_kubernetes_service(app: &App, addr: SocketAddr) -> anyhow::Result<()> {
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": KUBERNETES,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_CLUSTER_IP,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": addr.port()}],
            "sessionAffinity": "None",
        },
    });
    create(app, "", "v1", "services", "default", service)?;
    // The reconciler marks its Endpoints so that the mirroring controller
    // leaves them alone, and writes the EndpointSlice itself.
    let endpoints = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": KUBERNETES,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [{
            "addresses": [{"ip": addr.ip().to_string()}],
            "ports": [{"name": "https", "port": addr.port(), "protocol": "TCP"}],
        }],
    });
    create(app, "", "v1", "endpoints", "default", endpoints)?;
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": KUBERNETES,
            "labels": {"kubernetes.io/service-name": KUBERNETES},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [addr.ip().to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": addr.port(), "protocol": "TCP"}],
    });
    create(
        app,
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "default",
        slice,
    )
}
