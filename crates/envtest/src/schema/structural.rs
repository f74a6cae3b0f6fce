//! The structural-schema rules (`ValidateStructural` of apiextensions):
//! every field has a type (except under int-or-string or
//! preserve-unknown-fields), value validations (`allOf`, `anyOf`, `oneOf`,
//! `not`) only restrict what the structural part already specifies, and root
//! `metadata` may only restrict `name` and `generateName`.

use super::fielderr::{BadValue, FieldError, FieldPath};
use super::node::{AdditionalProperties, Schema};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Checks that `s` is structural. Errors are sorted by their text, as Go sorts them.
pub(crate) fn validate_structural(path: &FieldPath, s: &Schema) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs);
    completeness(s, path, &mut errs);
    errs.sort_by_key(FieldError::error_string);
    errs
}

fn invariants(s: &Schema, lvl: Level, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.type_ == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            &path.child("items"),
            "must be specified",
        ));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &path.child("items"), errs);
    }
    for (k, p) in &s.properties {
        invariants(p, Level::Field, &path.child("properties").key(k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let AdditionalProperties::Schema(a) = ap {
            invariants(a, Level::Field, &path.child("additionalProperties"), errs);
        }
    }

    // Extensions.
    if s.x_int_or_string && s.preserve_unknown() {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            BadValue::Raw("true".into()),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            BadValue::Raw("true".into()),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|first| is_int_or_string_any_of(&first.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errs);

    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    if s.x_embedded_resource && s.type_ != "object" {
        if s.type_.is_empty() {
            errs.push(FieldError::required(
                &path.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(FieldError::invalid(
                &path.child("type"),
                BadValue::str(&s.type_),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if s.type_.is_empty() && !s.x_int_or_string && !s.preserve_unknown() {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&path.child("type"), detail));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            BadValue::str(&s.type_),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(name)
                && p.type_ != "string"
            {
                errs.push(FieldError::invalid(
                    &path.child("properties").key(name).child("type"),
                    BadValue::str(&p.type_),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = s.properties.get("metadata") {
        let mp = path.child("properties").key("metadata");
        if check_metadata && meta.type_ != "object" {
            errs.push(FieldError::invalid(
                &mp.child("type"),
                BadValue::str(&meta.type_),
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_is_plain(meta) {
            errs.push(FieldError::forbidden(
                &mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.x_embedded_resource && !s.preserve_unknown() && s.properties.is_empty() {
        errs.push(FieldError::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root `metadata` may set `type`, `default` and properties `name` and/or
/// `generateName` only.
fn root_metadata_is_plain(m: &Schema) -> bool {
    let keys: Vec<&str> = m.properties.keys().map(String::as_str).collect();
    let props_ok = matches!(
        keys.as_slice(),
        [] | ["name"] | ["generateName"] | ["generateName", "name"]
    );
    props_ok
        && m.format.is_empty()
        && m.title.is_empty()
        && m.description.is_empty()
        && m.example.is_none()
        && !m.external_docs
        && !m.nullable
        && !has_value_validation(m)
        && !has_extensions(m)
        && m.x_validations.is_empty()
        && m.items.is_none()
        && m.additional_properties.is_none()
}

fn has_value_validation(s: &Schema) -> bool {
    s.maximum.is_some()
        || s.exclusive_maximum
        || s.minimum.is_some()
        || s.exclusive_minimum
        || s.max_length.is_some()
        || s.min_length.is_some()
        || !s.pattern.is_empty()
        || s.max_items.is_some()
        || s.min_items.is_some()
        || s.unique_items
        || s.multiple_of.is_some()
        || s.max_properties.is_some()
        || s.min_properties.is_some()
        || !s.required.is_empty()
        || !s.enum_.is_empty()
        || !s.all_of.is_empty()
        || !s.any_of.is_empty()
        || !s.one_of.is_empty()
        || s.not.is_some()
}

fn has_extensions(s: &Schema) -> bool {
    s.x_embedded_resource
        || s.x_int_or_string
        || s.preserve_unknown()
        || !s.x_list_map_keys.is_empty()
        || s.x_list_type.is_some()
        || s.x_map_type.is_some()
}

/// `anyOf: [{type: integer}, {type: string}]` and nothing else in either clause.
fn is_int_or_string_any_of(any_of: &[Schema]) -> bool {
    fn only_type(s: &Schema, t: &str) -> bool {
        s.type_ == t
            && s.format.is_empty()
            && s.title.is_empty()
            && s.description.is_empty()
            && s.default.is_none()
            && !s.nullable
            && !has_value_validation(s)
            && !has_extensions(s)
            && s.x_validations.is_empty()
            && s.items.is_none()
            && s.properties.is_empty()
            && s.additional_properties.is_none()
    }
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

fn value_validation(
    s: &Schema,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, c) in s.any_of.iter().enumerate() {
            nested(c, false, &path.child("anyOf").index(i), errs);
        }
    }
    for (i, c) in s.all_of.iter().enumerate() {
        nested(
            c,
            skip_first_all_of_any_of && i == 0,
            &path.child("allOf").index(i),
            errs,
        );
    }
    for (i, c) in s.one_of.iter().enumerate() {
        nested(c, false, &path.child("oneOf").index(i), errs);
    }
    if let Some(n) = &s.not {
        nested(n, false, &path.child("not"), errs);
    }
    if let Some(Err(e)) = &s.pattern_re {
        errs.push(FieldError::invalid(
            &path.child("pattern"),
            BadValue::str(&s.pattern),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// A schema under `allOf`/`anyOf`/`oneOf`/`not`: only value validations allowed.
fn nested(v: &Schema, skip_any_of: bool, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let skip_all_of_any_of = false;
    value_validation(v, skip_any_of, skip_all_of_any_of, path, errs);
    if let Some(items) = &v.items {
        nested(items, false, &path.child("items"), errs);
    }
    for (k, p) in &v.properties {
        nested(p, false, &path.child("properties").key(k), errs);
    }
    if !v.type_.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("type"),
            "must be empty to be structural",
        ));
    }
    // `additionalProperties: false` is no nested additionalProperties at all.
    if matches!(
        v.additional_properties,
        Some(AdditionalProperties::Schema(_)) | Some(AdditionalProperties::Bool(true))
    ) {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if v.default.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("default"),
            "must be undefined to be structural",
        ));
    }
    if !v.title.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("title"),
            "must be empty to be structural",
        ));
    }
    if !v.description.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("description"),
            "must be empty to be structural",
        ));
    }
    if v.nullable {
        errs.push(FieldError::forbidden(
            &path.child("nullable"),
            "must be false to be structural",
        ));
    }
    if v.preserve_unknown() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if v.x_embedded_resource {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if v.x_int_or_string {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if !v.x_list_map_keys.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if v.x_list_type.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if v.x_map_type.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !v.x_validations.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Every property or items schema a value validation of the root mentions
/// must also be specified structurally.
fn completeness(s: &Schema, path: &FieldPath, errs: &mut Vec<FieldError>) {
    completeness_of(s, s, path, path, errs);
}

fn completeness_of(
    v: &Schema,
    s: &Schema,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if let Some(n) = &v.not {
        nested_completeness(n, Some(s), s_path, &v_path.child("not"), errs);
    }
    for (i, c) in v.all_of.iter().enumerate() {
        nested_completeness(c, Some(s), s_path, &v_path.child("allOf").index(i), errs);
    }
    for (i, c) in v.any_of.iter().enumerate() {
        nested_completeness(c, Some(s), s_path, &v_path.child("anyOf").index(i), errs);
    }
    for (i, c) in v.one_of.iter().enumerate() {
        nested_completeness(c, Some(s), s_path, &v_path.child("oneOf").index(i), errs);
    }
}

fn nested_completeness(
    v: &Schema,
    s: Option<&Schema>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    completeness_of(v, s, s_path, v_path, errs);
    if let Some(items) = &v.items {
        nested_completeness(
            items,
            s.items.as_deref(),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, vp) in &v.properties {
        let sp = s_path.child("properties").key(k);
        let vpp = v_path.child("properties").key(k);
        match s.properties.get(k) {
            Some(sf) => nested_completeness(vp, Some(sf), &sp, &vpp, errs),
            None => errs.push(FieldError::required(
                &sp,
                &format!("because it is defined in {vpp}"),
            )),
        }
    }
}
