//! AdmissionReview requests and the checks kube-apiserver makes on the
//! answers (`request.CreateAdmissionObjects`, client-go's response handling
//! and `request.VerifyAdmissionResponse`).
//!
//! Go's JSON decoder words its errors its own way; the common ones (not JSON
//! at all, truncated JSON, a field of the wrong type, bad base64) are
//! reproduced, rarer ones carry serde's description instead.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::transport::HttpResponse;

/// Which AdmissionReview version a webhook is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReviewVersion {
    V1,
    V1beta1,
}

impl ReviewVersion {
    /// The first version of `admissionReviewVersions` envtest speaks.
    pub(crate) fn choose(accepted: &[String]) -> Option<ReviewVersion> {
        accepted.iter().find_map(|v| match v.as_str() {
            "v1" => Some(ReviewVersion::V1),
            "v1beta1" => Some(ReviewVersion::V1beta1),
            _ => None,
        })
    }

    fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => "admission.k8s.io/v1",
            ReviewVersion::V1beta1 => "admission.k8s.io/v1beta1",
        }
    }
}

/// What a webhook answered, once checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ReviewResponse {
    pub allowed: bool,
    pub status: Option<Value>,
    pub patch: Vec<u8>,
    /// `None` when no patch type was given.
    pub patch_type: Option<String>,
    pub warnings: Vec<String>,
}

/// The AdmissionReview body sent to a webhook.
pub(crate) fn request_body(version: ReviewVersion, request: Value) -> Vec<u8> {
    let review = json!({
        "kind": "AdmissionReview",
        "apiVersion": version.api_version(),
        "request": request,
    });
    serde_json::to_vec(&review).unwrap_or_default()
}

fn type_error(value: &Value, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field AdmissionReview.{field} of type {go_type}",
        crate::gofmt::json_kind(value)
    )
}

/// Go's `encoding/json` wording for a body that does not parse.
fn json_syntax_error(body: &[u8], error: &serde_json::Error) -> String {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let first = start.and_then(|i| body.get(i)).copied();
    // A bare word that is not true, false or null: Go names the first wrong letter.
    if let (Some(i), Some(word)) = (
        start,
        ["true", "false", "null"]
            .into_iter()
            .find(|w| first == w.bytes().next()),
    ) {
        let rest = body.get(i..).unwrap_or_default();
        for (have, want) in rest.iter().zip(word.bytes()).skip(1) {
            if *have != want {
                return format!(
                    "invalid character {:?} in literal {word} (expecting {:?})",
                    char::from(*have),
                    char::from(want)
                );
            }
        }
    }
    match first {
        Some(c) if !b"{[\"tfn-0123456789".contains(&c) => format!(
            "invalid character {:?} looking for beginning of value",
            char::from(c)
        ),
        _ if error.is_eof() => "unexpected end of JSON input".to_string(),
        _ => error.to_string(),
    }
}

/// client-go's error for a non-2xx answer: the Status it carries, or a
/// generic message for the code (`apierrors.NewGenericServerResponse`).
fn unsuccessful(response: &HttpResponse) -> String {
    if let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&response.body) {
        let kind = body.get("kind").and_then(Value::as_str);
        let api_version = body
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("v1");
        if kind == Some("Status")
            && api_version == "v1"
            && body.get("status").and_then(Value::as_str) == Some("Failure")
        {
            return body
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
        }
    }
    let is_text = match &response.content_type {
        None => true,
        Some(ct) => ct.trim_start().to_ascii_lowercase().starts_with("text/"),
    };
    let server_message = if is_text {
        let end = response.body.len().min(2048);
        String::from_utf8_lossy(response.body.get(..end).unwrap_or_default())
            .trim()
            .to_string()
    } else {
        "unknown".to_string()
    };
    let code = response.status;
    match code {
        409 => "the server reported a conflict".to_string(),
        404 => "the server could not find the requested resource".to_string(),
        400 => "the server rejected our request for an unknown reason".to_string(),
        401 => "the server has asked for the client to provide credentials".to_string(),
        403 | 415 => server_message,
        406 if server_message.is_empty() || server_message == "unknown" => {
            "the server was unable to respond with a content type that the client supports"
                .to_string()
        }
        406 => server_message,
        405 => "the server does not allow this method on the requested resource".to_string(),
        422 => "the server rejected our request due to an error in our request".to_string(),
        503 => "the server is currently unable to handle the request".to_string(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".to_string(),
        429 => "the server has received too many requests and has asked us to try again later"
            .to_string(),
        c if c >= 500 => format!(
            "an error on the server ({server_message:?}) has prevented the request from succeeding"
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// The JSON a webhook answered, as client-go's REST client reads it: a
/// non-2xx answer, an empty body or a body that is not JSON is an error
/// worded as client-go words it. Shared by admission and conversion webhooks.
pub(crate) fn decode_body(response: &HttpResponse) -> Result<Value, String> {
    if !(200..=206).contains(&response.status) {
        return Err(unsuccessful(response));
    }
    if response.body.is_empty() {
        return Err(format!(
            "0-length response with status code: {} and content type: {}",
            response.status,
            response
                .content_type
                .as_deref()
                .unwrap_or("application/json")
        ));
    }
    serde_json::from_slice(&response.body).map_err(|e| {
        format!(
            "couldn't get version/kind; json parse error: {}",
            json_syntax_error(&response.body, &e)
        )
    })
}

/// Failures while reading the answer: reported as `failed to call webhook: <text>`
/// (`Decode`) or `received invalid webhook response: <text>` (`Verify`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResponseError {
    Decode(String),
    Verify(String),
}

/// Decodes and checks one answer to the review with `uid`.
pub(crate) fn read_response(
    response: &HttpResponse,
    version: ReviewVersion,
    uid: &str,
    mutating: bool,
) -> Result<ReviewResponse, ResponseError> {
    use ResponseError::{Decode, Verify};
    let review = decode_body(response).map_err(Decode)?;
    let Value::Object(review) = review else {
        return Err(Decode(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            crate::gofmt::json_kind(&review)
        )));
    };
    let type_meta = |field: &str| -> Result<String, ResponseError> {
        match review.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(Decode(format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
                crate::gofmt::json_kind(other)
            ))),
        }
    };
    let api_version = type_meta("apiVersion")?;
    let kind = type_meta("kind")?;
    let (decoded, has_response) = decode_response(&review)?;

    if !has_response {
        return Err(Verify("webhook response was absent".to_string()));
    }
    if version == ReviewVersion::V1beta1 {
        // v1beta1 answers were never checked for uid, kind or patch type.
        let mut response = ReviewResponse::from(decoded);
        if !mutating {
            response.patch.clear();
        }
        response.patch_type = (!response.patch.is_empty()).then(|| "JSONPatch".to_string());
        return Ok(response);
    }
    if decoded.uid != uid {
        return Err(Verify(format!(
            "expected response.uid={uid:?}, got {:?}",
            decoded.uid
        )));
    }
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        let (group, ver) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
        return Err(Verify(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{ver}, Kind={kind}"
        )));
    }
    if mutating {
        if !decoded.patch.is_empty() && decoded.patch_type.is_none() {
            return Err(Verify(
                "webhook returned response.patch but not response.patchType".to_string(),
            ));
        }
        if decoded.patch.is_empty() && decoded.patch_type.is_some() {
            return Err(Verify(
                "webhook returned response.patchType but not response.patch".to_string(),
            ));
        }
        if decoded.patch_type.as_deref() == Some("") {
            return Err(Verify(
                "webhook returned invalid response.patchType of \"\"".to_string(),
            ));
        }
    } else {
        if !decoded.patch.is_empty() {
            return Err(Verify(
                "validating webhook may not return response.patch".to_string(),
            ));
        }
        if decoded.patch_type.is_some() {
            return Err(Verify(
                "validating webhook may not return response.patchType".to_string(),
            ));
        }
    }
    Ok(decoded.into())
}

#[derive(Debug, Clone, Default)]
struct Decoded {
    uid: String,
    allowed: bool,
    status: Option<Value>,
    patch: Vec<u8>,
    patch_type: Option<String>,
    warnings: Vec<String>,
}

impl From<Decoded> for ReviewResponse {
    fn from(d: Decoded) -> Self {
        ReviewResponse {
            allowed: d.allowed,
            status: d.status,
            patch: d.patch,
            patch_type: d.patch_type,
            warnings: d.warnings,
        }
    }
}

/// The typed fields of `response`, with Go's zero values for `null`. The
/// bool says whether a response was there at all.
fn decode_response(review: &Map<String, Value>) -> Result<(Decoded, bool), ResponseError> {
    use ResponseError::Decode;
    let response = match review.get("response") {
        None | Some(Value::Null) => return Ok((Decoded::default(), false)),
        Some(Value::Object(r)) => r,
        Some(other) => {
            return Err(Decode(type_error(
                other,
                "response",
                "v1.AdmissionResponse",
            )));
        }
    };
    let mut decoded = Decoded::default();
    for (field, value) in response {
        if value.is_null() {
            continue;
        }
        let path = format!("response.{field}");
        match field.as_str() {
            "uid" => {
                decoded.uid = value
                    .as_str()
                    .ok_or_else(|| Decode(type_error(value, &path, "types.UID")))?
                    .to_string();
            }
            "allowed" => {
                decoded.allowed = value
                    .as_bool()
                    .ok_or_else(|| Decode(type_error(value, &path, "bool")))?;
            }
            "status" => {
                let Some(status) = value.as_object() else {
                    return Err(Decode(type_error(value, &path, "v1.Status")));
                };
                for (field, go_type) in [
                    ("status", "string"),
                    ("message", "string"),
                    ("reason", "v1.StatusReason"),
                ] {
                    if let Some(v) = status.get(field).filter(|v| !v.is_null() && !v.is_string()) {
                        return Err(Decode(type_error(v, &format!("{path}.{field}"), go_type)));
                    }
                }
                if let Some(code) = status.get("code").filter(|v| !v.is_null())
                    && code.as_i64().is_none_or(|c| i32::try_from(c).is_err())
                {
                    return Err(Decode(type_error(code, &format!("{path}.code"), "int32")));
                }
                decoded.status = Some(value.clone());
            }
            "patch" => {
                decoded.patch = match value {
                    Value::String(text) => base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .map_err(|e| Decode(base64_error(&e)))?,
                    // Go decodes a JSON array of bytes into `[]byte` too; kube-rs's
                    // `AdmissionResponse` serialises its patch that way.
                    Value::Array(items) => items
                        .iter()
                        .map(|item| {
                            item.as_u64()
                                .and_then(|n| u8::try_from(n).ok())
                                .ok_or_else(|| Decode(type_error(item, &path, "uint8")))
                        })
                        .collect::<Result<Vec<u8>, _>>()?,
                    Value::Null => Vec::new(),
                    other => return Err(Decode(type_error(other, &path, "[]uint8"))),
                };
            }
            "patchType" => {
                decoded.patch_type = Some(
                    value
                        .as_str()
                        .ok_or_else(|| Decode(type_error(value, &path, "v1.PatchType")))?
                        .to_string(),
                );
            }
            "warnings" => {
                let items = value
                    .as_array()
                    .ok_or_else(|| Decode(type_error(value, &path, "[]string")))?;
                for item in items {
                    let w = item
                        .as_str()
                        .ok_or_else(|| Decode(type_error(item, &path, "string")))?;
                    decoded.warnings.push(w.to_string());
                }
            }
            "auditAnnotations" if !value.is_object() => {
                return Err(Decode(type_error(value, &path, "map[string]string")));
            }
            _ => {}
        }
    }
    Ok((decoded, true))
}

/// Go's `base64.CorruptInputError` wording.
fn base64_error(e: &base64::DecodeError) -> String {
    let offset = match e {
        base64::DecodeError::InvalidByte(offset, _)
        | base64::DecodeError::InvalidLastSymbol(offset, _) => *offset,
        base64::DecodeError::InvalidLength(len) => *len,
        base64::DecodeError::InvalidPadding => 0,
    };
    format!("illegal base64 data at input byte {offset}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn answer(status: u16, content_type: Option<&str>, body: &str) -> HttpResponse {
        HttpResponse {
            status,
            content_type: content_type.map(str::to_string),
            body: Bytes::from(body.to_string()),
        }
    }

    fn ok(body: Value) -> HttpResponse {
        answer(200, Some("application/json"), &body.to_string())
    }

    fn read(r: &HttpResponse, mutating: bool) -> Result<ReviewResponse, ResponseError> {
        read_response(r, ReviewVersion::V1, "u1", mutating)
    }

    #[test]
    fn review_versions_prefer_the_first_known() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            ReviewVersion::choose(&v(&["v2", "v1beta1", "v1"])),
            Some(ReviewVersion::V1beta1)
        );
        assert_eq!(ReviewVersion::choose(&v(&["v1"])), Some(ReviewVersion::V1));
        assert_eq!(ReviewVersion::choose(&v(&["v2"])), None);
    }

    #[test]
    fn good_answer_decodes() {
        let r = read(
            &ok(
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "u1", "allowed": true, "patchType": "JSONPatch",
                    "patch": "W10=", "warnings": ["w1"]}}),
            ),
            true,
        )
        .unwrap();
        assert!(r.allowed);
        assert_eq!(r.patch, b"[]");
        assert_eq!(r.warnings, ["w1"]);
    }

    #[test]
    fn a_patch_sent_as_an_array_of_bytes_decodes_as_in_go() {
        // kube-rs's AdmissionResponse serialises `patch` as numbers, not base64.
        let answer = |patch: Value| {
            ok(
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "u1", "allowed": true, "patchType": "JSONPatch", "patch": patch}}),
            )
        };
        let r = read(&answer(json!([91, 93])), true).unwrap();
        assert_eq!(r.patch, b"[]");
        assert!(read(&answer(json!([91, 256])), true).is_err());
        assert!(read(&answer(json!(["a"])), true).is_err());
    }

    #[test]
    fn verification_failures() {
        let base = |response: Value| {
            ok(
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
            )
        };
        let verify = |r: HttpResponse, m: bool| match read(&r, m) {
            Err(ResponseError::Verify(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            verify(base(json!({"uid": "other", "allowed": true})), false),
            "expected response.uid=\"u1\", got \"other\""
        );
        assert_eq!(
            verify(base(Value::Null), false),
            "webhook response was absent"
        );
        assert_eq!(
            verify(
                ok(json!({"response": {"uid": "u1", "allowed": true}})),
                false
            ),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
        );
        assert_eq!(
            verify(
                ok(
                    json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": "u1"}})
                ),
                false
            ),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        assert_eq!(
            verify(
                base(json!({"uid": "u1", "allowed": true, "patch": "W10="})),
                true
            ),
            "webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            verify(
                base(json!({"uid": "u1", "allowed": true, "patchType": "JSONPatch"})),
                true
            ),
            "webhook returned response.patchType but not response.patch"
        );
        assert_eq!(
            verify(
                base(json!({"uid": "u1", "allowed": true, "patch": "W10="})),
                false
            ),
            "validating webhook may not return response.patch"
        );
    }

    #[test]
    fn decode_failures_use_go_wording() {
        let decode = |r: HttpResponse| match read(&r, true) {
            Err(ResponseError::Decode(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            decode(answer(200, None, "<html>")),
            "couldn't get version/kind; json parse error: invalid character '<' looking for beginning of value"
        );
        assert_eq!(
            decode(answer(200, None, "not json")),
            "couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u')"
        );
        assert_eq!(
            decode(answer(200, None, "{\"response\": ")),
            "couldn't get version/kind; json parse error: unexpected end of JSON input"
        );
        assert_eq!(
            decode(answer(200, Some("application/json"), "")),
            "0-length response with status code: 200 and content type: application/json"
        );
        assert_eq!(
            decode(ok(json!({"response": {"allowed": "yes"}}))),
            "json: cannot unmarshal string into Go struct field AdmissionReview.response.allowed of type bool"
        );
        assert_eq!(
            decode(ok(json!({"response": {"status": {"code": "403"}}}))),
            "json: cannot unmarshal string into Go struct field AdmissionReview.response.status.code of type int32"
        );
        assert_eq!(
            decode(ok(json!({"response": {"patch": "a*=="}}))),
            "illegal base64 data at input byte 1"
        );
        assert_eq!(
            decode(answer(404, None, "nope")),
            "the server could not find the requested resource"
        );
        assert_eq!(
            decode(answer(500, Some("text/plain"), "boom\n")),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(
            decode(answer(500, Some("application/json"), "{}")),
            "an error on the server (\"unknown\") has prevented the request from succeeding"
        );
        assert_eq!(
            decode(answer(500, Some("application/json"), &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "broken"}).to_string())),
            "broken"
        );
    }

    #[test]
    fn v1beta1_answers_are_not_checked() {
        let r = read_response(
            &ok(json!({"response": {"uid": "whatever", "allowed": true, "patch": "W10="}})),
            ReviewVersion::V1beta1,
            "u1",
            true,
        )
        .unwrap();
        assert_eq!(r.patch_type.as_deref(), Some("JSONPatch"));
    }
}
