//! Defaulting (`structuraldefaulting.Default`) and the checks that defaults
//! in a CRD schema are valid and already pruned (`ValidateDefaults`).

use serde_json::Value;

use super::cel;
use super::embedded;
use super::fielderr::{BadValue, FieldError, FieldPath};
use super::node::Schema;
use super::prune;
use super::validate;

fn non_nullable_null(x: &Value, s: Option<&Schema>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// Fills defaults into `x`: missing properties (and non-nullable nulls) get
/// their schema's default; objects that exist are descended into.
pub(crate) fn apply(x: &mut Value, s: &Schema) {
    match x {
        Value::Object(m) => {
            for (k, p) in &s.properties {
                let Some(d) = &p.default else { continue };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => non_nullable_null(v, Some(p)),
                };
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let Some(v) = m.get_mut(&k) else { continue };
                if let Some(p) = s.properties.get(&k) {
                    apply(v, p);
                } else if s.has_additional() {
                    let ap = s.additional_schema();
                    if non_nullable_null(v, ap) {
                        *v = ap.and_then(|a| a.default.clone()).unwrap_or(Value::Null);
                    }
                    if let Some(ap) = ap {
                        apply(v, ap);
                    }
                }
            }
        }
        Value::Array(items) => {
            let Some(is) = s.items.as_deref() else { return };
            for v in items.iter_mut() {
                if non_nullable_null(v, Some(is)) {
                    *v = is.default.clone().unwrap_or(Value::Null);
                }
                apply(v, is);
            }
        }
        _ => {}
    }
}

/// Checks every default of the schema: it must be pruned already, carry
/// valid metadata where it is an embedded resource, validate against its
/// schema, and satisfy the CEL rules there.
pub(crate) fn validate_defaults(path: &FieldPath, root: &Schema) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(path, root, true, false, &mut errs);
    errs
}

fn walk(
    path: &FieldPath,
    s: &Schema,
    is_root: bool,
    inside_meta: bool,
    errs: &mut Vec<FieldError>,
) {
    let embedded_here = is_root || s.x_embedded_resource;
    let inside_meta = if s.x_embedded_resource {
        false
    } else {
        inside_meta
    };
    if let Some(d) = &s.default {
        let dp = path.child("default");
        // Defaults inside TypeMeta/ObjectMeta would need the surrounding
        // object to validate; they are accepted as they are.
        if !inside_meta {
            let mut pruned = d.clone();
            prune::prune_value(&mut pruned, s, s.x_embedded_resource);
            if &pruned != d {
                errs.push(FieldError::invalid(
                    &dp,
                    BadValue::of(d),
                    "must not have unknown fields",
                ));
            }
            let meta_errs = embedded::validate(d, s, &dp, s.x_embedded_resource);
            if !meta_errs.is_empty() {
                errs.extend(meta_errs);
            } else {
                let value_errs = validate::validate_value(s, d, &dp);
                if !value_errs.is_empty() {
                    errs.extend(value_errs);
                } else {
                    errs.extend(cel::validate_default(s, d, &dp, embedded_here));
                }
            }
        }
    }
    if let Some(items) = &s.items {
        walk(&path.child("items"), items, false, inside_meta, errs);
    }
    for (k, p) in &s.properties {
        let sub_meta = inside_meta
            || (embedded_here && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        walk(&path.child("properties").key(k), p, false, sub_meta, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        Schema::parse(&v, &FieldPath::nil())
    }

    #[test]
    fn defaults_fill_existing_objects_items_and_maps() {
        let s = schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 3},
                "opts": {"type": "object", "default": {}, "properties": {
                    "mode": {"type": "string", "default": "fast"}}},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"}}}},
                "limits": {"type": "object", "additionalProperties": {"type": "object",
                    "properties": {"max": {"type": "integer", "default": 10}}}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean", "default": false}}}}}));
        let mut obj = json!({"spec": {"ports": [{"port": 80}, {"protocol": "UDP"}],
                                      "limits": {"cpu": {}}}});
        apply(&mut obj, &s);
        assert_eq!(
            obj,
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"protocol": "UDP"}],
            "limits": {"cpu": {"max": 10}}, "size": 3, "opts": {"mode": "fast"}}})
        );
    }

    #[test]
    fn invalid_and_unpruned_defaults_are_reported() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer", "minimum": 1, "default": 0},
            "opts": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": 1}}}}}}),
        );
        let errs: Vec<String> = validate_defaults(&FieldPath::new("schema"), &s)
            .iter()
            .map(FieldError::error_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "schema.properties[spec].properties[opts].default: Invalid value: map[string]interface {}{\"b\":1}: must not have unknown fields",
                "schema.properties[spec].properties[size].default: Invalid value: 0:  in body should be greater than or equal to 1",
            ]
        );
    }
}
