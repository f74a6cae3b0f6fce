//! `kubectl get` columns of the storage and endpoint kinds the workload
//! simulation writes: PersistentVolumes, PersistentVolumeClaims,
//! StorageClasses and EndpointSlices, as kube-apiserver's printers make them.

use serde_json::{Value, json};

use super::column::{AGE, Column, NAME};
use crate::builtin::KindInfo;
use crate::quantity::Quantity;

const fn string(name: &'static str, description: &'static str) -> Column {
    (name, "string", "", 0, description)
}

const fn wide(name: &'static str, description: &'static str) -> Column {
    (name, "string", "", 1, description)
}

pub(super) fn columns(kind: &KindInfo) -> Option<Vec<Column>> {
    Some(match (kind.group, kind.kind) {
        ("", "PersistentVolume") => vec![
            NAME,
            string(
                "Capacity",
                "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
            ),
            string(
                "Access Modes",
                "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
            ),
            string(
                "Reclaim Policy",
                "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
            ),
            string(
                "Status",
                "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
            ),
            string(
                "Claim",
                "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
            ),
            string("StorageClass", "StorageClass of the pv"),
            string("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
            string(
                "Reason",
                "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
            ),
            AGE,
            wide(
                "VolumeMode",
                "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
            ),
        ],
        ("", "PersistentVolumeClaim") => vec![
            NAME,
            string(
                "Status",
                "phase represents the current phase of PersistentVolumeClaim.",
            ),
            string(
                "Volume",
                "volumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            string(
                "Capacity",
                "capacity represents the actual resources of the underlying volume.",
            ),
            string(
                "Access Modes",
                "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
            ),
            string("StorageClass", "StorageClass of the pvc"),
            string("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
            AGE,
            wide(
                "VolumeMode",
                "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
            ),
        ],
        ("storage.k8s.io", "StorageClass") => vec![
            NAME,
            string(
                "Provisioner",
                "provisioner indicates the type of the provisioner.",
            ),
            string(
                "ReclaimPolicy",
                "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
            ),
            string(
                "VolumeBindingMode",
                "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
            ),
            string(
                "AllowVolumeExpansion",
                "allowVolumeExpansion shows whether the storage class allow volume expand.",
            ),
            AGE,
        ],
        // The printer describes these columns with discovery/v1beta1's docs.
        ("discovery.k8s.io", "EndpointSlice") => vec![
            NAME,
            string(
                "AddressType",
                "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
            ),
            string(
                "Ports",
                "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.",
            ),
            string(
                "Endpoints",
                "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
            ),
            AGE,
        ],
        _ => return None,
    })
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(obj: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// `helper.GetAccessModesAsString`: the modes present, in a fixed order.
fn access_modes(obj: &Value, pointer: &str) -> String {
    let present: Vec<&str> = list(obj, pointer).filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| present.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The `storage` quantity as Go's `Quantity.String()` writes it (`0` when absent).
fn storage(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer)
        .and_then(|v| v.get("storage"))
        .and_then(crate::quantity::from_json)
        .map_or_else(|| "0".to_string(), |q: Quantity| q.canonical())
}

/// `GetPersistentVolumeClass` / `GetPersistentVolumeClaimClass`: the beta
/// annotation wins over `spec.storageClassName`.
fn class(obj: &Value) -> String {
    let annotated = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
        .and_then(Value::as_str);
    annotated
        .unwrap_or_else(|| text(obj, "/spec/storageClassName"))
        .to_string()
}

fn or_unset(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("<unset>")
        .to_string()
}

/// The phase, or `Terminating` once the object is being deleted.
fn phase(obj: &Value) -> String {
    if obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return "Terminating".into();
    }
    text(obj, "/status/phase").to_string()
}

/// `listWithMoreString`: at most three items, then `+ N more...`; `<unset>` for none.
fn at_most_three(items: Vec<String>) -> String {
    let count = items.len();
    if count > 3 {
        return format!("{} + {} more...", items[..3].join(","), count - 3);
    }
    if count == 0 {
        return "<unset>".into();
    }
    items.join(",")
}

fn is_default_class(obj: &Value) -> bool {
    let annotations = obj.pointer("/metadata/annotations");
    [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|key| {
        annotations
            .and_then(|a| a.get(*key))
            .and_then(Value::as_str)
            == Some("true")
    })
}

/// The cells of a row, given the object's name and age.
pub(super) fn row(kind: &KindInfo, obj: &Value, name: Value, age: Value) -> Option<Vec<Value>> {
    Some(match (kind.group, kind.kind) {
        ("", "PersistentVolume") => {
            let claim = match obj.pointer("/spec/claimRef").filter(|c| !c.is_null()) {
                Some(c) => format!("{}/{}", text(c, "/namespace"), text(c, "/name")),
                None => String::new(),
            };
            vec![
                name,
                json!(storage(obj, "/spec/capacity")),
                json!(access_modes(obj, "/spec/accessModes")),
                json!(text(obj, "/spec/persistentVolumeReclaimPolicy")),
                json!(phase(obj)),
                json!(claim),
                json!(class(obj)),
                json!(or_unset(obj, "/spec/volumeAttributesClassName")),
                json!(text(obj, "/status/reason")),
                age,
                json!(or_unset(obj, "/spec/volumeMode")),
            ]
        }
        ("", "PersistentVolumeClaim") => {
            // Capacity and modes are the volume's, shown once the claim names one.
            let bound = !text(obj, "/spec/volumeName").is_empty();
            let (capacity, modes) = if bound {
                (
                    storage(obj, "/status/capacity"),
                    access_modes(obj, "/status/accessModes"),
                )
            } else {
                (String::new(), String::new())
            };
            vec![
                name,
                json!(phase(obj)),
                json!(text(obj, "/spec/volumeName")),
                json!(capacity),
                json!(modes),
                json!(class(obj)),
                json!(or_unset(obj, "/spec/volumeAttributesClassName")),
                age,
                json!(or_unset(obj, "/spec/volumeMode")),
            ]
        }
        ("storage.k8s.io", "StorageClass") => {
            let mut shown = text(obj, "/metadata/name").to_string();
            if is_default_class(obj) {
                shown.push_str(" (default)");
            }
            let or = |pointer: &str, default: &str| {
                obj.pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or(default)
                    .to_string()
            };
            vec![
                json!(shown),
                json!(text(obj, "/provisioner")),
                json!(or("/reclaimPolicy", "Delete")),
                json!(or("/volumeBindingMode", "Immediate")),
                json!(
                    obj.pointer("/allowVolumeExpansion")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                age,
            ]
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            let ports = list(obj, "/ports")
                .map(|p| match p.get("port").and_then(Value::as_i64) {
                    Some(n) => n.to_string(),
                    None => p
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("*")
                        .to_string(),
                })
                .collect();
            let addresses = list(obj, "/endpoints")
                .flat_map(|e| {
                    e.get("addresses")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            vec![
                name,
                json!(text(obj, "/addressType")),
                json!(at_most_three(ports)),
                json!(at_most_three(addresses)),
                age,
            ]
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(resource: &str, group: &str, obj: Value) -> Vec<Value> {
        let kind = crate::builtin::find(group, resource).expect("a built-in kind");
        row(kind, &obj, json!("n"), json!("1m")).expect("a row")
    }

    #[test]
    fn claims_show_the_volume_only_once_bound() {
        let pending = json!({"spec": {"storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Pending"}});
        assert_eq!(
            cells("persistentvolumeclaims", "", pending),
            vec![
                json!("n"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!("standard"),
                json!("<unset>"),
                json!("1m"),
                json!("<unset>")
            ]
        );
        let bound = json!({
            "metadata": {"deletionTimestamp": "2026-12-02T10:00:00Z"},
            "spec": {"volumeName": "pv-1", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "1024Mi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"]}
        });
        let row = cells("persistentvolumeclaims", "", bound);
        assert_eq!(
            row[1..5],
            [
                json!("Terminating"),
                json!("pv-1"),
                json!("1Gi"),
                json!("RWO,RWX")
            ]
        );
        assert_eq!(row[8], json!("Filesystem"));
    }

    #[test]
    fn volumes_classes_and_slices_print_as_the_printers_do() {
        let volume = json!({"spec": {"accessModes": ["ReadOnlyMany"], "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "ns", "name": "c"}},
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "status": {"phase": "Released"}});
        let row = cells("persistentvolumes", "", volume);
        assert_eq!(
            row[1..9],
            [
                json!("0"),
                json!("ROX"),
                json!("Retain"),
                json!("Released"),
                json!("ns/c"),
                json!("old"),
                json!("<unset>"),
                json!("")
            ]
        );
        let class = json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "p"});
        assert_eq!(
            cells("storageclasses", "storage.k8s.io", class),
            vec![
                json!("fast (default)"),
                json!("p"),
                json!("Delete"),
                json!("Immediate"),
                json!(false),
                json!("1m")
            ]
        );
        let placeholder = json!({"addressType": "IPv4", "endpoints": null, "ports": null});
        assert_eq!(
            cells("endpointslices", "discovery.k8s.io", placeholder)[2..4],
            [json!("<unset>"), json!("<unset>")]
        );
        let endpoints: Vec<Value> = (1..=5)
            .map(|i| json!({"addresses": [format!("10.0.0.{i}")]}))
            .collect();
        let slice = json!({"addressType": "IPv4", "endpoints": endpoints, "ports": [{"port": 80}, {"name": "x"}, {}]});
        assert_eq!(
            cells("endpointslices", "discovery.k8s.io", slice)[2..4],
            [
                json!("80,x,*"),
                json!("10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...")
            ]
        );
    }
}
