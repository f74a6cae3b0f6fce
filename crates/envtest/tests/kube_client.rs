//! kube-rs (client and runtime) against envtest: what a generated operator
//! does must work as against a real cluster.
//!
//! Tests share one server (each in its own namespace), except the watcher
//! expiry test, which needs a server with a tiny watch history.

#[allow(dead_code)]
#[path = "support/kube.rs"]
mod kube_support;
#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use kube_support::{api_status, client_for, install_crd, setup};

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The ConfigMap the root-CA publisher puts in every namespace.
const ROOT_CA: &str = "kube-root-ca.crt";

/// The custom resource of these tests.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "kube.opctl.test",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "kw"
)]
pub struct WidgetSpec {
    pub color: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Installs the Widget CRD (once per server; later calls find it) and waits
/// until it is Established.
async fn widget_crd(client: &Client) {
    install_crd(client, &Widget::crd()).await;
}

fn configmap(name: &str, labels: serde_json::Value, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": data}))
        .expect("configmap")
}

#[tokio::test]
async fn typed_crud_of_configmaps() {
    let (client, ns) = setup("kr-crud").await;
    let api: Api<ConfigMap> = Api::namespaced(client, &ns);
    let created = api
        .create(
            &PostParams::default(),
            &configmap("c1", json!({"app": "a"}), json!({"k": "1"})),
        )
        .await
        .expect("create");
    let uid = created.uid().expect("uid is set");
    let rv1 = created.resource_version().expect("resourceVersion is set");
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(
        created.metadata.managed_fields.is_some(),
        "managedFields are recorded"
    );

    let fetched = api.get("c1").await.expect("get");
    assert_eq!(fetched.uid().as_deref(), Some(uid.as_str()));
    assert_eq!(
        fetched
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("1")
    );

    let mut changed = fetched.clone();
    changed.data = Some([("k".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("c1", &PostParams::default(), &changed)
        .await
        .expect("replace");
    let rv2 = replaced.resource_version().expect("rv");
    assert_ne!(rv1, rv2, "an update issues a new resourceVersion");

    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"m": "x"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.data.as_ref().map(|d| d.len()), Some(2));
    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"s": "y"}}})),
        )
        .await
        .expect("strategic merge patch");
    assert_eq!(patched.labels().get("s").map(String::as_str), Some("y"));
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .iter()
        .map(|c| c.name_any())
        .filter(|name| name != ROOT_CA)
        .collect();
    assert_eq!(names, ["c1"]);
    api.delete("c1", &DeleteParams::default())
        .await
        .expect("delete");
    let status = api_status(api.get("c1").await);
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
}

#[tokio::test]
async fn dynamic_objects_of_builtin_and_custom_kinds() {
    let (client, ns) = setup("kr-dyn").await;
    widget_crd(&client).await;
    for (gvk, body) in [
        (
            GroupVersionKind::gvk("", "v1", "ConfigMap"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d1"}, "data": {"a": "b"}}),
        ),
        (
            GroupVersionKind::gvk("kube.opctl.test", "v1", "Widget"),
            json!({"apiVersion": "kube.opctl.test/v1", "kind": "Widget", "metadata": {"name": "d1"}, "spec": {"color": "red"}}),
        ),
    ] {
        let (resource, caps) = kube::discovery::pinned_kind(&client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("discovery of {gvk:?}: {e}"));
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
        let object: DynamicObject = serde_json::from_value(body).expect("dynamic object");
        let created = api
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create {gvk:?}: {e}"));
        assert_eq!(
            created.types.as_ref().map(|t| t.kind.as_str()),
            Some(gvk.kind.as_str())
        );
        let listed = api.list(&ListParams::default()).await.expect("list");
        // Every namespace also holds the root-CA publisher's ConfigMap.
        let ours = listed.items.iter().filter(|o| o.name_any() != ROOT_CA);
        assert_eq!(ours.count(), 1, "{gvk:?}");
        api.delete("d1", &DeleteParams::default())
            .await
            .expect("delete");
    }
}

#[tokio::test]
async fn list_with_selectors_and_pagination() {
    let (client, ns) = setup("kr-list").await;
    let api: Api<ConfigMap> = Api::namespaced(client, &ns);
    for i in 0..7 {
        let app = if i % 2 == 0 { "web" } else { "db" };
        let labels = if i < 3 {
            json!({"app": app, "tier": "front"})
        } else {
            json!({"app": app})
        };
        api.create(
            &PostParams::default(),
            &configmap(&format!("cm-{i}"), labels, json!({})),
        )
        .await
        .expect("create");
    }
    let names = |list: &kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        let ours = list.iter().filter(|c| c.name_any() != ROOT_CA);
        ours.map(|c| c.name_any()).collect()
    };
    let web = api
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("list");
    assert_eq!(names(&web), ["cm-0", "cm-2", "cm-4", "cm-6"]);
    let set = api
        .list(&ListParams::default().labels("app in (db),tier"))
        .await
        .expect("list");
    assert_eq!(names(&set), ["cm-1"]);
    let not = api
        .list(&ListParams::default().labels("!tier,app!=web"))
        .await
        .expect("list");
    assert_eq!(names(&not), ["cm-3", "cm-5"]);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm-5"))
        .await
        .expect("list");
    assert_eq!(names(&by_name), ["cm-5"]);

    // Pages of this test's ConfigMaps (the namespace also holds the
    // root-CA publisher's).
    let ours = || ListParams::default().fields(&format!("metadata.name!={ROOT_CA}"));
    let mut pages = Vec::new();
    let mut params = ours().limit(3);
    loop {
        let page = api.list(&params).await.expect("page");
        pages.push(names(&page));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
        assert!(pages.len() < 10, "pagination does not end: {pages:?}");
    }
    assert_eq!(
        pages,
        [
            vec!["cm-0", "cm-1", "cm-2"],
            vec!["cm-3", "cm-4", "cm-5"],
            vec!["cm-6"]
        ]
    );
    // remainingItemCount is left out under a selector, as kube-apiserver does.
    let first = api.list(&ours().limit(3)).await.expect("page");
    assert_eq!(first.metadata.remaining_item_count, None);
    let all = api.list(&ListParams::default()).await.expect("list");
    let first = api
        .list(&ListParams::default().limit(3))
        .await
        .expect("page");
    let remaining = all.items.len() as i64 - 3;
    assert_eq!(first.metadata.remaining_item_count, Some(remaining));
}

#[tokio::test]
async fn a_watcher_relists_after_its_resource_version_expires() {
    // History of 16 changes: a watcher idle while 60 other writes happen
    // resumes from an expired resourceVersion.
    let server = server::start(opctl_envtest::Config {
        watch_history: 16,
        ..Default::default()
    })
    .await;
    let client = client_for(&server.kubeconfig_yaml()).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "expiry"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "expiry");
    // The churn goes to another namespace: the watcher sees none of it.
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "churn"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let churn: Api<ConfigMap> = Api::namespaced(client.clone(), "churn");
    configmaps
        .create(
            &PostParams::default(),
            &configmap("before", json!({}), json!({})),
        )
        .await
        .expect("create");

    // Short server-side timeouts make the watcher reconnect with its last
    // resourceVersion; without bookmarks that stays the last change it saw.
    let config = watcher::Config::default().timeout(1).disable_bookmarks();
    let mut stream = watcher(configmaps.clone(), config).boxed();
    let mut seen_expired = false;
    let mut seen_after = false;
    let mut initial_done = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    while !(seen_expired && seen_after && initial_done >= 2) {
        let next = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "watcher did not recover: 410 seen {seen_expired}, new object seen {seen_after}, InitDone {initial_done} times"
                )
            });
        match next {
            Some(Ok(watcher::Event::InitDone)) => {
                initial_done += 1;
                if initial_done == 1 {
                    for i in 0..60 {
                        churn
                            .create(
                                &PostParams::default(),
                                &configmap(&format!("c{i}"), json!({}), json!({})),
                            )
                            .await
                            .expect("churn write");
                    }
                }
            }
            Some(Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)))
                if cm.name_any() == "after" =>
            {
                seen_after = true;
            }
            Some(Ok(_)) => {}
            Some(Err(watcher::Error::WatchError(status))) if status.code == 410 => {
                seen_expired = true;
                // Made after the expiry: only a relist or the new watch shows it.
                configmaps
                    .create(
                        &PostParams::default(),
                        &configmap("after", json!({}), json!({})),
                    )
                    .await
                    .expect("create");
            }
            Some(Err(e)) => panic!("watcher error other than an expired resourceVersion: {e:?}"),
            None => panic!("watcher stream ended"),
        }
    }
    assert!(
        initial_done >= 2,
        "the watcher must relist after the 410 (InitDone seen {initial_done} times)"
    );
    server.shutdown().await;
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
}

struct Ctx {
    client: Client,
    reconciles: AtomicUsize,
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    let ns = widget.namespace().unwrap_or_default();
    let name = widget.name_any();
    let owner = widget.controller_owner_ref(&()).expect("owner reference");
    let child: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config"), "ownerReferences": [owner]},
        "data": {"color": widget.spec.color},
    }))
    .expect("child");
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    configmaps
        .patch(
            &format!("{name}-config"),
            &PatchParams::apply("widget-controller").force(),
            &Patch::Apply(&child),
        )
        .await?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let status =
        json!({"status": {"ready": true, "observedGeneration": widget.metadata.generation}});
    widgets
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Widget>, _: &ReconcileError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test]
async fn a_controller_reconciles_a_custom_resource_and_writes_status() {
    let (client, ns) = setup("kr-ctrl").await;
    widget_crd(&client).await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
    });
    let controller = Controller::new(widgets.clone(), watcher::Config::default())
        .owns(configmaps.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let running = tokio::spawn(controller);

    widgets
        .create(
            &PostParams::default(),
            &Widget::new(
                "w1",
                WidgetSpec {
                    color: "red".into(),
                    size: None,
                },
            ),
        )
        .await
        .expect("create widget");
    let ready = await_condition(widgets.clone(), "w1", |w: Option<&Widget>| {
        w.and_then(|w| w.status.as_ref())
            .is_some_and(|s| s.ready && s.observed_generation == Some(1))
    });
    tokio::time::timeout(Duration::from_secs(20), ready)
        .await
        .expect("status not written within 20 s")
        .expect("wait");
    let child = configmaps
        .get("w1-config")
        .await
        .expect("the owned ConfigMap exists");
    let owner = child
        .owner_references()
        .first()
        .cloned()
        .expect("ownerReference");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Widget", "w1", Some(true))
    );

    // A spec change bumps generation and is reconciled.
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}})),
        )
        .await
        .expect("patch spec");
    let updated = await_condition(widgets.clone(), "w1", |w: Option<&Widget>| {
        w.and_then(|w| w.status.as_ref())
            .is_some_and(|s| s.observed_generation == Some(2))
    });
    tokio::time::timeout(Duration::from_secs(20), updated)
        .await
        .expect("second reconcile within 20 s")
        .expect("wait");
    let color = configmaps
        .get("w1-config")
        .await
        .expect("child")
        .data
        .and_then(|d| d.get("color").cloned());
    assert_eq!(color.as_deref(), Some("blue"));

    // Deleting the owner collects the child.
    widgets
        .delete("w1", &DeleteParams::default())
        .await
        .expect("delete widget");
    let child_uid = child.uid().unwrap_or_default();
    let gone = await_condition(
        configmaps.clone(),
        "w1-config",
        conditions::is_deleted(&child_uid),
    );
    tokio::time::timeout(Duration::from_secs(20), gone)
        .await
        .expect("child not collected within 20 s")
        .expect("wait");
    running.abort();
    assert!(ctx.reconciles.load(Ordering::Relaxed) >= 2);
}

#[tokio::test]
async fn server_side_apply_conflicts_and_force() {
    let (client, ns) = setup("kr-ssa").await;
    let api: Api<ConfigMap> = Api::namespaced(client, &ns);
    let body = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"k": v}});
    let created = api
        .patch(
            "app",
            &PatchParams::apply("alpha"),
            &Patch::Apply(body("1")),
        )
        .await
        .expect("apply-create");
    assert_eq!(
        created
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("1")
    );
    let status = api_status(
        api.patch("app", &PatchParams::apply("beta"), &Patch::Apply(body("2")))
            .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "Conflict"),
        "{status:?}"
    );
    assert!(
        status.message.contains("conflict with \"alpha\""),
        "{}",
        status.message
    );
    let forced = api
        .patch(
            "app",
            &PatchParams::apply("beta").force(),
            &Patch::Apply(body("2")),
        )
        .await
        .expect("forced apply");
    assert_eq!(
        forced
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("2")
    );
    let managers: BTreeSet<String> = forced
        .managed_fields()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(managers.contains("beta"), "{managers:?}");
    // Shared ownership: alpha applying beta's value is no conflict.
    api.patch(
        "app",
        &PatchParams::apply("alpha"),
        &Patch::Apply(body("2")),
    )
    .await
    .expect("same value, no conflict");
}

#[tokio::test]
async fn a_stale_resource_version_is_a_conflict() {
    let (client, ns) = setup("kr-occ").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let original = api
        .create(
            &PostParams::default(),
            &configmap("c", json!({}), json!({"v": "0"})),
        )
        .await
        .expect("create");
    let mut first = original.clone();
    first.data = Some([("v".to_string(), "1".to_string())].into());
    api.replace("c", &PostParams::default(), &first)
        .await
        .expect("first writer wins");
    let mut second = original.clone();
    second.data = Some([("v".to_string(), "2".to_string())].into());
    let status = api_status(api.replace("c", &PostParams::default(), &second).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "Conflict"),
        "{status:?}"
    );
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );

    // Custom resources refuse an update without resourceVersion.
    widget_crd(&client).await;
    let widgets: Api<Widget> = Api::namespaced(client, &ns);
    let w = widgets
        .create(
            &PostParams::default(),
            &Widget::new(
                "w",
                WidgetSpec {
                    color: "red".into(),
                    size: Some(1),
                },
            ),
        )
        .await
        .expect("create");
    let mut unconditional = w.clone();
    unconditional.metadata.resource_version = None;
    let status = api_status(
        widgets
            .replace("w", &PostParams::default(), &unconditional)
            .await,
    );
    assert_eq!(status.code, 422, "{status:?}");
}

#[tokio::test]
async fn the_finalizer_helper_runs_cleanup_before_deletion() {
    let (client, ns) = setup("kr-fin").await;
    widget_crd(&client).await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), &ns);
    widgets
        .create(
            &PostParams::default(),
            &Widget::new(
                "f",
                WidgetSpec {
                    color: "red".into(),
                    size: None,
                },
            ),
        )
        .await
        .expect("create");
    let name = "kube.opctl.test/cleanup";
    let cleaned = Arc::new(AtomicUsize::new(0));
    let run = |obj: Widget| {
        let cleaned = cleaned.clone();
        let widgets = widgets.clone();
        async move {
            finalizer(&widgets, name, Arc::new(obj), |event| async move {
                if let FinalizerEvent::Cleanup(_) = event {
                    cleaned.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, ReconcileError>(Action::await_change())
            })
            .await
        }
    };
    // First pass adds the finalizer.
    run(widgets.get("f").await.expect("get"))
        .await
        .expect("finalizer add");
    let with = widgets.get("f").await.expect("get");
    assert_eq!(with.finalizers(), [name.to_string()]);
    // Delete: the object stays, marked for deletion.
    widgets
        .delete("f", &DeleteParams::default())
        .await
        .expect("delete");
    let marked = widgets.get("f").await.expect("still there");
    assert!(marked.meta().deletion_timestamp.is_some());
    // Second pass cleans up and removes the finalizer: the object goes.
    run(marked).await.expect("finalizer cleanup");
    assert_eq!(cleaned.load(Ordering::Relaxed), 1);
    let status = api_status(widgets.get("f").await);
    assert_eq!(status.code, 404);
}

#[tokio::test]
async fn the_event_recorder_publishes_events_both_apis_show() {
    let (client, ns) = setup("kr-events").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm = configmaps
        .create(
            &PostParams::default(),
            &configmap("subject", json!({}), json!({})),
        )
        .await
        .expect("create");
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "opctl-tests".into(),
            instance: None,
        },
    );
    let event = KubeEvent {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("it works".into()),
        action: "Test".into(),
        secondary: None,
    };
    let reference = cm.object_ref(&());
    recorder.publish(&event, &reference).await.expect("publish");
    recorder
        .publish(&event, &reference)
        .await
        .expect("publish again (series update)");

    let new_api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let events = new_api
        .list(&ListParams::default())
        .await
        .expect("events.k8s.io list");
    assert_eq!(
        events.items.len(),
        1,
        "a repeated event is one object with a series"
    );
    let e = &events.items[0];
    assert_eq!(e.reason.as_deref(), Some("Tested"));
    assert_eq!(e.note.as_deref(), Some("it works"));
    assert_eq!(
        e.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("subject")
    );
    assert!(e.series.is_some(), "the second publish records a series");

    let core_api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, &ns);
    let core = core_api
        .list(&ListParams::default().fields("involvedObject.name=subject"))
        .await
        .expect("core/v1 list with an involvedObject field selector");
    assert_eq!(core.items.len(), 1);
    assert_eq!(core.items[0].message.as_deref(), Some("it works"));
    assert_eq!(core.items[0].reason.as_deref(), Some("Tested"));
}

#[tokio::test]
async fn leases_renew_and_lose_races() {
    let (client, ns) = setup("kr-lease").await;
    let leases: Api<Lease> = Api::namespaced(client, &ns);
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": 0},
    }))
    .expect("lease");
    let held = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create lease");
    let mut renewed = held.clone();
    if let Some(spec) = renewed.spec.as_mut() {
        spec.renew_time =
            serde_json::from_value(json!("2026-01-01T00:00:05.123456Z")).expect("time");
    }
    let renewed = leases
        .replace("leader", &PostParams::default(), &renewed)
        .await
        .expect("renew");
    let renew_time = serde_json::to_value(renewed.spec.as_ref().and_then(|s| s.renew_time.clone()))
        .expect("json");
    assert_eq!(
        renew_time,
        json!("2026-01-01T00:00:05.123456Z"),
        "MicroTime keeps microseconds"
    );
    // Another candidate still holding the first version loses.
    let mut stale = held.clone();
    if let Some(spec) = stale.spec.as_mut() {
        spec.holder_identity = Some("b".into());
    }
    let status = api_status(
        leases
            .replace("leader", &PostParams::default(), &stale)
            .await,
    );
    assert_eq!(status.code, 409);
    let all: Vec<Lease> = leases
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    assert_eq!(
        all[0]
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref()),
        Some("a")
    );
}

/// A kube-rs client that impersonates a ServiceAccount (as an operator's
/// e2e test runs it, through `impersonate` in its config or
/// `KUBE_RS_DEBUG_IMPERSONATE_USER`) is held to that account's RBAC: a
/// watch it may not make is 403, and once a Role allows it, it works. A
/// SubjectAccessReview says the same.
#[tokio::test]
async fn an_impersonating_client_is_held_to_its_rbac() {
    use k8s_openapi::api::authorization::v1::SubjectAccessReview;
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

    let (admin, ns) = setup("kc-impersonate").await;
    let account = format!("system:serviceaccount:{ns}:operator");
    let yaml = std::fs::read_to_string(&server::shared().kubeconfig).expect("kubeconfig");
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("config");
    config.auth_info.impersonate = Some(account.clone());
    let operator = Client::try_from(config).expect("client");

    let configmaps: Api<ConfigMap> = Api::namespaced(operator.clone(), &ns);
    let status = api_status(configmaps.list(&ListParams::default()).await);
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        format!(
            r#"configmaps is forbidden: User "{account}" cannot list resource "configmaps" in API group "" in the namespace "{ns}""#
        )
    );

    let role: Role = serde_json::from_value(json!({"metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}))
    .expect("role");
    Api::<Role>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &role)
        .await
        .expect("role created");
    let binding: RoleBinding =
        serde_json::from_value(json!({"metadata": {"name": "operator-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}]}))
        .expect("binding");
    Api::<RoleBinding>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding created");

    let mut events = watcher(configmaps.clone(), watcher::Config::default()).boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("the watch answers")
        .expect("an event");
    assert!(first.is_ok(), "the watch is allowed now: {first:?}");
    let status = api_status(
        configmaps
            .create(
                &PostParams::default(),
                &configmap("c", json!({}), json!({})),
            )
            .await,
    );
    assert_eq!(status.code, 403, "creating is still not allowed");

    let review: SubjectAccessReview = serde_json::from_value(json!({"spec": {"user": account,
        "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{ns}")],
        "resourceAttributes": {"namespace": ns, "verb": "watch", "resource": "configmaps"}}}))
    .expect("review");
    let answered = Api::<SubjectAccessReview>::all(admin)
        .create(&PostParams::default(), &review)
        .await
        .expect("review answered");
    let status = answered.status.expect("a status");
    assert!(status.allowed);
    assert_eq!(
        status.reason.as_deref(),
        Some(
            format!(
                r#"RBAC: allowed by RoleBinding "operator-reads/{ns}" of Role "cm-reader" to ServiceAccount "operator/{ns}""#
            )
            .as_str()
        )
    );
}

/// kube-rs's own `fetch_fails` cluster test (its `Client::fetch` decodes
/// the GET of an object reference as `Client::request` does): a built-in
/// object is written `{"kind":...,"apiVersion":...}` as kube-apiserver
/// writes it, so a decode error points at the column a cluster gives.
#[tokio::test]
async fn a_wrong_kind_is_reported_at_the_column_a_cluster_gives() {
    use k8s_openapi::api::core::v1::{Pod, Service};
    let (client, ns) = setup("kr-fetch").await;
    let get = |path: &str| {
        axum::http::Request::get(path.to_string())
            .body(Vec::new())
            .expect("request")
    };
    let path = "/api/v1/namespaces/default/services/kubernetes";
    let svc: Service = client
        .request(get(path))
        .await
        .expect("the kubernetes Service");
    assert_eq!(svc.metadata.name.as_deref(), Some("kubernetes"));
    let err = client
        .request::<Pod>(get(path))
        .await
        .expect_err("a Service is no Pod");
    assert!(matches!(err, kube::Error::SerdeError(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Error deserializing response: invalid value: string \"Service\", expected Pod at line 1 column 17"
    );
    let obj: DynamicObject = client.request(get(path)).await.expect("dynamic");
    assert_eq!(
        obj.try_parse::<Pod>().unwrap_err().to_string(),
        "failed to parse this DynamicObject into a Resource: invalid value: string \"Service\", expected Pod"
    );
    // Objects a client writes are answered in the same order.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(
        &PostParams::default(),
        &configmap("order", json!({}), json!({"a": "1"})),
    )
    .await
    .expect("created");
    let text = client
        .request_text(get(&format!("/api/v1/namespaces/{ns}/configmaps/order")))
        .await
        .expect("get");
    assert!(
        text.starts_with("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"),
        "{text}"
    );
}
