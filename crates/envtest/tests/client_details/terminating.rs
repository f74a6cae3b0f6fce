//! Namespaces and CRDs stay Terminating until their contents are gone, and
//! a kube-rs watch sees the events a real cluster sends: the deletion
//! (MODIFIED, Terminating), the controller's progress (MODIFIED), then
//! DELETED; within milliseconds, not kube-controller-manager's seconds.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::kube_support::{client_for, create_namespace, install_crd, setup};
use crate::server;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "terminating.opctl.test",
    version = "v1",
    kind = "Anchor",
    namespaced
)]
pub struct AnchorSpec {
    pub size: i64,
}

/// The events of a watch on one object until it is DELETED (at most 10 s):
/// (type, object) pairs.
async fn until_deleted<K>(api: &Api<K>, name: &str, rv: &str) -> Vec<(&'static str, K)>
where
    K: Clone + DeserializeOwned + std::fmt::Debug + 'static,
{
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(10);
    let mut stream = api.watch(&params, rv).await.expect("watch").boxed();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Ok(Some(event))) = tokio::time::timeout_at(deadline, stream.try_next()).await {
        match event {
            WatchEvent::Added(o) => seen.push(("ADDED", o)),
            WatchEvent::Modified(o) => seen.push(("MODIFIED", o)),
            WatchEvent::Deleted(o) => {
                seen.push(("DELETED", o));
                return seen;
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => {}
        }
    }
    panic!("{name} was not deleted within 10 s; events: {seen:?}");
}

fn condition<'a>(ns: &'a Namespace, type_: &str) -> Option<&'a str> {
    ns.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .and_then(|c| c.reason.as_deref())
}

#[tokio::test]
async fn a_deleted_namespace_is_terminating_until_its_content_is_gone() {
    // A grace long enough for the checks below on a loaded machine.
    let env = server::start(opctl_envtest::Config {
        namespace_deletion_grace: Duration::from_secs(1),
        ..Default::default()
    })
    .await;
    let client = client_for(&env.kubeconfig_yaml()).await;
    let ns = server::unique_name("term-ns");
    create_namespace(&client, &ns).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c1"}, "data": {"a": "1"}})).unwrap();
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .expect("configmap");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let rv = namespaces
        .get(&ns)
        .await
        .expect("namespace")
        .resource_version()
        .unwrap_or_default();

    let watch = {
        let namespaces = namespaces.clone();
        let (ns, rv) = (ns.clone(), rv.clone());
        tokio::spawn(async move { until_deleted(&namespaces, &ns, &rv).await })
    };
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("delete");
    // Right after the DELETE the namespace is Terminating and still holds its
    // content: existing objects can be updated, new ones are refused.
    let got = namespaces.get(&ns).await.expect("still there");
    assert_eq!(
        got.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    configmaps
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .expect("an existing object is still updated");
    let refused = configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap(),
        )
        .await;
    assert!(matches!(refused, Err(kube::Error::Api(s)) if s.code == 403));

    let events = watch.await.expect("watch task");
    let kinds: Vec<&str> = events.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, ["MODIFIED", "MODIFIED", "DELETED"], "{events:?}");
    let terminating = &events[0].1;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(condition(terminating, "NamespaceContentRemaining"), None);
    let reported = &events[1].1;
    assert_eq!(
        condition(reported, "NamespaceContentRemaining"),
        Some("ContentRemoved")
    );
    assert_eq!(
        condition(reported, "NamespaceDeletionDiscoveryFailure"),
        Some("ResourcesDiscovered")
    );
    assert!(
        configmaps
            .list(&Default::default())
            .await
            .map(|l| l.items.is_empty())
            .unwrap_or(true)
    );
    env.shutdown().await;
}

#[tokio::test]
async fn a_namespace_reports_what_holds_it_and_goes_once_released() {
    let (client, ns) = setup("term-held").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let held: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "held", "finalizers": ["terminating.opctl.test/hold"]},
    }))
    .unwrap();
    configmaps
        .create(&PostParams::default(), &held)
        .await
        .expect("configmap");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("delete");
    let reported =
        kube::runtime::wait::await_condition(namespaces.clone(), &ns, |n: Option<&Namespace>| {
            n.and_then(|n| condition(n, "NamespaceFinalizersRemaining"))
                == Some("SomeFinalizersRemain")
        });
    let ns_obj = tokio::time::timeout(Duration::from_secs(10), reported)
        .await
        .expect("conditions within 10 s")
        .expect("wait")
        .expect("namespace");
    let messages: Vec<String> = ns_obj
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| c.message)
        .collect();
    assert!(
        messages.contains(
            &"Some resources are remaining: configmaps. has 1 resource instances".to_string()
        ),
        "{messages:?}"
    );
    assert!(messages.contains(&"Some content in the namespace has finalizers remaining: terminating.opctl.test/hold in 1 resource instances".to_string()), "{messages:?}");
    let rv = namespaces
        .get(&ns)
        .await
        .expect("namespace")
        .resource_version()
        .unwrap_or_default();
    let watch = {
        let namespaces = namespaces.clone();
        let (ns, rv) = (ns.clone(), rv.clone());
        tokio::spawn(async move { until_deleted(&namespaces, &ns, &rv).await })
    };
    configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release");
    let events = watch.await.expect("watch task");
    assert_eq!(events.last().map(|(k, _)| *k), Some("DELETED"));
}

#[tokio::test]
async fn a_deleted_crd_is_terminating_until_its_instances_are_gone() {
    let (client, ns) = setup("term-crd").await;
    install_crd(&client, &Anchor::crd()).await;
    let anchors: Api<Anchor> = Api::namespaced(client.clone(), &ns);
    let mut anchor = Anchor::new("held", AnchorSpec { size: 1 });
    anchor.metadata.finalizers = Some(vec!["terminating.opctl.test/hold".into()]);
    anchors
        .create(&PostParams::default(), &anchor)
        .await
        .expect("anchor");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = Anchor::crd_name();
    let rv = crds
        .get(name)
        .await
        .expect("crd")
        .resource_version()
        .unwrap_or_default();
    let watch = {
        let crds = crds.clone();
        let rv = rv.clone();
        tokio::spawn(async move { until_deleted(&crds, name, &rv).await })
    };
    crds.delete(name, &DeleteParams::default())
        .await
        .expect("delete the CRD");
    // The instance is being deleted, held by its finalizer; the CRD waits.
    let deleting =
        kube::runtime::wait::await_condition(anchors.clone(), "held", |a: Option<&Anchor>| {
            a.is_some_and(|a| a.metadata.deletion_timestamp.is_some())
        });
    tokio::time::timeout(Duration::from_secs(10), deleting)
        .await
        .expect("instance deleted within 10 s")
        .expect("wait");
    let crd = crds.get(name).await.expect("the CRD is still there");
    let reason = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Terminating"))
        .and_then(|c| c.reason.clone());
    assert_eq!(reason.as_deref(), Some("InstanceDeletionInProgress"));
    let refused = anchors
        .create(
            &PostParams::default(),
            &Anchor::new("late", AnchorSpec { size: 1 }),
        )
        .await;
    assert!(matches!(refused, Err(kube::Error::Api(s)) if s.code == 405));

    anchors
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release");
    let events = watch.await.expect("watch task");
    let kinds: Vec<&str> = events.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, ["MODIFIED", "MODIFIED", "DELETED"], "{kinds:?}");
}
