//! kube-apiserver v1.32's default admission plugins that change what a Pod
//! create gets: Priority and LimitRanger.

use k8s_openapi::api::core::v1::{LimitRange, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::{api_error, client, namespace};
use crate::server;

fn pod(name: &str, spec_extra: Value) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
}

#[tokio::test]
async fn priority_comes_from_the_pods_priority_class() {
    let client = client().await;
    let ns = namespace(&client, "priority").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let class = server::unique_name("batch-low");
    let object: PriorityClass = serde_json::from_value(json!({
        "metadata": {"name": class}, "value": 100, "preemptionPolicy": "Never"
    }))
    .expect("class");
    Api::<PriorityClass>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .expect("created");

    let created = pods
        .create(
            &PostParams::default(),
            &pod("low", json!({"priorityClassName": class})),
        )
        .await
        .expect("created");
    let spec = created.spec.expect("spec");
    assert_eq!(
        (spec.priority, spec.preemption_policy.as_deref()),
        (Some(100), Some("Never"))
    );

    let plain = pods
        .create(&PostParams::default(), &pod("plain", json!({})))
        .await
        .expect("created");
    assert_eq!(plain.spec.expect("spec").priority, Some(0));

    let err = api_error(
        pods.create(
            &PostParams::default(),
            &pod("nosuch", json!({"priorityClassName": "nosuch"})),
        )
        .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            403,
            "pods \"nosuch\" is forbidden: no PriorityClass with name nosuch was found"
        )
    );
    let err = api_error(
        pods.create(&PostParams::default(), &pod("own", json!({"priority": 5})))
            .await,
    );
    assert_eq!(err.code, 403);
    assert!(
        err.message
            .contains("the integer value of priority (5) must not be provided in pod spec"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn limit_ranges_default_and_bound_container_resources() {
    let client = client().await;
    let ns = namespace(&client, "limits").await;
    let ranges: Api<LimitRange> = Api::namespaced(client.clone(), &ns);
    let range: LimitRange = serde_json::from_value(json!({
        "metadata": {"name": "lr"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "50m"}, "default": {"cpu": "500m", "memory": "128Mi"}}]}
    }))
    .expect("range");
    let stored = ranges
        .create(&PostParams::default(), &range)
        .await
        .expect("created");
    // A missing default request is the default limit.
    let item = &stored.spec.expect("spec").limits[0];
    let request = item.default_request.as_ref().expect("defaultRequest");
    assert_eq!(request["cpu"].0, "500m");

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let created = pods
        .create(&PostParams::default(), &pod("defaults", json!({})))
        .await
        .expect("created");
    let resources = created.spec.expect("spec").containers[0]
        .resources
        .clone()
        .expect("resources");
    assert_eq!(resources.limits.expect("limits")["memory"].0, "128Mi");
    assert_eq!(resources.requests.expect("requests")["cpu"].0, "500m");
    assert_eq!(
        created
            .metadata
            .annotations
            .expect("annotations")
            .get("kubernetes.io/limit-ranger")
            .map(String::as_str),
        Some(
            "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
        )
    );

    let too_big = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9", "resources": {"limits": {"cpu": "2"}}}]});
    let err = api_error(
        pods.create(&PostParams::default(), &pod("big", too_big))
            .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            403,
            "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
        )
    );

    let bad: LimitRange = serde_json::from_value(json!({
        "metadata": {"name": "bad"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "2"}, "max": {"cpu": "1"}}]}
    }))
    .expect("range");
    let err = api_error(ranges.create(&PostParams::default(), &bad).await);
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("default value 2 is greater than max value 1"),
        "{}",
        err.message
    );
}
