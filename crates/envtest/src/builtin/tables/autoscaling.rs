//! `kubectl get` columns of HorizontalPodAutoscalers, as kube-apiserver's
//! printer makes them (both API versions read the stored v2 object).

use serde_json::{Value, json};

use super::column::{AGE, Column, NAME};
use crate::builtin::KindInfo;

const fn string(name: &'static str, description: &'static str) -> Column {
    (name, "string", "", 0, description)
}

// The printer describes its columns with autoscaling/v2beta1's docs.
pub(super) fn columns(kind: &KindInfo) -> Option<Vec<Column>> {
    if (kind.group, kind.kind) != ("autoscaling", "HorizontalPodAutoscaler") {
        return None;
    }
    Some(vec![
        NAME,
        string(
            "Reference",
            "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
        ),
        string(
            "Targets",
            "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.",
        ),
        string(
            "MinPods",
            "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
        ),
        string(
            "MaxPods",
            "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
        ),
        string(
            "Replicas",
            "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        ),
        AGE,
    ])
}

/// A quantity as Go's `Quantity.String()` writes it.
fn quantity(value: Option<&Value>) -> Option<String> {
    value
        .and_then(crate::quantity::from_json)
        .map(|q| q.canonical())
}

fn or_unknown(value: Option<String>) -> String {
    value.unwrap_or_else(|| "<unknown>".into())
}

/// `current/target` of a Resource or ContainerResource metric.
fn resource_target(spec: &Value, status: Option<&Value>) -> String {
    let name = spec.get("name").and_then(Value::as_str).unwrap_or("");
    let target = spec.get("target").unwrap_or(&Value::Null);
    let current = status.and_then(|s| s.get("current"));
    if let Some(average) = quantity(target.get("averageValue")) {
        let now = or_unknown(quantity(current.and_then(|c| c.get("averageValue"))));
        return format!("{name}: {now}/{average}");
    }
    let percent = |v: Option<&Value>| v.and_then(Value::as_i64).map(|p| format!("{p}%"));
    let now = or_unknown(percent(current.and_then(|c| c.get("averageUtilization"))));
    let goal = percent(target.get("averageUtilization")).unwrap_or_else(|| "<auto>".into());
    format!("{name}: {now}/{goal}")
}

/// `current/target` of an Object or External metric (`(avg)` for averages).
fn value_target(target: &Value, current: Option<&Value>) -> String {
    if let Some(average) = quantity(target.get("averageValue")) {
        let now = or_unknown(quantity(current.and_then(|c| c.get("averageValue"))));
        return format!("{now}/{average} (avg)");
    }
    let now = or_unknown(quantity(current.and_then(|c| c.get("value"))));
    format!("{now}/{}", or_unknown(quantity(target.get("value"))))
}

/// `formatHPAMetrics`: each metric's current value against its target, at
/// most two, then `+ N more...`; `<none>` without metrics.
fn targets(obj: &Value) -> String {
    let specs = obj
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = obj
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = |field: &str| {
                statuses
                    .get(i)
                    .and_then(|s| s.get(field))
                    .filter(|v| !v.is_null())
            };
            let part = |field: &str| spec.get(field).unwrap_or(&Value::Null);
            match spec.get("type").and_then(Value::as_str).unwrap_or("") {
                "Resource" => resource_target(part("resource"), status("resource")),
                "ContainerResource" => {
                    resource_target(part("containerResource"), status("containerResource"))
                }
                "Pods" => format!(
                    "{}/{}",
                    or_unknown(quantity(
                        status("pods").and_then(|s| s.pointer("/current/averageValue"))
                    )),
                    or_unknown(quantity(part("pods").pointer("/target/averageValue")))
                ),
                "Object" => value_target(
                    part("object").get("target").unwrap_or(&Value::Null),
                    status("object").and_then(|s| s.get("current")),
                ),
                "External" => value_target(
                    part("external").get("target").unwrap_or(&Value::Null),
                    status("external").and_then(|s| s.get("current")),
                ),
                _ => "<unknown type>".into(),
            }
        })
        .collect();
    let count = list.len();
    if count > 2 {
        list.truncate(2);
        return format!("{} + {} more...", list.join(", "), count - 2);
    }
    list.join(", ")
}

/// The cells of a row, given the object's name and age.
pub(super) fn row(kind: &KindInfo, obj: &Value, name: Value, age: Value) -> Option<Vec<Value>> {
    if (kind.group, kind.kind) != ("autoscaling", "HorizontalPodAutoscaler") {
        return None;
    }
    // autoscaling/v1 prints from the same (v2) form as v2 does.
    let converted;
    let obj = if kind.version == "v1" {
        converted = crate::builtin::hpa::v1_to_v2(obj);
        &converted
    } else {
        obj
    };
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let min = obj
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_string(), |m| m.to_string());
    Some(vec![
        name,
        json!(format!(
            "{}/{}",
            text("/spec/scaleTargetRef/kind"),
            text("/spec/scaleTargetRef/name")
        )),
        json!(targets(obj)),
        json!(min),
        json!(
            obj.pointer("/spec/maxReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
        json!(
            obj.pointer("/status/currentReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
        age,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_show_current_against_wanted_values() {
        let cpu = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}});
        let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1024Mi"}}});
        let external = json!({"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}}});
        let hpa = json!({"spec": {"metrics": [cpu, memory]}, "status": {"currentMetrics": [{"type": ""},
            {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "512Mi"}}}]}});
        assert_eq!(targets(&hpa), "cpu: <unknown>/50%, memory: 512Mi/1Gi");
        let three = json!({"spec": {"metrics": [cpu, external, cpu]}});
        assert_eq!(
            targets(&three),
            "cpu: <unknown>/50%, <unknown>/10 + 1 more..."
        );
        assert_eq!(targets(&json!({"spec": {}})), "<none>");
    }
}
