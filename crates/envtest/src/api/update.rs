//! Update (PUT) and patch (PATCH): both end in the same update step, run in
//! kube-apiserver's order and retried whenever the write races another one.

use std::sync::Arc;

use serde_json::Value;

use super::admit;
use super::update_steps::{Change, Fail, check, check_name_and_namespace, settle, stage, write};
use super::{WriteCtx, Written, check_type_meta, not_found, type_info};
use crate::admission::Operation;
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::patch::{self, ApplyRequest, PatchType};
use crate::registry::Resource;
use crate::request::body::parse_yaml;

/// One attempt at updating `old` to `new`, calling the admission webhooks.
pub(crate) async fn update_once_admitted(
    app: &App,
    c: &Change<'_>,
    new: Value,
    duplicates: &[String],
    old: &Arc<Value>,
) -> Result<Written, Fail> {
    let mut s = stage(c, new, duplicates, old)?;
    let req = admit::Request {
        res: c.res,
        namespace: c.ns,
        name: c.name,
        subresource: c.sub,
        operation: Operation::Update,
        dry_run: c.ctx.opts.dry_run,
        options: admit::Options::Update(&c.ctx.opts),
        user: &c.ctx.user,
    };
    let staged_new = std::mem::take(&mut s.new);
    s.new = admit::mutate(app, &req, staged_new, Some(&s.old_view), c.ctx).await?;
    super::check_escalation(app, c.res, c.ns, c.ctx, &s.new, Some(&*s.old_view))?;
    check(app, c, &mut s)?;
    let admitted = match admit::validate(app, &req, &s.new, Some(&s.old_view), c.ctx).await {
        // ResourceQuota comes last among kube-apiserver's admission plugins.
        Ok(()) if c.sub.is_none() => super::quota_admission::admit_update(
            app,
            c.res,
            c.ns,
            &s.new,
            &s.old_view,
            c.ctx.opts.dry_run,
        ),
        Ok(()) => Ok(()),
        Err(e) => Err(e),
    };
    if let Err(e) = admitted {
        super::restore_allocation(app, c.res, &s.new, c.ctx.opts.dry_run);
        return Err(e.into());
    }
    if let Some(unchanged) = settle(c, &mut s) {
        return Ok(unchanged);
    }
    s.new = crate::conversion::for_storage(app, c.res, std::mem::take(&mut s.new)).await?;
    write(app, c, s)
}

/// What one attempt of an admitted write does with the object it read.
pub(crate) enum Attempt {
    /// Update the stored object `old` to `new`.
    Update { new: Value, old: Arc<Value> },
    /// Create the object: a server-side apply of an object that does not
    /// exist (managed fields recorded), or a PUT of one where the kind allows
    /// create on update.
    Create(super::create::Input),
}

/// [`with_retries`] for writes that call the admission webhooks: `next`
/// decides from the freshly read object what to write, then the write runs
/// (awaiting the webhooks with no lock held). This loop is the only way a
/// request's update or patch reaches the store: an attempt that lost a race
/// (the object changed, or appeared, after it was read) is run again on the
/// fresh object, without limit, as kube-apiserver's GuaranteedUpdate does;
/// the request's deadline ends it.
///
/// [`with_retries`]: super::update_steps::with_retries
pub(crate) async fn with_retries_admitted(
    app: &App,
    c: &Change<'_>,
    duplicates: &[String],
    mut next: impl FnMut(Option<Arc<Value>>) -> Result<Attempt, Fail>,
) -> ApiResult<Written> {
    loop {
        let old = match app.store.get(&c.res.store_key, c.ns, c.name) {
            Some(stored) => Some(crate::conversion::stored_as_requested(app, c.res, stored).await?),
            None => None,
        };
        let outcome = match next(old) {
            Err(e) => Err(e),
            Ok(Attempt::Update { new, old }) => {
                update_once_admitted(app, c, new, duplicates, &old).await
            }
            Ok(Attempt::Create(input)) => super::create::create(app, c.res, c.ns, input, c.ctx)
                .await
                .map_err(created_meanwhile),
        };
        match outcome {
            Ok(w) => return w.for_read(app, c.res).await,
            Err(Fail::Api(e)) => return Err(e),
            Err(Fail::Retry) => tokio::task::yield_now().await,
        }
    }
}

/// A create on update (apply, or PUT where the kind allows it) that finds
/// the object there after all: another writer created it since it was
/// read, so the attempt runs again as an update.
fn created_meanwhile(e: crate::error::ApiError) -> Fail {
    if e.code == 409 && e.reason == "AlreadyExists" {
        Fail::Retry
    } else {
        Fail::Api(e)
    }
}

/// PUT of an object or its `status` subresource.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn replace(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    mut obj: Value,
    duplicates: Vec<String>,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    check_type_meta(res, &mut obj)?;
    let change = Change {
        res,
        ns,
        name,
        sub,
        ctx,
        is_put: true,
        managed_done: false,
    };
    with_retries_admitted(app, &change, &duplicates, |old| {
        let Some(old) = old else {
            if sub.is_some() || !allows_create_on_update(res) {
                return Err(Fail::Api(not_found(res, name)));
            }
            return create_on_update(app, &change, obj.clone(), duplicates.clone());
        };
        Ok(Attempt::Update {
            new: obj.clone(),
            old,
        })
    })
    .await
}

/// Kinds whose strategy allows a PUT to create (`AllowCreateOnUpdate`), as
/// their rows of the kinds table say.
fn allows_create_on_update(res: &Resource) -> bool {
    res.builtin().is_some_and(|k| k.create_on_update)
}

/// A PUT of a missing object that creates it: the name comes from the URL,
/// a resourceVersion in the body is ignored, and the user needs the
/// `create` verb too.
fn create_on_update(
    app: &App,
    c: &Change<'_>,
    mut obj: Value,
    duplicates: Vec<String>,
) -> Result<Attempt, Fail> {
    check_name_and_namespace(c, &mut obj)?;
    meta::remove_meta(&mut obj, "resourceVersion");
    let attrs = crate::authz::Attributes {
        verb: "create".into(),
        resource_request: true,
        api_group: c.res.group.clone(),
        resource: c.res.plural.clone(),
        name: c.name.to_string(),
        namespace: c.ns.to_string(),
        ..crate::authz::Attributes::default()
    };
    if !crate::authz::authorize(&app.store, &c.ctx.user, &attrs).allowed {
        return Err(Fail::Api(crate::authz::forbidden(&c.ctx.user, &attrs)));
    }
    Ok(Attempt::Create(super::create::Input::Body {
        obj,
        duplicates,
    }))
}

fn apply_body(res: &Resource, name: &str, body: &[u8]) -> ApiResult<Value> {
    let applied = parse_yaml(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
        .value;
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply patch must be an object",
        ));
    }
    // The field manager's version check: the body's group, version and
    // kind must be the resource's, reported as Go prints a GroupVersionKind.
    let av = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = applied.get("kind").and_then(Value::as_str).unwrap_or("");
    if av != res.api_version() || kind != res.kind {
        let (group, version) = match av.split('/').collect::<Vec<_>>()[..] {
            [version] => ("", version),
            [group, version] => (group, version),
            _ => ("", ""),
        };
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    let body_name = meta::name(&applied);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    Ok(applied)
}

/// The patched object for the non-apply patch types.
pub(crate) fn apply_patch(
    res: &Resource,
    patch_type: PatchType,
    doc: &Value,
    body: &[u8],
) -> ApiResult<Value> {
    match patch_type {
        PatchType::Json => patch::json_patch(doc, body),
        PatchType::Merge => patch::merge_patch(doc, body),
        PatchType::Strategic => patch::strategic_merge_patch(doc, body, type_info(res)),
        PatchType::Apply => Err(ApiError::internal("apply is not a plain patch")),
    }
}

/// 415 for a strategic merge patch of a custom resource.
pub(crate) fn check_patch_type(res: &Resource, patch_type: PatchType) -> ApiResult<()> {
    if patch_type == PatchType::Strategic && res.is_custom() {
        return Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    Ok(())
}

/// PATCH of an object or its `status` subresource.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn patch(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    patch_type: PatchType,
    body: &[u8],
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    check_patch_type(res, patch_type)?;
    let applied = if patch_type == PatchType::Apply {
        Some(apply_body(res, name, body)?)
    } else {
        None
    };
    let change = Change {
        res,
        ns,
        name,
        sub,
        ctx,
        is_put: false,
        managed_done: applied.is_some(),
    };
    let now = meta::now_rfc3339();
    let api_version = res.api_version();
    with_retries_admitted(app, &change, &[], |old| {
        let Some(old) = old else {
            return match &applied {
                Some(applied) if sub.is_none() => {
                    let created = patch::server_side_apply(&ApplyRequest {
                        live: None,
                        applied,
                        manager: &ctx.manager,
                        force: ctx.opts.force,
                        api_version: &api_version,
                        subresource: None,
                        now: &now,
                        types: type_info(res),
                    })?;
                    let mut created = created;
                    meta::set_meta(&mut created, "name", Value::String(name.to_string()));
                    Ok(Attempt::Create(super::create::Input::Applied(created)))
                }
                _ => Err(Fail::Api(not_found(res, name))),
            };
        };
        let view = res.from_storage(&old);
        // The patched object keeps the resourceVersion it was read with,
        // unless the patch itself sets one: that one is the client's
        // precondition, checked against each fresh read as kube-apiserver
        // checks the patched object's.
        let mut patched = match &applied {
            Some(applied) => patch::server_side_apply(&ApplyRequest {
                live: Some(&view),
                applied,
                manager: &ctx.manager,
                force: ctx.opts.force,
                api_version: &api_version,
                subresource: sub,
                now: &now,
                types: type_info(res),
            })?,
            None => apply_patch(res, patch_type, &view, body)?,
        };
        super::patched_kind::check(res, patch_type, sub, &mut patched)?;
        Ok(Attempt::Update { new: patched, old })
    })
    .await
}
