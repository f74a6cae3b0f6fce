//! The DefaultStorageClass admission plugin (on by default in kube-apiserver
//! v1.32): a PersistentVolumeClaim created without `storageClassName` gets
//! the default StorageClass's name, the class annotated
//! `storageclass.kubernetes.io/is-default-class: "true"` (or the beta
//! annotation); with several, the newest (then the first by name). A bare
//! cluster has none at start, nor has envtest unless the workload
//! simulation's controllers create `standard`; an explicit `""` asks for no
//! class.

use std::sync::Arc;

use serde_json::Value;

use crate::app::App;
use crate::meta;
use crate::store::ResKey;

const STORAGE_CLASSES: &str = "storage.k8s.io/storageclasses";
const DEFAULT_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

fn is_default(class: &Value) -> bool {
    DEFAULT_ANNOTATIONS.iter().any(|a| {
        class
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(*a))
            .and_then(Value::as_str)
            == Some("true")
    })
}

/// The default StorageClass's name, if any class is marked default.
pub(crate) fn default_class(app: &App) -> Option<String> {
    let key: ResKey = Arc::from(STORAGE_CLASSES);
    let (classes, _) = app.store.list(&key, None, None);
    classes
        .into_iter()
        .map(|(_, class)| class)
        .filter(|c| is_default(c))
        .max_by(|a, b| {
            let created = |c: &Value| meta::meta_str(c, "creationTimestamp").to_string();
            created(a)
                .cmp(&created(b))
                .then_with(|| meta::name(b).cmp(meta::name(a)))
        })
        .map(|c| meta::name(&c).to_string())
}

/// Sets the claim's class on create when it names none.
pub(crate) fn admit(app: &App, claim: &mut Value) {
    let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("storageClassName").is_some_and(|c| !c.is_null()) {
        return;
    }
    if let Some(name) = default_class(app) {
        spec.insert("storageClassName".to_string(), Value::String(name));
    }
}
