//! The ResourceQuota admission plugin (on by default in kube-apiserver
//! v1.32), for creates, and for the updates its evaluators handle (a
//! Service's type, a claim's storage request: what grows is charged): the namespace's quotas whose `status.hard` names
//! something the new object uses must know their usage ("status unknown"
//! otherwise), must have room for it ("exceeded quota"), and are charged
//! with it in `status.used`, written as `kube-apiserver` (not for dry runs).
//!
//! As on a cluster, only `status.hard` counts (the resourcequota controller,
//! `controllers/resource_quota.rs`, copies `spec.hard` there) and only that
//! controller lowers `status.used` when objects go. It evaluates usage with
//! the functions here.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::WriteCtx;
use super::update_steps::{Change, Fail, update_once};
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::quantity::{self, Quantity};
use crate::registry::Resource;
use crate::store::ResKey;

const QUOTAS: &str = "resourcequotas";
const RETRIES: usize = 10;

/// Resource names to quantities, sorted as Go prints them.
pub(crate) type Usage = BTreeMap<String, Quantity>;

/// Core resources whose object count also has a name without `count/`.
const LEGACY_COUNTS: [&str; 7] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
    "persistentvolumeclaims",
];

/// Checks the namespace's quotas for a new object and charges them.
pub(crate) fn admit_create(
    app: &App,
    res: &Resource,
    ns: &str,
    obj: &Value,
    dry_run: bool,
) -> ApiResult<()> {
    admit(app, res, ns, obj, usage_of(res, obj), dry_run)
}

/// Checks and charges what an update of a Service or a claim adds to the
/// quotas' usage (kube-apiserver v1.32's evaluators handle updates of those
/// two only; Pods' only with the alpha in-place resize).
pub(crate) fn admit_update(
    app: &App,
    res: &Resource,
    ns: &str,
    obj: &Value,
    old: &Value,
    dry_run: bool,
) -> ApiResult<()> {
    if !res.group.is_empty()
        || !matches!(res.plural.as_str(), "services" | "persistentvolumeclaims")
    {
        return Ok(());
    }
    let before = usage_of(res, old);
    let delta: Usage = usage_of(res, obj)
        .into_iter()
        .map(|(r, q)| {
            let grown = match before.get(&r) {
                Some(b) => q.sub_non_negative(b),
                None => q,
            };
            (r, grown)
        })
        .collect();
    admit(app, res, ns, obj, delta, dry_run)
}

/// Checks `usage` (of `obj`) against the namespace's quotas and charges it.
fn admit(
    app: &App,
    res: &Resource,
    ns: &str,
    obj: &Value,
    usage: Usage,
    dry_run: bool,
) -> ApiResult<()> {
    // Nothing used (an update that grows nothing): no quota is consulted.
    if !res.namespaced || ns.is_empty() || usage.values().all(|q| q.nanos() == 0) {
        return Ok(());
    }
    let Some(quotas_res) = app.registry.load().get("", "v1", QUOTAS) else {
        return Ok(());
    };
    let key: ResKey = Arc::from(QUOTAS);
    let name = match meta::name(obj) {
        "" => meta::meta_str(obj, "generateName"),
        named => named,
    };
    let forbidden = |message: String| ApiError::forbidden(&res.group, &res.plural, name, &message);
    for _ in 0..RETRIES {
        let (stored, _) = app.store.list(&key, Some(ns), None);
        let mut charged = Vec::new();
        for (_, quota) in &stored {
            let hard = quantities(quota.pointer("/status/hard"));
            let restricted: Vec<&String> = hard.keys().filter(|r| evaluates(res, r)).collect();
            if restricted.is_empty() || !scopes_match(quota, res, obj) {
                continue;
            }
            let quota_name = meta::name(quota);
            if let Some(missing) = missing_requests(res, obj, &restricted) {
                return Err(forbidden(format!("failed quota: {quota_name}: {missing}")));
            }
            let used = quantities(quota.pointer("/status/used"));
            if restricted.iter().any(|r| !used.contains_key(*r)) {
                let names: Vec<&str> = restricted.iter().map(|r| r.as_str()).collect();
                return Err(forbidden(format!(
                    "status unknown for quota: {quota_name}, resources: {}",
                    names.join(",")
                )));
            }
            let requested: Usage = usage
                .iter()
                .filter(|(r, _)| hard.contains_key(*r))
                .map(|(r, q)| (r.clone(), q.clone()))
                .collect();
            if requested.values().all(|q| q.nanos() == 0) {
                continue;
            }
            let mut new_used = used.clone();
            for (r, q) in &requested {
                let sum = new_used.get(r).map_or_else(|| q.clone(), |u| u.add(q));
                new_used.insert(r.clone(), sum);
            }
            let exceeded: Vec<&String> = requested
                .keys()
                .filter(|r| new_used[*r].nanos() > hard[*r].nanos())
                .collect();
            if !exceeded.is_empty() {
                let show = |from: &Usage| {
                    exceeded
                        .iter()
                        .filter_map(|r| from.get(*r).map(|q| format!("{r}={}", q.canonical())))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                return Err(forbidden(format!(
                    "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                    show(&requested),
                    show(&used),
                    show(&hard)
                )));
            }
            charged.push((quota.clone(), new_used));
        }
        if dry_run || charged.is_empty() {
            return Ok(());
        }
        match charge(app, &quotas_res, ns, &charged) {
            Ok(()) => return Ok(()),
            Err(Fail::Retry) => continue,
            Err(Fail::Api(e)) if e.code == 409 => continue,
            Err(Fail::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::internal(format!(
        "the quotas of namespace {ns} kept changing while they were charged"
    )))
}

/// Writes the new usage of every charged quota (as `kube-apiserver`, on
/// `/status`); a quota changed meanwhile makes the caller evaluate again.
fn charge(
    app: &App,
    res: &Resource,
    ns: &str,
    charged: &[(Arc<Value>, Usage)],
) -> Result<(), Fail> {
    let ctx = WriteCtx::internal(super::APISERVER);
    for (stored, used) in charged {
        let name = meta::name(stored);
        let mut new = (**stored).clone();
        let mut used_doc = new
            .pointer("/status/used")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (r, q) in used {
            used_doc.insert(r.clone(), Value::String(q.canonical()));
        }
        meta::set_path(&mut new, &["status", "used"], Value::Object(used_doc));
        let change = Change {
            res,
            ns,
            name,
            sub: Some("status"),
            ctx: &ctx,
            is_put: true,
            managed_done: false,
        };
        update_once(app, &change, new, &[], stored)?;
    }
    Ok(())
}

pub(crate) fn quantities(value: Option<&Value>) -> Usage {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| quantity::from_json(v).map(|q| (k.clone(), q)))
                .collect()
        })
        .unwrap_or_default()
}

fn is_pods(res: &Resource) -> bool {
    res.group.is_empty() && res.plural == "pods"
}

/// The object-count names of the resource: `count/<plural>[.<group>]`, and
/// the bare plural for the core kinds that had it first.
fn count_names(res: &Resource) -> Vec<String> {
    let mut names = vec![if res.group.is_empty() {
        format!("count/{}", res.plural)
    } else {
        format!("count/{}.{}", res.plural, res.group)
    }];
    if res.group.is_empty() && LEGACY_COUNTS.contains(&res.plural.as_str()) {
        names.push(res.plural.clone());
    }
    names
}

/// Whether the resource's evaluator covers the quota resource `name`.
pub(crate) fn evaluates(res: &Resource, name: &str) -> bool {
    if count_names(res).iter().any(|n| n == name) {
        return true;
    }
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => {
            matches!(name, "cpu" | "memory" | "ephemeral-storage")
                || name.starts_with("requests.")
                || name.starts_with("limits.")
        }
        ("", "services") => matches!(name, "services.nodeports" | "services.loadbalancers"),
        ("", "persistentvolumeclaims") => {
            name == "requests.storage"
                || name.ends_with(".storageclass.storage.k8s.io/requests.storage")
                || name.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
        }
        _ => false,
    }
}

/// What the new object uses.
pub(crate) fn usage_of(res: &Resource, obj: &Value) -> Usage {
    let mut usage = Usage::new();
    let counted = !is_pods(res) || !pod_is_terminal(obj);
    if counted {
        for name in count_names(res) {
            usage.insert(name, Quantity::count(1));
        }
    }
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") if counted => pod_resources(obj, &mut usage),
        ("", "services") => {
            let kind = obj
                .pointer("/spec/type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let ports = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let node_ports = match kind {
                "NodePort" | "LoadBalancer" => ports,
                _ => 0,
            };
            usage.insert(
                "services.nodeports".into(),
                Quantity::count(node_ports as i64),
            );
            let balancers = i64::from(kind == "LoadBalancer");
            usage.insert("services.loadbalancers".into(), Quantity::count(balancers));
        }
        ("", "persistentvolumeclaims") => {
            let class = obj
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !class.is_empty() {
                usage.insert(
                    format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"),
                    Quantity::count(1),
                );
            }
            if let Some(storage) = obj
                .pointer("/spec/resources/requests/storage")
                .and_then(quantity::from_json)
            {
                if !class.is_empty() {
                    usage.insert(
                        format!("{class}.storageclass.storage.k8s.io/requests.storage"),
                        storage.clone(),
                    );
                }
                usage.insert("requests.storage".into(), storage);
            }
        }
        _ => {}
    }
    usage
}

fn pod_is_terminal(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A container's requests or limits by resource name.
fn resources_of(container: &Value, which: &str) -> Usage {
    quantities(container.pointer(&format!("/resources/{which}")))
}

/// The Pod's requests and limits: the containers' sum, or an init
/// container's own if larger, plus the Pod's overhead.
fn pod_resources(pod: &Value, usage: &mut Usage) {
    for (which, prefix) in [("requests", "requests."), ("limits", "limits.")] {
        let mut total = Usage::new();
        for c in containers(pod, "containers") {
            for (r, q) in resources_of(c, which) {
                let sum = total.get(&r).map_or_else(|| q.clone(), |t| t.add(&q));
                total.insert(r, sum);
            }
        }
        for c in containers(pod, "initContainers") {
            for (r, q) in resources_of(c, which) {
                if total.get(&r).is_none_or(|t| t.nanos() < q.nanos()) {
                    total.insert(r, q);
                }
            }
        }
        for (r, q) in quantities(pod.pointer("/spec/overhead")) {
            let sum = total.get(&r).map_or_else(|| q.clone(), |t| t.add(&q));
            total.insert(r, sum);
        }
        for (r, q) in total {
            if which == "requests" && matches!(r.as_str(), "cpu" | "memory" | "ephemeral-storage") {
                usage.insert(r.clone(), q.clone());
            }
            usage.insert(format!("{prefix}{r}"), q);
        }
    }
}

/// The pod evaluator's old rule: a quota on cpu or memory requires every
/// container to state it (`must specify cpu for: c; memory for: c`).
fn missing_requests(res: &Resource, obj: &Value, restricted: &[&String]) -> Option<String> {
    if !is_pods(res) {
        return None;
    }
    let mut missing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for name in restricted {
        let (which, resource) = match name.as_str() {
            "cpu" | "requests.cpu" => ("requests", "cpu"),
            "memory" | "requests.memory" => ("requests", "memory"),
            "limits.cpu" => ("limits", "cpu"),
            "limits.memory" => ("limits", "memory"),
            _ => continue,
        };
        for c in containers(obj, "containers").chain(containers(obj, "initContainers")) {
            if !resources_of(c, which).contains_key(resource) {
                let entry = missing.entry(name.as_str()).or_default();
                let container = c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if !entry.contains(&container) {
                    entry.push(container);
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(r, mut names)| {
            names.sort();
            format!("{r} for: {}", names.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// Whether the quota's scopes select the object: only Pods have scopes; a
/// quota with any scope leaves every other kind alone.
pub(crate) fn scopes_match(quota: &Value, res: &Resource, obj: &Value) -> bool {
    let mut scopes: Vec<(String, String, Vec<String>)> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s.to_string(), "Exists".to_string(), Vec::new()))
        .collect();
    for expr in quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |k: &str| {
            expr.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let values = expr
            .get("values")
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        scopes.push((field("scopeName"), field("operator"), values));
    }
    if scopes.is_empty() {
        return true;
    }
    if !is_pods(res) {
        return false;
    }
    scopes
        .iter()
        .all(|(scope, op, values)| pod_scope(obj, scope, op, values))
}

fn pod_scope(pod: &Value, scope: &str, op: &str, values: &[String]) -> bool {
    let terminating = pod
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|d| d.as_i64().is_some_and(|d| d >= 0));
    let best_effort = containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .all(|c| resources_of(c, "requests").is_empty() && resources_of(c, "limits").is_empty());
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => {
            let class = pod
                .pointer("/spec/priorityClassName")
                .and_then(Value::as_str);
            match op {
                "Exists" => class.is_some_and(|c| !c.is_empty()),
                "DoesNotExist" => class.is_none_or(str::is_empty),
                "In" => class.is_some_and(|c| values.iter().any(|v| v == c)),
                "NotIn" => class.is_none_or(|c| !values.iter().any(|v| v == c)),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        _ => false,
    }
}

/// Whether a pod (anti-)affinity term reaches beyond its namespace.
fn cross_namespace_affinity(pod: &Value) -> bool {
    let Some(affinity) = pod.pointer("/spec/affinity").and_then(Value::as_object) else {
        return false;
    };
    let terms = |kind: &str| -> Vec<Map<String, Value>> {
        let Some(a) = affinity.get(kind) else {
            return Vec::new();
        };
        let required = a
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .cloned();
        let preferred = a
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("podAffinityTerm").and_then(Value::as_object))
            .cloned();
        required.chain(preferred).collect()
    };
    terms("podAffinity")
        .into_iter()
        .chain(terms("podAntiAffinity"))
        .any(|t| {
            t.get("namespaces")
                .and_then(Value::as_array)
                .is_some_and(|n| !n.is_empty())
                || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
        })
}
