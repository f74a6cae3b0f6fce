//! kube-controller-manager's HorizontalPodAutoscaler controller as it
//! behaves on a cluster without a metrics server: it reads the target's
//! scale, keeps its replicas within `[minReplicas, maxReplicas]`, and reports
//! that it cannot compute a replica count from metrics (`ScalingActive`
//! False, `FailedGetResourceMetric`), so it never scales within the range.

use serde_json::{Map, Value, json};

use super::client::{
    self, CONTROLLER_MANAGER, ConditionStyle, DEPLOYMENTS, REPLICASETS, REPLICATIONCONTROLLERS,
    STATEFULSETS,
};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

pub(crate) const AUTOSCALERS: &str = "autoscaling/horizontalpodautoscalers";
const COMPONENT: &str = "horizontal-pod-autoscaler";

/// What an unreachable resource metrics API answers, as the controller reports it.
const NO_METRICS_API: &str = "unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";

/// The store of a scale target, by its `kind` (and group of `apiVersion`).
pub(crate) fn target_store(target: &Value) -> Option<&'static str> {
    let api_version = client::str_at(target, &["apiVersion"]);
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    match (group, client::str_at(target, &["kind"])) {
        ("apps", "Deployment") => Some(DEPLOYMENTS),
        ("apps", "ReplicaSet") => Some(REPLICASETS),
        ("apps", "StatefulSet") => Some(STATEFULSETS),
        ("", "ReplicationController") => Some(REPLICATIONCONTROLLERS),
        _ => None,
    }
}

/// The autoscalers of namespace `ns` whose target is the `store` object `name`.
pub(crate) fn autoscalers_of(app: &App, store: &str, ns: &str, name: &str) -> Vec<String> {
    client::list(app, AUTOSCALERS, Some(ns))
        .iter()
        .filter(|hpa| {
            let target = meta::get_path(hpa, &["spec", "scaleTargetRef"]).unwrap_or(&Value::Null);
            target_store(target) == Some(store) && client::str_at(target, &["name"]) == name
        })
        .map(|hpa| meta::name(hpa).to_string())
        .collect()
}

/// The error a metric's computation ends with when no metrics API is served.
fn metric_error(metric: &Value) -> (String, String) {
    let kind = client::str_at(metric, &["type"]);
    let (source, prefix) = match kind {
        "ContainerResource" => ("containerResource", "container "),
        _ => ("resource", ""),
    };
    let name = client::str_at(metric, &[source, "name"]);
    let how = match client::str_at(metric, &[source, "target", "type"]) {
        "AverageValue" => "usage",
        _ => "utilization",
    };
    let detail = match kind {
        "Resource" | "ContainerResource" => format!(
            "failed to get {name} {how}: unable to get metrics for resource {name}: {NO_METRICS_API}"
        ),
        "Pods" | "Object" => format!(
            "unable to get metric {}: no custom metrics API (custom.metrics.k8s.io) is served",
            client::str_at(metric, &[&kind.to_lowercase(), "metric", "name"])
        ),
        _ => format!(
            "unable to get external metric {}: no external metrics API (external.metrics.k8s.io) is served",
            client::str_at(metric, &["external", "metric", "name"])
        ),
    };
    let wrapped = match kind {
        "Resource" | "ContainerResource" => {
            format!("failed to get {prefix}{name} resource metric value: {detail}")
        }
        _ => detail.clone(),
    };
    (detail, wrapped)
}

fn reason_for(metric: &Value) -> &'static str {
    match client::str_at(metric, &["type"]) {
        "ContainerResource" => "FailedGetContainerResourceMetric",
        "Pods" => "FailedGetPodsMetric",
        "Object" => "FailedGetObjectMetric",
        "External" => "FailedGetExternalMetric",
        _ => "FailedGetResourceMetric",
    }
}

/// One pass of the controller over the autoscaler `name`; returns when to
/// look again (the controller's resync).
pub(crate) async fn reconcile(
    app: &App,
    ns: &str,
    name: &str,
    resync: std::time::Duration,
) -> ApiResult<Option<std::time::Duration>> {
    let Some(hpa) = client::get(app, AUTOSCALERS, ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&hpa) {
        return Ok(None);
    }
    let target_ref = meta::get_path(&hpa, &["spec", "scaleTargetRef"])
        .cloned()
        .unwrap_or(Value::Null);
    let target_name = client::str_at(&target_ref, &["name"]).to_string();
    let target = target_store(&target_ref).and_then(|s| client::get(app, s, ns, &target_name));
    let Some(target) = target else {
        let message = format!(
            "the HPA controller was unable to get the target's current scale: {}",
            match target_store(&target_ref) {
                Some(_) => format!("{} \"{target_name}\" not found", plural_of(&target_ref)),
                None => format!(
                    "no matches for kind \"{}\" in group \"{}\"",
                    client::str_at(&target_ref, &["kind"]),
                    client::str_at(&target_ref, &["apiVersion"])
                        .split_once('/')
                        .map_or("", |(g, _)| g)
                ),
            }
        );
        let changed = write_status(app, ns, name, |status| {
            set(status, "AbleToScale", "False", "FailedGetScale", &message)
        })
        .await?;
        if changed {
            client::event(app, COMPONENT, &hpa, "Warning", "FailedGetScale", &message);
        }
        return Ok(Some(resync));
    };
    let current = client::int_at(&target, &["spec", "replicas"]).unwrap_or(1);
    let min = client::int_at(&hpa, &["spec", "minReplicas"]).unwrap_or(1);
    let max = client::int_at(&hpa, &["spec", "maxReplicas"]).unwrap_or(1);
    let mut conditions: Vec<(&str, &str, &str, String)> = vec![(
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale".to_string(),
    )];
    let mut events: Vec<(&str, &str, String)> = Vec::new();
    let (desired, rescale_reason) = if current == 0 && min != 0 {
        conditions.push((
            "ScalingActive",
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero".to_string(),
        ));
        (0, None)
    } else if current > max {
        (
            max,
            Some("Current number of replicas above Spec.MaxReplicas"),
        )
    } else if current < min {
        (
            min,
            Some("Current number of replicas below Spec.MinReplicas"),
        )
    } else {
        // No metrics API: every metric fails, and the status keeps the
        // desired count it had.
        let mut metrics: Vec<Value> = meta::get_path(&hpa, &["spec", "metrics"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if metrics.is_empty() {
            // What v2's defaulting gives an autoscaler without metrics.
            metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}));
        }
        let (detail, wrapped) = metric_error(&metrics[0]);
        let reason = reason_for(&metrics[0]);
        conditions.push((
            "ScalingActive",
            "False",
            reason,
            format!("the HPA was unable to compute the replica count: {detail}"),
        ));
        for metric in &metrics {
            events.push(("Warning", reason_for(metric), metric_error(metric).0));
        }
        events.push((
            "Warning",
            "FailedComputeMetricsReplicas",
            format!(
                "invalid metrics ({n} invalid out of {n}), first error is: {wrapped}",
                n = metrics.len()
            ),
        ));
        let desired = client::int_at(&hpa, &["status", "desiredReplicas"]).unwrap_or(0);
        let empty: Vec<Value> = metrics.iter().map(|_| json!({"type": ""})).collect();
        let changed = write_status(app, ns, name, |status| {
            let mut changed = false;
            for (kind, state, reason, message) in &conditions {
                changed |= set(status, kind, state, reason, message);
            }
            changed |= put(status, "currentReplicas", json!(current));
            changed |= put(status, "desiredReplicas", json!(desired));
            changed |= put(status, "currentMetrics", json!(empty));
            changed
        })
        .await?;
        // Reported once per change, not at every resync.
        if changed {
            for (kind, reason, message) in &events {
                client::event(app, COMPONENT, &hpa, kind, reason, message);
            }
        }
        return Ok(Some(resync));
    };
    if let Some(reason) = rescale_reason {
        let target_key = target_store(&target_ref).unwrap_or(DEPLOYMENTS);
        client::modify_with_admission(
            app,
            target_key,
            ns,
            &target_name,
            None,
            CONTROLLER_MANAGER,
            |t| {
                if client::int_at(t, &["spec", "replicas"]) == Some(desired) {
                    return false;
                }
                t["spec"]["replicas"] = json!(desired);
                true
            },
        )
        .await?;
        conditions[0] = (
            "AbleToScale",
            "True",
            "SucceededRescale",
            format!("the HPA controller was able to update the target scale to {desired}"),
        );
        events.push((
            "Normal",
            "SuccessfulRescale",
            format!("New size: {desired}; reason: {reason}"),
        ));
    }
    let rescaled = rescale_reason.is_some();
    write_status(app, ns, name, |status| {
        let mut changed = false;
        for (kind, state, reason, message) in &conditions {
            changed |= set(status, kind, state, reason, message);
        }
        changed |= put(status, "currentReplicas", json!(current));
        changed |= put(status, "desiredReplicas", json!(desired));
        if rescaled {
            status.insert("lastScaleTime".into(), json!(meta::now_rfc3339()));
            changed = true;
        }
        changed
    })
    .await?;
    for (kind, reason, message) in &events {
        client::event(app, COMPONENT, &hpa, kind, reason, message);
    }
    Ok(Some(resync))
}

fn plural_of(target: &Value) -> String {
    let kind = client::str_at(target, &["kind"]).to_lowercase();
    let group = client::str_at(target, &["apiVersion"])
        .split_once('/')
        .map_or("", |(g, _)| g);
    if group.is_empty() {
        format!("{kind}s")
    } else {
        format!("{kind}s.{group}")
    }
}

fn put(status: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    if status.get(key) == Some(&value) {
        return false;
    }
    status.insert(key.into(), value);
    true
}

/// Sets a condition (HPA conditions carry `lastTransitionTime` only).
fn set(
    status: &mut Map<String, Value>,
    kind: &str,
    state: &str,
    reason: &str,
    message: &str,
) -> bool {
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let cond = json!({"type": kind, "status": state, "reason": reason, "message": message});
    if !client::set_condition(&mut conditions, cond, ConditionStyle::Autoscaler) {
        return false;
    }
    status.insert("conditions".into(), Value::Array(conditions));
    true
}

/// Writes the autoscaler's status when `edit` changes it; returns whether it did.
async fn write_status(
    app: &App,
    ns: &str,
    name: &str,
    edit: impl Fn(&mut Map<String, Value>) -> bool,
) -> ApiResult<bool> {
    let changed = std::sync::atomic::AtomicBool::new(false);
    client::write_status(app, AUTOSCALERS, ns, name, |_, status| {
        if edit(status) {
            changed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    })
    .await?;
    Ok(changed.load(std::sync::atomic::Ordering::Relaxed))
}
