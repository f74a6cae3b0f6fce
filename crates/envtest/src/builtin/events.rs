//! Events are stored once and served through two APIs. The store keeps the
//! core/v1 shape; these convert for `events.k8s.io/v1` requests and responses
//! (field for field, as kube-apiserver's conversion does: `note` ↔ `message`,
//! `regarding` ↔ `involvedObject`, `deprecatedFirstTimestamp` ↔
//! `firstTimestamp`, ...). Both directions write the fields Go always writes
//! (`eventTime: null`, `deprecatedSource: {}`, `reportingComponent: ""`, ...).
//!
//! The server decodes, defaults and validates an events.k8s.io/v1 body in
//! that shape (`validate` converts internally, as the rules are written
//! against the core fields) and converts it with [`events_v1_to_core`] before
//! storing; it converts stored objects with [`core_to_events_v1`] when
//! answering through events.k8s.io/v1.

use serde_json::{Map, Value, json};

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

/// Copies `from[src]` to `out[dst]`, leaving out Go zero values when `omit_empty`.
fn copy(out: &mut Map<String, Value>, dst: &str, from: &Value, src: &str, omit_empty: bool) {
    match from.get(src) {
        Some(value) if !(omit_empty && is_empty(value)) => {
            out.insert(dst.to_string(), value.clone());
        }
        _ => {}
    }
}

fn type_meta(out: &mut Map<String, Value>, from: &Value, api_version: &str) {
    if from.get("kind").is_some() {
        out.insert("kind".into(), json!("Event"));
    }
    if from.get("apiVersion").is_some() {
        out.insert("apiVersion".into(), json!(api_version));
    }
    if let Some(meta) = from.get("metadata") {
        out.insert("metadata".into(), meta.clone());
    }
}

/// core/v1 Event → events.k8s.io/v1 Event.
pub(crate) fn core_to_events_v1(obj: &Value) -> Value {
    let mut out = Map::new();
    type_meta(&mut out, obj, "events.k8s.io/v1");
    out.insert(
        "eventTime".into(),
        obj.get("eventTime").cloned().unwrap_or(Value::Null),
    );
    copy(&mut out, "series", obj, "series", true);
    copy(
        &mut out,
        "reportingController",
        obj,
        "reportingComponent",
        true,
    );
    copy(
        &mut out,
        "reportingInstance",
        obj,
        "reportingInstance",
        true,
    );
    copy(&mut out, "action", obj, "action", true);
    copy(&mut out, "reason", obj, "reason", true);
    out.insert(
        "regarding".into(),
        obj.get("involvedObject")
            .cloned()
            .unwrap_or_else(|| json!({})),
    );
    copy(&mut out, "related", obj, "related", true);
    copy(&mut out, "note", obj, "message", true);
    copy(&mut out, "type", obj, "type", true);
    out.insert(
        "deprecatedSource".into(),
        obj.get("source").cloned().unwrap_or_else(|| json!({})),
    );
    for (v1, core) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
    ] {
        out.insert(v1.into(), obj.get(core).cloned().unwrap_or(Value::Null));
    }
    copy(&mut out, "deprecatedCount", obj, "count", true);
    Value::Object(out)
}

/// events.k8s.io/v1 Event → core/v1 Event.
pub(crate) fn events_v1_to_core(obj: &Value) -> Value {
    let mut out = Map::new();
    type_meta(&mut out, obj, "v1");
    out.insert(
        "involvedObject".into(),
        obj.get("regarding").cloned().unwrap_or_else(|| json!({})),
    );
    copy(&mut out, "reason", obj, "reason", true);
    copy(&mut out, "message", obj, "note", true);
    out.insert(
        "source".into(),
        obj.get("deprecatedSource")
            .cloned()
            .unwrap_or_else(|| json!({})),
    );
    for (v1, core) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
    ] {
        out.insert(core.into(), obj.get(v1).cloned().unwrap_or(Value::Null));
    }
    copy(&mut out, "count", obj, "deprecatedCount", true);
    copy(&mut out, "type", obj, "type", true);
    out.insert(
        "eventTime".into(),
        obj.get("eventTime").cloned().unwrap_or(Value::Null),
    );
    copy(&mut out, "series", obj, "series", true);
    copy(&mut out, "action", obj, "action", true);
    copy(&mut out, "related", obj, "related", true);
    out.insert(
        "reportingComponent".into(),
        obj.get("reportingController").cloned().unwrap_or(json!("")),
    );
    out.insert(
        "reportingInstance".into(),
        obj.get("reportingInstance").cloned().unwrap_or(json!("")),
    );
    Value::Object(out)
}

/// Whether `obj` is in the events.k8s.io/v1 shape.
pub(crate) fn is_events_v1_shape(obj: &Value) -> bool {
    obj.get("regarding").is_some()
        || obj.get("note").is_some()
        || obj.get("deprecatedSource").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_a_full_event() {
        let core = json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": "e", "namespace": "n"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "n"},
            "reason": "R", "message": "M", "source": {"component": "c", "host": "h"},
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:01Z",
            "count": 2, "type": "Warning", "eventTime": null, "action": "A",
            "related": {"kind": "Node", "name": "x"},
            "reportingComponent": "rc", "reportingInstance": "ri"
        });
        let v1 = core_to_events_v1(&core);
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        assert_eq!(v1["note"], "M");
        assert_eq!(v1["regarding"]["name"], "p");
        assert_eq!(v1["deprecatedCount"], 2);
        assert_eq!(v1["reportingController"], "rc");
        assert_eq!(events_v1_to_core(&v1), core);
    }
}
