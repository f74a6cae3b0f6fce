//! The defaulting webhook of Pod (`v1`): the API
//! server sends each Pod being created or updated here before it
//! stores it, and applies the JSON patch that [`handle`] answers with.
//!
//! This file is yours: write the defaults in [`default`]. opctl never
//! overwrites it without `--force`. The `+opctl:webhook` line says how the
//! API server calls the webhook; `opctl manifests` turns it into
//! config/webhook/manifests.yaml.

use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};

use sidecarset::manager::{self, Manager, webhook};

// failurePolicy=fail: while the webhook cannot be reached, the API server
// refuses every request it matches (for Pods, the manager's own too);
// failurePolicy=ignore lets them through unchanged.
// +opctl:webhook:path=/mutate-core-v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create;update,versions=v1,name=mpod-v1.core.kruise.io,admissionReviewVersions=v1

/// The annotation the example default sets.
const DEFAULTED_BY: &str = "kruise.io/defaulted-by";

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/mutate-core-v1-pod";

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server.
pub async fn handle(
    _ctx: manager::Context, // the manager's client, for defaults that depend on other objects
    request: AdmissionRequest<Pod>,
) -> AdmissionResponse {
    mutate(request)
}

/// Allows the request with the JSON patch from the object as sent to the
/// object with its defaults.
fn mutate(request: AdmissionRequest<Pod>) -> AdmissionResponse {
    let response = AdmissionResponse::from(&request);
    let Some(object) = request.object else {
        return response;
    };
    let mut defaulted = object.clone();
    default(&mut defaulted);
    webhook::patch(response, &object, &defaulted)
}

/// Fills in what `object` leaves out.
fn default(object: &mut Pod) {
    // TODO: your defaults. This example marks the object as seen by this webhook.
    let annotations = object.metadata.annotations.get_or_insert_default();
    annotations
        .entry(DEFAULTED_BY.to_owned())
        .or_insert_with(|| manager::NAME.to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::AdmissionReview;

    /// An AdmissionReview as the API server sends it for a create of `object`.
    fn create_request(
        object: serde_json::Value, // the object being created
    ) -> AdmissionRequest<Pod> {
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "name": "test",
                "operation": "CREATE",
                "userInfo": {"username": "admin"},
                "object": object,
            },
        });
        let review: AdmissionReview<Pod> =
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

    fn object() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "test"},
        })
    }

    #[test]
    fn the_object_is_marked() {
        let object = object();
        let response = mutate(create_request(object.clone()));
        assert!(response.allowed);
        let defaulted = patched(&object, &response);
        assert_eq!(
            defaulted["metadata"]["annotations"][DEFAULTED_BY],
            manager::NAME
        );
    }

    #[test]
    fn a_marked_object_needs_no_patch() {
        let mut object = object();
        object["metadata"]["annotations"] = serde_json::json!({DEFAULTED_BY: "someone"});
        let response = mutate(create_request(object.clone()));
        assert!(response.allowed);
        assert_eq!(patched(&object, &response), object);
    }
}
