//! Defaulting (`pkg/apis/*/v1/defaults.go` of kube-apiserver v1.32), applied
//! to every create and update body after decoding.

mod cluster_kinds;
mod control_plane;
mod other;
pub(crate) mod pod;
mod workloads;

use serde_json::Value;

use super::KindInfo;
use super::shape::pod_spec_pointer;

/// See [`super::apply_defaults`].
pub(crate) fn apply(kind: &KindInfo, obj: &mut Value) {
    if let Some(pointer) = pod_spec_pointer(kind)
        && let Some(spec) = obj.pointer_mut(&pointer).and_then(Value::as_object_mut)
    {
        pod::pod_spec(spec);
        if (kind.group, kind.kind) == ("", "Pod") {
            pod::pod_only(spec);
        }
    }
    match (kind.group, kind.kind) {
        ("apps" | "batch", _) | ("", "ReplicationController") => workloads::apply(kind, obj),
        _ => {
            other::apply(kind, obj);
            cluster_kinds::apply(kind, obj);
            control_plane::apply(kind, obj);
        }
    }
}
pub(crate) use workloads::job_labels_from_template as job_labels;
