//! Property tests: arbitrary JSON through every step of every kind never
//! panics.

use serde_json::{Value, json};

use super::*;
use proptest::prelude::*;

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-zA-Z0-9:./_ -]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("None"),
            Just("NodePort"),
            Just("LoadBalancer"),
            Just("ExternalName"),
            Just("TCP"),
            Just("In"),
            Just("Exists"),
            Just("100m"),
            Just("1Gi"),
            Just("2026-11-30T10:00:00Z"),
            Just("RollingUpdate"),
            Just("OnDelete"),
        ]
        .prop_map(|s| json!(s)),
    ];
    let keys = prop_oneof![
        Just("metadata"),
        Just("name"),
        Just("spec"),
        Just("status"),
        Just("containers"),
        Just("ports"),
        Just("port"),
        Just("nodePort"),
        Just("selector"),
        Just("matchLabels"),
        Just("matchExpressions"),
        Just("template"),
        Just("labels"),
        Just("data"),
        Just("type"),
        Just("clusterIP"),
        Just("image"),
        Just("resources"),
        Just("limits"),
        Just("webhooks"),
        Just("rules"),
        Just("subjects"),
        Just("roleRef"),
        Just("ownerReferences"),
        Just("finalizers"),
        Just("involvedObject"),
        Just("regarding"),
        Just("eventTime"),
        Just("jobTemplate"),
        Just("volumes"),
        Just("env"),
        Just("strategy"),
        Just("versions"),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                )
            }),
        ]
    })
}

/// The same cases on every run (CI must not flake on a newly drawn input);
/// `PROPTEST_RNG_SEED=<n>` explores other ones.
fn reproducible(cases: u32) -> ProptestConfig {
    let config = ProptestConfig::with_cases(cases);
    match config.rng_seed {
        proptest::test_runner::RngSeed::Random => ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x0c71_0e57),
            ..config
        },
        _ => config,
    }
}

proptest! {
    #![proptest_config(reproducible(256))]

    #[test]
    fn pipeline_never_panics(body in arbitrary_json(), old in arbitrary_json(), which in 0usize..64) {
        let kinds = kinds();
        let kind = &kinds[which % kinds.len()];
        let mut alloc = Allocator::default();
        if let Ok((mut obj, _)) = decode(kind, body) {
            apply_defaults(kind, &mut obj);
            if kind.kind == "Service" {
                let _ = alloc.allocate_service(&mut obj, false);
                alloc.release_service(&obj);
            }
            let mut created = obj.clone();
            admit_create(kind, &mut created, None);
            prepare_for_create(kind, &mut created);
            let _ = validate(kind, &created, None);
            prepare_for_update(kind, &mut obj, &old, None);
            let _ = validate(kind, &obj, Some(&old));
            let mut status = obj.clone();
            prepare_for_update(kind, &mut status, &old, Some("status"));
            let _ = table(kind, &[obj, old.clone()], jiff::Timestamp::now());
            let _ = events::core_to_events_v1(&old);
            let _ = events::events_v1_to_core(&old);
        }
    }

    #[test]
    fn raw_values_never_panic(value in arbitrary_json(), which in 0usize..64) {
        let kinds = kinds();
        let kind = &kinds[which % kinds.len()];
        let mut obj = value.clone();
        apply_defaults(kind, &mut obj);
        admit_create(kind, &mut obj, None);
        prepare_for_create(kind, &mut obj);
        let _ = validate(kind, &obj, Some(&value));
        let _ = validate_metadata(&value, true, false);
        let _ = validate_metadata_update(&value, &obj);
        let _ = table(kind, &[value], jiff::Timestamp::now());
    }
}
