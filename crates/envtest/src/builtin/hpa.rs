//! HorizontalPodAutoscalers are stored as `autoscaling/v2` and served as
//! `autoscaling/v1` too. The v1 shape knows one target (CPU utilization);
//! kube-apiserver keeps what v1 cannot say (a v2 `behavior`) in a round-trip
//! annotation, which this conversion does as well.
//!
//! Not converted: v2 metrics other than CPU utilization, which v1 readers
//! see in kube-apiserver's `autoscaling.alpha.kubernetes.io/metrics`
//! annotation in the older MetricSpec shape; here v1 readers do not see
//! them, and a write through v1 leaves only its CPU target.

use serde_json::{Map, Value, json};

const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource"
        && metric.pointer("/resource/name") == Some(&json!("cpu"))
        && metric
            .pointer("/resource/target/averageUtilization")
            .is_some()
}

fn annotations_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let meta = obj.get_mut("metadata")?.as_object_mut()?;
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    annotations.as_object_mut()
}

fn drop_empty_annotations(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        && meta
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        meta.remove("annotations");
    }
}

/// The stored (v2) object as `autoscaling/v1` shows it.
pub(crate) fn v2_to_v1(stored: &Value) -> Value {
    let mut out = stored.clone();
    let spec = stored.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut v1_spec = Map::new();
    for key in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(key) {
            v1_spec.insert(key.into(), value.clone());
        }
    }
    let metrics = spec.get("metrics").and_then(Value::as_array);
    if let Some(cpu) = metrics
        .into_iter()
        .flatten()
        .find(|m| is_cpu_utilization(m))
    {
        v1_spec.insert(
            "targetCPUUtilizationPercentage".into(),
            cpu["resource"]["target"]["averageUtilization"].clone(),
        );
    }
    out["spec"] = Value::Object(v1_spec);
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null())
        && let Some(annotations) = annotations_mut(&mut out)
    {
        annotations.insert(BEHAVIOR_ANNOTATION.into(), json!(behavior.to_string()));
    }
    let status = stored.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut v1_status = Map::new();
    for key in ["observedGeneration", "lastScaleTime"] {
        if let Some(value) = status.get(key).filter(|v| !v.is_null()) {
            v1_status.insert(key.into(), value.clone());
        }
    }
    // v1 always writes both counts.
    v1_status.insert(
        "currentReplicas".into(),
        status.get("currentReplicas").cloned().unwrap_or(json!(0)),
    );
    v1_status.insert(
        "desiredReplicas".into(),
        status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
    );
    if let Some(current) = status
        .get("currentMetrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|m| m["type"] == "Resource" && m.pointer("/resource/name") == Some(&json!("cpu")))
        .and_then(|m| m.pointer("/resource/current/averageUtilization"))
    {
        v1_status.insert("currentCPUUtilizationPercentage".into(), current.clone());
    }
    out["status"] = Value::Object(v1_status);
    out
}

/// An `autoscaling/v1` object in its stored (v2) shape.
pub(crate) fn v1_to_v2(obj: &Value) -> Value {
    let mut out = obj.clone();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut v2_spec = Map::new();
    for key in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(key) {
            v2_spec.insert(key.into(), value.clone());
        }
    }
    let mut metrics = Vec::new();
    let target = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null());
    if let Some(target) = target {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}));
    } else {
        // What v2's defaulting gives an autoscaler without metrics.
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    let behavior = out
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(BEHAVIOR_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok());
    if let Some(behavior) = behavior {
        v2_spec.insert("behavior".into(), behavior);
    }
    if let Some(annotations) = annotations_mut(&mut out) {
        annotations.remove(BEHAVIOR_ANNOTATION);
    }
    drop_empty_annotations(&mut out);
    out["spec"] = Value::Object(v2_spec);
    if let Some(status) = obj.get("status").and_then(Value::as_object) {
        let mut v2_status = Map::new();
        for key in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            if let Some(value) = status.get(key).filter(|v| !v.is_null()) {
                v2_status.insert(key.into(), value.clone());
            }
        }
        if let Some(current) = status.get("currentCPUUtilizationPercentage") {
            v2_status.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}}]),
            );
        }
        out["status"] = Value::Object(v2_status);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_target_and_behavior_survive_a_round_trip_through_v1() {
        let v2 = json!({
            "metadata": {"name": "h"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}
            },
            "status": {"desiredReplicas": 0, "currentMetrics": null}
        });
        let v1 = v2_to_v1(&v2);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], json!(50));
        assert_eq!(
            v1["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        let back = v1_to_v2(&v1);
        assert_eq!(back["spec"], v2["spec"]);
        assert!(back["metadata"].get("annotations").is_none());
    }
}
