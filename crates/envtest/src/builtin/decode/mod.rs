//! Typed decoding of request bodies: a round trip through the k8s-openapi
//! structs with a Go-like deserializer (`de`), then the output shaped as Go's
//! encoder writes it (`normalize`).

mod de;
mod gobase64;
mod gotime;
mod gotype;
mod normalize;
mod plain;

use std::cell::RefCell;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

use super::KindInfo;
use de::{DeError, Report, Seg, ValueDe};

/// Round-trips `obj` through `T`; returns the typed output and what was dropped.
fn round_trip<T: DeserializeOwned + Serialize>(
    kind: &KindInfo,
    obj: &Value,
) -> ApiResult<(Value, Report)> {
    let report = RefCell::new(Report::default());
    let typed = T::deserialize(ValueDe::root(obj, &report)).map_err(|e| {
        let detail = match e {
            DeError::Final(msg) => msg,
            other => other.to_string(),
        };
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {detail}",
            kind = kind.kind,
            version = kind.version
        ))
    })?;
    let out = serde_json::to_value(&typed)
        .map_err(|e| ApiError::internal(format!("encoding {}: {e}", kind.kind)))?;
    Ok((out, report.into_inner()))
}

/// A kind's typed round trip through its k8s-openapi type, held by its row
/// in the table of kinds.
#[derive(Clone, Copy)]
pub(super) struct Codec {
    round_trip: fn(&KindInfo, &Value) -> ApiResult<(Value, Report)>,
    type_name: fn() -> &'static str,
    /// Adds the OpenAPI schema of the type (and of every type it refers
    /// to) to a generator, answering the reference to it.
    schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
}

fn schema_of<T: schemars::JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
) -> schemars::Schema {
    generator.subschema_for::<T>()
}

impl Codec {
    pub(super) const fn of<T: DeserializeOwned + Serialize + schemars::JsonSchema>() -> Codec {
        Codec {
            round_trip: round_trip::<T>,
            type_name: std::any::type_name::<T>,
            schema: schema_of::<T>,
        }
    }

    /// The `$ref` to the type's schema, which `generator` now defines.
    pub(crate) fn schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        (self.schema)(generator)
    }

    /// The Rust path of the type, e.g.
    /// `k8s_openapi::v1_33::api::apps::v1::deployment::Deployment`.
    pub(crate) fn type_name(&self) -> &'static str {
        (self.type_name)()
    }
}

/// Two codecs are the same when they round-trip through the same type.
impl PartialEq for Codec {
    fn eq(&self, other: &Codec) -> bool {
        self.type_name() == other.type_name()
    }
}

impl Eq for Codec {}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.type_name())
    }
}

/// See [`super::decode`].
pub(crate) fn decode(kind: &KindInfo, mut obj: Value) -> ApiResult<(Value, Vec<String>)> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: json: cannot unmarshal {got} into Go value of type {version}.{kind}",
            kind = kind.kind,
            version = kind.version,
            got = gotype::go_json_kind(&obj, "")
        )));
    };
    // The server has checked apiVersion and kind against the URL already.
    map.insert("apiVersion".into(), Value::String(kind.api_version()));
    map.insert("kind".into(), Value::String(kind.kind.to_string()));

    let (mut out, report) = (kind.codec.round_trip)(kind, &obj)?;
    drop_empty_collections(&mut out, &report.empty_collections);
    nil_for_absent_lists(&mut out, &obj);
    integral_floats(&mut out);
    normalize::go_zero_values(kind, &mut out);
    crate::meta::type_meta_first(&mut out);
    Ok((out, report.unknown))
}

/// Go's encoder writes a float64 without a fraction as an integer (`1`, not
/// `1.0`): schema bounds, free-form JSON.
fn integral_floats(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats),
        Value::Object(map) => map.values_mut().for_each(integral_floats),
        _ => {}
    }
}

/// k8s-openapi writes a required list the body left out as `[]`; Go writes
/// its nil slice as `null`. (Optional lists left out are not written at all.)
fn nil_for_absent_lists(out: &mut Value, input: &Value) {
    match out {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                let given = input.get(key.as_str());
                match value {
                    Value::Array(items) if items.is_empty() => {
                        if given.is_none_or(Value::is_null) {
                            *value = Value::Null;
                        }
                    }
                    // A webhook's sideEffects is a pointer in Go: absent means null.
                    Value::String(s) if s.is_empty() && key == "sideEffects" => {
                        if given.is_none_or(Value::is_null) {
                            *value = Value::Null;
                        }
                    }
                    _ => nil_for_absent_lists(value, given.unwrap_or(&Value::Null)),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                nil_for_absent_lists(item, input.get(i).unwrap_or(&Value::Null));
            }
        }
        _ => {}
    }
}

/// Go's `omitempty` drops maps and lists that are empty; k8s-openapi writes
/// them. Fields Go always writes are restored by `normalize` afterwards.
fn drop_empty_collections(out: &mut Value, paths: &[Vec<Seg>]) {
    for path in paths {
        let Some((last, parents)) = path.split_last() else {
            continue;
        };
        let Seg::Key(key) = last else { continue };
        let Some(cursor) = navigate(out, parents) else {
            continue;
        };
        if let Some(map) = cursor.as_object_mut() {
            let empty = match map.get(key.as_str()) {
                Some(Value::Array(a)) => a.is_empty(),
                Some(Value::Object(o)) => o.is_empty(),
                _ => false,
            };
            if empty && !normalize::always_written(parents, key) {
                map.remove(key.as_str());
            }
        }
    }
}

fn navigate<'a>(value: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    match path.split_first() {
        None => Some(value),
        Some((Seg::Key(k), rest)) => navigate(value.get_mut(k.as_str())?, rest),
        Some((Seg::Index(i), rest)) => navigate(value.get_mut(*i)?, rest),
    }
}
