//! ConfigMaps, Secrets, Namespaces, Events (both APIs) and Leases.

use base64::Engine;
use serde_json::Value;

use super::go_syntax::{self, too_long};
use super::meta;
use crate::error::Cause;
use crate::name_rules::{
    is_config_map_key, is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain,
};

/// ConfigMap and Secret payloads are limited to 1 MiB.
const MAX_SECRET_SIZE: usize = 1024 * 1024;

fn keys(map: Option<&Value>, field: &str, causes: &mut Vec<Cause>) {
    let mut entries: Vec<_> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, _) in entries {
        for msg in is_config_map_key(key) {
            causes.push(Cause::invalid(
                format!("{field}[{key}]"),
                &Value::String(key.clone()),
                &msg,
            ));
        }
    }
}

fn decoded_len(value: &Value) -> usize {
    value
        .as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .map_or(0, |b| b.len())
}

pub(crate) fn config_map(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let data = obj.get("data").and_then(Value::as_object);
    let binary = obj.get("binaryData").and_then(Value::as_object);
    keys(obj.get("data"), "data", &mut causes);
    for key in data.into_iter().flat_map(|d| d.keys()) {
        if binary.is_some_and(|b| b.contains_key(key)) {
            causes.push(Cause::invalid(
                format!("data[{key}]"),
                &Value::String(key.clone()),
                "duplicate of key present in binaryData",
            ));
        }
    }
    keys(obj.get("binaryData"), "binaryData", &mut causes);
    for key in binary.into_iter().flat_map(|d| d.keys()) {
        if data.is_some_and(|b| b.contains_key(key)) {
            causes.push(Cause::invalid(
                format!("binaryData[{key}]"),
                &Value::String(key.clone()),
                "duplicate of key present in data",
            ));
        }
    }
    let total: usize = data
        .into_iter()
        .flatten()
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .sum::<usize>()
        + binary
            .into_iter()
            .flatten()
            .map(|(_, v)| decoded_len(v))
            .sum::<usize>();
    if total > MAX_SECRET_SIZE {
        causes.push(too_long("[]", MAX_SECRET_SIZE));
    }
    causes
}

/// Immutable ConfigMaps and Secrets keep their payload.
pub(crate) fn immutable_payload(obj: &Value, old: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return causes;
    }
    if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
        causes.push(Cause::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for field in fields {
        if obj.get(*field) != old.get(*field) {
            causes.push(Cause::forbidden(
                *field,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    causes
}

pub(crate) fn secret(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    keys(obj.get("data"), "data", &mut causes);
    let data = obj.get("data").and_then(Value::as_object);
    let total: usize = data
        .into_iter()
        .flatten()
        .map(|(_, v)| decoded_len(v))
        .sum();
    if total > MAX_SECRET_SIZE {
        causes.push(too_long("data", MAX_SECRET_SIZE));
    }
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    match obj.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let name = obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                causes.push(Cause::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => docker_config(data, ".dockercfg", &mut causes),
        "kubernetes.io/dockerconfigjson" => docker_config(data, ".dockerconfigjson", &mut causes),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            causes.push(Cause::required("data[%s][username]", ""));
            causes.push(Cause::required("data[%s][password]", ""));
        }
        "kubernetes.io/ssh-auth" => {
            let key = data
                .and_then(|d| d.get("ssh-privatekey"))
                .map_or(0, decoded_len);
            if key == 0 {
                causes.push(Cause::required("data[%s][ssh-privatekey]", ""));
            }
        }
        "kubernetes.io/tls" => {
            if !has("tls.crt") {
                causes.push(Cause::required("data[tls.crt]", ""));
            }
            if !has("tls.key") {
                causes.push(Cause::required("data[tls.key]", ""));
            }
        }
        _ => {}
    }
    causes
}

fn docker_config(
    data: Option<&serde_json::Map<String, Value>>,
    key: &str,
    causes: &mut Vec<Cause>,
) {
    let Some(encoded) = data.and_then(|d| d.get(key)) else {
        causes.push(Cause::required(format!("data[{key}]"), ""));
        return;
    };
    let bytes = encoded
        .as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default();
    if serde_json::from_slice::<serde_json::Map<String, Value>>(&bytes).is_err() {
        causes.push(Cause::invalid(
            format!("data[{key}]"),
            &Value::String("<secret contents redacted>".into()),
            "invalid character looking for beginning of value",
        ));
    }
}

pub(crate) fn secret_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = secret(obj);
    if obj.get("type") != old.get("type") {
        let rendered = gofmt_str(obj.get("type"));
        causes.push(go_syntax::immutable("type", &rendered));
    }
    causes.extend(immutable_payload(obj, old, &["data"]));
    causes
}

fn gofmt_str(value: Option<&Value>) -> String {
    format!("{:?}", value.and_then(Value::as_str).unwrap_or(""))
}

pub(crate) fn namespace(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for finalizer in go_syntax::strings(obj.pointer("/spec/finalizers")).unwrap_or_default() {
        for msg in is_qualified_name(&finalizer) {
            causes.push(Cause::invalid(
                "spec.finalizers",
                &Value::String(finalizer.clone()),
                &msg,
            ));
        }
        if !finalizer.contains('/') && finalizer != "kubernetes" {
            causes.push(Cause::invalid(
                "spec.finalizers",
                &Value::String(finalizer.clone()),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    causes
}

/// `ValidateNamespaceStatusUpdate`: the phase follows the deletion, whoever
/// writes it (`status.Phase` is Go's field name, as the server prints it).
pub(crate) fn namespace_status(obj: &Value) -> Vec<Cause> {
    let phase = s(obj, "/status/phase");
    let deleting = obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    let (wanted, detail) = if deleting {
        (
            "Terminating",
            "may only be 'Terminating' if `deletionTimestamp` is not empty",
        )
    } else {
        (
            "Active",
            "may only be 'Active' if `deletionTimestamp` is empty",
        )
    };
    if phase == wanted {
        return Vec::new();
    }
    vec![Cause::invalid(
        "status.Phase",
        &Value::String(phase.to_string()),
        detail,
    )]
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn zero_time(v: &Value, key: &str) -> bool {
    v.get(key).is_none_or(Value::is_null)
}

/// `legacyValidateEvent` plus, for events.k8s.io/v1, the strict rules.
/// `obj` is in the core/v1 shape.
pub(crate) fn event(obj: &Value, events_api: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let namespace = s(obj, "/metadata/namespace");
    let involved_namespace = s(obj, "/involvedObject/namespace");
    let mismatch = || {
        Cause::invalid(
            "involvedObject.namespace",
            &Value::String(involved_namespace.into()),
            "does not match event.namespace",
        )
    };
    let controller_field = if events_api {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if zero_time(obj, "eventTime") {
        if involved_namespace.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                causes.push(mismatch());
            }
        } else if namespace != involved_namespace {
            causes.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            causes.push(mismatch());
        }
        let controller = s(obj, "/reportingComponent");
        if controller.is_empty() {
            causes.push(Cause::required(controller_field, ""));
        }
        for msg in is_qualified_name(controller) {
            causes.push(Cause::invalid(
                controller_field,
                &Value::String(controller.into()),
                &msg,
            ));
        }
        let instance = s(obj, "/reportingInstance");
        if instance.is_empty() {
            causes.push(Cause::required("reportingInstance", ""));
        }
        if instance.len() > 128 {
            causes.push(Cause::invalid(
                "reportingInstance",
                &Value::String(String::new()),
                "can have at most 128 characters",
            ));
        }
        let action = s(obj, "/action");
        if action.is_empty() {
            causes.push(Cause::required("action", ""));
        }
        if action.len() > 128 {
            causes.push(Cause::invalid(
                "action",
                &Value::String(String::new()),
                "can have at most 128 characters",
            ));
        }
        let reason = s(obj, "/reason");
        if reason.is_empty() {
            causes.push(Cause::required("reason", ""));
        }
        if reason.len() > 128 {
            causes.push(Cause::invalid(
                "reason",
                &Value::String(String::new()),
                "can have at most 128 characters",
            ));
        }
        if s(obj, "/message").len() > 1024 {
            causes.push(Cause::invalid(
                "message",
                &Value::String(String::new()),
                "can have at most 1024 characters",
            ));
        }
    }
    for msg in is_dns1123_subdomain(namespace) {
        causes.push(Cause::invalid(
            "namespace",
            &Value::String(namespace.into()),
            &msg,
        ));
    }
    if !events_api {
        return causes;
    }
    causes.extend(meta::object_meta(obj, true, name_is_dns_subdomain));
    causes.extend(event_series(obj));
    if zero_time(obj, "eventTime") {
        causes.push(Cause::required("eventTime", ""));
    }
    let event_type = s(obj, "/type");
    if event_type != "Normal" && event_type != "Warning" {
        causes.push(Cause::invalid(
            "type",
            &Value::String(String::new()),
            &format!("has invalid value: {event_type}"),
        ));
    }
    for key in ["firstTimestamp", "lastTimestamp"] {
        if !zero_time(obj, key) {
            causes.push(Cause::invalid(
                key,
                &Value::String(String::new()),
                "needs to be unset",
            ));
        }
    }
    if obj.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
        causes.push(Cause::invalid(
            "count",
            &Value::String(String::new()),
            "needs to be unset",
        ));
    }
    if !s(obj, "/source/component").is_empty() || !s(obj, "/source/host").is_empty() {
        causes.push(Cause::invalid(
            "source",
            &Value::String(String::new()),
            "needs to be unset",
        ));
    }
    causes
}

fn event_series(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(series) = obj.get("series").filter(|s| !s.is_null()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            causes.push(Cause::invalid(
                "series.count",
                &Value::String(String::new()),
                "should be at least 2",
            ));
        }
        if zero_time(series, "lastObservedTime") {
            causes.push(Cause::required("series.lastObservedTime", ""));
        }
    }
    causes
}

/// Event updates: legacy rules; through events.k8s.io most fields are immutable.
pub(crate) fn event_update(obj: &Value, old: &Value, events_api: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let legacy = event(obj, false);
    // The legacy rules name the reporting controller field per API.
    causes.extend(legacy.into_iter().map(|mut c| {
        if events_api && c.field == "reportingComponent" {
            c.field = "reportingController".into();
        }
        c
    }));
    if !events_api {
        return causes;
    }
    causes.extend(meta::object_meta_update(obj, old));
    if obj.get("series") != old.get("series") {
        causes.extend(event_series(obj));
    }
    for key in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        if obj.get(key) != old.get(key) {
            let field = if key == "reportingComponent" {
                "reportingController"
            } else {
                key
            };
            let rendered = match obj.get(key) {
                Some(Value::String(s)) => format!("{s:?}"),
                Some(Value::Number(n)) => n.to_string(),
                _ => "null".to_string(),
            };
            causes.push(go_syntax::immutable(field, &rendered));
        }
    }
    causes
}

pub(crate) fn lease(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(duration) = obj
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64)
        && duration <= 0
    {
        causes.push(Cause::invalid(
            "spec.leaseDurationSeconds",
            &Value::from(duration),
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = obj
        .pointer("/spec/leaseTransitions")
        .and_then(Value::as_i64)
        && transitions < 0
    {
        causes.push(Cause::invalid(
            "spec.leaseTransitions",
            &Value::from(transitions),
            "must be greater than or equal to 0",
        ));
    }
    causes
}
