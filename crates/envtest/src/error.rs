//! API errors, shaped exactly like kube-apiserver's `metav1.Status` failures.
//!
//! Every module of the server reports failures as an [`ApiError`]; the HTTP
//! layer serialises it with [`ApiError::to_status`]. Nothing in the request path
//! panics: anything unexpected becomes a 500 `Status`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One field-level cause of an error (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// e.g. `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`,
    /// `FieldValueTypeInvalid`, `FieldValueDuplicate`, `FieldValueForbidden`,
    /// `FieldValueTooLong`, `FieldManagerConflict`; empty (and omitted) for
    /// causes the real server sends without a reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What is wrong with the field.
    pub message: String,
    /// Field path, e.g. `metadata.name` or `spec.containers[0].image`; empty when absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Cause {
    /// A cause with a reason, a field path and a message.
    pub fn new(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Cause {
            reason: reason.to_string(),
            message: message.into(),
            field: field.into(),
        }
    }

    /// `FieldValueInvalid`: `Invalid value: <json value>: <detail>`.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {}", go_value(value), detail),
        )
    }

    /// `FieldValueRequired`: `Required value` (optionally `Required value: <detail>`).
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause::new("FieldValueRequired", field, message)
    }

    /// `FieldValueNotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[&str]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        Cause::new(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {list}",
                go_value(value)
            ),
        )
    }

    /// `FieldValueForbidden`: `Forbidden: <detail>`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
    }

    /// `FieldValueDuplicate`: `Duplicate value: <value>`.
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Cause::new(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", go_value(value)),
        )
    }

    /// The `field: message` form used when causes are joined into a Status message.
    pub fn summary(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// Renders a value the way Go's `%#v`-ish field error printing does for JSON
/// values: strings quoted, numbers and booleans bare, `null` as `null`.
pub(crate) fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

/// `details` of a Status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Details {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    #[serde(
        default,
        rename = "retryAfterSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after_seconds: Option<u32>,
}

/// A failed request, as kube-apiserver reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status code.
    pub code: u16,
    /// Empty for the few errors the real server sends without a reason (e.g. some 500s).
    pub reason: String,
    /// The human-readable message.
    pub message: String,
    /// `None` omits `details`; `Some(Details::default())` sends `"details": {}`.
    /// Boxed so that `Result<T, ApiError>` stays small on the happy path.
    pub details: Option<Box<Details>>,
}

/// The error type of every fallible operation in the server.
pub type ApiResult<T> = Result<T, ApiError>;

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// Names a resource in error messages: `configmaps "cm1"` or `widgets.example.com "w1"`.
fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    /// An error with a code, a reason and a message, without details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
        }
    }

    /// This error with `details`.
    pub fn with_details(mut self, details: Details) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// 404 for a path the server does not serve (`details: {}`).
    pub fn not_found_path() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(Details::default())
    }

    /// 404 for a missing object: `configmaps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", qualified(resource, group)),
        )
        .with_details(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..Details::default()
        })
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", qualified(resource, group)),
        )
        .with_details(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..Details::default()
        })
    }

    /// 409 Conflict: `Operation cannot be fulfilled on <resource> "<name>": <detail>`.
    pub fn conflict(group: &str, resource: &str, name: &str, detail: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {detail}",
                qualified(resource, group)
            ),
        )
        .with_details(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..Details::default()
        })
    }

    /// The optimistic-concurrency conflict (stale resourceVersion).
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        ApiError::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `Kind[.group] "name" is invalid: <causes>`.
    /// One cause is printed bare, several as `[a, b]`, as the real server does.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let summary = match causes.as_slice() {
            [one] => one.summary(),
            many => format!(
                "[{}]",
                many.iter()
                    .map(Cause::summary)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        ApiError::new(
            422,
            "Invalid",
            format!("{} {name:?} is invalid: {summary}", qualified(kind, group)),
        )
        .with_details(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes,
            ..Details::default()
        })
    }

    /// 403 Forbidden: `<resource> "<name>" is forbidden: <detail>`, without
    /// a name `<resource> is forbidden: <detail>`, without a resource
    /// `forbidden: <detail>`.
    pub fn forbidden(group: &str, resource: &str, name: &str, detail: &str) -> Self {
        let message = match (resource, name) {
            ("", _) => format!("forbidden: {detail}"),
            (_, "") => format!("{} is forbidden: {detail}", qualified(resource, group)),
            _ => format!(
                "{} {name:?} is forbidden: {detail}",
                qualified(resource, group)
            ),
        };
        ApiError::new(403, "Forbidden", message).with_details(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..Details::default()
        })
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(Details::default())
    }

    /// 405 MethodNotAllowed for a verb a resource refuses (`NewMethodNotSupported`).
    pub fn method_not_supported(group: &str, resource: &str, message: &str) -> Self {
        ApiError::new(405, "MethodNotAllowed", message).with_details(Details {
            group: group.to_string(),
            kind: resource.to_string(),
            ..Details::default()
        })
    }

    /// 406 NotAcceptable from a handler's negotiation (`media types` lists
    /// what it serves).
    pub fn not_acceptable_of(media_types: &str) -> Self {
        Self::not_acceptable_message(format!(
            "only the following media types are accepted: {media_types}"
        ))
    }

    /// 406 NotAcceptable with `message` and no details.
    pub fn not_acceptable_message(message: impl Into<String>) -> Self {
        ApiError::new(406, "NotAcceptable", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        ApiError::new(415, "UnsupportedMediaType", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 410 Gone / Expired (an expired resourceVersion).
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    /// A 500 with no reason, as the storage layer reports some misuse.
    pub(crate) fn internal_no_reason(message: &str) -> Self {
        ApiError {
            code: 500,
            reason: String::new(),
            message: message.to_string(),
            details: None,
        }
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        ApiError::new(504, "Timeout", message)
    }

    /// The `Status` object sent to the client.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        let map = status.as_object_mut().expect("literal object");
        if !self.reason.is_empty() {
            map.insert("reason".into(), Value::String(self.reason.clone()));
        }
        if let Some(details) = &self.details {
            map.insert(
                "details".into(),
                serde_json::to_value(details).unwrap_or_else(|_| json!({})),
            );
        }
        map.insert("code".into(), json!(self.code));
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_joins_several_causes_in_brackets() {
        let err = ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![
                Cause::required("metadata.name", ""),
                Cause::required("data", ""),
            ],
        );
        assert_eq!(
            err.message,
            "ConfigMap \"x\" is invalid: [metadata.name: Required value, data: Required value]"
        );
        assert_eq!(err.to_status()["details"]["causes"][1]["field"], "data");
    }

    #[test]
    fn status_matches_recorded_not_found_shape() {
        let status = ApiError::not_found("", "configmaps", "missing").to_status();
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "configmaps \"missing\" not found", "reason": "NotFound",
                   "details": {"name": "missing", "kind": "configmaps"}, "code": 404})
        );
    }

    #[test]
    fn go_value_quotes_strings_only() {
        assert_eq!(go_value(&json!("a")), "\"a\"");
        assert_eq!(go_value(&json!(0)), "0");
        assert_eq!(go_value(&json!(true)), "true");
    }
}
