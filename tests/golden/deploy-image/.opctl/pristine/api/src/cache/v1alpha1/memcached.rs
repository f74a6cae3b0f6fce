//! The `Memcached` kind: `memcacheds.cache.example.com`, version `v1alpha1`.
//!
//! This file is yours. A Memcached asks for a Deployment of `memcached:1.6`
//! with [`MemcachedSpec::size`] replicas; its controller
//! (src/controller/memcached.rs) runs it and reports in [`MemcachedStatus`].
//! `opctl manifests` turns these types into
//! config/crd/bases/cache.example.com_memcacheds.yaml.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a Memcached: a Deployment of `memcached:1.6`.
// More short names: `shortname = "..."`; more columns: `printcolumn(...)`;
// CEL validation: `validation = "..."` (see the kube-derive documentation).
// With several versions of the kind, the API server stores the one marked:
// +opctl:storageversion
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    plural = "memcacheds",
    namespaced,
    status = "MemcachedStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "Memcached is the Schema for the memcacheds API.",
    printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Available")].status"#
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// How many replicas of the image the Deployment runs (the bounds
    /// are [`Self::MIN_SIZE`] and [`Self::MAX_SIZE`]).
    #[serde(default = "default_size")]
    #[schemars(range(min = 1, max = 5))]
    pub size: i32,

    /// The port the container listens on.
    #[serde(default = "default_container_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: i32,
}

impl MemcachedSpec {
    /// The fewest replicas a Memcached may ask for, and the default.
    pub const MIN_SIZE: i32 = 1;
    /// The most replicas a Memcached may ask for.
    pub const MAX_SIZE: i32 = 5;
    /// The port of the container when the spec names none.
    pub const DEFAULT_CONTAINER_PORT: i32 = 11211;
}

fn default_size() -> i32 {
    MemcachedSpec::MIN_SIZE
}

fn default_container_port() -> i32 {
    MemcachedSpec::DEFAULT_CONTAINER_PORT
}

impl Default for MemcachedSpec {
    /// The spec of a Memcached that gives no field: the defaults of the CRD.
    fn default() -> Self {
        Self {
            size: default_size(),
            container_port: default_container_port(),
        }
    }
}

/// The observed state of a Memcached, written by its controller.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The latest observations, one per type: `Available`, `Progressing`
    /// and `Degraded`.
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
    fn the_crd_has_a_status_subresource_and_an_available_column() {
        let crd = Memcached::crd();
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        let subresources = version.subresources.as_ref();
        assert!(subresources.is_some_and(|s| s.status.is_some()));
        let columns = version.additional_printer_columns.as_deref();
        let columns = columns.unwrap_or_default();
        assert!(columns.iter().any(|c| c.name == "Available"));
    }

    #[test]
    fn the_size_is_bounded_and_defaulted_by_the_crd() {
        let crd = serde_json::to_value(Memcached::crd());
        let crd = crd.expect("serialises");
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let bounds = |field: &str| {
            let schema = &spec["properties"][field];
            (schema["minimum"].as_f64(), schema["maximum"].as_f64())
        };
        let min = f64::from(MemcachedSpec::MIN_SIZE);
        let max = f64::from(MemcachedSpec::MAX_SIZE);
        assert_eq!(bounds("size"), (Some(min), Some(max)));
        let default = MemcachedSpec::MIN_SIZE;
        assert_eq!(spec["properties"]["size"]["default"], default);
        assert_eq!(bounds("containerPort"), (Some(1.0), Some(65535.0)));
        let port = &spec["properties"]["containerPort"];
        let default = MemcachedSpec::DEFAULT_CONTAINER_PORT;
        assert_eq!(port["default"], default);
    }

    #[test]
    fn a_spec_without_fields_gets_the_defaults() {
        let spec = serde_json::from_str::<MemcachedSpec>("{}");
        let spec = spec.expect("parses");
        assert_eq!(spec, MemcachedSpec::default());
        assert_eq!(spec.size, MemcachedSpec::MIN_SIZE);
    }

    #[test]
    fn the_sample_is_valid() {
        let sample: Memcached = crate::sample();
        let min = MemcachedSpec::MIN_SIZE;
        let max = MemcachedSpec::MAX_SIZE;
        assert!((min..=max).contains(&sample.spec.size));
        let port = MemcachedSpec::DEFAULT_CONTAINER_PORT;
        assert_eq!(sample.spec.container_port, port);
        let json = serde_json::to_value(&sample).expect("serialises");
        assert_eq!(json["kind"], "Memcached");
    }
}
