//! The `Database` kind: `databases.zalando.org`, version `v2`.
//!
//! v2 names the server as an engine with a version (`spec.engine.name`,
//! `spec.engine.version`) where v1 has `spec.type`. Both versions are
//! served; the API server stores v1 (it carries `+opctl:storageversion`) and
//! the manager's conversion webhook converts (src/webhook/zalando/v2/).
//! v1 has no field for the engine's version: a v2 object written and read
//! back through v1 keeps it in the `zalando.org/engine-version` annotation.
//! The controller runs the image its engine names (`mongo:4.0`,
//! `mysql:8.0`); the version is recorded, not acted on.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The servers an engine can be: the same as v1's `spec.type`.
pub use crate::zalando::v1::DatabaseType as EngineName;
/// Where a Database stands and its observed state: the same as in v1.
pub use crate::zalando::v1::{DatabasePhase, DatabaseStatus};

/// The desired state of a Database.
// Short names, scope and the name rule are those of v1: one CRD serves both.
#[derive(CustomResource, Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "zalando.org",
    version = "v2",
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
    printcolumn(name = "Engine", type_ = "string", json_path = ".spec.engine.name"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.engine.version"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSpec {
    /// The database server to run.
    pub engine: Engine,
}

/// A database server and the version asked for.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Engine {
    /// `mongo` or `mysql`.
    pub name: EngineName,

    /// The server version asked for (for example `8.0`); recorded only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn the_crd_is_v2_of_databases_zalando_org_with_v1s_names() {
        let crd = Database::crd();
        let v1 = crate::zalando::v1::Database::crd();
        assert_eq!(crd.metadata.name, v1.metadata.name);
        assert_eq!(crd.spec.names, v1.spec.names);
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v2");
        let subresources = version.subresources.as_ref();
        assert!(subresources.is_some_and(|s| s.status.is_some()));
    }

    #[test]
    fn the_schema_requires_an_engine_name_of_mongo_or_mysql() {
        let crd = serde_json::to_value(Database::crd()).expect("serialises");
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let engine = &schema["properties"]["spec"]["properties"]["engine"];
        assert_eq!(engine["required"], serde_json::json!(["name"]));
        assert_eq!(
            engine["properties"]["name"]["enum"],
            serde_json::json!(["mongo", "mysql"])
        );
        assert_eq!(engine["properties"]["version"]["type"], "string");
    }

    #[test]
    fn the_sample_is_valid() {
        let sample: Database = crate::sample();
        assert_eq!(sample.spec.engine.name, EngineName::Mysql);
        assert_eq!(sample.spec.engine.version.as_deref(), Some("8.0"));
        let json = serde_json::to_value(&sample).expect("serialises");
        assert_eq!(json["apiVersion"], "zalando.org/v2");
    }
}
