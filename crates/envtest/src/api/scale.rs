//! The `/scale` subresource: an `autoscaling/v1` Scale view of the object's
//! replicas, read and written through the object itself.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::update::{Attempt, Change, Fail, apply_patch, with_retries_admitted};
use super::{App, WriteCtx, Written, not_found};
use crate::error::{ApiError, ApiResult};
use crate::jsonpath::JsonPath;
use crate::meta;
use crate::patch::PatchType;
use crate::registry::{Resource, ScalePaths};

fn path_keys(path: &str) -> Vec<String> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn read_path(obj: &Value, path: &str) -> Option<Value> {
    JsonPath::compile(path)
        .ok()
        .and_then(|p| p.find(obj).into_iter().next().cloned())
}

fn write_path(obj: &mut Value, path: &str, value: Value) {
    let keys = path_keys(path);
    let mut cur = obj;
    for (i, k) in keys.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else { return };
        if i + 1 == keys.len() {
            map.insert(k.clone(), value);
            return;
        }
        cur = map
            .entry(k.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// A LabelSelector object as a selector string (`a=b,c in (d)`).
pub fn selector_string(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        let mut kv: Vec<_> = labels.iter().collect();
        kv.sort_by(|a, b| a.0.cmp(b.0));
        for (k, v) in kv {
            parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

fn scale_paths(res: &Resource) -> ApiResult<&ScalePaths> {
    res.scale.as_ref().ok_or_else(ApiError::not_found_path)
}

/// Writes `replicas` where the Scale's `spec.replicas` lives in the object.
pub(crate) fn set_replicas(res: &Resource, obj: &mut Value, replicas: i64) -> ApiResult<()> {
    let paths = scale_paths(res)?;
    write_path(obj, &paths.spec_replicas, json!(replicas));
    Ok(())
}

/// The Scale view of an object.
pub fn to_scale(res: &Resource, obj: &Value) -> ApiResult<Value> {
    let paths = scale_paths(res)?;
    let spec = read_path(obj, &paths.spec_replicas)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let status = read_path(obj, &paths.status_replicas)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let selector = if paths.selector_from_spec {
        match obj.pointer("/spec/selector") {
            // A ReplicationController's selector is a plain label map.
            Some(labels) if res.group.is_empty() => {
                selector_string(&json!({"matchLabels": labels}))
            }
            Some(selector) => selector_string(selector),
            None => String::new(),
        }
    } else {
        paths
            .label_selector
            .as_deref()
            .and_then(|p| read_path(obj, p))
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let m = meta::metadata(obj).cloned().unwrap_or_default();
    let mut metadata = Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(k) {
            metadata.insert(k.into(), v.clone());
        }
    }
    let mut status_doc = json!({"replicas": status});
    if !selector.is_empty() {
        status_doc["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec},
        "status": status_doc,
    }))
}

pub fn get(app: &App, res: &Resource, ns: &str, name: &str) -> ApiResult<Value> {
    scale_paths(res)?;
    let obj = super::read::get(app, res, ns, name)?;
    to_scale(res, &obj)
}

async fn write_scale(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    ctx: &WriteCtx,
    make_scale: impl Fn(&Value) -> ApiResult<Value>,
) -> ApiResult<Written> {
    let paths = scale_paths(res)?.clone();
    let change = Change {
        res,
        ns,
        name,
        sub: Some("scale"),
        ctx,
        is_put: false,
        managed_done: false,
    };
    let written = with_retries_admitted(app, &change, &[], |old| {
        let old = old.ok_or_else(|| Fail::Api(not_found(res, name)))?;
        let view = res.from_storage(&old);
        let current = to_scale(res, &view)?;
        let scale = make_scale(&current)?;
        let rv = meta::resource_version(&scale).to_string();
        if !rv.is_empty() && rv != meta::resource_version(&view) {
            return Err(Fail::Api(super::conflict(res, name)));
        }
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            return Err(Fail::Api(ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![crate::error::Cause::invalid(
                    "spec.replicas",
                    &json!(replicas),
                    "must be greater than or equal to 0",
                )],
            )));
        }
        let mut obj = (*view).clone();
        write_path(&mut obj, &paths.spec_replicas, json!(replicas));
        meta::remove_meta(&mut obj, "resourceVersion");
        Ok(Attempt::Update { new: obj, old })
    })
    .await?;
    Ok(Written {
        code: written.code,
        body: Arc::new(to_scale(res, &written.body)?),
        warnings: written.warnings,
    })
}

/// The resource as seen by patches of its Scale: untyped, not custom (so
/// strategic merge patch is accepted).
fn builtin_scale_view(res: &Resource) -> Resource {
    let mut r = res.clone();
    if let Some(kind) = crate::builtin::kinds().first() {
        r.source = crate::registry::Source::Builtin(kind);
    }
    r
}

/// PUT `/scale`.
pub async fn replace(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    body: Value,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    write_scale(app, res, ns, name, ctx, |_| Ok(body.clone())).await
}

/// PATCH `/scale` (JSON, merge or strategic merge patch of the Scale).
pub async fn patch(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    let patch_type = match patch_type {
        PatchType::Apply => {
            // Apply of a Scale: treat the applied config as a merge patch.
            let applied = crate::request::body::parse_yaml(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            let bytes = serde_json::to_vec(&applied.value).unwrap_or_default();
            return write_scale(app, res, ns, name, ctx, |current| {
                apply_patch(res, PatchType::Merge, current, &bytes)
            })
            .await;
        }
        other => other,
    };
    // The Scale is a built-in type: strategic merge patch applies to it even
    // for custom resources.
    write_scale(app, res, ns, name, ctx, |current| {
        let scale_kind = builtin_scale_view(res);
        apply_patch(&scale_kind, patch_type, current, body)
    })
    .await
}
