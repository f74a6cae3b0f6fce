//! The errors kube-apiserver reports for webhook calls, with its messages.

use serde_json::Value;

use crate::error::{ApiError, Cause, Details};

/// How one webhook call went wrong, before the failure policy is applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HookError {
    /// The webhook could not be called or answered nonsense
    /// (`ErrCallingWebhook`): `failurePolicy` decides. The text is the reason
    /// that follows `failed calling webhook "<name>": `.
    Calling(String),
    /// The webhook denied the request, or the request failed for a reason no
    /// failure policy covers: returned to the client as it is.
    Fatal(ApiError),
}

/// `apierrors.NewInternalError`: 500 with the message repeated as a cause.
pub(crate) fn internal_error(message: &str) -> ApiError {
    ApiError::new(
        500,
        "InternalError",
        format!("Internal error occurred: {message}"),
    )
    .with_details(Details {
        causes: vec![Cause::new("", "", message)],
        ..Details::default()
    })
}

/// A failed call under `failurePolicy: Fail`.
pub(crate) fn calling_failure(webhook: &str, reason: &str) -> ApiError {
    internal_error(&format!("failed calling webhook {webhook:?}: {reason}"))
}

/// The namespace of a namespaced request does not exist (namespaceSelector lookup).
pub(crate) fn namespace_not_found(namespace: &str) -> ApiError {
    ApiError::not_found("", "namespaces", namespace)
}

/// A dry-run request reached a webhook that may have side effects.
pub(crate) fn dry_run_unsupported(webhook: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook {webhook:?} does not support dry run"
    ))
}

/// `apierrors.NewForbidden(groupResource, name, err)`.
pub(crate) fn forbidden(
    group: &str,
    group_resource: &str,
    resource: &str,
    name: &str,
    detail: &str,
) -> ApiError {
    let message = if name.is_empty() {
        format!("{group_resource} is forbidden: {detail}")
    } else {
        format!("{group_resource} {name:?} is forbidden: {detail}")
    };
    ApiError::new(403, "Forbidden", message).with_details(Details {
        name: name.to_string(),
        group: group.to_string(),
        kind: resource.to_string(),
        ..Details::default()
    })
}

fn text(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A denial (`webhookerrors.ToStatusErr`): the webhook's `status` with its
/// message prefixed by `admission webhook "<name>" denied the request`, a
/// code of at least 400 (400 when the webhook gave none) and the webhook's
/// reason and details passed through.
pub(crate) fn denial(webhook: &str, status: Option<&Value>) -> ApiError {
    let empty = Value::Null;
    let status = status.unwrap_or(&empty);
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let message = text(status, "message");
    let reason = text(status, "reason");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let code = status.get("code").and_then(Value::as_i64).unwrap_or(0);
    // Go's HTTP server refuses codes past 999; those end as 500.
    let code = match code {
        c if c < 400 => 400,
        c if c > 999 => 500,
        c => c as u16,
    };
    let mut error = ApiError::new(code, &reason, message);
    if let Some(details) = status.get("details").filter(|d| d.is_object()) {
        error = error.with_details(parse_details(details));
    }
    error
}

fn parse_details(details: &Value) -> Details {
    let causes = details
        .get("causes")
        .and_then(Value::as_array)
        .map(|causes| {
            causes
                .iter()
                .map(|c| Cause::new(&text(c, "reason"), text(c, "field"), text(c, "message")))
                .collect()
        })
        .unwrap_or_default();
    Details {
        name: text(details, "name"),
        group: text(details, "group"),
        kind: text(details, "kind"),
        uid: text(details, "uid"),
        causes,
        retry_after_seconds: details
            .get("retryAfterSeconds")
            .and_then(Value::as_u64)
            .and_then(|s| u32::try_from(s).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn denial_messages() {
        let e = denial(
            "v.example.com",
            Some(&json!({"message": "no", "code": 403, "reason": "Forbidden"})),
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request: no"
        );
        assert!(e.details.is_none());

        let e = denial("w", Some(&json!({"reason": "because"})));
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"w\" denied the request: because"
        );

        let e = denial("w", None);
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, "");
        assert_eq!(
            e.message,
            "admission webhook \"w\" denied the request without explanation"
        );

        let e = denial("w", Some(&json!({"code": 200})));
        assert_eq!(e.code, 400);
        let e = denial(
            "w",
            Some(
                &json!({"code": 422, "details": {"causes": [{"field": "spec.x", "message": "bad"}]}}),
            ),
        );
        assert_eq!(e.code, 422);
        assert_eq!(e.details.unwrap().causes[0].field, "spec.x");
    }

    #[test]
    fn calling_failure_is_an_internal_error_with_a_cause() {
        let e = calling_failure("w", "failed to call webhook: boom");
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "Internal error occurred: failed calling webhook \"w\": failed to call webhook: boom"
        );
        assert_eq!(
            e.details.unwrap().causes[0].message,
            "failed calling webhook \"w\": failed to call webhook: boom"
        );
    }
}
