//! Defaulting and validation of `ValidatingAdmissionPolicy` and
//! `ValidatingAdmissionPolicyBinding` writes, as the
//! `admissionregistration.k8s.io/v1` API does (kube-apiserver's
//! `pkg/apis/admissionregistration/validation`): field paths, messages and
//! order. CEL expressions are compiled with envtest's checks (syntax,
//! undeclared variables, unknown functions); kube-apiserver's type checking
//! and cost limits are not reproduced.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::selector;
use super::webhook_configurations::{invalid_raw, set_default, strings, text, validate_rule};
use crate::admission::policy::evaluate::{Declared, compile};
use crate::error::Cause;
use crate::gofmt::quote;
use crate::name_rules::{
    is_dns1035_label, is_dns1123_subdomain, is_qualified_name, is_valid_path_segment,
    name_is_dns_subdomain,
};
use crate::schema::celvalues::RESERVED_WORDS;

/// Most `auditAnnotations` a policy may have.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// Longest `valueExpression` of an audit annotation.
const MAX_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;

fn default_match_resources(resources: &mut Map<String, Value>) {
    set_default(resources, "matchPolicy", json!("Equivalent"));
    set_default(resources, "namespaceSelector", json!({}));
    set_default(resources, "objectSelector", json!({}));
    for list in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = resources.get_mut(list).and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_default(rule, "scope", json!("*"));
            }
        }
    }
}

/// The v1 defaults of a policy: `failurePolicy: Fail`, and in
/// `matchConstraints` `matchPolicy: Equivalent`, empty selectors and rule
/// `scope: "*"`.
pub(crate) fn default_policy(policy: &mut Value) {
    let Some(spec) = policy.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    set_default(spec, "failurePolicy", json!("Fail"));
    if let Some(constraints) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        default_match_resources(constraints);
    }
}

/// The v1 defaults of a binding: those of its `matchResources`, if any.
pub(crate) fn default_binding(binding: &mut Value) {
    if let Some(resources) = binding
        .pointer_mut("/spec/matchResources")
        .and_then(Value::as_object_mut)
    {
        default_match_resources(resources);
    }
}

fn present<'a>(value: &'a Value, field: &str) -> Option<&'a Value> {
    value.get(field).filter(|v| !v.is_null())
}

fn not_supported(
    causes: &mut Vec<Cause>,
    value: &Value,
    field: &str,
    path: &str,
    supported: &[&str],
) {
    match present(value, field) {
        None => causes.push(Cause::required(format!("{path}.{field}"), "")),
        Some(v) if !v.as_str().is_some_and(|s| supported.contains(&s)) => causes.push(
            Cause::not_supported(format!("{path}.{field}"), v, supported),
        ),
        Some(_) => {}
    }
}

/// Validates a policy (`old` on update), returning the causes of a 422.
pub(crate) fn validate_policy(policy: &Value, old: Option<&Value>) -> Vec<Cause> {
    let empty = json!({});
    let spec = present(policy, "spec").unwrap_or(&empty);
    let name = policy
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut causes = Vec::new();
    not_supported(
        &mut causes,
        spec,
        "failurePolicy",
        "spec",
        &["Fail", "Ignore"],
    );
    let params = present(spec, "paramKind");
    if let Some(kind) = params {
        validate_param_kind(kind, &mut causes);
    }
    match present(spec, "matchConstraints") {
        None => causes.push(Cause::required("spec.matchConstraints", "")),
        Some(constraints) => {
            validate_match_resources(constraints, "spec.matchConstraints", &mut causes);
            let rules = constraints
                .get("resourceRules")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if rules == 0 {
                causes.push(Cause::required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
    // An update that keeps the match conditions does not re-check them.
    let unchanged_conditions =
        old.is_some_and(|o| o.pointer("/spec/matchConditions") == spec.get("matchConditions"));
    if !unchanged_conditions {
        validate_match_conditions(spec.get("matchConditions"), params.is_some(), &mut causes);
    }
    let mut declared_variables: Vec<String> = Vec::new();
    for (i, variable) in items(spec, "variables").enumerate() {
        let path = format!("spec.variables[{i}]");
        let var_name = text(variable, "name").unwrap_or("");
        if var_name.trim().is_empty() {
            causes.push(Cause::required(
                format!("{path}.name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(var_name) {
            causes.push(Cause::invalid(
                format!("{path}.name"),
                &json!(var_name),
                "name is not a valid CEL identifier",
            ));
        }
        let expression = text(variable, "expression").unwrap_or("");
        if expression.trim().is_empty() {
            causes.push(Cause::required(
                format!("{path}.expression"),
                "expression is not specified",
            ));
        } else {
            let declared = Declared {
                params: params.is_some(),
                authorizer: true,
                variables: Some(&declared_variables),
            };
            check_expression(
                expression,
                &declared,
                &format!("{path}.expression"),
                &mut causes,
            );
        }
        declared_variables.push(var_name.to_string());
    }
    let variables = (!declared_variables.is_empty()).then_some(declared_variables.as_slice());
    let validations = items(spec, "validations").count();
    let annotations = spec.get("auditAnnotations").and_then(Value::as_array);
    if validations == 0 && annotations.is_none_or(Vec::is_empty) {
        let detail = "validations or auditAnnotations must contain at least one item";
        causes.push(Cause::required("spec.validations", detail));
        causes.push(Cause::required("spec.auditAnnotations", detail));
        return causes;
    }
    for (i, validation) in items(spec, "validations").enumerate() {
        validate_validation(validation, params.is_some(), variables, i, &mut causes);
    }
    if let Some(annotations) = annotations {
        if annotations.len() > MAX_AUDIT_ANNOTATIONS {
            // Go's %#v of the slice.
            let items: Vec<String> = annotations
                .iter()
                .map(|a| {
                    format!(
                        "admissionregistration.AuditAnnotation{{Key:{}, ValueExpression:{}}}",
                        quote(text(a, "key").unwrap_or("")),
                        quote(text(a, "valueExpression").unwrap_or(""))
                    )
                })
                .collect();
            causes.push(invalid_raw(
                "spec.auditAnnotations".to_string(),
                &format!(
                    "[]admissionregistration.AuditAnnotation{{{}}}",
                    items.join(", ")
                ),
                &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
            ));
        }
        let mut keys = BTreeSet::new();
        for (i, annotation) in annotations.iter().enumerate() {
            let path = format!("spec.auditAnnotations[{i}]");
            let key = text(annotation, "key").unwrap_or("");
            validate_audit_annotation(
                annotation,
                name,
                params.is_some(),
                variables,
                &path,
                &mut causes,
            );
            if !keys.insert(key) {
                causes.push(Cause::duplicate(format!("{path}.key"), &json!(key)));
            }
        }
    }
    causes
}

fn items<'a>(spec: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    spec.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    starts
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED_WORDS.contains(&name)
}

/// A compile error as the field error kube-apiserver reports.
fn check_expression(
    expression: &str,
    declared: &Declared<'_>,
    field: &str,
    causes: &mut Vec<Cause>,
) {
    if let Err(e) = compile(expression, declared) {
        causes.push(Cause::invalid(
            field,
            &json!(expression),
            &format!("compilation failed: {e}"),
        ));
    }
}

fn validate_param_kind(kind: &Value, causes: &mut Vec<Cause>) {
    let api_version = text(kind, "apiVersion").unwrap_or("");
    let field = "spec.paramKind.apiVersion";
    if api_version.is_empty() {
        causes.push(Cause::required(field, ""));
    } else if api_version.matches('/').count() > 1 {
        causes.push(Cause::invalid(
            field,
            &json!(api_version),
            &format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !group.is_empty() {
            let errors = is_dns1123_subdomain(group);
            if !errors.is_empty() {
                causes.push(Cause::invalid(field, &json!(group), &errors.join(",")));
            }
        }
        if version.is_empty() {
            causes.push(Cause::invalid(
                field,
                &json!(api_version),
                "version must be specified",
            ));
        } else {
            let errors = is_dns1035_label(version);
            if !errors.is_empty() {
                causes.push(Cause::invalid(field, &json!(version), &errors.join(",")));
            }
        }
    }
    let kind_name = text(kind, "kind").unwrap_or("");
    if kind_name.is_empty() {
        causes.push(Cause::required("spec.paramKind.kind", ""));
    } else {
        let errors = is_dns1035_label(&kind_name.to_lowercase());
        if !errors.is_empty() {
            causes.push(Cause::invalid(
                "spec.paramKind.kind",
                &json!(kind_name),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errors.join(",")
                ),
            ));
        }
    }
}

/// `validateMatchResources`: a policy's `matchConstraints`, a binding's
/// `matchResources` (present after defaulting).
fn validate_match_resources(resources: &Value, path: &str, causes: &mut Vec<Cause>) {
    not_supported(
        causes,
        resources,
        "matchPolicy",
        path,
        &["Equivalent", "Exact"],
    );
    for selector_field in ["namespaceSelector", "objectSelector"] {
        match present(resources, selector_field) {
            None => causes.push(Cause::required(format!("{path}.{selector_field}"), "")),
            Some(s) => causes.extend(selector::validate(
                Some(s),
                &format!("{path}.{selector_field}"),
            )),
        }
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(resources, list).enumerate() {
            let rule_path = format!("{path}.{list}[{i}]");
            let mut names = BTreeSet::new();
            for (j, name) in strings(rule.get("resourceNames")).iter().enumerate() {
                let field = format!("{rule_path}.resourceNames[{j}]");
                for msg in is_valid_path_segment(name) {
                    causes.push(Cause::invalid(&field, &json!(name), &msg));
                }
                if !names.insert(name.clone()) {
                    causes.push(Cause::duplicate(&field, &json!(name)));
                }
            }
            validate_rule(rule, &rule_path, causes);
        }
    }
}

fn validate_match_conditions(conditions: Option<&Value>, params: bool, causes: &mut Vec<Cause>) {
    let Some(conditions) = conditions.and_then(Value::as_array) else {
        return;
    };
    let path = "spec.matchConditions";
    if conditions.len() > 64 {
        causes.push(Cause::new(
            "FieldValueTooMany",
            path,
            format!("Too many: {}: must have at most 64 items", conditions.len()),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let field = format!("{path}[{i}]");
        let expression = text(condition, "expression").unwrap_or("").trim();
        if expression.is_empty() {
            causes.push(Cause::required(format!("{field}.expression"), ""));
        } else {
            let declared = Declared {
                params,
                authorizer: true,
                variables: None,
            };
            check_expression(
                expression,
                &declared,
                &format!("{field}.expression"),
                causes,
            );
        }
        let name = text(condition, "name").unwrap_or("");
        if name.is_empty() {
            causes.push(Cause::required(format!("{field}.name"), ""));
        } else {
            for msg in is_qualified_name(name) {
                causes.push(Cause::invalid(format!("{field}.name"), &json!(name), &msg));
            }
            if !names.insert(name) {
                causes.push(Cause::duplicate(format!("{field}.name"), &json!(name)));
            }
        }
    }
}

fn validate_validation(
    validation: &Value,
    params: bool,
    variables: Option<&[String]>,
    index: usize,
    causes: &mut Vec<Cause>,
) {
    let path = format!("spec.validations[{index}]");
    let expression = text(validation, "expression").unwrap_or("");
    if expression.trim().is_empty() {
        causes.push(Cause::required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else {
        let declared = Declared {
            params,
            authorizer: true,
            variables,
        };
        check_expression(expression, &declared, &format!("{path}.expression"), causes);
    }
    let message_expression = text(validation, "messageExpression").unwrap_or("");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        causes.push(Cause::invalid(
            format!("{path}.messageExpression"),
            &json!(message_expression),
            "must be non-empty if specified",
        ));
    } else if !message_expression.trim().is_empty() {
        let declared = Declared {
            params,
            authorizer: false,
            variables,
        };
        check_expression(
            message_expression,
            &declared,
            &format!("{path}.messageExpression"),
            causes,
        );
    }
    let message = text(validation, "message").unwrap_or("");
    if !message.is_empty() && message.trim().is_empty() {
        causes.push(Cause::invalid(
            format!("{path}.message"),
            &json!(message),
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        causes.push(Cause::invalid(
            format!("{path}.message"),
            &json!(message),
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = present(validation, "reason") {
        const REASONS: [&str; 4] = [
            "Forbidden",
            "Invalid",
            "RequestEntityTooLarge",
            "Unauthorized",
        ];
        if !reason.as_str().is_some_and(|r| REASONS.contains(&r)) {
            causes.push(Cause::not_supported(
                format!("{path}.reason"),
                reason,
                &REASONS,
            ));
        }
    }
}

fn validate_audit_annotation(
    annotation: &Value,
    policy_name: &str,
    params: bool,
    variables: Option<&[String]>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let key = text(annotation, "key").unwrap_or("");
    if policy_name.is_empty() {
        causes.push(Cause::invalid(
            format!("{path}.key"),
            &json!(key),
            "requires metadata.name be non-empty",
        ));
    } else {
        let qualified = format!("{policy_name}/{key}");
        for msg in is_qualified_name(&qualified) {
            causes.push(Cause::invalid(
                format!("{path}.key"),
                &json!(qualified),
                &msg,
            ));
        }
    }
    let expression = text(annotation, "valueExpression").unwrap_or("");
    let field = format!("{path}.valueExpression");
    let trimmed = expression.trim();
    if trimmed.is_empty() {
        causes.push(Cause::required(&field, "valueExpression is not specified"));
    } else if trimmed.len() > MAX_VALUE_EXPRESSION_BYTES {
        causes.push(Cause::required(
            &field,
            &format!("must not exceed {MAX_VALUE_EXPRESSION_BYTES} bytes in length"),
        ));
    } else {
        let declared = Declared {
            params,
            authorizer: true,
            variables,
        };
        if let Err(e) = compile(trimmed, &declared) {
            causes.push(Cause::invalid(
                &field,
                &json!(expression),
                &format!("compilation failed: {e}"),
            ));
        }
    }
}

/// Validates a binding, returning the causes of a 422.
pub(crate) fn validate_binding(binding: &Value) -> Vec<Cause> {
    let empty = json!({});
    let spec = present(binding, "spec").unwrap_or(&empty);
    let mut causes = Vec::new();
    let policy_name = text(spec, "policyName").unwrap_or("");
    if policy_name.is_empty() {
        causes.push(Cause::required("spec.policyName", ""));
    } else {
        for msg in name_is_dns_subdomain(policy_name, false) {
            causes.push(Cause::invalid("spec.policyName", &json!(policy_name), &msg));
        }
    }
    if let Some(param_ref) = present(spec, "paramRef") {
        validate_param_ref(param_ref, &mut causes);
    }
    if let Some(resources) = present(spec, "matchResources") {
        // kube-apiserver's path has this spelling.
        validate_match_resources(resources, "spec.matchResouces", &mut causes);
    }
    validate_actions(&strings(spec.get("validationActions")), &mut causes);
    causes
}

fn validate_param_ref(param_ref: &Value, causes: &mut Vec<Cause>) {
    let path = "spec.paramRef";
    let name = text(param_ref, "name").unwrap_or("");
    let selector = present(param_ref, "selector");
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for msg in is_valid_path_segment(name) {
            causes.push(Cause::invalid(format!("{path}.name"), &json!(name), &msg));
        }
        if selector.is_some() {
            causes.push(Cause::forbidden(format!("{path}.name"), EXCLUSIVE));
        }
    }
    if let Some(s) = selector {
        causes.extend(selector::validate(Some(s), &format!("{path}.selector")));
        if !name.is_empty() {
            causes.push(Cause::forbidden(format!("{path}.selector"), EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        causes.push(Cause::required(
            path,
            "one of name or selector must be specified",
        ));
    }
    match text(param_ref, "parameterNotFoundAction") {
        None | Some("") => causes.push(Cause::required(
            format!("{path}.parameterNotFoundAction"),
            "",
        )),
        Some("Deny" | "Allow") => {}
        Some(other) => causes.push(Cause::not_supported(
            format!("{path}.parameterNotFoundAction"),
            &json!(other),
            &["Deny", "Allow"],
        )),
    }
}

fn validate_actions(actions: &[String], causes: &mut Vec<Cause>) {
    let path = "spec.validationActions";
    const ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
    let mut seen = BTreeSet::new();
    for (i, action) in actions.iter().enumerate() {
        if !ACTIONS.contains(&action.as_str()) {
            causes.push(Cause::not_supported(
                format!("{path}[{i}]"),
                &json!(action),
                &ACTIONS,
            ));
        }
        if !seen.insert(action.as_str()) {
            causes.push(Cause::duplicate(format!("{path}[{i}]"), &json!(action)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        causes.push(invalid_raw(
            path.to_string(),
            &crate::gofmt::typed_slice("[]admissionregistration.ValidationAction", actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        causes.push(Cause::required(
            path,
            "at least one validation action is required",
        ));
    }
}
