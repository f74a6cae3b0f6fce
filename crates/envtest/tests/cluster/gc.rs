//! The garbage collector as kube-controller-manager's: owner references are
//! resolved through their apiVersion, kind and name; what it cannot resolve
//! or may not judge is left alone.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::common::{client, eventually, namespace};
use crate::server;

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid})
}

async fn configmap(client: &Client, ns: &str, name: &str, owners: Vec<Value>) -> ConfigMap {
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": name, "ownerReferences": owners}, "data": {"a": "b"}}),
    )
    .expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_or_else(|e| panic!("creating configmap {name}: {e}"))
}

/// Waits a moment and checks `name` is still there (the collector acts
/// within milliseconds, so a dependent it would delete is gone by then).
async fn still_there(
    api: &Api<impl kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug>,
    name: &str,
) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        api.get_opt(name).await.expect("get").is_some(),
        "{name} was collected"
    );
}

async fn warnings_about(client: &Client, ns: &str, name: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let selector = format!("involvedObject.name={name},reason=OwnerRefInvalidNamespace");
    events
        .list(&ListParams::default().fields(&selector))
        .await
        .expect("events")
        .items
}

/// A cluster-scoped dependent of a namespaced owner is never collected, even
/// once the owner is gone, and gets kube-controller-manager's
/// `OwnerRefInvalidNamespace` Warning (in `default`, as for every
/// cluster-scoped object).
#[tokio::test]
async fn a_cluster_scoped_dependent_of_a_namespaced_owner_is_never_collected() {
    let client = client().await;
    let ns = namespace(&client, "gc-scope").await;
    let owner = configmap(&client, &ns, "owner", Vec::new()).await;
    let uid = owner.uid().expect("uid");
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let name = server::unique_name("gc-scope-dependent");
    let dependent: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": [owner_ref("v1", "ConfigMap", "owner", &uid)]}
    }))
    .expect("role");
    let dependent = roles
        .create(&PostParams::default(), &dependent)
        .await
        .expect("created");

    let warning = eventually("the OwnerRefInvalidNamespace event", async || {
        warnings_about(&client, "default", &name).await.pop()
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        warning.message.as_deref(),
        Some(
            format!(
                "ownerRef [v1/ConfigMap, namespace: , name: owner, uid: {uid}] does not exist in namespace \"\""
            )
            .as_str()
        )
    );
    assert_eq!(
        warning.source.and_then(|s| s.component).as_deref(),
        Some("garbage-collector-controller")
    );
    let involved = warning.involved_object;
    assert_eq!(
        (
            involved.kind.as_deref(),
            involved.uid.as_deref(),
            involved.namespace.as_deref()
        ),
        (Some("ClusterRole"), dependent.uid().as_deref(), None)
    );

    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .delete("owner", &DeleteParams::default())
        .await
        .expect("owner deleted");
    still_there(&roles, &name).await;
    roles
        .delete(&name, &DeleteParams::default())
        .await
        .expect("deleted");
}

/// A namespaced owner in another namespace is no owner: the dependent is
/// collected (its owner is not found where it looks) and gets the Warning.
#[tokio::test]
async fn an_owner_in_another_namespace_is_reported_and_its_dependent_collected() {
    let client = client().await;
    let (home, elsewhere) = (
        namespace(&client, "gc-home").await,
        namespace(&client, "gc-elsewhere").await,
    );
    let owner = configmap(&client, &elsewhere, "owner", Vec::new()).await;
    let uid = owner.uid().expect("uid");
    configmap(
        &client,
        &home,
        "dependent",
        vec![owner_ref("v1", "ConfigMap", "owner", &uid)],
    )
    .await;
    let warning = eventually("the OwnerRefInvalidNamespace event", async || {
        warnings_about(&client, &home, "dependent").await.pop()
    })
    .await;
    assert_eq!(
        warning.message.as_deref(),
        Some(
            format!(
                "ownerRef [v1/ConfigMap, namespace: {home}, name: owner, uid: {uid}] does not exist in namespace \"{home}\""
            )
            .as_str()
        )
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &home);
    eventually("the dependent to be collected", async || {
        configmaps
            .get_opt("dependent")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
}

/// Owners are found by name and must carry the reference's uid: a reference
/// naming another object than the uid's is dangling.
#[tokio::test]
async fn owners_are_looked_up_by_name_and_uid() {
    let client = client().await;
    let ns = namespace(&client, "gc-name").await;
    let owner = configmap(&client, &ns, "owner", Vec::new()).await;
    let uid = owner.uid().expect("uid");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    configmap(
        &client,
        &ns,
        "right",
        vec![owner_ref("v1", "ConfigMap", "owner", &uid)],
    )
    .await;
    configmap(
        &client,
        &ns,
        "wrong-name",
        vec![owner_ref("v1", "ConfigMap", "not-the-owner", &uid)],
    )
    .await;
    eventually("the misnamed dependent to be collected", async || {
        configmaps
            .get_opt("wrong-name")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    still_there(&configmaps, "right").await;
}

/// An owner reference to a kind nothing serves never leads to deletion; once
/// a CRD serves the kind (and no such owner exists) the dependent goes.
#[tokio::test]
async fn owners_of_kinds_not_served_never_lead_to_deletion() {
    let client = client().await;
    let ns = namespace(&client, "gc-kind").await;
    let group = format!("{}.gc.opctl.test", server::unique_name("kinds"));
    let reference = owner_ref(
        &format!("{group}/v1"),
        "Thing",
        "thing",
        "5b1f4bde-96a4-4c4f-bd6e-6a5d3c0e7a11",
    );
    configmap(&client, &ns, "orphan-of-thing", vec![reference]).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    still_there(&configmaps, "orphan-of-thing").await;

    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": format!("things.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("crd");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("crd created");
    eventually(
        "the dependent to be collected once Thing is served",
        async || {
            configmaps
                .get_opt("orphan-of-thing")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
    crds.delete(&format!("things.{group}"), &DeleteParams::default())
        .await
        .expect("crd deleted");
}
