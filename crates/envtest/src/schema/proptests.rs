//! Property tests: arbitrary JSON (and arbitrary, often structural, schemas)
//! never makes compile, prune, default, validate or validate_crd panic, and
//! pruning is idempotent. Seeded, so failures reproduce.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

use super::{Structural, validate_crd};
use crate::typeinfo::TypeInfo;

const KEYS: &[&str] = &[
    "type",
    "properties",
    "items",
    "additionalProperties",
    "required",
    "enum",
    "default",
    "nullable",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "pattern",
    "format",
    "maxLength",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "metadata",
    "spec",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "rule",
    "name",
    "a",
    "b",
    "",
];
const TYPES: &[&str] = &[
    "object", "array", "string", "integer", "number", "boolean", "null", "bogus", "",
];
const FORMATS: &[&str] = &[
    "date-time",
    "date",
    "uuid",
    "byte",
    "int32",
    "duration",
    "ipv4",
    "email",
    "x",
];
const RULES: &[&str] = &[
    "self.a == 'x'",
    "size(self) > 0",
    "self == oldSelf",
    "has(self.a)",
    "self.all(x, x > 0)",
    "self.a.b.c",
    "1 / 0 == 1",
    "self >",
    "'x'.matches('[')",
    "self.map(k, k)",
];

fn arbitrary(rng: &mut StdRng, depth: u32) -> Value {
    let pick = if depth == 0 {
        rng.random_range(0..5)
    } else {
        rng.random_range(0..7)
    };
    match pick {
        0 => Value::Null,
        1 => Value::Bool(rng.random()),
        2 => match rng.random_range(0..4) {
            0 => json!(rng.random_range(-5i64..5)),
            1 => json!(rng.random::<f64>() * 1e6 - 5e5),
            2 => json!(i64::MIN),
            _ => json!(u64::MAX),
        },
        3 => Value::String(KEYS[rng.random_range(0..KEYS.len())].to_string()),
        4 => Value::String(FORMATS[rng.random_range(0..FORMATS.len())].to_string()),
        5 => Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| arbitrary(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.random_range(0..5) {
                let k = KEYS[rng.random_range(0..KEYS.len())].to_string();
                m.insert(k, arbitrary(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

/// A schema that is mostly well-formed, so deeper code paths run.
fn schema_like(rng: &mut StdRng, depth: u32) -> Value {
    let mut m = Map::new();
    // Mostly valid types; sometimes an invalid or missing one.
    let t = if rng.random_bool(0.9) {
        TYPES[rng.random_range(0..6)]
    } else {
        TYPES[rng.random_range(0..TYPES.len())]
    };
    if !t.is_empty() {
        m.insert("type".into(), json!(t));
    }
    let mut maybe = |m: &mut Map<String, Value>, key: &str, v: Value, p: f64| {
        if rng.random_bool(p) {
            m.insert(key.into(), v);
        }
    };
    let r1: i64 = 1;
    maybe(&mut m, "nullable", json!(true), 0.1);
    maybe(&mut m, "minimum", json!(r1), 0.15);
    maybe(&mut m, "maxLength", json!(3), 0.1);
    maybe(&mut m, "pattern", json!("^[a-z]+$"), 0.1);
    maybe(
        &mut m,
        "x-kubernetes-preserve-unknown-fields",
        json!(true),
        0.1,
    );
    maybe(&mut m, "x-kubernetes-int-or-string", json!(true), 0.05);
    maybe(&mut m, "x-kubernetes-embedded-resource", json!(true), 0.05);
    maybe(&mut m, "enum", json!(["a", 1, null]), 0.1);
    if rng.random_bool(0.2) {
        let f = FORMATS[rng.random_range(0..FORMATS.len())];
        m.insert("format".into(), json!(f));
    }
    if rng.random_bool(0.2) {
        let r = RULES[rng.random_range(0..RULES.len())];
        m.insert(
            "x-kubernetes-validations".into(),
            json!([{"rule": r, "message": "m"}]),
        );
    }
    if rng.random_bool(0.05) {
        m.insert("default".into(), arbitrary(rng, 2));
    }
    if depth > 0 {
        match t {
            "object" => {
                if rng.random_bool(0.2) {
                    m.insert("additionalProperties".into(), schema_like(rng, depth - 1));
                } else {
                    let mut props = Map::new();
                    for _ in 0..rng.random_range(0..4) {
                        let k = KEYS[rng.random_range(0..KEYS.len())].to_string();
                        props.insert(k, schema_like(rng, depth - 1));
                    }
                    m.insert("properties".into(), Value::Object(props));
                    if rng.random_bool(0.3) {
                        m.insert("required".into(), json!(["a"]));
                    }
                }
            }
            "array" => {
                m.insert("items".into(), schema_like(rng, depth - 1));
                if rng.random_bool(0.3) {
                    m.insert(
                        "x-kubernetes-list-type".into(),
                        json!(["set", "map", "atomic"][rng.random_range(0..3)]),
                    );
                    m.insert("x-kubernetes-list-map-keys".into(), json!(["name"]));
                }
            }
            _ => {}
        }
        if rng.random_bool(0.1) {
            m.insert(
                "anyOf".into(),
                json!([{"type": "integer"}, {"type": "string"}]),
            );
        }
        if rng.random_bool(0.1) {
            m.insert("allOf".into(), json!([schema_like(rng, depth - 1)]));
        }
    }
    Value::Object(m)
}

fn exercise(schema: &Value, rng: &mut StdRng) {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "things", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema}}]}});
    let _ = validate_crd(&crd, None);
    let _ = validate_crd(&crd, Some(&crd));
    if let Ok(s) = Structural::compile(schema) {
        for _ in 0..4 {
            let mut obj = arbitrary(rng, 4);
            let old = arbitrary(rng, 3);
            let _ = s.prune(&mut obj);
            let once = obj.clone();
            // Pruning a pruned object prunes nothing more.
            assert!(
                s.prune(&mut obj).is_empty(),
                "prune not idempotent for {schema} / {once}"
            );
            assert_eq!(obj, once);
            s.apply_defaults(&mut obj);
            let _ = s.validate(&obj, Some(&old));
            let _ = s.validate(&obj, None);
            let _ = s.list_type(&["spec", "a", "b"]);
            let _ = s.map_is_atomic(&["a"]);
        }
    }
}

#[test]
fn arbitrary_json_never_panics() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    for _ in 0..400 {
        let schema = arbitrary(&mut rng, 5);
        exercise(&schema, &mut rng);
        let _ = validate_crd(&schema, None);
    }
}

#[test]
fn arbitrary_schemas_never_panic() {
    let mut rng = StdRng::seed_from_u64(42);
    let mut compiled = 0;
    for _ in 0..800 {
        let mut props = Map::new();
        for k in ["spec", "status", "a"] {
            props.insert(k.into(), schema_like(&mut rng, 3));
        }
        let schema = json!({"type": "object", "properties": props});
        if Structural::compile(&schema).is_ok() {
            compiled += 1;
        }
        exercise(&schema, &mut rng);
    }
    // The generator must reach the code past compile, or the test proves little.
    assert!(compiled > 40, "only {compiled} schemas compiled");
}
