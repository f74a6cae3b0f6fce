//! Loading the recorded transcripts and undoing their normalisation where
//! the functions under test need concrete values.

use std::path::PathBuf;

use serde_json::{Map, Value};

pub(super) fn load(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

pub(super) fn steps(file: &str) -> Vec<Value> {
    match load(file).get("steps") {
        Some(Value::Array(steps)) => steps.clone(),
        _ => panic!("{file} has no steps"),
    }
}

/// The step named `name` (by prefix) of `file`.
pub(super) fn step(file: &str, name_prefix: &str) -> Value {
    steps(file)
        .into_iter()
        .find(|s| {
            s.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with(name_prefix))
        })
        .unwrap_or_else(|| panic!("{file} has no step starting with {name_prefix:?}"))
}

const FAKE_UID_PREFIX: &str = "00000000-0000-4000-8000-";

/// `<uid:N>` placeholders become real-looking UUIDs (the real server writes
/// UUIDs into `k:{"uid":...}` keys with Go's JSON escaping, which a `<` in
/// the placeholder would change).
pub(super) fn with_fake_uids(v: &Value) -> Value {
    map_strings(v, &|s| replace_uid_placeholders(s))
}

/// The inverse of [`with_fake_uids`].
pub(super) fn with_uid_placeholders(v: &Value) -> Value {
    map_strings(v, &|s| restore_uid_placeholders(s))
}

fn map_strings(v: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|i| map_strings(i, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (f(k), map_strings(v, f)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

fn replace_uid_placeholders(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("<uid:") {
        let after = &rest[start + 5..];
        match after.find('>') {
            Some(end) if after[..end].chars().all(|c| c.is_ascii_digit()) && end > 0 => {
                out.push_str(&rest[..start]);
                let n: u64 = after[..end].parse().unwrap_or(0);
                out.push_str(&format!("{FAKE_UID_PREFIX}{n:012}"));
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..start + 5]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn restore_uid_placeholders(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find(FAKE_UID_PREFIX) {
        let digits = &rest[start + FAKE_UID_PREFIX.len()..];
        match digits.get(..12) {
            Some(d) if d.chars().all(|c| c.is_ascii_digit()) => {
                out.push_str(&rest[..start]);
                out.push_str(&format!("<uid:{}>", d.parse::<u64>().unwrap_or(0)));
                rest = &digits[12..];
            }
            _ => {
                out.push_str(&rest[..start + FAKE_UID_PREFIX.len()]);
                rest = digits;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A managedFields list as recorded: entry times become `<time>`.
pub(super) fn normalise_managed_fields(list: &Value) -> Value {
    let mut out = with_uid_placeholders(list);
    if let Some(items) = out.as_array_mut() {
        for item in items {
            if let Some(entry) = item.as_object_mut()
                && entry.contains_key("time")
            {
                entry.insert("time".into(), Value::String("<time>".into()));
            }
        }
    }
    out
}

pub(super) fn managed_fields(obj: &Value) -> Value {
    obj.pointer("/metadata/managedFields")
        .cloned()
        .unwrap_or(Value::Null)
}

pub(super) fn set_managed_fields(obj: &mut Value, list: Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_null() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), list);
        }
    }
}

/// Each entry's `fieldsV1` serialised, to check key order too.
pub(super) fn fields_v1_texts(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|e| serde_json::to_string(&e["fieldsV1"]).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn uid_placeholders_round_trip() {
    let v = serde_json::json!({"k:{\"uid\":\"<uid:4>\"}": ["<uid:12> and <uid:x>"]});
    let fake = with_fake_uids(&v);
    assert!(
        fake.to_string()
            .contains("00000000-0000-4000-8000-000000000004")
    );
    assert_eq!(with_uid_placeholders(&fake), v);
}
