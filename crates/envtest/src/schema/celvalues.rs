//! Kubernetes objects as CEL values (`UnstructuredToVal`): typed by the
//! schema, property names escaped, formatted strings as timestamps,
//! durations and bytes.

use std::sync::Arc;

use cel::Value as CelValue;
use cel::objects::{Key, Map as CelMap};
use serde_json::Value;

use super::formats;
use super::node::Schema;

/// CEL's reserved words: not identifiers (cel-spec, "Syntax").
pub(crate) const RESERVED_WORDS: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL name of an object property (`cel.Escape`); `None` if it has none.
pub(crate) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED_WORDS.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if name
        .chars()
        .any(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
    {
        return None;
    }
    let mut out = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
    }
    Some(out)
}

fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

fn map_value(entries: Vec<(String, CelValue)>) -> CelValue {
    let mut m = std::collections::HashMap::new();
    for (k, v) in entries {
        m.insert(key(&k), v);
    }
    CelValue::Map(CelMap { map: Arc::new(m) })
}

/// A JSON value without a schema (under preserve-unknown-fields, and the
/// objects, requests and params of admission expressions).
pub(crate) fn untyped(v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => CelValue::Int(i),
            None => CelValue::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(a) => CelValue::List(Arc::new(a.iter().map(untyped).collect())),
        Value::Object(m) => map_value(m.iter().map(|(k, v)| (k.clone(), untyped(v))).collect()),
    }
}

/// The CEL value of `v` under schema `s` (`UnstructuredToVal`).
pub(crate) fn to_cel(v: &Value, s: &Schema, is_resource_root: bool) -> CelValue {
    if v.is_null() {
        return CelValue::Null;
    }
    if s.x_int_or_string {
        return untyped(v);
    }
    match (s.type_.as_str(), v) {
        ("object", Value::Object(m)) => {
            let embedded = is_resource_root || s.x_embedded_resource;
            if embedded || !s.properties.is_empty() {
                let mut entries = Vec::new();
                for (k, val) in m {
                    if embedded && k == "metadata" && !s.properties.contains_key("metadata") {
                        // Only name and generateName of ObjectMeta are visible.
                        if let Value::Object(meta) = val {
                            let visible = meta
                                .iter()
                                .filter(|(mk, _)| *mk == "name" || *mk == "generateName")
                                .map(|(mk, mv)| (mk.clone(), untyped(mv)))
                                .collect();
                            entries.push((k.clone(), map_value(visible)));
                        }
                        continue;
                    }
                    if embedded
                        && (k == "apiVersion" || k == "kind")
                        && !s.properties.contains_key(k)
                    {
                        entries.push((k.clone(), untyped(val)));
                        continue;
                    }
                    if let (Some(p), Some(name)) = (s.properties.get(k), escape(k)) {
                        entries.push((name, to_cel(val, p, p.x_embedded_resource)));
                    } else if s.preserve_unknown() {
                        entries.push((k.clone(), untyped(val)));
                    }
                }
                map_value(entries)
            } else if let Some(a) = s.additional_schema() {
                map_value(
                    m.iter()
                        .map(|(k, val)| (k.clone(), to_cel(val, a, a.x_embedded_resource)))
                        .collect(),
                )
            } else {
                untyped(v)
            }
        }
        ("array", Value::Array(items)) => match s.items.as_deref() {
            Some(is) => CelValue::List(Arc::new(
                items
                    .iter()
                    .map(|x| to_cel(x, is, is.x_embedded_resource))
                    .collect(),
            )),
            None => untyped(v),
        },
        ("string", Value::String(st)) => string_value(st, &s.format),
        ("number", Value::Number(n)) => CelValue::Float(n.as_f64().unwrap_or(0.0)),
        _ => untyped(v),
    }
}

fn string_value(s: &str, format: &str) -> CelValue {
    use chrono::{DateTime, FixedOffset, NaiveDate, TimeZone, Utc};
    let fallback = || CelValue::String(Arc::new(s.to_string()));
    match format {
        "date" => formats::parse_date(s)
            .and_then(|(y, m, d)| NaiveDate::from_ymd_opt(y, m, d))
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|dt| CelValue::Timestamp(Utc.from_utc_datetime(&dt).fixed_offset()))
            .unwrap_or_else(fallback),
        "date-time" => DateTime::<FixedOffset>::parse_from_rfc3339(s)
            .ok()
            .or_else(|| {
                chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S")
                    .ok()
                    .map(|n| Utc.from_utc_datetime(&n).fixed_offset())
            })
            .map(CelValue::Timestamp)
            .unwrap_or_else(fallback),
        "duration" => formats::parse_duration_nanos(s)
            .and_then(|n| i64::try_from(n).ok())
            .map(|n| CelValue::Duration(chrono::Duration::nanoseconds(n)))
            .unwrap_or_else(fallback),
        "byte" => {
            use base64::Engine;
            let e = base64::engine::general_purpose::STANDARD;
            e.decode(s)
                .map(|b| CelValue::Bytes(Arc::new(b)))
                .unwrap_or_else(|_| fallback())
        }
        _ => fallback(),
    }
}
