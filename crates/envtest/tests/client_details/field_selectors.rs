//! Field selectors as kube-apiserver v1.32 takes them, through kube-rs:
//! each kind's own field labels on lists and watches, fields an object
//! leaves out selecting as their Go zero value, and labels a kind does not
//! take refused with the real server's 400.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::{Client, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::kube_support::setup;

async fn names<K>(api: &Api<K>, fields: &str) -> Vec<String>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut names: Vec<String> = api
        .list(&ListParams::default().fields(fields))
        .await
        .unwrap_or_else(|e| panic!("list with {fields}: {e}"))
        .items
        .iter()
        .map(|o| o.name_any())
        .collect();
    names.sort();
    names
}

async fn refusal<K>(api: &Api<K>, fields: &str) -> String
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.list(&ListParams::default().fields(fields)).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 400, "{status:?}");
            status.message
        }
        other => panic!("{fields} should be refused, got {other:?}"),
    }
}

async fn create<K>(api: &Api<K>, body: serde_json::Value)
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(body).expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create");
}

fn pod(name: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn pods_select_by_their_own_fields_and_absent_ones_as_zero_values() {
    let (client, ns) = setup("fs-pods").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    create(&pods, pod("plain", json!({}))).await;
    create(
        &pods,
        pod(
            "host",
            json!({"hostNetwork": true, "restartPolicy": "Never"}),
        ),
    )
    .await;
    create(&pods, pod("placed", json!({"nodeName": "node-a"}))).await;

    assert_eq!(
        names(&pods, "spec.hostNetwork=false").await,
        ["placed", "plain"]
    );
    assert_eq!(names(&pods, "spec.hostNetwork=true").await, ["host"]);
    assert_eq!(names(&pods, "spec.restartPolicy=Never").await, ["host"]);
    assert_eq!(names(&pods, "spec.nodeName=").await, ["host", "plain"]);
    assert_eq!(names(&pods, "spec.nodeName=node-a").await, ["placed"]);
    // The old clients' name for spec.nodeName.
    assert_eq!(names(&pods, "spec.host=node-a").await, ["placed"]);
    assert_eq!(
        names(
            &pods,
            "status.phase=Pending,spec.serviceAccountName=default"
        )
        .await,
        ["host", "placed", "plain"]
    );
    assert_eq!(
        refusal(&pods, "spec.containers.image=busybox").await,
        "field label not supported: spec.containers.image"
    );
}

#[tokio::test]
async fn a_watch_sends_only_objects_its_field_selector_takes() {
    let (client, ns) = setup("fs-watch").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let rv = secrets
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let params = WatchParams::default()
        .fields("type=kubernetes.io/tls")
        .timeout(5);
    let mut stream = secrets.watch(&params, &rv).await.expect("watch").boxed();
    create(
        &secrets,
        json!({"metadata": {"name": "opaque"}, "stringData": {"a": "b"}}),
    )
    .await;
    create(
        &secrets,
        json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
               "stringData": {"tls.crt": "c", "tls.key": "k"}}),
    )
    .await;
    let first = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .expect("an event within 5 s")
        .expect("stream")
        .expect("event");
    match first {
        WatchEvent::Added(s) => assert_eq!(s.name_any(), "tls"),
        other => panic!("expected tls ADDED, got {other:?}"),
    }
    assert_eq!(names(&secrets, "type=Opaque").await, ["opaque"]);
}

#[tokio::test]
async fn events_select_by_involved_object_source_and_type() {
    let (client, ns) = setup("fs-events").await;
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    create(
        &events,
        json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p1", "namespace": ns},
               "reason": "Started", "type": "Normal", "source": {"component": "kubelet"}, "message": "m"}),
    )
    .await;
    create(
        &events,
        json!({"metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod", "name": "p2", "namespace": ns},
               "reason": "Failed", "type": "Warning", "reportingComponent": "my-operator",
               "reportingInstance": "i-1", "message": "m"}),
    )
    .await;
    assert_eq!(names(&events, "involvedObject.name=p1").await, ["e1"]);
    assert_eq!(
        names(&events, "type=Warning,involvedObject.kind=Pod").await,
        ["e2"]
    );
    assert_eq!(names(&events, "source=kubelet").await, ["e1"]);
    // An Event with no source selects by its reporting controller.
    assert_eq!(names(&events, "source=my-operator").await, ["e2"]);
    assert_eq!(
        names(&events, "reportingComponent=my-operator").await,
        ["e2"]
    );
}

#[tokio::test]
async fn kinds_without_field_labels_of_their_own_refuse_with_the_default_message() {
    let client: Client = crate::kube_support::shared_client().await;
    let replicasets: Api<ReplicaSet> = Api::all(client);
    // apps/v1 registers no field-label conversion: status.replicas is refused.
    assert_eq!(
        refusal(&replicasets, "status.replicas=0").await,
        "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
}
