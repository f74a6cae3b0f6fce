//! The API groups beyond core, apps and batch that operators touch, served
//! with kube-apiserver v1.32's defaults and validation: networking.k8s.io,
//! autoscaling v1 and v2 over one storage, discovery.k8s.io,
//! scheduling.k8s.io, storage.k8s.io, node.k8s.io, and PersistentVolumes.

use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler as HpaV1;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler as HpaV2;
use k8s_openapi::api::core::v1::PersistentVolume;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use kube::api::{Api, DeleteParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::common::{api_error, client, kubectl, namespace};
use crate::server;

fn object<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// `kubectl api-resources` lists every kind these groups serve.
#[test]
fn discovery_lists_the_groups() {
    let out = kubectl().ok(&["api-resources", "-o", "name"]);
    for resource in [
        "persistentvolumes",
        "horizontalpodautoscalers.autoscaling",
        "endpointslices.discovery.k8s.io",
        "ingressclasses.networking.k8s.io",
        "ingresses.networking.k8s.io",
        "networkpolicies.networking.k8s.io",
        "runtimeclasses.node.k8s.io",
        "poddisruptionbudgets.policy",
        "priorityclasses.scheduling.k8s.io",
        "csidrivers.storage.k8s.io",
        "csinodes.storage.k8s.io",
        "csistoragecapacities.storage.k8s.io",
        "storageclasses.storage.k8s.io",
        "volumeattachments.storage.k8s.io",
    ] {
        assert!(
            out.lines().any(|l| l == resource),
            "{resource} missing:\n{out}"
        );
    }
    let versions = kubectl().ok(&["api-versions"]);
    for gv in [
        "autoscaling/v1",
        "autoscaling/v2",
        "policy/v1",
        "storage.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == gv),
            "{gv} missing:\n{versions}"
        );
    }
}

#[tokio::test]
async fn networking_objects_get_their_defaults_and_validation() {
    let client = client().await;
    let ns = namespace(&client, "networking").await;
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &ns);
    let policy = policies
        .create(
            &PostParams::default(),
            &object(json!({
                "metadata": {"name": "np"},
                "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}
            })),
        )
        .await
        .expect("created");
    let spec = policy.spec.expect("spec");
    assert_eq!(
        spec.policy_types,
        Some(vec!["Ingress".to_string(), "Egress".to_string()])
    );
    let egress = spec.egress.expect("egress");
    let port = &egress[0].ports.as_ref().expect("ports")[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));

    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), &ns);
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    let err = api_error(
        ingresses
            .create(
                &PostParams::default(),
                &object(json!({
                    "metadata": {"name": "bad"},
                    "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": backend}]}}]}
                })),
            )
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Ingress.networking.k8s.io \"bad\" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"
    );
    // Nothing to route, and a backend with two ports: every cause, in order.
    let err = api_error(
        ingresses
            .create(
                &PostParams::default(),
                &object(json!({
                    "metadata": {"name": "bad"},
                    "spec": {"tls": [{"hosts": ["10.0.0.1.example.com"], "secretName": "Bad"}]}
                })),
            )
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Ingress.networking.k8s.io \"bad\" is invalid: [spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified, spec.tls[0].secretName: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"
    );
    let two_ports = json!({"service": {"name": "web", "port": {"name": "http", "number": 80}}});
    let err = api_error(
        ingresses
            .create(
                &PostParams::default(),
                &object(
                    json!({"metadata": {"name": "bad"}, "spec": {"defaultBackend": two_ports}}),
                ),
            )
            .await,
    );
    assert_eq!(
        err.message,
        "Ingress.networking.k8s.io \"bad\" is invalid: spec.defaultBackend: Invalid value: \"\": cannot set both port name & port number"
    );
    let ingress = ingresses
        .create(
            &PostParams::default(),
            &object(json!({
                "metadata": {"name": "good"},
                "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]}
            })),
        )
        .await
        .expect("created");
    assert!(ingress.status.is_some_and(|s| s.load_balancer.is_some()));

    let slices: Api<EndpointSlice> = Api::namespaced(client, &ns);
    let slice = slices
        .create(
            &PostParams::default(),
            &object(json!({
                "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.1.2.3"]}],
                "ports": [{"port": 80}]
            })),
        )
        .await
        .expect("created");
    let port = &slice.ports.expect("ports")[0];
    assert_eq!(
        (port.name.as_deref(), port.protocol.as_deref()),
        (Some(""), Some("TCP"))
    );
}

/// One autoscaler seen through both versions: v2's CPU target is v1's
/// `targetCPUUtilizationPercentage`, and a v1 write is read back through v2.
#[tokio::test]
async fn autoscalers_are_served_as_v1_and_v2() {
    let client = client().await;
    let ns = namespace(&client, "hpa").await;
    let v2: Api<HpaV2> = Api::namespaced(client.clone(), &ns);
    let v1: Api<HpaV1> = Api::namespaced(client.clone(), &ns);
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    v2.create(
        &PostParams::default(),
        &object(json!({
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": target, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
            }
        })),
    )
    .await
    .expect("created through v2");
    let seen = v1.get("web").await.expect("read through v1");
    let spec = seen.spec.expect("spec");
    assert_eq!(
        (
            spec.min_replicas,
            spec.max_replicas,
            spec.target_cpu_utilization_percentage
        ),
        (Some(1), 3, Some(50))
    );

    v1.create(
        &PostParams::default(),
        &object(json!({
            "metadata": {"name": "api"},
            "spec": {"scaleTargetRef": target, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}
        })),
    )
    .await
    .expect("created through v1");
    let metrics = v2
        .get("api")
        .await
        .expect("read through v2")
        .spec
        .expect("spec")
        .metrics
        .expect("metrics");
    let utilization = metrics[0]
        .resource
        .as_ref()
        .and_then(|r| r.target.average_utilization);
    assert_eq!(utilization, Some(70));

    let err = api_error(
        v2.create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": "bad"}, "spec": {"scaleTargetRef": target, "minReplicas": 4, "maxReplicas": 2}})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn cluster_scoped_kinds_get_their_defaults_and_validation() {
    let client = client().await;
    let suffix = server::unique_name("groups");
    let classes: Api<PriorityClass> = Api::all(client.clone());
    let name = format!("high-{suffix}");
    let class = classes
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": name}, "value": 1000})),
        )
        .await
        .expect("created");
    assert_eq!(
        class.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    classes
        .delete(&name, &DeleteParams::default())
        .await
        .expect("deleted");
    let reserved = format!("system-{suffix}");
    let err = api_error(
        classes
            .create(
                &PostParams::default(),
                &object(json!({"metadata": {"name": reserved}, "value": 1000})),
            )
            .await,
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            "priority class names with 'system-' prefix are reserved for system use only"
        ),
        "{}",
        err.message
    );

    let storage: Api<StorageClass> = Api::all(client.clone());
    let class = storage
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": format!("fast-{suffix}")}, "provisioner": "example.com/disk"})),
        )
        .await
        .expect("created");
    assert_eq!(
        (
            class.reclaim_policy.as_deref(),
            class.volume_binding_mode.as_deref()
        ),
        (Some("Delete"), Some("Immediate"))
    );

    let drivers: Api<CSIDriver> = Api::all(client.clone());
    let driver = drivers
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": format!("{suffix}.example.com")}, "spec": {}})),
        )
        .await
        .expect("created");
    let spec = driver.spec;
    assert_eq!(
        (spec.attach_required, spec.fs_group_policy.as_deref()),
        (Some(true), Some("ReadWriteOnceWithFSType"))
    );

    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let volume = volumes
        .create(
            &PostParams::default(),
            &object(json!({
                "metadata": {"name": format!("pv-{suffix}")},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}
            })),
        )
        .await
        .expect("created");
    assert_eq!(
        volume
            .spec
            .expect("spec")
            .persistent_volume_reclaim_policy
            .as_deref(),
        Some("Retain")
    );
    assert_eq!(
        volume.status.expect("status").phase.as_deref(),
        Some("Pending")
    );

    let runtimes: Api<RuntimeClass> = Api::all(client);
    runtimes
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": format!("gvisor-{suffix}")}, "handler": "runsc"})),
        )
        .await
        .expect("a node.k8s.io RuntimeClass is served");
}
