//! Tests of configuration defaulting and validation messages.

use super::webhook_configurations::*;
use crate::error::Cause;
use serde_json::{Value, json};

fn good_hook() -> Value {
    json!({
        "name": "mpod.kb.io",
        "clientConfig": {"service": {"namespace": "system", "name": "webhook-service", "path": "/mutate--v1-pod"}},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"]
    })
}

fn config(hooks: Vec<Value>) -> Value {
    json!({"metadata": {"name": "c"}, "webhooks": hooks})
}

fn messages(kind: ConfigurationKind, hooks: Vec<Value>) -> Vec<String> {
    validate_configuration(kind, &config(hooks), None)
        .iter()
        .map(Cause::summary)
        .collect()
}

#[test]
fn defaults_fill_missing_fields_only() {
    let mut c = config(vec![json!({"name": "a.b.c", "failurePolicy": "Ignore",
        "rules": [{}], "clientConfig": {"service": {"name": "s", "namespace": "n"}}})]);
    default_configuration(ConfigurationKind::Mutating, &mut c);
    let hook = &c["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Ignore");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["reinvocationPolicy"], "Never");
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    let mut v = config(vec![json!({"name": "a.b.c"})]);
    default_configuration(ConfigurationKind::Validating, &mut v);
    assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
}

#[test]
fn a_generated_configuration_is_valid() {
    assert!(messages(ConfigurationKind::Mutating, vec![good_hook()]).is_empty());
}

#[test]
fn required_fields_and_enums() {
    let mut hook = good_hook();
    let map = hook.as_object_mut().unwrap();
    map.remove("sideEffects");
    map.remove("admissionReviewVersions");
    map.insert("name".into(), json!("short.name"));
    map.insert("failurePolicy".into(), json!("Sometimes"));
    map.insert("timeoutSeconds".into(), json!(31));
    assert_eq!(
        messages(ConfigurationKind::Validating, vec![hook]),
        [
            "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
            "webhooks[0].failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        ]
    );
}

#[test]
fn client_config_rules_and_versions() {
    let hook = json!({
        "name": "v.example.com",
        "clientConfig": {"url": "http://127.0.0.1:9443/x?y=1"},
        "rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"], "resources": ["*", "pods"], "scope": "Everywhere"}],
        "sideEffects": "Some",
        "admissionReviewVersions": ["v2"]
    });
    assert_eq!(
        messages(ConfigurationKind::Validating, vec![hook.clone(), hook]),
        [
            "webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
            "webhooks[0].rules[0].apiGroups: Required value",
            "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources",
            "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[0].clientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            "webhooks[1].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
            "webhooks[1].rules[0].apiGroups: Required value",
            "webhooks[1].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources",
            "webhooks[1].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            "webhooks[1].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[1].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[1].clientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            "webhooks[1].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            "webhooks[1].name: Duplicate value: \"v.example.com\"",
        ]
    );
}

#[test]
fn service_selectors_and_conditions() {
    let mut hook = good_hook();
    hook["clientConfig"] =
        json!({"service": {"namespace": "", "name": "s", "path": "no-slash/A", "port": 0}});
    hook["objectSelector"] = json!({"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Near"}]});
    hook["matchConditions"] =
        json!([{"name": "x", "expression": "1 +"}, {"name": "x", "expression": ""}]);
    let got = messages(ConfigurationKind::Mutating, vec![hook]);
    assert_eq!(
        got[0],
        "webhooks[0].objectSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
    );
    assert_eq!(
        got[1],
        "webhooks[0].objectSelector.matchExpressions[1].operator: Invalid value: \"Near\": not a valid selector operator"
    );
    assert_eq!(
        got[2],
        "webhooks[0].clientConfig.service.namespace: Required value"
    );
    assert_eq!(
        got[3],
        "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"
    );
    assert_eq!(
        got[4],
        "webhooks[0].clientConfig.service.path: Invalid value: \"no-slash/A\": must start with a '/'"
    );
    assert!(got[5].starts_with("webhooks[0].clientConfig.service.path: Invalid value: \"no-slash/A\": segment[1]: a lowercase RFC 1123 subdomain"));
    assert!(got[6].starts_with(
        "webhooks[0].matchConditions[0].expression: Invalid value: \"1 +\": compilation failed: "
    ));
    assert_eq!(
        got[7],
        "webhooks[0].matchConditions[1].name: Duplicate value: \"x\""
    );
    assert_eq!(
        got[8],
        "webhooks[0].matchConditions[1].expression: Required value"
    );
    assert_eq!(got.len(), 9);
}

#[test]
fn updates_keep_what_was_already_stored() {
    let mut old_hook = good_hook();
    old_hook["sideEffects"] = json!("Unknown");
    let old = config(vec![old_hook.clone(), old_hook.clone()]);
    let new = config(vec![old_hook.clone(), old_hook]);
    assert!(validate_configuration(ConfigurationKind::Mutating, &new, Some(&old)).is_empty());
    assert_eq!(
        validate_configuration(ConfigurationKind::Mutating, &new, None).len(),
        3
    );
}

#[test]
fn invalid_configuration_is_a_422() {
    let causes =
        validate_configuration(ConfigurationKind::Mutating, &config(vec![json!({})]), None);
    let err = invalid_configuration(ConfigurationKind::Mutating, "c", causes);
    assert_eq!(err.code, 422);
    assert!(err.message.starts_with(
        "MutatingWebhookConfiguration.admissionregistration.k8s.io \"c\" is invalid: [webhooks[0].name: Required value, "
    ));
}
