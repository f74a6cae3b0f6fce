//! The defaulting webhook of Database (`zalando.org/v1`): the API
//! server sends each Database being created or updated here before it
//! stores it, and applies the JSON patch that [`handle`] answers with.
//!
//! This file is yours: write the defaults in [`default`]. opctl never
//! overwrites it without `--force`. The `+opctl:webhook` line says how the
//! API server calls the webhook; `opctl manifests` turns it into
//! config/webhook/manifests.yaml.

use kube::core::admission::{AdmissionRequest, AdmissionResponse};

use database::api::zalando::v1::Database;
use database::manager::{self, Manager, webhook};

// +opctl:webhook:path=/mutate-zalando-org-v1-database,mutating=true,failurePolicy=fail,sideEffects=None,groups=zalando.org,resources=databases,verbs=create;update,versions=v1,name=mdatabase-v1.zalando.org,admissionReviewVersions=v1

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/mutate-zalando-org-v1-database";

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server.
pub async fn handle(
    _ctx: manager::Context, // the manager's client, for defaults that depend on other objects
    request: AdmissionRequest<Database>,
) -> AdmissionResponse {
    mutate(request)
}

/// Allows the request with the JSON patch from the object as sent to the
/// object with its defaults.
fn mutate(request: AdmissionRequest<Database>) -> AdmissionResponse {
    let response = AdmissionResponse::from(&request);
    let Some(object) = request.object else {
        return response;
    };
    let mut defaulted = object.clone();
    default(&mut defaulted);
    webhook::patch(response, &object, &defaulted)
}

/// Fills in what `object` leaves out.
fn default(object: &mut Database) {
    // TODO: your defaults. This example gives `spec.foo` a value.
    if object.spec.foo.is_none() {
        object.spec.foo = Some("default".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::AdmissionReview;

    /// An AdmissionReview as the API server sends it for a create of `object`.
    fn create_request(
        object: serde_json::Value, // the object being created
    ) -> AdmissionRequest<Database> {
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "zalando.org", "version": "v1", "kind": "Database"},
                "resource": {"group": "zalando.org", "version": "v1", "resource": "databases"},
                "name": "test",
                "operation": "CREATE",
                "userInfo": {"username": "admin"},
                "object": object,
            },
        });
        let review: AdmissionReview<Database> =
            serde_json::from_value(review).expect("a valid AdmissionReview");
        review.try_into().expect("a request")
    }

    /// The object after the response's JSON patch.
    fn patched(object: &serde_json::Value, response: &AdmissionResponse) -> serde_json::Value {
        let mut object = object.clone();
        if let Some(patch) = &response.patch {
            let patch: json_patch::Patch = serde_json::from_slice(patch).expect("a JSON patch");
            json_patch::patch(&mut object, &patch).expect("the patch applies");
        }
        object
    }

    fn object(spec: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "zalando.org/v1",
            "kind": "Database",
            "metadata": {"name": "test"},
            "spec": spec,
        })
    }

    #[test]
    fn a_missing_foo_gets_the_default() {
        let object = object(serde_json::json!({}));
        let response = mutate(create_request(object.clone()));
        assert!(response.allowed);
        assert_eq!(patched(&object, &response)["spec"]["foo"], "default");
    }

    #[test]
    fn a_given_foo_is_kept() {
        let object = object(serde_json::json!({"foo": "mine"}));
        let response = mutate(create_request(object.clone()));
        assert!(response.allowed);
        assert_eq!(patched(&object, &response), object);
    }
}
