//! The EndpointSlice controller: for each Service with a selector, IPv4
//! EndpointSlices (`<service>-<random>`, owned by the Service, labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
//! endpointslice-controller.k8s.io`) listing the Pods it selects, one slice
//! per set of resolved ports, with the `ready`, `serving` and `terminating`
//! conditions, `nodeName`, `zone` and `targetRef` of each. A Service without
//! Pods keeps one placeholder slice (no endpoints, no ports), as on a cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, ENDPOINTSLICES, NODES, SERVICES};
use super::endpoints::{self, Backend, TRIGGER_TIME};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

pub(crate) const SERVICE_NAME: &str = "kubernetes.io/service-name";
pub(crate) const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
pub(crate) const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";

/// Whether this controller manages the slice, and for which Service.
pub(crate) fn managed_for(slice: &Value) -> Option<&str> {
    let labels = meta::labels(slice)?;
    if labels.get(MANAGED_BY).and_then(Value::as_str) != Some(CONTROLLER_NAME) {
        return None;
    }
    labels.get(SERVICE_NAME).and_then(Value::as_str)
}

fn endpoint(
    svc: &Value,
    b: &Backend,
    zones: &mut HashMap<String, Option<String>>,
    app: &App,
) -> Value {
    let publish = meta::get_path(svc, &["spec", "publishNotReadyAddresses"])
        .and_then(Value::as_bool)
        == Some(true);
    let ready = publish || (b.serving && !b.terminating);
    let mut ep = json!({
        "addresses": [b.ip],
        "conditions": {"ready": ready, "serving": b.serving, "terminating": b.terminating},
        "targetRef": endpoints::target_ref(&b.pod),
    });
    if let Some(h) = endpoints::hostname(&b.pod, svc) {
        ep["hostname"] = json!(h);
    }
    let node = client::str_at(&b.pod, &["spec", "nodeName"]);
    if !node.is_empty() {
        ep["nodeName"] = json!(node);
        let zone = zones.entry(node.to_string()).or_insert_with(|| {
            client::get(app, NODES, "", node).and_then(|n| {
                meta::labels(&n)
                    .and_then(|l| l.get("topology.kubernetes.io/zone"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        });
        if let Some(z) = zone {
            ep["zone"] = json!(z);
        }
    }
    ep
}

/// The slices `svc` should have: endpoints grouped by their ports.
fn desired(app: &App, svc: &Value) -> Vec<(Value, Vec<Value>)> {
    let mut zones = HashMap::new();
    let mut groups: BTreeMap<String, (Value, Vec<Value>)> = BTreeMap::new();
    for b in endpoints::backends(app, svc, true) {
        let ports = json!(b.ports);
        let entry = groups
            .entry(ports.to_string())
            .or_insert_with(|| (ports.clone(), Vec::new()));
        entry.1.push(endpoint(svc, &b, &mut zones, app));
    }
    let mut out: Vec<(Value, Vec<Value>)> = groups.into_values().collect();
    if out.is_empty() {
        out.push((Value::Null, Vec::new()));
    }
    out
}

fn list_of(v: Option<&Value>) -> Vec<Value> {
    v.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Ports as stored: an empty list is `null`.
fn ports_value(ports: &Value) -> Value {
    match ports.as_array() {
        Some(list) if !list.is_empty() => ports.clone(),
        _ => Value::Null,
    }
}

fn endpoints_value(list: &[Value]) -> Value {
    if list.is_empty() {
        Value::Null
    } else {
        json!(list)
    }
}

fn labels_for(svc: &Value) -> Map<String, Value> {
    let mut labels = endpoints::service_labels(svc);
    labels.insert(SERVICE_NAME.into(), json!(meta::name(svc)));
    labels.insert(MANAGED_BY.into(), json!(CONTROLLER_NAME));
    labels
}

/// Keeps the EndpointSlices of Service `ns/name` in step with its Pods.
pub(crate) async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<()> {
    let svc = client::get(app, SERVICES, ns, name);
    let existing: Vec<Arc<Value>> = client::list(app, ENDPOINTSLICES, Some(ns))
        .into_iter()
        .filter(|s| managed_for(s) == Some(name) && !meta::is_deleting(s))
        .collect();
    let svc = match svc {
        Some(svc) if endpoints::selector(&svc).is_some() && !meta::is_deleting(&svc) => svc,
        // Without a Service (or its selector) the slices go; the garbage
        // collector would take them too, but not from a selector removed.
        _ => {
            for s in &existing {
                client::delete(app, ENDPOINTSLICES, ns, meta::name(s), meta::uid(s))?;
            }
            return Ok(());
        }
    };
    let uid = meta::uid(&svc);
    let (mine, stale): (Vec<_>, Vec<_>) = existing
        .into_iter()
        .partition(|s| client::controller_uid(s, "Service") == Some(uid));
    for s in &stale {
        client::delete(app, ENDPOINTSLICES, ns, meta::name(s), meta::uid(s))?;
    }
    let labels = labels_for(&svc);
    let mut unmatched: Vec<Arc<Value>> = mine;
    let mut to_fill: Vec<(Value, Vec<Value>)> = Vec::new();
    for (ports, eps) in desired(app, &svc) {
        let ports = ports_value(&ports);
        match unmatched
            .iter()
            .position(|s| ports_value(s.get("ports").unwrap_or(&Value::Null)) == ports)
        {
            Some(i) => {
                let slice = unmatched.remove(i);
                write(app, &slice, &labels, &ports, &eps).await?;
            }
            None => to_fill.push((ports, eps)),
        }
    }
    for (ports, eps) in to_fill {
        if let Some(slice) = unmatched.pop() {
            write(app, &slice, &labels, &ports, &eps).await?;
            continue;
        }
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": format!("{name}-"),
                "labels": labels,
                "annotations": {TRIGGER_TIME: endpoints::trigger_time()},
                "ownerReferences": [client::controller_ref(&svc)],
            },
            "addressType": "IPv4",
            "endpoints": endpoints_value(&eps),
            "ports": ports,
        });
        client::create_object(app, ENDPOINTSLICES, ns, slice, CONTROLLER_MANAGER).await?;
    }
    for s in unmatched {
        client::delete(app, ENDPOINTSLICES, ns, meta::name(&s), meta::uid(&s))?;
    }
    Ok(())
}

/// Rewrites a slice whose endpoints, ports or labels differ from what they should be.
async fn write(
    app: &App,
    slice: &Value,
    labels: &Map<String, Value>,
    ports: &Value,
    eps: &[Value],
) -> ApiResult<()> {
    let same = list_of(slice.get("endpoints")) == eps
        && ports_value(slice.get("ports").unwrap_or(&Value::Null)) == *ports
        && meta::labels(slice).cloned().unwrap_or_default() == *labels;
    if same {
        return Ok(());
    }
    let (ns, name) = (meta::namespace(slice), meta::name(slice));
    client::modify_with_admission(
        app,
        ENDPOINTSLICES,
        ns,
        name,
        None,
        CONTROLLER_MANAGER,
        |s| {
            meta::set_path(s, &["metadata", "labels"], json!(labels));
            meta::set_path(
                s,
                &["metadata", "annotations", TRIGGER_TIME],
                json!(endpoints::trigger_time()),
            );
            s["endpoints"] = endpoints_value(eps);
            s["ports"] = ports.clone();
            true
        },
    )
    .await
}
