//! RBAC kinds and admission webhook configurations.

use std::collections::HashSet;

use serde_json::Value;

use super::gofmt::{self, invalid_raw};
use super::names::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_path_segment, is_valid_port_num,
};
use super::selector;
use crate::error::Cause;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn len_of(v: &Value, key: &str) -> usize {
    v.get(key).and_then(Value::as_array).map_or(0, Vec::len)
}

fn policy_rule(rule: &Value, namespaced: bool, path: &str, causes: &mut Vec<Cause>) {
    if len_of(rule, "verbs") == 0 {
        causes.push(Cause::required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if len_of(rule, "nonResourceURLs") > 0 {
        let urls = gofmt::string_slice(gofmt::strings(rule.get("nonResourceURLs")).as_deref());
        if namespaced {
            causes.push(invalid_raw(
                format!("{path}.nonResourceURLs"),
                &urls,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if len_of(rule, "apiGroups") > 0
            || len_of(rule, "resources") > 0
            || len_of(rule, "resourceNames") > 0
        {
            causes.push(invalid_raw(
                format!("{path}.nonResourceURLs"),
                &urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if len_of(rule, "apiGroups") == 0 {
        causes.push(Cause::required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if len_of(rule, "resources") == 0 {
        causes.push(Cause::required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// Role (`namespaced`) or ClusterRole.
pub(crate) fn role(obj: &Value, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, rule) in obj
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        policy_rule(rule, namespaced, &format!("rules[{i}]"), &mut causes);
    }
    if let Some(aggregation) = obj.get("aggregationRule").filter(|a| !a.is_null()) {
        let selectors = aggregation
            .get("clusterRoleSelectors")
            .and_then(Value::as_array);
        if selectors.is_none_or(|s| s.is_empty()) {
            causes.push(Cause::required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in selectors.into_iter().flatten().enumerate() {
            causes.extend(selector::validate(
                Some(sel),
                &format!("aggregationRule.clusterRoleSelectors[{i}]"),
            ));
        }
    }
    causes
}

/// RoleBinding (`namespaced`) or ClusterRoleBinding.
pub(crate) fn binding(obj: &Value, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let role_ref = obj.get("roleRef").unwrap_or(&empty);
    let group = s(role_ref, "apiGroup");
    if group != RBAC_GROUP {
        causes.push(Cause::not_supported(
            "roleRef.apiGroup",
            &Value::String(group.into()),
            &[RBAC_GROUP],
        ));
    }
    let kind = s(role_ref, "kind");
    let allowed: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !allowed.contains(&kind) {
        causes.push(Cause::not_supported(
            "roleRef.kind",
            &Value::String(kind.into()),
            allowed,
        ));
    }
    let name = s(role_ref, "name");
    if name.is_empty() {
        causes.push(Cause::required("roleRef.name", ""));
    } else {
        for msg in is_valid_path_segment(name) {
            causes.push(Cause::invalid(
                "roleRef.name",
                &Value::String(name.into()),
                &msg,
            ));
        }
    }
    for (i, subject) in obj
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("subjects[{i}]");
        let name = s(subject, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{path}.name"), ""));
        }
        let group = s(subject, "apiGroup");
        match s(subject, "kind") {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for msg in is_dns1123_subdomain(name) {
                        causes.push(Cause::invalid(
                            format!("{path}.name"),
                            &Value::String(name.into()),
                            &msg,
                        ));
                    }
                }
                if !group.is_empty() {
                    causes.push(Cause::not_supported(
                        format!("{path}.apiGroup"),
                        &Value::String(group.into()),
                        &[""],
                    ));
                }
                if !namespaced && s(subject, "namespace").is_empty() {
                    causes.push(Cause::required(format!("{path}.namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != RBAC_GROUP {
                    causes.push(Cause::not_supported(
                        format!("{path}.apiGroup"),
                        &Value::String(group.into()),
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => causes.push(Cause::not_supported(
                format!("{path}.kind"),
                &Value::String(other.into()),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    causes
}

/// The role a binding refers to cannot change.
pub(crate) fn binding_update(obj: &Value, old: &Value, namespaced: bool) -> Vec<Cause> {
    let mut causes = binding(obj, namespaced);
    if obj.get("roleRef") != old.get("roleRef") {
        let empty = Value::Null;
        let role_ref = obj.get("roleRef").unwrap_or(&empty);
        causes.push(invalid_raw(
            "roleRef",
            &format!(
                "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                s(role_ref, "apiGroup"),
                s(role_ref, "kind"),
                s(role_ref, "name")
            ),
            "cannot change roleRef",
        ));
    }
    causes
}

fn fully_qualified_name(name: &str, path: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(Cause::required(path, ""));
        return;
    }
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        causes.push(Cause::invalid(
            path,
            &Value::String(name.into()),
            &errs.join(","),
        ));
        return;
    }
    if name.split('.').count() < 3 {
        causes.push(Cause::invalid(
            path,
            &Value::String(name.into()),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

fn star_list(rule: &Value, key: &str, what: &str, path: &str, causes: &mut Vec<Cause>) {
    let items = gofmt::strings(rule.get(key)).unwrap_or_default();
    if items.is_empty() {
        causes.push(Cause::required(format!("{path}.{key}"), ""));
    }
    if items.len() > 1 && items.iter().any(|i| i == "*") {
        causes.push(invalid_raw(
            format!("{path}.{key}"),
            &gofmt::string_slice(Some(&items)),
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn rule_with_operations(rule: &Value, path: &str, causes: &mut Vec<Cause>) {
    let operations = gofmt::strings(rule.get("operations")).unwrap_or_default();
    if operations.is_empty() {
        causes.push(Cause::required(format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && operations.iter().any(|o| o == "*") {
        causes.push(invalid_raw(
            format!("{path}.operations"),
            &gofmt::string_slice(Some(&operations)),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !matches!(
            op.as_str(),
            "*" | "CREATE" | "UPDATE" | "DELETE" | "CONNECT"
        ) {
            causes.push(Cause::not_supported(
                format!("{path}.operations[{i}]"),
                &Value::String(op.clone()),
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    star_list(rule, "apiGroups", "API groups", path, causes);
    star_list(rule, "apiVersions", "API versions", path, causes);
    let resources = gofmt::strings(rule.get("resources")).unwrap_or_default();
    if resources.is_empty() {
        causes.push(Cause::required(format!("{path}.resources"), ""));
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !matches!(scope, "*" | "Cluster" | "Namespaced")
    {
        causes.push(Cause::not_supported(
            format!("{path}.scope"),
            &Value::String(scope.into()),
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

fn client_config(config: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let empty = Value::Null;
    let config = config.unwrap_or(&empty);
    let url = config.get("url").and_then(Value::as_str);
    let service = config.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => {
            let field = format!("{path}.url");
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            if scheme != "https" {
                causes.push(Cause::invalid(
                    field.clone(),
                    &Value::String(scheme.into()),
                    "'https' is the only allowed URL scheme",
                ));
            }
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            let host = authority.rsplit('@').next().unwrap_or("");
            if host.is_empty() {
                causes.push(Cause::invalid(
                    field.clone(),
                    &Value::String(String::new()),
                    "host must be specified",
                ));
            }
            if authority.contains('@') {
                causes.push(Cause::invalid(
                    field.clone(),
                    &Value::String(url.into()),
                    "user information is not permitted in the URL",
                ));
            }
            if url.contains('#') {
                causes.push(Cause::invalid(
                    field.clone(),
                    &Value::String(url.into()),
                    "fragments are not permitted in the URL",
                ));
            }
            if url.contains('?') {
                causes.push(Cause::invalid(
                    field,
                    &Value::String(url.into()),
                    "query parameters are not permitted in the URL",
                ));
            }
        }
        (None, Some(service)) => {
            let field = format!("{path}.service");
            if s(service, "name").is_empty() {
                causes.push(Cause::required(
                    format!("{field}.name"),
                    "service name is required",
                ));
            }
            if s(service, "namespace").is_empty() {
                causes.push(Cause::required(
                    format!("{field}.namespace"),
                    "service namespace is required",
                ));
            }
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
            let errs = is_valid_port_num(port);
            if !errs.is_empty() {
                causes.push(Cause::invalid(
                    format!("{field}.port"),
                    &Value::from(port),
                    &format!("port is not valid: {}", errs.join(", ")),
                ));
            }
            if let Some(url_path) = service.get("path").and_then(Value::as_str)
                && !url_path.is_empty()
                && url_path != "/"
            {
                webhook_path(url_path, &format!("{field}.path"), causes);
            }
        }
        _ => causes.push(Cause::required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

fn webhook_path(url_path: &str, field: &str, causes: &mut Vec<Cause>) {
    let value = Value::String(url_path.into());
    if url_path == "//" {
        causes.push(Cause::invalid(field, &value, "segment[0] may not be empty"));
        return;
    }
    if !url_path.starts_with('/') {
        causes.push(Cause::invalid(field, &value, "must start with a '/'"));
    }
    let trimmed = url_path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            causes.push(Cause::invalid(
                field,
                &value,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            causes.push(Cause::invalid(
                field,
                &value,
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

fn review_versions(webhook: &Value, path: &str, causes: &mut Vec<Cause>) {
    let field = format!("{path}.admissionReviewVersions");
    let versions = gofmt::strings(webhook.get("admissionReviewVersions")).unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::required(field, "must specify one of v1, v1beta1"));
        return;
    }
    let mut seen = HashSet::new();
    let mut accepted = false;
    for (i, version) in versions.iter().enumerate() {
        if !seen.insert(version.clone()) {
            causes.push(Cause::invalid(
                format!("{field}[{i}]"),
                &Value::String(version.clone()),
                "duplicate version",
            ));
            continue;
        }
        for msg in is_dns1035_label(version) {
            causes.push(Cause::invalid(
                format!("{field}[{i}]"),
                &Value::String(version.clone()),
                &msg,
            ));
        }
        accepted |= matches!(version.as_str(), "v1" | "v1beta1");
    }
    if !accepted {
        causes.push(invalid_raw(
            field,
            &gofmt::string_slice(Some(&versions)),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// Mutating (`mutating`) or validating webhook configurations.
pub(crate) fn webhook_configuration(obj: &Value, mutating: bool, update: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut names = HashSet::new();
    for (i, webhook) in obj
        .get("webhooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("webhooks[{i}]");
        let name = s(webhook, "name");
        fully_qualified_name(name, &format!("{path}.name"), &mut causes);
        for (j, rule) in webhook
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            rule_with_operations(rule, &format!("{path}.rules[{j}]"), &mut causes);
        }
        if let Some(policy) = webhook.get("failurePolicy").and_then(Value::as_str)
            && !matches!(policy, "Fail" | "Ignore")
        {
            causes.push(Cause::not_supported(
                format!("{path}.failurePolicy"),
                &Value::String(policy.into()),
                &["Fail", "Ignore"],
            ));
        }
        if let Some(policy) = webhook.get("matchPolicy").and_then(Value::as_str)
            && !matches!(policy, "Equivalent" | "Exact")
        {
            causes.push(Cause::not_supported(
                format!("{path}.matchPolicy"),
                &Value::String(policy.into()),
                &["Equivalent", "Exact"],
            ));
        }
        match webhook.get("sideEffects").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required(
                format!("{path}.sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some("None" | "NoneOnDryRun") => {}
            Some(other) if update && matches!(other, "Some" | "Unknown") => {}
            Some(other) => causes.push(Cause::not_supported(
                format!("{path}.sideEffects"),
                &Value::String(other.into()),
                &["None", "NoneOnDryRun"],
            )),
        }
        if let Some(timeout) = webhook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&timeout)
        {
            causes.push(Cause::invalid(
                format!("{path}.timeoutSeconds"),
                &Value::from(timeout),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        causes.extend(selector::validate(
            webhook.get("namespaceSelector"),
            &format!("{path}.namespaceSelector"),
        ));
        causes.extend(selector::validate(
            webhook.get("objectSelector"),
            &format!("{path}.objectSelector"),
        ));
        if mutating
            && let Some(policy) = webhook.get("reinvocationPolicy").and_then(Value::as_str)
            && !matches!(policy, "Never" | "IfNeeded")
        {
            causes.push(Cause::not_supported(
                format!("{path}.reinvocationPolicy"),
                &Value::String(policy.into()),
                &["IfNeeded", "Never"],
            ));
        }
        client_config(
            webhook.get("clientConfig"),
            &format!("{path}.clientConfig"),
            &mut causes,
        );
        review_versions(webhook, &path, &mut causes);
        if !name.is_empty() && !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(
                format!("{path}.name"),
                &Value::String(name.into()),
            ));
        }
    }
    causes
}
