//! What the registry strategies (`PrepareForCreate`, `PrepareForUpdate`) and
//! the Pod admission plugins (ServiceAccount, DefaultTolerationSeconds,
//! Priority) change before validation.

use serde_json::{Map, Value, json};

use super::KindInfo;
use super::defaults::pod::pod_spec as pod_spec_defaults;
use super::shape::{object_at, objects_mut, str_of};
use crate::quantity;

/// How a kind's registry strategy keeps `metadata.generation`: whether
/// `PrepareForCreate` sets it to 1, and which top-level fields bump it in
/// `PrepareForUpdate` when they change (v1.32's strategies).
struct Generation {
    set_on_create: bool,
    bumped_by: &'static [&'static str],
}

fn generation_rule(kind: &KindInfo) -> Option<Generation> {
    let tracked = |bumped_by| {
        Some(Generation {
            set_on_create: true,
            bumped_by,
        })
    };
    match (kind.group, kind.kind) {
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job" | "CronJob")
        | ("", "ReplicationController")
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("policy", "PodDisruptionBudget")
        | ("networking.k8s.io", "Ingress" | "IngressClass" | "NetworkPolicy")
        | ("flowcontrol.apiserver.k8s.io", _)
        | (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding",
        ) => tracked(&["spec"]),
        ("admissionregistration.k8s.io", _) => tracked(&["webhooks"]),
        // Everything but the metadata.
        ("discovery.k8s.io", "EndpointSlice") => tracked(&["addressType", "endpoints", "ports"]),
        ("", "PodTemplate") => tracked(&["template"]),
        // Set on create, never bumped (its PrepareForUpdate does nothing).
        ("scheduling.k8s.io", "PriorityClass") => tracked(&[]),
        // Bumped by spec changes, but not set on create.
        ("storage.k8s.io", "CSIDriver") => Some(Generation {
            set_on_create: false,
            bumped_by: &["spec"],
        }),
        _ => None,
    }
}

/// Status as the strategies reset it on create.
fn initial_status(kind: &KindInfo, obj: &Value) -> Option<Value> {
    Some(match (kind.group, kind.kind) {
        ("", "Node") => return None,
        ("", "Pod") => json!({"phase": "Pending", "qosClass": qos_class(obj)}),
        ("", "Namespace") => json!({"phase": "Active"}),
        ("", "Service") => json!({"loadBalancer": {}}),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        // PersistentVolumeLastPhaseTransitionTime (GA in v1.31).
        ("", "PersistentVolume") => {
            json!({"phase": "Pending", "lastPhaseTransitionTime": crate::meta::now_rfc3339()})
        }
        ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("policy", "PodDisruptionBudget") => json!({
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0
        }),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            json!({"desiredReplicas": 0, "currentMetrics": null})
        }
        ("storage.k8s.io", "VolumeAttachment") => json!({"attached": false}),
        // An APIService served by kube-apiserver itself is always available.
        ("apiregistration.k8s.io", "APIService")
            if obj.pointer("/spec/service").is_none_or(Value::is_null) =>
        {
            json!({"conditions": [{
                "type": "Available", "status": "True",
                "lastTransitionTime": crate::meta::now_rfc3339(),
                "reason": "Local", "message": "Local APIServices are always available",
            }]})
        }
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0
        }),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => json!({"replicas": 0}),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let stored: Vec<Value> = obj
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .and_then(|v| v.get("name").cloned())
                .into_iter()
                .collect();
            json!({
                "conditions": null,
                "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": if stored.is_empty() { Value::Null } else { Value::Array(stored) }
            })
        }
        _ if kind.has_status => json!({}),
        _ => return None,
    })
}

/// See [`super::prepare_for_create`].
pub(crate) fn for_create(kind: &KindInfo, obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
    }
    if generation_rule(kind).is_some_and(|g| g.set_on_create)
        && let Some(meta) = object_at(obj, "metadata")
    {
        meta.insert("generation".into(), json!(1));
    }
    match (kind.group, kind.kind) {
        ("", "Namespace") => {
            if let Some(spec) = object_at(obj, "spec") {
                let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
                if !finalizers.is_array() {
                    *finalizers = json!([]);
                }
                if let Some(list) = finalizers.as_array_mut()
                    && !list.iter().any(|f| f == "kubernetes")
                {
                    list.push(json!("kubernetes"));
                }
            }
        }
        ("apps", "DaemonSet") => {
            if let Some(meta) = object_at(obj, "metadata")
                && let Some(annotations) = map_at(meta, "annotations")
            {
                annotations.insert(
                    "deprecated.daemonset.template.generation".into(),
                    json!("1"),
                );
            }
        }
        ("batch", "Job") => {
            generate_job_selector(obj);
            super::defaults::job_labels(obj);
        }
        ("", "Node") => {
            // envtest has no kubelet: a new Node is registered as its
            // kubelet would register it, then admitted (TaintNodesByCondition).
            crate::node_status::Registration::default().register(obj, &crate::meta::now_rfc3339());
            crate::node_status::admit_create(obj);
        }
        _ => {}
    }
    if let Some(status) = initial_status(kind, obj)
        && let Some(root) = obj.as_object_mut()
    {
        root.insert("status".into(), status);
    }
}

/// See [`super::prepare_for_update`].
pub(crate) fn for_update(kind: &KindInfo, obj: &mut Value, old: &Value, subresource: Option<&str>) {
    let old_generation = old.pointer("/metadata/generation").cloned();
    match subresource {
        _ if (kind.group, kind.kind) == ("certificates.k8s.io", "CertificateSigningRequest") => {
            if subresource.is_some() {
                status_update(kind, obj, old);
            }
            super::certificates::prepare_update(obj, old, subresource);
        }
        Some("status") => status_update(kind, obj, old),
        Some("ephemeralcontainers") => ephemeral_containers_update(obj, old),
        Some("finalize") => finalize_update(obj, old),
        _ => main_update(kind, obj, old),
    }
    let Some(meta) = object_at(obj, "metadata") else {
        return;
    };
    // `rest.BeforeUpdate`: the uid when none is given, the creation and
    // deletion timestamps and the grace period are the stored ones.
    let old_meta = old.get("metadata");
    let old_field = |key: &str| old_meta.and_then(|m| m.get(key)).filter(|v| !v.is_null());
    if meta
        .get("uid")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
        && let Some(uid) = old_field("uid")
    {
        meta.insert("uid".into(), uid.clone());
    }
    for key in ["creationTimestamp", "deletionTimestamp"] {
        if let Some(value) = old_field(key) {
            meta.insert(key.into(), value.clone());
        }
    }
    if meta
        .get("deletionGracePeriodSeconds")
        .is_none_or(Value::is_null)
        && let Some(value) = old_field("deletionGracePeriodSeconds")
    {
        meta.insert("deletionGracePeriodSeconds".into(), value.clone());
    }
    // Clients cannot set the generation.
    match old_generation {
        Some(generation) => {
            meta.insert("generation".into(), generation);
        }
        None => {
            meta.remove("generation");
        }
    }
    if subresource.is_none() && spec_changed(kind, obj, old) {
        let next = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        if let Some(meta) = object_at(obj, "metadata") {
            meta.insert("generation".into(), json!(next));
        }
        if (kind.group, kind.kind) == ("apps", "DaemonSet") {
            daemonset_template_generation(obj, old);
        }
    }
}

fn spec_changed(kind: &KindInfo, obj: &Value, old: &Value) -> bool {
    let Some(rule) = generation_rule(kind) else {
        return false;
    };
    let fields_differ = rule.bumped_by.iter().any(|f| obj.get(*f) != old.get(*f));
    // Annotations are copied from a Deployment to its ReplicaSets.
    let annotations_differ = (kind.group, kind.kind) == ("apps", "Deployment")
        && obj.pointer("/metadata/annotations") != old.pointer("/metadata/annotations");
    fields_differ || annotations_differ
}

/// A DaemonSet's template generation annotation follows template changes.
fn daemonset_template_generation(obj: &mut Value, old: &Value) {
    let old_annotation = old
        .pointer("/metadata/annotations/deprecated.daemonset.template.generation")
        .cloned();
    let template_changed = obj.pointer("/spec/template") != old.pointer("/spec/template");
    let value = if template_changed {
        let previous = old_annotation
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0);
        Some(json!((previous + 1).to_string()))
    } else {
        old_annotation
    };
    if let Some(value) = value
        && let Some(meta) = object_at(obj, "metadata")
        && let Some(annotations) = map_at(meta, "annotations")
    {
        annotations.insert("deprecated.daemonset.template.generation".into(), value);
    }
}

fn main_update(kind: &KindInfo, obj: &mut Value, old: &Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if kind.has_status {
        match old.get("status") {
            Some(status) => {
                root.insert("status".into(), status.clone());
            }
            None => {
                root.remove("status");
            }
        }
    }
    match (kind.group, kind.kind) {
        ("", "Namespace") => {
            let finalizers = old.pointer("/spec/finalizers").cloned();
            if let Some(spec) = object_at(obj, "spec") {
                match finalizers {
                    Some(f) => {
                        spec.insert("finalizers".into(), f);
                    }
                    None => {
                        spec.remove("finalizers");
                    }
                }
            }
        }
        ("", "Service") => {
            keep_allocated_values(obj, old);
            drop_type_dependent_fields(obj, old);
        }
        ("apps", "DaemonSet") => {
            // Restored here; bumped with the generation when the template changed.
            let annotation = old
                .pointer("/metadata/annotations/deprecated.daemonset.template.generation")
                .cloned();
            if let Some(value) = annotation
                && let Some(meta) = object_at(obj, "metadata")
                && let Some(annotations) = map_at(meta, "annotations")
            {
                annotations.insert("deprecated.daemonset.template.generation".into(), value);
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let storage = obj
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .and_then(|v| v.get("name").cloned());
            if let Some(storage) = storage
                && let Some(status) = object_at(obj, "status")
            {
                let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
                if !stored.is_array() {
                    *stored = json!([]);
                }
                if let Some(list) = stored.as_array_mut()
                    && !list.contains(&storage)
                {
                    list.push(storage);
                }
            }
        }
        _ => {}
    }
}

/// The status subresource writes status only.
fn status_update(kind: &KindInfo, obj: &mut Value, old: &Value) {
    let (Some(root), Some(old_root)) = (obj.as_object_mut(), old.as_object()) else {
        return;
    };
    let keep: Vec<String> = root
        .keys()
        .filter(|k| !matches!(k.as_str(), "status" | "metadata" | "apiVersion" | "kind"))
        .cloned()
        .collect();
    for key in keep {
        root.remove(&key);
    }
    for (key, value) in old_root {
        if !matches!(key.as_str(), "status" | "metadata" | "apiVersion" | "kind") {
            root.insert(key.clone(), value.clone());
        }
    }
    match (kind.group, kind.kind) {
        ("", "PersistentVolume") => phase_transition_time(obj, old),
        ("", "Pod") => {
            // The QoS class is immutable; an old kubelet's status without it
            // gets it back.
            if obj
                .pointer("/status/qosClass")
                .is_none_or(|q| q.as_str() == Some(""))
                && let Some(qos) = old.pointer("/status/qosClass").cloned()
                && let Some(status) = object_at(obj, "status")
            {
                status.insert("qosClass".into(), qos);
            }
        }
        _ => {}
    }
    // The metadata each status strategy keeps from the stored object (the
    // CRD's `ResetObjectMetaForStatus` resets the new object with itself in
    // v1.32, so a CRD's status write changes its metadata like any other).
    let preserved: &[&str] = match (kind.group, kind.kind) {
        ("apiregistration.k8s.io", _) => {
            &["labels", "annotations", "finalizers", "ownerReferences"]
        }
        ("apps", "Deployment") => &["labels"],
        ("", "Pod") => &["ownerReferences"],
        _ => &[],
    };
    if preserved.is_empty() {
        return;
    }
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(meta) = object_at(obj, "metadata") {
        for key in preserved {
            match old_meta.get(*key) {
                Some(v) => {
                    meta.insert((*key).to_string(), v.clone());
                }
                None => {
                    meta.remove(*key);
                }
            }
        }
    }
}

/// `pods/ephemeralcontainers` writes `spec.ephemeralContainers` only
/// (`dropNonEphemeralContainerUpdates`): the rest of the spec and the status
/// are the stored ones, and so is the metadata `ResetObjectMetaForStatus`
/// resets.
fn ephemeral_containers_update(obj: &mut Value, old: &Value) {
    let ephemeral = obj.pointer("/spec/ephemeralContainers").cloned();
    let mut updated = old.clone();
    if let (Some(root), Some(metadata)) = (updated.as_object_mut(), obj.get("metadata")) {
        root.insert("metadata".into(), metadata.clone());
    }
    reset_object_meta_for_status(&mut updated, old);
    if let Some(spec) = object_at(&mut updated, "spec") {
        match ephemeral {
            Some(list) => {
                spec.insert("ephemeralContainers".into(), list);
            }
            None => {
                spec.remove("ephemeralContainers");
            }
        }
    }
    *obj = updated;
}

/// `metav1.ResetObjectMetaForStatus`: what a status-like write may not change.
fn reset_object_meta_for_status(obj: &mut Value, old: &Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(meta) = object_at(obj, "metadata") {
        for key in [
            "deletionTimestamp",
            "generation",
            "selfLink",
            "labels",
            "annotations",
            "finalizers",
            "ownerReferences",
        ] {
            match old_meta.get(key) {
                Some(v) => {
                    meta.insert(key.to_string(), v.clone());
                }
                None => {
                    meta.remove(key);
                }
            }
        }
    }
}

/// A volume's `lastPhaseTransitionTime` moves with its phase unless the
/// writer set it itself; it stays when the phase does.
fn phase_transition_time(obj: &mut Value, old: &Value) {
    let phase = |v: &Value| v.pointer("/status/phase").cloned().unwrap_or(Value::Null);
    let time = |v: &Value| {
        v.pointer("/status/lastPhaseTransitionTime")
            .filter(|t| !t.is_null())
            .cloned()
    };
    let (new_time, old_time) = (time(obj), time(old));
    let value = if phase(obj) == phase(old) {
        match (new_time, old_time) {
            (None, Some(kept)) => kept,
            _ => return,
        }
    } else if new_time.is_none() || new_time == old_time {
        json!(crate::meta::now_rfc3339())
    } else {
        return;
    };
    if let Some(status) = object_at(obj, "status") {
        status.insert("lastPhaseTransitionTime".into(), value);
    }
}

/// `namespaces/finalize` writes `spec.finalizers` only.
fn finalize_update(obj: &mut Value, old: &Value) {
    let finalizers = obj.pointer("/spec/finalizers").cloned();
    let metadata = obj.get("metadata").cloned();
    *obj = old.clone();
    if let (Some(root), Some(metadata)) = (obj.as_object_mut(), metadata) {
        root.insert("metadata".into(), metadata);
    }
    if let Some(spec) = object_at(obj, "spec") {
        match finalizers {
            Some(f) => {
                spec.insert("finalizers".into(), f);
            }
            None => {
                spec.remove("finalizers");
            }
        }
    }
}

/// `dropTypeDependentFields`: after a type change, values the new type does
/// not use are dropped when they are still the stored ones (a value the
/// request changed is left for validation to judge).
fn drop_type_dependent_fields(obj: &mut Value, old: &Value) {
    let Some(old_spec) = old.get("spec") else {
        return;
    };
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let old_type = old_spec.get("type").and_then(Value::as_str).unwrap_or("");
    let new_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if old_type == new_type {
        return;
    }
    let node_ports = |t: &str| matches!(t, "NodePort" | "LoadBalancer");
    if new_type == "ExternalName" {
        for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if spec.get(key) == old_spec.get(key) {
                spec.remove(key);
            }
        }
    }
    if node_ports(old_type) && !node_ports(&new_type) {
        let old_ports: Vec<Value> = old_spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort").cloned())
            .collect();
        for port in objects_mut(spec, "ports") {
            if port
                .get("nodePort")
                .is_some_and(|np| old_ports.contains(np))
            {
                port.remove("nodePort");
            }
        }
        if spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort") {
            spec.remove("healthCheckNodePort");
        }
    }
    if new_type != "LoadBalancer"
        && spec.get("allocateLoadBalancerNodePorts")
            == old_spec.get("allocateLoadBalancerNodePorts")
    {
        spec.remove("allocateLoadBalancerNodePorts");
    }
}

/// Allocated cluster IPs, families and node ports a PUT leaves out are kept.
fn keep_allocated_values(obj: &mut Value, old: &Value) {
    let Some(old_spec) = old.get("spec") else {
        return;
    };
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let same_type = spec.get("type") == old_spec.get("type");
    let needs_ip = |t: Option<&Value>| t.and_then(Value::as_str) != Some("ExternalName");
    if needs_ip(spec.get("type")) && needs_ip(old_spec.get("type")) {
        for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            let missing = match spec.get(key) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if missing && let Some(v) = old_spec.get(key) {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    let needs_node_ports =
        |t: Option<&Value>| matches!(t.and_then(Value::as_str), Some("NodePort" | "LoadBalancer"));
    if same_type || (needs_node_ports(spec.get("type")) && needs_node_ports(old_spec.get("type"))) {
        let by_name: Vec<(String, Value)> = old_spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let np = p.get("nodePort")?;
                Some((str_of(p, "name").to_string(), np.clone()))
            })
            .collect();
        let used: Vec<Value> = spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort").cloned())
            .collect();
        for port in objects_mut(spec, "ports") {
            if port.get("nodePort").is_none_or(|v| v.as_i64() == Some(0)) {
                let name = port.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some((_, np)) = by_name.iter().find(|(n, _)| n == name)
                    && !used.contains(np)
                {
                    port.insert("nodePort".into(), np.clone());
                }
            }
        }
        if spec.get("healthCheckNodePort").is_none()
            && let Some(hc) = old_spec.get("healthCheckNodePort")
        {
            spec.insert("healthCheckNodePort".into(), hc.clone());
        }
    }
}

fn map_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let entry = map.entry(key.to_string()).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

/// The labels by which a Job selects its Pods: the `batch.kubernetes.io/`
/// ones and, for older clients, the unprefixed legacy ones.
pub(crate) const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
pub(crate) const JOB_UID_LABELS: [&str; 2] =
    ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// `generateSelector` of the Job strategy: the name and uid labels (legacy
/// and prefixed) on the template, the prefixed uid label in the selector,
/// unless `manualSelector`. Labels the client set are kept (validation
/// refuses wrong ones).
fn generate_job_selector(obj: &mut Value) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = object_at(obj, "spec") else {
        return;
    };
    if let Some(template) = map_at(spec, "template")
        && let Some(meta) = map_at(template, "metadata")
        && let Some(labels) = map_at(meta, "labels")
    {
        for key in JOB_NAME_LABELS {
            labels.entry(key).or_insert_with(|| json!(name));
        }
        for key in JOB_UID_LABELS {
            labels.entry(key).or_insert_with(|| json!(uid));
        }
    }
    if let Some(selector) = map_at(spec, "selector")
        && let Some(match_labels) = map_at(selector, "matchLabels")
    {
        match_labels
            .entry(JOB_UID_LABELS[1])
            .or_insert_with(|| json!(uid));
    }
}

const SERVICE_ACCOUNT_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// See [`super::admit_create`].
pub(crate) fn admit_create(kind: &KindInfo, obj: &mut Value, service_account: Option<&Value>) {
    if (kind.group, kind.kind) == ("", "Pod") {
        admit_pod(obj, service_account);
    }
}

/// The service account a Pod runs as: `default` unless it names one.
pub(crate) fn pod_service_account_name(pod: &Value) -> &str {
    match pod
        .pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
    {
        Some(name) if !name.is_empty() => name,
        _ => "default",
    }
}

/// The admission plugins that change Pods on create.
fn admit_pod(obj: &mut Value, service_account: Option<&Value>) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    // ServiceAccount admission: the account's name, its token (unless the
    // Pod, or else the account, turns automounting off) and its image pull
    // secrets when the Pod has none.
    if spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        spec.insert("serviceAccountName".into(), json!("default"));
    }
    let account_setting = |field: &str| service_account.and_then(|sa| sa.get(field));
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| account_setting("automountServiceAccountToken").and_then(Value::as_bool))
        .unwrap_or(true);
    if automount {
        mount_service_account_token(spec);
    }
    let pod_has_pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|list| !list.is_empty());
    let account_pull_secrets: Vec<Value> = account_setting("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|secret| json!({"name": str_of(secret, "name")}))
        .collect();
    if !pod_has_pull_secrets && !account_pull_secrets.is_empty() {
        spec.insert(
            "imagePullSecrets".into(),
            Value::Array(account_pull_secrets),
        );
    }
    // DefaultTolerationSeconds admission.
    let tolerates = |spec: &Map<String, Value>, key: &str| {
        spec.get("tolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|t| {
                let k = str_of(t, "key");
                let effect = str_of(t, "effect");
                (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
            })
    };
    let mut added = Vec::new();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if !tolerates(spec, key) {
            added.push(json!({
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300
            }));
        }
    }
    if !added.is_empty() {
        let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
        if !tolerations.is_array() {
            *tolerations = json!([]);
        }
        if let Some(list) = tolerations.as_array_mut() {
            list.extend(added);
        }
    }
    // Priority admission: no default PriorityClass exists.
    let class = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let priority = match class.as_str() {
        "" => Some(0),
        "system-cluster-critical" => Some(2_000_000_000),
        "system-node-critical" => Some(2_000_001_000),
        _ => None,
    };
    if let Some(priority) = priority
        && spec.get("priority").is_none_or(Value::is_null)
    {
        spec.insert("priority".into(), json!(priority));
    }
    if spec.get("preemptionPolicy").is_none_or(Value::is_null) {
        spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
    }
    // The deprecated field mirrors the admitted service account.
    pod_spec_defaults(spec);
}

/// The ServiceAccount plugin's token mount: every init and regular
/// container with nothing mounted at the token path gets the
/// `kube-api-access-<suffix>` volume (the Pod's existing one, else a new
/// one, added only when some container mounts it).
fn mount_service_account_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| str_of(v, "name"))
        .find(|name| name.starts_with("kube-api-access-"))
        .map(str::to_string);
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| format!("kube-api-access-{}", crate::meta::random_suffix()));
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for container in objects_mut(spec, list) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if !mounts.is_array() {
                *mounts = json!([]);
            }
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| str_of(m, "mountPath") == SERVICE_ACCOUNT_MOUNT)
            {
                continue;
            }
            mounts.push(json!({
                "name": volume_name,
                "readOnly": true,
                "mountPath": SERVICE_ACCOUNT_MOUNT
            }));
            mounted = true;
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({
                "name": volume_name,
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                    ],
                    "defaultMode": 420
                }
            }));
        }
    }
}

/// `GetPodQOS`: BestEffort, Guaranteed or Burstable from cpu and memory.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
    use std::collections::BTreeMap;
    let mut requests: BTreeMap<&str, i128> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i128> = BTreeMap::new();
    let mut guaranteed = true;
    let spec = pod.get("spec");
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|list| {
            spec.and_then(|s| s.get(list))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        });
    for container in containers {
        let resources = container.get("resources");
        let sum = |into: &mut BTreeMap<&str, i128>, part: &str| -> Vec<&'static str> {
            let mut found = Vec::new();
            let Some(list) = resources
                .and_then(|r| r.get(part))
                .and_then(Value::as_object)
            else {
                return found;
            };
            for name in ["cpu", "memory"] {
                if let Some(q) = list.get(name).and_then(quantity::from_json)
                    && q.nanos() > 0
                {
                    *into.entry(name).or_insert(0) += q.nanos();
                    found.push(name);
                }
            }
            found
        };
        sum(&mut requests, "requests");
        let found = sum(&mut limits, "limits");
        if !(found.contains(&"cpu") && found.contains(&"memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests
            .iter()
            .all(|(name, req)| limits.get(name) == Some(req))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}
