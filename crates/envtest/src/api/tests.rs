//! Behaviour of the operations and controllers, driven through `App` directly.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::WriteCtx;
use super::create::{Input, create, create_internal};
use super::delete::delete;
use super::update::{patch, replace};
use crate::app::App;
use crate::meta;
use crate::patch::PatchType;
use crate::registry::Resource;
use crate::request::query::{DeleteOptions, Propagation, Query, write_options};

fn app() -> Arc<App> {
    Arc::new(App::new(1000))
}

fn res(app: &App, plural: &str) -> Arc<Resource> {
    app.registry.load().get("", "v1", plural).expect("served")
}

fn ctx(query: &str) -> WriteCtx {
    let opts = write_options(&Query::parse(Some(query)), "CreateOptions", false).expect("options");
    WriteCtx::new("tests".into(), opts)
}

fn make(app: &App, plural: &str, ns: &str, obj: Value) -> Value {
    let input = Input::Body {
        obj,
        duplicates: Vec::new(),
    };
    (*create_internal(app, &res(app, plural), ns, input, &ctx(""))
        .expect("create")
        .body)
        .clone()
}

fn namespace(app: &App, name: &str) {
    make(
        app,
        "namespaces",
        "",
        json!({"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}}),
    );
}

fn cm(name: &str, extra: Value) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}});
    if let (Value::Object(m), Value::Object(e)) = (&mut obj["metadata"], extra) {
        m.extend(e);
    }
    obj
}

fn get(app: &App, name: &str) -> Option<Arc<Value>> {
    app.store.get(&res(app, "configmaps").store_key, "ns", name)
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn create_fills_system_fields_and_dry_run_stores_nothing() {
    let app = app();
    namespace(&app, "ns");
    let created = make(&app, "configmaps", "ns", cm("a", json!({})));
    assert_eq!(meta::namespace(&created), "ns");
    assert!(!meta::uid(&created).is_empty());
    assert!(!meta::resource_version(&created).is_empty());
    let dry = create(
        &app,
        &res(&app, "configmaps"),
        "ns",
        Input::Body {
            obj: cm("dry", json!({})),
            duplicates: Vec::new(),
        },
        &ctx("dryRun=All"),
    )
    .await
    .expect("dry run");
    assert_eq!(dry.code, 201);
    assert!(meta::resource_version(&dry.body).is_empty());
    assert!(get(&app, "dry").is_none());
    let in_missing = create(
        &app,
        &res(&app, "configmaps"),
        "nope",
        Input::Body {
            obj: cm("x", json!({})),
            duplicates: Vec::new(),
        },
        &ctx(""),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (in_missing.code, in_missing.message.as_str()),
        (404, "namespaces \"nope\" not found")
    );
}

#[tokio::test]
async fn updates_check_resource_versions_and_skip_no_ops() {
    let app = app();
    namespace(&app, "ns");
    let created = make(&app, "configmaps", "ns", cm("a", json!({})));
    let cms = res(&app, "configmaps");
    let same = replace(
        &app,
        &cms,
        "ns",
        "a",
        None,
        created.clone(),
        Vec::new(),
        &ctx(""),
    )
    .await
    .expect("no-op");
    assert_eq!(
        meta::resource_version(&same.body),
        meta::resource_version(&created)
    );
    let mut changed = created.clone();
    changed["data"]["a"] = json!("2");
    let updated = replace(
        &app,
        &cms,
        "ns",
        "a",
        None,
        changed.clone(),
        Vec::new(),
        &ctx(""),
    )
    .await
    .expect("update");
    assert_ne!(
        meta::resource_version(&updated.body),
        meta::resource_version(&created)
    );
    let stale = replace(
        &app,
        &cms,
        "ns",
        "a",
        None,
        changed.clone(),
        Vec::new(),
        &ctx(""),
    )
    .await
    .unwrap_err();
    assert_eq!(stale.code, 409);
    // ConfigMaps allow unconditional updates.
    meta::remove_meta(&mut changed, "resourceVersion");
    changed["data"]["a"] = json!("3");
    replace(&app, &cms, "ns", "a", None, changed, Vec::new(), &ctx(""))
        .await
        .expect("unconditional");
    let merged = patch(
        &app,
        &cms,
        "ns",
        "a",
        None,
        PatchType::Merge,
        br#"{"data":{"b":"x"}}"#,
        &ctx(""),
    )
    .await
    .expect("patch");
    assert_eq!(merged.body["data"], json!({"a": "3", "b": "x"}));
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let app = app();
    namespace(&app, "ns");
    make(
        &app,
        "configmaps",
        "ns",
        cm("f", json!({"finalizers": ["example.com/hold"]})),
    );
    let cms = res(&app, "configmaps");
    let deleting = delete(
        &app,
        &cms,
        "ns",
        "f",
        &DeleteOptions::default(),
        &Default::default(),
        &Default::default(),
    )
    .await
    .expect("delete");
    assert!(meta::is_deleting(&deleting.body));
    assert_eq!(deleting.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let again = delete(
        &app,
        &cms,
        "ns",
        "f",
        &DeleteOptions::default(),
        &Default::default(),
        &Default::default(),
    )
    .await
    .expect("delete again");
    assert_eq!(
        meta::resource_version(&again.body),
        meta::resource_version(&deleting.body)
    );
    let added = patch(
        &app,
        &cms,
        "ns",
        "f",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":["example.com/hold","example.com/new"]}}"#,
        &ctx(""),
    )
    .await
    .unwrap_err();
    assert_eq!(added.code, 422);
    patch(
        &app,
        &cms,
        "ns",
        "f",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":null}}"#,
        &ctx(""),
    )
    .await
    .expect("finalizer removed");
    assert!(get(&app, "f").is_none());
}

#[tokio::test]
async fn immortal_namespaces_and_delete_preconditions() {
    let app = app();
    namespace(&app, "default");
    let ns = res(&app, "namespaces");
    let err = delete(
        &app,
        &ns,
        "",
        "default",
        &DeleteOptions::default(),
        &Default::default(),
        &Default::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            403,
            "namespaces \"default\" is forbidden: this namespace may not be deleted"
        )
    );
    namespace(&app, "ns");
    make(&app, "configmaps", "ns", cm("p", json!({})));
    let opts = DeleteOptions {
        precondition_uid: Some("other".into()),
        ..DeleteOptions::default()
    };
    let err = delete(
        &app,
        &res(&app, "configmaps"),
        "ns",
        "p",
        &opts,
        &Default::default(),
        &Default::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, 409);
    assert!(
        err.message
            .contains("the UID in the precondition (other) does not match"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn garbage_collector_handles_background_foreground_and_orphan() {
    let app = app();
    let _controllers =
        crate::controllers::spawn(app.clone(), crate::server::DEFAULT_NAMESPACE_DELETION_GRACE);
    namespace(&app, "ns");
    let cms = res(&app, "configmaps");
    for (owner, policy) in [
        ("bg", Propagation::Background),
        ("fg", Propagation::Foreground),
        ("or", Propagation::Orphan),
    ] {
        let o = make(&app, "configmaps", "ns", cm(owner, json!({})));
        let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": meta::uid(&o), "blockOwnerDeletion": true}]);
        make(
            &app,
            "configmaps",
            "ns",
            cm(
                &format!("{owner}-dep"),
                json!({"ownerReferences": reference}),
            ),
        );
        let opts = DeleteOptions {
            propagation: Some(policy),
            ..DeleteOptions::default()
        };
        delete(
            &app,
            &cms,
            "ns",
            owner,
            &opts,
            &Default::default(),
            &Default::default(),
        )
        .await
        .expect("delete owner");
    }
    eventually("owners gone", || {
        ["bg", "fg", "or"].iter().all(|o| get(&app, o).is_none())
    })
    .await;
    eventually("dependents collected", || {
        get(&app, "bg-dep").is_none() && get(&app, "fg-dep").is_none()
    })
    .await;
    let orphan = get(&app, "or-dep").expect("orphaned dependent kept");
    assert!(meta::owner_references(&orphan).is_empty());

    // A dependent whose owner never existed is collected.
    make(
        &app,
        "configmaps",
        "ns",
        cm(
            "dangling",
            json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}]}),
        ),
    );
    eventually("dangling dependent collected", || {
        get(&app, "dangling").is_none()
    })
    .await;
}

#[tokio::test]
async fn namespace_deletion_removes_content_then_the_namespace() {
    let app = app();
    let _controllers =
        crate::controllers::spawn(app.clone(), crate::server::DEFAULT_NAMESPACE_DELETION_GRACE);
    namespace(&app, "ns");
    make(&app, "configmaps", "ns", cm("c", json!({})));
    make(
        &app,
        "configmaps",
        "ns",
        cm("held", json!({"finalizers": ["example.com/hold"]})),
    );
    let ns = res(&app, "namespaces");
    let deleting = delete(
        &app,
        &ns,
        "",
        "ns",
        &DeleteOptions::default(),
        &Default::default(),
        &Default::default(),
    )
    .await
    .expect("delete");
    assert_eq!(deleting.body["status"]["phase"], "Terminating");
    let late = create(
        &app,
        &res(&app, "configmaps"),
        "ns",
        Input::Body {
            obj: cm("late", json!({})),
            duplicates: Vec::new(),
        },
        &ctx(""),
    )
    .await;
    assert_eq!(late.unwrap_err().code, 403);
    eventually("content deleted", || get(&app, "c").is_none()).await;
    eventually("conditions report the finalizer", || {
        app.store
            .get(&ns.store_key, "", "ns")
            .and_then(|n| n.pointer("/status/conditions/4/reason").cloned())
            == Some(json!("SomeFinalizersRemain"))
    })
    .await;
    let cms = res(&app, "configmaps");
    patch(
        &app,
        &cms,
        "ns",
        "held",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":null}}"#,
        &ctx(""),
    )
    .await
    .expect("finalizer removed");
    eventually("namespace gone", || {
        app.store.get(&ns.store_key, "", "ns").is_none()
    })
    .await;
}

#[tokio::test]
async fn crds_with_conversion_webhooks_are_served_without_warnings() {
    let app = app();
    let res = app
        .registry
        .load()
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("served");
    let schema = json!({"openAPIV3Schema": {"type": "object"}});
    let obj = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://127.0.0.1:9443/convert"},
            }},
        },
    });
    let written = create(
        &app,
        &res,
        "",
        Input::Body {
            obj,
            duplicates: Vec::new(),
        },
        &ctx(""),
    )
    .await
    .expect("create");
    assert!(written.warnings.is_empty(), "{:?}", written.warnings);
}
