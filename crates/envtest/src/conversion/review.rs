//! ConversionReview requests and the checks kube-apiserver makes on the
//! answers (apiextensions-apiserver's webhook converter), with its messages.

use serde_json::{Map, Value, json};

use crate::admission::{HttpResponse, ReviewVersion, decode_body};
use crate::builtin::validation::meta as meta_validation;

/// The ConversionReview `apiVersion` of a review version (chosen from
/// `conversionReviewVersions` as admission webhooks' versions are).
fn api_version(version: ReviewVersion) -> &'static str {
    match version {
        ReviewVersion::V1 => "apiextensions.k8s.io/v1",
        ReviewVersion::V1beta1 => "apiextensions.k8s.io/v1beta1",
    }
}

/// The body sent: the request, and the empty response Go's struct carries
/// along (`{"uid":"","convertedObjects":null,"result":{"metadata":{}}}`).
pub(crate) fn request_body(
    version: ReviewVersion,
    uid: &str,
    desired_api_version: &str,
    objects: &[&Value],
) -> Vec<u8> {
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": api_version(version),
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    });
    serde_json::to_vec(&review).unwrap_or_default()
}

/// The converted objects of a successful answer to the review with `uid`,
/// or why the answer is refused (the text after `conversion webhook for
/// <gvk> failed: `).
pub(crate) fn converted_objects(
    response: &HttpResponse,
    version: ReviewVersion,
    uid: &str,
) -> Result<Vec<Value>, String> {
    let review = decode_body(response)?;
    let Value::Object(review) = review else {
        return Err(
            "couldn't get version/kind; json parse error: the answer is not an object".into(),
        );
    };
    let text = |map: &Map<String, Value>, field: &str| {
        map.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if version == ReviewVersion::V1 {
        let (api_version, kind) = (text(&review, "apiVersion"), text(&review, "kind"));
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            let (group, ver) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {group}/{ver}, Kind={kind}"
            ));
        }
    }
    let Some(Value::Object(answer)) = review.get("response") else {
        return Err("no response provided".to_string());
    };
    // v1beta1 answers were never checked for their uid.
    if version == ReviewVersion::V1 && text(answer, "uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            text(answer, "uid")
        ));
    }
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    let status = result
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if status != "Success" {
        let message = result
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    match answer.get("convertedObjects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(objects)) => Ok(objects.clone()),
        Some(_) => Err(
            "json: cannot unmarshal into Go struct field ConversionResponse.response.convertedObjects of type []runtime.RawExtension"
                .to_string(),
        ),
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `validateConvertedObject`: a conversion may not change the kind, name,
/// namespace or uid.
pub(crate) fn check_identity(original: &Value, converted: &Value) -> Result<(), String> {
    for (what, pointer) in [
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("UID", "/metadata/uid"),
    ] {
        let (expected, got) = (text(original, pointer), text(converted, pointer));
        if expected != got {
            return Err(format!("must have the same {what}: {expected} != {got}"));
        }
    }
    Ok(())
}

/// `restoreObjectMeta`: the converted object keeps the original's metadata,
/// except labels and annotations, which the webhook may change (then they
/// must still be valid).
pub(crate) fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".to_string()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut metadata = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for (field, path) in [
        ("labels", "metadata.labels"),
        ("annotations", "metadata.annotation"),
    ] {
        let answered_field = match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        let before = metadata.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != answered_field.len();
        for (key, value) in answered_field {
            if !value.is_string() {
                return Err(format!(
                    "metadata.{field}[{key}] must be a string, but is {} in converted object",
                    go_type(value)
                ));
            }
            changed |= before.and_then(|b| b.get(key)) != Some(value);
        }
        if changed {
            let as_value = Value::Object(answered_field.clone());
            let causes = if field == "labels" {
                meta_validation::labels(Some(&as_value), path)
            } else {
                meta_validation::annotations(Some(&as_value), path)
            };
            match causes.as_slice() {
                [] => {}
                [one] => return Err(one.summary()),
                many => {
                    let all: Vec<String> = many.iter().map(|c| c.summary()).collect();
                    return Err(format!("[{}]", all.join(", ")));
                }
            }
        }
        metadata.insert(field.to_string(), Value::Object(answered_field.clone()));
    }
    if let Value::Object(map) = converted {
        map.insert("metadata".to_string(), Value::Object(metadata));
    }
    Ok(())
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn answer(body: Value) -> HttpResponse {
        HttpResponse {
            status: 200,
            content_type: Some("application/json".into()),
            body: Bytes::from(body.to_string()),
        }
    }

    fn review(response: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
    }

    #[test]
    fn the_request_names_the_desired_version_and_the_objects() {
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        let body: Value = serde_json::from_slice(&request_body(
            ReviewVersion::V1,
            "u",
            "example.com/v2",
            &[&obj],
        ))
        .unwrap();
        assert_eq!(body["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(body["request"]["uid"], "u");
        assert_eq!(body["request"]["desiredAPIVersion"], "example.com/v2");
        assert_eq!(body["request"]["objects"], json!([obj]));
        assert_eq!(
            ReviewVersion::choose(&["v2".into(), "v1beta1".into(), "v1".into()]),
            Some(ReviewVersion::V1beta1)
        );
        assert_eq!(ReviewVersion::choose(&["v2".into()]), None);
    }

    #[test]
    fn answers_are_checked_as_kube_apiserver_checks_them() {
        let ok = review(
            json!({"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}),
        );
        assert_eq!(
            converted_objects(&answer(ok), ReviewVersion::V1, "u").unwrap(),
            vec![json!({"a": 1})]
        );
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "Status"}),
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /v1, Kind=Status",
            ),
            (
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
                "no response provided",
            ),
            (
                review(json!({"uid": "other", "result": {"status": "Success"}})),
                "expected response.uid=\"u\", got \"other\"",
            ),
            (
                review(
                    json!({"uid": "u", "result": {"status": "Failure", "message": "no v3 here"}}),
                ),
                "no v3 here",
            ),
            (
                review(json!({"uid": "u", "result": {}})),
                "response.result.status was '', not 'Success'",
            ),
        ];
        for (body, message) in cases {
            assert_eq!(
                converted_objects(&answer(body), ReviewVersion::V1, "u").unwrap_err(),
                message
            );
        }
        let beta = json!({"response": {"uid": "x", "result": {"status": "Success"}, "convertedObjects": []}});
        assert!(converted_objects(&answer(beta), ReviewVersion::V1beta1, "u").is_ok());
    }

    #[test]
    fn metadata_comes_back_from_the_original_but_labels_from_the_answer() {
        let original = json!({"kind": "W", "metadata": {"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"x": "1"}}});
        let mut converted = json!({"kind": "W", "metadata": {"name": "a", "uid": "1", "resourceVersion": "9", "labels": {"x": "2"}}, "spec": {}});
        check_identity(&original, &converted).unwrap();
        restore_metadata(&original, &mut converted).unwrap();
        assert_eq!(converted["metadata"]["resourceVersion"], "5");
        assert_eq!(converted["metadata"]["labels"], json!({"x": "2"}));

        let renamed = json!({"kind": "W", "metadata": {"name": "b", "uid": "1"}});
        assert_eq!(
            check_identity(&original, &renamed).unwrap_err(),
            "must have the same name: a != b"
        );
        let mut bad_label = json!({"metadata": {"labels": {"x": "not valid!"}}});
        assert!(
            restore_metadata(&original, &mut bad_label)
                .unwrap_err()
                .starts_with("metadata.labels: Invalid value: \"not valid!\"")
        );
        let mut no_meta = json!({"kind": "W"});
        assert_eq!(
            restore_metadata(&original, &mut no_meta).unwrap_err(),
            "missing metadata in converted object"
        );
    }
}
