//! The `SidecarSet` kind: `sidecarsets.apps.kruise.io`, version `v1alpha1`.
//!
//! A SidecarSet names containers (the sidecars) and a label selector: the Pod
//! webhook adds the sidecars to every Pod created with matching labels, in
//! any namespace, and the controller counts in the status how many Pods
//! match, how many carry the current sidecars and how many are ready.
//! `opctl manifests` turns these types into
//! config/crd/bases/apps.kruise.io_sidecarsets.yaml.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use kube::core::{ParseExpressionError, Selector, SelectorExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation the Pod webhook puts on a Pod it injected sidecars into:
/// the names of those SidecarSets, sorted and separated by commas.
pub const INJECTED_ANNOTATION: &str = "kruise.io/sidecarset-injected";

/// The desired state of a SidecarSet.
// The columns are OpenKruise's: `kubectl get sidecarsets` prints
// NAME, MATCHED, UPDATED, READY and AGE. (Clippy reads the three
// `type_ = "integer"` of the columns as one attribute repeated.)
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "SidecarSet",
    plural = "sidecarsets",
    status = "SidecarSetStatus",
    shortname = "ss",
    derive = "Default",
    derive = "PartialEq",
    doc = "SidecarSet injects sidecar containers into the Pods its selector matches.",
    printcolumn(
        name = "Matched",
        type_ = "integer",
        description = "The number of Pods the selector matches",
        json_path = ".status.matchedPods"
    ),
    printcolumn(
        name = "Updated",
        type_ = "integer",
        description = "The number of matched Pods that carry the current sidecars",
        json_path = ".status.updatedPods"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        description = "The number of matched Pods that are ready",
        json_path = ".status.readyPods"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// The Pods (in every namespace) that get the sidecars: those whose
    /// labels match. Required, and it must not be empty (the validating
    /// webhook refuses a SidecarSet that would select every Pod).
    // Not required in the schema: the webhooks see the object before the
    // schema is checked, and report a missing selector in their own words.
    #[serde(default)]
    pub selector: LabelSelector,

    /// The sidecar containers added to each matching Pod when it is created,
    /// after the Pod's own containers. At least one; names are unique.
    #[serde(default)]
    pub containers: Vec<Container>,
}

/// The observed state of a SidecarSet, written by its controller.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The number of active Pods (not finished, not being deleted) the
    /// selector matches.
    #[serde(default)]
    pub matched_pods: i32,

    /// The number of matched Pods that carry the current sidecars: every
    /// container of the spec, by name, with the spec's image.
    #[serde(default)]
    pub updated_pods: i32,

    /// The number of matched Pods whose `Ready` condition is `True`.
    #[serde(default)]
    pub ready_pods: i32,

    /// The number of updated Pods that are also ready.
    #[serde(default)]
    pub updated_ready_pods: i32,

    /// The latest observations, one per type. `Ready` is `True` when every
    /// matched Pod is updated and ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

impl SidecarSet {
    /// The selector as a [`Selector`] (an error for an operator Kubernetes
    /// does not know). The validating webhook checks more than this.
    pub fn selector(&self) -> Result<Selector, ParseExpressionError> {
        Selector::try_from(self.spec.selector.clone())
    }

    /// Whether this SidecarSet selects a Pod with `labels`. An empty selector
    /// selects nothing here, although Kubernetes would read it as
    /// "everything": the validating webhook refuses it, and this keeps a
    /// SidecarSet that got past the webhook from touching every Pod.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        let selector = self.selector();
        selector.is_ok_and(|s| !s.selects_all() && s.matches(labels))
    }

    /// Whether `pod` carries this SidecarSet's current sidecars: a container
    /// of each name in the spec, with the spec's image.
    pub fn is_injected_into(&self, pod: &Pod) -> bool {
        let containers = pod.spec.as_ref().map(|s| s.containers.as_slice());
        let containers = containers.unwrap_or_default();
        self.is_carried_by(
            containers
                .iter()
                .map(|c| (c.name.as_str(), c.image.as_deref())),
        )
    }

    /// Whether a Pod with `containers` (name, image) carries this
    /// SidecarSet's current sidecars (see [`SidecarSet::is_injected_into`]):
    /// for a Pod known by those two fields only, as the controller caches it.
    pub fn is_carried_by<'a>(
        &self,
        containers: impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone,
    ) -> bool {
        self.spec.containers.iter().all(|sidecar| {
            let mut containers = containers.clone();
            containers
                .any(|(name, image)| name == sidecar.name && image == sidecar.image.as_deref())
        })
    }
}

/// The SidecarSets named in a Pod's [`INJECTED_ANNOTATION`] (of a whole Pod
/// or of a cached view of one).
pub fn injected_sidecar_sets(pod: &impl kube::Resource) -> Vec<&str> {
    let annotations = pod.meta().annotations.as_ref();
    let value = annotations.and_then(|a| a.get(INJECTED_ANNOTATION));
    let names = value.map(|v| v.split(',').map(str::trim).filter(|n| !n.is_empty()));
    names.map(Iterator::collect).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sidecar_set(selector: serde_json::Value) -> SidecarSet {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet",
            "metadata": {"name": "test"},
            "spec": {
                "selector": selector,
                "containers": [{"name": "log", "image": "busybox:1.36"}],
            },
        }))
        .expect("a SidecarSet")
    }

    fn pod(containers: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "annotations": {INJECTED_ANNOTATION: "b, a,"}},
            "spec": {"containers": containers},
        }))
        .expect("a Pod")
    }

    #[test]
    fn the_crd_is_cluster_scoped_with_a_status_and_openkruises_columns() {
        let crd = SidecarSet::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        assert_eq!(crd.spec.names.plural, "sidecarsets");
        let version = &crd.spec.versions[0];
        let subresources = version.subresources.as_ref();
        assert!(subresources.is_some_and(|s| s.status.is_some()));
        let columns = version.additional_printer_columns.as_deref();
        let columns: Vec<(&str, &str)> = columns
            .unwrap_or_default()
            .iter()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(
            columns,
            [
                ("Matched", ".status.matchedPods"),
                ("Updated", ".status.updatedPods"),
                ("Ready", ".status.readyPods"),
                ("Age", ".metadata.creationTimestamp"),
            ]
        );
    }

    #[test]
    fn the_sample_is_valid() {
        let sample: SidecarSet = crate::sample();
        assert_eq!(sample.spec.containers.len(), 1);
        assert!(sample.selects(&labels(&[("app", "nginx")])));
        let json = serde_json::to_value(&sample).expect("serialises");
        assert_eq!(json["kind"], "SidecarSet");
    }

    #[test]
    fn match_labels_and_expressions_select_together() {
        let set = sidecar_set(serde_json::json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
        }));
        assert!(set.selects(&labels(&[("app", "web")])));
        assert!(set.selects(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!set.selects(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!set.selects(&labels(&[("app", "api")])));
        assert!(!set.selects(&labels(&[])));
    }

    #[test]
    fn an_empty_or_unparsable_selector_selects_nothing() {
        let empty = sidecar_set(serde_json::json!({}));
        assert!(!empty.selects(&labels(&[("app", "web")])));
        let bad = sidecar_set(serde_json::json!({
            "matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}],
        }));
        assert!(bad.selector().is_err());
        assert!(!bad.selects(&labels(&[("app", "web")])));
    }

    #[test]
    fn a_pod_is_injected_when_it_has_every_sidecar_with_the_current_image() {
        let set = sidecar_set(serde_json::json!({"matchLabels": {"app": "web"}}));
        let app = serde_json::json!({"name": "app", "image": "nginx"});
        let current = serde_json::json!({"name": "log", "image": "busybox:1.36"});
        let old = serde_json::json!({"name": "log", "image": "busybox:1.35"});
        assert!(set.is_injected_into(&pod(serde_json::json!([app, current]))));
        assert!(!set.is_injected_into(&pod(serde_json::json!([app, old]))));
        assert!(!set.is_injected_into(&pod(serde_json::json!([app]))));
    }

    #[test]
    fn the_annotation_lists_the_injected_sidecar_sets() {
        let pod = pod(serde_json::json!([]));
        assert_eq!(injected_sidecar_sets(&pod), ["b", "a"]);
        assert!(injected_sidecar_sets(&Pod::default()).is_empty());
    }
}
