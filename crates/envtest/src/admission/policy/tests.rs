//! Defaulting and validation of policies and bindings, and evaluation
//! without a server.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::admission::attributes::{GroupVersionKind, GroupVersionResource, Operation};
use crate::builtin::validation::admission_policies::{
    default_binding, default_policy, validate_binding, validate_policy,
};

fn policy(spec: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": spec})
}

fn rules() -> Value {
    json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["configmaps"]}]})
}

fn defaulted(mut p: Value) -> Value {
    default_policy(&mut p);
    p
}

/// `field: message` of each cause.
fn errors(causes: &[Cause]) -> Vec<String> {
    causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

#[test]
fn defaults_fill_failure_policy_and_match_resources() {
    let p = defaulted(policy(json!({"matchConstraints": rules(),
        "validations": [{"expression": "true"}]})));
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let constraints = &p["spec"]["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent");
    assert_eq!(constraints["namespaceSelector"], json!({}));
    assert_eq!(constraints["objectSelector"], json!({}));
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");
    assert!(validate_policy(&p, None).is_empty());

    let mut b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p",
        "validationActions": ["Deny"], "matchResources": {}}});
    default_binding(&mut b);
    assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    assert!(
        validate_binding(&b).is_empty(),
        "{:?}",
        validate_binding(&b)
    );
}

#[test]
fn a_policy_needs_constraints_and_validations() {
    let p = defaulted(policy(json!({})));
    assert_eq!(
        errors(&validate_policy(&p, None)),
        [
            "spec.matchConstraints: Required value",
            "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
            "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
        ]
    );
    let p = defaulted(policy(
        json!({"matchConstraints": {}, "failurePolicy": "Never",
        "validations": [{"expression": "true"}]}),
    ));
    assert_eq!(
        errors(&validate_policy(&p, None)),
        [
            "spec.failurePolicy: Unsupported value: \"Never\": supported values: \"Fail\", \"Ignore\"",
            "spec.matchConstraints.resourceRules: Required value",
        ]
    );
}

#[test]
fn expressions_must_compile_with_the_variables_declared() {
    let p = defaulted(policy(json!({"matchConstraints": rules(), "validations": [
        {"expression": "object.data.size() >"},
        {"expression": "params.max > 1"},
        {"expression": "true", "messageExpression": "'x' + authorizer.path('y')", "reason": "Teapot"},
        {"expression": "variables.missing", "message": "  "},
    ]})));
    let found = errors(&validate_policy(&p, None));
    assert_eq!(found.len(), 6, "{found:?}");
    assert!(
        found[0].starts_with(
            "spec.validations[0].expression: Invalid value: \"object.data.size() >\": compilation failed: "
        ),
        "{found:?}"
    );
    assert_eq!(
        found[1],
        "spec.validations[1].expression: Invalid value: \"params.max > 1\": compilation failed: ERROR: <input>: undeclared reference to 'params' (in container '')"
    );
    // messageExpression has no authorizer.
    assert!(
        found[2].starts_with("spec.validations[2].messageExpression: Invalid value: ")
            && found[2].contains("undeclared reference"),
        "{found:?}"
    );
    assert_eq!(
        found[3],
        "spec.validations[2].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\""
    );
    assert!(
        found[4].ends_with("undeclared reference to 'variables' (in container '')"),
        "{found:?}"
    );
    assert_eq!(
        found[5],
        "spec.validations[3].message: Invalid value: \"  \": message must be non-empty if specified"
    );

    // With a paramKind, `params` is declared; variables are, in order.
    let p = defaulted(policy(json!({"matchConstraints": rules(),
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "variables": [{"name": "max", "expression": "int(params.data.max)"},
                      {"name": "over", "expression": "size(object.data) > variables.max"}],
        "validations": [{"expression": "!variables.over", "message": "too many"}]})));
    assert!(
        validate_policy(&p, None).is_empty(),
        "{:?}",
        validate_policy(&p, None)
    );
}

#[test]
fn bindings_are_checked_as_the_api_checks_them() {
    let binding = |spec: Value| json!({"metadata": {"name": "b"}, "spec": spec});
    assert_eq!(
        errors(&validate_binding(&binding(json!({})))),
        [
            "spec.policyName: Required value",
            "spec.validationActions: Required value: at least one validation action is required",
        ]
    );
    let b = binding(
        json!({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny", "Block"],
        "paramRef": {"name": "a", "selector": {}, "parameterNotFoundAction": "Maybe"}}),
    );
    assert_eq!(
        errors(&validate_binding(&b)),
        [
            "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\"",
            "spec.validationActions[2]: Duplicate value: \"Deny\"",
            "spec.validationActions[3]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
            "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Block\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ]
    );
    let b = binding(json!({"policyName": "p", "validationActions": ["Audit"],
        "paramRef": {}}));
    assert_eq!(
        errors(&validate_binding(&b)),
        [
            "spec.paramRef: Required value: one of name or selector must be specified",
            "spec.paramRef.parameterNotFoundAction: Required value",
        ]
    );
}

/// A cluster with one labelled namespace and the ConfigMaps given.
struct Cluster {
    config_maps: Vec<Value>,
}

impl ClusterView for Cluster {
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        match name {
            "ns" => Some(BTreeMap::from([("team".to_string(), "a".to_string())])),
            "other" => Some(BTreeMap::new()),
            _ => None,
        }
    }
}

impl PolicyCluster for Cluster {
    fn namespace_object(&self, name: &str) -> Option<Value> {
        (name == "ns").then(
            || json!({"metadata": {"name": "ns", "labels": {"team": "a"}, "managedFields": []}}),
        )
    }

    fn param_scope(&self, api_version: &str, kind: &str) -> Option<ParamScope> {
        ((api_version, kind) == ("v1", "ConfigMap")).then_some(ParamScope::Namespaced)
    }

    fn param_objects(&self, _: &str, _: &str, namespace: &str) -> Vec<Value> {
        self.config_maps
            .iter()
            .filter(|c| c["metadata"]["namespace"] == namespace)
            .cloned()
            .collect()
    }
}

fn create_config_map(data: Value) -> AdmissionAttributes {
    AdmissionAttributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "ConfigMap"),
        GroupVersionResource::new("", "v1", "configmaps"),
        "ns",
        "cm",
    )
    .with_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns"}, "data": data}))
}

fn registry(spec: Value, binding_spec: Value) -> PolicyRegistry {
    let registry = PolicyRegistry::default();
    let mut p = policy(spec);
    default_policy(&mut p);
    let b = json!({"metadata": {"name": "b"}, "spec": binding_spec});
    registry.set(&[p], &[b]);
    registry
}

#[test]
fn a_denial_has_kube_apiservers_status() {
    let reg = registry(
        json!({"matchConstraints": rules(), "validations": [
            {"expression": "!has(object.data.bad)", "messageExpression": "'bad is ' + object.data.bad"},
            {"expression": "size(object.data) < 3", "reason": "Forbidden"}]}),
        json!({"policyName": "p", "validationActions": ["Deny"]}),
    );
    let cluster = Cluster {
        config_maps: vec![],
    };
    let outcome = reg.admit(&create_config_map(json!({"bad": "x"})), &cluster);
    let e = outcome.result.unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "configmaps \"cm\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: bad is x"
    );
    let details = e.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("cm", "configmaps")
    );
    assert_eq!(
        details.causes[0].message,
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: bad is x"
    );
    let e = reg
        .admit(
            &create_config_map(json!({"a": "1", "b": "2", "c": "3"})),
            &cluster,
        )
        .result
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(
        e.message
            .ends_with("denied request: failed expression: size(object.data) < 3")
    );
    assert!(
        reg.admit(&create_config_map(json!({})), &cluster)
            .result
            .is_ok()
    );
}

#[test]
fn params_selectors_and_variables() {
    let reg = registry(
        json!({"matchConstraints": {"resourceRules": rules()["resourceRules"],
                "namespaceSelector": {"matchLabels": {"team": "a"}}},
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "variables": [{"name": "limit", "expression": "int(params.data.limit)"}],
            "validations": [{"expression": "size(object.data) <= variables.limit",
                "messageExpression": "'at most ' + string(variables.limit) + ' in ' + namespaceObject.metadata.name"}]}),
        json!({"policyName": "p", "validationActions": ["Warn"],
            "paramRef": {"selector": {"matchLabels": {"limits": "yes"}}, "parameterNotFoundAction": "Deny"}}),
    );
    let limit = |name: &str, n: &str| json!({"metadata": {"name": name, "namespace": "ns", "labels": {"limits": "yes"}}, "data": {"limit": n}});
    // One evaluation per param: two warnings.
    let cluster = Cluster {
        config_maps: vec![limit("one", "1"), limit("zero", "0")],
    };
    let outcome = reg.admit(&create_config_map(json!({"a": "1"})), &cluster);
    assert!(outcome.result.is_ok());
    assert_eq!(
        outcome.warnings,
        ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': at most 0 in ns"]
    );
    // No params under parameterNotFoundAction: Deny.
    let none = Cluster {
        config_maps: vec![],
    };
    let e = reg
        .admit(&create_config_map(json!({})), &none)
        .result
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "policy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    // Another namespace is not selected.
    let mut elsewhere = create_config_map(json!({}));
    elsewhere.namespace = "other".to_string();
    let outcome = reg.admit(&elsewhere, &none);
    assert!(outcome.result.is_ok() && outcome.warnings.is_empty());
}

#[test]
fn evaluation_errors_follow_the_failure_policy() {
    let spec = |policy: &str| {
        json!({"matchConstraints": rules(), "failurePolicy": policy,
            "validations": [{"expression": "object.data.missing == 'x'"}]})
    };
    let binding = json!({"policyName": "p", "validationActions": ["Deny"]});
    let cluster = Cluster {
        config_maps: vec![],
    };
    let e = registry(spec("Fail"), binding.clone())
        .admit(&create_config_map(json!({})), &cluster)
        .result
        .unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "configmaps \"cm\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"
    );
    let outcome = registry(spec("Ignore"), binding).admit(&create_config_map(json!({})), &cluster);
    assert!(outcome.result.is_ok());
}

#[test]
fn audit_annotations_are_limited_keyed_and_compiled() {
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"key": format!("k{i}"), "valueExpression": "'v'"}))
        .collect();
    let p = defaulted(policy(
        json!({"matchConstraints": rules(), "auditAnnotations": many}),
    ));
    let found = errors(&validate_policy(&p, None));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(
            "spec.auditAnnotations: Invalid value: []admissionregistration.AuditAnnotation{admissionregistration.AuditAnnotation{Key:\"k0\", ValueExpression:\"'v'\"}, "
        ),
        "{found:?}"
    );
    assert!(found[0].ends_with("}}: must not have more than 20 auditAnnotations"));

    let p = defaulted(policy(
        json!({"matchConstraints": rules(), "auditAnnotations": [
        {"key": "a", "valueExpression": "object.metadata.name"},
        {"key": "a", "valueExpression": ""},
        {"key": "bad key", "valueExpression": "1 +"}]}),
    ));
    let found = errors(&validate_policy(&p, None));
    assert_eq!(found.len(), 4, "{found:?}");
    assert_eq!(
        found[0],
        "spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified"
    );
    assert_eq!(
        found[1],
        "spec.auditAnnotations[1].key: Duplicate value: \"a\""
    );
    assert!(
        found[2].starts_with("spec.auditAnnotations[2].key: Invalid value: \"p/bad key\": "),
        "{found:?}"
    );
    assert!(
        found[3].starts_with(
            "spec.auditAnnotations[2].valueExpression: Invalid value: \"1 +\": compilation failed: "
        ),
        "{found:?}"
    );
}
