//! `ValidateObjectMeta` and `ValidateObjectMetaUpdate` of apimachinery.

use serde_json::Value;

use super::go_syntax::{self, invalid_raw, too_long};
use crate::error::{Cause, go_value};
use crate::name_rules::{NameRule, is_qualified_name, is_valid_label_value, name_is_dns_label};

/// Annotations may not exceed 256 KiB in total.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn meta_of(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("metadata").unwrap_or(&EMPTY)
}

fn str_at<'a>(meta: &'a Value, key: &str) -> &'a str {
    meta.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Labels: keys are qualified names, values label values.
pub(crate) fn labels(labels: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(map) = labels.and_then(Value::as_object) else {
        return causes;
    };
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in entries {
        for msg in is_qualified_name(key) {
            causes.push(Cause::invalid(field, &Value::String(key.clone()), &msg));
        }
        let value = value.as_str().unwrap_or("");
        for msg in is_valid_label_value(value) {
            causes.push(Cause::invalid(
                field,
                &Value::String(value.to_string()),
                &msg,
            ));
        }
    }
    causes
}

pub(crate) fn annotations(annotations: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(map) = annotations.and_then(Value::as_object) else {
        return causes;
    };
    let mut total = 0usize;
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in entries {
        for msg in is_qualified_name(&key.to_lowercase()) {
            causes.push(Cause::invalid(field, &Value::String(key.clone()), &msg));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        causes.push(too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    causes
}

/// `schema.ParseGroupVersion` reduced to: does it yield a version?
fn has_version(api_version: &str) -> bool {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] => false,
        [version] => !version.is_empty(),
        [_, version] => !version.is_empty(),
        _ => false,
    }
}

/// One owner reference as Go's `%#v` prints it.
fn owner_ref_go(reference: &Value) -> String {
    let field = |key: &str| format!("{:?}", str_at(reference, key));
    let pointer =
        |key: &str| go_syntax::pointer("bool", reference.get(key).is_none_or(Value::is_null));
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        field("apiVersion"),
        field("kind"),
        field("name"),
        field("uid"),
        pointer("controller"),
        pointer("blockOwnerDeletion")
    )
}

fn owner_references(refs: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(list) = refs.and_then(Value::as_array) else {
        return causes;
    };
    let mut first_controller: Option<String> = None;
    for reference in list {
        let api_version = str_at(reference, "apiVersion");
        let kind = str_at(reference, "kind");
        if !has_version(api_version) {
            causes.push(Cause::invalid(
                format!("{field}.apiVersion"),
                &Value::String(api_version.to_string()),
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            causes.push(Cause::invalid(
                format!("{field}.kind"),
                &Value::String(String::new()),
                "kind must not be empty",
            ));
        }
        let name = str_at(reference, "name");
        if name.is_empty() {
            causes.push(Cause::invalid(
                format!("{field}.name"),
                &Value::String(String::new()),
                "name must not be empty",
            ));
        }
        if str_at(reference, "uid").is_empty() {
            causes.push(Cause::invalid(
                format!("{field}.uid"),
                &Value::String(String::new()),
                "uid must not be empty",
            ));
        }
        if api_version == "v1" && kind == "Event" {
            causes.push(invalid_raw(
                field,
                &owner_ref_go(reference),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => causes.push(invalid_raw(
                    field,
                    &format!(
                        "[]v1.OwnerReference{{{}}}",
                        list.iter().map(owner_ref_go).collect::<Vec<_>>().join(", ")
                    ),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => first_controller = Some(this),
            }
        }
    }
    causes
}

fn finalizers(list: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(items) = go_syntax::strings(list) else {
        return causes;
    };
    for finalizer in &items {
        for msg in is_qualified_name(finalizer) {
            causes.push(Cause::invalid(
                field,
                &Value::String(finalizer.clone()),
                &msg,
            ));
        }
    }
    if items.iter().any(|f| f == "orphan") && items.iter().any(|f| f == "foregroundDeletion") {
        causes.push(invalid_raw(
            field,
            &go_syntax::string_slice(Some(&items)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    causes
}

fn managed_fields(list: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, entry) in list
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let operation = str_at(entry, "operation");
        if !matches!(operation, "Apply" | "Update") {
            causes.push(Cause::invalid(
                format!("{field}[{i}].operation"),
                &Value::String(operation.to_string()),
                "must be `Apply` or `Update`",
            ));
        }
        let fields_type = str_at(entry, "fieldsType");
        if fields_type != "FieldsV1" {
            causes.push(Cause::invalid(
                format!("{field}[{i}].fieldsType"),
                &Value::String(fields_type.to_string()),
                "must be `FieldsV1`",
            ));
        }
    }
    causes
}

/// `ValidateObjectMeta` with a kind's name rule.
pub(crate) fn object_meta(obj: &Value, namespaced: bool, name_rule: NameRule) -> Vec<Cause> {
    let meta = meta_of(obj);
    let mut causes = Vec::new();
    let generate_name = str_at(meta, "generateName");
    if !generate_name.is_empty() {
        for msg in name_rule(generate_name, true) {
            causes.push(Cause::invalid(
                "metadata.generateName",
                &Value::String(generate_name.to_string()),
                &msg,
            ));
        }
    }
    let name = str_at(meta, "name");
    if name.is_empty() {
        causes.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_rule(name, false) {
            causes.push(Cause::invalid(
                "metadata.name",
                &Value::String(name.to_string()),
                &msg,
            ));
        }
    }
    let namespace = str_at(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            causes.push(Cause::required("metadata.namespace", ""));
        } else {
            for msg in name_is_dns_label(namespace, false) {
                causes.push(Cause::invalid(
                    "metadata.namespace",
                    &Value::String(namespace.to_string()),
                    &msg,
                ));
            }
        }
    } else if !namespace.is_empty() {
        causes.push(Cause::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    causes.extend(common(meta));
    causes.extend(finalizers(meta.get("finalizers"), "metadata.finalizers"));
    causes.extend(managed_fields(
        meta.get("managedFields"),
        "metadata.managedFields",
    ));
    causes
}

/// The checks shared by create and update.
fn common(meta: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        causes.push(Cause::invalid(
            "metadata.generation",
            &Value::from(generation),
            "must be greater than or equal to 0",
        ));
    }
    causes.extend(labels(meta.get("labels"), "metadata.labels"));
    causes.extend(annotations(meta.get("annotations"), "metadata.annotations"));
    causes.extend(owner_references(
        meta.get("ownerReferences"),
        "metadata.ownerReferences",
    ));
    causes
}

/// The extra finalizer rule of core kinds: unqualified names must be standard.
pub(crate) fn kube_finalizer_names(obj: &Value) -> Vec<Cause> {
    let meta = meta_of(obj);
    go_syntax::strings(meta.get("finalizers"))
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            !f.contains('/')
                && !matches!(f.as_str(), "kubernetes" | "orphan" | "foregroundDeletion")
        })
        .map(|(i, f)| {
            Cause::invalid(
                format!("metadata.finalizers[{i}]"),
                &Value::String(f.clone()),
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// `ValidateObjectMetaUpdate`: immutable identity fields, no new finalizers
/// while deleting, generation never decremented, plus the common rules.
pub(crate) fn object_meta_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let meta = meta_of(obj);
    let old_meta = meta_of(old);
    let mut causes = Vec::new();
    if old_meta
        .get("deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        let old_list = go_syntax::strings(old_meta.get("finalizers")).unwrap_or_default();
        let mut extra: Vec<String> = go_syntax::strings(meta.get("finalizers"))
            .unwrap_or_default()
            .into_iter()
            .filter(|f| !old_list.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            causes.push(Cause::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_syntax::string_slice(Some(&extra))
                ),
            ));
        }
    }
    let new_generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
    let old_generation = old_meta
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if new_generation < old_generation {
        causes.push(Cause::invalid(
            "metadata.generation",
            &Value::from(new_generation),
            "must not be decremented",
        ));
    }
    for key in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let new_value = meta.get(key).filter(|v| !v.is_null());
        let old_value = old_meta.get(key).filter(|v| !v.is_null());
        if new_value != old_value {
            let rendered = new_value.map_or_else(|| "\"\"".to_string(), go_value);
            causes.push(go_syntax::immutable(format!("metadata.{key}"), &rendered));
        }
    }
    causes.extend(common(meta));
    causes.extend(finalizers(meta.get("finalizers"), "metadata.finalizers"));
    causes.extend(managed_fields(
        meta.get("managedFields"),
        "metadata.managedFields",
    ));
    causes
}
