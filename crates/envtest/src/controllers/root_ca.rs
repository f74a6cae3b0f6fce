//! kube-controller-manager's root-CA publisher: every active namespace has a
//! `kube-root-ca.crt` ConfigMap holding the CA bundle that verifies the API
//! server; one that is deleted or edited is put back.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::WriteCtx;
use crate::api::create::{Input, create_internal};
use crate::app::App;
use crate::meta;
use crate::store::{Event, EventType, ResKey};

pub(super) const NAME: &str = "kube-root-ca.crt";
const CONFIGMAPS: &str = "configmaps";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

fn data(app: &App) -> Value {
    json!({"ca.crt": app.root_ca_pem()})
}

fn publish(app: &App, ns: &str) {
    let key: ResKey = Arc::from(CONFIGMAPS);
    let Some(res) = resource_for(app, CONFIGMAPS) else {
        return;
    };
    match app.store.get(&key, ns, NAME) {
        None => {
            let obj = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": NAME, "annotations": {"kubernetes.io/description": DESCRIPTION}},
                "data": data(app),
            });
            let input = Input::Body {
                obj,
                duplicates: Vec::new(),
            };
            // Refused in a namespace that is going away, as on a cluster.
            let _ = create_internal(
                app,
                &res,
                ns,
                input,
                &WriteCtx::internal(CONTROLLER_MANAGER),
            );
        }
        Some(stored) if stored.get("data") != Some(&data(app)) => {
            let want = data(app);
            let _ =
                modify_without_admission(app, &res, ns, NAME, None, CONTROLLER_MANAGER, |obj| {
                    if let Some(root) = obj.as_object_mut() {
                        root.insert("data".into(), want.clone());
                    }
                    true
                });
        }
        Some(_) => {}
    }
}

/// Reacts to a change of a namespace or of a published ConfigMap.
/// `terminating` tells whether a namespace is being deleted.
pub(super) fn on_event(app: &App, ev: &Event, terminating: impl Fn(&str) -> bool) {
    match &*ev.resource {
        "namespaces" if ev.kind != EventType::Deleted && !meta::is_deleting(&ev.object) => {
            publish(app, &ev.name);
        }
        CONFIGMAPS if ev.name == NAME && !terminating(&ev.namespace) => {
            publish(app, &ev.namespace);
        }
        _ => {}
    }
}
