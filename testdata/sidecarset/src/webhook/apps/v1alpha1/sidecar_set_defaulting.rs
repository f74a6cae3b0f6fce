//! The defaulting webhook of SidecarSet (`apps.kruise.io/v1alpha1`): the API
//! server sends each SidecarSet being created or updated here before it
//! stores it, and applies the JSON patch that [`handle`] answers with: the
//! sidecar containers get the defaults a Pod's containers get
//! (`imagePullPolicy`, `terminationMessagePath`, `terminationMessagePolicy`).
//!
//! The `+opctl:webhook` line says how the API server calls the webhook;
//! `opctl manifests` turns it into config/webhook/manifests.yaml.

use kube::core::admission::{AdmissionRequest, AdmissionResponse};

use sidecarset::api::apps::v1alpha1::SidecarSet;
use sidecarset::manager::{self, Manager, webhook};

// +opctl:webhook:path=/mutate-apps-kruise-io-v1alpha1-sidecarset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=sidecarsets,verbs=create;update,versions=v1alpha1,name=msidecarset-v1alpha1.apps.kruise.io,admissionReviewVersions=v1

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/mutate-apps-kruise-io-v1alpha1-sidecarset";

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server.
pub async fn handle(
    _ctx: manager::Context, // the manager's client, for defaults that depend on other objects
    request: AdmissionRequest<SidecarSet>,
) -> AdmissionResponse {
    mutate(request)
}

/// Allows the request with the JSON patch from the object as sent to the
/// object with its defaults.
fn mutate(request: AdmissionRequest<SidecarSet>) -> AdmissionResponse {
    let response = AdmissionResponse::from(&request);
    let Some(object) = request.object else {
        return response;
    };
    let mut defaulted = object.clone();
    default(&mut defaulted);
    webhook::patch(response, &object, &defaulted)
}

/// Fills in what `object` leaves out: the defaults the API server gives a
/// Pod's containers, so that the sidecars are stored as they will run.
fn default(object: &mut SidecarSet) {
    for container in &mut object.spec.containers {
        if container.image_pull_policy.is_none() {
            let policy = default_pull_policy(container.image.as_deref().unwrap_or_default());
            container.image_pull_policy = Some(policy.to_owned());
        }
        if container.termination_message_path.is_none() {
            container.termination_message_path = Some(TERMINATION_MESSAGE_PATH.to_owned());
        }
        if container.termination_message_policy.is_none() {
            container.termination_message_policy = Some("File".to_owned());
        }
    }
}

/// Where a container writes its termination message unless it says otherwise.
const TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// Kubernetes' rule: `Always` for an image tagged `latest` or not tagged
/// at all (which means `latest`), `IfNotPresent` for any other tag or a
/// digest.
fn default_pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    // A tag follows the last ':' after the last '/' (before it, a ':' is a
    // registry's port, as in localhost:5000/app).
    let last_part = name.rsplit('/').next().unwrap_or(name);
    let tag = last_part.rsplit_once(':').map(|(_, tag)| tag);
    match (tag, digest) {
        (Some("latest"), _) | (None, None) => "Always",
        _ => "IfNotPresent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::AdmissionReview;

    /// An AdmissionReview as the API server sends it for a create of `object`.
    fn create_request(
        object: serde_json::Value, // the object being created
    ) -> AdmissionRequest<SidecarSet> {
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "apps.kruise.io", "version": "v1alpha1", "kind": "SidecarSet"},
                "resource": {"group": "apps.kruise.io", "version": "v1alpha1", "resource": "sidecarsets"},
                "name": "test",
                "operation": "CREATE",
                "userInfo": {"username": "admin"},
                "object": object,
            },
        });
        let review: AdmissionReview<SidecarSet> =
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

    fn object(containers: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet",
            "metadata": {"name": "test"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "containers": containers,
            },
        })
    }

    #[test]
    fn containers_get_a_pull_policy_and_a_termination_message() {
        let object = object(serde_json::json!([
            {"name": "tagged", "image": "busybox:1.36"},
            {"name": "untagged", "image": "busybox"},
        ]));
        let response = mutate(create_request(object.clone()));
        assert!(response.allowed);
        let defaulted = patched(&object, &response);
        let containers = &defaulted["spec"]["containers"];
        assert_eq!(containers[0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(containers[1]["imagePullPolicy"], "Always");
        for container in [&containers[0], &containers[1]] {
            assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
            assert_eq!(container["terminationMessagePolicy"], "File");
        }
        // Nothing else changes.
        let mut expected = object.clone();
        for (i, policy) in ["IfNotPresent", "Always"].into_iter().enumerate() {
            let container = &mut expected["spec"]["containers"][i];
            container["imagePullPolicy"] = policy.into();
            container["terminationMessagePath"] = "/dev/termination-log".into();
            container["terminationMessagePolicy"] = "File".into();
        }
        assert_eq!(defaulted, expected);
    }

    #[test]
    fn given_values_are_kept_and_need_no_patch() {
        let object = object(serde_json::json!([{
            "name": "log",
            "image": "busybox",
            "imagePullPolicy": "Never",
            "terminationMessagePath": "/tmp/end",
            "terminationMessagePolicy": "FallbackToLogsOnError",
        }]));
        let response = mutate(create_request(object.clone()));
        assert!(response.allowed);
        assert!(response.patch.is_none());
        assert_eq!(patched(&object, &response), object);
    }

    #[test]
    fn the_pull_policy_follows_the_tag_as_in_kubernetes() {
        for (image, policy) in [
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("docker.io/library/busybox:latest", "Always"),
            ("localhost:5000/busybox", "Always"),
            ("busybox:latest@sha256:0123", "Always"),
            ("busybox:1.36", "IfNotPresent"),
            ("localhost:5000/busybox:1.36", "IfNotPresent"),
            ("busybox@sha256:0123", "IfNotPresent"),
        ] {
            assert_eq!(default_pull_policy(image), policy, "{image}");
        }
    }
}
