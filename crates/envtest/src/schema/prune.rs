//! Pruning of unknown fields (`structuralpruning.PruneWithOptions`),
//! removal of `null`s the schema does not allow, and the coercion of
//! embedded resources' `metadata`.

use serde_json::{Map, Value};

use super::node::Schema;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes `obj` (the resource root) and returns the unknown field paths:
/// pruned ones sorted, then those dropped from embedded metadata, sorted.
pub(crate) fn prune_root(obj: &mut Value, s: &Schema) -> Vec<String> {
    let mut paths = Vec::new();
    prune_map_or_list(obj, Some(s), true, &mut Vec::new(), &mut paths);
    paths.sort();
    prune_nulls(obj, Some(s));
    let mut meta_paths = Vec::new();
    coerce(obj, Some(s), &mut Vec::new(), &mut meta_paths, true);
    meta_paths.sort();
    paths.extend(meta_paths);
    paths
}

/// Prunes a default value against its schema (no unknown-field tracking).
pub(crate) fn prune_value(obj: &mut Value, s: &Schema, is_resource_root: bool) {
    let mut sink = Vec::new();
    prune_map_or_list(obj, Some(s), is_resource_root, &mut Vec::new(), &mut sink);
}

fn join(parent: &[String]) -> String {
    parent.concat()
}

fn push_key(parent: &mut Vec<String>, key: &str) {
    if !parent.is_empty() {
        parent.push(".".to_string());
    }
    parent.push(key.to_string());
}

fn record(parent: &[String], key: &str, out: &mut Vec<String>) {
    let mut p = parent.to_vec();
    push_key(&mut p, key);
    out.push(join(&p));
}

/// `embedded` is true for the resource root and embedded resources, whose
/// `apiVersion`, `kind` and `metadata` are never pruned here.
fn prune_map_or_list(
    x: &mut Value,
    s: Option<&Schema>,
    embedded: bool,
    parent: &mut Vec<String>,
    out: &mut Vec<String>,
) {
    if let Some(s) = s
        && s.preserve_unknown()
    {
        skip_prune(x, s, embedded, parent, out);
        return;
    }
    let len = parent.len();
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    record(parent, &k, out);
                }
                m.clear();
                return;
            };
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = s.properties.get(&k) {
                    push_key(parent, &k);
                    if let Some(v) = m.get_mut(&k) {
                        prune_map_or_list(v, Some(p), p.x_embedded_resource, parent, out);
                    }
                    parent.truncate(len);
                } else if s.has_additional() {
                    push_key(parent, &k);
                    let sub = s.additional_schema();
                    if let Some(v) = m.get_mut(&k) {
                        prune_map_or_list(
                            v,
                            sub,
                            sub.is_some_and(|a| a.x_embedded_resource),
                            parent,
                            out,
                        );
                    }
                    parent.truncate(len);
                } else {
                    if !META_FIELDS.contains(&k.as_str()) || !parent.is_empty() {
                        record(parent, &k, out);
                    }
                    m.remove(&k);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                parent.push(format!("[{i}]"));
                prune_map_or_list(
                    v,
                    item_schema,
                    item_schema.is_some_and(|a| a.x_embedded_resource),
                    parent,
                    out,
                );
                parent.truncate(len);
            }
        }
        _ => {}
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: keep unknown fields but
/// still prune inside the ones the schema specifies.
fn skip_prune(
    x: &mut Value,
    s: &Schema,
    embedded: bool,
    parent: &mut Vec<String>,
    out: &mut Vec<String>,
) {
    let len = parent.len();
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let sub = if let Some(p) = s.properties.get(&k) {
                    Some(Some(p))
                } else if s.has_additional() {
                    Some(s.additional_schema())
                } else {
                    None
                };
                if let Some(sub) = sub {
                    push_key(parent, &k);
                    if let Some(v) = m.get_mut(&k) {
                        prune_map_or_list(
                            v,
                            sub,
                            sub.is_some_and(|a| a.x_embedded_resource),
                            parent,
                            out,
                        );
                    }
                    parent.truncate(len);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items.as_deref() else {
                return;
            };
            for (i, v) in items.iter_mut().enumerate() {
                parent.push(format!("[{i}]"));
                skip_prune(v, item_schema, item_schema.x_embedded_resource, parent, out);
                parent.truncate(len);
            }
        }
        _ => {}
    }
}

fn field_schema<'a>(s: Option<&'a Schema>, k: &str) -> Option<&'a Schema> {
    let s = s?;
    s.properties.get(k).or_else(|| s.additional_schema())
}

/// Drops `null`s of fields that are neither nullable nor defaulted
/// (`PruneNonNullableNullsWithoutDefaults`).
pub(crate) fn prune_nulls(x: &mut Value, s: Option<&Schema>) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let sub = field_schema(s, &k);
                let drop = m.get(&k).is_some_and(Value::is_null)
                    && sub.is_some_and(|p| !p.nullable && p.default.is_none());
                if drop {
                    m.remove(&k);
                } else if let Some(v) = m.get_mut(&k) {
                    prune_nulls(v, sub);
                }
            }
        }
        Value::Array(items) => {
            let sub = s.and_then(|s| s.items.as_deref());
            for v in items {
                prune_nulls(v, sub);
            }
        }
        _ => {}
    }
}

/// Coerces the metadata of embedded resources below the root: unknown
/// ObjectMeta fields are dropped and reported.
fn coerce(
    x: &mut Value,
    s: Option<&Schema>,
    parent: &mut Vec<String>,
    out: &mut Vec<String>,
    is_root: bool,
) {
    let Some(s) = s else { return };
    let len = parent.len();
    match x {
        Value::Object(m) => {
            if s.x_embedded_resource && !is_root {
                coerce_metadata(m, parent, out);
            }
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let sub = if let Some(p) = s.properties.get(&k) {
                    Some(p)
                } else if s.has_additional() {
                    s.additional_schema()
                } else {
                    continue;
                };
                push_key(parent, &k);
                if let Some(v) = m.get_mut(&k) {
                    coerce(v, sub, parent, out, false);
                }
                parent.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                parent.push(format!("[{i}]"));
                coerce(v, s.items.as_deref(), parent, out, false);
                parent.truncate(len);
            }
        }
        _ => {}
    }
}

fn coerce_metadata(m: &mut Map<String, Value>, parent: &[String], out: &mut Vec<String>) {
    let Some(Value::Object(meta)) = m.get_mut("metadata") else {
        return;
    };
    let keys: Vec<String> = meta.keys().cloned().collect();
    for k in keys {
        if !crate::meta::OBJECT_META_FIELDS.contains(&k.as_str()) {
            meta.remove(&k);
            let mut p = parent.to_vec();
            push_key(&mut p, "metadata");
            push_key(&mut p, &k);
            out.push(join(&p));
        }
    }
    // A zero creationTimestamp is not serialised.
    if meta.get("creationTimestamp").is_some_and(Value::is_null) {
        meta.remove("creationTimestamp");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fielderr::FieldPath;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        Schema::parse(&v, &FieldPath::nil())
    }

    #[test]
    fn prunes_unknown_fields_and_reports_sorted_paths() {
        let s = schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"typed": {"type": "object", "properties": {}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}));
        let mut obj = json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x"},
            "spec": {"extra": 1, "items": [{"a": "x", "b": 2}],
                     "free": {"anything": [1], "typed": {"gone": true}},
                     "labels": {"k": "v"}},
            "extraTop": {"a": 1}});
        let paths = prune_root(&mut obj, &s);
        assert_eq!(
            paths,
            vec![
                "extraTop",
                "spec.extra",
                "spec.free.typed.gone",
                "spec.items[0].b"
            ]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x"},
            "spec": {"items": [{"a": "x"}], "free": {"anything": [1], "typed": {}},
                     "labels": {"k": "v"}}})
        );
    }

    #[test]
    fn embedded_resources_keep_type_and_object_meta() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object", "properties": {}}}}}}}}),
        );
        let mut obj = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}, "status": {}}}});
        let paths = prune_root(&mut obj, &s);
        assert_eq!(
            paths,
            vec![
                "spec.template.spec.x",
                "spec.template.status",
                "spec.template.metadata.bogus"
            ]
        );
        assert_eq!(obj["spec"]["template"]["metadata"], json!({"name": "p"}));
    }

    #[test]
    fn nulls_without_nullable_or_default_are_dropped() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string", "nullable": true},
            "c": {"type": "string", "default": "x"}}}}}),
        );
        let mut obj = json!({"spec": {"a": null, "b": null, "c": null}});
        prune_root(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"b": null, "c": null}}));
    }
}
