//! The StorageObjectInUseProtection admission plugin (on by default in
//! kube-apiserver v1.32): a PersistentVolumeClaim is created with the
//! `kubernetes.io/pvc-protection` finalizer and a PersistentVolume with
//! `kubernetes.io/pv-protection`, so that neither goes while in use; the
//! protection controllers of kube-controller-manager remove them
//! (`controllers/storage_protection.rs`).

use serde_json::{Value, json};

pub(crate) const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub(crate) const PV_FINALIZER: &str = "kubernetes.io/pv-protection";

/// Adds the finalizer of a claim (`volume: false`) or a volume.
pub(crate) fn admit(obj: &mut Value, volume: bool) {
    let finalizer = if volume { PV_FINALIZER } else { PVC_FINALIZER };
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|f| f.as_str() == Some(finalizer))
    {
        list.push(json!(finalizer));
    }
}
