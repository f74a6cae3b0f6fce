//! Property tests: arbitrary configurations, requests, webhook answers and
//! patches never make the admission code panic. Seeded, so failures reproduce.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

use super::attributes::{AdmissionAttributes, GroupVersionKind, GroupVersionResource, Operation};
use super::cluster::EmptyCluster;
use super::compiled_webhooks::{HookSet, HookType};
use super::patching;
use super::review::{ReviewVersion, read_response};
use super::routes::WebhookRoute;
use super::transport::HttpResponse;
use super::webhook_errors::denial;
use super::webhook_matching::should_call;
use crate::builtin::validation::webhook_configurations::{
    ConfigurationKind, default_configuration, validate_configuration,
};

const KEYS: &[&str] = &[
    "webhooks",
    "name",
    "rules",
    "operations",
    "apiGroups",
    "apiVersions",
    "resources",
    "scope",
    "clientConfig",
    "url",
    "service",
    "namespace",
    "path",
    "port",
    "caBundle",
    "namespaceSelector",
    "objectSelector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "matchConditions",
    "expression",
    "timeoutSeconds",
    "sideEffects",
    "failurePolicy",
    "admissionReviewVersions",
    "reinvocationPolicy",
    "metadata",
    "labels",
    "response",
    "uid",
    "allowed",
    "status",
    "patch",
    "patchType",
    "warnings",
    "code",
    "message",
    "details",
    "causes",
    "op",
    "from",
    "value",
    "apiVersion",
    "kind",
    "",
];
const STRINGS: &[&str] = &[
    "*",
    "*/*",
    "pods",
    "pods/status",
    "*/status",
    "CREATE",
    "UPDATE",
    "DELETE",
    "",
    "v1",
    "Fail",
    "Ignore",
    "None",
    "Some",
    "IfNeeded",
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Bogus",
    "https://127.0.0.1:1/x",
    "http://x",
    "https://[::1",
    "a.b.c",
    "/",
    "//",
    "/a/../b",
    "object.metadata.name == 'x'",
    "1 +",
    "authorizer.path('x')",
    "W10=",
    "%%%",
    "JSONPatch",
    "add",
    "remove",
    "replace",
    "test",
    "move",
    "copy",
    "/metadata/labels",
    "/a/-",
    "~1",
    "admission.k8s.io/v1",
    "AdmissionReview",
    "Cluster",
    "Namespaced",
];

fn random_value(rng: &mut StdRng, depth: u32) -> Value {
    let choice = if depth == 0 {
        rng.random_range(0..5)
    } else {
        rng.random_range(0..8)
    };
    match choice {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => match rng.random_range(0..4) {
            0 => json!(rng.random_range(-3i64..40)),
            1 => json!(u64::MAX),
            2 => json!(i64::MIN),
            _ => json!(rng.random_range(-1.0f64..1.0)),
        },
        3 | 4 => json!(STRINGS[rng.random_range(0..STRINGS.len())]),
        5 | 6 => {
            let mut map = Map::new();
            for _ in 0..rng.random_range(0..5) {
                let key = KEYS[rng.random_range(0..KEYS.len())];
                map.insert(key.to_string(), random_value(rng, depth - 1));
            }
            Value::Object(map)
        }
        _ => Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
    }
}

/// A valid-looking configuration with one random subtree replaced, so the
/// generator reaches deep fields.
fn mutated_configuration(rng: &mut StdRng) -> Value {
    let mut config = json!({
        "metadata": {"name": "c"},
        "webhooks": [{
            "name": "w.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "/p", "port": 443}, "caBundle": "W10="},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "scope": "*"}],
            "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]},
            "objectSelector": {"matchLabels": {"a": "b"}},
            "matchConditions": [{"name": "m", "expression": "true"}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5
        }]
    });
    let pointers = [
        "/webhooks/0/name",
        "/webhooks/0/clientConfig",
        "/webhooks/0/clientConfig/service",
        "/webhooks/0/clientConfig/caBundle",
        "/webhooks/0/rules",
        "/webhooks/0/rules/0",
        "/webhooks/0/rules/0/resources",
        "/webhooks/0/namespaceSelector",
        "/webhooks/0/namespaceSelector/matchExpressions/0",
        "/webhooks/0/objectSelector",
        "/webhooks/0/matchConditions",
        "/webhooks/0/matchConditions/0/expression",
        "/webhooks/0/timeoutSeconds",
        "/webhooks/0/admissionReviewVersions",
        "/webhooks",
    ];
    for _ in 0..rng.random_range(1..4) {
        let pointer = pointers[rng.random_range(0..pointers.len())];
        let replacement = random_value(rng, 3);
        if let Some(slot) = config.pointer_mut(pointer) {
            *slot = replacement;
        }
    }
    config
}

fn requests(rng: &mut StdRng) -> Vec<AdmissionAttributes> {
    let object = random_value(rng, 3);
    vec![
        AdmissionAttributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "Pod"),
            GroupVersionResource::new("", "v1", "pods"),
            "default",
            "p",
        )
        .with_object(object.clone())
        .with_old_object(random_value(rng, 2)),
        AdmissionAttributes::new(
            Operation::Delete,
            GroupVersionKind::new("", "v1", "Namespace"),
            GroupVersionResource::new("", "v1", "namespaces"),
            "",
            "ns",
        )
        .with_subresource("finalize")
        .with_old_object(object),
    ]
}

#[test]
fn arbitrary_configurations_never_panic() {
    let mut rng = StdRng::seed_from_u64(0xad_1155);
    for round in 0..600 {
        let config = if round % 2 == 0 {
            mutated_configuration(&mut rng)
        } else {
            random_value(&mut rng, 5)
        };
        for kind in [ConfigurationKind::Mutating, ConfigurationKind::Validating] {
            let mut defaulted = config.clone();
            default_configuration(kind, &mut defaulted);
            let _ = validate_configuration(kind, &config, Some(&defaulted));
            let _ = validate_configuration(kind, &defaulted, None);
        }
        let set = HookSet::compile(std::slice::from_ref(&config), HookType::Mutating);
        for attrs in requests(&mut rng) {
            for hook in &set.hooks {
                let _ = should_call(hook, &attrs, attrs.object.as_ref(), &EmptyCluster);
            }
        }
    }
}

#[test]
fn arbitrary_answers_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x5e_7e7);
    for _ in 0..2000 {
        let body = if rng.random_bool(0.2) {
            (0..rng.random_range(0..24))
                .map(|_| rng.random::<u8>())
                .collect::<Vec<u8>>()
        } else {
            let mut review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "u", "allowed": true}});
            if let Some(slot) = review.pointer_mut(
                [
                    "/response",
                    "/response/uid",
                    "/response/allowed",
                    "/kind",
                    "",
                ][rng.random_range(0..5)],
            ) {
                *slot = random_value(&mut rng, 4);
            }
            serde_json::to_vec(&review).unwrap_or_default()
        };
        let response = HttpResponse {
            status: [200, 201, 404, 500, 302, 999][rng.random_range(0..6)],
            content_type: [
                None,
                Some("text/plain".to_string()),
                Some("application/json".to_string()),
            ][rng.random_range(0..3)]
            .clone(),
            body: body.into(),
        };
        for version in [ReviewVersion::V1, ReviewVersion::V1beta1] {
            for mutating in [true, false] {
                let _ = read_response(&response, version, "u", mutating);
            }
        }
        let status = random_value(&mut rng, 3);
        let _ = denial("w", Some(&status));
    }
}

#[test]
fn arbitrary_patches_and_routes_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x9a_7c4);
    for _ in 0..2000 {
        let object = random_value(&mut rng, 3);
        let patch = serde_json::to_vec(&random_value(&mut rng, 3)).unwrap_or_default();
        if let Ok(ops) = patching::decode(&patch) {
            let _ = patching::apply(&object, &ops);
        }
        let route: String = (0..rng.random_range(0..20))
            .map(|_| ['a', '/', ':', '=', '1', '[', ']', '.', '0'][rng.random_range(0..9)])
            .collect();
        let _ = route.parse::<WebhookRoute>();
    }
}
