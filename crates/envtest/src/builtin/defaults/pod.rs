//! Pod spec defaults (`SetDefaults_PodSpec`, `SetDefaults_Container`,
//! probes, volumes, ...) as kube-apiserver v1.32 applies them to Pods and to
//! every pod template.

use serde_json::{Map, Value, json};

use crate::builtin::shape::{default_str, default_value, objects_mut};

/// Defaults of a PodSpec (also inside templates).
pub(crate) fn pod_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_value(spec, "securityContext", json!({}));
    default_value(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    // v1 conversion keeps the deprecated field in step with serviceAccountName.
    let deprecated = spec
        .get("serviceAccount")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
        && !deprecated.is_empty()
    {
        spec.insert("serviceAccountName".into(), json!(deprecated));
    }
    if let Some(name) = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
    {
        spec.insert("serviceAccount".into(), json!(name));
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for container in objects_mut(spec, list) {
            self::container(container);
        }
    }
    for volume in objects_mut(spec, "volumes") {
        self::volume(volume);
    }
}

/// Go's image reference parsing, reduced to what the pull policy needs: an
/// image with no tag and no digest means `latest`.
fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next().unwrap_or("");
    let has_digest = image.contains('@');
    let last_component = without_digest.rsplit('/').next().unwrap_or("");
    match last_component.rsplit_once(':') {
        Some((_, tag)) => Some(tag),
        None if has_digest => None,
        None => Some("latest"),
    }
}

fn container(container: &mut Map<String, Value>) {
    if container
        .get("imagePullPolicy")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        let valid = !image.is_empty()
            && !image
                .chars()
                .any(|c| c.is_ascii_uppercase() || c.is_whitespace());
        let policy = if valid && image_tag(image) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        container.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(container, "terminationMessagePath", "/dev/termination-log");
    default_str(container, "terminationMessagePolicy", "File");
    for port in objects_mut(container, "ports") {
        default_str(port, "protocol", "TCP");
    }
    for env in objects_mut(container, "env") {
        if let Some(field_ref) = env
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            default_str(field_ref, "apiVersion", "v1");
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(probe).and_then(Value::as_object_mut) {
            default_value(probe, "timeoutSeconds", json!(1));
            default_value(probe, "periodSeconds", json!(10));
            default_value(probe, "successThreshold", json!(1));
            default_value(probe, "failureThreshold", json!(3));
            handler(probe);
        }
    }
    if let Some(lifecycle) = container
        .get_mut("lifecycle")
        .and_then(Value::as_object_mut)
    {
        for hook in ["postStart", "preStop"] {
            if let Some(hook) = lifecycle.get_mut(hook).and_then(Value::as_object_mut) {
                handler(hook);
            }
        }
    }
}

fn handler(handler: &mut Map<String, Value>) {
    if let Some(http) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_str(http, "path", "/");
        default_str(http, "scheme", "HTTP");
    }
}

fn volume(volume: &mut Map<String, Value>) {
    if !crate::builtin::VOLUME_SOURCES
        .iter()
        .any(|s| volume.get(*s).is_some_and(|v| !v.is_null()))
    {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(src) = volume.get_mut(source).and_then(Value::as_object_mut) {
            default_value(src, "defaultMode", json!(420));
        }
    }
    if let Some(host_path) = volume.get_mut("hostPath").and_then(Value::as_object_mut) {
        default_value(host_path, "type", json!(""));
    }
    if let Some(downward) = volume.get_mut("downwardAPI").and_then(Value::as_object_mut) {
        downward_items(downward);
    }
    if let Some(projected) = volume.get_mut("projected").and_then(Value::as_object_mut) {
        for source in objects_mut(projected, "sources") {
            if let Some(token) = source
                .get_mut("serviceAccountToken")
                .and_then(Value::as_object_mut)
            {
                default_value(token, "expirationSeconds", json!(3600));
            }
            if let Some(downward) = source.get_mut("downwardAPI").and_then(Value::as_object_mut) {
                downward_items(downward);
            }
        }
    }
    if let Some(iscsi) = volume.get_mut("iscsi").and_then(Value::as_object_mut) {
        default_str(iscsi, "iscsiInterface", "default");
    }
    if let Some(rbd) = volume.get_mut("rbd").and_then(Value::as_object_mut) {
        default_str(rbd, "pool", "rbd");
        default_str(rbd, "user", "admin");
        default_str(rbd, "keyring", "/etc/ceph/keyring");
    }
    if let Some(ephemeral) = volume
        .get_mut("ephemeral")
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        default_str(ephemeral, "volumeMode", "Filesystem");
    }
}

fn downward_items(downward: &mut Map<String, Value>) {
    for item in objects_mut(downward, "items") {
        if let Some(field_ref) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
            default_str(field_ref, "apiVersion", "v1");
        }
    }
}

/// `SetDefaults_Pod`: requests default to limits; service links on.
pub(crate) fn pod_only(spec: &mut Map<String, Value>) {
    // With the host's network a port is its host port: defaulted on Pods
    // only (`DefaultHostNetworkHostPortsInPodTemplates` is off in v1.32).
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for list in ["initContainers", "containers"] {
            for container in objects_mut(spec, list) {
                for port in objects_mut(container, "ports") {
                    if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                        && let Some(container_port) = port.get("containerPort").cloned()
                    {
                        port.insert("hostPort".into(), container_port);
                    }
                }
            }
        }
    }
    for list in ["initContainers", "containers"] {
        for container in objects_mut(spec, list) {
            let Some(resources) = container
                .get_mut("resources")
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            let requests = resources.entry("requests").or_insert_with(|| json!({}));
            if !requests.is_object() {
                *requests = json!({});
            }
            if let Some(requests) = requests.as_object_mut() {
                for (name, value) in limits {
                    requests.entry(name).or_insert(value);
                }
            }
        }
    }
    default_value(spec, "enableServiceLinks", json!(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(image_tag("busybox"), Some("latest"));
        assert_eq!(image_tag("busybox:1.36"), Some("1.36"));
        assert_eq!(image_tag("localhost:5000/busybox"), Some("latest"));
        assert_eq!(image_tag("busybox@sha256:abc"), None);
        assert_eq!(image_tag("busybox:latest"), Some("latest"));
    }
}
