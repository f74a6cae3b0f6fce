//! Tests of CEL rules: messages, transition rules, compile failures and
//! the library functions.

use super::cel::*;
use super::celvalues::escape;
use super::fielderr::FieldPath;
use super::node::Schema;
use crate::schema::Structural;
use serde_json::Value;
use serde_json::json;

fn schema_with_rules(spec_rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": spec_rules,
        "properties": {
            "replicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "name": {"type": "string",
                     "x-kubernetes-validations": [{"rule": "self.startsWith('w-')", "message": "must start with w-"}]},
            "mode": {"type": "string",
                     "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"type": "string", "format": "date-time"},
            "x-y": {"type": "string"}}}}})
}

fn messages(s: &Structural, obj: Value, old: Option<Value>) -> Vec<String> {
    s.validate(&obj, old.as_ref())
        .iter()
        .map(Cause::summary)
        .collect()
}

use crate::error::Cause;

#[test]
fn failing_rules_report_like_kube_apiserver() {
    let s = Structural::compile(&schema_with_rules(json!([
        {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
        {"rule": "self.tags.all(t, t.lowerAscii() == t)", "messageExpression": "'tags must be lower case, got ' + self.tags.join(',')"},
        {"rule": "size(self.tags) < 3", "reason": "FieldValueForbidden", "fieldPath": ".tags"},
        {"rule": "!has(self.when) || self.when > timestamp('2000-01-01T00:00:00Z')"},
        {"rule": "!has(self.x__dash__y) || self.x__dash__y != 'bad'"}
    ])))
    .expect("compiles");
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"replicas": 1, "maxReplicas": 2, "tags": ["a"], "name": "w-1"}}),
            None
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        messages(
            &s,
            json!({"spec": {"replicas": 3, "maxReplicas": 2, "tags": ["A", "b", "c"],
                                      "name": "x", "when": "1999-01-01T00:00:00Z", "x-y": "bad"}}),
            None
        ),
        vec![
            "spec: Invalid value: \"object\": replicas must not exceed maxReplicas",
            "spec: Invalid value: \"object\": tags must be lower case, got A,b,c",
            "spec.tags: Forbidden: failed rule: size(self.tags) < 3",
            "spec: Invalid value: \"object\": failed rule: !has(self.when) || self.when > timestamp('2000-01-01T00:00:00Z')",
            "spec: Invalid value: \"object\": failed rule: !has(self.x__dash__y) || self.x__dash__y != 'bad'",
            "spec.name: Invalid value: \"string\": must start with w-",
        ]
    );
}

#[test]
fn transition_rules_run_only_on_update() {
    let s = Structural::compile(&schema_with_rules(json!([]))).expect("compiles");
    let new = json!({"spec": {"mode": "b"}});
    assert!(messages(&s, new.clone(), None).is_empty());
    assert!(messages(&s, new.clone(), Some(json!({"spec": {"mode": "b"}}))).is_empty());
    assert_eq!(
        messages(&s, new, Some(json!({"spec": {"mode": "a"}}))),
        vec!["spec.mode: Invalid value: \"string\": mode is immutable"]
    );
}

#[test]
fn evaluation_errors_and_blocking_errors() {
    let s = Structural::compile(&schema_with_rules(json!([{"rule": "self.replicas > 0"}])))
        .expect("compiles");
    assert_eq!(
        messages(&s, json!({"spec": {}}), None),
        vec![
            "spec: Invalid value: \"object\": no such key: replicas evaluating rule: self.replicas > 0"
        ]
    );
    assert_eq!(
        messages(&s, json!({"spec": {"replicas": "x"}}), None),
        vec![
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
}

#[test]
fn rules_that_do_not_compile_are_refused() {
    let causes = Structural::compile(&schema_with_rules(json!([
        {"rule": "self.replicas >"},
        {"rule": "self.replicas > nope"},
        {"rule": "self.replicas.frobnicate()"}
    ])))
    .expect_err("must not compile");
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "properties[spec].x-kubernetes-validations[0].rule",
            "properties[spec].x-kubernetes-validations[1].rule",
            "properties[spec].x-kubernetes-validations[2].rule",
        ]
    );
    assert!(causes[0].message.starts_with("Invalid value: {\"rule\":\"self.replicas \\u003e\"}: compilation failed: ERROR: <input>:1:"), "{}", causes[0].message);
    assert!(
        causes[1]
            .message
            .ends_with("undeclared reference to 'nope' (in container '')"),
        "{}",
        causes[1].message
    );
    assert!(
        causes[2].message.contains("'frobnicate'"),
        "{}",
        causes[2].message
    );
}

#[test]
fn old_self_is_refused_where_items_cannot_be_correlated() {
    let causes = Structural::compile(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}}),
    )
    .expect_err("oldSelf under an atomic list");
    assert_eq!(
        causes[0].field,
        "properties[spec].properties[list].items.x-kubernetes-validations[0].rule"
    );
    assert_eq!(
        causes[0].message,
        "Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within properties[spec].properties[list]"
    );
}

#[test]
fn kubernetes_library_functions() {
    let cases = [
        "[1, 2, 3].isSorted() && [3, 1].sum() == 4 && [3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
        "['a', 'b', 'a'].indexOf('a') == 0 && ['a', 'b', 'a'].lastIndexOf('a') == 2",
        "'abc 123'.find('[0-9]+') == '123' && 'a1b2'.findAll('[0-9]') == ['1', '2']",
        "sets.contains([1, 2, 3], [1, 2]) && sets.equivalent([1, 2], [2, 1]) && sets.intersects([1], [1, 5])",
        "isURL('https://example.com/x') && !isURL('nope') && isIP('10.0.0.1') && isCIDR('10.0.0.0/8')",
        "isQuantity('500Mi') && isQuantity('1.5') && !isQuantity('abc')",
        "quantity('1Gi').isGreaterThan(quantity('1G')) && quantity('500m').isLessThan(quantity('1'))",
        "quantity('1k').compareTo(quantity('1000')) == 0 && quantity('2').add(quantity('3')).asInteger() == 5",
        "quantity('1.5').asApproximateFloat() == 1.5 && !quantity('1.5').isInteger() && quantity('-2').sign() == -1",
        "'Hello'.lowerAscii() == 'hello' && ' x '.trim() == 'x' && 'a,b'.split(',') == ['a', 'b']",
        "['x', 'y'].join('-') == 'x-y' && 'hello'.indexOf('l') == 2 && 'ab'.upperAscii() == 'AB'",
        "[1, 2, 3].exists_one(x, x == 2) && [1, 2].map(x, x * 2) == [2, 4] && [1, 2].filter(x, x > 1) == [2]",
        "'abc'.matches('^a') && 'abc'.contains('b') && 'abc'.endsWith('c') && size('abc') == 3",
    ];
    for rule in cases {
        let s = Structural::compile(&json!({"type": "object",
            "x-kubernetes-validations": [{"rule": rule}], "properties": {}}))
        .unwrap_or_else(|e| panic!("{rule}: {e:?}"));
        assert!(s.validate(&json!({}), None).is_empty(), "{rule}");
    }
}

#[test]
fn field_paths_resolve_through_the_schema() {
    let s = Schema::parse(
        &json!({"type": "object", "properties": {"a": {"type": "object",
            "additionalProperties": {"type": "object", "properties": {"b.c": {"type": "string"}}}}}}),
        &FieldPath::nil(),
    );
    assert_eq!(
        valid_field_path(".a['k']['b.c']", &s).map(|p| p.to_string()),
        Ok("a[k].b.c".to_string())
    );
    assert!(valid_field_path(".missing", &s).is_err());
    assert_eq!(escape("x-y"), Some("x__dash__y".to_string()));
    assert_eq!(escape("namespace"), Some("__namespace__".to_string()));
    assert_eq!(escape("1a"), None);
}
