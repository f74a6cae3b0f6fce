//! Validation of APIServices: `kube-aggregator`'s rules, with its messages.

use serde_json::Value;

use crate::error::Cause;
use crate::name_rules::{is_dns1035_label, is_dns1123_subdomain, is_valid_port_num};

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(obj: &Value, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Value::as_i64)
}

pub(super) fn apiservice(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let (group, version) = (text(obj, "/spec/group"), text(obj, "/spec/version"));
    let required = format!("{version}.{group}");
    let name = crate::meta::name(obj);
    if !name.is_empty() && name != required {
        causes.push(Cause::invalid(
            "metadata.name",
            &Value::String(name.into()),
            &format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        causes.push(Cause::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for error in is_dns1123_subdomain(group) {
            causes.push(Cause::invalid(
                "spec.group",
                &Value::String(group.into()),
                &error,
            ));
        }
    }
    for error in is_dns1035_label(version) {
        causes.push(Cause::invalid(
            "spec.version",
            &Value::String(version.into()),
            &error,
        ));
    }
    let group_priority = int(obj, "/spec/groupPriorityMinimum").unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        causes.push(Cause::invalid(
            "spec.groupPriorityMinimum",
            &Value::from(group_priority),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int(obj, "/spec/versionPriority").unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        causes.push(Cause::invalid(
            "spec.versionPriority",
            &Value::from(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = text(obj, "/spec/caBundle");
    let insecure = obj.pointer("/spec/insecureSkipTLSVerify") == Some(&Value::Bool(true));
    let Some(service) = obj.pointer("/spec/service").filter(|s| !s.is_null()) else {
        if !ca_bundle.is_empty() {
            // The bundle travels base64-encoded; the message counts its bytes.
            let bytes = ca_bundle.len() / 4 * 3 - ca_bundle.matches('=').count();
            causes.push(Cause::invalid(
                "spec.caBundle",
                &Value::String(format!("{bytes} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            causes.push(Cause::invalid(
                "spec.insecureSkipTLSVerify",
                &Value::Bool(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return causes;
    };
    if text(service, "/namespace").is_empty() {
        causes.push(Cause::required("spec.service.namespace", ""));
    }
    if text(service, "/name").is_empty() {
        causes.push(Cause::required("spec.service.name", ""));
    }
    let port = int(service, "/port").unwrap_or(0);
    let port_errors = is_valid_port_num(port);
    if !port_errors.is_empty() {
        causes.push(Cause::invalid(
            "spec.service.port",
            &Value::from(port),
            &format!("port is not valid: {}", port_errors.join(", ")),
        ));
    }
    if insecure && !ca_bundle.is_empty() {
        causes.push(Cause::invalid(
            "spec.insecureSkipTLSVerify",
            &Value::Bool(true),
            "may not be true if caBundle is present",
        ));
    }
    causes
}
