//! The OpenAPI-level checks the CRD validator applies to every schema node
//! (`ValidateCustomResourceDefinitionOpenAPISchema`): supported keywords,
//! `x-kubernetes-*` consistency, list-map keys, rule syntax, and compiling
//! the CEL rules.

use super::cel;
use super::fielderr::{BadValue, FieldError, FieldPath};
use super::node::{AdditionalProperties, Schema};
use crate::gofmt;

const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: [&str; 3] = ["metadata", "kind", "apiVersion"];
const RULE_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

#[derive(Clone, Default)]
struct Ctx {
    forbid_defaults: Option<String>,
    inside_resource_meta: bool,
    /// The first ancestor below which `oldSelf` cannot be correlated.
    uncorrelatable: Option<FieldPath>,
}

impl Ctx {
    fn with_forbidden_defaults(&self, reason: &str) -> Ctx {
        Ctx {
            forbid_defaults: Some(reason.to_string()),
            ..self.clone()
        }
    }

    fn with_uncorrelatable(&self, path: &FieldPath) -> Ctx {
        if self.uncorrelatable.is_some() {
            return self.clone();
        }
        Ctx {
            uncorrelatable: Some(path.clone()),
            ..self.clone()
        }
    }
}

/// Schema errors first, then CEL errors, as the CRD validator orders them.
/// `cel_enabled` is false when the schema is not structural (CEL needs types).
pub(crate) fn check_schema(s: &Schema, path: &FieldPath, cel_enabled: bool) -> Vec<FieldError> {
    let (mut schema_errs, cel_errs) = check(s, path, &Ctx::default(), true, cel_enabled);
    schema_errs.extend(cel_errs);
    schema_errs
}

fn check(
    s: &Schema,
    path: &FieldPath,
    ctx: &Ctx,
    is_root: bool,
    cel_enabled: bool,
) -> (Vec<FieldError>, Vec<FieldError>) {
    let mut errs = Vec::new();
    let mut cel_errs = Vec::new();
    standard(s, path, ctx, &mut errs);

    if s.unique_items {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let mut merge = |(e, c): (Vec<FieldError>, Vec<FieldError>)| {
        errs.extend(e);
        cel_errs.extend(c);
    };
    if let Some(ap) = &s.additional_properties {
        let exclusive = !s.properties.is_empty() && !matches!(ap, AdditionalProperties::Bool(true));
        let mut sub = ctx.clone();
        if ctx.inside_resource_meta {
            sub = sub
                .with_forbidden_defaults("inside additionalProperties applying to object metadata");
        }
        let child = if let AdditionalProperties::Schema(a) = ap {
            Some(check(
                a,
                &path.child("additionalProperties"),
                &sub,
                false,
                cel_enabled,
            ))
        } else {
            None
        };
        if exclusive {
            // Pushed before the recursion's errors, as in Go.
            let (e, c) = child.unwrap_or_default();
            let mut first = vec![FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )];
            first.extend(e);
            merge((first, c));
        } else if let Some(ch) = child {
            merge(ch);
        }
    }
    for (name, p) in &s.properties {
        let mut sub = ctx.clone();
        if !map_is_correlatable(s.x_map_type.as_deref()) {
            sub = sub.with_uncorrelatable(path);
        }
        if (is_root || s.x_embedded_resource) && META_FIELDS.contains(&name.as_str()) {
            sub.inside_resource_meta = true;
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {name}"));
            }
        }
        merge(check(
            p,
            &path.child("properties").key(name),
            &sub,
            false,
            cel_enabled,
        ));
    }
    // Value validations are checked without CEL: rules there are forbidden anyway.
    if let Some(n) = &s.not {
        merge(check(n, &path.child("not"), ctx, false, false));
    }
    for (key, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, c) in list.iter().enumerate() {
            merge(check(c, &path.child(key).index(i), ctx, false, false));
        }
    }
    if s.items.is_some() || s.items_array.is_some() {
        let mut sub = ctx.clone();
        if s.x_list_type.as_deref() != Some("map") {
            sub = sub.with_uncorrelatable(path);
        }
        if let Some(items) = &s.items {
            merge(check(items, &path.child("items"), &sub, false, cel_enabled));
        }
        for (i, it) in s.items_array.iter().flatten().enumerate() {
            merge(check(
                it,
                &path.child("items").index(i),
                &sub,
                false,
                cel_enabled,
            ));
        }
    }

    if s.x_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            BadValue::Raw("false".into()),
            "must be true or undefined",
        ));
    }
    if let Some(mt) = &s.x_map_type {
        if s.type_ != "object" {
            type_must_be(
                &mut errs,
                path,
                &s.type_,
                "must be object if x-kubernetes-map-type is specified",
            );
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-map-type"),
                BadValue::str(mt),
                &["atomic".into(), "granular".into()],
            ));
        }
    }
    if let Some(lt) = &s.x_list_type {
        if s.type_ != "array" {
            type_must_be(
                &mut errs,
                path,
                &s.type_,
                "must be array if x-kubernetes-list-type is specified",
            );
        } else if lt == "set"
            && let Some(is) = &s.items
        {
            match is.type_.as_str() {
                "array" if is.x_list_type.as_deref().is_some_and(|t| t != "atomic") => {
                    errs.push(FieldError::invalid(
                        &path.child("items").child("x-kubernetes-list-type"),
                        BadValue::str(is.x_list_type.as_deref().unwrap_or_default()),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                "object" if is.x_map_type.as_deref() != Some("atomic") => {
                    // Go prints the items' list type here (a nil pointer).
                    errs.push(FieldError::invalid(
                        &path.child("items").child("x-kubernetes-map-type"),
                        match &is.x_list_type {
                            Some(t) => BadValue::str(t),
                            None => BadValue::Str("null".into()),
                        },
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                _ => {}
            }
        }
        if lt != "atomic" && lt != "set" && lt != "map" {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-list-type"),
                BadValue::str(lt),
                &["atomic".into(), "set".into(), "map".into()],
            ));
        }
    }
    if !s.x_list_map_keys.is_empty() {
        match s.x_list_type.as_deref() {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                BadValue::str(other),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if s.x_list_type.as_deref() == Some("map") {
        list_map_checks(s, path, &mut errs);
    }
    map_set_keys(s, path, &mut errs);
    rule_checks(s, path, &mut errs);

    // CEL rules compile only where the schema itself is sound.
    if errs.is_empty() && cel_enabled && !s.x_validations.is_empty() {
        cel_errs.extend(cel::compile_errors(s, path, ctx.uncorrelatable.as_ref()));
    }
    (errs, cel_errs)
}

fn type_must_be(errs: &mut Vec<FieldError>, path: &FieldPath, t: &str, detail: &str) {
    if t.is_empty() {
        errs.push(FieldError::required(&path.child("type"), detail));
    } else {
        errs.push(FieldError::invalid(
            &path.child("type"),
            BadValue::str(t),
            detail,
        ));
    }
}

pub(crate) fn map_is_correlatable(map_type: Option<&str>) -> bool {
    matches!(map_type, None | Some("granular") | Some("atomic"))
}

/// The keyword checks of `specStandardValidatorV3`.
fn standard(s: &Schema, path: &FieldPath, ctx: &Ctx, errs: &mut Vec<FieldError>) {
    if !s.type_.is_empty() && !OPENAPI_TYPES.contains(&s.type_.as_str()) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            BadValue::str(&s.type_),
            &OPENAPI_TYPES.map(String::from),
        ));
    }
    if s.default.is_some()
        && let Some(reason) = &ctx.forbid_defaults
    {
        errs.push(FieldError::forbidden(
            &path.child("default"),
            &format!("must not be set {reason}"),
        ));
    }
    if !s.id.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("id"),
            "id is not supported",
        ));
    }
    if s.additional_items {
        errs.push(FieldError::forbidden(
            &path.child("additionalItems"),
            "additionalItems is not supported",
        ));
    }
    if s.pattern_properties {
        errs.push(FieldError::forbidden(
            &path.child("patternProperties"),
            "patternProperties is not supported",
        ));
    }
    if s.definitions {
        errs.push(FieldError::forbidden(
            &path.child("definitions"),
            "definitions is not supported",
        ));
    }
    if s.dependencies {
        errs.push(FieldError::forbidden(
            &path.child("dependencies"),
            "dependencies is not supported",
        ));
    }
    if s.ref_.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("$ref"),
            "$ref is not supported",
        ));
    }
    if s.type_ == "null" {
        errs.push(FieldError::forbidden(
            &path.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if s.items_array.as_ref().is_some_and(|a| !a.is_empty()) {
        errs.push(FieldError::forbidden(
            &path.child("items"),
            "items must be a schema object and not an array",
        ));
    }
    if ctx.inside_resource_meta && s.x_embedded_resource {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

fn list_map_checks(s: &Schema, path: &FieldPath, errs: &mut Vec<FieldError>) {
    if s.x_list_map_keys.is_empty() {
        errs.push(FieldError::required(
            &path.child("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = &s.items else {
        if s.items_array.is_some() {
            errs.push(FieldError::invalid(
                &path.child("items"),
                BadValue::Raw("<array>".into()),
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
        } else {
            errs.push(FieldError::required(
                &path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            ));
        }
        return;
    };
    if items.type_ != "object" {
        errs.push(FieldError::invalid(
            &path.child("items").child("type"),
            BadValue::str(&items.type_),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let keys_value = BadValue::Raw(format!(
        "[]string{{{}}}",
        s.x_list_map_keys
            .iter()
            .map(|k| gofmt::quote(k))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut seen: Vec<&str> = Vec::new();
    for k in &s.x_list_map_keys {
        match items.properties.get(k) {
            Some(p) if p.type_ == "array" || p.type_ == "object" => {
                errs.push(FieldError::invalid(
                    &path.child("items").child("properties").key(k).child("type"),
                    BadValue::str(&items.type_),
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                ));
            }
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-map-keys"),
                keys_value.clone(),
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&k.as_str()) {
            errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-map-keys"),
                keys_value.clone(),
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

/// Items of set and map lists may not be null; map keys must be required or defaulted.
fn map_set_keys(s: &Schema, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let (Some(items), Some(lt)) = (&s.items, &s.x_list_type) else {
        return;
    };
    if lt != "set" && lt != "map" {
        return;
    }
    if items.nullable {
        errs.push(FieldError::forbidden(
            &path.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        for k in &s.x_list_map_keys {
            let Some(p) = items.properties.get(k) else {
                continue;
            };
            let kp = path.child("items").child("properties").key(k);
            if !items.required.contains(k) && p.default.is_none() {
                errs.push(FieldError::required(
                    &kp.child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if p.nullable {
                errs.push(FieldError::forbidden(
                    &kp.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

fn rule_checks(s: &Schema, path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (i, rule) in s.x_validations.iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let trimmed_rule = rule.rule.trim();
        let trimmed_msg = rule.message.trim();
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                &rp.child("rule"),
                "rule is not specified",
            ));
        } else if !rule.message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                BadValue::str(&rule.message),
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                BadValue::str(&rule.message),
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = &rule.reason
            && !RULE_REASONS.contains(&reason.as_str())
        {
            errs.push(FieldError::not_supported(
                &rp.child("reason"),
                BadValue::str(reason),
                &RULE_REASONS.map(String::from),
            ));
        }
        if !rule.field_path.is_empty() && rule.field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("fieldPath"),
                BadValue::str(&rule.field_path),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(&rule.field_path) {
            errs.push(FieldError::invalid(
                &rp.child("fieldPath"),
                BadValue::str(&rule.field_path),
                "must not contain line breaks",
            ));
        }
        if !rule.field_path.is_empty() && cel::valid_field_path(&rule.field_path, s).is_err() {
            errs.push(FieldError::invalid(
                &rp.child("fieldPath"),
                BadValue::str(&rule.field_path),
                "must be a valid path",
            ));
        }
    }
}
