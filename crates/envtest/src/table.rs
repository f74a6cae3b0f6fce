//! `meta.k8s.io` Tables (what `kubectl get` asks for) and
//! PartialObjectMetadata views of objects.

use serde_json::{Value, json};

use crate::duration::age;
use crate::error::{ApiError, ApiResult};
use crate::jsonpath::JsonPath;
use crate::registry::{PrinterColumn, Resource, Source};
use crate::request::negotiate::Shape;

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// What each row's `object` holds (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub(crate) fn parse(v: Option<&str>) -> IncludeObject {
        match v {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// PartialObjectMetadata of `obj` in `meta.k8s.io/<version>`.
pub(crate) fn partial_metadata(obj: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

fn column(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

fn custom_cell(col: &PrinterColumn, obj: &Value, now: jiff::Timestamp) -> Value {
    let Ok(path) = JsonPath::compile(&col.json_path) else {
        return Value::Null;
    };
    let Some(value) = path.find(obj).into_iter().next() else {
        return Value::Null;
    };
    match col.type_.as_str() {
        "string" => match value {
            Value::String(s) => Value::String(s.clone()),
            other => Value::String(other.to_string()),
        },
        "integer" => value
            .as_i64()
            .or_else(|| value.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        "number" => value.as_f64().map_or(Value::Null, Value::from),
        "boolean" => value.as_bool().map_or(Value::Null, Value::Bool),
        "date" => value
            .as_str()
            .map_or(Value::Null, |s| Value::String(age(Some(s), now))),
        _ => value.clone(),
    }
}

/// Column definitions and row cells for `objects` of `res`.
pub(crate) fn columns_and_cells(
    res: &Resource,
    objects: &[std::sync::Arc<Value>],
    now: jiff::Timestamp,
) -> (Vec<Value>, Vec<Vec<Value>>) {
    let name_col = column("Name", "string", "name", NAME_DESCRIPTION, 0);
    match &res.source {
        Source::Custom(custom) => {
            let cols = custom
                .version(&res.version)
                .map(|v| v.columns.clone())
                .unwrap_or_default();
            let mut defs = vec![name_col];
            defs.extend(cols.iter().map(|c| {
                let description = if c.description.is_empty() {
                    format!(
                        "Custom resource definition column (in JSONPath format): {}",
                        c.json_path
                    )
                } else {
                    c.description.clone()
                };
                column(&c.name, &c.type_, &c.format, &description, c.priority)
            }));
            let rows = objects
                .iter()
                .map(|o| {
                    let mut cells = vec![json!(crate::meta::name(o))];
                    cells.extend(cols.iter().map(|c| custom_cell(c, o, now)));
                    cells
                })
                .collect();
            (defs, rows)
        }
        Source::Builtin(kind) => {
            if let Some(t) = crate::builtin::table(kind, objects.iter().map(|o| &**o), now) {
                return t;
            }
            let defs = vec![name_col, column("Age", "string", "", AGE_DESCRIPTION, 0)];
            let rows = objects
                .iter()
                .map(|o| {
                    let created = crate::meta::metadata(o)
                        .and_then(|m| m.get("creationTimestamp"))
                        .and_then(Value::as_str);
                    vec![json!(crate::meta::name(o)), json!(age(created, now))]
                })
                .collect();
            (defs, rows)
        }
    }
}

/// A Table of `objects`. `list_meta` is the list's metadata (or `{resourceVersion}` for one object).
pub(crate) fn table(
    res: &Resource,
    objects: &[std::sync::Arc<Value>],
    list_meta: Value,
    version: &str,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let TableParts {
        mut head,
        objects,
        cells,
    } = table_parts(res, objects, list_meta, version, with_columns);
    let rows: Vec<Value> = objects
        .iter()
        .zip(cells)
        .map(|(o, cells)| {
            let mut row = json!({"cells": cells});
            if let Some(object) = row_object(o, include, version) {
                row["object"] = object.into_owned();
            }
            row
        })
        .collect();
    head["rows"] = Value::Array(rows);
    head
}

/// A Table taken apart, so that its rows can be written one by one: the
/// document with no rows yet (`rows` is its last key), the objects in
/// printing order and each one's cells.
pub(crate) struct TableParts {
    pub head: Value,
    pub objects: Vec<std::sync::Arc<Value>>,
    pub cells: Vec<Vec<Value>>,
}

/// The parts of the Table [`table`] makes.
pub(crate) fn table_parts(
    res: &Resource,
    objects: &[std::sync::Arc<Value>],
    list_meta: Value,
    version: &str,
    with_columns: bool,
) -> TableParts {
    let now = jiff::Timestamp::now();
    let mut objects = objects.to_vec();
    crate::builtin::sort_for_printing(&res.group, &res.plural, &mut objects);
    let (defs, cells) = columns_and_cells(res, &objects, now);
    let head = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta,
        "columnDefinitions": if with_columns { Value::Array(defs) } else { json!([]) },
        "rows": [],
    });
    TableParts {
        head,
        objects,
        cells,
    }
}

/// What a row carries of its object (`includeObject`): its
/// PartialObjectMetadata, the object itself, or nothing.
pub(crate) fn row_object<'a>(
    obj: &'a Value,
    include: IncludeObject,
    version: &str,
) -> Option<std::borrow::Cow<'a, Value>> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(std::borrow::Cow::Owned(partial_metadata(obj, version))),
        IncludeObject::Object => Some(std::borrow::Cow::Borrowed(obj)),
    }
}

/// Go's `%T` of what a handler returns for `res` (`*core.ConfigMap`,
/// `*unstructured.UnstructuredList`), as 406 messages name it.
fn go_type(res: &Resource, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if res.is_custom() {
        return format!("*unstructured.Unstructured{suffix}");
    }
    // A kind that is a view of another's storage is that kind in Go.
    let (group, kind) = match res.stored_as() {
        Some(storage) => (storage.group(), storage.kind()),
        None => (res.group.as_str(), res.kind.as_str()),
    };
    let package = match group {
        "" => "core",
        g => g.split('.').next().unwrap_or(g),
    };
    format!("*{package}.{kind}{suffix}")
}

/// A Status passes through every transformation (a DELETE that removed the object).
fn is_status(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Status")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// The PartialObjectMetadata view of one object, or the 406 kube-apiserver
/// gives when the client asked for a list. `None`: no metadata shape asked.
pub(crate) fn object_metadata(
    res: &Resource,
    obj: &Value,
    shape: &Shape,
) -> Option<ApiResult<Value>> {
    match shape {
        _ if is_status(obj) => None,
        Shape::PartialObjectMetadata(v) => Some(Ok(partial_metadata(obj, v))),
        Shape::PartialObjectMetadataList(_) => {
            Some(Err(ApiError::not_acceptable_message(format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                go_type(res, false)
            ))))
        }
        _ => None,
    }
}

/// The PartialObjectMetadataList of a list's items, or the 406 for a client
/// that asked for one object's metadata. `None`: no metadata shape asked.
pub(crate) fn list_metadata(
    res: &Resource,
    list_meta: Value,
    items: &[std::sync::Arc<Value>],
    shape: &Shape,
) -> Option<ApiResult<Value>> {
    match shape {
        Shape::PartialObjectMetadataList(v) => Some(Ok(json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": format!("meta.k8s.io/{v}"),
            "metadata": list_meta,
            "items": items.iter().map(|o| partial_metadata(o, v)).collect::<Vec<_>>(),
        }))),
        Shape::PartialObjectMetadata(_) => Some(Err(ApiError::not_acceptable_message(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(res, true)
        )))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_cells_follow_column_types() {
        let col = |t: &str, p: &str| PrinterColumn {
            name: "c".into(),
            type_: t.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: p.into(),
        };
        let obj = json!({"spec": {"size": 3, "color": "red", "tags": ["a"]}});
        let now = jiff::Timestamp::now();
        assert_eq!(
            custom_cell(&col("integer", ".spec.size"), &obj, now),
            json!(3)
        );
        assert_eq!(
            custom_cell(&col("string", ".spec.color"), &obj, now),
            json!("red")
        );
        assert_eq!(
            custom_cell(&col("string", ".spec.tags"), &obj, now),
            json!("[\"a\"]")
        );
        assert_eq!(
            custom_cell(&col("string", ".spec.none"), &obj, now),
            Value::Null
        );
    }
}
