//! Replays of the recorded CRD and custom-resource steps (transcripts 04,
//! 05, 08, 09, 10, 11, 14) against the schema module: every recorded
//! custom-resource write must come out of prune → default → validate as the
//! recorded object or with the recorded causes, and every recorded CRD with
//! the recorded causes.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{Structural, validate_crd};
use crate::error::Cause;

fn transcript(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/transcripts/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn steps(t: &Value) -> Vec<Value> {
    t["steps"].as_array().cloned().unwrap_or_default()
}

fn body_value(body: &Value) -> Value {
    match body {
        Value::String(yaml) => serde_saphyr::from_str::<Value>(yaml).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

fn causes_of(status: &Value) -> Vec<Cause> {
    serde_json::from_value(status["details"]["causes"].clone()).unwrap_or_default()
}

/// The widgets CRD as created in transcript 08.
fn widget_crd() -> Value {
    let t = transcript("08-crd-lifecycle.json");
    body_value(&steps(&t)[0]["request"]["body"])
}

fn widget_schema() -> Structural {
    let crd = widget_crd();
    Structural::compile(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        .unwrap_or_else(|c| panic!("widget schema rejected: {c:?}"))
}

/// What the server does with a custom resource body: prune, default, validate.
fn prepare(
    s: &Structural,
    mut obj: Value,
    old: Option<&Value>,
) -> (Value, Vec<String>, Vec<Cause>) {
    let unknown = s.prune(&mut obj);
    s.apply_defaults(&mut obj);
    let causes = s.validate(&obj, old);
    (obj, unknown, causes)
}

fn without_metadata(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        // The server drops status on main-resource writes (status subresource).
        m.remove("status");
    }
    v
}

#[test]
fn recorded_crds_validate_as_kube_apiserver() {
    let t = transcript("08-crd-lifecycle.json");
    let mut checked = 0;
    for step in steps(&t) {
        let req = &step["request"];
        if req["method"] != "POST"
            || !req["path"]
                .as_str()
                .unwrap_or("")
                .ends_with("customresourcedefinitions")
        {
            continue;
        }
        let crd = body_value(&req["body"]);
        let status = step["response"]["status"].as_u64().unwrap_or(0);
        let causes = validate_crd(&crd, None);
        let name = step["name"].as_str().unwrap_or("");
        if status == 201 {
            assert!(causes.is_empty(), "{name}: unexpected causes {causes:?}");
            for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
                assert!(
                    Structural::compile(&v["schema"]["openAPIV3Schema"]).is_ok(),
                    "{name}"
                );
            }
        } else {
            assert_eq!(status, 422, "{name}");
            assert_eq!(causes, causes_of(&step["response"]["body"]), "{name}");
        }
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn recorded_custom_resource_writes_match() {
    let s = widget_schema();
    let mut checked = 0;
    for file in [
        "04-patch.json",
        "05-server-side-apply.json",
        "09-custom-resources.json",
        "10-deletion-gc.json",
        "11-namespace-deletion.json",
        "14-dry-run.json",
    ] {
        let t = transcript(file);
        let mut objects: HashMap<String, Value> = HashMap::new();
        for step in steps(&t) {
            let req = &step["request"];
            let path = req["path"].as_str().unwrap_or("");
            if !path.contains("/widgets") || path.ends_with("/status") || req["body"].is_null() {
                continue;
            }
            let name = format!("{file}: {}", step["name"].as_str().unwrap_or(""));
            let resp = &step["response"];
            let status = resp["status"].as_u64().unwrap_or(0);
            let ctype = req["headers"]["Content-Type"].as_str().unwrap_or("");
            let body = body_value(&req["body"]);
            let key = if req["method"] == "POST" {
                body["metadata"]["name"].as_str().unwrap_or("").to_string()
            } else {
                path.rsplit('/').next().unwrap_or("").to_string()
            };
            let old = objects.get(&key).cloned();
            let candidate = match (req["method"].as_str(), ctype) {
                (Some("POST"), _) | (Some("PUT"), _) => body,
                (Some("PATCH"), "application/merge-patch+json") => {
                    let mut o = old.clone().unwrap_or(json!({}));
                    json_patch::merge(&mut o, &body);
                    o
                }
                (Some("PATCH"), "application/json-patch+json") => {
                    let mut o = old.clone().unwrap_or(json!({}));
                    let p: json_patch::Patch = serde_json::from_value(body).unwrap_or_default();
                    if json_patch::patch(&mut o, &p).is_err() {
                        continue;
                    }
                    o
                }
                (Some("PATCH"), "application/apply-patch+yaml") => {
                    let mut o = old.clone().unwrap_or(json!({}));
                    json_patch::merge(&mut o, &body);
                    o
                }
                _ => continue,
            };
            let (obj, unknown, causes) = prepare(&s, candidate, old.as_ref());
            match status {
                200 | 201 => {
                    assert!(causes.is_empty(), "{name}: {causes:?}");
                    assert_eq!(
                        without_metadata(&obj),
                        without_metadata(&resp["body"]),
                        "{name}"
                    );
                    let warned: Vec<String> = resp["warnings"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|w| w.as_str())
                        .map(|w| {
                            w.trim_start_matches("299 - \"unknown field \\\"")
                                .trim_end_matches("\\\"\"")
                                .to_string()
                        })
                        .collect();
                    let ignored = req["query"]["fieldValidation"] == "Ignore";
                    if !ignored {
                        assert_eq!(unknown, warned, "{name}");
                    }
                    objects.insert(key, resp["body"].clone());
                }
                422 => {
                    let expected: Vec<Cause> = causes_of(&resp["body"])
                        .into_iter()
                        .filter(|c| !c.field.starts_with("metadata."))
                        .collect();
                    assert_eq!(causes, expected, "{name}");
                }
                400 => {
                    let message = resp["body"]["message"].as_str().unwrap_or("");
                    let listed = unknown
                        .iter()
                        .map(|p| format!("unknown field \"{p}\""))
                        .collect::<Vec<_>>()
                        .join(", ");
                    assert!(
                        message.ends_with(&format!("strict decoding error: {listed}")),
                        "{name}: {message}"
                    );
                }
                _ => continue,
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} steps replayed");
}

#[test]
fn preserve_unknown_fields_thing_is_kept_whole() {
    let t = transcript("08-crd-lifecycle.json");
    let st = steps(&t);
    let crd_step = st
        .iter()
        .find(|s| {
            s["name"]
                .as_str()
                .unwrap_or("")
                .contains("throw-away cluster-scoped CRD")
        })
        .expect("thing CRD step");
    let crd = body_value(&crd_step["request"]["body"]);
    let s = Structural::compile(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        .expect("compiles");
    let thing_step = st
        .iter()
        .find(|s| s["request"]["path"] == "/apis/t08.example.com/v1/things")
        .expect("thing create step");
    let (obj, unknown, causes) = prepare(&s, body_value(&thing_step["request"]["body"]), None);
    assert!(unknown.is_empty() && causes.is_empty());
    assert_eq!(
        without_metadata(&obj),
        without_metadata(&thing_step["response"]["body"])
    );
}
