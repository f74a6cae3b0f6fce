//! Reading a written body as its kind: apiVersion/kind checks, decoding
//! (built-ins) or pruning (custom resources), `fieldValidation`, defaults,
//! and the warnings for what envtest does not implement.

use serde_json::Value;

use crate::builtin;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::registry::Resource;
use crate::request::query::FieldValidation;
use crate::typeinfo::{TypeInfo, Untyped};

/// Shape information for patches and managed fields.
pub(crate) fn type_info(res: &Resource) -> &dyn TypeInfo {
    match res.builtin() {
        Some(kind) => builtin::type_info(kind),
        None => match res.schema() {
            Some(s) => s,
            None => &Untyped,
        },
    }
}

/// The internal API group name used in conversion errors (`core`, `apps`, `rbac`).
fn internal_group(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    }
}

/// Checks the body's apiVersion/kind against the URL's and fills what is
/// missing, as kube-apiserver's decoder does.
pub(crate) fn check_type_meta(res: &Resource, obj: &mut Value) -> ApiResult<()> {
    let Value::Object(map) = obj else {
        return Err(ApiError::bad_request("the body must be an object"));
    };
    let want_av = res.api_version();
    let av = match map.get("apiVersion") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "json: cannot unmarshal number into Go struct field .apiVersion of type string",
            ));
        }
    };
    let kind = match map.get("kind") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "json: cannot unmarshal number into Go struct field .kind of type string",
            ));
        }
    };
    if res.is_custom() {
        custom_type_meta(res, &av, &kind, map)?;
    }
    let av = if av.is_empty() { want_av.clone() } else { av };
    let kind = if kind.is_empty() {
        res.kind.clone()
    } else {
        kind
    };
    if let Some(detail) = type_mismatch(res, &av, &kind) {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {}: {detail}",
            meta::split_api_version(&av).1,
            res.kind
        )));
    }
    map.insert("apiVersion".into(), Value::String(want_av));
    map.insert("kind".into(), Value::String(res.kind.clone()));
    Ok(())
}

/// Why the decoder cannot read an object of apiVersion `av` and kind `kind`
/// (both filled in) as `res`: another kind it knows cannot be converted,
/// anything else is not registered. `None` when they are the resource's.
pub(crate) fn type_mismatch(res: &Resource, av: &str, kind: &str) -> Option<String> {
    if kind == res.kind && av == res.api_version() {
        return None;
    }
    let (body_group, body_version) = meta::split_api_version(av);
    let registered = crate::registry::is_builtin_kind(body_group, body_version, kind);
    Some(if registered && !res.is_custom() {
        format!(
            "converting ({body_version}.{kind}) to ({}.{}): unknown conversion",
            internal_group(&res.group),
            res.kind
        )
    } else {
        format!(
            "no kind {kind:?} is registered for version {av:?} in scheme \"pkg/runtime/scheme.go:100\""
        )
    })
}

/// A custom resource's apiVersion and kind, as its decoder and validator
/// judge them: any kind decodes (a missing one is refused while decoding,
/// see `request::body::require_kind`), the body's group/version must be the
/// URL's (400), and then the kind must be the resource's (422, before any
/// other validation, named by the body's kind).
fn custom_type_meta(
    res: &Resource,
    api_version: &str,
    kind: &str,
    map: &serde_json::Map<String, Value>,
) -> ApiResult<()> {
    let want = res.api_version();
    if api_version != want {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({want})"
        )));
    }
    if kind != res.kind {
        let name = map
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(ApiError::invalid(
            &res.group,
            kind,
            name,
            vec![Cause::invalid(
                "kind",
                &Value::String(kind.to_string()),
                &format!("must be {}", res.kind),
            )],
        ));
    }
    Ok(())
}

/// Decodes into the kind's shape: built-ins through `builtin::decode`, custom
/// resources by pruning against their schema. Returns the unknown fields.
pub(crate) fn decode(res: &Resource, obj: Value) -> ApiResult<(Value, Vec<String>)> {
    if let Some(kind) = res.builtin() {
        return builtin::decode(kind, obj);
    }
    let mut obj = obj;
    let mut unknown = Vec::new();
    if let Some(Value::Object(m)) = obj.get_mut("metadata") {
        let extra: Vec<String> = m
            .keys()
            .filter(|k| !meta::OBJECT_META_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in extra {
            m.remove(&k);
            unknown.push(format!("metadata.{k}"));
        }
    }
    if let Some(schema) = res.schema() {
        unknown.extend(schema.prune(&mut obj));
    }
    unknown.sort();
    Ok((obj, unknown))
}

/// Applies the `fieldValidation` directive: Strict refuses unknown and
/// duplicate fields, Warn turns them into warnings, Ignore drops them silently.
pub(crate) fn field_validation(
    res: &Resource,
    mode: FieldValidation,
    unknown: &[String],
    duplicates: &[String],
) -> ApiResult<Vec<String>> {
    let mut problems: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    problems.extend(duplicates.iter().map(|f| format!("duplicate field {f:?}")));
    match mode {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict if problems.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
            res.kind,
            res.version,
            res.kind,
            problems.join(", ")
        ))),
    }
}

pub(crate) fn apply_defaults(res: &Resource, obj: &mut Value) {
    match res.builtin() {
        Some(kind) => builtin::apply_defaults(kind, obj),
        None => {
            if let Some(schema) = res.schema() {
                schema.apply_defaults(obj);
            }
        }
    }
}
