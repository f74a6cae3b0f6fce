//! One step of an update, as kube-apiserver runs it: stage the new object
//! against the stored one, check it, and write it (or settle that nothing
//! changed), retried whenever the write races another one. No admission here:
//! the controllers write through these steps directly, and update.rs wraps
//! them with the admission chain for requests.

use std::sync::Arc;

use serde_json::Value;

use super::{
    WriteCtx, Written, allows_unconditional_update, conflict, decode, field_validation, invalid,
    not_found, same_content, type_info, validate_update,
};
use crate::app::App;
use crate::builtin;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::patch::{self, UpdateRequest};
use crate::registry::Resource;
use crate::store::{Preconditions, WriteError, parse_rv};

/// Why one update attempt did not finish.
pub(crate) enum Fail {
    Api(ApiError),
    /// The stored object changed between the read and the write: read it
    /// again and run the attempt once more (kube-apiserver's
    /// GuaranteedUpdate). A resourceVersion precondition the client sent is
    /// then checked against the fresh object, so only that one can fail.
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

pub(super) fn check_name_and_namespace(c: &Change<'_>, obj: &mut Value) -> ApiResult<()> {
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
            let sub = sub.filter(|s| matches!(*s, "status" | "approval" | "ephemeralcontainers"));
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
pub(super) struct Staged {
    pub(super) new: Value,
    pub(super) old_view: Arc<Value>,
    pub(super) warnings: Vec<String>,
    /// The resourceVersion of the object this attempt read (and, when the
    /// request named one, the one it named): the store refuses the write
    /// if the object changed since.
    pub(super) expected: u64,
    /// The request asked to reset field tracking.
    pub(super) reset_managed_fields: bool,
}

/// Name, resourceVersion and type checks, decode, field validation and
/// defaults of `new` against `old` (stored form).
pub(super) fn stage(
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
    let expected = if body_rv.is_empty() {
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
        old_rv
    } else {
        match body_rv.parse::<u64>() {
            Ok(rv) if rv == old_rv => rv,
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
        reset_managed_fields,
    })
}

/// BeforeUpdate, allocation and validation: between the two admission phases.
pub(super) fn check(app: &App, c: &Change<'_>, s: &mut Staged) -> Result<(), Fail> {
    let res = c.res;
    before_update(res, &mut s.new, &s.old_view, c.sub);
    super::allocate(app, res, &mut s.new, c.ctx.opts.dry_run)?;
    let causes = validate_update(res, (&s.new, &s.old_view), c.sub, &mut s.warnings);
    if !causes.is_empty() {
        super::restore_allocation(app, res, &s.new, c.ctx.opts.dry_run);
        return Err(invalid(res, c.name, causes).into());
    }
    if c.sub.is_none()
        && let Some(kind) = res.builtin()
    {
        s.warnings
            .extend(builtin::warnings::on_update(kind, &s.new, &s.old_view));
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
pub(super) fn settle(c: &Change<'_>, s: &mut Staged) -> Option<Written> {
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
pub(super) fn write(app: &App, c: &Change<'_>, s: Staged) -> Result<Written, Fail> {
    let res = c.res;
    let Staged {
        new,
        warnings,
        expected,
        ..
    } = s;
    let store_err = |e: WriteError| match e {
        WriteError::Conflict { .. } => Fail::Retry,
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

/// Runs `attempt` against the freshly read object until it does not need a
/// retry. Unbounded, as kube-apiserver's GuaranteedUpdate: an attempt only
/// needs another when some other write to the object succeeded meanwhile.
pub(crate) fn with_retries(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    mut attempt: impl FnMut(Option<Arc<Value>>) -> Result<Written, Fail>,
) -> ApiResult<Written> {
    loop {
        let old = app.store.get(&res.store_key, ns, name);
        match attempt(old) {
            Ok(w) => return Ok(w),
            Err(Fail::Api(e)) => return Err(e),
            Err(Fail::Retry) => continue,
        }
    }
}
