//! `metadata.managedFields`: decoding and encoding the entries, identifying
//! managers, and the fields no manager ever owns.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldpath::{PathElement, Set};
use crate::gofmt;

pub(super) const APPLY: &str = "Apply";
pub(super) const UPDATE: &str = "Update";

/// Update managers kept before the oldest are folded into `ancient-changes`.
const MAX_UPDATE_MANAGERS: usize = 10;

/// Who owns a set of fields: one entry per (manager, operation, apiVersion,
/// subresource), except that appliers keep one entry across apiVersions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ManagerId {
    pub manager: String,
    pub operation: String,
    /// Empty for appliers.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    pub(super) fn update(manager: &str, api_version: &str, subresource: Option<&str>) -> ManagerId {
        ManagerId {
            manager: non_empty_manager(manager),
            operation: UPDATE.to_string(),
            api_version: api_version.to_string(),
            subresource: subresource.unwrap_or("").to_string(),
        }
    }

    pub(super) fn apply(manager: &str, subresource: Option<&str>) -> ManagerId {
        ManagerId {
            manager: non_empty_manager(manager),
            operation: APPLY.to_string(),
            api_version: String::new(),
            subresource: subresource.unwrap_or("").to_string(),
        }
    }

    /// The JSON identifier the real server keys managers by (and sorts
    /// conflict messages by).
    pub(super) fn identifier(&self) -> String {
        let mut parts = Vec::new();
        for (key, value) in [
            ("manager", &self.manager),
            ("operation", &self.operation),
            ("apiVersion", &self.api_version),
            ("subresource", &self.subresource),
        ] {
            if !value.is_empty() {
                parts.push(format!(
                    "{}:{}",
                    gofmt::json_string(key),
                    gofmt::json_string(value)
                ));
            }
        }
        format!("{{{}}}", parts.join(","))
    }

    /// How conflict messages name a manager: `"a"`, `"m" using v1`,
    /// `"c" with subresource "status" using v1`.
    pub(super) fn describe(&self) -> String {
        let mut out = gofmt::quote(&self.manager);
        if !self.subresource.is_empty() {
            out = format!("{out} with subresource {}", gofmt::quote(&self.subresource));
        }
        if self.operation == UPDATE {
            out = format!("{out} using {}", self.api_version);
        }
        out
    }
}

fn non_empty_manager(manager: &str) -> String {
    if manager.is_empty() {
        "unknown".to_string()
    } else {
        manager.to_string()
    }
}

/// One manager's fields.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub set: Set,
    pub api_version: String,
    pub time: Option<String>,
}

/// All managers of an object.
#[derive(Debug, Clone, Default)]
pub(super) struct Managed {
    pub entries: BTreeMap<ManagerId, Entry>,
}

impl Managed {
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Decodes `metadata.managedFields` (absent or `null` is empty).
    pub(super) fn decode(value: Option<&Value>) -> Result<Managed, String> {
        let mut managed = Managed::default();
        let items = match value {
            None | Some(Value::Null) => return Ok(managed),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(format!(
                    "managedFields must be a list, found {}",
                    gofmt::json(other)
                ));
            }
        };
        for (i, item) in items.iter().enumerate() {
            let Value::Object(entry) = item else {
                return Err(format!("managed fields entry {i} is not an object"));
            };
            let text = |key: &str| -> Result<String, String> {
                match entry.get(key) {
                    None | Some(Value::Null) => Ok(String::new()),
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(_) => Err(format!("managed fields entry {i}: {key} must be a string")),
                }
            };
            let operation = text("operation")?;
            if operation != APPLY && operation != UPDATE {
                return Err("operation must be `Apply` or `Update`".to_string());
            }
            let api_version = text("apiVersion")?;
            if api_version.is_empty() {
                return Err("apiVersion must not be empty".to_string());
            }
            match text("fieldsType")?.as_str() {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ));
                }
            }
            let set = match entry.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(fields) => Set::from_fields_v1(fields)
                    .map_err(|e| format!("error decoding set of entry {i}: {e}"))?,
            };
            let time = match text("time")? {
                t if t.is_empty() => None,
                t => Some(t),
            };
            let id = ManagerId {
                manager: text("manager")?,
                api_version: if operation == APPLY {
                    String::new()
                } else {
                    api_version.clone()
                },
                operation,
                subresource: text("subresource")?,
            };
            managed.entries.insert(
                id,
                Entry {
                    set,
                    api_version,
                    time,
                },
            );
        }
        Ok(managed)
    }

    /// The `managedFields` list, sorted as the real server sorts it, or
    /// `None` when no manager is left.
    pub(super) fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut entries: Vec<(&ManagerId, &Entry)> = self.entries.iter().collect();
        entries.sort_by(|(a, ea), (b, eb)| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| seconds(ea.time.as_deref()).cmp(&seconds(eb.time.as_deref())))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| ea.api_version.cmp(&eb.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        let list = entries
            .into_iter()
            .map(|(id, entry)| {
                let mut out = Map::new();
                let mut put = |key: &str, value: &str| {
                    if !value.is_empty() {
                        out.insert(key.to_string(), Value::String(value.to_string()));
                    }
                };
                put("manager", &id.manager);
                put("operation", &id.operation);
                put("apiVersion", &entry.api_version);
                put("time", entry.time.as_deref().unwrap_or(""));
                put("fieldsType", "FieldsV1");
                out.insert("fieldsV1".to_string(), entry.set.to_fields_v1());
                if !id.subresource.is_empty() {
                    out.insert(
                        "subresource".to_string(),
                        Value::String(id.subresource.clone()),
                    );
                }
                Value::Object(out)
            })
            .collect();
        Some(Value::Array(list))
    }

    /// Removes `lost` from every manager but `except`, dropping emptied entries.
    pub(super) fn take_from_others(&mut self, except: Option<&ManagerId>, lost: &Set) {
        for (id, entry) in self.entries.iter_mut() {
            if Some(id) != except {
                entry.set = entry.set.difference(lost);
            }
        }
        self.drop_empty();
    }

    pub(super) fn drop_empty(&mut self) {
        self.entries.retain(|_, e| !e.set.is_empty());
    }

    /// Folds the oldest Update managers into `ancient-changes` once there are
    /// more than ten, as the real server does.
    pub(super) fn cap_update_managers(&mut self) {
        let mut updaters: Vec<ManagerId> = self
            .entries
            .keys()
            .filter(|id| id.operation == UPDATE)
            .cloned()
            .collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        updaters.sort_by(|a, b| {
            let ta = self.entries.get(a).and_then(|e| e.time.as_deref());
            let tb = self.entries.get(b).and_then(|e| e.time.as_deref());
            seconds(ta)
                .cmp(&seconds(tb))
                .then_with(|| a.identifier().cmp(&b.identifier()))
        });
        let mut remaining = updaters.len();
        let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        for id in updaters {
            if remaining <= MAX_UPDATE_MANAGERS {
                break;
            }
            let Some(entry) = self.entries.get(&id).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket = ManagerId::update("ancient-changes", &version, None);
            match first_of_version.get(&version) {
                Some(first) => {
                    if !self.entries.contains_key(&bucket)
                        && let Some(first_entry) = self.entries.remove(first)
                    {
                        self.entries.insert(bucket.clone(), first_entry);
                    }
                    let Some(bucket_entry) = self.entries.get(&bucket).cloned() else {
                        continue;
                    };
                    self.entries.remove(&id);
                    self.entries.insert(
                        bucket,
                        Entry {
                            set: entry.set.union(&bucket_entry.set),
                            api_version: version,
                            time: entry.time.clone(),
                        },
                    );
                    remaining -= 1;
                }
                None => {
                    first_of_version.insert(version, id);
                }
            }
        }
    }
}

/// Seconds since the epoch of an RFC 3339 time; 0 when absent or unreadable.
fn seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_second())
        .unwrap_or(0)
}

/// Whether the request asks to clear managedFields (`[]` or `[{}]`).
pub(super) fn is_reset(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(only)] => only.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

/// Fields no manager owns: type and identity metadata the server controls.
pub(super) fn strip_set() -> Set {
    let mut set = Set::new();
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[PathElement::field(top)]);
    }
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
    ] {
        set.insert(&[PathElement::field("metadata"), PathElement::field(field)]);
    }
    set
}

/// The fields a write through `subresource` may own: everything but
/// `status` on the main resource; everything but `spec` on the status
/// subresource (the status strategies' reset fields: metadata a status
/// write changes, such as the Deployment controller's revision annotation,
/// is its writer's); only `status` on a CertificateSigningRequest's
/// `approval`, which writes conditions.
pub(super) fn owned_part(set: &Set, subresource: Option<&str>) -> Set {
    let status = PathElement::field("status");
    let ignoring = |field: &str| {
        let mut ignored = Set::new();
        ignored.insert(&[PathElement::field(field)]);
        set.recursive_difference(&ignored)
    };
    match subresource {
        Some("approval") => set.restricted_to(&status),
        Some("status") => ignoring("spec"),
        _ => ignoring("status"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decode_encode_round_trip_and_sort() {
        let recorded = json!([
            {"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T10:00:05Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k4": {}}}},
            {"manager": "b", "operation": "Apply", "apiVersion": "v1", "time": "2026-11-30T10:00:03Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k1": {}}}},
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2026-11-30T10:00:04Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k2": {}}}}
        ]);
        let managed = Managed::decode(Some(&recorded)).expect("valid");
        let encoded = managed.encode().expect("not empty");
        let managers: Vec<&str> = encoded
            .as_array()
            .map(|l| l.iter().filter_map(|e| e["manager"].as_str()).collect())
            .unwrap_or_default();
        // Apply before Update, then by time.
        assert_eq!(managers, vec!["b", "a", "m"]);
    }

    #[test]
    fn invalid_entries_are_rejected() {
        assert!(
            Managed::decode(Some(
                &json!([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}])
            ))
            .is_err()
        );
        assert!(
            Managed::decode(Some(
                &json!([{"operation": "Update", "fieldsType": "FieldsV1"}])
            ))
            .is_err()
        );
        assert!(
            Managed::decode(Some(&json!([{"operation": "Update", "apiVersion": "v1"}]))).is_err()
        );
        assert!(Managed::decode(Some(&json!({"a": 1}))).is_err());
        assert!(is_reset(Some(&json!([]))) && is_reset(Some(&json!([{}]))));
        assert!(!is_reset(None) && !is_reset(Some(&Value::Null)));
    }

    #[test]
    fn manager_descriptions_match_conflict_messages() {
        assert_eq!(ManagerId::apply("a", None).describe(), "\"a\"");
        assert_eq!(
            ManagerId::update("m", "v1", None).describe(),
            "\"m\" using v1"
        );
        assert_eq!(
            ManagerId::update("c", "v1", Some("status")).describe(),
            "\"c\" with subresource \"status\" using v1"
        );
        assert_eq!(
            ManagerId::update("m", "v1", None).identifier(),
            r#"{"manager":"m","operation":"Update","apiVersion":"v1"}"#
        );
    }

    #[test]
    fn more_than_ten_updaters_fold_into_ancient_changes() {
        let mut managed = Managed::default();
        for i in 0..12 {
            let mut set = Set::new();
            set.insert(&[
                PathElement::field("data"),
                PathElement::field(&format!("k{i}")),
            ]);
            managed.entries.insert(
                ManagerId::update(&format!("m{i:02}"), "v1", None),
                Entry {
                    set,
                    api_version: "v1".into(),
                    time: Some(format!("2026-11-30T10:00:{i:02}Z")),
                },
            );
        }
        managed.cap_update_managers();
        assert_eq!(managed.entries.len(), 10);
        let bucket = managed
            .entries
            .get(&ManagerId::update("ancient-changes", "v1", None))
            .expect("bucket exists");
        assert_eq!(bucket.set.paths().len(), 3, "the three oldest are folded");
        assert!(
            !managed
                .entries
                .contains_key(&ManagerId::update("m00", "v1", None))
        );
        assert!(
            managed
                .entries
                .contains_key(&ManagerId::update("m03", "v1", None))
        );
    }
}
