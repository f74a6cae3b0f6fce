//! The simulation's reads and writes. Reads come straight from the store
//! (always current, so no expectations are needed between a write and its
//! watch event); writes go through the same API steps as a client's:
//! defaults, admission (webhooks included), validation, watches.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::WriteCtx;
use crate::api::create::{Input, create};
use crate::api::update::{Attempt, with_retries_admitted};
use crate::api::update_steps::{Change, Fail};
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::registry::Resource;

pub(crate) const PODS: &str = "pods";
pub(crate) const NODES: &str = "nodes";
pub(crate) const LEASES: &str = "coordination.k8s.io/leases";
pub(crate) const NAMESPACES: &str = "namespaces";
pub(crate) const REPLICASETS: &str = "apps/replicasets";
pub(crate) const REPLICATIONCONTROLLERS: &str = "replicationcontrollers";
pub(crate) const DEPLOYMENTS: &str = "apps/deployments";
pub(crate) const JOBS: &str = "batch/jobs";
pub(crate) const SERVICES: &str = "services";
pub(crate) const ENDPOINTS: &str = "endpoints";
pub(crate) const ENDPOINTSLICES: &str = "discovery.k8s.io/endpointslices";
pub(crate) const PERSISTENTVOLUMECLAIMS: &str = "persistentvolumeclaims";
pub(crate) const PERSISTENTVOLUMES: &str = "persistentvolumes";
pub(crate) const STORAGECLASSES: &str = "storage.k8s.io/storageclasses";
pub(crate) const STATEFULSETS: &str = "apps/statefulsets";
pub(crate) const DAEMONSETS: &str = "apps/daemonsets";
pub(crate) const CRONJOBS: &str = "batch/cronjobs";
pub(crate) const CONTROLLERREVISIONS: &str = "apps/controllerrevisions";

/// Who writes: the manager name kube-apiserver records for the real component.
pub(crate) const KUBELET: &str = "kubelet";

/// The event sources of kube-controller-manager's controllers (their
/// recorders' `source.component`, which is also `reportingComponent`).
pub(crate) const DEPLOYMENT_CONTROLLER: &str = "deployment-controller";
pub(crate) const JOB_CONTROLLER: &str = "job-controller";
pub(crate) const CRONJOB_CONTROLLER: &str = "cronjob-controller";
pub(crate) const STATEFULSET_CONTROLLER: &str = "statefulset-controller";
pub(crate) const PERSISTENTVOLUME_CONTROLLER: &str = "persistentvolume-controller";

/// The event source of the controller that makes Pods for a `kind`.
pub(crate) fn pod_controller_source(kind: &str) -> &'static str {
    match kind {
        "ReplicaSet" => "replicaset-controller",
        "ReplicationController" => "replication-controller",
        "Job" => JOB_CONTROLLER,
        "DaemonSet" => "daemonset-controller",
        "StatefulSet" => STATEFULSET_CONTROLLER,
        _ => CONTROLLER_MANAGER,
    }
}
pub(crate) const SCHEDULER: &str = "default-scheduler";
pub(crate) use crate::api::CONTROLLER_MANAGER;

/// The served resource for a storage key (`apps/deployments`).
fn resource_for(app: &App, key: &str) -> Option<Arc<Resource>> {
    app.registry.load().by_store_key(key)
}

pub(crate) fn resource(app: &App, key: &str) -> ApiResult<Arc<Resource>> {
    resource_for(app, key).ok_or_else(|| ApiError::internal(format!("{key} is not served")))
}

/// The stored object in its served form.
pub(crate) fn get(app: &App, key: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
    let res = resource_for(app, key)?;
    let stored = app.store.get(&res.store_key, ns, name)?;
    Some(res.from_storage(&stored))
}

/// Every object of `key` (in `ns` when given).
pub(crate) fn list(app: &App, key: &str, ns: Option<&str>) -> Vec<Arc<Value>> {
    let Some(res) = resource_for(app, key) else {
        return Vec::new();
    };
    let (items, _) = app.store.list(&res.store_key, ns, None);
    items
        .into_iter()
        .map(|(_, o)| res.from_storage(&o))
        .collect()
}

/// Creates an object as `manager`, calling the admission webhooks.
pub(crate) async fn create_object(
    app: &App,
    key: &str,
    ns: &str,
    obj: Value,
    manager: &str,
) -> ApiResult<Arc<Value>> {
    let res = resource(app, key)?;
    let written = create(
        app,
        &res,
        ns,
        Input::Body {
            obj,
            duplicates: Vec::new(),
        },
        &WriteCtx::internal(manager),
    )
    .await?;
    Ok(written.body)
}

/// Writes the status of the object `name` through `/status` as
/// kube-controller-manager does: `edit` changes the status as stored (it
/// also sees the whole object); nothing is written when it leaves the
/// status as it was, so a pass that changes nothing costs no write.
pub(crate) async fn write_status(
    app: &App,
    key: &str,
    ns: &str,
    name: &str,
    edit: impl Fn(&Value, &mut serde_json::Map<String, Value>),
) -> ApiResult<()> {
    modify_with_admission(
        app,
        key,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |obj| {
            let mut status = obj
                .get("status")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let before = status.clone();
            edit(obj, &mut status);
            if status == before {
                return false;
            }
            obj["status"] = Value::Object(status);
            true
        },
    )
    .await
}

/// Rewrites an object (or its `status` when `sub` says so) with `edit`,
/// retrying on races, through the admission chain (plugins, webhooks,
/// policies) as a client's update; `controllers::modify_without_admission`
/// is the same edit without it. `edit` returns
/// false to leave the object alone; a missing object is no error.
pub(crate) async fn modify_with_admission(
    app: &App,
    key: &str,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    manager: &str,
    edit: impl Fn(&mut Value) -> bool,
) -> ApiResult<()> {
    let res = resource(app, key)?;
    let ctx = WriteCtx::internal(manager);
    let change = Change {
        res: &res,
        ns,
        name,
        sub,
        ctx: &ctx,
        is_put: false,
        managed_done: false,
    };
    let result = with_retries_admitted(app, &change, &[], |old| {
        let Some(old) = old else {
            return Err(Fail::Api(ApiError::not_found(
                &res.group,
                &res.plural,
                name,
            )));
        };
        let mut obj = (*res.from_storage(&old)).clone();
        if !edit(&mut obj) {
            return Err(Fail::Api(unchanged()));
        }
        // The edit was made on what was just read: without a resourceVersion
        // a concurrent write makes it read and edit again, not fail.
        meta::remove_meta(&mut obj, "resourceVersion");
        Ok(Attempt::Update { new: obj, old })
    })
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || is_unchanged(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The marker error of an edit that changed nothing (never leaves this module).
fn unchanged() -> ApiError {
    ApiError::internal(UNCHANGED)
}

const UNCHANGED: &str = "opctl-envtest: unchanged";

fn is_unchanged(e: &ApiError) -> bool {
    e.message == UNCHANGED
}

/// Deletes an object as a controller does (background propagation).
pub(crate) fn delete(app: &App, key: &str, ns: &str, name: &str, uid: &str) -> ApiResult<()> {
    delete_with_grace(app, key, ns, name, uid, None)
}

/// Deletes an object at once (grace period 0), as the Pod GC does.
pub(crate) fn force_delete(app: &App, key: &str, ns: &str, name: &str, uid: &str) -> ApiResult<()> {
    delete_with_grace(app, key, ns, name, uid, Some(0))
}

fn delete_with_grace(
    app: &App,
    key: &str,
    ns: &str,
    name: &str,
    uid: &str,
    grace_period: Option<i64>,
) -> ApiResult<()> {
    let res = resource(app, key)?;
    let opts = crate::request::query::DeleteOptions {
        grace_period,
        precondition_uid: Some(uid.to_string()),
        ..Default::default()
    };
    match crate::api::delete::delete_internal(app, &res, ns, name, &opts) {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Records a Normal or Warning Event about `obj` from `component`.
pub(crate) fn event(
    app: &App,
    component: &str,
    obj: &Value,
    kind: &str,
    reason: &str,
    message: &str,
) {
    crate::controllers::event_recorder::record(
        app,
        component,
        crate::controllers::event_recorder::reference(obj),
        kind,
        reason,
        message,
    );
}

/// An owner reference naming `owner` as the controller.
pub(crate) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": owner.get("kind").cloned().unwrap_or(Value::Null),
        "name": meta::name(owner),
        "uid": meta::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The uid of the object's controller, if it has one of `kind`.
pub(crate) fn controller_uid<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    meta::owner_references(obj)
        .into_iter()
        .find(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some(kind)
        })
        .and_then(|r| r.get("uid").and_then(Value::as_str))
}

/// The uid of the object's controller, whatever its kind.
pub(crate) fn controller_uid_any(obj: &Value) -> Option<&str> {
    meta::owner_references(obj)
        .into_iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid").and_then(Value::as_str))
}

/// The name of the object's controller of `kind`.
pub(crate) fn controller_name<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    meta::owner_references(obj)
        .into_iter()
        .find(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some(kind)
        })
        .and_then(|r| r.get("name").and_then(Value::as_str))
}

/// A string at `path`, empty when absent.
pub(crate) fn str_at<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    meta::get_path(obj, path)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// An integer at `path`.
pub(crate) fn int_at(obj: &Value, path: &[&str]) -> Option<i64> {
    meta::get_path(obj, path).and_then(Value::as_i64)
}

/// Sets condition `cond` (with `type`, `status`, and optional `reason`/`message`)
/// in `conditions`, keeping `lastTransitionTime` while the status stays the
/// same. Returns whether anything changed. `probe_times` adds `lastProbeTime: null`
/// as kubelet's Pod conditions carry it; `update_time` sets `lastUpdateTime`
/// as Deployment conditions carry it when anything changes.
pub(crate) fn set_condition(
    conditions: &mut Vec<Value>,
    cond: Value,
    style: ConditionStyle,
) -> bool {
    let kind = cond
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let now = meta::now_rfc3339();
    let same_as = |c: &Value, field: &str| c.get(field) == cond.get(field);
    if let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind.as_str()))
    {
        if same_as(existing, "status")
            && same_as(existing, "reason")
            && same_as(existing, "message")
        {
            return false;
        }
        let transition = if same_as(existing, "status") {
            existing.get("lastTransitionTime").cloned()
        } else {
            None
        };
        *existing = build_condition(cond, &now, transition, style);
        return true;
    }
    conditions.push(build_condition(cond, &now, None, style));
    true
}

/// Which timestamps a kind's conditions carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConditionStyle {
    /// Pod conditions: `lastProbeTime: null`, `lastTransitionTime`.
    Pod,
    /// Deployment conditions: `lastUpdateTime`, `lastTransitionTime`.
    Deployment,
    /// Job conditions: `lastProbeTime`, `lastTransitionTime`.
    Job,
    /// HorizontalPodAutoscaler conditions: `lastTransitionTime` only.
    Autoscaler,
}

fn build_condition(
    cond: Value,
    now: &str,
    transition: Option<Value>,
    style: ConditionStyle,
) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("type".into(), cond["type"].clone());
    out.insert("status".into(), cond["status"].clone());
    match style {
        ConditionStyle::Pod => {
            out.insert("lastProbeTime".into(), Value::Null);
        }
        ConditionStyle::Deployment => {
            out.insert("lastUpdateTime".into(), json!(now));
        }
        ConditionStyle::Job => {
            out.insert("lastProbeTime".into(), json!(now));
        }
        ConditionStyle::Autoscaler => {}
    }
    out.insert(
        "lastTransitionTime".into(),
        transition.unwrap_or_else(|| json!(now)),
    );
    for field in ["reason", "message"] {
        if let Some(v) = cond.get(field).filter(|v| !v.is_null()) {
            out.insert(field.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// The conditions array of `obj`'s status, as an owned list.
pub(crate) fn conditions(obj: &Value) -> Vec<Value> {
    meta::get_path(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The condition of `kind`, if any.
pub(crate) fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    meta::get_path(obj, &["status", "conditions"])
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// Whether condition `kind` has status `True`.
pub(crate) fn condition_true(obj: &Value, kind: &str) -> bool {
    condition(obj, kind)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}
