//! The `/scale` subresource: an `autoscaling/v1` Scale view of the object's
//! replicas, read and written through the object itself.

use std::sync::Arc;

use serde_json::{Value, json};

pub(crate) use super::scale_view::to_scale;
use super::scale_view::{scale_paths, write_path};
use super::update::{Attempt, apply_patch, with_retries_admitted};
use super::update_steps::{Change, Fail};
use super::{WriteCtx, Written, not_found};
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::patch::PatchType;
use crate::registry::Resource;

pub(crate) fn get(app: &App, res: &Resource, ns: &str, name: &str) -> ApiResult<Value> {
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
pub(crate) async fn replace(
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
pub(crate) async fn patch(
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
