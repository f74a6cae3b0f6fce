//! The conversion of Database between `zalando.org/v2` (this spoke) and
//! `zalando.org/v1` (the hub): every version converts through the hub,
//! and the manager's conversion webhook (`/convert`) calls these functions
//! when the API server reads or writes a Database in another version than
//! the one it holds.
//!
//! v2's `spec.engine.name` is v1's `spec.type`. v1 has no field for
//! `spec.engine.version`: it travels in the [`ENGINE_VERSION`] annotation,
//! so that a v2 object stored as v1 reads back as it was written. The
//! status is the same type in both versions.

use std::collections::BTreeMap;

use database::api::zalando::v1::{Database as Hub, DatabaseSpec as HubSpec};
use database::api::zalando::v2::{Database, DatabaseSpec, Engine};
use database::manager::Manager;

/// Where a v2 Database's engine version is kept while it is held as v1.
pub const ENGINE_VERSION: &str = "zalando.org/engine-version";

/// Adds this conversion to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_conversion(to_hub, from_hub)
}

/// A v2 Database as v1: the engine's name becomes the type, its version an
/// annotation.
pub fn to_hub(spoke: Database) -> Result<Hub, String> {
    let Engine { name, version } = spoke.spec.engine;
    let mut hub = Hub::new("", HubSpec { type_: name });
    hub.metadata = spoke.metadata;
    let mut annotations = hub.metadata.annotations.take().unwrap_or_default();
    match version {
        Some(version) => annotations.insert(ENGINE_VERSION.to_owned(), version),
        None => annotations.remove(ENGINE_VERSION),
    };
    hub.metadata.annotations = non_empty(annotations);
    // The status has the same type in both versions.
    hub.status = spoke.status;
    Ok(hub)
}

/// A v1 Database as v2: the type becomes the engine's name, the annotation
/// (if any) its version.
pub fn from_hub(hub: Hub) -> Result<Database, String> {
    let mut metadata = hub.metadata;
    let mut annotations = metadata.annotations.take().unwrap_or_default();
    let version = annotations.remove(ENGINE_VERSION);
    metadata.annotations = non_empty(annotations);
    let engine = Engine {
        name: hub.spec.type_,
        version,
    };
    let mut spoke = Database::new("", DatabaseSpec { engine });
    spoke.metadata = metadata;
    spoke.status = hub.status;
    Ok(spoke)
}

/// `None` for no annotations, as the API server stores them.
fn non_empty(annotations: BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!annotations.is_empty()).then_some(annotations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use database::api::zalando::v1::{DatabasePhase, DatabaseStatus, DatabaseType};

    fn spoke(version: Option<&str>) -> Database {
        let engine = Engine {
            name: DatabaseType::Mysql,
            version: version.map(str::to_owned),
        };
        let mut spoke = Database::new("test", DatabaseSpec { engine });
        spoke
            .metadata
            .labels
            .get_or_insert_default()
            .insert("app".to_owned(), "test".to_owned());
        spoke.status = Some(DatabaseStatus {
            phase: Some(DatabasePhase::Ready),
            message: Some("ready".to_owned()),
            observed_generation: Some(2),
            conditions: Vec::new(),
        });
        spoke
    }

    #[test]
    fn the_engine_name_is_the_type_and_its_version_an_annotation() {
        let hub = to_hub(spoke(Some("8.0"))).expect("converts");
        assert_eq!(hub.spec.type_, DatabaseType::Mysql);
        let annotations = hub.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations[ENGINE_VERSION], "8.0");
        assert_eq!(hub.metadata.labels, spoke(None).metadata.labels);
        let status = hub.status.expect("a status");
        assert_eq!(status.phase, Some(DatabasePhase::Ready));
        assert_eq!(status.observed_generation, Some(2));
    }

    #[test]
    fn a_round_trip_through_the_hub_loses_nothing() {
        for version in [Some("8.0"), None] {
            let spoke = spoke(version);
            let hub = to_hub(spoke.clone()).expect("converts to the hub");
            assert_eq!(from_hub(hub).expect("converts back"), spoke);
        }
    }

    #[test]
    fn a_round_trip_from_the_hub_loses_nothing() {
        let mut hub = Hub::new(
            "test",
            HubSpec {
                type_: DatabaseType::Mongo,
            },
        );
        let back = to_hub(from_hub(hub.clone()).expect("converts")).expect("converts back");
        assert_eq!(back, hub);
        // Annotations of the user's stay where they are.
        hub.metadata.annotations = Some(BTreeMap::from([
            ("team".to_owned(), "a".to_owned()),
            (ENGINE_VERSION.to_owned(), "4.0".to_owned()),
        ]));
        let spoke = from_hub(hub.clone()).expect("converts");
        assert_eq!(spoke.spec.engine.version.as_deref(), Some("4.0"));
        let annotations = spoke.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["team"]);
        assert_eq!(to_hub(spoke).expect("converts back"), hub);
    }
}
