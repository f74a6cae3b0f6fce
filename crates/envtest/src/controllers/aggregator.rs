//! The aggregator's APIService controllers of kube-apiserver v1.32: one
//! local APIService per served group version (the built-in ones written at
//! start and kept only then, those of CRD groups kept in step with the
//! CRDs), and the availability of APIServices that name a Service. envtest
//! proxies to no aggregated server, so such an APIService is never
//! Available: its Service is missing, or its discovery check fails.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{APISERVER, modify_without_admission, resource_for};
use crate::api::WriteCtx;
use crate::api::create::{Input, create_internal};
use crate::app::App;
use crate::meta;
use crate::store::Event;

pub(crate) const KEY: &str = "apiregistration.k8s.io/apiservices";
const GROUP: &str = "apiregistration.k8s.io";
const SERVICES: &str = "services";
/// How the autoregister controller marks the APIServices it owns: `onstart`
/// (built-in groups, written once) or `true` (kept in step with CRDs).
pub(crate) const MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// kube-apiserver's `apiVersionPriorities`: (group priority, version priority).
fn builtin_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    Some(match (group, version) {
        ("", "v1") => (18000, 1),
        ("apps", "v1") => (17800, 15),
        ("events.k8s.io", "v1") => (17750, 15),
        ("authentication.k8s.io", "v1") => (17700, 15),
        ("authorization.k8s.io", "v1") => (17600, 15),
        ("autoscaling", "v2") => (17500, 30),
        ("autoscaling", "v1") => (17500, 15),
        ("batch", "v1") => (17400, 15),
        ("certificates.k8s.io", "v1") => (17300, 15),
        ("networking.k8s.io", "v1") => (17200, 15),
        ("policy", "v1") => (17100, 15),
        ("rbac.authorization.k8s.io", "v1") => (17000, 15),
        ("storage.k8s.io", "v1") => (16800, 15),
        ("apiextensions.k8s.io" | "admissionregistration.k8s.io", "v1") => (16700, 15),
        ("scheduling.k8s.io", "v1") => (16600, 15),
        ("coordination.k8s.io", "v1") => (16500, 15),
        ("node.k8s.io", "v1") => (16300, 15),
        ("discovery.k8s.io", "v1") => (16200, 15),
        ("flowcontrol.apiserver.k8s.io", "v1") => (16100, 21),
        _ => return None,
    })
}

/// Every CRD group version gets these: low in discovery, versions ordered
/// by Kubernetes' version rules.
const CRD_PRIORITY: (i64, i64) = (1000, 100);

fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

fn local_apiservice(group: &str, version: &str, (gp, vp): (i64, i64), managed: &str) -> Value {
    let mut spec = json!({"version": version, "groupPriorityMinimum": gp, "versionPriority": vp});
    if !group.is_empty() {
        spec["group"] = json!(group);
    }
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name_of(group, version), "labels": {MANAGED_LABEL: managed}},
        "spec": spec,
    })
}

fn create(app: &App, obj: Value) {
    let Some(res) = resource_for(app, KEY) else {
        return;
    };
    let input = Input::Body {
        obj,
        duplicates: Vec::new(),
    };
    if let Err(e) = create_internal(app, &res, "", input, &WriteCtx::internal(APISERVER)) {
        tracing::warn!(code = e.code, "registering an APIService: {}", e.message);
    }
}

/// The served group versions, built-in and custom; the aggregator serves
/// its own group itself and registers no APIService for it.
fn served(app: &App) -> Vec<(String, String, bool)> {
    let reg = app.registry.load();
    reg.groups()
        .iter()
        .filter(|(group, _)| group != GROUP)
        .flat_map(|(group, versions)| {
            let custom = reg
                .resources()
                .iter()
                .any(|r| &r.group == group && r.is_custom());
            versions
                .iter()
                .map(move |v| (group.clone(), v.clone(), custom))
        })
        .collect()
}

/// At start: the APIService of every built-in group version.
pub(crate) fn register_builtin(app: &App) {
    for (group, version, custom) in served(app) {
        if custom {
            continue;
        }
        if let Some(priority) = builtin_priority(&group, &version) {
            create(app, local_apiservice(&group, &version, priority, "onstart"));
        }
    }
}

fn stored(app: &App) -> Vec<Arc<Value>> {
    let Some(res) = resource_for(app, KEY) else {
        return Vec::new();
    };
    let (items, _) = app.store.list(&res.store_key, None, None);
    items.into_iter().map(|(_, o)| o).collect()
}

/// Whether a change concerns the APIServices: CRDs, APIServices, Services.
pub(crate) fn concerns(ev: &Event) -> bool {
    matches!(
        &*ev.resource,
        KEY | SERVICES | "apiextensions.k8s.io/customresourcedefinitions"
    )
}

/// Keeps the CRD groups' APIServices in step and the availability of the
/// APIServices that name a Service.
pub(crate) fn sync(app: &App) {
    let existing = stored(app);
    let wanted: BTreeSet<String> = served(app)
        .into_iter()
        .filter(|(_, _, custom)| *custom)
        .map(|(group, version, _)| {
            let name = name_of(&group, &version);
            if !existing.iter().any(|a| meta::name(a) == name) {
                create(
                    app,
                    local_apiservice(&group, &version, CRD_PRIORITY, "true"),
                );
            }
            name
        })
        .collect();
    let Some(res) = resource_for(app, KEY) else {
        return;
    };
    for apiservice in &existing {
        let name = meta::name(apiservice);
        let continuous = meta::labels(apiservice)
            .and_then(|l| l.get(MANAGED_LABEL))
            .and_then(Value::as_str)
            == Some("true");
        if continuous && !wanted.contains(name) {
            let pre = crate::store::Preconditions {
                resource_version: None,
                uid: Some(meta::uid(apiservice).to_string()),
            };
            let _ = app.store.delete(&res.store_key, "", name, &pre);
            continue;
        }
        if let Some(service) = apiservice.pointer("/spec/service").filter(|s| !s.is_null()) {
            let condition = availability(app, apiservice, service);
            let _ =
                modify_without_admission(app, &res, "", name, Some("status"), APISERVER, |obj| {
                    set_available(obj, &condition)
                });
        }
    }
}

/// The Available condition of an APIService backed by `service`.
fn availability(app: &App, apiservice: &Value, service: &Value) -> Value {
    let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("");
    let (ns, name) = (text("namespace"), text("name"));
    let key: crate::store::ResKey = Arc::from(SERVICES);
    if app.store.get(&key, ns, name).is_none() {
        return json!({"type": "Available", "status": "False", "reason": "ServiceNotFound",
            "message": format!("service/{name} in {ns:?} is not present")});
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    let spec = &apiservice["spec"];
    let path = format!(
        "/apis/{}/{}",
        spec["group"].as_str().unwrap_or(""),
        spec["version"].as_str().unwrap_or("")
    );
    json!({"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck",
    "message": format!(
        "failing or missing response from https://{name}.{ns}.svc:{port}{path}: opctl envtest does not proxy requests to aggregated API servers"
    )})
}

/// Sets the condition, keeping its transition time while its status holds.
fn set_available(obj: &mut Value, condition: &Value) -> bool {
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"));
    let same = |k: &str| current.and_then(|c| c.get(k)) == condition.get(k);
    if same("status") && same("reason") && same("message") {
        return false;
    }
    let mut next = condition.clone();
    next["lastTransitionTime"] = match current {
        Some(c) if same("status") => c["lastTransitionTime"].clone(),
        _ => json!(meta::now_rfc3339()),
    };
    let mut rest: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("Available"))
        .collect();
    rest.push(next);
    obj["status"] = json!({"conditions": rest});
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_group_versions_have_kube_apiservers_priorities() {
        let core = local_apiservice("", "v1", builtin_priority("", "v1").unwrap(), "onstart");
        assert_eq!(core["metadata"]["name"], "v1.");
        assert_eq!(
            core["spec"],
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
        );
        for kind in crate::builtin::kinds() {
            if kind.group != GROUP {
                assert!(
                    builtin_priority(kind.group, kind.version).is_some(),
                    "{}/{}",
                    kind.group,
                    kind.version
                );
            }
        }
    }

    #[test]
    fn the_available_condition_keeps_its_transition_time_while_it_holds() {
        let mut obj = json!({"status": {}});
        let missing = json!({"type": "Available", "status": "False", "reason": "ServiceNotFound", "message": "m"});
        assert!(set_available(&mut obj, &missing));
        let first = obj["status"]["conditions"][0]["lastTransitionTime"].clone();
        assert!(!set_available(&mut obj, &missing));
        let failing = json!({"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck", "message": "n"});
        assert!(set_available(&mut obj, &failing));
        assert_eq!(obj["status"]["conditions"][0]["lastTransitionTime"], first);
        assert_eq!(
            obj["status"]["conditions"][0]["reason"],
            "FailedDiscoveryCheck"
        );
    }
}
