//! Metadata-only requests (`as=PartialObjectMetadata[List]`) on every verb,
//! for a built-in kind and a custom resource, as kube-rs's metadata API and
//! its metadata watcher make them.

use std::fmt::Debug;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{NamespaceResourceScope, PartialObjectMeta, Request};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt, Resource};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::kube_support::{api_status, install_crd, setup};

const POM: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const POM_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "meta.opctl.test", version = "v1", kind = "Gadget", namespaced)]
pub struct GadgetSpec {
    pub size: i64,
}

/// Sends a kube-rs request with another Accept header and decodes the answer as `T`.
async fn with_accept<T: DeserializeOwned>(
    client: &Client,
    mut request: axum::http::Request<Vec<u8>>,
    accept: &str,
) -> Result<T, kube::Error> {
    request.headers_mut().insert(
        axum::http::header::ACCEPT,
        axum::http::HeaderValue::from_str(accept).expect("accept header"),
    );
    client.request::<T>(request).await
}

type Events<T> = BoxStream<'static, Result<watcher::Event<T>, watcher::Error>>;

/// The next event of a watcher, within 10 s.
async fn next_event<T: Debug>(events: &mut Events<T>, kind: &str) -> watcher::Event<T> {
    match tokio::time::timeout(std::time::Duration::from_secs(10), events.try_next()).await {
        Ok(Ok(Some(event))) => event,
        other => panic!("{kind}: the metadata watcher ended or stalled: {other:?}"),
    }
}

/// Every verb, asked for metadata only, on objects of `api`'s kind.
async fn every_verb<K>(client: &Client, api: &Api<K>, ns: &str, new: impl Fn(&str) -> K)
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let kind = K::kind(&()).to_string();
    let request = Request::new(K::url_path(&(), Some(ns)));

    // POST
    let body = serde_json::to_vec(&new("m1")).expect("body");
    let create = request
        .create(&PostParams::default(), body)
        .expect("request");
    let created: PartialObjectMeta<K> = with_accept(client, create, POM)
        .await
        .unwrap_or_else(|e| panic!("{kind}: create as PartialObjectMetadata: {e}"));
    let types = created.types.as_ref().expect("typed answer");
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    assert_eq!(created.metadata.name.as_deref(), Some("m1"));
    assert!(created.metadata.uid.is_some());

    // PATCH: kube-rs's patch_metadata, merge and server-side apply.
    let labelled = api
        .patch_metadata(
            "m1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "a"}, "finalizers": ["meta.opctl.test/hold"]}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: patch_metadata (merge): {e}"));
    assert_eq!(labelled.metadata.labels.unwrap_or_default()["tier"], "a");
    let apply = json!({
        "apiVersion": K::api_version(&()), "kind": kind,
        "metadata": {"name": "m1", "annotations": {"owner": "metadata-test"}},
    });
    let applied = api
        .patch_metadata("m1", &PatchParams::apply("meta-test"), &Patch::Apply(apply))
        .await
        .unwrap_or_else(|e| panic!("{kind}: patch_metadata (apply): {e}"));
    assert_eq!(
        applied.metadata.annotations.unwrap_or_default()["owner"],
        "metadata-test"
    );
    assert_eq!(
        applied.metadata.finalizers.as_deref(),
        Some(&["meta.opctl.test/hold".to_string()][..])
    );

    // PUT
    let mut full = api.get("m1").await.expect("get");
    full.meta_mut().labels = Some([("tier".to_string(), "b".to_string())].into());
    let body = serde_json::to_vec(&full).expect("body");
    let replace = request
        .replace("m1", &PostParams::default(), body)
        .expect("request");
    let replaced: PartialObjectMeta<K> = with_accept(client, replace, POM)
        .await
        .unwrap_or_else(|e| panic!("{kind}: replace as PartialObjectMetadata: {e}"));
    assert_eq!(replaced.metadata.labels.unwrap_or_default()["tier"], "b");

    // GET and LIST
    let got = api.get_metadata("m1").await.expect("get_metadata");
    assert_eq!(
        got.metadata.resource_version,
        replaced.metadata.resource_version
    );
    let listed = api
        .list_metadata(&ListParams::default().labels("tier=b"))
        .await
        .unwrap_or_else(|e| panic!("{kind}: list_metadata: {e}"));
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name.as_deref(), Some("m1"));

    // The shapes that do not fit the answer are 406, as kube-apiserver's.
    let get = request.get("m1", &Default::default()).expect("request");
    let status = api_status(with_accept::<serde_json::Value>(client, get, POM_LIST).await);
    assert_eq!(status.code, 406);
    assert!(
        status.message.starts_with(
            "you requested PartialObjectMetadataList, but the requested object is not a list (*"
        ),
        "{}",
        status.message
    );
    let list = request.list(&ListParams::default()).expect("request");
    let status = api_status(with_accept::<serde_json::Value>(client, list, POM).await);
    assert_eq!(status.code, 406);
    assert!(
        status.message.starts_with(
            "you requested PartialObjectMetadata, but the requested object is a list (*"
        ),
        "{}",
        status.message
    );

    // DELETE of an object held by a finalizer answers the object: its metadata.
    let delete = request
        .delete("m1", &DeleteParams::default())
        .expect("request");
    let deleting: PartialObjectMeta<K> = with_accept(client, delete, POM)
        .await
        .unwrap_or_else(|e| panic!("{kind}: delete as PartialObjectMetadata: {e}"));
    assert!(deleting.metadata.deletion_timestamp.is_some());

    // The metadata watcher sees the finalizer go and the object with it.
    let metadata_api: Api<PartialObjectMeta<K>> = Api::namespaced(client.clone(), ns);
    let mut events = watcher::watcher(metadata_api, watcher::Config::default()).boxed();
    while !matches!(
        next_event(&mut events, &kind).await,
        watcher::Event::InitDone
    ) {}
    api.patch_metadata(
        "m1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap_or_else(|e| panic!("{kind}: patch_metadata removing the finalizer: {e}"));
    loop {
        if let watcher::Event::Delete(gone) = next_event(&mut events, &kind).await {
            assert_eq!(gone.metadata.name.as_deref(), Some("m1"));
            break;
        }
    }
}

#[tokio::test]
async fn every_verb_answers_metadata_only_for_configmaps() {
    let (client, ns) = setup("meta-cm").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    every_verb(&client, &api, &ns, |name| {
        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}}))
            .expect("configmap")
    })
    .await;
}

#[tokio::test]
async fn every_verb_answers_metadata_only_for_custom_resources() {
    let (client, ns) = setup("meta-cr").await;
    install_crd(&client, &Gadget::crd()).await;
    let api: Api<Gadget> = Api::namespaced(client.clone(), &ns);
    every_verb(&client, &api, &ns, |name| {
        Gadget::new(name, GadgetSpec { size: 1 })
    })
    .await;
}
