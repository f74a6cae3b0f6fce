//! PodDisruptionBudgets (`ValidatePodDisruptionBudgetSpec`) and
//! ResourceQuotas (`ValidateResourceQuota`) as v1.32 validates them.

use serde_json::Value;

use super::go_syntax::{self, invalid_raw};
use super::selector;
use super::workloads::{not_more_than_100_percent, positive_int_or_percent};
use crate::error::Cause;
use crate::name_rules::is_qualified_name;
use crate::quantity;

/// `sets.List(supportedUnhealthyPodEvictionPolicies)`.
const EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

/// `ValidatePodDisruptionBudgetSpec`.
pub(super) fn pod_disruption_budget(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let set = |key: &str| spec.get(key).filter(|v| !v.is_null());
    let (min, max) = (set("minAvailable"), set("maxUnavailable"));
    if min.is_some() && max.is_some() {
        // The spec struct as %#v prints it: its pointers as addresses.
        let rendered = format!(
            "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, UnhealthyPodEvictionPolicy:{}}}",
            go_syntax::pointer("intstr.IntOrString", false),
            go_syntax::pointer("v1.LabelSelector", set("selector").is_none()),
            go_syntax::pointer("intstr.IntOrString", false),
            go_syntax::pointer(
                "policy.UnhealthyPodEvictionPolicyType",
                set("unhealthyPodEvictionPolicy").is_none()
            ),
        );
        causes.push(invalid_raw(
            "spec",
            &rendered,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (value, field) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
        if value.is_some() {
            positive_int_or_percent(value, field, &mut causes);
            not_more_than_100_percent(value, field, &mut causes);
        }
    }
    causes.extend(selector::validate(spec.get("selector"), "spec.selector"));
    if let Some(policy) = set("unhealthyPodEvictionPolicy").and_then(Value::as_str)
        && !EVICTION_POLICIES.contains(&policy)
    {
        causes.push(Cause::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            &Value::String(policy.into()),
            EVICTION_POLICIES,
        ));
    }
    causes
}

/// `standardQuotaResources`.
const QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `integerResources`.
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_quota_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// `IsStandardQuotaResourceName`.
fn is_standard_quota_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name) || is_quota_huge_pages(name)
}

/// `IsStandardResourceName`.
fn is_standard_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name) || name == "storage" || is_quota_huge_pages(name)
}

/// `IsIntegerResourceName`: the counted kinds and extended resources.
fn is_integer_resource(name: &str) -> bool {
    if INTEGER_RESOURCES.contains(&name) {
        return true;
    }
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn invalid_name(field: &str, name: &str, detail: &str) -> Cause {
    Cause::invalid(field, &Value::String(name.into()), detail)
}

/// `ValidateResourceQuotaResourceName` and `ValidateResourceQuantityValue`
/// for every entry of a `hard` or `used` map.
fn quota_map(map: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let mut entries: Vec<_> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in entries {
        let field = format!("{path}[{name}]");
        let qualified = is_qualified_name(name);
        if !qualified.is_empty() {
            for msg in qualified {
                causes.push(invalid_name(&field, name, &msg));
            }
        } else if !name.contains('/') {
            if !is_standard_resource(name) {
                causes.push(invalid_name(
                    &field,
                    name,
                    "must be a standard resource type or fully qualified",
                ));
            } else if !is_standard_quota_resource(name) {
                causes.push(invalid_name(
                    &field,
                    name,
                    "must be a standard resource for quota",
                ));
            }
        }
        let Some(q) = quantity::from_json(value) else {
            continue;
        };
        let shown = Value::String(q.canonical());
        if q.nanos() < 0 {
            causes.push(Cause::invalid(
                field.clone(),
                &shown,
                "must be greater than or equal to 0",
            ));
        }
        if is_integer_resource(name) && q.nanos() % 1_000_000_000 != 0 {
            causes.push(Cause::invalid(field, &shown, "must be an integer"));
        }
    }
}

const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// `IsResourceQuotaScopeValidForResource`.
fn scope_fits(scope: &str, resource: &str) -> bool {
    let counted = resource == "pods";
    let compute = matches!(
        resource,
        "cpu" | "memory" | "limits.cpu" | "limits.memory" | "requests.cpu" | "requests.memory"
    );
    match scope {
        "BestEffort" => counted,
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => counted || compute,
        _ => true,
    }
}

fn go_strings(type_name: &str, items: &[&str]) -> String {
    if items.is_empty() {
        return format!("{type_name}(nil)");
    }
    let quoted: Vec<String> = items.iter().map(|s| crate::gofmt::quote(s)).collect();
    format!("{type_name}{{{}}}", quoted.join(", "))
}

fn conflicting(scopes: &[&str]) -> usize {
    [
        ("BestEffort", "NotBestEffort"),
        ("Terminating", "NotTerminating"),
    ]
    .iter()
    .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
    .count()
}

/// `ValidateResourceQuotaSpec` and `ValidateResourceQuotaStatus`.
pub(super) fn resource_quota(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    quota_map(spec.get("hard"), "spec.hard", &mut causes);
    let mut hard: Vec<&str> = spec
        .get("hard")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .collect();
    hard.sort();
    let scopes: Vec<&str> = spec
        .get("scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let rendered = go_strings("[]core.ResourceQuotaScope", &scopes);
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            causes.push(invalid_raw("spec.scopes", &rendered, "unsupported scope"));
        }
        for resource in &hard {
            if is_standard_quota_resource(resource) && !scope_fits(scope, resource) {
                causes.push(invalid_raw(
                    "spec.scopes",
                    &rendered,
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    for _ in 0..conflicting(&scopes) {
        causes.push(invalid_raw("spec.scopes", &rendered, "conflicting scopes"));
    }
    if let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) {
        scope_selector(selector, &hard, &scopes, &mut causes);
    }
    quota_map(obj.pointer("/status/hard"), "status.hard", &mut causes);
    quota_map(obj.pointer("/status/used"), "status.used", &mut causes);
    causes
}

/// `validateScopedResourceSelectorRequirement`.
fn scope_selector(selector: &Value, hard: &[&str], scopes: &[&str], causes: &mut Vec<Cause>) {
    let path = "spec.scopeSelector.matchExpressions";
    let mut named = Vec::new();
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    let rendered_selector = {
        let items: Vec<String> = expressions
            .into_iter()
            .flatten()
            .map(|req| {
                let text = |key: &str| req.get(key).and_then(Value::as_str).unwrap_or("");
                let values: Vec<&str> = req
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                format!(
                    "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                    crate::gofmt::quote(text("scopeName")),
                    crate::gofmt::quote(text("operator")),
                    go_strings("[]string", &values)
                )
            })
            .collect();
        let list = if items.is_empty() {
            "[]core.ScopedResourceSelectorRequirement(nil)".to_string()
        } else {
            format!(
                "[]core.ScopedResourceSelectorRequirement{{{}}}",
                items.join(", ")
            )
        };
        format!("core.ScopeSelector{{MatchExpressions:{list}}}")
    };
    for req in expressions.into_iter().flatten() {
        let scope = req.get("scopeName").and_then(Value::as_str).unwrap_or("");
        let operator = req.get("operator").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = req
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !SCOPES.contains(&scope) {
            causes.push(invalid_name(
                &format!("{path}.scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        for resource in hard {
            if is_standard_quota_resource(resource) && !scope_fits(scope, resource) {
                causes.push(invalid_raw(
                    path,
                    &rendered_selector,
                    "unsupported scope applied to resource",
                ));
            }
        }
        if matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        ) && operator != "Exists"
        {
            causes.push(invalid_name(
                &format!("{path}.operator"),
                operator,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match operator {
            "In" | "NotIn" if values.is_empty() => causes.push(Cause::required(
                format!("{path}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(invalid_raw(
                format!("{path}.values"),
                &go_strings("[]string", &values),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(invalid_name(
                &format!("{path}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        named.push(scope);
    }
    for _ in 0..conflicting(&named) {
        // Go prints spec.scopes here, not the selector.
        causes.push(invalid_raw(
            path,
            &go_strings("[]core.ResourceQuotaScope", scopes),
            "conflicting scopes",
        ));
    }
}
