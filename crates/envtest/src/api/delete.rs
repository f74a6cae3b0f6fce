//! Delete: preconditions, graceful deletion of Pods, finalizers for the
//! propagation policy, the special deletion of Namespaces and CRDs, and
//! deletecollection.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Warnings, Written, admit, not_found, object_details};
use crate::admission::Operation;
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::registry::Resource;
use crate::request::query::{DeleteOptions, Propagation};
use crate::store::{Preconditions, WriteError, parse_rv};
use crate::user::UserInfo;

pub(crate) const ORPHAN: &str = "orphan";
pub(crate) const FOREGROUND: &str = "foregroundDeletion";
pub(crate) const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";
const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

fn is_kind(res: &Resource, group: &str, plural: &str) -> bool {
    res.group == group && res.plural == plural
}

/// Kinds whose DELETE answers with the deleted object rather than a Status
/// (their rows of the kinds table say).
fn returns_deleted_object(res: &Resource) -> bool {
    res.builtin().is_some_and(|k| k.returns_deleted_object)
}

fn success_status(res: &Resource, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": serde_json::to_value(object_details(res, name, uid)).unwrap_or(json!({})),
    })
}

fn precondition_conflict(res: &Resource, name: &str, detail: String) -> ApiError {
    ApiError::conflict("", &res.kind, name, &detail)
}

/// The finalizers an object gets for a propagation policy.
fn finalizers_for(existing: &[String], policy: Option<Propagation>) -> Vec<String> {
    let mut out: Vec<String> = existing.to_vec();
    let mut set = |name: &str, on: bool| {
        let has = out.iter().any(|f| f == name);
        if on && !has {
            out.push(name.to_string());
        } else if !on && has {
            out.retain(|f| f != name);
        }
    };
    match policy {
        Some(Propagation::Orphan) => {
            set(ORPHAN, true);
            set(FOREGROUND, false);
        }
        Some(Propagation::Foreground) => {
            set(FOREGROUND, true);
            set(ORPHAN, false);
        }
        Some(Propagation::Background) => {
            set(ORPHAN, false);
            set(FOREGROUND, false);
        }
        None => {}
    }
    out
}

/// Deletes one object, calling the admission webhooks (with the stored
/// object as `oldObject`) on each attempt, after the preconditions held.
pub(crate) async fn delete(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
    user: &UserInfo,
    warnings: &Warnings,
) -> ApiResult<Written> {
    refuse_immortal(res, name)?;
    let req = admit::Request {
        res,
        namespace: ns,
        name,
        subresource: None,
        operation: Operation::Delete,
        dry_run: opts.dry_run,
        options: admit::Options::Delete(opts),
        user,
    };
    // Retried on a fresh read whenever another write got in first, without
    // limit (kube-apiserver's GuaranteedUpdate); preconditions are checked
    // on each read.
    loop {
        let stored = app
            .store
            .get(&res.store_key, ns, name)
            .ok_or_else(|| not_found(res, name))?;
        let view = res.from_storage(&stored);
        let view = crate::conversion::for_read(app, res, view).await?;
        check_preconditions(res, name, opts, &view)?;
        admit::delete(app, &req, &view, warnings).await?;
        match delete_once(app, res, ns, name, opts, &stored) {
            Err(None) => continue,
            Err(Some(e)) => return Err(e),
            Ok(w) => return w.for_read(app, res).await,
        }
    }
}

/// Deletes one object without admission webhooks: the controllers' own deletes.
pub(crate) fn delete_internal(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Written> {
    refuse_immortal(res, name)?;
    // Retried on a fresh read whenever another write got in first, without
    // limit (kube-apiserver's GuaranteedUpdate); preconditions are checked
    // on each read.
    loop {
        let stored = app
            .store
            .get(&res.store_key, ns, name)
            .ok_or_else(|| not_found(res, name))?;
        match delete_once(app, res, ns, name, opts, &stored) {
            Err(None) => continue,
            Err(Some(e)) => return Err(e),
            Ok(w) => return Ok(w),
        }
    }
}

fn refuse_immortal(res: &Resource, name: &str) -> ApiResult<()> {
    if is_kind(res, "", "namespaces") && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(
            "",
            "namespaces",
            name,
            "this namespace may not be deleted",
        ));
    }
    Ok(())
}

/// The uid and resourceVersion preconditions against the stored object.
fn check_preconditions(
    res: &Resource,
    name: &str,
    opts: &DeleteOptions,
    view: &Value,
) -> ApiResult<()> {
    let uid = meta::uid(view);
    if let Some(pre_uid) = &opts.precondition_uid
        && pre_uid != uid
    {
        return Err(precondition_conflict(
            res,
            name,
            format!(
                "the UID in the precondition ({pre_uid}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ),
        ));
    }
    let current_rv = parse_rv(meta::resource_version(view));
    if let Some(pre_rv) = &opts.precondition_rv
        && parse_rv(pre_rv) != current_rv
    {
        return Err(precondition_conflict(
            res,
            name,
            format!(
                "the ResourceVersion in the precondition ({pre_rv}) does not match the ResourceVersion in record ({current_rv}). The object might have been modified"
            ),
        ));
    }
    Ok(())
}

/// One attempt; `Err(None)` means the object changed underneath: retry.
fn delete_once(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
    stored: &Arc<Value>,
) -> Result<Written, Option<ApiError>> {
    let view = res.from_storage(stored);
    let current_rv = parse_rv(meta::resource_version(&view));
    check_preconditions(res, name, opts, &view).map_err(Some)?;
    let now = meta::now_rfc3339();
    let write = |obj: Value| -> Result<Written, Option<ApiError>> {
        if opts.dry_run {
            return Ok(Written {
                code: 200,
                body: Arc::new(obj),
                warnings: Vec::new(),
            });
        }
        match app
            .store
            .update(&res.store_key, ns, name, current_rv, res.to_storage(obj))
        {
            Ok(s) => Ok(Written {
                code: 200,
                body: res.from_storage(&s),
                warnings: Vec::new(),
            }),
            Err(WriteError::NotFound) => Err(Some(not_found(res, name))),
            Err(_) => Err(None),
        }
    };

    // Namespaces: Terminating until the namespace controller has emptied them.
    if is_kind(res, "", "namespaces") {
        if meta::is_deleting(&view) {
            return Ok(Written {
                code: 200,
                body: view,
                warnings: Vec::new(),
            });
        }
        let mut obj = (*view).clone();
        meta::set_meta(&mut obj, "deletionTimestamp", Value::String(now));
        meta::set_path(&mut obj, &["status", "phase"], json!("Terminating"));
        return write(obj);
    }

    let existing = meta::finalizers(&view);
    let mut finalizers = finalizers_for(&existing, opts.propagation);
    let is_crd = is_kind(res, "apiextensions.k8s.io", "customresourcedefinitions");
    if is_crd && !finalizers.iter().any(|f| f == CRD_CLEANUP) {
        finalizers.push(CRD_CLEANUP.to_string());
    }

    let is_pod = is_kind(res, "", "pods");
    // Negative grace periods count as one second (BeforeDelete).
    let requested_grace = opts.grace_period.map(|g| if g < 0 { 1 } else { g });

    if meta::is_deleting(&view) {
        // A Pod in graceful deletion: a DELETE may only shorten its grace
        // period; one that does not is answered with the Pod as it is.
        let current = meta::metadata(&view)
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if is_pod && current > 0 {
            let Some(shorter) = requested_grace.filter(|g| *g < current) else {
                return Ok(Written {
                    code: 200,
                    body: view,
                    warnings: Vec::new(),
                });
            };
            let mut obj = (*view).clone();
            let deadline = meta::meta_str(&view, "deletionTimestamp").to_string();
            meta::set_meta(
                &mut obj,
                "deletionTimestamp",
                Value::String(shift_seconds(&deadline, shorter - current)),
            );
            meta::set_meta(&mut obj, "deletionGracePeriodSeconds", json!(shorter));
            let written = write(obj)?;
            if shorter > 0 || !meta::finalizers(&written.body).is_empty() || opts.dry_run {
                return Ok(written);
            }
            return remove_now(app, res, ns, name, opts, &written.body);
        }
        if finalizers == existing {
            return Ok(Written {
                code: 200,
                body: view,
                warnings: Vec::new(),
            });
        }
        let mut obj = (*view).clone();
        meta::set_finalizers(&mut obj, &finalizers);
        return write(obj);
    }

    // Pods are deleted gracefully (CheckGracefulDelete): the grace period
    // asked for, else the Pod's terminationGracePeriodSeconds; without a
    // node nothing would ever finish it, so unscheduled Pods (and finished
    // ones) go at once, as on a real server.
    let grace = if is_pod {
        let scheduled = meta::get_path(&view, &["spec", "nodeName"])
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let finished = matches!(
            meta::get_path(&view, &["status", "phase"]).and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        );
        if scheduled && !finished {
            requested_grace.unwrap_or_else(|| {
                meta::get_path(&view, &["spec", "terminationGracePeriodSeconds"])
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            })
        } else {
            0
        }
    } else {
        0
    };

    if !finalizers.is_empty() || grace > 0 {
        let mut obj = (*view).clone();
        // A graceful deletion's timestamp is when the grace period ends.
        let deadline = if grace > 0 {
            shift_seconds(&now, grace)
        } else {
            now
        };
        meta::set_meta(&mut obj, "deletionTimestamp", Value::String(deadline));
        // CRDs are marked for deletion without a grace period.
        if !is_crd {
            meta::set_meta(&mut obj, "deletionGracePeriodSeconds", json!(grace));
        }
        // The generic graceful path bumps generation; CRD deletion does not.
        let generation = meta::generation(&obj);
        if generation > 0 && !is_crd {
            meta::set_meta(&mut obj, "generation", json!(generation + 1));
        }
        meta::set_finalizers(&mut obj, &finalizers);
        if is_crd {
            mark_crd_terminating(&mut obj);
        }
        return write(obj);
    }

    // Immediate deletion.
    let mut shown = (*view).clone();
    if is_pod {
        meta::set_meta(&mut shown, "deletionTimestamp", Value::String(now));
        meta::set_meta(&mut shown, "deletionGracePeriodSeconds", json!(0));
        if !opts.dry_run {
            match app.store.update(
                &res.store_key,
                ns,
                name,
                current_rv,
                res.to_storage(shown.clone()),
            ) {
                Ok(s) => shown = Arc::unwrap_or_clone(res.from_storage(&s)),
                Err(WriteError::NotFound) => return Err(Some(not_found(res, name))),
                Err(_) => return Err(None),
            }
        }
    }
    remove_now(app, res, ns, name, opts, &shown)
}

/// Removes the object `shown` (as last written) from storage and answers
/// as kube-apiserver does: with the object for some kinds, else a Status.
fn remove_now(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
    shown: &Value,
) -> Result<Written, Option<ApiError>> {
    if !opts.dry_run {
        let pre = Preconditions {
            resource_version: Some(parse_rv(meta::resource_version(shown))),
            uid: None,
        };
        match app.store.delete(&res.store_key, ns, name, &pre) {
            Ok(_) => {}
            Err(WriteError::NotFound) => return Err(Some(not_found(res, name))),
            Err(_) => return Err(None),
        }
        if is_kind(res, "", "services") {
            app.allocator
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .release_service(shown);
        }
    }
    let body = if returns_deleted_object(res) {
        shown.clone()
    } else {
        success_status(res, name, meta::uid(shown))
    };
    Ok(Written {
        code: 200,
        body: Arc::new(body),
        warnings: Vec::new(),
    })
}

/// An RFC 3339 time moved by `seconds`.
fn shift_seconds(time: &str, seconds: i64) -> String {
    match time.parse::<jiff::Timestamp>() {
        Ok(t) => t
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(t)
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
        Err(_) => time.to_string(),
    }
}

/// Adds the CRD `Terminating` condition set when deletion starts.
fn mark_crd_terminating(crd: &mut Value) {
    let cond = json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": meta::now_rfc3339(),
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    });
    if !crd.get("status").is_some_and(Value::is_object) {
        crd["status"] = json!({});
    }
    match crd["status"].get_mut("conditions") {
        Some(Value::Array(list)) => {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("Terminating"));
            list.push(cond);
        }
        _ => crd["status"]["conditions"] = json!([cond]),
    }
}

/// DELETE on a collection: deletes every selected object, returns them as a list.
pub(crate) async fn delete_collection(
    app: &App,
    res: &Resource,
    ns: Option<&str>,
    listed: super::read::Page,
    opts: &DeleteOptions,
    user: &UserInfo,
    warnings: &Warnings,
) -> ApiResult<Value> {
    for obj in &listed.items {
        let name = meta::name(obj).to_string();
        let obj_ns = ns.unwrap_or(meta::namespace(obj)).to_string();
        match delete(app, res, &obj_ns, &name, opts, user, warnings).await {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    // kube-apiserver answers with the list it deleted from, as listed.
    Ok(super::read::list_document(res, &listed))
}
