//! Metadata-only caches receive only metadata: the same 100 ConfigMaps of
//! 8 KiB each, cached whole and as metadata, cost the manager this many
//! bytes from the API server (printed; run with --nocapture to see them).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use opctl_runtime::{Manager, WatchScope};

use super::support::{PROJECT, Proxy, address_of, eventually, http_get, options, start};

const OBJECTS: usize = 100;
const DATA_BYTES: usize = 8 * 1024;

/// A manager whose one controller caches the labelled ConfigMaps (as
/// metadata when `metadata`): the bytes it received once ready.
async fn bytes_to_fill(env: &opctl_envtest::Envtest, metadata: bool) -> u64 {
    let proxy = Proxy::start(address_of(env)).await;
    let options = options(&[]);
    let probes = options.health_probe_bind_address;
    let selected = watcher::Config::default().labels("bench=caches");
    let manager = Manager::with_config(
        PROJECT,
        options,
        WatchScope::AllNamespaces,
        proxy.config(env).await,
    )
    .expect("a manager");
    let shutdown = manager.context().shutdown.clone();
    let manager = if metadata {
        manager.with_controller(
            "metadata",
            move |scope| {
                (
                    scope
                        .cache_metadata::<ConfigMap>(selected.clone())
                        .controller(),
                    (),
                )
            },
            |_: Arc<PartialObjectMeta<ConfigMap>>, _: Arc<()>| async {
                Ok::<_, kube::Error>(Action::await_change())
            },
        )
    } else {
        manager.with_controller(
            "whole",
            move |scope| (scope.cache::<ConfigMap>(selected.clone()).controller(), ()),
            |_: Arc<ConfigMap>, _: Arc<()>| async { Ok::<_, kube::Error>(Action::await_change()) },
        )
    };
    let running = tokio::spawn(manager.run());
    eventually(Duration::from_secs(20), "the caches to fill", || async {
        http_get(probes, "/readyz")
            .await
            .is_some_and(|(status, _)| status == 200)
    })
    .await;
    let received = proxy.received();
    shutdown.trigger();
    running
        .await
        .expect("joined")
        .expect("the manager stops cleanly");
    received
}

#[tokio::test]
async fn a_metadata_cache_receives_only_metadata() {
    let env = start().await;
    let api: Api<ConfigMap> = Api::namespaced(super::support::admin(&env).await, "default");
    for n in 0..OBJECTS {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(format!("cached-{n}"));
        object.metadata.labels = Some([("bench".to_owned(), "caches".to_owned())].into());
        object.data = Some([("payload".to_owned(), "x".repeat(DATA_BYTES))].into());
        api.create(&PostParams::default(), &object)
            .await
            .expect("created");
    }
    let whole = bytes_to_fill(&env, false).await;
    let metadata = bytes_to_fill(&env, true).await;
    println!(
        "{OBJECTS} ConfigMaps of {DATA_BYTES} bytes: whole objects {whole} bytes received, metadata only {metadata} bytes ({:.1}%)",
        metadata as f64 * 100.0 / whole as f64
    );
    assert!(whole > (OBJECTS * DATA_BYTES) as u64, "{whole}");
    assert!(
        metadata * 10 < whole,
        "metadata only: {metadata} bytes, whole: {whole} bytes"
    );
}
