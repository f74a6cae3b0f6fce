//! The `SidecarSet` kind: `sidecarsets.apps.kruise.io`, version `v1alpha1`.
//!
//! This file is yours: describe the desired state in [`SidecarSetSpec`] and
//! what the controller observes in [`SidecarSetStatus`]. `opctl manifests`
//! turns these types into config/crd/bases/apps.kruise.io_sidecarsets.yaml.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a SidecarSet.
// More short names: `shortname = "..."`; more columns: `printcolumn(...)`;
// CEL validation: `validation = "..."` (see the kube-derive documentation).
// With several versions of the kind, the API server stores the one marked:
// +opctl:storageversion
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
    doc = "SidecarSet is the Schema for the sidecarsets API.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// An example field: replace it with what a SidecarSet needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// The observed state of a SidecarSet, written by its controller.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The latest observations, one per type (`Ready` among them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn the_crd_has_a_status_subresource_and_a_ready_column() {
        let crd = SidecarSet::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        let version = &crd.spec.versions[0];
        let subresources = version.subresources.as_ref();
        assert!(subresources.is_some_and(|s| s.status.is_some()));
        let columns = version.additional_printer_columns.as_deref();
        let columns = columns.unwrap_or_default();
        assert!(columns.iter().any(|c| c.name == "Ready"));
    }

    #[test]
    fn the_sample_is_valid() {
        let sample: SidecarSet = crate::sample();
        assert_eq!(sample.spec.foo.as_deref(), Some("example"));
        let json = serde_json::to_value(&sample).expect("serialises");
        assert_eq!(json["kind"], "SidecarSet");
    }
}
