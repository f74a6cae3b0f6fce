//! Create: decode, check, default, record managed fields, the server's own
//! admission plugins, mutating admission, prepare, validate, validating
//! admission, store.

use std::sync::Arc;

use serde_json::Value;

use super::admit;
use super::{
    WriteCtx, Written, check_namespace_accepts_create, check_type_meta, decode, field_validation,
    generate_name, invalid, type_info, validate_create,
};
use crate::admission::Operation;
use crate::app::App;
use crate::builtin;
use crate::conversion;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::patch::{self, UpdateRequest};
use crate::registry::Resource;
use crate::store::WriteError;

/// Where the object to create comes from.
pub(crate) enum Input {
    /// A request body (duplicates found while parsing it).
    Body { obj: Value, duplicates: Vec<String> },
    /// The result of a server-side apply that creates: managed fields are
    /// already recorded and the body was checked by the caller.
    Applied(Value),
}

/// Creates an object of `res` in `ns` (empty for cluster-scoped resources),
/// calling the admission webhooks.
pub(crate) async fn create(
    app: &App,
    res: &Resource,
    ns: &str,
    input: Input,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    let staged = stage(app, res, ns, input, ctx)?;
    let req = admit::Request {
        res,
        namespace: ns,
        name: &staged.requested_name,
        subresource: None,
        operation: Operation::Create,
        dry_run: ctx.opts.dry_run,
        options: admit::Options::Create(&ctx.opts),
        user: &ctx.user,
    };
    let obj = admit::mutate(app, &req, staged.obj, None, ctx).await?;
    super::check_escalation(app, res, ns, ctx, &obj, None)?;
    let mut ready = check(app, res, obj, staged.warnings, ctx)?;
    let admitted = match admit::validate(app, &req, &ready.obj, None, ctx).await {
        // ResourceQuota comes last among kube-apiserver's admission plugins.
        Ok(()) => super::quota_admission::admit_create(app, res, ns, &ready.obj, ctx.opts.dry_run),
        Err(e) => Err(e),
    };
    if let Err(e) = admitted {
        super::restore_allocation(app, res, &ready.obj, ctx.opts.dry_run);
        return Err(e);
    }
    ready.obj = conversion::for_storage(app, res, ready.obj).await?;
    let written = store(app, res, ns, ready, ctx)?;
    written.for_read(app, res).await
}

/// Creates an object without calling admission webhooks: the server's own
/// writes (start-up namespaces, the serviceaccount controller).
pub(crate) fn create_internal(
    app: &App,
    res: &Resource,
    ns: &str,
    input: Input,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    let staged = stage(app, res, ns, input, ctx)?;
    let ready = check(app, res, staged.obj, staged.warnings, ctx)?;
    store(app, res, ns, ready, ctx)
}

/// The object up to mutating admission.
struct Staged {
    obj: Value,
    warnings: Vec<String>,
    /// The name as sent (empty when generated from generateName).
    requested_name: String,
}

/// Decode, type checks, field validation, defaults, managed fields, the
/// namespace check and the built-in admission plugins: everything before
/// mutating admission.
fn stage(app: &App, res: &Resource, ns: &str, input: Input, ctx: &WriteCtx) -> ApiResult<Staged> {
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

    // Managed fields are recorded from the object as sent and defaulted,
    // before admission and the kind's create-time changes (which nobody
    // owns), and without the status a status subresource resets.
    if res.has_status
        && let Value::Object(map) = &mut obj
    {
        map.remove("status");
    }
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

    let requested_name = meta::name(&obj).to_string();
    check_namespace_accepts_create(app, res, ns, &requested_name)?;
    // The server's own admission plugins run before the mutating webhooks.
    if let Some(kind) = res.builtin() {
        let service_account = super::service_account::pod_service_account(app, kind, ns, &obj)?;
        if (kind.group, kind.kind) == ("", "Pod") {
            // kube-apiserver's default plugin order: LimitRanger, then
            // ServiceAccount, then Priority.
            super::limit_ranger::admit(app, ns, &mut obj)?;
            super::priority::admit(app, &mut obj)?;
        }
        if (kind.group, kind.kind) == ("", "PersistentVolumeClaim") {
            super::default_storage_class::admit(app, &mut obj);
            super::storage_protection_admission::admit(&mut obj, false);
        }
        if (kind.group, kind.kind) == ("", "PersistentVolume") {
            super::storage_protection_admission::admit(&mut obj, true);
        }
        builtin::admit_create(kind, &mut obj, service_account.as_deref());
    }
    Ok(Staged {
        obj,
        warnings,
        requested_name,
    })
}

/// The object ready to store.
struct Ready {
    obj: Value,
    warnings: Vec<String>,
    /// A resourceVersion the client set (refused at store time, as kube-apiserver does).
    client_rv: String,
}

/// Generic metadata and the kind's PrepareForCreate, allocation and validation:
/// everything between mutating and validating admission.
fn check(
    app: &App,
    res: &Resource,
    mut obj: Value,
    warnings: Vec<String>,
    ctx: &WriteCtx,
) -> ApiResult<Ready> {
    prepare(res, &mut obj);
    if res.is_certificate_signing_requests() {
        builtin::certificates::set_requestor(&mut obj, &ctx.user);
    }
    let client_rv = meta::resource_version(&obj).to_string();
    super::allocate(app, res, &mut obj, ctx.opts.dry_run)?;
    let causes = validate_create(res, &obj);
    if !causes.is_empty() {
        super::restore_allocation(app, res, &obj, ctx.opts.dry_run);
        return Err(invalid(res, meta::name(&obj), causes));
    }
    let mut warnings = warnings;
    if let Some(kind) = res.builtin() {
        warnings.extend(builtin::warnings::on_create(kind, &obj));
    }
    if res.is_certificate_signing_requests() {
        builtin::certificates::admit(&app.store, &ctx.user, &obj, None, None)?;
    }
    Ok(Ready {
        obj,
        warnings,
        client_rv,
    })
}

/// Stores the object (unless dry run).
fn store(app: &App, res: &Resource, ns: &str, ready: Ready, ctx: &WriteCtx) -> ApiResult<Written> {
    let Ready {
        mut obj,
        warnings,
        client_rv,
    } = ready;
    if !client_rv.is_empty() {
        super::restore_allocation(app, res, &obj, ctx.opts.dry_run);
        return Err(ApiError::internal_no_reason(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    meta::remove_meta(&mut obj, "resourceVersion");
    let name = meta::name(&obj).to_string();
    if ctx.opts.dry_run {
        if app.store.get(&res.store_key, ns, &name).is_some() {
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        return Ok(Written {
            code: 201,
            body: Arc::new(obj),
            warnings,
        });
    }
    let refused = super::is_service(res).then(|| obj.clone());
    if let Err(e) = super::storage_limit::check(res, ns, &name, &obj) {
        super::restore_allocation(app, res, &obj, false);
        return Err(e);
    }
    // A generated name that happens to be taken is drawn again, as
    // kube-apiserver retries generateName conflicts.
    let generated = generated_prefix(&obj);
    let mut name = name;
    let stored = res.to_storage(obj);
    let result = match generated {
        None => app.store.create(&res.store_key, ns, &name, stored),
        Some(prefix) => {
            let mut result = app.store.create(&res.store_key, ns, &name, stored.clone());
            for _ in 0..8 {
                if !matches!(result, Err(WriteError::AlreadyExists)) {
                    break;
                }
                name = generate_name(&prefix);
                let mut again = stored.clone();
                meta::set_meta(&mut again, "name", Value::String(name.clone()));
                result = app.store.create(&res.store_key, ns, &name, again);
            }
            result
        }
    };
    match result {
        Ok(stored) => Ok(Written {
            code: 201,
            body: res.from_storage(&stored),
            warnings,
        }),
        Err(e) => {
            if let Some(svc) = &refused {
                // Give back what was allocated for the refused Service.
                super::restore_allocation(app, res, svc, false);
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

/// The generateName prefix when the name was generated from it.
fn generated_prefix(obj: &Value) -> Option<String> {
    let m = meta::metadata(obj)?;
    let prefix = m.get("generateName").and_then(Value::as_str)?;
    let name = m.get("name").and_then(Value::as_str)?;
    let kept = name.get(..name.len().checked_sub(5)?)?;
    (!prefix.is_empty() && kept == super::generated_name_base(prefix)).then(|| prefix.to_string())
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
        m.insert("name".into(), Value::String(generate_name(&prefix)));
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
