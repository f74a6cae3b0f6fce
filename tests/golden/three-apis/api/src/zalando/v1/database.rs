//! The `Database` kind: `databases.zalando.org`, version `v1`.
//!
//! This file is yours: describe the desired state in [`DatabaseSpec`] and
//! what the controller observes in [`DatabaseStatus`]. `opctl manifests`
//! turns these types into config/crd/bases/zalando.org_databases.yaml.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a Database.
// More short names: `shortname = "..."`; more columns: `printcolumn(...)`;
// CEL validation: `validation = "..."` (see the kube-derive documentation).
// With several versions of the kind, the API server stores the one marked:
// +opctl:storageversion
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "zalando.org",
    version = "v1",
    kind = "Database",
    plural = "databases",
    namespaced,
    status = "DatabaseStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "Database is the Schema for the databases API.",
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
pub struct DatabaseSpec {
    /// An example field: replace it with what a Database needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// The observed state of a Database, written by its controller.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
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
        let crd = Database::crd();
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        let subresources = version.subresources.as_ref();
        assert!(subresources.is_some_and(|s| s.status.is_some()));
        let columns = version.additional_printer_columns.as_deref();
        let columns = columns.unwrap_or_default();
        assert!(columns.iter().any(|c| c.name == "Ready"));
    }

    #[test]
    fn the_sample_is_valid() {
        let sample: Database = crate::sample();
        assert_eq!(sample.spec.foo.as_deref(), Some("example"));
        let json = serde_json::to_value(&sample).expect("serialises");
        assert_eq!(json["kind"], "Database");
    }
}
