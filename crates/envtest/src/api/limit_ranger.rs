//! The LimitRanger admission plugin (on by default in kube-apiserver v1.32)
//! for Pods on create: the `Container` limits of the namespace's LimitRanges
//! give containers without requests or limits their defaults (recorded in
//! the `kubernetes.io/limit-ranger` annotation), then every container must
//! stay within their `min` and `max` (403 otherwise).
//!
//! Not done: `Pod` and `PersistentVolumeClaim` limit types and
//! `maxLimitRequestRatio`.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::quantity::{Quantity, from_json};
use crate::store::ResKey;

const LIMIT_RANGES: &str = "limitranges";
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The `Container` items of the namespace's LimitRanges.
fn container_limits(app: &App, ns: &str) -> Vec<Value> {
    let key: ResKey = Arc::from(LIMIT_RANGES);
    let (ranges, _) = app.store.list(&key, Some(ns), None);
    ranges
        .into_iter()
        .flat_map(|(_, range)| {
            range
                .pointer("/spec/limits")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter(|item| item["type"] == "Container")
        .collect()
}

fn resource_map<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    value
        .get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// Fills `container`'s missing requests / limits from `defaults`; returns
/// the annotation's parts for it.
fn merge_defaults(
    container: &mut Map<String, Value>,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
) -> Vec<String> {
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let resources = container
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(resources) = resources.as_object_mut() else {
        return Vec::new();
    };
    let mut parts = Vec::new();
    for (field, defaults, word) in [
        ("requests", requests, "request"),
        ("limits", limits, "limit"),
    ] {
        let mut set: Vec<String> = Vec::new();
        if defaults.is_empty() {
            continue;
        }
        let current = resources
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(current) = current.as_object_mut() {
            for (resource, value) in defaults {
                if !current.contains_key(resource) {
                    current.insert(resource.clone(), value.clone());
                    set.push(resource.clone());
                }
            }
        }
        if !set.is_empty() {
            set.sort();
            parts.push(format!("{} {word} for container {name}", set.join(", ")));
        }
    }
    for field in ["requests", "limits"] {
        if resources
            .get(field)
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            resources.remove(field);
        }
    }
    parts
}

fn quantity(value: &Value) -> Option<Quantity> {
    from_json(value)
}

/// The min / max violations of one container.
fn check(container: &Value, item: &Value, errors: &mut Vec<String>) {
    let resources = container.get("resources");
    let get = |field: &str, resource: &str| {
        resources
            .and_then(|r| r.get(field))
            .and_then(|m| m.get(resource))
            .and_then(quantity)
    };
    for (resource, min) in resource_map(item, "min") {
        let Some(min_q) = quantity(min) else {
            continue;
        };
        let shown = min_q.canonical();
        match get("requests", resource) {
            None => errors.push(format!(
                "minimum {resource} usage per Container is {shown}.  No request is specified"
            )),
            Some(request) if request.nanos() < min_q.nanos() => errors.push(format!(
                "minimum {resource} usage per Container is {shown}, but request is {}",
                request.canonical()
            )),
            Some(_) => {}
        }
    }
    for (resource, max) in resource_map(item, "max") {
        let Some(max_q) = quantity(max) else {
            continue;
        };
        let shown = max_q.canonical();
        match get("limits", resource) {
            None => errors.push(format!(
                "maximum {resource} usage per Container is {shown}.  No limit is specified"
            )),
            Some(limit) if limit.nanos() > max_q.nanos() => errors.push(format!(
                "maximum {resource} usage per Container is {shown}, but limit is {}",
                limit.canonical()
            )),
            Some(_) => {}
        }
    }
}

/// Applies the plugin to a Pod being created in `ns`.
pub(crate) fn admit(app: &App, ns: &str, pod: &mut Value) -> ApiResult<()> {
    let items = container_limits(app, ns);
    if items.is_empty() {
        return Ok(());
    }
    let mut requests = Map::new();
    let mut limits = Map::new();
    for item in &items {
        for (k, v) in resource_map(item, "defaultRequest") {
            requests.insert(k.clone(), v.clone());
        }
        for (k, v) in resource_map(item, "default") {
            limits.insert(k.clone(), v.clone());
        }
    }
    let mut parts = Vec::new();
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        for field in ["initContainers", "containers"] {
            for container in spec
                .get_mut(field)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                parts.extend(merge_defaults(container, &requests, &limits));
            }
        }
    }
    if !parts.is_empty() {
        let text = format!("LimitRanger plugin set: {}", parts.join("; "));
        let metadata = meta::metadata_mut(pod);
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(ANNOTATION.into(), Value::String(text));
        }
    }
    let mut errors = Vec::new();
    for item in &items {
        for field in ["initContainers", "containers"] {
            for container in pod
                .pointer(&format!("/spec/{field}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                check(container, item, &mut errors);
            }
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let message = if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    };
    let pod_name = match meta::name(pod) {
        "" => meta::meta_str(pod, "generateName"),
        named => named,
    };
    Err(ApiError::forbidden("", "pods", pod_name, &message))
}
