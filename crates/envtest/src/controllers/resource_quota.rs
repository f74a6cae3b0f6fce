//! kube-controller-manager's resourcequota controller: a quota's
//! `status.hard` mirrors `spec.hard`, and `status.used` counts, for every
//! resource the quota limits that an evaluator covers (object counts, Pods'
//! requests and limits, Services' node ports and load balancers, claims'
//! storage), what the namespace holds now, `"0"` included; a resource no
//! evaluator covers keeps what was there. Written through `/status` as
//! `kube-controller-manager`, only when something differs.
//!
//! As on a cluster it recalculates a quota when the quota is created or its
//! `spec.hard` changes, when an object of a resource it limits is deleted,
//! a Pod stops counting (it finished), a Service changes type or a claim
//! changes (the replenishment controller), and every [`RESYNC`]. Creates are
//! not watched: the ResourceQuota admission plugin charges them
//! (`api/quota_admission.rs`, written as `kube-apiserver`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::quota_admission::{Usage, evaluates, quantities, scopes_match, usage_of};
use crate::app::App;
use crate::meta;
use crate::quantity::Quantity;
use crate::registry::Resource;
use crate::store::{Event, EventType, ResKey};

const QUOTAS: &str = "resourcequotas";

/// kube-controller-manager's `--resource-quota-sync-period`.
pub(super) const RESYNC: Duration = Duration::from_secs(300);

/// What changed since the last pass.
#[derive(Default)]
pub(super) struct Work {
    /// Quotas created or whose `spec.hard` changed.
    quotas: BTreeSet<(String, String)>,
    /// Namespaces and resources whose usage may have dropped.
    replenish: BTreeSet<(String, ResKey)>,
}

impl Work {
    pub(super) fn on_event(&mut self, ev: &Event) {
        if ev.namespace.is_empty() {
            return;
        }
        if &*ev.resource == QUOTAS {
            let hard = |o: &Value| o.pointer("/spec/hard").cloned();
            let changed = match (ev.kind, &ev.prev) {
                (EventType::Added, _) => true,
                (EventType::Modified, Some(prev)) => hard(prev) != hard(&ev.object),
                _ => false,
            };
            if changed {
                self.quotas.insert((ev.namespace.clone(), ev.name.clone()));
            }
            return;
        }
        let replenish = match (ev.kind, &*ev.resource) {
            (EventType::Deleted, _) => true,
            (EventType::Modified, "pods") => ev
                .prev
                .as_ref()
                .is_some_and(|prev| counts_pod(prev) && !counts_pod(&ev.object)),
            (EventType::Modified, "services") => ev
                .prev
                .as_ref()
                .is_some_and(|prev| prev.pointer("/spec/type") != ev.object.pointer("/spec/type")),
            (EventType::Modified, "persistentvolumeclaims") => true,
            _ => false,
        };
        if replenish {
            self.replenish
                .insert((ev.namespace.clone(), ev.resource.clone()));
        }
    }

    /// Every quota, as the periodic resync does.
    pub(super) fn resync_all(&mut self, app: &App) {
        let key: ResKey = Arc::from(QUOTAS);
        for (_, quota) in app.store.list(&key, None, None).0 {
            let at = (
                meta::namespace(&quota).to_string(),
                meta::name(&quota).to_string(),
            );
            self.quotas.insert(at);
        }
    }

    pub(super) fn flush(&mut self, app: &App) {
        let mut due = std::mem::take(&mut self.quotas);
        let key: ResKey = Arc::from(QUOTAS);
        for (ns, changed) in std::mem::take(&mut self.replenish) {
            let Some(res) = resource_for(app, &changed) else {
                continue;
            };
            for (_, quota) in app.store.list(&key, Some(&ns), None).0 {
                let tracks = quantities(quota.pointer("/spec/hard"))
                    .keys()
                    .any(|name| evaluates(&res, name));
                if tracks {
                    due.insert((ns.clone(), meta::name(&quota).to_string()));
                }
            }
        }
        for (ns, name) in due {
            sync(app, &ns, &name);
        }
    }
}

/// Whether a Pod counts against quota (`QuotaV1Pod`): it has not finished,
/// and it is not past the grace period of its deletion.
fn counts_pod(pod: &Value) -> bool {
    if matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deleted_at = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (deleted_at, grace) {
        (Some(at), Some(grace)) => {
            jiff::Timestamp::now() <= at + jiff::SignedDuration::from_secs(grace)
        }
        _ => true,
    }
}

/// `syncResourceQuota`: recalculates one quota, writing its status when it differs.
fn sync(app: &App, ns: &str, name: &str) {
    let key: ResKey = Arc::from(QUOTAS);
    let Some(quota) = app.store.get(&key, ns, name) else {
        return;
    };
    let hard = quantities(quota.pointer("/spec/hard"));
    let stored_hard = quota.pointer("/status/hard");
    let stored_used = quota.pointer("/status/used");
    let old_used = quantities(stored_used);
    let mut used: Usage = old_used.clone();
    used.extend(usage(app, ns, &quota, &hard));
    used.retain(|name, _| hard.contains_key(name));
    let dirty = stored_hard.is_none_or(Value::is_null)
        || stored_used.is_none_or(Value::is_null)
        || !same(&hard, &quantities(stored_hard))
        || !same(&used, &old_used);
    if !dirty {
        return;
    }
    let Some(res) = resource_for(app, QUOTAS) else {
        return;
    };
    let text = |usage: &Usage| -> Value {
        Value::Object(
            usage
                .iter()
                .map(|(k, q)| (k.clone(), Value::String(q.canonical())))
                .collect::<Map<String, Value>>(),
        )
    };
    let status = serde_json::json!({"hard": text(&hard), "used": text(&used)});
    // A quota deleted meanwhile is no error; a refused write waits for the next change.
    let _ = modify_without_admission(
        app,
        &res,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |obj| {
            if obj.get("status") == Some(&status) {
                return false;
            }
            obj["status"] = status.clone();
            true
        },
    );
}

/// `quota.Equals`: the same resources with equal amounts.
fn same(a: &Usage, b: &Usage) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, q)| b.get(k).is_some_and(|o| o.nanos() == q.nanos()))
}

/// `quota.CalculateUsage`: for every resource whose evaluator covers some
/// of `hard`, what the namespace's objects use of those (zero when none).
fn usage(app: &App, ns: &str, quota: &Value, hard: &Usage) -> Usage {
    let mut total = Usage::new();
    let registry = app.registry.load();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for res in registry.resources() {
        if !res.namespaced || !seen.insert(&res.store_key) {
            continue;
        }
        let covered: Vec<&String> = hard.keys().filter(|n| evaluates(res, n)).collect();
        if covered.is_empty() {
            continue;
        }
        let Some(res) = registry.by_store_key(&res.store_key) else {
            continue;
        };
        for name in &covered {
            total
                .entry((*name).clone())
                .or_insert_with(|| Quantity::count(0));
        }
        add_usage_of_objects(app, ns, quota, &res, &covered, &mut total);
    }
    total
}

fn add_usage_of_objects(
    app: &App,
    ns: &str,
    quota: &Value,
    res: &Resource,
    covered: &[&String],
    total: &mut Usage,
) {
    let pods = res.group.is_empty() && res.plural == "pods";
    for (_, stored) in app.store.list(&res.store_key, Some(ns), None).0 {
        let obj = res.from_storage(&stored);
        if (pods && !counts_pod(&obj)) || !scopes_match(quota, res, &obj) {
            continue;
        }
        for (name, q) in usage_of(res, &obj) {
            if covered.contains(&&name) {
                let sum = total.get(&name).map_or_else(|| q.clone(), |t| t.add(&q));
                total.insert(name, sum);
            }
        }
    }
}
