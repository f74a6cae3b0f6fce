//! The endpoints controller: the Endpoints named after each Service with a
//! selector, listing the addresses of the Pods it selects (Ready ones in
//! `addresses`, the others in `notReadyAddresses`) and the Service's ports
//! resolved against each Pod (a named `targetPort` through the Pod's
//! container ports). Also what both endpoint controllers share: which Pods
//! back a Service and on which ports.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, ENDPOINTS, PODS, SERVICES};
use super::owned_pods;
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

/// When the controller last changed the endpoints (RFC 3339, nanoseconds).
pub(crate) const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
pub(crate) const HEADLESS: &str = "service.kubernetes.io/headless";

/// A Pod behind a Service.
pub(crate) struct Backend {
    pub pod: Arc<Value>,
    pub ip: String,
    /// Ready, or the Service publishes not-ready addresses.
    pub serving: bool,
    pub terminating: bool,
    /// The Service's ports as this Pod serves them (`name`, `port`, `protocol`, `appProtocol`).
    pub ports: Vec<Value>,
}

/// The Service's selector; `None` when it has none (its endpoints are not managed).
pub(crate) fn selector(svc: &Value) -> Option<&Map<String, Value>> {
    meta::get_path(svc, &["spec", "selector"])
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
}

pub(crate) fn is_headless(svc: &Value) -> bool {
    client::str_at(svc, &["spec", "clusterIP"]) == "None"
}

fn publishes_not_ready(svc: &Value) -> bool {
    meta::get_path(svc, &["spec", "publishNotReadyAddresses"]).and_then(Value::as_bool)
        == Some(true)
}

/// `FindPort`: a numeric target port as is; a named one is the container
/// port of that name and protocol.
fn find_port(pod: &Value, service_port: &Value) -> Option<i64> {
    let protocol = match client::str_at(service_port, &["protocol"]) {
        "" => "TCP",
        p => p,
    };
    match service_port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) if !name.is_empty() => {
            let containers = meta::get_path(pod, &["spec", "containers"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            containers
                .iter()
                .flat_map(|c| {
                    c.get("ports")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                })
                .find(|p| {
                    client::str_at(p, &["name"]) == name
                        && match client::str_at(p, &["protocol"]) {
                            "" => "TCP",
                            p => p,
                        } == protocol
                })
                .and_then(|p| client::int_at(&p, &["containerPort"]))
        }
        _ => client::int_at(service_port, &["port"]),
    }
}

/// The Service's ports resolved for `pod`; a port the Pod cannot serve is left out.
fn ports_for(svc: &Value, pod: &Value) -> Vec<Value> {
    let service_ports = meta::get_path(svc, &["spec", "ports"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    service_ports
        .iter()
        .filter_map(|sp| {
            let port = find_port(pod, sp)?;
            let protocol = match client::str_at(sp, &["protocol"]) {
                "" => "TCP",
                p => p,
            };
            let mut out =
                json!({"name": client::str_at(sp, &["name"]), "port": port, "protocol": protocol});
            if let Some(app) = sp.get("appProtocol").filter(|a| !a.is_null()) {
                out["appProtocol"] = app.clone();
            }
            Some(out)
        })
        .collect()
}

/// The Pods behind `svc` (`ShouldPodBeInEndpoints`): selected, with an
/// address, not finished; terminating ones only when `with_terminating`.
pub(crate) fn backends(app: &App, svc: &Value, with_terminating: bool) -> Vec<Backend> {
    let Some(sel) = selector(svc) else {
        return Vec::new();
    };
    let publish = publishes_not_ready(svc);
    let mut out: Vec<Backend> = client::list(app, PODS, Some(meta::namespace(svc)))
        .into_iter()
        .filter(|p| {
            let labels = meta::labels(p);
            sel.iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .filter(|p| !matches!(owned_pods::phase(p), "Succeeded" | "Failed"))
        .filter(|p| !client::str_at(p, &["status", "podIP"]).is_empty())
        .filter(|p| with_terminating || publish || !meta::is_deleting(p))
        .map(|pod| Backend {
            ip: client::str_at(&pod, &["status", "podIP"]).to_string(),
            serving: publish || owned_pods::is_ready(&pod),
            terminating: meta::is_deleting(&pod),
            ports: ports_for(svc, &pod),
            pod,
        })
        .collect();
    out.sort_by(|a, b| meta::name(&a.pod).cmp(meta::name(&b.pod)));
    out
}

/// A reference to a Pod as endpoints carry it.
pub(crate) fn target_ref(pod: &Value) -> Value {
    json!({
        "kind": "Pod",
        "namespace": meta::namespace(pod),
        "name": meta::name(pod),
        "uid": meta::uid(pod),
    })
}

/// The Pod's hostname when the Service is its subdomain (`ShouldSetHostname`).
pub(crate) fn hostname(pod: &Value, svc: &Value) -> Option<String> {
    let host = client::str_at(pod, &["spec", "hostname"]);
    (!host.is_empty() && client::str_at(pod, &["spec", "subdomain"]) == meta::name(svc))
        .then(|| host.to_string())
}

/// The labels endpoints of `svc` carry: the Service's, plus the headless marker.
pub(crate) fn service_labels(svc: &Value) -> Map<String, Value> {
    let mut labels = meta::labels(svc).cloned().unwrap_or_default();
    if is_headless(svc) {
        labels.insert(HEADLESS.into(), json!(""));
    } else {
        labels.remove(HEADLESS);
    }
    labels
}

/// Now as the trigger-time annotation carries it.
pub(crate) fn trigger_time() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// One subset being built: its ports, ready and not-ready addresses.
type Subset = (Vec<Value>, Vec<Value>, Vec<Value>);

/// The Endpoints' subsets: one per set of ports, addresses sorted by IP.
fn subsets(svc: &Value, backends: &[Backend]) -> Vec<Value> {
    let mut groups: BTreeMap<String, Subset> = BTreeMap::new();
    for b in backends {
        if b.ports.is_empty() && !is_headless(svc) {
            continue;
        }
        let mut ports = b.ports.clone();
        ports.sort_by_key(|p| p.to_string());
        let key = json!(ports).to_string();
        let entry = groups
            .entry(key)
            .or_insert_with(|| (ports, Vec::new(), Vec::new()));
        let mut address = json!({"ip": b.ip, "targetRef": target_ref(&b.pod)});
        let node = client::str_at(&b.pod, &["spec", "nodeName"]);
        if !node.is_empty() {
            address["nodeName"] = json!(node);
        }
        if let Some(h) = hostname(&b.pod, svc) {
            address["hostname"] = json!(h);
        }
        if b.serving {
            entry.1.push(address);
        } else {
            entry.2.push(address);
        }
    }
    let by_ip = |list: &mut Vec<Value>| {
        list.sort_by(|a, b| client::str_at(a, &["ip"]).cmp(client::str_at(b, &["ip"])))
    };
    groups
        .into_values()
        .map(|(ports, mut ready, mut not_ready)| {
            by_ip(&mut ready);
            by_ip(&mut not_ready);
            let mut subset = Map::new();
            if !ready.is_empty() {
                subset.insert("addresses".into(), json!(ready));
            }
            if !not_ready.is_empty() {
                subset.insert("notReadyAddresses".into(), json!(not_ready));
            }
            if !ports.is_empty() {
                subset.insert("ports".into(), json!(ports));
            }
            Value::Object(subset)
        })
        .collect()
}

/// Keeps the Endpoints of Service `ns/name` in step with its Pods.
pub(crate) async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<()> {
    let Some(svc) = client::get(app, SERVICES, ns, name) else {
        // The Service went: so do the Endpoints this controller wrote for it.
        if let Some(ep) = client::get(app, ENDPOINTS, ns, name)
            && meta::get_path(&ep, &["metadata", "annotations", TRIGGER_TIME]).is_some()
        {
            client::delete(app, ENDPOINTS, ns, name, meta::uid(&ep))?;
        }
        return Ok(());
    };
    if selector(&svc).is_none() || meta::is_deleting(&svc) {
        return Ok(());
    }
    let subsets = subsets(&svc, &backends(app, &svc, false));
    let labels = service_labels(&svc);
    let Some(existing) = client::get(app, ENDPOINTS, ns, name) else {
        let mut ep = json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {TRIGGER_TIME: trigger_time()},
            },
        });
        if !subsets.is_empty() {
            ep["subsets"] = json!(subsets);
        }
        return match client::create_object(app, ENDPOINTS, ns, ep, CONTROLLER_MANAGER).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        };
    };
    let current_subsets = existing
        .get("subsets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if current_subsets == subsets && meta::labels(&existing).cloned().unwrap_or_default() == labels
    {
        return Ok(());
    }
    client::modify_with_admission(app, ENDPOINTS, ns, name, None, CONTROLLER_MANAGER, |ep| {
        meta::set_path(ep, &["metadata", "labels"], json!(labels));
        meta::set_path(
            ep,
            &["metadata", "annotations", TRIGGER_TIME],
            json!(trigger_time()),
        );
        match ep.as_object_mut() {
            Some(map) if subsets.is_empty() => {
                map.remove("subsets");
            }
            Some(map) => {
                map.insert("subsets".into(), json!(subsets));
            }
            None => return false,
        }
        true
    })
    .await
}
