//! The Pod injection webhook: the API server sends each Pod being created
//! here before it stores it, and applies the JSON patch that [`handle`]
//! answers with. The patch adds the containers of every SidecarSet whose
//! selector matches the Pod's labels, after the Pod's own containers, and
//! names those SidecarSets in the annotation `kruise.io/sidecarset-injected`
//! (sorted, comma-separated).
//!
//! Injection happens once: a SidecarSet already named in the annotation is
//! skipped, and so is a container whose name the Pod already uses (a Pod
//! created from an injected Pod's manifest, a second call of the webhook).
//! SidecarSets are injected in name order, so the first one to bring a
//! container name wins.
//!
//! The `+opctl:webhook` line says how the API server calls the webhook;
//! `opctl manifests` turns it into config/webhook/manifests.yaml.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use sidecarset::api::apps::v1alpha1::{INJECTED_ANNOTATION, SidecarSet, injected_sidecar_sets};
use sidecarset::manager::{self, Manager, webhook};

// Only Pod creation: a Pod's containers cannot change afterwards.
//
// failurePolicy=ignore: while the webhook cannot be reached, Pods are created
// without sidecars rather than not at all. With failurePolicy=fail every Pod
// creation in the cluster (kube-system's, and this manager's own Pod when it
// is rescheduled) would wait for this manager; a Pod that missed its
// sidecars shows in the status (matchedPods greater than updatedPods).
// +opctl:webhook:path=/mutate-core-v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod-v1.core.kruise.io,admissionReviewVersions=v1

/// Where the manager serves this webhook: the marker's `path`.
pub const PATH: &str = "/mutate-core-v1-pod";

/// Adds this webhook to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_webhook(PATH, handle)
}

/// Answers the API server: reads the SidecarSets (from the API server, so
/// that one created a moment ago applies at once) and injects them.
pub async fn handle(ctx: manager::Context, request: AdmissionRequest<Pod>) -> AdmissionResponse {
    if request.operation != Operation::Create || request.object.is_none() {
        return AdmissionResponse::from(&request);
    }
    let api: Api<SidecarSet> = Api::all(ctx.client.clone());
    match api.list(&ListParams::default()).await {
        Ok(list) => mutate(request, &list.items),
        Err(err) => {
            // As if the webhook could not be reached (failurePolicy=ignore):
            // the Pod is created as it is, and the client is told why.
            tracing::warn!(error = %err, "cannot list SidecarSets; no sidecars injected");
            let mut response = AdmissionResponse::from(&request);
            let warning = format!("no sidecars injected: cannot list SidecarSets: {err}");
            response.warnings = Some(vec![warning]);
            response
        }
    }
}

/// Allows the request with the JSON patch that injects `sidecar_sets`.
fn mutate(request: AdmissionRequest<Pod>, sidecar_sets: &[SidecarSet]) -> AdmissionResponse {
    let response = AdmissionResponse::from(&request);
    let Some(pod) = request.object else {
        return response;
    };
    let mut injected = pod.clone();
    inject(&mut injected, sidecar_sets);
    webhook::patch(response, &pod, &injected)
}

/// Adds to `pod` the containers of each SidecarSet that selects it and was
/// not injected before, and records those SidecarSets in the annotation.
fn inject(pod: &mut Pod, sidecar_sets: &[SidecarSet]) {
    let labels = pod.labels().clone();
    let mut recorded: BTreeSet<String> = injected_sidecar_sets(pod)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut selecting: Vec<&SidecarSet> = sidecar_sets
        .iter()
        .filter(|set| set.metadata.deletion_timestamp.is_none() && set.selects(&labels))
        .collect();
    selecting.sort_by_key(|set| set.name_any());
    let spec = pod.spec.get_or_insert_default();
    let mut changed = false;
    for set in selecting {
        let name = set.name_any();
        if recorded.contains(&name) {
            continue;
        }
        let mut added = false;
        for sidecar in &set.spec.containers {
            if spec.containers.iter().all(|c| c.name != sidecar.name) {
                spec.containers.push(sidecar.clone());
                added = true;
            }
        }
        if added {
            recorded.insert(name);
            changed = true;
        }
    }
    if changed {
        let names: Vec<String> = recorded.into_iter().collect();
        pod.annotations_mut()
            .insert(INJECTED_ANNOTATION.to_owned(), names.join(","));
    }
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
                "namespace": "default",
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

    fn pod(labels: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "test", "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        })
    }

    fn sidecar_set(name: &str, app: &str, containers: &[(&str, &str)]) -> SidecarSet {
        let containers: Vec<serde_json::Value> = containers
            .iter()
            .map(|(name, image)| serde_json::json!({"name": name, "image": image}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": app}},
                "containers": containers,
            },
        }))
        .expect("a SidecarSet")
    }

    /// What the API server stores for `object` when these SidecarSets exist.
    fn admitted(object: &serde_json::Value, sets: &[SidecarSet]) -> serde_json::Value {
        let response = mutate(create_request(object.clone()), sets);
        assert!(response.allowed);
        patched(object, &response)
    }

    fn container_names(pod: &serde_json::Value) -> Vec<&str> {
        let containers = pod["spec"]["containers"].as_array().expect("containers");
        containers
            .iter()
            .map(|c| c["name"].as_str().expect("a name"))
            .collect()
    }

    #[test]
    fn a_matching_pod_gets_the_sidecars_and_the_annotation() {
        let sets = [
            sidecar_set("b-proxy", "web", &[("proxy", "envoy:1.30")]),
            sidecar_set(
                "a-log",
                "web",
                &[("log", "fluentd:1.16"), ("metrics", "exporter:2")],
            ),
            sidecar_set("other", "api", &[("other", "busybox")]),
        ];
        let pod = admitted(&pod(serde_json::json!({"app": "web"})), &sets);
        assert_eq!(container_names(&pod), ["app", "log", "metrics", "proxy"]);
        assert_eq!(pod["spec"]["containers"][1]["image"], "fluentd:1.16");
        assert_eq!(pod["spec"]["containers"][3]["image"], "envoy:1.30");
        assert_eq!(
            pod["metadata"]["annotations"][INJECTED_ANNOTATION],
            "a-log,b-proxy"
        );
        // Nothing else changes.
        let mut expected = pod.clone();
        expected["spec"]["containers"] =
            serde_json::json!([{"name": "app", "image": "nginx:1.27"}]);
        expected["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("annotations");
        assert_eq!(expected, self::pod(serde_json::json!({"app": "web"})));
    }

    #[test]
    fn a_pod_that_matches_nothing_is_untouched() {
        let sets = [sidecar_set("log", "web", &[("log", "fluentd")])];
        for labels in [serde_json::json!({"app": "api"}), serde_json::json!({})] {
            let object = pod(labels);
            let response = mutate(create_request(object.clone()), &sets);
            assert!(response.allowed);
            assert!(response.patch.is_none());
        }
        let response = mutate(create_request(pod(serde_json::json!({"app": "web"}))), &[]);
        assert!(response.patch.is_none());
    }

    #[test]
    fn an_injected_pod_is_not_injected_again() {
        let sets = [
            sidecar_set("a-log", "web", &[("log", "fluentd")]),
            sidecar_set("b-proxy", "web", &[("proxy", "envoy")]),
        ];
        let once = admitted(&pod(serde_json::json!({"app": "web"})), &sets);
        // Called again with the injected Pod (reinvocation, or a Pod created
        // from an injected Pod's manifest): nothing to do.
        let response = mutate(create_request(once.clone()), &sets);
        assert!(response.allowed);
        assert!(response.patch.is_none(), "{:?}", response.patch);
    }

    #[test]
    fn a_recorded_sidecar_set_is_skipped_and_a_new_one_is_added() {
        let sets = [
            sidecar_set("a-log", "web", &[("log", "fluentd")]),
            sidecar_set("b-proxy", "web", &[("proxy", "envoy")]),
        ];
        let once = admitted(&pod(serde_json::json!({"app": "web"})), &sets[..1]);
        assert_eq!(
            once["metadata"]["annotations"][INJECTED_ANNOTATION],
            "a-log"
        );
        // The annotation alone is enough to skip a SidecarSet ...
        let mut renamed = once.clone();
        renamed["spec"]["containers"][1]["name"] = "renamed".into();
        let twice = admitted(&renamed, &sets);
        assert_eq!(container_names(&twice), ["app", "renamed", "proxy"]);
        assert_eq!(
            twice["metadata"]["annotations"][INJECTED_ANNOTATION],
            "a-log,b-proxy"
        );
    }

    #[test]
    fn a_container_name_the_pod_uses_is_not_added_twice() {
        let sets = [
            sidecar_set("a-log", "web", &[("app", "other-app"), ("log", "fluentd")]),
            sidecar_set("b-log", "web", &[("log", "another-fluentd")]),
        ];
        let pod = admitted(&pod(serde_json::json!({"app": "web"})), &sets);
        assert_eq!(container_names(&pod), ["app", "log"]);
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.27");
        assert_eq!(pod["spec"]["containers"][1]["image"], "fluentd");
        // b-log brought nothing, so it is not recorded.
        assert_eq!(pod["metadata"]["annotations"][INJECTED_ANNOTATION], "a-log");
    }

    #[test]
    fn a_sidecar_set_being_deleted_is_not_injected() {
        let mut set = sidecar_set("log", "web", &[("log", "fluentd")]);
        let now = k8s_openapi::jiff::Timestamp::now();
        set.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
        let response = mutate(
            create_request(pod(serde_json::json!({"app": "web"}))),
            &[set],
        );
        assert!(response.patch.is_none());
    }

    #[tokio::test]
    async fn without_the_sidecar_sets_the_pod_is_allowed_unchanged_with_a_warning() {
        // An API server that does not answer (nothing listens on port 1).
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("a URL"));
        let client = kube::Client::try_from(config).expect("a client");
        let scope = manager::WatchScope::AllNamespaces;
        let ctx = manager::Context::new(manager::PROJECT, client, scope);
        let response = handle(ctx, create_request(pod(serde_json::json!({"app": "web"})))).await;
        assert!(response.allowed);
        assert!(response.patch.is_none());
        let warnings = response.warnings.unwrap_or_default();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("no sidecars injected: cannot list SidecarSets: "),
            "{warnings:?}"
        );
    }

    #[test]
    fn other_annotations_are_kept() {
        let sets = [sidecar_set("log", "web", &[("log", "fluentd")])];
        let mut object = pod(serde_json::json!({"app": "web"}));
        object["metadata"]["annotations"] = serde_json::json!({"team": "blue"});
        let pod = admitted(&object, &sets);
        assert_eq!(pod["metadata"]["annotations"]["team"], "blue");
        assert_eq!(pod["metadata"]["annotations"][INJECTED_ANNOTATION], "log");
    }
}
