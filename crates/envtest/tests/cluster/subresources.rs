//! Writes beyond plain CRUD: graceful Pod deletion that a later DELETE may
//! shorten, PUT that creates where kube-apiserver allows it, and the
//! `pods/binding` and `pods/eviction` subresources.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::common::{api_error, client, client_as, namespace};

fn pod(name: &str, node: Option<&str>) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
}

fn deletion(pod: &Pod) -> (jiff::Timestamp, i64) {
    let at = pod
        .metadata
        .deletion_timestamp
        .as_ref()
        .expect("deletionTimestamp")
        .0;
    let grace = pod
        .metadata
        .deletion_grace_period_seconds
        .expect("deletionGracePeriodSeconds");
    (at, grace)
}

async fn delete_pod(pods: &Api<Pod>, name: &str, grace: Option<u32>) -> Option<Pod> {
    let params = DeleteParams {
        grace_period_seconds: grace,
        ..DeleteParams::default()
    };
    pods.delete(name, &params)
        .await
        .expect("delete answered")
        .left()
}

/// A scheduled Pod is deleted gracefully: its deletionTimestamp is when the
/// grace period ends. A later DELETE may shorten the period (moving the
/// timestamp back by the difference) but not lengthen it, and 0 removes it.
#[tokio::test]
async fn a_later_delete_may_only_shorten_a_pods_grace_period() {
    let client = client().await;
    let ns = namespace(&client, "graceful").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &pod("bound", Some("node-1")))
        .await
        .expect("created");

    let before = jiff::Timestamp::now();
    let first = delete_pod(&pods, "bound", None).await.expect("the Pod");
    let (deadline, grace) = deletion(&first);
    assert_eq!(grace, 30, "the Pod's terminationGracePeriodSeconds");
    let ahead = deadline.duration_since(before).as_secs();
    assert!((28..=31).contains(&ahead), "deadline {ahead} s ahead");

    let shorter = delete_pod(&pods, "bound", Some(5)).await.expect("the Pod");
    let (shortened, grace) = deletion(&shorter);
    assert_eq!(grace, 5);
    assert_eq!(deadline.duration_since(shortened).as_secs(), 25);
    assert_ne!(shorter.resource_version(), first.resource_version());

    let longer = delete_pod(&pods, "bound", Some(20)).await.expect("the Pod");
    assert_eq!(
        deletion(&longer),
        (shortened, 5),
        "a longer period is ignored"
    );
    assert_eq!(longer.resource_version(), shorter.resource_version());
    assert!(pods.get_opt("bound").await.expect("get").is_some());

    delete_pod(&pods, "bound", Some(0)).await;
    assert!(pods.get_opt("bound").await.expect("get").is_none());
}

/// PUT of a missing object creates it (201) for the kinds whose strategy
/// allows it (Leases, Services, ...), ignoring a made-up resourceVersion;
/// other kinds answer 404. Creating this way needs the `create` verb.
#[tokio::test]
async fn put_creates_where_kube_apiserver_allows_it() {
    let client = client().await;
    let ns = namespace(&client, "put-create").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "l1", "resourceVersion": "12345"},
        "spec": {"holderIdentity": "me"}
    }))
    .expect("lease");
    let created = leases
        .replace("l1", &PostParams::default(), &lease)
        .await
        .expect("PUT creates the Lease");
    assert_eq!(
        created
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref()),
        Some("me")
    );
    assert_ne!(created.resource_version().as_deref(), Some("12345"));
    let managers: Vec<_> = created
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| m.operation.clone().unwrap_or_default())
        .collect();
    assert_eq!(managers, ["Update"]);

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c1"}})).expect("configmap");
    let err = api_error(configmaps.replace("c1", &PostParams::default(), &cm).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "configmaps \"c1\" not found")
    );

    // A user who may update Leases but not create them cannot PUT one into being.
    let rules = [
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}),
    ];
    let user = grant(&client, &ns, "lease-updater", &rules).await;
    let as_user: Api<Lease> = Api::namespaced(client_as(&user, &[]).await, &ns);
    let err = api_error(
        as_user
            .replace("l2", &PostParams::default(), &lease_named("l2"))
            .await,
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        format!(
            "leases.coordination.k8s.io \"l2\" is forbidden: User \"{user}\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"{ns}\""
        )
    );
    // Updating one that exists is what it may do.
    as_user
        .replace("l1", &PostParams::default(), &lease_named("l1"))
        .await
        .expect("update allowed");
}

fn lease_named(name: &str) -> Lease {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"holderIdentity": "you"}}))
        .expect("lease")
}

/// A user bound in `ns` to a Role with `rules`; returns its name.
pub async fn grant(client: &Client, ns: &str, user: &str, rules: &[serde_json::Value]) -> String {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let role: Role =
        serde_json::from_value(json!({"metadata": {"name": user}, "rules": rules})).expect("role");
    Api::<Role>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}))
    .expect("binding");
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");
    user.to_string()
}

/// `pods/binding` as a scheduler uses it: the Pod gets its node and the
/// PodScheduled condition; a second binding is a 409, a Binding naming
/// another Pod a 400.
#[tokio::test]
async fn binding_assigns_a_pod_to_a_node_once() {
    let client = client().await;
    let ns = namespace(&client, "binding").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &pod("b1", None))
        .await
        .expect("created");
    let bind = |name: &str, node: &str| {
        let body = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
        let pods = pods.clone();
        async move {
            pods.create_subresource::<serde_json::Value, serde_json::Value>(
                "binding",
                "b1",
                &PostParams::default(),
                &body,
            )
            .await
        }
    };
    let status = bind("b1", "node-1").await.expect("bound");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["code"], 201);

    let bound = pods.get("b1").await.expect("get");
    assert_eq!(
        bound.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("node-1")
    );
    let conditions = bound.status.and_then(|s| s.conditions).unwrap_or_default();
    assert_eq!(conditions.len(), 1);
    assert_eq!(
        (conditions[0].type_.as_str(), conditions[0].status.as_str()),
        ("PodScheduled", "True")
    );
    assert!(conditions[0].last_transition_time.is_some());

    let err = api_error(bind("b1", "node-2").await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            409,
            "Operation cannot be fulfilled on pods/binding \"b1\": pod b1 is already assigned to node \"node-1\""
        )
    );
    let err = api_error(bind("other", "node-2").await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "name in URL does not match name in Binding object")
    );
}

/// `pods/eviction` of a Pod no budget protects: a Pending Pod is deleted
/// at once (201 Status), a missing one is a 404.
#[tokio::test]
async fn eviction_deletes_a_pod_no_budget_protects() {
    use kube::api::EvictParams;
    let client = client().await;
    let ns = namespace(&client, "evict").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(&PostParams::default(), &pod("ev1", None))
        .await
        .expect("created");
    let status = pods
        .evict("ev1", &EvictParams::default())
        .await
        .expect("evicted");
    assert_eq!(
        (status.status, status.code),
        (Some(kube::core::response::StatusSummary::Success), 201)
    );
    assert!(pods.get_opt("ev1").await.expect("get").is_none());
    let err = api_error(pods.evict("nosuch", &EvictParams::default()).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "pods \"nosuch\" not found")
    );
}
