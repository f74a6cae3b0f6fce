//! Tests of custom-resource validation messages against kube-openapi's.

use super::fielderr::FieldPath;
use super::node::Schema;
use super::validate::validate_value;
use serde_json::Value;
use serde_json::json;

fn errs(schema: Value, data: Value) -> Vec<String> {
    let s = Schema::parse(&schema, &FieldPath::nil());
    validate_value(&s, &data, &FieldPath::nil())
        .into_iter()
        .map(|e| e.error_string())
        .collect()
}

#[test]
fn messages_match_kube_openapi() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["color"], "properties": {
            "color": {"type": "string", "enum": ["red", "blue"]},
            "size": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
            "name": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
            "tags": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
            "when": {"type": "string", "format": "date-time"},
            "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0.5}}}}});
    assert_eq!(
        errs(schema.clone(), json!({"spec": {"color": "green"}})),
        vec!["spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""]
    );
    assert_eq!(
        errs(schema.clone(), json!({"spec": {}})),
        vec!["spec.color: Required value"]
    );
    assert_eq!(
        errs(schema.clone(), json!({"spec": {"color": "red", "size": 0}})),
        vec!["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "size": 11}})
        ),
        vec![
            "spec.size: Invalid value: 11: spec.size in body should be a multiple of 2",
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
        ]
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "size": "big"}})
        ),
        vec![
            "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        ]
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "name": "abcd"}})
        ),
        vec!["spec.name: Too long: may not be more than 3 bytes"]
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "name": "A"}})
        ),
        vec!["spec.name: Invalid value: \"A\": spec.name in body should match '^[a-z]+$'"]
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "tags": ["a", "b"]}})
        ),
        vec!["spec.tags: Too many: 2: must have at most 1 items"]
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "when": "yesterday"}})
        ),
        vec![
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\""
        ]
    );
    assert!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "when": "2024-01-02T03:04:05Z"}})
        )
        .is_empty()
    );
    assert_eq!(
        errs(
            schema.clone(),
            json!({"spec": {"color": "red", "ratio": 0.5}})
        ),
        vec!["spec.ratio: Invalid value: 0.5: spec.ratio in body should be greater than 0.5"]
    );
    assert_eq!(
        errs(schema, json!({"spec": "oops"})),
        vec!["spec: Invalid value: \"string\": spec in body must be of type object: \"string\""]
    );
}

#[test]
fn integers_as_floats_and_int_or_string() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer"},
        "p": {"x-kubernetes-int-or-string": true},
        "z": {"type": "string", "nullable": true},
        "q": {"type": "string"}}});
    assert!(errs(schema.clone(), json!({"n": 3.0, "p": "50%", "z": null})).is_empty());
    assert_eq!(
        errs(schema.clone(), json!({"n": 3.5})),
        vec!["n: Invalid value: \"number\": n in body must be of type integer: \"number\""]
    );
    assert_eq!(
        errs(schema.clone(), json!({"p": true})),
        vec![
            "p: Invalid value: \"boolean\": p in body must be of type integer,string: \"boolean\""
        ]
    );
    assert_eq!(
        errs(schema, json!({"q": null})),
        vec!["q: Invalid value: \"null\": q in body must be of type string: \"null\""]
    );
}

#[test]
fn any_of_reports_the_composite_error_first() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer",
        "anyOf": [{"minimum": 5}, {"maximum": 1}]}}});
    assert_eq!(
        errs(schema, json!({"a": 3})),
        vec![
            "<nil>: Invalid value: \"\": \"a\" must validate at least one schema (anyOf)",
            "a: Invalid value: 3: a in body should be greater than or equal to 5"
        ]
    );
}
