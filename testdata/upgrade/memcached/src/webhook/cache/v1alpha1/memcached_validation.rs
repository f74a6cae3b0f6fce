//! The validating webhook of Memcached (`cache.example.com/v1alpha1`): the API
//! server asks it before it creates, updates or deletes a Memcached, and
//! refuses the request with the webhook's message when it denies it.
//!
//! This file is yours: write the rules in [`validate_create`],
//! [`validate_update`] and [`validate_delete`]. opctl never overwrites it
//! without `--force`. The `+opctl:webhook` line says how the API server
//! calls the webhook; `opctl manifests` turns it into
//! config/webhook/manifests.yaml.

use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use memcached::api::cache::v1alpha1::Memcached;
use memcached::manager::{self, Manager, webhook};

// +opctl:webhook:path=/validate-cache-example-com-v1alpha1-memcached,mutating=false,failurePolicy=fail,sideEffects=None,groups=cache.example.com,resources=memcacheds,verbs=create;update;delete,versions=v1alpha1,name=vmemcached-v1alpha1.cache.example.com,admissionReviewVersions=v1

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/validate-cache-example-com-v1alpha1-memcached";

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server.
pub async fn handle(
    _ctx: manager::Context, // the manager's client, for rules that depend on other objects
    request: AdmissionRequest<Memcached>,
) -> AdmissionResponse {
    review(&request)
}

/// Allows the request, or denies it with the rule's message.
fn review(request: &AdmissionRequest<Memcached>) -> AdmissionResponse {
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

/// Whether a new Memcached may be created; the error is the message the client sees.
fn validate_create(object: &Memcached) -> Result<(), String> {
    validate(object)
}

/// Whether `old` may become `object`.
fn validate_update(
    _old: &Memcached, // as stored now
    object: &Memcached,
) -> Result<(), String> {
    validate(object)
}

/// Whether `object` may be deleted.
fn validate_delete(_object: &Memcached) -> Result<(), String> {
    Ok(())
}

/// The rules shared by create and update.
fn validate(object: &Memcached) -> Result<(), String> {
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
    ) -> AdmissionRequest<Memcached> {
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "cache.example.com", "version": "v1alpha1", "kind": "Memcached"},
                "resource": {"group": "cache.example.com", "version": "v1alpha1", "resource": "memcacheds"},
                "name": "test",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old_object,
            },
        });
        let review: AdmissionReview<Memcached> =
            serde_json::from_value(review).expect("a valid AdmissionReview");
        review.try_into().expect("a request")
    }

    fn object(foo: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "cache.example.com/v1alpha1",
            "kind": "Memcached",
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
