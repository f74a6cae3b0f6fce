//! The parts of `ValidatePodSpec` beyond containers and volumes: the pod
//! security context, affinity, DNS configuration, readiness gates,
//! topology spread constraints and host aliases (v1.32's rules and texts).

use serde_json::Value;

use super::fields::{list, present, s};
use super::selector;
use crate::error::Cause;
use crate::name_rules::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};

const NOT_POSITIVE: &str = "must be greater than zero";

fn invalid_str(field: impl Into<String>, value: &str, detail: &str) -> Cause {
    Cause::invalid(field, &Value::String(value.to_string()), detail)
}

/// `ValidateLabelName`: a qualified name.
fn label_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    for msg in is_qualified_name(name) {
        causes.push(invalid_str(field, name, &msg));
    }
}

/// `validatePodSpecSecurityContext` (the ranges, the process namespace and
/// the seccomp profile).
pub(super) fn security_context(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(sc) = spec.get("securityContext").filter(|v| v.is_object()) else {
        return;
    };
    let path = format!("{path}.securityContext");
    const RANGE: &str = "must be between 0 and 2147483647, inclusive";
    let in_range = |n: i64| (0..=i64::from(i32::MAX)).contains(&n);
    for key in ["fsGroup", "runAsUser", "runAsGroup"] {
        if let Some(n) = sc.get(key).and_then(Value::as_i64)
            && !in_range(n)
        {
            causes.push(Cause::invalid(
                format!("{path}.{key}"),
                &Value::from(n),
                RANGE,
            ));
        }
    }
    for (i, gid) in list(sc, "supplementalGroups").iter().enumerate() {
        if let Some(n) = gid.as_i64()
            && !in_range(n)
        {
            causes.push(Cause::invalid(
                format!("{path}.supplementalGroups[{i}]"),
                &Value::from(n),
                RANGE,
            ));
        }
    }
    if sc.get("shareProcessNamespace").and_then(Value::as_bool) == Some(true)
        && spec.get("hostPID").and_then(Value::as_bool) == Some(true)
    {
        causes.push(Cause::invalid(
            format!("{path}.shareProcessNamespace"),
            &Value::Bool(true),
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    if let Some(profile) = sc.get("seccompProfile").filter(|v| v.is_object()) {
        seccomp_profile(profile, &format!("{path}.seccompProfile"), causes);
    }
}

/// `validateSeccompProfileField`.
pub(super) fn seccomp_profile(profile: &Value, path: &str, causes: &mut Vec<Cause>) {
    let kind = s(profile, "type");
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => causes.push(Cause::required(
            format!("{path}.type"),
            "type is required when seccompProfile is set",
        )),
        other => causes.push(Cause::not_supported(
            format!("{path}.type"),
            &Value::String(other.into()),
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let localhost = profile.get("localhostProfile").and_then(Value::as_str);
    if kind == "Localhost" && localhost.is_none() {
        causes.push(Cause::required(
            format!("{path}.localhostProfile"),
            "must be set when seccomp type is Localhost",
        ));
    }
}

/// `validateAffinity`.
pub(super) fn affinity(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(affinity) = spec.get("affinity").filter(|v| v.is_object()) else {
        return;
    };
    let path = format!("{path}.affinity");
    if let Some(node) = affinity.get("nodeAffinity").filter(|v| v.is_object()) {
        let node_path = format!("{path}.nodeAffinity");
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        if let Some(selector) = node.get(required).filter(|v| v.is_object()) {
            node_selector(selector, &format!("{node_path}.{required}"), causes);
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in list(node, preferred).iter().enumerate() {
            let term_path = format!("{node_path}.{preferred}[{i}]");
            weight(term, &term_path, causes);
            // Invalid label values are allowed in preferences.
            let empty = Value::Null;
            let preference = term.get("preference").unwrap_or(&empty);
            node_selector_term(preference, true, &format!("{term_path}.preference"), causes);
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        let Some(pod) = affinity.get(key).filter(|v| v.is_object()) else {
            continue;
        };
        let pod_path = format!("{path}.{key}");
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in list(pod, required).iter().enumerate() {
            pod_affinity_term(term, &format!("{pod_path}.{required}[{i}]"), causes);
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in list(pod, preferred).iter().enumerate() {
            let term_path = format!("{pod_path}.{preferred}[{i}]");
            weight(term, &term_path, causes);
            let empty = Value::Null;
            pod_affinity_term(
                term.get("podAffinityTerm").unwrap_or(&empty),
                &format!("{term_path}.podAffinityTerm"),
                causes,
            );
        }
    }
}

fn weight(term: &Value, path: &str, causes: &mut Vec<Cause>) {
    let weight = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=100).contains(&weight) {
        causes.push(Cause::invalid(
            format!("{path}.weight"),
            &Value::from(weight),
            "must be in the range 1-100",
        ));
    }
}

/// `ValidateNodeSelector` (invalid label values refused).
pub(super) fn node_selector(selector: &Value, path: &str, causes: &mut Vec<Cause>) {
    let terms_path = format!("{path}.nodeSelectorTerms");
    let terms = list(selector, "nodeSelectorTerms");
    if terms.is_empty() {
        causes.push(Cause::required(
            terms_path,
            "must have at least one node selector term",
        ));
        return;
    }
    for (i, term) in terms.iter().enumerate() {
        node_selector_term(term, false, &format!("{terms_path}[{i}]"), causes);
    }
}

/// `ValidateNodeSelectorTerm`.
fn node_selector_term(
    term: &Value,
    allow_invalid_values: bool,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    for (j, req) in list(term, "matchExpressions").iter().enumerate() {
        let req_path = format!("{path}.matchExpressions[{j}]");
        let values = list(req, "values");
        match s(req, "operator") {
            "In" | "NotIn" if values.is_empty() => causes.push(Cause::required(
                format!("{req_path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause::forbidden(
                format!("{req_path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Gt" | "Lt" if values.len() != 1 => causes.push(Cause::required(
                format!("{req_path}.values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => causes.push(invalid_str(
                format!("{req_path}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        label_name(s(req, "key"), &format!("{req_path}.key"), causes);
        if !allow_invalid_values {
            for (vi, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for msg in is_valid_label_value(value) {
                    causes.push(invalid_str(format!("{req_path}.values[{vi}]"), value, &msg));
                }
            }
        }
    }
    for (j, req) in list(term, "matchFields").iter().enumerate() {
        let req_path = format!("{path}.matchFields[{j}]");
        let values = list(req, "values");
        match s(req, "operator") {
            "In" | "NotIn" => {
                if values.len() != 1 {
                    causes.push(Cause::required(
                        format!("{req_path}.values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    ));
                }
            }
            other => causes.push(invalid_str(
                format!("{req_path}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = s(req, "key");
        if key != "metadata.name" {
            causes.push(invalid_str(
                format!("{req_path}.key"),
                key,
                "not a valid field selector key",
            ));
        } else {
            for (vi, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for msg in is_dns1123_subdomain(value) {
                    causes.push(invalid_str(format!("{req_path}.values[{vi}]"), value, &msg));
                }
            }
        }
    }
}

/// `validatePodAffinityTerm`.
fn pod_affinity_term(term: &Value, path: &str, causes: &mut Vec<Cause>) {
    for key in ["labelSelector", "namespaceSelector"] {
        causes.extend(selector::validate(term.get(key), &format!("{path}.{key}")));
    }
    for name in list(term, "namespaces") {
        let name = name.as_str().unwrap_or("");
        for msg in is_dns1123_label(name) {
            // Go names the field `namespace`.
            causes.push(invalid_str(format!("{path}.namespace"), name, &msg));
        }
    }
    let topology_key = s(term, "topologyKey");
    if topology_key.is_empty() {
        causes.push(Cause::required(
            format!("{path}.topologyKey"),
            "can not be empty",
        ));
    }
    label_name(topology_key, &format!("{path}.topologyKey"), causes);
}

/// `validatePodDNSConfig`.
pub(super) fn dns_config(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let path = format!("{path}.dnsConfig");
    let config = spec.get("dnsConfig").filter(|v| v.is_object());
    if s(spec, "dnsPolicy") == "None" {
        match config {
            None => {
                causes.push(Cause::required(
                    path,
                    "must provide `dnsConfig` when `dnsPolicy` is None",
                ));
                return;
            }
            Some(c) if list(c, "nameservers").is_empty() => {
                causes.push(Cause::required(
                    format!("{path}.nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                ));
                return;
            }
            Some(_) => {}
        }
    }
    let Some(config) = config else {
        return;
    };
    let nameservers = list(config, "nameservers");
    if nameservers.len() > 3 {
        causes.push(super::go_syntax::invalid_raw(
            format!("{path}.nameservers"),
            &super::go_syntax::string_slice(
                super::go_syntax::strings(config.get("nameservers")).as_deref(),
            ),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        let ns = ns.as_str().unwrap_or("");
        if ns.parse::<std::net::IpAddr>().is_err() {
            causes.push(invalid_str(
                format!("{path}.nameservers[{i}]"),
                ns,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    for (i, search) in list(config, "searches").iter().enumerate() {
        let search = search.as_str().unwrap_or("");
        let trimmed = search.strip_suffix('.').unwrap_or(search);
        for msg in is_dns1123_subdomain(trimmed) {
            causes.push(invalid_str(format!("{path}.searches[{i}]"), trimmed, &msg));
        }
    }
    for (i, option) in list(config, "options").iter().enumerate() {
        if s(option, "name").is_empty() {
            causes.push(Cause::required(
                format!("{path}.options[{i}]"),
                "must not be empty",
            ));
        }
    }
}

/// `validateReadinessGates`.
pub(super) fn readiness_gates(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, gate) in list(spec, "readinessGates").iter().enumerate() {
        label_name(
            s(gate, "conditionType"),
            &format!("{path}.readinessGates[{i}].conditionType"),
            causes,
        );
    }
}

/// `validateTopologySpreadConstraints`.
pub(super) fn topology_spread(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let constraints = list(spec, "topologySpreadConstraints");
    for (i, c) in constraints.iter().enumerate() {
        let c_path = format!("{path}.topologySpreadConstraints[{i}]");
        let max_skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if max_skew <= 0 {
            causes.push(Cause::invalid(
                format!("{c_path}.maxSkew"),
                &Value::from(max_skew),
                NOT_POSITIVE,
            ));
        }
        let key = s(c, "topologyKey");
        if key.is_empty() {
            causes.push(Cause::required(
                format!("{c_path}.topologyKey"),
                "can not be empty",
            ));
        }
        let action = s(c, "whenUnsatisfiable");
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            causes.push(Cause::not_supported(
                format!("{c_path}.whenUnsatisfiable"),
                &Value::String(action.into()),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..]
            .iter()
            .any(|other| s(other, "topologyKey") == key && s(other, "whenUnsatisfiable") == action)
        {
            causes.push(Cause::duplicate(
                format!("{c_path}.{{topologyKey, whenUnsatisfiable}}"),
                &Value::String(format!("{{{key}, {action}}}")),
            ));
        }
        if let Some(min_domains) = c.get("minDomains").and_then(Value::as_i64) {
            if min_domains <= 0 {
                causes.push(Cause::invalid(
                    format!("{c_path}.minDomains"),
                    &Value::from(min_domains),
                    NOT_POSITIVE,
                ));
            }
            if action != "DoNotSchedule" {
                causes.push(Cause::invalid(
                    format!("{c_path}.minDomains"),
                    &Value::from(min_domains),
                    &format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for policy in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if present(c, policy) && !matches!(s(c, policy), "Honor" | "Ignore") {
                causes.push(Cause::not_supported(
                    format!("{c_path}.{policy}"),
                    &Value::String(s(c, policy).into()),
                    &["Honor", "Ignore"],
                ));
            }
        }
        causes.extend(selector::validate(
            c.get("labelSelector"),
            &format!("{c_path}.labelSelector"),
        ));
    }
}

/// `ValidateHostAliases`.
pub(super) fn host_aliases(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, alias) in list(spec, "hostAliases").iter().enumerate() {
        let ip = s(alias, "ip");
        if ip.parse::<std::net::IpAddr>().is_err() {
            causes.push(invalid_str(
                format!("{path}.hostAliases[{i}].ip"),
                ip,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
        for (j, hostname) in list(alias, "hostnames").iter().enumerate() {
            let hostname = hostname.as_str().unwrap_or("");
            for msg in is_dns1123_subdomain(hostname) {
                causes.push(invalid_str(
                    format!("{path}.hostAliases[{i}].hostnames[{j}]"),
                    hostname,
                    &msg,
                ));
            }
        }
    }
}
