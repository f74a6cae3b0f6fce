//! Update (PUT) and patch (PATCH): both end in the same update step, run in
//! kube-apiserver's order and retried when an unconditional write races.

use std::sync::Arc;

use serde_json::Value;

use super::admit;
use super::{
    App, WriteCtx, Written, allows_unconditional_update, check_type_meta, conflict, decode,
    field_validation, invalid, not_found, same_content, type_info, validate_update,
};
use crate::admission::Operation;
use crate::builtin;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::patch::{self, ApplyRequest, PatchType, UpdateRequest};
use crate::registry::Resource;
use crate::request::body::parse_yaml;
use crate::store::{Preconditions, WriteError, parse_rv};

/// How often a write that lost a race without a resourceVersion precondition is retried.
const RETRIES: usize = 8;

/// Why one update attempt did not finish.
pub(crate) enum Fail {
    Api(ApiError),
    /// An unconditional write met a concurrent one: read again and retry.
    Retry,
}

impl From<ApiError> for Fail {
    fn from(e: ApiError) -> Fail {
        Fail::Api(e)
    }
}

/// The parts of an update request.
pub(crate) struct Change<'a> {
    pub res: &'a Resource,
    pub ns: &'a str,
    pub name: &'a str,
    /// `None`, `Some("status")` or `Some("scale")`.
    pub sub: Option<&'a str>,
    pub ctx: &'a WriteCtx,
    /// PUT (refuses missing resourceVersion where unconditional updates are not allowed).
    pub is_put: bool,
    /// Managed fields already recorded (server-side apply).
    pub managed_done: bool,
}

fn check_name_and_namespace(c: &Change<'_>, obj: &mut Value) -> ApiResult<()> {
    let body_name = meta::name(obj).to_string();
    if body_name.is_empty() {
        meta::set_meta(obj, "name", Value::String(c.name.to_string()));
    } else if body_name != c.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            c.name
        )));
    }
    if c.res.namespaced {
        let body_ns = meta::namespace(obj);
        if !body_ns.is_empty() && body_ns != c.ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        meta::set_meta(obj, "namespace", Value::String(c.ns.to_string()));
    } else {
        meta::remove_meta(obj, "namespace");
    }
    Ok(())
}

fn copy_meta(new: &mut Value, old: &Value, field: &str, only_if_missing: bool) {
    let old_v = meta::metadata(old).and_then(|m| m.get(field)).cloned();
    let has_new = meta::metadata(new).is_some_and(|m| m.get(field).is_some_and(|v| !v.is_null()));
    if only_if_missing && has_new {
        return;
    }
    match old_v {
        Some(v) => meta::set_meta(new, field, v),
        None if !only_if_missing => {
            meta::remove_meta(new, field);
        }
        None => {}
    }
}

fn without_metadata(v: &Value) -> Value {
    let mut v = v.clone();
    if let Value::Object(m) = &mut v {
        m.remove("metadata");
    }
    v
}

/// The custom resource strategy's PrepareForUpdate (main resource and /status).
fn prepare_custom(res: &Resource, new: &mut Value, old: &Value, sub: Option<&str>) {
    if sub == Some("status") {
        let status = new.get("status").cloned();
        let managed = meta::metadata(new)
            .and_then(|m| m.get("managedFields"))
            .cloned();
        *new = old.clone();
        if let Value::Object(map) = new {
            match status {
                Some(s) => {
                    map.insert("status".into(), s);
                }
                None => {
                    map.remove("status");
                }
            }
        }
        match managed {
            Some(mf) => meta::set_meta(new, "managedFields", mf),
            None => {
                meta::remove_meta(new, "managedFields");
            }
        }
        return;
    }
    if res.has_status
        && let Value::Object(map) = new
    {
        match old.get("status") {
            Some(s) => {
                map.insert("status".into(), s.clone());
            }
            None => {
                map.remove("status");
            }
        }
    }
    if without_metadata(new) != without_metadata(old) {
        meta::set_meta(new, "generation", Value::from(meta::generation(old) + 1));
    }
}

/// rest.BeforeUpdate: system fields come from the stored object.
fn before_update(res: &Resource, new: &mut Value, old: &Value, sub: Option<&str>) {
    copy_meta(new, old, "generation", false);
    match res.builtin() {
        Some(kind) => {
            let sub = sub.filter(|s| matches!(*s, "status" | "approval"));
            builtin::prepare_for_update(kind, new, old, sub);
        }
        None => prepare_custom(res, new, old, sub),
    }
    copy_meta(new, old, "uid", true);
    copy_meta(new, old, "creationTimestamp", false);
    if meta::is_deleting(old) {
        copy_meta(new, old, "deletionTimestamp", false);
        copy_meta(new, old, "deletionGracePeriodSeconds", true);
    }
}

/// Whether a terminating object has nothing left holding it.
fn ready_to_delete(res: &Resource, obj: &Value) -> bool {
    if !meta::is_deleting(obj) || !meta::finalizers(obj).is_empty() {
        return false;
    }
    if res.group.is_empty() && res.plural == "namespaces" {
        let spec_finalizers = meta::get_path(obj, &["spec", "finalizers"])
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        return !spec_finalizers;
    }
    true
}

/// An update attempt up to mutating admission.
struct Staged {
    new: Value,
    old_view: Arc<Value>,
    warnings: Vec<String>,
    /// The resourceVersion the write is conditional on.
    expected: u64,
    /// The request named no resourceVersion: a race is retried, not a 409.
    unconditional: bool,
    /// The request asked to reset field tracking.
    reset_managed_fields: bool,
}

/// Name, resourceVersion and type checks, decode, field validation and
/// defaults of `new` against `old` (stored form).
fn stage(
    c: &Change<'_>,
    mut new: Value,
    duplicates: &[String],
    old: &Arc<Value>,
) -> Result<Staged, Fail> {
    let res = c.res;
    let old_view = res.from_storage(old);
    check_name_and_namespace(c, &mut new)?;
    // The request asks to reset field tracking (`managedFields: [{}]`):
    // remembered here, as decoding may drop the list.
    let reset_managed_fields = c.sub.is_none() && patch::take_managed_fields_reset(&mut new);
    let old_rv = parse_rv(meta::resource_version(&old_view));
    let body_rv = meta::resource_version(&new).to_string();
    let (expected, unconditional) = if body_rv.is_empty() {
        if c.is_put && !allows_unconditional_update(res) {
            let cause = Cause::new(
                "FieldValueInvalid",
                "metadata.resourceVersion",
                "Invalid value: 0x0: must be specified for an update",
            );
            return Err(ApiError::invalid(&res.group, &res.plural, c.name, vec![cause]).into());
        }
        meta::set_meta(
            &mut new,
            "resourceVersion",
            Value::String(old_rv.to_string()),
        );
        (old_rv, true)
    } else {
        match body_rv.parse::<u64>() {
            Ok(rv) if rv == old_rv => (rv, false),
            _ => return Err(conflict(res, c.name).into()),
        }
    };
    let (mut new, unknown) = decode(res, new)?;
    let warnings = field_validation(res, c.ctx.opts.field_validation, &unknown, duplicates)?;
    super::apply_defaults(res, &mut new);
    Ok(Staged {
        new,
        old_view,
        warnings,
        expected,
        unconditional,
        reset_managed_fields,
    })
}

/// BeforeUpdate, allocation and validation: between the two admission phases.
fn check(app: &App, c: &Change<'_>, s: &mut Staged) -> Result<(), Fail> {
    let res = c.res;
    before_update(res, &mut s.new, &s.old_view, c.sub);
    super::allocate(app, res, &mut s.new, c.ctx.opts.dry_run)?;
    let causes = validate_update(res, (&s.new, &s.old_view), c.sub, &mut s.warnings);
    if !causes.is_empty() {
        super::restore_allocation(app, res, &s.new, c.ctx.opts.dry_run);
        return Err(invalid(res, c.name, causes).into());
    }
    if res.is_certificate_signing_requests() {
        builtin::certificates::admit(&app.store, &c.ctx.user, &s.new, Some(&s.old_view), c.sub)?;
    }
    Ok(())
}

/// Managed fields, the no-op check, and the write (or the deletion of a
/// terminating object whose last finalizer went).
fn commit(app: &App, c: &Change<'_>, mut s: Staged) -> Result<Written, Fail> {
    if let Some(unchanged) = settle(c, &mut s) {
        return Ok(unchanged);
    }
    write(app, c, s)
}

/// Records the managed fields of `s.new`; the answer when nothing changed.
fn settle(c: &Change<'_>, s: &mut Staged) -> Option<Written> {
    let res = c.res;
    let Staged {
        new,
        old_view,
        reset_managed_fields,
        ..
    } = s;
    if !c.managed_done {
        if *reset_managed_fields {
            meta::set_meta(new, "managedFields", Value::Array(Vec::new()));
        } else if meta::metadata(new).is_none_or(|m| !m.contains_key("managedFields"))
            && let Some(mf) = meta::metadata(old_view).and_then(|m| m.get("managedFields"))
        {
            meta::set_meta(new, "managedFields", mf.clone());
        }
        let now = meta::now_rfc3339();
        let api_version = res.api_version();
        patch::record_update(
            &UpdateRequest {
                old: Some(old_view),
                manager: &c.ctx.manager,
                api_version: &api_version,
                subresource: c.sub,
                now: &now,
                types: type_info(res),
            },
            new,
        );
    }
    same_content(new, old_view).then(|| Written {
        code: 200,
        body: old_view.clone(),
        warnings: std::mem::take(&mut s.warnings),
    })
}

/// Stores a settled change (or deletes a terminating object whose last
/// finalizer went).
fn write(app: &App, c: &Change<'_>, s: Staged) -> Result<Written, Fail> {
    let res = c.res;
    let Staged {
        new,
        warnings,
        expected,
        unconditional,
        ..
    } = s;
    let store_err = |e: WriteError| match e {
        WriteError::Conflict { .. } if unconditional => Fail::Retry,
        WriteError::NotFound => Fail::Api(not_found(res, c.name)),
        _ => Fail::Api(conflict(res, c.name)),
    };
    if ready_to_delete(res, &new) {
        if !c.ctx.opts.dry_run {
            let pre = Preconditions {
                resource_version: Some(expected),
                uid: None,
            };
            app.store
                .delete(&res.store_key, c.ns, c.name, &pre)
                .map_err(store_err)?;
        }
        return Ok(Written {
            code: 200,
            body: Arc::new(new),
            warnings,
        });
    }
    if c.ctx.opts.dry_run {
        return Ok(Written {
            code: 200,
            body: Arc::new(new),
            warnings,
        });
    }
    super::storage_limit::check(res, c.ns, c.name, &new).map_err(Fail::Api)?;
    // A Service that loses the race gives back what was allocated for it.
    let service = super::is_service(res).then(|| new.clone());
    let stored = app
        .store
        .update(&res.store_key, c.ns, c.name, expected, res.to_storage(new))
        .map_err(|e| {
            if let Some(svc) = &service {
                super::restore_allocation(app, res, svc, false);
            }
            store_err(e)
        })?;
    Ok(Written {
        code: 200,
        body: res.from_storage(&stored),
        warnings,
    })
}

/// One attempt at updating `old` (stored form) to `new` (request form),
/// without admission webhooks: the controllers' own writes.
pub(crate) fn update_once(
    app: &App,
    c: &Change<'_>,
    new: Value,
    duplicates: &[String],
    old: &Arc<Value>,
) -> Result<Written, Fail> {
    let mut s = stage(c, new, duplicates, old)?;
    check(app, c, &mut s)?;
    commit(app, c, s)
}

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
    if let Err(e) = admit::validate(app, &req, &s.new, Some(&s.old_view), c.ctx).await {
        super::restore_allocation(app, c.res, &s.new, c.ctx.opts.dry_run);
        return Err(e.into());
    }
    if let Some(unchanged) = settle(c, &mut s) {
        return Ok(unchanged);
    }
    s.new = crate::conversion::for_storage(app, c.res, std::mem::take(&mut s.new)).await?;
    write(app, c, s)
}

/// Runs `attempt` against the freshly read object until it does not need a retry.
pub(crate) fn with_retries(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    mut attempt: impl FnMut(Option<Arc<Value>>) -> Result<Written, Fail>,
) -> ApiResult<Written> {
    for _ in 0..RETRIES {
        let old = app.store.get(&res.store_key, ns, name);
        match attempt(old) {
            Ok(w) => return Ok(w),
            Err(Fail::Api(e)) => return Err(e),
            Err(Fail::Retry) => continue,
        }
    }
    Err(conflict(res, name))
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
/// (awaiting the webhooks with no lock held).
pub(crate) async fn with_retries_admitted(
    app: &App,
    c: &Change<'_>,
    duplicates: &[String],
    mut next: impl FnMut(Option<Arc<Value>>) -> Result<Attempt, Fail>,
) -> ApiResult<Written> {
    for _ in 0..RETRIES {
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
                .map_err(Fail::Api),
        };
        match outcome {
            Ok(w) => return crate::conversion::written_for_read(app, c.res, w).await,
            Err(Fail::Api(e)) => return Err(e),
            Err(Fail::Retry) => continue,
        }
    }
    Err(conflict(c.res, c.name))
}

/// PUT of an object or its `status` subresource.
#[allow(clippy::too_many_arguments)]
pub async fn replace(
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

/// Kinds whose strategy allows a PUT to create (`AllowCreateOnUpdate`).
fn allows_create_on_update(res: &Resource) -> bool {
    res.builtin().is_some()
        && matches!(
            (res.group.as_str(), res.plural.as_str()),
            ("", "endpoints" | "events" | "limitranges" | "services")
                | ("events.k8s.io", "events")
                | ("coordination.k8s.io", "leases")
                | ("node.k8s.io", "runtimeclasses")
                | (
                    "rbac.authorization.k8s.io",
                    "roles" | "rolebindings" | "clusterroles" | "clusterrolebindings"
                )
        )
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
pub async fn patch(
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
    let pins_resource_version = body
        .windows(b"resourceVersion".len())
        .any(|w| w == b"resourceVersion");
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
        let patched = match &applied {
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
        // A patch that does not name a resourceVersion is unconditional (and
        // retried on races); one that does is checked against the stored one.
        let mut patched = patched;
        if !pins_resource_version
            && meta::resource_version(&patched) == meta::resource_version(&view)
        {
            meta::remove_meta(&mut patched, "resourceVersion");
        }
        Ok(Attempt::Update { new: patched, old })
    })
    .await
}
