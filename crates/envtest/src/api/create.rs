//! Create: decode, check, default, prepare, validate, admit, record managed
//! fields, store.

use std::sync::Arc;

use serde_json::Value;

use super::{
    App, WriteCtx, Written, check_namespace_accepts_create, check_type_meta, decode,
    field_validation, internal_no_reason, invalid, random_suffix, type_info, validate_create,
};
use crate::admission;
use crate::builtin;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::patch::{self, UpdateRequest};
use crate::registry::Resource;
use crate::store::WriteError;

/// Where the object to create comes from.
pub enum Input {
    /// A request body (duplicates found while parsing it).
    Body { obj: Value, duplicates: Vec<String> },
    /// The result of a server-side apply that creates: managed fields are
    /// already recorded and the body was checked by the caller.
    Applied(Value),
}

/// Creates an object of `res` in `ns` (empty for cluster-scoped resources).
pub fn create(
    app: &App,
    res: &Resource,
    ns: &str,
    input: Input,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    let (mut obj, duplicates, applied) = match input {
        Input::Body { obj, duplicates } => (obj, duplicates, false),
        Input::Applied(obj) => (obj, Vec::new(), true),
    };
    check_type_meta(res, &mut obj)?;
    if res.namespaced {
        let body_ns = meta::namespace(&obj);
        if !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        meta::set_meta(&mut obj, "namespace", Value::String(ns.to_string()));
    } else {
        meta::remove_meta(&mut obj, "namespace");
    }
    let (mut obj, unknown) = decode(res, obj)?;
    let warnings = field_validation(res, ctx.opts.field_validation, &unknown, &duplicates)?;
    super::apply_defaults(res, &mut obj);

    let requested_name = meta::name(&obj).to_string();
    check_namespace_accepts_create(app, res, ns, &requested_name)?;
    let attrs = admission::Attributes {
        resource: res,
        namespace: ns,
        name: &requested_name,
        subresource: None,
        operation: "CREATE",
        old: None,
        dry_run: ctx.opts.dry_run,
    };
    admission::mutate(&attrs, &mut obj)?;

    prepare(res, &mut obj);
    let client_rv = meta::resource_version(&obj).to_string();
    let causes = validate_create(res, &obj);
    if !causes.is_empty() {
        return Err(invalid(res, meta::name(&obj), causes));
    }
    admission::validate(&attrs, &obj)?;

    if !applied {
        let now = meta::now_rfc3339();
        let api_version = res.api_version();
        patch::record_update(
            &UpdateRequest {
                old: None,
                manager: &ctx.manager,
                api_version: &api_version,
                subresource: None,
                now: &now,
                types: type_info(res),
            },
            &mut obj,
        );
    }
    if !client_rv.is_empty() {
        return Err(internal_no_reason(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    meta::remove_meta(&mut obj, "resourceVersion");
    let is_service = res
        .builtin()
        .is_some_and(|k| k.group.is_empty() && k.kind == "Service");
    if is_service {
        let mut alloc = app.allocator.lock().unwrap_or_else(|e| e.into_inner());
        alloc
            .allocate_service(&mut obj, ctx.opts.dry_run)
            .map_err(|causes| invalid(res, meta::name(&obj), causes))?;
    }
    let name = meta::name(&obj).to_string();
    if ctx.opts.dry_run {
        if app.store.get(&res.store_key, ns, &name).is_some() {
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        return Ok(Written {
            code: 201,
            body: obj,
            warnings,
        });
    }
    let service_copy = is_service.then(|| obj.clone());
    let stored = res.to_storage(obj);
    match app.store.create(&res.store_key, ns, &name, stored) {
        Ok(stored) => Ok(Written {
            code: 201,
            body: Arc::unwrap_or_clone(res.from_storage(&stored)),
            warnings,
        }),
        Err(e) => {
            if let Some(svc) = &service_copy {
                // Give back what was allocated for the refused Service.
                app.allocator
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .release_service(svc);
            }
            match e {
                WriteError::AlreadyExists => {
                    Err(ApiError::already_exists(&res.group, &res.plural, &name))
                }
                other => Err(ApiError::internal(format!(
                    "storing the object failed: {other:?}"
                ))),
            }
        }
    }
}

/// rest.BeforeCreate's generic part plus the kind's PrepareForCreate.
fn prepare(res: &Resource, obj: &mut Value) {
    let m = meta::metadata_mut(obj);
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    m.remove("selfLink");
    let generate = m
        .get("generateName")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
        .map(str::to_string);
    let name_empty = m
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if let (Some(prefix), true) = (generate, name_empty) {
        m.insert(
            "name".into(),
            Value::String(format!("{prefix}{}", random_suffix())),
        );
    }
    m.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    m.insert(
        "creationTimestamp".into(),
        Value::String(meta::now_rfc3339()),
    );
    match res.builtin() {
        Some(kind) => builtin::prepare_for_create(kind, obj),
        None => {
            meta::set_meta(obj, "generation", Value::from(1));
            if res.has_status
                && let Value::Object(map) = obj
            {
                map.remove("status");
            }
        }
    }
}
