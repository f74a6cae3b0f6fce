//! Small accessors for the `metadata` of objects held as JSON values.
//!
//! Objects travel through the server as `serde_json::Value`; these helpers
//! read and write the handful of metadata fields the generic machinery needs
//! without ever panicking on malformed input.

use serde_json::{Map, Value};

/// The fields of ObjectMeta: metadata of custom resources and of embedded
/// resources keeps only these.
pub(crate) const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// `metadata` of `obj`, if it is an object.
pub(crate) fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata` of `obj`, created (as `{}`) when absent or not an object.
/// `obj` itself is turned into an object if it is not one.
pub(crate) fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = match obj {
        Value::Object(map) => map,
        _ => unreachable!("made an object above"),
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// A string field of `metadata` (empty when absent or not a string).
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    metadata(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

pub(crate) fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

pub(crate) fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

pub(crate) fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion")
}

pub(crate) fn set_meta(obj: &mut Value, field: &str, value: Value) {
    metadata_mut(obj).insert(field.to_string(), value);
}

pub(crate) fn remove_meta(obj: &mut Value, field: &str) -> Option<Value> {
    metadata_mut(obj).remove(field)
}

/// `metadata.labels` as string pairs (non-string values ignored).
pub(crate) fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
}

/// `metadata.finalizers` as strings.
pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        remove_meta(obj, "finalizers");
    } else {
        set_meta(
            obj,
            "finalizers",
            Value::Array(finalizers.iter().cloned().map(Value::String).collect()),
        );
    }
}

pub(crate) fn is_deleting(obj: &Value) -> bool {
    metadata(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

pub(crate) fn generation(obj: &Value) -> i64 {
    metadata(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The owner references of `obj` (entries that are not objects are skipped).
pub(crate) fn owner_references(obj: &Value) -> Vec<&Map<String, Value>> {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

/// The five random characters of a generated name (`generateName`, a Pod's
/// `kube-api-access-*` volume): apimachinery's `utilrand.String` alphabet,
/// without vowels so that no word is spelt.
pub(crate) fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// The current time as kube-apiserver writes `metav1.Time` (seconds, UTC).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `group/version`, or `version` for the core group.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Follows a dotted path of object keys (`spec.replicas`).
pub(crate) fn get_path<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |cur, key| cur.get(*key))
}

/// Sets `obj.path = value`, turning `obj` and every intermediate value that is
/// not an object into one (request data can hold anything; this never panics).
pub(crate) fn set_path(obj: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        *obj = value;
        return;
    };
    let mut cur = obj;
    for key in parents {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else { return };
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    if let Value::Object(map) = cur {
        map.insert(last.to_string(), value);
    }
}

/// Puts `kind`, `apiVersion` and `metadata` first, in that order, as Go's
/// encoder writes a built-in object (its `TypeMeta` fields, then
/// `ObjectMeta`); the other fields keep their order. Clients that report
/// decode errors by column (kube-rs) then point where they would on a
/// cluster. Custom resources are maps in Go and keep sorted keys.
pub(crate) fn type_meta_first(obj: &mut Value) {
    let Value::Object(map) = obj else {
        return;
    };
    let firsts = ["kind", "apiVersion", "metadata"];
    let in_order = map
        .keys()
        .zip(firsts.iter().filter(|k| map.contains_key(**k)))
        .all(|(a, b)| a == b);
    if in_order {
        return;
    }
    let mut ordered = Map::with_capacity(map.len());
    for key in firsts {
        if let Some(v) = map.shift_remove(key) {
            ordered.insert(key.to_string(), v);
        }
    }
    ordered.append(map);
    *map = ordered;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_mut_repairs_non_objects() {
        let mut obj = json!({"metadata": 3});
        metadata_mut(&mut obj).insert("name".into(), json!("x"));
        assert_eq!(name(&obj), "x");
        let mut not_obj = json!([1]);
        set_meta(&mut not_obj, "name", json!("y"));
        assert_eq!(name(&not_obj), "y");
    }

    #[test]
    fn finalizers_round_trip_and_empty_removes() {
        let mut obj = json!({"metadata": {"finalizers": ["a", 1, "b"]}});
        assert_eq!(finalizers(&obj), vec!["a", "b"]);
        set_finalizers(&mut obj, &[]);
        assert!(metadata(&obj).is_some_and(|m| !m.contains_key("finalizers")));
    }

    #[test]
    fn set_path_replaces_non_objects() {
        let mut obj = json!({"status": "oops"});
        set_path(&mut obj, &["status", "phase"], json!("Terminating"));
        assert_eq!(obj, json!({"status": {"phase": "Terminating"}}));
    }

    #[test]
    fn api_version_splits_core_and_groups() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(api_version("", "v1"), "v1");
    }
}
