//! Events the controllers record, as client-go's event recorder writes them
//! for kube-controller-manager: a core/v1 Event named `<object>.<hex
//! nanoseconds>` in the object's namespace (`default` for cluster-scoped
//! objects), with the controller (or scheduler, or kubelet) as `source.component`.

use serde_json::{Value, json};

use super::{CONTROLLER_MANAGER, resource_for};
use crate::api::WriteCtx;
use crate::api::create::{Input, create_internal};
use crate::app::App;
use crate::meta;

/// Records a Warning about `involved` (an ObjectReference) from `component`.
pub(crate) fn record_warning(
    app: &App,
    component: &str,
    involved: Value,
    reason: &str,
    message: &str,
) {
    record(app, component, involved, "Warning", reason, message);
}

/// Records an Event of `kind` (`Normal` or `Warning`) about `involved` from `component`.
pub(crate) fn record(
    app: &App,
    component: &str,
    involved: Value,
    kind: &str,
    reason: &str,
    message: &str,
) {
    record_from_host(app, component, "", involved, kind, reason, message);
}

/// [`record`] from a component on a host (a kubelet on its Node): the
/// source's `host`, which is also `reportingInstance`.
pub(crate) fn record_from_host(
    app: &App,
    component: &str,
    host: &str,
    involved: Value,
    kind: &str,
    reason: &str,
    message: &str,
) {
    let Some(res) = resource_for(app, "events") else {
        return;
    };
    let now = jiff::Timestamp::now();
    let namespace = match involved.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => ns.to_string(),
        _ => "default".to_string(),
    };
    let object_name = involved.get("name").and_then(Value::as_str).unwrap_or("");
    let name = format!("{object_name}.{:x}", now.as_nanosecond());
    let time = crate::meta::now_rfc3339();
    let mut source = json!({"component": component});
    if !host.is_empty() {
        source["host"] = json!(host);
    }
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "source": source,
        // client-go's recorder reports as its source's component and host.
        "reportingComponent": component,
        "reportingInstance": host,
        "firstTimestamp": time,
        "lastTimestamp": time,
        "count": 1,
        "type": kind,
    });
    let input = Input::Body {
        obj: event,
        duplicates: Vec::new(),
    };
    // The event is a report; a namespace that is going away may refuse it.
    let _ = create_internal(
        app,
        &res,
        &namespace,
        input,
        &WriteCtx::internal(CONTROLLER_MANAGER),
    );
}

/// A reference to `obj` for an Event's `involvedObject`.
pub(crate) fn reference(obj: &Value) -> Value {
    let mut r = json!({
        "apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": obj.get("kind").cloned().unwrap_or(Value::Null),
        "name": meta::name(obj),
        "uid": meta::uid(obj),
        "resourceVersion": meta::resource_version(obj),
    });
    let ns = meta::namespace(obj);
    if !ns.is_empty() {
        r["namespace"] = json!(ns);
    }
    r
}
