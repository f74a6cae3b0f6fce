//! What the workload controllers share about the Pods they own: finding
//! them, judging them (active, ready, available) and creating them from a
//! Pod template.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, PODS};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

/// The Pods in `ns` whose controller is the object with `uid`.
pub(crate) fn owned(app: &App, ns: &str, uid: &str) -> Vec<Arc<Value>> {
    client::list(app, PODS, Some(ns))
        .into_iter()
        .filter(|p| {
            meta::owner_references(p).iter().any(|r| {
                r.get("controller").and_then(Value::as_bool) == Some(true)
                    && r.get("uid").and_then(Value::as_str) == Some(uid)
            })
        })
        .collect()
}

pub(crate) fn phase(pod: &Value) -> &str {
    client::str_at(pod, &["status", "phase"])
}

/// Neither finished nor being deleted (controller.IsPodActive).
pub(crate) fn is_active(pod: &Value) -> bool {
    !meta::is_deleting(pod) && !matches!(phase(pod), "Succeeded" | "Failed")
}

pub(crate) fn is_ready(pod: &Value) -> bool {
    client::condition_true(pod, "Ready")
}

/// Ready for at least `min_ready` (`None` when it is); else how long until it will be.
pub(crate) fn available_in(pod: &Value, min_ready: i64) -> Option<Duration> {
    if !is_ready(pod) {
        return Some(Duration::MAX);
    }
    if min_ready <= 0 {
        return None;
    }
    let since = client::condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let since = since?;
    let ready_for = jiff::Timestamp::now().duration_since(since);
    let need = jiff::SignedDuration::from_secs(min_ready);
    if ready_for >= need {
        None
    } else {
        Some((need - ready_for).unsigned_abs() + Duration::from_millis(10))
    }
}

/// A Pod from `template` controlled by `owner` (not yet named), with
/// `labels` and `annotations` added to the template's.
pub(crate) fn from_template(
    owner: &Value,
    template: &Value,
    extra_labels: &Map<String, Value>,
    extra_annotations: &Map<String, Value>,
) -> Value {
    let mut metadata = template
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    metadata.remove("name");
    metadata.remove("namespace");
    let mut labels = metadata
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.extend(extra_labels.clone());
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !extra_annotations.is_empty() {
        let mut annotations = metadata
            .get("annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        annotations.extend(extra_annotations.clone());
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    metadata.insert(
        "ownerReferences".into(),
        json!([client::controller_ref(owner)]),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Creates `pod` for `owner`, recording the controller's event: `created`
/// words the success from the Pod's name.
pub(crate) async fn create(
    app: &App,
    owner: &Value,
    pod: Value,
    created: impl Fn(&str) -> String,
) -> ApiResult<Arc<Value>> {
    let ns = meta::namespace(owner);
    let result = client::create_object(app, PODS, ns, pod, CONTROLLER_MANAGER).await;
    match &result {
        Ok(p) => client::event(
            app,
            client::pod_controller_source(client::str_at(owner, &["kind"])),
            owner,
            "Normal",
            "SuccessfulCreate",
            &created(meta::name(p)),
        ),
        Err(e) => client::event(
            app,
            client::pod_controller_source(client::str_at(owner, &["kind"])),
            owner,
            "Warning",
            "FailedCreate",
            &format!("Error creating: {}", e.message),
        ),
    }
    result
}

/// Creates a Pod from `template` controlled by `owner`, named `generate_name`
/// plus a random suffix, with `labels` added to the template's.
pub(crate) async fn create_from_template(
    app: &App,
    owner: &Value,
    template: &Value,
    generate_name: &str,
    extra_labels: &Map<String, Value>,
    extra_annotations: &Map<String, Value>,
) -> ApiResult<Arc<Value>> {
    let mut pod = from_template(owner, template, extra_labels, extra_annotations);
    meta::set_path(
        &mut pod,
        &["metadata", "generateName"],
        json!(generate_name),
    );
    create(app, owner, pod, |name| format!("Created pod: {name}")).await
}

/// Deletes a Pod its controller no longer wants, with the controller's event.
pub(crate) fn delete(app: &App, owner: &Value, pod: &Value) -> ApiResult<()> {
    client::delete(
        app,
        PODS,
        meta::namespace(pod),
        meta::name(pod),
        meta::uid(pod),
    )?;
    client::event(
        app,
        client::pod_controller_source(client::str_at(owner, &["kind"])),
        owner,
        "Normal",
        "SuccessfulDelete",
        &format!("Deleted pod: {}", meta::name(pod)),
    );
    Ok(())
}

/// Which Pods go first when there are too many (controller.ActivePods'
/// order): unassigned before assigned, Pending before Running, not ready
/// before ready, newer before older.
pub(crate) fn deletion_order(pods: &mut [Arc<Value>]) {
    let rank = |p: &Value| {
        let assigned = !client::str_at(p, &["spec", "nodeName"]).is_empty();
        let phase_rank = match phase(p) {
            "Pending" | "" => 0,
            "Unknown" => 1,
            _ => 2,
        };
        (assigned, phase_rank, is_ready(p))
    };
    pods.sort_by(|a, b| {
        rank(a).cmp(&rank(b)).then_with(|| {
            meta::meta_str(b, "creationTimestamp").cmp(meta::meta_str(a, "creationTimestamp"))
        })
    });
}

/// Writes an integer status field as Go's `omitempty` does: absent when 0.
pub(crate) fn set_count(status: &mut Map<String, Value>, field: &str, value: i64) {
    if value == 0 {
        status.remove(field);
    } else {
        status.insert(field.into(), json!(value));
    }
}
