//! The `Database` kind: `databases.zalando.org`, version `v1`.
//!
//! A Database asks for one database server of a given type (`mongo` or
//! `mysql`); its controller runs it as a Pod behind a NodePort Service.
//! `opctl manifests` turns these types into
//! config/crd/bases/zalando.org_databases.yaml.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a Database.
// The name becomes the name of a Service (and a label value), so it must be
// a DNS-1035 label: the API server checks it at creation, not the controller
// later.
// v1 is the version the API server stores (v2 is served too and converted
// by the manager's webhook):
// +opctl:storageversion
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "zalando.org",
    version = "v1",
    kind = "Database",
    plural = "databases",
    namespaced,
    status = "DatabaseStatus",
    shortname = "db",
    shortname = "dbs",
    derive = "PartialEq",
    doc = "Database is a database server (MongoDB or MySQL) run as a Pod behind a NodePort Service.",
    validation = kube::core::Rule::new(
        "size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
    )
    .message("a Database's name must be a DNS-1035 label (at most 63 characters, a-z, 0-9 and '-', starting with a letter): it names its Service"),
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSpec {
    /// The database server to run: `mongo` or `mysql`.
    #[serde(rename = "type")]
    pub type_: DatabaseType,
}

/// The database servers a Database can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseType {
    /// MongoDB (`mongo:4.0`, port 27017).
    Mongo,
    /// MySQL (`mysql:8.0`, port 3306), its root password in a Secret.
    Mysql,
}

impl DatabaseType {
    /// The name used in `spec.type` (and in labels).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mongo => "mongo",
            Self::Mysql => "mysql",
        }
    }
}

impl fmt::Display for DatabaseType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a Database stands, as shown in the PHASE column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum DatabasePhase {
    /// Its children are being put in place (an old Pod is still terminating).
    Pending,
    /// Its Pod, Service (and for mysql its Secret) are as the spec asks.
    Ready,
    /// Its children could not be put in place; `message` says why.
    Failed,
}

/// The observed state of a Database, written by its controller.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// Where the Database stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DatabasePhase>,

    /// What the controller did last, for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

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
    fn the_crd_is_databases_zalando_org_v1_namespaced_with_short_names() {
        let crd = Database::crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("databases.zalando.org"));
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(
            crd.spec.names.short_names,
            Some(vec!["db".to_owned(), "dbs".to_owned()])
        );
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1");
        let subresources = version.subresources.as_ref();
        assert!(subresources.is_some_and(|s| s.status.is_some()));
    }

    #[test]
    fn the_printer_columns_are_type_phase_and_age() {
        let crd = Database::crd();
        let columns = crd.spec.versions[0]
            .additional_printer_columns
            .clone()
            .unwrap_or_default();
        let columns: Vec<(&str, &str)> = columns
            .iter()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(
            columns,
            [
                ("Type", ".spec.type"),
                ("Phase", ".status.phase"),
                ("Age", ".metadata.creationTimestamp")
            ]
        );
    }

    #[test]
    fn the_schema_requires_a_type_of_mongo_or_mysql() {
        let crd = serde_json::to_value(Database::crd()).expect("serialises");
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let spec = &schema["properties"]["spec"];
        assert_eq!(spec["required"], serde_json::json!(["type"]));
        assert_eq!(
            spec["properties"]["type"]["enum"],
            serde_json::json!(["mongo", "mysql"])
        );
        assert_eq!(schema["required"], serde_json::json!(["spec"]));
        let rules = &schema["x-kubernetes-validations"];
        assert!(
            rules[0]["rule"]
                .as_str()
                .is_some_and(|rule| rule.contains("self.metadata.name"))
        );
    }

    #[test]
    fn the_type_is_lowercase_on_the_wire() {
        let spec: DatabaseSpec =
            serde_json::from_value(serde_json::json!({"type": "mysql"})).expect("parses");
        assert_eq!(spec.type_, DatabaseType::Mysql);
        assert_eq!(spec.type_.to_string(), "mysql");
        let bad = serde_json::from_value::<DatabaseSpec>(serde_json::json!({"type": "postgres"}));
        assert!(bad.is_err());
    }

    #[test]
    fn the_sample_is_valid() {
        let sample: Database = crate::sample();
        assert_eq!(sample.spec.type_, DatabaseType::Mongo);
        let json = serde_json::to_value(&sample).expect("serialises");
        assert_eq!(json["kind"], "Database");
    }
}
