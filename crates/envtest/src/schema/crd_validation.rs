//! Validation of CustomResourceDefinition objects
//! (`ValidateCustomResourceDefinition` / `...Update` of apiextensions).
//!
//! kube-apiserver validates the internal form of the CRD, in which schemas,
//! subresources and printer columns that are identical in every version are
//! moved to `spec.validation`, `spec.subresources` and
//! `spec.additionalPrinterColumns`; field paths follow that form.

use serde_json::{Map, Value};

use super::crdparts::{
    api_approval, b, column, conversion, immutable_fields, s, stored_versions, subresources,
};
use super::fielderr::{BadValue, FieldError, FieldPath, into_causes};
use super::names;
use super::schema_errors;
use crate::error::Cause;
use crate::gofmt;

/// The JSON names of the internal `apiextensions.JSONSchemaProps` fields, in
/// their declaration order (the order validation walks them by reflection).
const SCHEMA_FIELD_ORDER: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "nullable",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

const ROOT_FIELDS_WITH_STATUS: &[(&str, &str)] = &[
    ("description", "Description"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("required", "Required"),
    ("items", "Items"),
    ("properties", "Properties"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-validations", "XValidations"),
];

/// A field of a version that is hoisted when equal in every version.
fn hoisted<'a>(versions: &'a [Value], key: &str) -> (bool, Option<&'a Value>) {
    let first = versions
        .first()
        .and_then(|v| v.get(key))
        .filter(|x| !x.is_null());
    let identical = !versions.is_empty()
        && versions
            .iter()
            .all(|v| v.get(key).filter(|x| !x.is_null()) == first);
    (identical, if identical { first } else { None })
}

/// The version list printed with `%#v`, as v1.32 does in version errors:
/// the internal versions, whose fields equal in every version were moved to
/// the spec (so they print as nil).
fn go_versions(versions: &[Value]) -> String {
    let (schema_hoisted, _) = hoisted(versions, "schema");
    let (sub_hoisted, _) = hoisted(versions, "subresources");
    let (cols_hoisted, _) = hoisted(versions, "additionalPrinterColumns");
    let (fields_hoisted, _) = hoisted(versions, "selectableFields");
    let mut ptr = 0xc000100000u64;
    let mut next_ptr = || {
        ptr += 0x100;
        format!("0x{ptr:x}")
    };
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            let warning = match v.get("deprecationWarning").and_then(Value::as_str) {
                Some(_) => format!("(*string)({})", next_ptr()),
                None => "(*string)(nil)".to_string(),
            };
            let schema = if !schema_hoisted && v.get("schema").is_some_and(|x| !x.is_null()) {
                format!("(*apiextensions.CustomResourceValidation)({})", next_ptr())
            } else {
                "(*apiextensions.CustomResourceValidation)(nil)".to_string()
            };
            let sub = if !sub_hoisted && v.get("subresources").is_some_and(|x| !x.is_null()) {
                format!("(*apiextensions.CustomResourceSubresources)({})", next_ptr())
            } else {
                "(*apiextensions.CustomResourceSubresources)(nil)".to_string()
            };
            let cols = match v.get("additionalPrinterColumns").and_then(Value::as_array) {
                Some(cols) if !cols_hoisted => format!(
                    "[]apiextensions.CustomResourceColumnDefinition{{{}}}",
                    cols.iter()
                        .map(|c| format!(
                            "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
                            gofmt::quote(s(c, "name")),
                            gofmt::quote(s(c, "type")),
                            gofmt::quote(s(c, "format")),
                            gofmt::quote(s(c, "description")),
                            c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                            gofmt::quote(s(c, "jsonPath")),
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => "[]apiextensions.CustomResourceColumnDefinition(nil)".to_string(),
            };
            let fields = match v.get("selectableFields").and_then(Value::as_array) {
                Some(fields) if !fields_hoisted => format!(
                    "[]apiextensions.SelectableField{{{}}}",
                    fields
                        .iter()
                        .map(|f| format!(
                            "apiextensions.SelectableField{{JSONPath:{}}}",
                            gofmt::quote(s(f, "jsonPath"))
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => "[]apiextensions.SelectableField(nil)".to_string(),
            };
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{warning}, Schema:{schema}, Subresources:{sub}, AdditionalPrinterColumns:{cols}, SelectableFields:{fields}}}",
                gofmt::quote(s(v, "name")),
                b(v, "served"),
                b(v, "storage"),
                b(v, "deprecated"),
            )
        })
        .collect();
    format!(
        "[]apiextensions.CustomResourceDefinitionVersion{{{}}}",
        items.join(", ")
    )
}

/// Validates a CustomResourceDefinition object (`apiextensions.k8s.io/v1`) as
/// kube-apiserver does on create and update: names, scope, versions (exactly one
/// storage version), schemas structural, subresources, printer columns.
/// Returns the causes of a 422 (empty when valid).
pub(crate) fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    into_causes(crd_errors(crd, old))
}

fn crd_errors(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Value::Object(Map::new());
    let spec = crd.get("spec").filter(|v| v.is_object()).unwrap_or(&empty);
    let names_v = spec
        .get("names")
        .filter(|v| v.is_object())
        .unwrap_or(&empty);
    let group = s(spec, "group");
    let plural = s(names_v, "plural");
    let kind = s(names_v, "kind");
    // Defaults kube-apiserver applies before validating.
    let singular = match s(names_v, "singular") {
        "" => kind.to_lowercase(),
        x => x.to_string(),
    };
    let list_kind = match (s(names_v, "listKind"), kind) {
        ("", "") => String::new(),
        ("", k) => format!("{k}List"),
        (x, _) => x.to_string(),
    };
    let versions: Vec<Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    // metadata.name
    if old.is_none() {
        let meta = crd.get("metadata").unwrap_or(&empty);
        let name = s(meta, "name");
        let generate_name = s(meta, "generateName");
        let np = FieldPath::new("metadata").child("name");
        if name.is_empty() && generate_name.is_empty() {
            errs.push(FieldError::required(
                &np,
                "name or generateName is required",
            ));
        }
        let check = |n: &str, prefixed: bool, errs: &mut Vec<FieldError>, field: &FieldPath| {
            let mut msgs =
                names::dns1123_subdomain(if prefixed { n.trim_end_matches('-') } else { n });
            if prefixed && n.trim_end_matches('-').is_empty() {
                msgs.clear();
            }
            if n != format!("{plural}.{group}") {
                msgs.push("must be spec.names.plural+\".\"+spec.group".to_string());
            }
            for m in msgs {
                errs.push(FieldError::invalid(field, BadValue::str(n), &m));
            }
        };
        if !generate_name.is_empty() {
            check(
                generate_name,
                true,
                &mut errs,
                &FieldPath::new("metadata").child("generateName"),
            );
        }
        if !name.is_empty() {
            check(name, false, &mut errs, &np);
        }
    }

    let sp = FieldPath::new("spec");
    // group
    let gp = sp.child("group");
    if group.is_empty() {
        errs.push(FieldError::required(&gp, ""));
    } else {
        let e = names::dns1123_subdomain(group);
        if !e.is_empty() {
            errs.push(FieldError::invalid(&gp, BadValue::str(group), &e.join(",")));
        } else if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                &gp,
                BadValue::str(group),
                "should be a domain with at least one dot",
            ));
        }
    }
    // scope
    let scope = s(spec, "scope");
    if scope.is_empty() {
        errs.push(FieldError::required(&sp.child("scope"), ""));
    } else if scope != "Cluster" && scope != "Namespaced" {
        errs.push(FieldError::not_supported(
            &sp.child("scope"),
            BadValue::str(scope),
            &["Cluster".into(), "Namespaced".into()],
        ));
    }

    let (schema_hoisted, top_schema) = hoisted(&versions, "schema");
    let (sub_hoisted, top_sub) = hoisted(&versions, "subresources");
    let (cols_hoisted, top_cols) = hoisted(&versions, "additionalPrinterColumns");
    let validation = top_schema
        .and_then(|v| v.get("openAPIV3Schema"))
        .filter(|v| !v.is_null());

    if validation.is_none() {
        // Every version needs a schema, unless the stored CRD already had a
        // version without one: then only served versions of a pruning CRD.
        let require_schemas = old.is_none_or(|o| {
            let old_versions = o.pointer("/spec/versions").and_then(Value::as_array);
            old_versions.into_iter().flatten().all(has_schema)
        });
        for (i, v) in versions.iter().enumerate() {
            let path = sp
                .child("versions")
                .index(i)
                .child("schema")
                .child("openAPIV3Schema");
            if has_schema(v) {
                continue;
            }
            if require_schemas {
                errs.push(FieldError::required(&path, "schemas are required"));
            } else if !b(spec, "preserveUnknownFields") && b(v, "served") {
                errs.push(FieldError::required(
                    &path,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if b(spec, "preserveUnknownFields") && has_defaults(&versions) {
        errs.push(FieldError::invalid(
            &sp.child("preserveUnknownFields"),
            BadValue::Raw("true".into()),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage_count = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let vp = sp.child("versions").index(i);
        let name = s(v, "name");
        if b(v, "storage") {
            storage_count += 1;
        }
        if seen.contains(&name) {
            unique = false;
        }
        seen.push(name);
        let e = names::dns1035_label(name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &vp.child("name"),
                BadValue::str(name),
                &e.join(","),
            ));
        }
        // deprecationWarning
        if let Some(w) = v.get("deprecationWarning").and_then(Value::as_str) {
            let wp = vp.child("deprecationWarning");
            let bad = BadValue::str(w);
            if !b(v, "deprecated") {
                errs.push(FieldError::invalid(
                    &wp,
                    bad.clone(),
                    "can only be set for deprecated versions",
                ));
            }
            if w.len() > 256 {
                errs.push(FieldError::invalid(
                    &wp,
                    bad.clone(),
                    "must be <= 256 characters long",
                ));
            }
            if w.is_empty() {
                errs.push(FieldError::invalid(
                    &wp,
                    bad.clone(),
                    "must not be an empty string",
                ));
            }
            if let Some((idx, _)) = w.char_indices().find(|(_, c)| c.is_control()) {
                errs.push(FieldError::invalid(
                    &wp,
                    bad,
                    &format!("must only contain printable UTF-8 characters; non-printable character found at index {idx}"),
                ));
            }
        }
        let status_enabled = if sub_hoisted {
            top_sub.is_some_and(|x| x.get("status").is_some_and(|st| !st.is_null()))
        } else {
            v.get("subresources")
                .is_some_and(|x| x.get("status").is_some_and(|st| !st.is_null()))
        };
        if !schema_hoisted
            && let Some(schema) = v
                .get("schema")
                .and_then(|x| x.get("openAPIV3Schema"))
                .filter(|x| !x.is_null())
        {
            errs.extend(schema_checks(schema, &vp.child("schema"), status_enabled));
        }
        if !sub_hoisted && let Some(sub) = v.get("subresources") {
            errs.extend(subresources(sub, &vp.child("subresources")));
        }
        if !cols_hoisted
            && let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array)
        {
            for (j, c) in cols.iter().enumerate() {
                errs.extend(column(c, &vp.child("additionalPrinterColumns").index(j)));
            }
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            &sp.child("versions"),
            BadValue::Raw(go_versions(&versions)),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(FieldError::invalid(
            &sp.child("versions"),
            BadValue::Raw(go_versions(&versions)),
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(first) = versions.first() {
        let name = s(first, "name");
        let e = names::dns1035_label(name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &sp.child("version"),
                BadValue::str(name),
                &e.join(","),
            ));
        }
    }

    let np = sp.child("names");
    if plural.is_empty() {
        errs.push(FieldError::required(&np.child("plural"), ""));
    }
    if singular.is_empty() {
        errs.push(FieldError::required(&np.child("singular"), ""));
    }
    if kind.is_empty() {
        errs.push(FieldError::required(&np.child("kind"), ""));
    }
    if list_kind.is_empty() {
        errs.push(FieldError::required(&np.child("listKind"), ""));
    }
    errs.extend(crd_names(plural, &singular, kind, &list_kind, names_v, &np));

    if let Some(schema) = validation {
        let status_enabled = top_sub
            .is_some_and(|x| x.get("status").is_some_and(|st| !st.is_null()))
            || versions.iter().any(|v| {
                v.get("subresources")
                    .is_some_and(|x| x.get("status").is_some_and(|st| !st.is_null()))
            });
        errs.extend(schema_checks(
            schema,
            &sp.child("validation"),
            status_enabled,
        ));
    }
    if let Some(sub) = top_sub {
        errs.extend(subresources(sub, &sp.child("subresources")));
    }
    if let Some(cols) = top_cols.and_then(Value::as_array) {
        for (j, c) in cols.iter().enumerate() {
            errs.extend(column(c, &sp.child("additionalPrinterColumns").index(j)));
        }
    }
    errs.extend(conversion(spec, &sp));

    // status
    if let Some(accepted) = crd
        .get("status")
        .and_then(|st| st.get("acceptedNames"))
        .filter(|v| v.is_object())
    {
        errs.extend(crd_names(
            s(accepted, "plural"),
            s(accepted, "singular"),
            s(accepted, "kind"),
            s(accepted, "listKind"),
            accepted,
            &FieldPath::new("status").child("acceptedNames"),
        ));
    }
    errs.extend(stored_versions(crd, old, &versions));
    errs.extend(api_approval(crd, group, old));
    if b(spec, "preserveUnknownFields")
        && !old.is_some_and(|o| o.get("spec").is_some_and(|x| b(x, "preserveUnknownFields")))
    {
        errs.push(FieldError::invalid(
            &sp.child("preserveUnknownFields"),
            BadValue::Raw("true".into()),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }

    if let Some(old) = old {
        errs.extend(immutable_fields(spec, old));
    }
    errs
}

/// Whether a version carries its own `schema.openAPIV3Schema`.
fn has_schema(version: &Value) -> bool {
    version
        .get("schema")
        .and_then(|x| x.get("openAPIV3Schema"))
        .is_some_and(|s| !s.is_null())
}

fn has_defaults(versions: &[Value]) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Object(m) => {
                m.get("default").is_some_and(|d| !d.is_null()) || m.values().any(walk)
            }
            Value::Array(a) => a.iter().any(walk),
            _ => false,
        }
    }
    versions.iter().any(|v| v.get("schema").is_some_and(walk))
}

fn crd_names(
    plural: &str,
    singular: &str,
    kind: &str,
    list_kind: &str,
    names_v: &Value,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let label = |v: &str, field: &str, errs: &mut Vec<FieldError>| {
        let e = names::dns1035_label(v);
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                BadValue::str(v),
                &e.join(","),
            ));
        }
    };
    label(plural, "plural", &mut errs);
    label(singular, "singular", &mut errs);
    for (v, field) in [(kind, "kind"), (list_kind, "listKind")] {
        let e = names::dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(field),
                BadValue::str(v),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    for (i, sn) in names_v
        .get("shortNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let sn = sn.as_str().unwrap_or("");
        let e = names::dns1035_label(sn);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("shortNames").index(i),
                BadValue::str(sn),
                &e.join(","),
            ));
        }
    }
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            BadValue::str(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in names_v
        .get("categories")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let c = c.as_str().unwrap_or("");
        let e = names::dns1035_label(c);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("categories").index(i),
                BadValue::str(c),
                &e.join(","),
            ));
        }
    }
    errs
}

/// `validateCustomResourceDefinitionValidation` for one schema.
fn schema_checks(schema: &Value, path: &FieldPath, status_enabled: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let sp = path.child("openAPIV3Schema");
    if status_enabled && let Some(m) = schema.as_object() {
        // Go walks the struct's fields in declaration order and stops at
        // the first one not allowed.
        let fields = SCHEMA_FIELD_ORDER
            .iter()
            .filter_map(|key| m.get_key_value(*key));
        for (key, v) in fields {
            if is_zero(v) {
                continue;
            }
            if key == "type" {
                if v.as_str() != Some("object") {
                    errs.push(FieldError::invalid(
                            &path.child("openAPIV3Schema.type"),
                            BadValue::of(v),
                            "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                        ));
                    break;
                }
                continue;
            }
            if !ROOT_FIELDS_WITH_STATUS.iter().any(|(k, _)| k == key) {
                let allowed = ROOT_FIELDS_WITH_STATUS
                    .iter()
                    .map(|(_, go)| *go)
                    .collect::<Vec<_>>()
                    .join(" ");
                errs.push(FieldError::invalid(
                        &sp,
                        BadValue::of(schema),
                        &format!("only [{allowed}] fields are allowed at the root of the schema if the status subresource is enabled"),
                    ));
                break;
            }
        }
    }
    if schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(
            &path.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let (_, schema_errs) = schema_errors(schema, &sp);
    errs.extend(schema_errs);
    errs
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}
