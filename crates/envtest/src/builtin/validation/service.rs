//! `ValidateService` and `ValidateServiceUpdate`.

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::Value;

use super::go_syntax::{self, invalid_raw};
use super::meta::labels;
use crate::error::Cause;
use crate::name_rules::{
    is_dns1123_label, is_dns1123_subdomain, is_valid_port_name, is_valid_port_num,
};

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn go_service_port(port: &Value) -> String {
    format!(
        "core.ServicePort{{Name:\"\", Protocol:{:?}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
        s(port, "protocol"),
        int(port, "port")
    )
}

pub(crate) fn service(svc: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = svc.get("spec").unwrap_or(&empty);
    let service_type = s(spec, "type");
    let headless = s(spec, "clusterIP") == "None";
    let ports: &[Value] = spec
        .get("ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        causes.push(Cause::required("spec.ports", ""));
    }
    match service_type {
        "LoadBalancer" | "NodePort" => {
            if headless {
                causes.push(Cause::invalid(
                    "spec.clusterIPs[0]",
                    &Value::String("None".into()),
                    &format!("may not be set to 'None' for {service_type} services"),
                ));
            }
            if service_type == "LoadBalancer" {
                for (i, port) in ports.iter().enumerate() {
                    if int(port, "port") == 10250 {
                        causes.push(Cause::invalid(
                            format!("spec.ports[{i}]"),
                            &Value::from(10250),
                            "may not expose port 10250 externally since it is used by kubelet",
                        ));
                    }
                }
            }
        }
        "ExternalName" => {
            if spec
                .get("clusterIPs")
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
                || !s(spec, "clusterIP").is_empty()
            {
                causes.push(Cause::forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if spec
                .get("ipFamilies")
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
            {
                causes.push(Cause::forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if spec.get("ipFamilyPolicy").is_some_and(|v| !v.is_null()) {
                causes.push(Cause::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            let cname = s(spec, "externalName").trim_end_matches('.');
            if cname.is_empty() {
                causes.push(Cause::required("spec.externalName", ""));
            } else {
                for msg in is_dns1123_subdomain(cname) {
                    causes.push(Cause::invalid(
                        "spec.externalName",
                        &Value::String(cname.into()),
                        &msg,
                    ));
                }
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let name = s(port, "name");
        if ports.len() > 1 && name.is_empty() {
            causes.push(Cause::required(format!("{path}.name"), ""));
        } else if !name.is_empty() {
            for msg in is_dns1123_label(name) {
                causes.push(Cause::invalid(
                    format!("{path}.name"),
                    &Value::String(name.into()),
                    &msg,
                ));
            }
            if !names.insert(name.to_string()) {
                causes.push(Cause::duplicate(
                    format!("{path}.name"),
                    &Value::String(name.into()),
                ));
            }
        }
        let number = int(port, "port");
        for msg in is_valid_port_num(number) {
            causes.push(Cause::invalid(
                format!("{path}.port"),
                &Value::from(number),
                &msg,
            ));
        }
        match s(port, "protocol") {
            "TCP" | "UDP" | "SCTP" => {}
            "" => causes.push(Cause::required(format!("{path}.protocol"), "")),
            other => causes.push(Cause::not_supported(
                format!("{path}.protocol"),
                &Value::String(other.into()),
                &["SCTP", "TCP", "UDP"],
            )),
        }
        match port.get("targetPort") {
            Some(Value::String(target)) => {
                for msg in is_valid_port_name(target) {
                    causes.push(Cause::invalid(
                        format!("{path}.targetPort"),
                        &Value::String(target.clone()),
                        &msg,
                    ));
                }
            }
            other => {
                let target = other.and_then(Value::as_i64).unwrap_or(0);
                for msg in is_valid_port_num(target) {
                    causes.push(Cause::invalid(
                        format!("{path}.targetPort"),
                        &Value::from(target),
                        &msg,
                    ));
                }
            }
        }
    }
    causes.extend(labels(spec.get("selector"), "spec.selector"));
    match s(spec, "sessionAffinity") {
        "" => causes.push(Cause::required("spec.sessionAffinity", "")),
        "ClientIP" => {
            let timeout = spec
                .pointer("/sessionAffinityConfig/clientIP/timeoutSeconds")
                .and_then(Value::as_i64);
            match timeout {
                None => causes.push(Cause::required(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    "",
                )),
                Some(t) if !(1..=86400).contains(&t) => causes.push(Cause::invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    &Value::from(t),
                    "must be greater than 0 and less than 86400",
                )),
                _ => {}
            }
        }
        "None" => {
            if spec
                .get("sessionAffinityConfig")
                .is_some_and(|c| !c.is_null())
            {
                causes.push(Cause::forbidden(
                    "spec.sessionAffinityConfig",
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => causes.push(Cause::not_supported(
            "spec.sessionAffinity",
            &Value::String(other.into()),
            &["ClientIP", "None"],
        )),
    }
    cluster_ips(spec, &mut causes);
    for (i, ip) in spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let ip = ip.as_str().unwrap_or("");
        if ip.parse::<IpAddr>().is_err() {
            causes.push(Cause::invalid(
                format!("spec.externalIPs[{i}]"),
                &Value::String(ip.into()),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    match service_type {
        "" => causes.push(Cause::required("spec.type", "")),
        "ClusterIP" | "ExternalName" | "LoadBalancer" | "NodePort" => {}
        other => causes.push(Cause::not_supported(
            "spec.type",
            &Value::String(other.into()),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        )),
    }
    if service_type == "ClusterIP" {
        for (i, port) in ports.iter().enumerate() {
            if int(port, "nodePort") != 0 {
                causes.push(Cause::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let node_port = int(port, "nodePort");
        if node_port == 0 {
            continue;
        }
        if !node_ports.insert((s(port, "protocol").to_string(), node_port)) {
            causes.push(Cause::duplicate(
                format!("spec.ports[{i}].nodePort"),
                &Value::from(node_port),
            ));
        }
    }
    let mut seen = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        if !seen.insert((s(port, "protocol").to_string(), int(port, "port"))) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                format!("spec.ports[{i}]"),
                format!("Duplicate value: {}", go_service_port(port)),
            ));
        }
    }
    if let Some(policy) = spec.get("externalTrafficPolicy").and_then(Value::as_str)
        && !policy.is_empty()
        && !matches!(policy, "Cluster" | "Local")
    {
        causes.push(Cause::not_supported(
            "spec.externalTrafficPolicy",
            &Value::String(policy.into()),
            &["Cluster", "Local"],
        ));
    }
    if let Some(policy) = spec.get("internalTrafficPolicy").and_then(Value::as_str)
        && !matches!(policy, "Cluster" | "Local")
    {
        causes.push(Cause::not_supported(
            "spec.internalTrafficPolicy",
            &Value::String(policy.into()),
            &["Cluster", "Local"],
        ));
    }
    causes
}

fn cluster_ips(spec: &Value, causes: &mut Vec<Cause>) {
    let cluster_ip = s(spec, "clusterIP");
    let cluster_ips = go_syntax::strings(spec.get("clusterIPs")).unwrap_or_default();
    if !cluster_ip.is_empty() && !cluster_ips.is_empty() && cluster_ips[0] != cluster_ip {
        causes.push(invalid_raw(
            "spec.clusterIPs",
            &go_syntax::string_slice(Some(&cluster_ips)),
            "first value must match `clusterIP`",
        ));
    }
    for (i, ip) in cluster_ips.iter().enumerate() {
        if ip != "None" && ip.parse::<IpAddr>().is_err() {
            causes.push(Cause::invalid(
                format!("spec.clusterIPs[{i}]"),
                &Value::String(ip.clone()),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str)
        && !matches!(
            policy,
            "SingleStack" | "PreferDualStack" | "RequireDualStack"
        )
    {
        causes.push(Cause::not_supported(
            "spec.ipFamilyPolicy",
            &Value::String(policy.into()),
            &["PreferDualStack", "RequireDualStack", "SingleStack"],
        ));
    }
    for (i, family) in go_syntax::strings(spec.get("ipFamilies"))
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if !matches!(family.as_str(), "IPv4" | "IPv6") {
            causes.push(Cause::not_supported(
                format!("spec.ipFamilies[{i}]"),
                &Value::String(family.clone()),
                &["IPv4", "IPv6"],
            ));
        }
    }
}

/// Allocated cluster IPs may not change once set.
pub(crate) fn service_update(svc: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = service(svc);
    let empty = Value::Null;
    let spec = svc.get("spec").unwrap_or(&empty);
    let old_spec = old.get("spec").unwrap_or(&empty);
    let needs_ip = |spec: &Value| s(spec, "type") != "ExternalName";
    if needs_ip(spec) && needs_ip(old_spec) {
        let old_ips = go_syntax::strings(old_spec.get("clusterIPs")).unwrap_or_default();
        let new_ips = go_syntax::strings(spec.get("clusterIPs")).unwrap_or_default();
        if !old_ips.is_empty() && new_ips.first() != old_ips.first() {
            causes.push(invalid_raw(
                "spec.clusterIPs[0]",
                &go_syntax::string_slice(Some(&new_ips)),
                "may not change once set",
            ));
        }
    }
    causes
}
