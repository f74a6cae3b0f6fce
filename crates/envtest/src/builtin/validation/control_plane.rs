//! Validation of the API Priority and Fairness kinds, FlowSchemas and
//! PriorityLevelConfigurations, with kube-apiserver v1.32's messages.

use serde_json::Value;

use super::go_syntax::invalid_raw;
use crate::error::Cause;
use crate::name_rules::{is_dns1123_label, is_dns1123_subdomain};

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(obj: &Value, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Value::as_i64)
}

fn present(obj: &Value, pointer: &str) -> bool {
    obj.pointer(pointer).is_some_and(|v| !v.is_null())
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A list that must be non-empty, and hold `*` only alone.
fn wildcard_list(rule: &Value, key: &str, path: &str, required: &str, what: &str) -> Vec<Cause> {
    let items = strings(rule.get(key));
    let field = format!("{path}.{key}");
    if items.is_empty() {
        return vec![Cause::required(field, required)];
    }
    if items.len() > 1 && items.contains(&"*") {
        return vec![invalid_raw(
            field,
            &crate::gofmt::typed_slice("[]string", &items),
            &format!("if '*' is present, must not specify other {what}"),
        )];
    }
    Vec::new()
}

fn verbs(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = wildcard_list(
        rule,
        "verbs",
        path,
        "verbs must contain at least one value",
        "verbs",
    );
    let items = strings(rule.get("verbs"));
    if causes.is_empty() && !items.contains(&"*") && items.iter().any(|v| !VERBS.contains(v)) {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            format!("{path}.verbs"),
            format!(
                "Unsupported value: {}: supported values: {}",
                crate::gofmt::typed_slice("[]string", &items),
                VERBS
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    causes
}

fn resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = verbs(rule, path);
    causes.extend(wildcard_list(
        rule,
        "apiGroups",
        path,
        "resource rules must supply at least one api group",
        "api groups",
    ));
    causes.extend(wildcard_list(
        rule,
        "resources",
        path,
        "resource rules must supply at least one resource",
        "resources",
    ));
    let namespaces = strings(rule.get("namespaces"));
    let cluster_scope = rule.get("clusterScope") == Some(&Value::Bool(true));
    if namespaces.is_empty() && !cluster_scope {
        causes.push(Cause::required(
            format!("{path}.namespaces"),
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.contains(&"*") {
        if namespaces.len() > 1 {
            causes.push(invalid_raw(
                format!("{path}.namespaces"),
                &crate::gofmt::typed_slice("[]string", &namespaces),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for error in is_dns1123_label(ns) {
                causes.push(Cause::invalid(
                    format!("{path}.namespaces[{i}]"),
                    &Value::String((*ns).into()),
                    &format!("each member of this list must be '*' or a DNS-1123 label; {error}"),
                ));
            }
        }
    }
    causes
}

fn url_path(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return Some("must start with slash");
    }
    if url.contains(' ') {
        return Some("must not contain white-space");
    }
    if url.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = url.matches('*').count();
    if stars > 1 || (stars == 1 && !url.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

fn non_resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = verbs(rule, path);
    let urls = strings(rule.get("nonResourceURLs"));
    let listed = wildcard_list(
        rule,
        "nonResourceURLs",
        path,
        "nonResourceURLs must contain at least one value",
        "non-resource URLs",
    );
    if !listed.is_empty() || urls.contains(&"*") {
        causes.extend(listed);
        return causes;
    }
    for (i, url) in urls.iter().enumerate() {
        if let Some(error) = url_path(url) {
            causes.push(Cause::invalid(
                format!("{path}.nonResourceURLs[{i}]"),
                &Value::String((*url).into()),
                error,
            ));
        }
    }
    causes
}

fn subject(s: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kinds = [
        ("ServiceAccount", "serviceAccount"),
        ("User", "user"),
        ("Group", "group"),
    ];
    let kind = text(s, "/kind");
    let Some((_, member)) = kinds.iter().find(|(k, _)| *k == kind) else {
        causes.push(Cause::not_supported(
            format!("{path}.kind"),
            &Value::String(kind.into()),
            &["Group", "ServiceAccount", "User"],
        ));
        return causes;
    };
    match s.get(*member).filter(|m| !m.is_null()) {
        None => causes.push(Cause::required(
            format!("{path}.{member}"),
            &format!("{member} is required when subject kind is '{kind}'"),
        )),
        Some(m) => {
            if text(m, "/name").is_empty() {
                causes.push(Cause::required(format!("{path}.{member}.name"), ""));
            }
            if kind == "ServiceAccount" && text(m, "/namespace").is_empty() {
                causes.push(Cause::required(
                    format!("{path}.serviceAccount.namespace"),
                    "must specify namespace for service account",
                ));
            }
        }
    }
    for (other_kind, other) in kinds {
        if other_kind != kind && present(s, &format!("/{other}")) {
            causes.push(Cause::forbidden(
                format!("{path}.{other}"),
                &format!("{other} is forbidden when subject kind is not '{other_kind}'"),
            ));
        }
    }
    causes
}

pub(super) fn flow_schema(obj: &Value, mandatory_spec: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = crate::meta::name(obj);
    let precedence = int(obj, "/spec/matchingPrecedence").unwrap_or(0);
    let field = "spec.matchingPrecedence";
    if precedence <= 0 {
        causes.push(Cause::invalid(
            field,
            &Value::from(precedence),
            "must be a positive value",
        ));
    }
    if precedence > 10000 {
        causes.push(Cause::invalid(
            field,
            &Value::from(precedence),
            "must not be greater than 10000",
        ));
    }
    if precedence == 1 && name != "exempt" {
        causes.push(Cause::invalid(
            field,
            &Value::from(precedence),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    let method = text(obj, "/spec/distinguisherMethod/type");
    if present(obj, "/spec/distinguisherMethod") && !matches!(method, "ByNamespace" | "ByUser") {
        causes.push(Cause::not_supported(
            "spec.distinguisherMethod.type",
            &Value::String(method.into()),
            &["ByNamespace", "ByUser"],
        ));
    }
    let level = text(obj, "/spec/priorityLevelConfiguration/name");
    if level.is_empty() {
        causes.push(Cause::required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        ));
    } else {
        for error in is_dns1123_subdomain(level) {
            causes.push(Cause::invalid(
                "spec.priorityLevelConfiguration.name",
                &Value::String(level.into()),
                &error,
            ));
        }
    }
    let rules = obj.pointer("/spec/rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let path = format!("spec.rules[{i}]");
        let subjects = rule.get("subjects").and_then(Value::as_array);
        match subjects.filter(|s| !s.is_empty()) {
            None => causes.push(Cause::required(
                format!("{path}.subjects"),
                "subjects must contain at least one value",
            )),
            Some(subjects) => {
                for (j, s) in subjects.iter().enumerate() {
                    causes.extend(subject(s, &format!("{path}.subjects[{j}]")));
                }
            }
        }
        let resource_rules = rule.get("resourceRules").and_then(Value::as_array);
        let non_resource_rules = rule.get("nonResourceRules").and_then(Value::as_array);
        if resource_rules.is_none_or(Vec::is_empty) && non_resource_rules.is_none_or(Vec::is_empty)
        {
            causes.push(Cause::required(
                path.clone(),
                "at least one of resourceRules and nonResourceRules has to be non-empty",
            ));
        }
        for (j, r) in resource_rules.into_iter().flatten().enumerate() {
            causes.extend(resource_rule(r, &format!("{path}.resourceRules[{j}]")));
        }
        for (j, r) in non_resource_rules.into_iter().flatten().enumerate() {
            causes.extend(non_resource_rule(
                r,
                &format!("{path}.nonResourceRules[{j}]"),
            ));
        }
    }
    if let Some(fixed) = mandatory_spec
        && obj.get("spec") != Some(fixed)
    {
        causes.push(invalid_raw(
            "spec",
            "flowcontrol.FlowSchemaSpec{...}",
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    causes.extend(condition_types(obj));
    causes
}

/// Status conditions need a type, each type once.
fn condition_types(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut seen = Vec::new();
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let kind = text(c, "/type");
        if seen.contains(&kind) {
            causes.push(Cause::duplicate(
                format!("status.conditions[{i}].type"),
                &Value::String(kind.into()),
            ));
        }
        seen.push(kind);
        if kind.is_empty() {
            causes.push(Cause::required(
                format!("status.conditions[{i}].type"),
                "must not be empty",
            ));
        }
    }
    causes
}

fn percent(obj: &Value, pointer: &str, field: &str) -> Option<Cause> {
    let value = int(obj, pointer)?;
    (!(0..=100).contains(&value)).then(|| {
        Cause::invalid(
            field,
            &Value::from(value),
            "must be between 0 and 100, inclusive",
        )
    })
}

fn non_negative(obj: &Value, pointer: &str, field: &str) -> Option<Cause> {
    let value = int(obj, pointer)?;
    (value < 0)
        .then(|| Cause::invalid(field, &Value::from(value), "must be a non-negative integer"))
}

fn queuing(q: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let base = "spec.limited.limitResponse.queuing";
    let (limit, queues, hand) = (
        int(q, "/queueLengthLimit").unwrap_or(0),
        int(q, "/queues").unwrap_or(0),
        int(q, "/handSize").unwrap_or(0),
    );
    if limit <= 0 {
        causes.push(Cause::invalid(
            format!("{base}.queueLengthLimit"),
            &Value::from(limit),
            "must be positive",
        ));
    }
    if queues <= 0 {
        causes.push(Cause::invalid(
            format!("{base}.queues"),
            &Value::from(queues),
            "must be positive",
        ));
    } else if queues > 10_000_000 {
        causes.push(Cause::invalid(
            format!("{base}.queues"),
            &Value::from(queues),
            "must not be greater than 10000000",
        ));
    }
    let hand_field = format!("{base}.handSize");
    if hand <= 0 {
        causes.push(Cause::invalid(
            hand_field,
            &Value::from(hand),
            "must be positive",
        ));
    } else if hand > queues {
        causes.push(Cause::invalid(
            hand_field,
            &Value::from(hand),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if (hand as f64) * (queues as f64).log2() > 60.0 {
        // shufflesharding.RequiredEntropyBits against its 60-bit hash budget.
        causes.push(Cause::invalid(
            hand_field,
            &Value::from(hand),
            &format!("required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"),
        ));
    }
    causes
}

pub(super) fn priority_level(obj: &Value, mandatory_spec: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = crate::meta::name(obj);
    let kind = text(obj, "/spec/type");
    if (name == "exempt") != (kind == "Exempt") {
        causes.push(Cause::invalid(
            "spec.type",
            &Value::String(kind.into()),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if present(obj, "/spec/limited") {
                causes.push(Cause::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            causes.extend(non_negative(
                obj,
                "/spec/exempt/nominalConcurrencyShares",
                "spec.exempt.nominalConcurrencyShares",
            ));
            causes.extend(percent(
                obj,
                "/spec/exempt/lendablePercent",
                "spec.exempt.lendablePercent",
            ));
        }
        "Limited" => {
            if present(obj, "/spec/exempt") {
                causes.push(Cause::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match obj.pointer("/spec/limited").filter(|l| !l.is_null()) {
                None => causes.push(Cause::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(limited) => {
                    causes.extend(non_negative(
                        limited,
                        "/nominalConcurrencyShares",
                        "spec.limited.nominalConcurrencyShares",
                    ));
                    let response = text(limited, "/limitResponse/type");
                    let queue = limited
                        .pointer("/limitResponse/queuing")
                        .filter(|q| !q.is_null());
                    match (response, queue) {
                        ("Reject", Some(_)) => causes.push(Cause::forbidden(
                            "spec.limited.limitResponse.queuing",
                            "must be nil if limited.limitResponse.type is not Limited",
                        )),
                        ("Queue", None) => causes.push(Cause::required(
                            "spec.limited.limitResponse.queuing",
                            "must not be empty if limited.limitResponse.type is Limited",
                        )),
                        ("Queue", Some(q)) => causes.extend(queuing(q)),
                        ("Reject", None) => {}
                        (other, _) => causes.push(Cause::not_supported(
                            "spec.limited.limitResponse.type",
                            &Value::String(other.into()),
                            &["Queue", "Reject"],
                        )),
                    }
                    causes.extend(percent(
                        limited,
                        "/lendablePercent",
                        "spec.limited.lendablePercent",
                    ));
                    if let Some(borrowing) = int(limited, "/borrowingLimitPercent")
                        && borrowing < 0
                    {
                        causes.push(Cause::invalid(
                            "spec.limited.borrowingLimitPercent",
                            &Value::from(borrowing),
                            "if specified, must be a non-negative integer",
                        ));
                    }
                }
            }
        }
        other => causes.push(Cause::not_supported(
            "spec.type",
            &Value::String(other.into()),
            &["Exempt", "Limited"],
        )),
    }
    if let Some(fixed) = mandatory_spec
        && obj.get("spec") != Some(fixed)
    {
        causes.push(invalid_raw(
            "spec",
            "flowcontrol.PriorityLevelConfigurationSpec{...}",
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    causes.extend(condition_types(obj));
    causes
}
