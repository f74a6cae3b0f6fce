//! `x-kubernetes-list-type` / `x-kubernetes-map-type`: shape information for
//! server-side apply, and the uniqueness checks of `set` and `map` lists
//! (`structurallisttype.ValidateListSetsAndMaps`).

use serde_json::{Map, Value};

use super::fielderr::{BadValue, FieldError, FieldPath};
use super::node::Schema;
use crate::gofmt;
use crate::typeinfo::{ListType, TypeInfo, Untyped};

/// The schema at `path` (field names, list positions left out).
pub(crate) fn schema_at<'a>(root: &'a Schema, path: &[&str]) -> Option<&'a Schema> {
    let mut cur = root;
    for name in path {
        // A list position is implied between a list and its items' fields.
        while cur.type_ == "array" {
            cur = cur.items.as_deref()?;
        }
        cur = match cur.properties.get(*name) {
            Some(p) => p,
            None => cur.additional_schema()?,
        };
    }
    Some(cur)
}

/// The apply semantics of the list at `path`.
pub(crate) fn list_type(root: &Schema, path: &[&str]) -> ListType {
    if path.first() == Some(&"metadata") {
        return Untyped.list_type(path);
    }
    match schema_at(root, path) {
        Some(s) => match s.x_list_type.as_deref() {
            Some("set") => ListType::Set,
            Some("map") if !s.x_list_map_keys.is_empty() => {
                ListType::Map(s.x_list_map_keys.clone())
            }
            _ => ListType::Atomic,
        },
        None => ListType::Atomic,
    }
}

pub(crate) fn map_is_atomic(root: &Schema, path: &[&str]) -> bool {
    if path.first() == Some(&"metadata") {
        return Untyped.map_is_atomic(path);
    }
    schema_at(root, path).is_some_and(|s| s.x_map_type.as_deref() == Some("atomic"))
}

/// Checks uniqueness in `set` lists and of keys in `map` lists.
pub(crate) fn validate_lists(root: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(m) = obj {
        object(&FieldPath::nil(), root, m, &mut errs);
    }
    errs
}

fn object(path: &FieldPath, s: &Schema, m: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    if let Some(ap) = s.additional_schema() {
        for k in &keys {
            value(&path.key(k), ap, &m[k.as_str()], errs);
        }
    }
    for k in &keys {
        if let Some(p) = s.properties.get(k.as_str()) {
            value(&path.child(k), p, &m[k.as_str()], errs);
        }
    }
}

fn value(path: &FieldPath, s: &Schema, v: &Value, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => array(path, s, items, errs),
        Value::Object(m) => object(path, s, m, errs),
        _ => {}
    }
}

/// `%#v` of a map list's key: `map[string]interface {}{"name":"a"}`.
fn key_value(fields: &[(&str, &Value)]) -> BadValue {
    let mut obj = Map::new();
    for (k, v) in fields {
        obj.insert((*k).to_string(), (*v).clone());
    }
    BadValue::of(&Value::Object(obj))
}

fn array(path: &FieldPath, s: &Schema, items: &[Value], errs: &mut Vec<FieldError>) {
    match s.x_list_type.as_deref() {
        Some("set") => {
            for i in non_unique(items.iter().map(|v| Some(gofmt::json(v))).collect()) {
                errs.push(FieldError::duplicate(
                    &path.index(i),
                    BadValue::of(&items[i]),
                ));
            }
        }
        Some("map") => {
            if let Some((i, bad)) = items
                .iter()
                .enumerate()
                .find(|(_, x)| !x.is_null() && !x.is_object())
            {
                errs.push(FieldError::invalid(
                    &path.index(i),
                    BadValue::of(bad),
                    "must be an object for an array of list-type map",
                ));
            } else if items.len() > 1 {
                let keys: Vec<Vec<(&str, &Value)>> = items
                    .iter()
                    .map(|x| {
                        s.x_list_map_keys
                            .iter()
                            .filter_map(|k| x.get(k).map(|v| (k.as_str(), v)))
                            .collect()
                    })
                    .collect();
                let rendered = keys
                    .iter()
                    .map(|fields| {
                        Some(
                            fields
                                .iter()
                                .map(|(k, v)| format!("{k}={}", gofmt::json(v)))
                                .collect::<Vec<_>>()
                                .join(","),
                        )
                    })
                    .collect();
                for i in non_unique(rendered) {
                    errs.push(FieldError::duplicate(&path.index(i), key_value(&keys[i])));
                }
            }
        }
        _ => {}
    }
    if let Some(is) = s.items.as_deref() {
        for (i, item) in items.iter().enumerate() {
            value(&path.index(i), is, item, errs);
        }
    }
}

/// Indices of the second occurrence of each repeated value.
fn non_unique(rendered: Vec<Option<String>>) -> Vec<usize> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, r) in rendered.into_iter().enumerate() {
        let Some(r) = r else { continue };
        let count = seen.entry(r).or_insert(0);
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

/// Used by `impl TypeInfo for Structural`.
pub(crate) struct SchemaTypeInfo<'a>(pub &'a Schema);

impl TypeInfo for SchemaTypeInfo<'_> {
    fn list_type(&self, path: &[&str]) -> ListType {
        list_type(self.0, path)
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        map_is_atomic(self.0, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"], "properties": {
                              "name": {"type": "string"},
                              "hosts": {"type": "array", "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"}}}}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                             "additionalProperties": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}}}}}}),
            &FieldPath::nil(),
        )
    }

    #[test]
    fn list_and_map_types_resolve_by_path() {
        let s = schema();
        assert_eq!(
            list_type(&s, &["spec", "ports"]),
            ListType::Map(vec!["name".into()])
        );
        assert_eq!(list_type(&s, &["spec", "ports", "hosts"]), ListType::Set);
        assert_eq!(list_type(&s, &["spec", "args"]), ListType::Atomic);
        assert_eq!(list_type(&s, &["spec", "missing"]), ListType::Atomic);
        assert_eq!(list_type(&s, &["metadata", "finalizers"]), ListType::Set);
        assert!(map_is_atomic(&s, &["spec", "selector"]));
        assert!(!map_is_atomic(&s, &["spec"]));
    }

    #[test]
    fn duplicates_in_sets_and_map_lists_are_reported() {
        let s = schema();
        let obj = json!({"spec": {"ports": [{"name": "a", "hosts": ["x", "x"]}, {"name": "a"}]}});
        let errs: Vec<String> = validate_lists(&s, &obj)
            .iter()
            .map(FieldError::error_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}",
                "spec.ports[0].hosts[1]: Duplicate value: \"x\"",
            ]
        );
    }
}
