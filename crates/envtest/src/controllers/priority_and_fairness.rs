//! kube-apiserver's API Priority and Fairness controllers: the config
//! producer keeps the bootstrap configuration (`bootstrap_policy::flowcontrol`) in
//! place, and the config consumer reports on every FlowSchema whether the
//! priority level it names exists (the `Dangling` condition). envtest does
//! not queue or reject requests by this configuration.

use serde_json::{Value, json};

use super::{modify_without_admission, resource_for};
use crate::api::WriteCtx;
use crate::api::create::{Input, create_internal};
use crate::app::App;
use crate::bootstrap_policy::flowcontrol::{
    AUTO_UPDATE, FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS, configuration,
};
use crate::meta;
use crate::store::Event;

/// The managers kube-apiserver writes these objects as.
pub(crate) const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

fn key(plural: &str) -> String {
    format!("{GROUP}/{plural}")
}

pub(crate) fn concerns(ev: &Event) -> bool {
    *ev.resource == *key(FLOW_SCHEMAS) || *ev.resource == *key(PRIORITY_LEVELS)
}

/// Creates what is missing, puts back what was changed where the producer
/// may, and brings every FlowSchema's `Dangling` condition up to date.
pub(crate) fn sync(app: &App) {
    for object in configuration() {
        let Some(res) = resource_for(app, &key(object.plural)) else {
            continue;
        };
        let name = object.name();
        let Some(stored) = app.store.get(&res.store_key, "", name) else {
            let input = Input::Body {
                obj: object.body.clone(),
                duplicates: Vec::new(),
            };
            if let Err(e) = create_internal(app, &res, "", input, &WriteCtx::internal(PRODUCER)) {
                tracing::warn!(code = e.code, "API priority and fairness: {}", e.message);
            }
            continue;
        };
        let auto_update = meta::metadata(&stored)
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(AUTO_UPDATE))
            .and_then(Value::as_str)
            == Some("true");
        let spec = object.body.get("spec");
        if (object.mandatory || auto_update) && stored.get("spec") != spec {
            let spec = spec.cloned().unwrap_or_default();
            let _ = modify_without_admission(app, &res, "", name, None, PRODUCER, |obj| {
                obj["spec"] = spec.clone();
                true
            });
        }
    }
    report_dangling(app);
}

fn report_dangling(app: &App) {
    let (Some(schemas), Some(levels)) = (
        resource_for(app, &key(FLOW_SCHEMAS)),
        resource_for(app, &key(PRIORITY_LEVELS)),
    ) else {
        return;
    };
    let (items, _) = app.store.list(&schemas.store_key, None, None);
    for (_, schema) in items {
        let level = schema
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let found = app.store.get(&levels.store_key, "", level).is_some();
        let wanted = dangling(level, found);
        if reports(&schema, &wanted) {
            continue;
        }
        let name = meta::name(&schema).to_string();
        let _ =
            modify_without_admission(app, &schemas, "", &name, Some("status"), CONSUMER, |obj| {
                set_condition(obj, &wanted)
            });
    }
}

/// The condition without its time, as the consumer computes it.
fn dangling(level: &str, found: bool) -> Value {
    if found {
        json!({"type": "Dangling", "status": "False", "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists")})
    } else {
        json!({"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object")})
    }
}

/// Whether the stored `Dangling` condition says what `wanted` says.
fn reports(schema: &Value, wanted: &Value) -> bool {
    schema
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"))
        .is_some_and(|c| same_condition(c, wanted))
}

fn same_condition(a: &Value, b: &Value) -> bool {
    ["status", "reason", "message"]
        .iter()
        .all(|k| a.get(*k) == b.get(*k))
}

fn set_condition(obj: &mut Value, wanted: &Value) -> bool {
    let mut conditions: Vec<Value> = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let slot = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"));
    if slot.is_some_and(|i| same_condition(&conditions[i], wanted)) {
        return false;
    }
    let mut next = wanted.clone();
    next["lastTransitionTime"] = json!(meta::now_rfc3339());
    match slot {
        Some(i) => conditions[i] = next,
        None => conditions.push(next),
    }
    obj["status"] = json!({"conditions": conditions});
    true
}
