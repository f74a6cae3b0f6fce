//! PersistentVolumeClaims and PersistentVolumes as v1.32's
//! `ValidatePersistentVolumeClaim[Spec|Update]` and
//! `ValidatePersistentVolume[Spec|Update]` check them, and the claim
//! templates of ephemeral volumes (`ValidatePersistentVolumeClaimTemplate`).
//! The feature-gated fields (VolumeAttributesClass, recovery from expansion
//! failure) are off, as in a default v1.32 kube-apiserver.

use serde_json::{Map, Value};

use super::fields::{list, present, s};
use super::go_syntax::{self, go_quantity, invalid_raw};
use super::meta::{annotations, labels};
use super::pod_scheduling::node_selector;
use super::selector;
use crate::error::Cause;
use crate::name_rules::{is_dns1123_label, is_dns1123_subdomain, name_is_dns_subdomain};
use crate::quantity;

/// `sets.List(supportedAccessModes)`.
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];
const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
/// `sets.List(supportedHostPathTypes)`.
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// The sources of a PersistentVolumeSpec in the order
/// `ValidatePersistentVolumeSpec` counts them: the JSON name, the name its
/// "more than 1 volume type" error uses, and the path its own validation
/// uses (Go spells some differently).
const PV_SOURCES: &[(&str, &str, &str)] = &[
    ("hostPath", "hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    (
        "awsElasticBlockStore",
        "awsElasticBlockStore",
        "awsElasticBlockStore",
    ),
    ("glusterfs", "glusterfs", "glusterfs"),
    ("flocker", "flocker", "flocker"),
    ("nfs", "nfs", "nfs"),
    ("rbd", "rbd", "rbd"),
    ("quobyte", "quobyte", "quobyte"),
    ("cephfs", "cephFS", "cephfs"),
    ("iscsi", "iscsi", "iscsi"),
    ("cinder", "cinder", "cinder"),
    ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"),
    ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "photonPersistentDisk",
    ),
    ("portworxVolume", "portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO", "scaleIO"),
    ("local", "local", "local"),
    ("storageos", "storageos", "storageos"),
    ("csi", "csi", "csi"),
];

fn invalid_str(field: impl Into<String>, value: &str, detail: &str) -> Cause {
    Cause::invalid(field, &Value::String(value.to_string()), detail)
}

/// `ValidateClassName` (a DNS subdomain).
fn class_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    for msg in name_is_dns_subdomain(name, false) {
        causes.push(invalid_str(field, name, &msg));
    }
}

/// The access modes of a claim or volume spec, after `required` for none.
fn access_modes(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let field = format!("{path}.accessModes");
    let (mut once_pod, mut other) = (false, false);
    for mode in list(spec, "accessModes") {
        let mode = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            causes.push(Cause::not_supported(
                field.clone(),
                &Value::String(mode.into()),
                ACCESS_MODES,
            ));
        } else if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            other = true;
        }
    }
    if once_pod && other {
        causes.push(Cause::forbidden(
            field,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// `ValidatePositiveQuantityValue`.
fn positive_quantity(value: &Value, field: &str) -> Option<Cause> {
    let q = quantity::from_json(value)?;
    (q.nanos() <= 0).then(|| invalid_str(field, &q.canonical(), "must be greater than zero"))
}

/// `validateDataSource` / `validateDataSourceRef`.
fn data_source(source: &Value, path: &str, is_ref: bool, causes: &mut Vec<Cause>) {
    if s(source, "name").is_empty() {
        causes.push(Cause::required(format!("{path}.name"), ""));
    }
    let kind = s(source, "kind");
    if kind.is_empty() {
        causes.push(Cause::required(format!("{path}.kind"), ""));
    }
    let group = s(source, "apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        causes.push(invalid_str(
            path,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    // A group is not checked when one is given (allowInvalidAPIGroupInDataSourceOrRef
    // holds whenever a source names a group).
    let namespace = s(source, "namespace");
    if is_ref && !namespace.is_empty() {
        for msg in is_dns1123_label(namespace) {
            causes.push(invalid_str(format!("{path}.namespace"), namespace, &msg));
        }
    }
}

/// `ValidatePersistentVolumeClaimSpec`.
pub(super) fn claim_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if list(spec, "accessModes").is_empty() {
        causes.push(Cause::required(
            format!("{path}.accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if present(spec, "selector") {
        causes.extend(selector::validate(
            spec.get("selector"),
            &format!("{path}.selector"),
        ));
    }
    access_modes(spec, path, &mut causes);
    let storage_field = format!("{path}.resources[storage]");
    match spec.pointer("/resources/requests/storage") {
        None => causes.push(Cause::required(storage_field, "")),
        Some(value) => causes.extend(positive_quantity(value, &storage_field)),
    }
    let class = s(spec, "storageClassName");
    if !class.is_empty() {
        class_name(class, &format!("{path}.storageClassName"), &mut causes);
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !VOLUME_MODES.contains(&mode)
    {
        causes.push(Cause::not_supported(
            format!("{path}.volumeMode"),
            &Value::String(mode.into()),
            VOLUME_MODES,
        ));
    }
    let source = spec.get("dataSource").filter(|v| v.is_object());
    let source_ref = spec.get("dataSourceRef").filter(|v| v.is_object());
    if let Some(source) = source {
        data_source(source, &format!("{path}.dataSource"), false, &mut causes);
    }
    if let Some(source_ref) = source_ref {
        data_source(
            source_ref,
            &format!("{path}.dataSourceRef"),
            true,
            &mut causes,
        );
    }
    match (source, source_ref) {
        (Some(_), Some(r)) if !s(r, "namespace").is_empty() => causes.push(invalid_raw(
            path,
            &format!("{path}.dataSource"),
            "may not be specified when dataSourceRef.namespace is specified",
        )),
        (Some(a), Some(b))
            if a.get("apiGroup") != b.get("apiGroup")
                || s(a, "kind") != s(b, "kind")
                || s(a, "name") != s(b, "name") =>
        {
            causes.push(invalid_raw(
                path,
                &format!("{path}.dataSource"),
                "must match dataSourceRef",
            ))
        }
        _ => {}
    }
    causes
}

/// `ValidatePersistentVolumeClaim` (beyond the metadata).
pub(super) fn claim(obj: &Value) -> Vec<Cause> {
    let empty = Value::Null;
    claim_spec(obj.get("spec").unwrap_or(&empty), "spec")
}

/// A spec with its quantities in canonical form, so that `1Gi` and
/// `1024Mi` compare equal as `apiequality.Semantic` compares them.
fn semantic(spec: &Value) -> Value {
    let mut spec = spec.clone();
    for key in ["requests", "limits"] {
        if let Some(Value::Object(quantities)) = spec.pointer_mut(&format!("/resources/{key}")) {
            for value in quantities.values_mut() {
                if let Some(q) = quantity::from_json(value) {
                    *value = Value::String(q.canonical());
                }
            }
        }
    }
    spec
}

fn storage_request(obj: &Value) -> i128 {
    obj.pointer("/spec/resources/requests/storage")
        .and_then(quantity::from_json)
        .map_or(0, |q| q.nanos())
}

const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// `ValidatePersistentVolumeClaimUpdate` (beyond the metadata and the
/// claim's own rules): the spec is immutable but for a first
/// `volumeName`, a bound claim's storage request (which may only grow) and
/// a class name set where the beta annotation or nothing named it.
pub(super) fn claim_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = claim(obj);
    let empty = Value::Null;
    let mut new_spec = semantic(obj.get("spec").unwrap_or(&empty));
    let mut old_spec = semantic(old.get("spec").unwrap_or(&empty));
    let (new_spec_map, old_spec_map) = (object(&mut new_spec), object(&mut old_spec));
    let old_volume = old_spec_map.get("volumeName").and_then(Value::as_str);
    if old_volume.unwrap_or("").is_empty() {
        match new_spec_map.get("volumeName") {
            Some(name) => old_spec_map.insert("volumeName".into(), name.clone()),
            None => old_spec_map.remove("volumeName"),
        };
    }
    let annotation = |o: &Value| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(BETA_CLASS))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (old_annotation, new_annotation) = (annotation(old), annotation(obj));
    let old_class = old_spec_map.get("storageClassName").and_then(Value::as_str);
    let new_class = new_spec_map
        .get("storageClassName")
        .and_then(Value::as_str)
        .map(str::to_string);
    let from_annotation = old_annotation.is_some()
        && old_class.is_none()
        && new_class.is_some()
        && new_class == old_annotation
        && (new_annotation.is_none() || new_annotation == old_annotation);
    if from_annotation {
        new_spec_map.remove("storageClassName");
    } else {
        if new_annotation != old_annotation {
            let rendered = new_annotation.clone().unwrap_or_default();
            causes.push(invalid_raw(
                format!("metadata.annotations.{BETA_CLASS}"),
                &crate::gofmt::quote(&rendered),
                "field is immutable",
            ));
        }
        let from_nil = new_class.is_some()
            && old_class.is_none()
            && old_annotation
                .as_deref()
                .is_none_or(|a| Some(a) == new_class.as_deref());
        if from_nil {
            new_spec_map.remove("storageClassName");
        }
    }
    let bound = obj.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound
        && let Some(Value::Object(requests)) = new_spec_map
            .get_mut("resources")
            .and_then(|r| r.get_mut("requests"))
    {
        match old_spec_map
            .get("resources")
            .and_then(|r| r.pointer("/requests/storage"))
        {
            Some(old_storage) => requests.insert("storage".into(), old_storage.clone()),
            None => requests.remove("storage"),
        };
    }
    new_spec_map.remove("volumeAttributesClassName");
    match old_spec_map.get("volumeAttributesClassName") {
        Some(v) => new_spec_map.insert("volumeAttributesClassName".into(), v.clone()),
        None => None,
    };
    if new_spec != old_spec {
        // Go appends cmp.Diff's rendering of the two specs.
        causes.push(Cause::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    if storage_request(obj) < storage_request(old) {
        causes.push(Cause::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than previous value",
        ));
    }
    immutable_mode(obj, old, &mut causes);
    if obj.pointer("/spec/volumeAttributesClassName")
        != old.pointer("/spec/volumeAttributesClassName")
    {
        causes.push(Cause::forbidden(
            "spec.volumeAttributesClassName",
            "update is forbidden when the VolumeAttributesClass feature gate is disabled",
        ));
    }
    causes
}

fn object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    value.as_object_mut().expect("an object")
}

/// `ValidateImmutableField(spec.volumeMode)`, reported at `volumeMode`.
fn immutable_mode(obj: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let mode = obj.pointer("/spec/volumeMode");
    if mode != old.pointer("/spec/volumeMode") {
        let rendered = match mode.and_then(Value::as_str) {
            Some(mode) => crate::gofmt::quote(mode),
            None => "null".into(),
        };
        causes.push(go_syntax::immutable("volumeMode", &rendered));
    }
}

/// `ValidatePersistentVolumeClaimTemplate` of an ephemeral volume source.
pub(super) fn ephemeral(source: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(template) = source.get("volumeClaimTemplate").filter(|t| !t.is_null()) else {
        causes.push(Cause::required(format!("{path}.volumeClaimTemplate"), ""));
        return;
    };
    let path = format!("{path}.volumeClaimTemplate");
    let empty = Value::Null;
    let meta = template.get("metadata").unwrap_or(&empty);
    causes.extend(annotations(
        meta.get("annotations"),
        &format!("{path}.metadata.annotations"),
    ));
    causes.extend(labels(
        meta.get("labels"),
        &format!("{path}.metadata.labels"),
    ));
    // validateFieldAllowList over ObjectMeta's fields in Go's order.
    const META_FIELDS: &[(&str, &str)] = &[
        ("name", "name"),
        ("generateName", "generateName"),
        ("namespace", "namespace"),
        ("selfLink", "selfLink"),
        ("uid", "uID"),
        ("resourceVersion", "resourceVersion"),
        ("generation", "generation"),
        ("creationTimestamp", "creationTimestamp"),
        ("deletionTimestamp", "deletionTimestamp"),
        ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"),
        ("ownerReferences", "ownerReferences"),
        ("finalizers", "finalizers"),
        ("managedFields", "managedFields"),
    ];
    for (key, go_name) in META_FIELDS {
        let set = match meta.get(*key) {
            None | Some(Value::Null) => false,
            Some(Value::String(v)) => !v.is_empty(),
            Some(Value::Array(v)) => !v.is_empty(),
            Some(Value::Number(n)) => n.as_i64() != Some(0),
            Some(_) => true,
        };
        if set {
            causes.push(Cause::forbidden(
                format!("{path}.metadata.{go_name}"),
                "cannot be set",
            ));
        }
    }
    causes.extend(claim_spec(
        template.get("spec").unwrap_or(&empty),
        &format!("{path}.spec"),
    ));
}

/// `validatePathNoBacksteps`.
fn no_backsteps(p: &str, field: &str, causes: &mut Vec<Cause>) {
    if p.split('/').any(|part| part == "..") {
        causes.push(invalid_str(field, p, "must not contain '..'"));
    }
}

/// `validateHostPathVolumeSource` (Pods and PersistentVolumes).
pub(super) fn host_path(source: &Value, path: &str, causes: &mut Vec<Cause>) {
    let p = s(source, "path");
    if p.is_empty() {
        causes.push(Cause::required(format!("{path}.path"), ""));
        return;
    }
    no_backsteps(p, &format!("{path}.path"), causes);
    if let Some(kind) = source.get("type").and_then(Value::as_str)
        && !HOST_PATH_TYPES.contains(&kind)
    {
        causes.push(Cause::not_supported(
            format!("{path}.type"),
            &Value::String(kind.into()),
            HOST_PATH_TYPES,
        ));
    }
}

/// `validateNFSVolumeSource` (Pods and PersistentVolumes).
pub(super) fn nfs(source: &Value, path: &str, causes: &mut Vec<Cause>) {
    if s(source, "server").is_empty() {
        causes.push(Cause::required(format!("{path}.server"), ""));
    }
    let p = s(source, "path");
    if p.is_empty() {
        causes.push(Cause::required(format!("{path}.path"), ""));
    }
    if !p.starts_with('/') {
        causes.push(invalid_str(
            format!("{path}.path"),
            p,
            "must be an absolute path",
        ));
    }
}

/// `ValidateCSIDriverName`.
pub(super) fn csi_driver_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(Cause::required(field, ""));
    }
    if name.len() > 63 {
        causes.push(go_syntax::too_long(field, 63));
    }
    for msg in is_dns1123_subdomain(&name.to_lowercase()) {
        causes.push(invalid_str(field, name, &msg));
    }
}

/// `validatePVSecretReference`.
fn pv_secret_reference(reference: &Value, path: &str, causes: &mut Vec<Cause>) {
    let name = s(reference, "name");
    if name.is_empty() {
        causes.push(Cause::required(format!("{path}.name"), ""));
    } else {
        for msg in is_dns1123_subdomain(name) {
            causes.push(invalid_str(format!("{path}.name"), name, &msg));
        }
    }
    let namespace = s(reference, "namespace");
    if namespace.is_empty() {
        causes.push(Cause::required(format!("{path}.namespace"), ""));
    } else {
        for msg in is_dns1123_label(namespace) {
            causes.push(invalid_str(format!("{path}.namespace"), namespace, &msg));
        }
    }
}

/// The checks of the PersistentVolume sources tests use; the cloud and
/// vendor sources are counted but not looked into.
fn pv_source(key: &str, source: &Value, path: &str, causes: &mut Vec<Cause>) {
    match key {
        "hostPath" => host_path(source, path, causes),
        "nfs" => nfs(source, path, causes),
        "local" => {
            let p = s(source, "path");
            if p.is_empty() {
                causes.push(Cause::required(format!("{path}.path"), ""));
            } else {
                no_backsteps(p, &format!("{path}.path"), causes);
            }
        }
        "csi" => {
            csi_driver_name(s(source, "driver"), &format!("{path}.driver"), causes);
            if s(source, "volumeHandle").is_empty() {
                causes.push(Cause::required(format!("{path}.volumeHandle"), ""));
            }
            for secret in [
                "controllerPublishSecretRef",
                "controllerExpandSecretRef",
                "nodePublishSecretRef",
                "nodeExpandSecretRef",
            ] {
                if let Some(reference) = source.get(secret).filter(|r| !r.is_null()) {
                    pv_secret_reference(reference, &format!("{path}.{secret}"), causes);
                }
            }
        }
        _ => {}
    }
}

/// Go's `%#v` of a `core.ResourceList`.
fn go_resource_list(capacity: Option<&Value>) -> String {
    match capacity.and_then(Value::as_object) {
        None => "core.ResourceList(nil)".into(),
        Some(map) if map.is_empty() => "core.ResourceList{}".into(),
        Some(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    let text = match &map[k] {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    let canonical =
                        quantity::from_json(&map[k]).map_or_else(String::new, |q| q.canonical());
                    format!(
                        "{}:{}",
                        crate::gofmt::quote(k),
                        go_quantity(&text, &canonical)
                    )
                })
                .collect();
            format!("core.ResourceList{{{}}}", items.join(", "))
        }
    }
}

/// `ValidatePersistentVolumeSpec` of a PersistentVolume (not inline).
pub(super) fn volume(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    if list(spec, "accessModes").is_empty() {
        causes.push(Cause::required("spec.accessModes", ""));
    }
    access_modes(spec, "spec", &mut causes);
    let capacity = spec.get("capacity").and_then(Value::as_object);
    if capacity.is_none_or(Map::is_empty) {
        causes.push(Cause::required("spec.capacity", ""));
    }
    if capacity.is_none_or(|c| !c.contains_key("storage") || c.len() > 1) {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.capacity",
            format!(
                "Unsupported value: {}: supported values: \"storage\"",
                go_resource_list(spec.get("capacity"))
            ),
        ));
    }
    let mut keys: Vec<_> = capacity.into_iter().flatten().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in keys {
        let field = format!("spec.capacity[{name}]");
        if let Some(q) = quantity::from_json(value)
            && q.nanos() < 0
        {
            // validateBasicResource prints Quantity.Value(), rounded up
            // (division truncates towards zero, up for a negative value).
            let value = (q.nanos() / 1_000_000_000) as i64;
            causes.push(Cause::invalid(
                field.clone(),
                &Value::from(value),
                "must be a valid resource quantity",
            ));
        }
        causes.extend(positive_quantity(value, &field));
    }
    let policy = s(spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
        causes.push(Cause::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            &Value::String(policy.into()),
            RECLAIM_POLICIES,
        ));
    }
    let node_affinity = spec.get("nodeAffinity").filter(|a| !a.is_null());
    if let Some(affinity) = node_affinity {
        match affinity.get("required").filter(|r| !r.is_null()) {
            Some(required) => node_selector(required, "spec.nodeAffinity.required", &mut causes),
            None => causes.push(Cause::required(
                "spec.nodeAffinity.required",
                "must specify required node constraints",
            )),
        }
    }
    let mut sources = 0;
    for (key, counted_as, checked_at) in PV_SOURCES {
        let Some(source) = spec.get(*key).filter(|v| !v.is_null()) else {
            continue;
        };
        if sources > 0 && *key != "flexVolume" {
            causes.push(Cause::forbidden(
                format!("spec.{counted_as}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        sources += 1;
        pv_source(key, source, &format!("spec.{checked_at}"), &mut causes);
        if *key == "local" && node_affinity.is_none() {
            causes.push(Cause::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if sources == 0 {
        causes.push(Cause::required("spec", "must specify a volume type"));
    }
    let host_root = spec
        .pointer("/hostPath/path")
        .and_then(Value::as_str)
        .is_some_and(cleans_to_root);
    if host_root && policy == "Recycle" {
        causes.push(Cause::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    let class = s(spec, "storageClassName");
    if !class.is_empty() {
        class_name(class, "spec.storageClassName", &mut causes);
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !VOLUME_MODES.contains(&mode)
    {
        causes.push(Cause::not_supported(
            "spec.volumeMode",
            &Value::String(mode.into()),
            VOLUME_MODES,
        ));
    }
    causes
}

/// Whether Go's `path.Clean` makes `/` of a path (`..` stops at the root).
fn cleans_to_root(p: &str) -> bool {
    if !p.starts_with('/') {
        return false;
    }
    let mut depth = 0usize;
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => depth = depth.saturating_sub(1),
            _ => depth += 1,
        }
    }
    depth == 0
}

/// The volume source of a PersistentVolumeSpec.
fn volume_source(spec: &Value) -> Map<String, Value> {
    PV_SOURCES
        .iter()
        .filter_map(|(key, _, _)| Some(((*key).to_string(), spec.get(*key)?.clone())))
        .filter(|(_, v)| !v.is_null())
        .collect()
}

/// `ValidatePersistentVolumeUpdate`: the volume source is immutable (a
/// CSI volume may gain a `controllerExpandSecretRef`), so are the volume
/// mode and a node affinity once set.
pub(super) fn volume_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = volume(obj);
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let old_spec = old.get("spec").unwrap_or(&empty);
    let mut source = volume_source(spec);
    let old_source = volume_source(old_spec);
    if old_spec.pointer("/csi/controllerExpandSecretRef").is_none()
        && let Some(Value::Object(csi)) = source.get_mut("csi")
    {
        csi.remove("controllerExpandSecretRef");
    }
    if source != old_source {
        // Go appends cmp.Diff's rendering of the two sources.
        causes.push(Cause::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    immutable_mode(obj, old, &mut causes);
    let affinity = spec.get("nodeAffinity").filter(|a| !a.is_null());
    let old_affinity = old_spec.get("nodeAffinity").filter(|a| !a.is_null());
    if old_affinity.is_some() && affinity != old_affinity {
        let rendered = match affinity {
            None => "null".into(),
            Some(a) => format!(
                "core.VolumeNodeAffinity{{Required:{}}}",
                go_syntax::pointer(
                    "core.NodeSelector",
                    a.get("required").is_none_or(Value::is_null)
                )
            ),
        };
        causes.push(go_syntax::immutable("nodeAffinity", &rendered));
    }
    if spec.get("volumeAttributesClassName") != old_spec.get("volumeAttributesClassName") {
        causes.push(Cause::forbidden(
            "spec.volumeAttributesClassName",
            "update is forbidden when the VolumeAttributesClass feature gate is disabled",
        ));
    }
    causes
}
