//! The validating webhook of Database (`zalando.org/v1`): the API
//! server asks it before it creates, updates or deletes a Database, and
//! refuses the request with the webhook's message when it denies it.
//!
//! This file is yours: write the rules in [`validate_create`],
//! [`validate_update`] and [`validate_delete`]. opctl never overwrites it
//! without `--force`. The `+opctl:webhook` line says how the API server
//! calls the webhook; `opctl manifests` turns it into
//! config/webhook/manifests.yaml.

use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use database::api::zalando::v1::Database;
use database::manager::{self, Manager, webhook};

// +opctl:webhook:path=/validate-zalando-org-v1-database,mutating=false,failurePolicy=fail,sideEffects=None,groups=zalando.org,resources=databases,verbs=create;update;delete,versions=v1,name=vdatabase-v1.zalando.org,admissionReviewVersions=v1

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/validate-zalando-org-v1-database";

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server.
pub async fn handle(
    _ctx: manager::Context, // the manager's client, for rules that depend on other objects
    request: AdmissionRequest<Database>,
) -> AdmissionResponse {
    review(&request)
}

/// Allows the request, or denies it with the rule's message.
fn review(request: &AdmissionRequest<Database>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let verdict = match (&request.operation, &request.object, &request.old_object) {
        (Operation::Create, Some(object), _) => validate_create(object),
        (Operation::Update, Some(object), Some(old)) => validate_update(old, object),
        (Operation::Delete, _, Some(old)) => validate_delete(old),
        _ => Ok(()),
    };
    match verdict {
        Ok(()) => response,
        Err(message) => webhook::deny(response, message),
    }
}

/// Whether a new Database may be created; the error is the message the client sees.
fn validate_create(object: &Database) -> Result<(), String> {
    validate(object)
}

/// Whether `old` may become `object`.
fn validate_update(
    _old: &Database, // as stored now
    object: &Database,
) -> Result<(), String> {
    validate(object)
}

/// Whether `object` may be deleted.
fn validate_delete(_object: &Database) -> Result<(), String> {
    Ok(())
}

/// The rules shared by create and update.
fn validate(object: &Database) -> Result<(), String> {
    // TODO: your rules. This example refuses an empty `spec.foo`.
    if object.spec.foo.as_deref() == Some("") {
        return Err("spec.foo must not be empty".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::AdmissionReview;

    /// An AdmissionReview as the API server sends it.
    fn request(
        operation: &str,
        object: Option<serde_json::Value>,
        old_object: Option<serde_json::Value>,
    ) -> AdmissionRequest<Database> {
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "zalando.org", "version": "v1", "kind": "Database"},
                "resource": {"group": "zalando.org", "version": "v1", "resource": "databases"},
                "name": "test",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old_object,
            },
        });
        let review: AdmissionReview<Database> =
            serde_json::from_value(review).expect("a valid AdmissionReview");
        review.try_into().expect("a request")
    }

    fn object(foo: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "zalando.org/v1",
            "kind": "Database",
            "metadata": {"name": "test"},
            "spec": {"foo": foo},
        })
    }

    #[test]
    fn a_valid_object_is_allowed() {
        let valid = object("bar");
        let response = review(&request("CREATE", Some(valid.clone()), None));
        assert!(response.allowed);
        let response = review(&request("UPDATE", Some(valid.clone()), Some(valid.clone())));
        assert!(response.allowed);
        let response = review(&request("DELETE", None, Some(valid)));
        assert!(response.allowed);
    }

    #[test]
    fn an_invalid_object_is_denied_with_a_message() {
        let valid = object("bar");
        let invalid = object("");
        let response = review(&request("CREATE", Some(invalid.clone()), None));
        assert!(!response.allowed);
        let message = &response.result.message;
        assert_eq!(message, "spec.foo must not be empty");
        let response = review(&request("UPDATE", Some(invalid), Some(valid)));
        assert!(!response.allowed);
    }
}
