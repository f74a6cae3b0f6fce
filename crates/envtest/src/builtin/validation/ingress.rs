//! Ingress validation (`ValidateIngressCreate`, `ValidateIngressUpdate` and
//! `ValidateIngressSpec` of kube-apiserver v1.32's networking validation):
//! the rules or default backend an Ingress needs, its hosts, paths,
//! backends, TLS hosts and secret names, and its class name, in the
//! server's order and with its messages.

use serde_json::Value;

use super::go_syntax::invalid_raw;
use crate::error::Cause;
use crate::name_rules::{
    is_dns1123_subdomain, is_valid_path_segment, is_valid_port_name, is_valid_port_num,
    is_wildcard_dns1123_subdomain, name_is_dns_subdomain, name_is_dns1035_label,
};

/// Path sequences an `Exact` or `Prefix` path may not contain, and suffixes
/// it may not end with.
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];

/// What an update may keep from the object it replaces: an invalid TLS
/// secret name, or invalid rules under a wildcard host, that the old object
/// already had (the server stopped accepting them on create only).
#[derive(Default)]
struct Allowances {
    invalid_secret_name: bool,
    invalid_wildcard_host_rule: bool,
}

impl Allowances {
    fn of_old(old: Option<&Value>) -> Self {
        let Some(old) = old else {
            return Self::default();
        };
        let mut secret_names = items(old.pointer("/spec/tls")).map(|tls| text(tls, "secretName"));
        let mut wildcard_rules =
            items(old.pointer("/spec/rules")).filter(|rule| text(rule, "host").contains('*'));
        Self {
            invalid_secret_name: secret_names.any(|name| !tls_secret_name(name).is_empty()),
            invalid_wildcard_host_rule: wildcard_rules.any(|rule| !rule_value(rule, "").is_empty()),
        }
    }
}

/// The spec of an Ingress (`old` on update).
pub(super) fn ingress(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let allow = Allowances::of_old(old);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let rules = spec.get("rules").filter(|rules| !rules.is_null());
    let default_backend = spec.get("defaultBackend").filter(|b| !b.is_null());
    let mut causes = Vec::new();
    if items(rules).next().is_none() && default_backend.is_none() {
        let rendered = if rules.is_some() {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        causes.push(invalid_raw(
            "spec",
            rendered,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        causes.extend(backend_causes(backend, "spec.defaultBackend"));
    }
    for (i, rule) in items(rules).enumerate() {
        causes.extend(rule_causes(rule, &format!("spec.rules[{i}]"), &allow));
    }
    for (i, tls) in items(spec.get("tls")).enumerate() {
        causes.extend(tls_causes(tls, &format!("spec.tls[{i}]"), &allow));
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        for msg in name_is_dns_subdomain(class, false) {
            causes.push(Cause::invalid(
                "spec.ingressClassName",
                &Value::from(class),
                &msg,
            ));
        }
    }
    causes
}

/// The elements of an array field (none when absent or not an array).
fn items(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `netutils.ParseIPSloppy` succeeds: an IPv6 address, or four dotted
/// decimal numbers up to 255 (leading zeros allowed).
fn is_ip(host: &str) -> bool {
    if host.contains(':') {
        return host.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|part| {
            !part.is_empty()
                && part.bytes().all(|b| b.is_ascii_digit())
                && part.parse::<u32>().is_ok_and(|n| n <= 255)
        })
}

/// `validateIngressRules` for one rule.
fn rule_causes(rule: &Value, at: &str, allow: &Allowances) -> Vec<Cause> {
    let mut causes = Vec::new();
    let host = text(rule, "host");
    let mut wildcard = false;
    if !host.is_empty() {
        let field = format!("{at}.host");
        if is_ip(host) {
            causes.push(Cause::invalid(
                field.clone(),
                &Value::from(host),
                "must be a DNS name, not an IP address",
            ));
        }
        let msgs = if host.contains('*') {
            wildcard = true;
            is_wildcard_dns1123_subdomain(host)
        } else {
            is_dns1123_subdomain(host)
        };
        for msg in msgs {
            causes.push(Cause::invalid(field.clone(), &Value::from(host), &msg));
        }
    }
    if !wildcard || !allow.invalid_wildcard_host_rule {
        causes.extend(rule_value(rule, at));
    }
    causes
}

/// `validateIngressRuleValue`: the rule's HTTP paths, when it has them
/// (`at` is the rule's field path; its causes' paths are not read when only
/// their presence matters, as for the old object's rules).
fn rule_value(rule: &Value, at: &str) -> Vec<Cause> {
    let Some(http) = rule.get("http").filter(|http| !http.is_null()) else {
        return Vec::new();
    };
    let at = format!("{at}.http");
    let mut causes = Vec::new();
    let paths: Vec<&Value> = items(http.get("paths")).collect();
    if paths.is_empty() {
        causes.push(Cause::required(format!("{at}.paths"), ""));
    }
    for (i, path) in paths.into_iter().enumerate() {
        causes.extend(http_path(path, &format!("{at}.paths[{i}]")));
    }
    causes
}

/// `validateHTTPIngressPath`.
fn http_path(path: &Value, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let value = text(path, "path");
    let field = format!("{at}.path");
    let invalid = |msg: &str| Cause::invalid(field.clone(), &Value::from(value), msg);
    // Bodies are decoded through the typed model, which gives an absent
    // pathType (what a client that omits it means) the value "".
    match path.get("pathType").and_then(Value::as_str) {
        None | Some("") => {
            return vec![Cause::required(
                format!("{at}.pathType"),
                "pathType must be specified",
            )];
        }
        Some("Exact" | "Prefix") => {
            if !value.starts_with('/') {
                causes.push(invalid("must be an absolute path"));
            }
            if !value.is_empty() {
                for sequence in INVALID_PATH_SEQUENCES {
                    if value.contains(sequence) {
                        causes.push(invalid(&format!("must not contain '{sequence}'")));
                    }
                }
                for suffix in INVALID_PATH_SUFFIXES {
                    if value.ends_with(suffix) {
                        causes.push(invalid(&format!("cannot end with '{suffix}'")));
                    }
                }
            }
        }
        Some("ImplementationSpecific") => {
            if !value.is_empty() && !value.starts_with('/') {
                causes.push(invalid("must be an absolute path"));
            }
        }
        Some(other) => causes.push(Cause::not_supported(
            format!("{at}.pathType"),
            &Value::from(other),
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    let backend = path.get("backend").unwrap_or(&Value::Null);
    causes.extend(backend_causes(backend, &format!("{at}.backend")));
    causes
}

/// `validateIngressBackend`: a service (name and one of port name or
/// number) or a resource, not both.
fn backend_causes(backend: &Value, at: &str) -> Vec<Cause> {
    let resource = backend.get("resource").filter(|r| !r.is_null());
    let service = backend.get("service").filter(|s| !s.is_null());
    match (resource, service) {
        (Some(_), Some(_)) => vec![invalid_raw(
            at,
            "\"\"",
            "cannot set both resource and service backends",
        )],
        (Some(resource), None) => typed_local_object_reference(resource, &format!("{at}.resource")),
        (None, Some(service)) => service_backend(service, at),
        (None, None) => vec![invalid_raw(
            at,
            "\"\"",
            "resource or service backend is required",
        )],
    }
}

fn service_backend(service: &Value, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = text(service, "name");
    let name_field = format!("{at}.service.name");
    if name.is_empty() {
        causes.push(Cause::required(name_field, ""));
    } else {
        for msg in name_is_dns1035_label(name, false) {
            causes.push(Cause::invalid(name_field.clone(), &Value::from(name), &msg));
        }
    }
    let port = service.get("port").unwrap_or(&Value::Null);
    let port_name = text(port, "name");
    let port_number = port.get("number").and_then(Value::as_i64).unwrap_or(0);
    match (port_name.is_empty(), port_number == 0) {
        (false, false) => causes.push(invalid_raw(
            at,
            "\"\"",
            "cannot set both port name & port number",
        )),
        (false, true) => {
            for msg in is_valid_port_name(port_name) {
                causes.push(Cause::invalid(
                    format!("{at}.service.port.name"),
                    &Value::from(port_name),
                    &msg,
                ));
            }
        }
        (true, false) => {
            for msg in is_valid_port_num(port_number) {
                causes.push(Cause::invalid(
                    format!("{at}.service.port.number"),
                    &Value::from(port_number),
                    &msg,
                ));
            }
        }
        (true, true) => causes.push(Cause::required(at, "port name or number is required")),
    }
    causes
}

/// `validateIngressTypedLocalObjectReference`: an API group that is a DNS
/// subdomain, a kind and a name that are path segments.
pub(super) fn typed_local_object_reference(reference: &Value, at: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(group) = reference.get("apiGroup").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(group) {
            causes.push(Cause::invalid(
                format!("{at}.apiGroup"),
                &Value::from(group),
                &msg,
            ));
        }
    }
    for key in ["kind", "name"] {
        let value = text(reference, key);
        let field = format!("{at}.{key}");
        if value.is_empty() {
            causes.push(Cause::required(field, &format!("{key} is required")));
            continue;
        }
        for msg in is_valid_path_segment(value) {
            causes.push(Cause::invalid(field.clone(), &Value::from(value), &msg));
        }
    }
    causes
}

/// `validateIngressTLS` for one entry: its hosts, and its secret name
/// unless the old object already had an invalid one.
fn tls_causes(tls: &Value, at: &str, allow: &Allowances) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, host) in items(tls.get("hosts")).enumerate() {
        let host = host.as_str().unwrap_or("");
        let msgs = if host.contains('*') {
            is_wildcard_dns1123_subdomain(host)
        } else {
            is_dns1123_subdomain(host)
        };
        for msg in msgs {
            causes.push(Cause::invalid(
                format!("{at}.hosts[{i}]"),
                &Value::from(host),
                &msg,
            ));
        }
    }
    if !allow.invalid_secret_name {
        let name = text(tls, "secretName");
        for msg in tls_secret_name(name) {
            causes.push(Cause::invalid(
                format!("{at}.secretName"),
                &Value::from(name),
                &msg,
            ));
        }
    }
    causes
}

/// `validateTLSSecretName`: empty, or a Secret's name.
fn tls_secret_name(name: &str) -> Vec<String> {
    if name.is_empty() {
        return Vec::new();
    }
    name_is_dns_subdomain(name, false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
        ingress(obj, old)
            .iter()
            .map(|cause| format!("{}: {}", cause.field, cause.message))
            .collect()
    }

    fn service(name: &str, port: Value) -> Value {
        json!({"service": {"name": name, "port": port}})
    }

    #[test]
    fn an_ingress_needs_rules_or_a_default_backend() {
        assert_eq!(
            messages(&json!({"spec": {}}), None),
            [
                "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
            ]
        );
        assert_eq!(
            messages(&json!({"spec": {"rules": []}}), None),
            [
                "spec: Invalid value: []networking.IngressRule{}: either `defaultBackend` or `rules` must be specified"
            ]
        );
        let backend = service("web", json!({"number": 80}));
        assert!(messages(&json!({"spec": {"defaultBackend": backend}}), None).is_empty());
    }

    #[test]
    fn backends_name_one_service_port_or_a_resource() {
        let cases = [
            (
                service("web", json!({"name": "http", "number": 80})),
                "spec.defaultBackend: Invalid value: \"\": cannot set both port name & port number",
            ),
            (
                service("web", json!({})),
                "spec.defaultBackend: Required value: port name or number is required",
            ),
            (
                service("9web", json!({"number": 80})),
                "spec.defaultBackend.service.name: Invalid value: \"9web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ),
            (
                service("web", json!({"number": 70000})),
                "spec.defaultBackend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ),
            (
                json!({}),
                "spec.defaultBackend: Invalid value: \"\": resource or service backend is required",
            ),
            (
                json!({"resource": {"kind": "Bucket"}, "service": {"name": "web"}}),
                "spec.defaultBackend: Invalid value: \"\": cannot set both resource and service backends",
            ),
            (
                json!({"resource": {"apiGroup": "Example.com", "kind": "Bucket"}}),
                "spec.defaultBackend.resource.name: Required value: name is required",
            ),
        ];
        for (backend, expected) in cases {
            let found = messages(&json!({"spec": {"defaultBackend": backend}}), None);
            assert!(
                found.iter().any(|m| m == expected),
                "{expected}\n{found:#?}"
            );
        }
    }

    #[test]
    fn hosts_are_dns_names_and_paths_are_clean() {
        let backend = service("web", json!({"number": 80}));
        let obj = json!({"spec": {"rules": [
            {"host": "10.0.0.1", "http": {"paths": [
                {"path": "/a//b", "pathType": "Prefix", "backend": backend},
                {"path": "/a/..", "pathType": "Exact", "backend": backend},
                {"path": "a", "pathType": "ImplementationSpecific", "backend": backend},
            ]}},
            {"host": "*.*.example.com", "http": {"paths": []}},
            {"http": {"paths": [{"path": "/", "backend": backend}]}},
        ]}});
        let found = messages(&obj, None);
        assert_eq!(
            found,
            [
                "spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
                "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'",
                "spec.rules[0].http.paths[1].path: Invalid value: \"/a/..\": cannot end with '/..'",
                "spec.rules[0].http.paths[2].path: Invalid value: \"a\": must be an absolute path",
                "spec.rules[1].host: Invalid value: \"*.*.example.com\": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.rules[1].http.paths: Required value",
                "spec.rules[2].http.paths[0].pathType: Required value: pathType must be specified",
            ]
        );
    }

    #[test]
    fn tls_hosts_and_secret_names_are_checked_unless_already_invalid() {
        let backend = service("web", json!({"number": 80}));
        let obj = json!({"spec": {
            "defaultBackend": backend,
            "tls": [{"hosts": ["*.example.com", "Bad"], "secretName": "Bad_Secret"}],
            "ingressClassName": "nginx",
        }});
        let found = messages(&obj, None);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("spec.tls[0].hosts[1]: Invalid value: \"Bad\""));
        assert!(found[1].starts_with("spec.tls[0].secretName: Invalid value: \"Bad_Secret\""));
        // An update keeps a secret name the old object already had wrong.
        let found = messages(&obj, Some(&obj));
        assert_eq!(found.len(), 1, "{found:#?}");
    }

    #[test]
    fn sloppy_ip_addresses_are_ips() {
        assert!(is_ip("010.0.0.1"));
        assert!(is_ip("::1"));
        assert!(!is_ip("1.2.3"));
        assert!(!is_ip("example.com"));
        assert!(!is_ip("256.0.0.1"));
    }
}
