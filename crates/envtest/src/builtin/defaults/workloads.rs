//! apps/v1, batch/v1 and ReplicationController defaults.

use serde_json::{Value, json};

use crate::builtin::KindInfo;
use crate::builtin::shape::{default_str, default_value, object_at, objects_mut};

pub(super) fn apply(kind: &KindInfo, obj: &mut Value) {
    if kind.kind == "DaemonSet" {
        template_generation_annotation(obj);
    }
    if kind.kind == "ReplicationController" {
        replication_controller_selector(obj);
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match kind.kind {
        "Deployment" => {
            default_value(spec, "replicas", json!(1));
            let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
            if let Some(strategy) = strategy.as_object_mut() {
                default_str(strategy, "type", "RollingUpdate");
                if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(rolling) = rolling.as_object_mut() {
                        default_value(rolling, "maxUnavailable", json!("25%"));
                        default_value(rolling, "maxSurge", json!("25%"));
                    }
                }
            }
            default_value(spec, "revisionHistoryLimit", json!(10));
            default_value(spec, "progressDeadlineSeconds", json!(600));
        }
        "StatefulSet" => {
            default_value(spec, "replicas", json!(1));
            default_str(spec, "podManagementPolicy", "OrderedReady");
            let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(strategy) = strategy.as_object_mut() {
                default_str(strategy, "type", "RollingUpdate");
                if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(rolling) = rolling.as_object_mut() {
                        default_value(rolling, "partition", json!(0));
                    }
                }
            }
            default_value(spec, "revisionHistoryLimit", json!(10));
            let retention = spec
                .entry("persistentVolumeClaimRetentionPolicy")
                .or_insert_with(|| json!({}));
            if let Some(retention) = retention.as_object_mut() {
                default_str(retention, "whenDeleted", "Retain");
                default_str(retention, "whenScaled", "Retain");
            }
            for claim in objects_mut(spec, "volumeClaimTemplates") {
                if let Some(claim_spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
                    default_str(claim_spec, "volumeMode", "Filesystem");
                }
                if let Some(status) = claim.get_mut("status").and_then(Value::as_object_mut) {
                    default_str(status, "phase", "Pending");
                }
            }
        }
        "DaemonSet" => {
            let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(strategy) = strategy.as_object_mut() {
                default_str(strategy, "type", "RollingUpdate");
                if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(rolling) = rolling.as_object_mut() {
                        default_value(rolling, "maxUnavailable", json!(1));
                        default_value(rolling, "maxSurge", json!(0));
                    }
                }
            }
            default_value(spec, "revisionHistoryLimit", json!(10));
        }
        "ReplicaSet" | "ReplicationController" => {
            default_value(spec, "replicas", json!(1));
        }
        "Job" => {
            let completions = spec.get("completions").is_some_and(|v| !v.is_null());
            let parallelism = spec.get("parallelism").is_some_and(|v| !v.is_null());
            if !completions && !parallelism {
                spec.insert("completions".into(), json!(1));
                spec.insert("parallelism".into(), json!(1));
            }
            default_value(spec, "parallelism", json!(1));
            default_value(spec, "backoffLimit", json!(6));
            default_str(spec, "completionMode", "NonIndexed");
            default_value(spec, "suspend", json!(false));
            let has_failure_policy = spec.get("podFailurePolicy").is_some_and(|p| !p.is_null());
            let replacement = if has_failure_policy {
                "Failed"
            } else {
                "TerminatingOrFailed"
            };
            default_str(spec, "podReplacementPolicy", replacement);
            default_value(spec, "manualSelector", json!(false));
            // Job labels default to the template's (set again once generated).
            job_labels_from_template(obj);
        }
        "CronJob" => {
            default_str(spec, "concurrencyPolicy", "Allow");
            default_value(spec, "suspend", json!(false));
            default_value(spec, "successfulJobsHistoryLimit", json!(3));
            default_value(spec, "failedJobsHistoryLimit", json!(1));
        }
        _ => {}
    }
}

/// `SetDefaults_Job`: a Job without labels takes its template's labels.
pub(crate) fn job_labels_from_template(obj: &mut Value) {
    let Some(template_labels) = obj
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .filter(|l| !l.is_empty())
        .cloned()
    else {
        return;
    };
    let has_labels = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_some_and(|l| !l.is_empty());
    if !has_labels && let Some(meta) = object_at(obj, "metadata") {
        meta.insert("labels".into(), Value::Object(template_labels));
    }
}

/// `SetDefaults_ReplicationController`: the template's labels are the
/// selector when none is given, and the labels when the object has none.
fn replication_controller_selector(obj: &mut Value) {
    let Some(template_labels) = obj
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
    if empty(obj.pointer("/spec/selector"))
        && let Some(spec) = object_at(obj, "spec")
    {
        spec.insert("selector".into(), Value::Object(template_labels.clone()));
    }
    if empty(obj.pointer("/metadata/labels"))
        && let Some(meta) = object_at(obj, "metadata")
    {
        meta.insert("labels".into(), Value::Object(template_labels));
    }
}

/// kube-apiserver's apps/v1 DaemonSet always carries the
/// `deprecated.daemonset.template.generation` annotation (it is converted
/// from the internal spec.templateGeneration), so it is there, owned by the
/// writer, when managed fields are recorded. Its value is set on create and
/// kept or bumped on update by the kind's preparation.
fn template_generation_annotation(obj: &mut Value) {
    let Some(meta) = object_at(obj, "metadata") else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations
            .entry("deprecated.daemonset.template.generation")
            .or_insert_with(|| json!("1"));
    }
}
