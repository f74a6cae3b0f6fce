//! The eviction decision of kube-apiserver v1.32 (`EvictionREST.Create`): a
//! Pod that is Pending, finished or being deleted is deleted at once; any
//! other Pod only when the one PodDisruptionBudget selecting it allows a
//! disruption, which the eviction then takes from the budget's status
//! (`disruptionsAllowed` decremented, the Pod recorded in `disruptedPods`).
//! The budget's status is the disruption controller's
//! (`controllers::disruption`); one it has not caught up with refuses with
//! 429, as on a real cluster.

use std::sync::Arc;

use serde_json::{Value, json};

use super::APISERVER;
use super::pod_object::{check_preconditions, set_pod_condition};
use super::update_steps::{Change, Fail, update_once};
use super::{WriteCtx, Written, not_found};
use crate::app::App;
use crate::error::{ApiError, ApiResult, Cause, Details};
use crate::meta;
use crate::registry::Resource;
use crate::request::query::DeleteOptions;
use crate::selectors::LabelSelector;
use crate::store::{ResKey, WriteError, parse_rv};

pub(crate) const PDB_KEY: &str = "policy/poddisruptionbudgets";
/// More unconfirmed evictions than this refuse further ones.
const MAX_DISRUPTED_PODS: usize = 2000;
const RETRIES: usize = 20;

fn phase(pod: &Value) -> &str {
    meta::get_path(pod, &["status", "phase"])
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Pods whose eviction disrupts nothing: not running yet, finished, or
/// already going.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || meta::is_deleting(pod)
}

/// `IsPodReady`: the Ready condition is True.
pub(crate) fn is_ready(pod: &Value) -> bool {
    meta::get_path(pod, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

pub(crate) fn int_at(value: &Value, path: &[&str]) -> i64 {
    meta::get_path(value, path)
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The budgets of the Pod's namespace whose selector matches its labels (a
/// budget without a selector selects nothing).
pub(crate) fn budgets_for(app: &App, pod: &Value) -> Vec<Arc<Value>> {
    let key: ResKey = Arc::from(PDB_KEY);
    let (budgets, _) = app.store.list(&key, Some(meta::namespace(pod)), None);
    budgets
        .into_iter()
        .map(|(_, pdb)| pdb)
        .filter(|pdb| {
            let selector = pdb.pointer("/spec/selector").filter(|s| !s.is_null());
            selector.is_some_and(|s| {
                LabelSelector::from_object(Some(s)).is_ok_and(|sel| sel.matches_object(pod))
            })
        })
        .collect()
}

/// 429 TooManyRequests with a DisruptionBudget cause.
fn too_many_requests(retry_after: u32, cause: String) -> ApiError {
    let message = "Cannot evict pod as it would violate the pod's disruption budget.";
    let mut err = ApiError::new(429, "TooManyRequests", message);
    err.details = Some(Box::new(Details {
        causes: vec![Cause::new("DisruptionBudget", "", cause)],
        retry_after_seconds: (retry_after > 0).then_some(retry_after),
        ..Details::default()
    }));
    err
}

fn still_processing(pdb_name: &str) -> ApiError {
    too_many_requests(
        10,
        format!("The disruption budget {pdb_name} is still being processed by the server."),
    )
}

/// Evicts Pod `name` with `options` (see the module documentation).
pub(crate) async fn evict(
    app: &App,
    pods: &Resource,
    ns: &str,
    name: &str,
    options: DeleteOptions,
) -> ApiResult<Written> {
    let stored = app
        .store
        .get(&pods.store_key, ns, name)
        .ok_or_else(|| super::not_found(pods, name))?;
    let pod = pods.from_storage(&stored);
    if can_ignore_budget(&pod) {
        let mut opts = options.clone();
        let terminal = matches!(phase(&pod), "Succeeded" | "Failed") || meta::is_deleting(&pod);
        if !terminal && opts.precondition_rv.is_none() {
            opts.precondition_rv = Some(meta::resource_version(&pod).to_string());
        }
        delete_evicted(app, pods, ns, name, &opts)?;
        return Ok(Written::created_status());
    }
    let budgets = budgets_for(app, &pod);
    if budgets.len() > 1 {
        return Ok(Written {
            code: 500,
            body: Arc::new(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                "code": 500
            })),
            warnings: Vec::new(),
        });
    }
    let mut unhealthy_allowed = false;
    if let Some(pdb) = budgets.first() {
        if !is_ready(&pod) {
            let policy = meta::get_path(pdb, &["spec", "unhealthyPodEvictionPolicy"])
                .and_then(Value::as_str);
            let (current, desired) = (
                int_at(pdb, &["status", "currentHealthy"]),
                int_at(pdb, &["status", "desiredHealthy"]),
            );
            // An unready Pod does not count as healthy: deleting it
            // disrupts nothing the budget guards.
            unhealthy_allowed =
                policy == Some("AlwaysAllow") || (current >= desired && desired > 0);
        }
        if !unhealthy_allowed {
            take_disruption(app, ns, meta::name(pdb), name, options.dry_run)?;
        }
    }
    let mut opts = options.clone();
    if unhealthy_allowed {
        opts.precondition_rv = Some(meta::resource_version(&pod).to_string());
    }
    match delete_evicted(app, pods, ns, name, &opts) {
        Err(e) if e.code == 409 && unhealthy_allowed && options.precondition_rv.is_none() => {
            let pdb_name = budgets.first().map(|p| meta::name(p).to_string());
            Err(still_processing(pdb_name.as_deref().unwrap_or("")))
        }
        Err(e) => Err(e),
        Ok(()) => Ok(Written::created_status()),
    }
}

/// `checkAndDecrement`: takes one allowed disruption from budget `pdb_name`
/// for Pod `pod_name` (status written as `kube-apiserver`, unless dry run).
fn take_disruption(
    app: &App,
    ns: &str,
    pdb_name: &str,
    pod_name: &str,
    dry_run: bool,
) -> ApiResult<()> {
    let Some(res) = app.registry.load().by_store_key(PDB_KEY) else {
        return Ok(());
    };
    let key: ResKey = Arc::from(PDB_KEY);
    let forbidden =
        |detail: &str| ApiError::forbidden("policy", "poddisruptionbudget", pdb_name, detail);
    for _ in 0..RETRIES {
        let Some(stored) = app.store.get(&key, ns, pdb_name) else {
            return Err(ApiError::not_found(
                "policy",
                "poddisruptionbudgets",
                pdb_name,
            ));
        };
        let pdb = res.from_storage(&stored);
        if int_at(&pdb, &["status", "observedGeneration"]) < meta::generation(&pdb) {
            return Err(still_processing(pdb_name));
        }
        let allowed = int_at(&pdb, &["status", "disruptionsAllowed"]);
        if allowed < 0 {
            return Err(forbidden("pdb disruptions allowed is negative"));
        }
        let disrupted = meta::get_path(&pdb, &["status", "disruptedPods"])
            .and_then(Value::as_object)
            .map_or(0, |m| m.len());
        if disrupted > MAX_DISRUPTED_PODS {
            return Err(forbidden(
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            ));
        }
        if allowed == 0 {
            return Err(too_many_requests(
                0,
                format!(
                    "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                    int_at(&pdb, &["status", "desiredHealthy"]),
                    int_at(&pdb, &["status", "currentHealthy"])
                ),
            ));
        }
        if dry_run {
            return Ok(());
        }
        let mut new = (*pdb).clone();
        meta::set_path(
            &mut new,
            &["status", "disruptionsAllowed"],
            json!(allowed - 1),
        );
        if allowed - 1 == 0 {
            set_allowed_condition(&mut new);
        }
        meta::set_path(
            &mut new,
            &["status", "disruptedPods", pod_name],
            json!(meta::now_rfc3339()),
        );
        let ctx = WriteCtx::internal(APISERVER);
        let change = Change {
            res: &res,
            ns,
            name: pdb_name,
            sub: Some("status"),
            ctx: &ctx,
            is_put: true,
            managed_done: false,
        };
        match update_once(app, &change, new, &[], &stored) {
            Ok(_) => return Ok(()),
            Err(Fail::Retry) => continue,
            Err(Fail::Api(e)) if e.code == 409 => continue,
            Err(Fail::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::timeout(format!(
        "couldn't update PodDisruptionBudget {pdb_name:?} due to conflicts"
    )))
}

/// Deletes an evicted Pod: its DisruptionTarget condition first, then the
/// Pod with the eviction's options (no admission webhooks run for it).
pub(crate) fn delete_evicted(
    app: &App,
    pods: &Resource,
    ns: &str,
    name: &str,
    options: &DeleteOptions,
) -> ApiResult<()> {
    if !options.dry_run
        && let Some(stored) = app.store.get(&pods.store_key, ns, name)
    {
        let mut pod = (*pods.from_storage(&stored)).clone();
        check_preconditions(
            pods,
            name,
            &pod,
            options.precondition_uid.as_deref().unwrap_or(""),
            options.precondition_rv.as_deref().unwrap_or(""),
        )?;
        set_pod_condition(
            &mut pod,
            json!({"type": "DisruptionTarget", "status": "True",
                "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}),
        );
        let rv = parse_rv(meta::resource_version(&pod));
        if let Err(e) = app
            .store
            .update(&pods.store_key, ns, name, rv, pods.to_storage(pod))
        {
            return Err(match e {
                WriteError::NotFound => not_found(pods, name),
                _ => super::conflict(pods, name),
            });
        }
    }
    let mut options = options.clone();
    // The condition write moved the resourceVersion a precondition names.
    if options.precondition_rv.is_some()
        && let Some(stored) = app.store.get(&pods.store_key, ns, name)
    {
        options.precondition_rv = Some(meta::resource_version(&stored).to_string());
    }
    super::delete::delete_internal(app, pods, ns, name, &options).map(|_| ())
}

/// The DisruptionAllowed condition `status.disruptionsAllowed` calls for.
pub(crate) fn expected_condition(pdb: &Value) -> (&'static str, &'static str) {
    if int_at(pdb, &["status", "disruptionsAllowed"]) > 0 {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    }
}

/// `UpdateDisruptionAllowedCondition`: the DisruptionAllowed condition from
/// `status.disruptionsAllowed`.
pub(crate) fn set_allowed_condition(pdb: &mut Value) {
    let (status, reason) = expected_condition(pdb);
    set_condition(pdb, status, reason, "");
}

/// `meta.SetStatusCondition` of the DisruptionAllowed condition.
pub(crate) fn set_condition(pdb: &mut Value, status: &str, reason: &str, message: &str) {
    let generation = int_at(pdb, &["status", "observedGeneration"]);
    let now = meta::now_rfc3339();
    let conditions = &mut pdb["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let fresh = json!({
        "type": "DisruptionAllowed", "status": status, "observedGeneration": generation,
        "lastTransitionTime": now, "reason": reason, "message": message,
    });
    match list.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
        Some(existing) => {
            let mut updated = fresh;
            if existing["status"] == status {
                updated["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = updated;
        }
        None => list.push(fresh),
    }
}
