//! The conversion of Database between `zalando.zalando.org/v1` (this spoke) and
//! `zalando.zalando.org/v2` (the hub): every version converts through the hub,
//! and the manager's conversion webhook (`/convert`) calls these functions
//! when the API server reads or writes a Database in another version than
//! the one it holds.
//!
//! This file is yours: map the fields of the two versions in [`to_hub`] and
//! [`from_hub`]. A round trip (spoke → hub → spoke) must give back what it
//! was given; keep in an annotation what the other version has no field for.
//! opctl never overwrites it without `--force`.

use serde::Serialize;
use serde::de::DeserializeOwned;

use database::api::zalando::v1::Database;
// The hub, which every version converts through.
use database::api::zalando::v2::Database as Hub;
use database::manager::Manager;

/// Adds this conversion to the manager (called by `webhook::register`, in
/// src/main.rs).
pub fn register(manager: Manager) -> Manager {
    manager.with_conversion(to_hub, from_hub)
}

/// This version's object as the hub's; an error fails the API request with it.
pub fn to_hub(spoke: Database) -> Result<Hub, String> {
    // TODO: map the fields that differ. The metadata is kept as it is.
    let mut hub = Hub::new("", same_fields(&spoke.spec)?);
    hub.metadata = spoke.metadata;
    hub.status = same_fields(&spoke.status)?;
    Ok(hub)
}

/// The hub's object as this version's.
pub fn from_hub(hub: Hub) -> Result<Database, String> {
    // TODO: map the fields that differ, the reverse of `to_hub`.
    let mut spoke = Database::new("", same_fields(&hub.spec)?);
    spoke.metadata = hub.metadata;
    spoke.status = same_fields(&hub.status)?;
    Ok(spoke)
}

/// `from` as a type with the same fields: what the two versions share as
/// scaffolded (decoding fails on a field the other type lacks).
fn same_fields<A: Serialize, B: DeserializeOwned>(from: &A) -> Result<B, String> {
    let json = serde_json::to_value(from).map_err(|err| err.to_string())?;
    serde_json::from_value(json).map_err(|err| format!("the versions differ: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spoke() -> Database {
        let mut spoke = Database::new("test", Default::default());
        spoke.spec.foo = Some("example".to_owned());
        spoke
            .metadata
            .labels
            .get_or_insert_default()
            .insert("app".to_owned(), "test".to_owned());
        spoke
    }

    #[test]
    fn a_round_trip_through_the_hub_loses_nothing() {
        let spoke = spoke();
        let hub = to_hub(spoke.clone()).expect("converts to the hub");
        assert_eq!(hub.metadata, spoke.metadata);
        assert_eq!(from_hub(hub).expect("converts back"), spoke);
    }

    #[test]
    fn a_round_trip_from_the_hub_loses_nothing() {
        let hub = to_hub(spoke()).expect("converts to the hub");
        let back = to_hub(from_hub(hub.clone()).expect("converts")).expect("converts back");
        assert_eq!(back, hub);
    }
}
