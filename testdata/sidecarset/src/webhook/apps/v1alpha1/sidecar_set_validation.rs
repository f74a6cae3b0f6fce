//! The validating webhook of SidecarSet (`apps.kruise.io/v1alpha1`): the API
//! server asks it before it creates or updates a SidecarSet, and refuses the
//! request with the webhook's message when it denies it.
//!
//! A SidecarSet must name at least one container, each with a unique DNS-1123
//! name and an image, and select Pods with a valid, non-empty label selector.
//! The messages read as kube-apiserver's own (`spec.containers[1].name:
//! Duplicate value: "log"`), all problems at once. Deletion is always allowed,
//! so it is not sent here: a SidecarSet can be deleted while the manager is
//! down.
//!
//! The `+opctl:webhook` line says how the API server calls the webhook;
//! `opctl manifests` turns it into config/webhook/manifests.yaml.

mod field;
mod labels;

use std::collections::BTreeSet;

use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use sidecarset::api::apps::v1alpha1::SidecarSet;
use sidecarset::manager::{self, Manager, webhook};

use field::Error;

// +opctl:webhook:path=/validate-apps-kruise-io-v1alpha1-sidecarset,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=sidecarsets,verbs=create;update,versions=v1alpha1,name=vsidecarset-v1alpha1.apps.kruise.io,admissionReviewVersions=v1

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/validate-apps-kruise-io-v1alpha1-sidecarset";

/// The image pull policies Kubernetes knows.
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server.
pub async fn handle(
    _ctx: manager::Context, // the manager's client, for rules that depend on other objects
    request: AdmissionRequest<SidecarSet>,
) -> AdmissionResponse {
    review(&request)
}

/// Allows the request, or denies it with every rule it breaks.
fn review(request: &AdmissionRequest<SidecarSet>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let errors = match (&request.operation, &request.object) {
        (Operation::Create | Operation::Update, Some(object)) => validate(object),
        _ => Vec::new(),
    };
    if errors.is_empty() {
        response
    } else {
        webhook::deny(response, field::message(&errors))
    }
}

/// The rules of create and update: what is wrong with `object`.
fn validate(object: &SidecarSet) -> Vec<Error> {
    let mut errors = labels::validate_selector(&object.spec.selector, "spec.selector");
    errors.extend(validate_containers(object));
    errors
}

/// At least one container; each with a unique DNS-1123 name, an image and a
/// known pull policy.
fn validate_containers(object: &SidecarSet) -> Vec<Error> {
    let containers = &object.spec.containers;
    if containers.is_empty() {
        return vec![Error::required(
            "spec.containers",
            "a SidecarSet needs at least one container to inject",
        )];
    }
    let mut errors = Vec::new();
    let mut names = BTreeSet::new();
    for (i, container) in containers.iter().enumerate() {
        let path = format!("spec.containers[{i}]");
        let name = container.name.as_str();
        if name.is_empty() {
            errors.push(Error::required(format!("{path}.name"), ""));
        } else if !names.insert(name) {
            errors.push(Error::duplicate(format!("{path}.name"), name));
        } else {
            for message in labels::dns1123_label_errors(name) {
                errors.push(Error::invalid(format!("{path}.name"), name, message));
            }
        }
        if container
            .image
            .as_deref()
            .is_none_or(|i| i.trim().is_empty())
        {
            errors.push(Error::required(format!("{path}.image"), ""));
        }
        if let Some(policy) = container.image_pull_policy.as_deref()
            && !PULL_POLICIES.contains(&policy)
        {
            errors.push(Error::not_supported(
                format!("{path}.imagePullPolicy"),
                policy,
                &PULL_POLICIES,
            ));
        }
    }
    errors
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
    ) -> AdmissionRequest<SidecarSet> {
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "apps.kruise.io", "version": "v1alpha1", "kind": "SidecarSet"},
                "resource": {"group": "apps.kruise.io", "version": "v1alpha1", "resource": "sidecarsets"},
                "name": "test",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old_object,
            },
        });
        let review: AdmissionReview<SidecarSet> =
            serde_json::from_value(review).expect("a valid AdmissionReview");
        review.try_into().expect("a request")
    }

    fn object(selector: serde_json::Value, containers: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet",
            "metadata": {"name": "test"},
            "spec": {"selector": selector, "containers": containers},
        })
    }

    fn valid() -> serde_json::Value {
        object(
            serde_json::json!({"matchLabels": {"app": "web"}}),
            serde_json::json!([{"name": "log", "image": "busybox:1.36"}]),
        )
    }

    /// The message a create of `object` is denied with.
    fn denial(object: serde_json::Value) -> String {
        let response = review(&request("CREATE", Some(object), None));
        assert!(!response.allowed, "the object is allowed");
        assert_eq!(response.result.code, 403);
        response.result.message
    }

    #[test]
    fn a_valid_object_is_allowed() {
        let response = review(&request("CREATE", Some(valid()), None));
        assert!(response.allowed);
        let response = review(&request("UPDATE", Some(valid()), Some(valid())));
        assert!(response.allowed);
    }

    #[test]
    fn deletion_is_allowed_whatever_the_object() {
        let broken = object(serde_json::json!({}), serde_json::json!([]));
        let response = review(&request("DELETE", None, Some(broken)));
        assert!(response.allowed);
    }

    #[test]
    fn an_empty_container_list_is_refused() {
        let object = object(
            serde_json::json!({"matchLabels": {"app": "web"}}),
            serde_json::json!([]),
        );
        assert_eq!(
            denial(object),
            "spec.containers: Required value: a SidecarSet needs at least one container to inject"
        );
    }

    #[test]
    fn duplicate_container_names_are_refused() {
        let object = object(
            serde_json::json!({"matchLabels": {"app": "web"}}),
            serde_json::json!([
                {"name": "log", "image": "busybox"},
                {"name": "proxy", "image": "envoy"},
                {"name": "log", "image": "fluentd"},
            ]),
        );
        assert_eq!(
            denial(object),
            "spec.containers[2].name: Duplicate value: \"log\""
        );
    }

    #[test]
    fn container_names_images_and_pull_policies_are_checked() {
        let object = object(
            serde_json::json!({"matchLabels": {"app": "web"}}),
            serde_json::json!([
                {"name": "", "image": "busybox"},
                {"name": "Log_1", "image": "busybox"},
                {"name": "proxy"},
                {"name": "cache", "image": "redis", "imagePullPolicy": "Sometimes"},
            ]),
        );
        let message = denial(object);
        assert!(
            message.starts_with("[spec.containers[0].name: Required value, "),
            "{message}"
        );
        assert!(
            message.contains(
                "spec.containers[1].name: Invalid value: \"Log_1\": a lowercase RFC 1123 label"
            ),
            "{message}"
        );
        assert!(
            message.contains("spec.containers[2].image: Required value"),
            "{message}"
        );
        assert!(message.ends_with("spec.containers[3].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"]"), "{message}");
    }

    #[test]
    fn an_invalid_selector_is_refused() {
        let containers = serde_json::json!([{"name": "log", "image": "busybox"}]);
        let cases = [
            (
                serde_json::json!({"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]}),
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator",
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}]}),
                "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            (
                serde_json::json!({"matchLabels": {"bad key": "web"}}),
                "spec.selector.matchLabels: Invalid value: \"bad key\": name part must consist of",
            ),
            (
                serde_json::json!({"matchLabels": {"app": "not ok"}}),
                "spec.selector.matchLabels: Invalid value: \"not ok\": a valid label must be",
            ),
            (
                serde_json::json!({}),
                "spec.selector: Required value: a SidecarSet must select Pods",
            ),
        ];
        for (selector, expected) in cases {
            let message = denial(object(selector, containers.clone()));
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn an_update_is_checked_as_a_create() {
        let invalid = object(
            serde_json::json!({"matchLabels": {"app": "web"}}),
            serde_json::json!([]),
        );
        let response = review(&request("UPDATE", Some(invalid), Some(valid())));
        assert!(!response.allowed);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let object = object(serde_json::json!({}), serde_json::json!([]));
        assert_eq!(
            denial(object),
            "[spec.selector: Required value: a SidecarSet must select Pods with matchLabels or \
             matchExpressions (an empty selector would inject its sidecars into every Pod), \
             spec.containers: Required value: a SidecarSet needs at least one container to inject]"
        );
    }
}
