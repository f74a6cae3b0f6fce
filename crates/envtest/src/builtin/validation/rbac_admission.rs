//! RBAC kinds (admission webhook configurations are validated by `crate::admission`).

use serde_json::Value;

use super::go_syntax::{self, invalid_raw};
use super::selector;
use crate::error::Cause;
use crate::name_rules::{is_dns1123_subdomain, is_valid_path_segment};

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
        let urls =
            go_syntax::string_slice(go_syntax::strings(rule.get("nonResourceURLs")).as_deref());
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
