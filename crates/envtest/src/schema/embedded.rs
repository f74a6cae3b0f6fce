//! `x-kubernetes-embedded-resource`: embedded objects must carry a valid
//! `apiVersion` and `kind`, and their `metadata` must be valid ObjectMeta
//! (`schemaobjectmeta.Validate`).

use serde_json::{Map, Value};

use super::fielderr::{BadValue, FieldError, FieldPath};
use super::names;
use super::node::Schema;

/// Validates embedded resources in `x` (and `x` itself when `is_resource_root`).
pub(crate) fn validate(
    x: &Value,
    s: &Schema,
    path: &FieldPath,
    is_resource_root: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(x, Some(s), path, is_resource_root, &mut errs);
    errs
}

fn walk(
    x: &Value,
    s: Option<&Schema>,
    path: &FieldPath,
    force_embedded: bool,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => {
            if s.x_embedded_resource || force_embedded {
                embedded_resource(m, path, errs);
            }
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                let v = &m[k.as_str()];
                if let Some(p) = s.properties.get(k.as_str()) {
                    walk(v, Some(p), &path.child(k), false, errs);
                } else if s.has_additional() {
                    walk(v, s.additional_schema(), &path.key(k), false, errs);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, s.items.as_deref(), &path.index(i), false, errs);
            }
        }
        _ => {}
    }
}

fn embedded_resource(m: &Map<String, Value>, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if !m.contains_key("apiVersion") {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        errs.push(FieldError::required(&path.child("kind"), ""));
    }
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for k in keys {
        let v = &m[k.as_str()];
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    &path.child("apiVersion"),
                    BadValue::of(v),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(
                    &path.child("apiVersion"),
                    BadValue::str(""),
                    "must not be empty",
                )),
                Some(av) if av.matches('/').count() > 1 => errs.push(FieldError::invalid(
                    &path.child("apiVersion"),
                    BadValue::str(av),
                    &format!("unexpected GroupVersion string: {av}"),
                )),
                Some(_) => {}
            },
            "kind" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    &path.child("kind"),
                    BadValue::of(v),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(
                    &path.child("kind"),
                    BadValue::str(""),
                    "must not be empty",
                )),
                Some(kind) => {
                    let e = names::dns1035_label(&kind.to_lowercase());
                    if !e.is_empty() {
                        errs.push(FieldError::invalid(
                            &path.child("kind"),
                            BadValue::str(kind),
                            &format!(
                                "may have mixed case, but should otherwise match: {}",
                                e.join(",")
                            ),
                        ));
                    }
                }
            },
            "metadata" => metadata(v, &path.child("metadata"), errs),
            _ => {}
        }
    }
}

fn metadata(v: &Value, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let Some(meta) = v.as_object() else {
        errs.push(FieldError::invalid(
            path,
            BadValue::of(v),
            "expected map[string]interface{}",
        ));
        return;
    };
    let string_field = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let name = string_field("name");
    let generate_name = string_field("generateName");
    if !generate_name.is_empty() {
        for m in names::path_segment(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                BadValue::str(generate_name),
                &m,
            ));
        }
    }
    if !name.is_empty() {
        for m in names::path_segment(name, false) {
            errs.push(FieldError::invalid(
                &path.child("name"),
                BadValue::str(name),
                &m,
            ));
        }
    }
    let namespace = string_field("namespace");
    if !namespace.is_empty() {
        for m in names::dns1123_label(namespace) {
            errs.push(FieldError::invalid(
                &path.child("namespace"),
                BadValue::str(namespace),
                &m,
            ));
        }
    }
    if let Some(Value::Object(labels)) = meta.get("labels") {
        let lp = path.child("labels");
        for (k, val) in labels {
            for m in names::qualified_name(k) {
                errs.push(FieldError::invalid(&lp, BadValue::str(k), &m));
            }
            let val = val.as_str().unwrap_or("");
            for m in names::label_value(val) {
                errs.push(FieldError::invalid(&lp.key(k), BadValue::str(val), &m));
            }
        }
    }
    if let Some(Value::Object(annotations)) = meta.get("annotations") {
        let ap = path.child("annotations");
        for k in annotations.keys() {
            for m in names::qualified_name(&k.to_lowercase()) {
                errs.push(FieldError::invalid(&ap, BadValue::str(k), &m));
            }
        }
    }
}
