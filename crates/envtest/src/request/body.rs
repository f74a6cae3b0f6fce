//! Request bodies: size limit, Content-Type, JSON (with duplicate-field
//! detection for `fieldValidation`) and YAML decoding, and the 400/413/415
//! errors kube-apiserver gives for each.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::gofmt;

/// kube-apiserver's request body limit (3 MiB).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    Json,
    Yaml,
    /// Kubernetes protobuf (built-in kinds only).
    Protobuf,
}

/// The media type of a create/update body (no `Content-Type` means JSON);
/// anything else, or a value Go's `mime.ParseMediaType` refuses, is 415.
pub(crate) fn body_format(content_type: Option<&str>) -> ApiResult<BodyFormat> {
    let media_type = match content_type.unwrap_or("") {
        "" => Some("application/json".to_string()),
        value => super::media_type::parse(value),
    };
    match media_type.as_deref() {
        Some("application/json") => Ok(BodyFormat::Json),
        Some("application/yaml") => Ok(BodyFormat::Yaml),
        Some("application/vnd.kubernetes.protobuf") => Ok(BodyFormat::Protobuf),
        _ => Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )),
    }
}

/// A decoded body and the paths of fields that appeared twice.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    pub value: Value,
    pub duplicates: Vec<String>,
}

struct Seed<'a> {
    path: String,
    dups: &'a RefCell<Vec<String>>,
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Seed {
            path: format!("{}[{}]", self.path, out.len()),
            dups: self.dups,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let path = child(&self.path, &key);
            let value = access.next_value_seed(Seed {
                path: path.clone(),
                dups: self.dups,
            })?;
            if out.insert(key, value).is_some() {
                self.dups.borrow_mut().push(path);
            }
        }
        Ok(Value::Object(out))
    }
}

/// Parses JSON, recording duplicate fields. `Err` is Go's message.
pub(crate) fn parse_json(body: &[u8]) -> Result<Decoded, String> {
    let dups = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Seed {
        path: String::new(),
        dups: &dups,
    }
    .deserialize(&mut de)
    .map_err(|e| gofmt::syntax_error(body, &e))?;
    de.end().map_err(|e| gofmt::syntax_error(body, &e))?;
    Ok(Decoded {
        value,
        duplicates: dups.into_inner(),
    })
}

/// Parses one YAML document into JSON.
pub(crate) fn parse_yaml(body: &[u8]) -> Result<Decoded, String> {
    let text =
        std::str::from_utf8(body).map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    if text.trim().is_empty() {
        return Ok(Decoded {
            value: Value::Null,
            duplicates: Vec::new(),
        });
    }
    let value: Value = serde_saphyr::from_str(text).map_err(|e| {
        format!(
            "error converting YAML to JSON: {}",
            first_line(&e.to_string())
        )
    })?;
    Ok(Decoded {
        value,
        duplicates: Vec::new(),
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// kube-apiserver's summary of a body in "unrecognized" errors.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') if body.len() > MAX => format!("{} ...", String::from_utf8_lossy(&body[..MAX])),
        Some(b'{') => String::from_utf8_lossy(body).into_owned(),
        Some(_) if body.len() > MAX => format!("{} ...", hex(&body[..MAX])),
        Some(_) => hex(body),
    }
}

/// The 400 for a body whose kind cannot even be read.
pub(crate) fn unrecognized(kind: &str, detail: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {detail} ({})",
        summarize(body)
    ))
}

/// Custom resources decode as unstructured objects, which must name their
/// kind (whatever it is: the validator judges it later).
pub(crate) fn require_kind(decoded: &Decoded, expected_kind: &str, body: &[u8]) -> ApiResult<()> {
    let kind = decoded.value.get("kind").and_then(Value::as_str);
    if kind.is_some_and(|k| !k.is_empty()) {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {expected_kind}): Object 'Kind' is missing in '{}' ({})",
        String::from_utf8_lossy(body),
        summarize(body)
    )))
}

/// Decodes an object body of `format`; `expected_kind` names the URL's kind
/// in errors. A `null` body is an empty object; anything not an object is 400.
pub(crate) fn decode_object(
    body: &[u8],
    format: BodyFormat,
    expected_kind: &str,
) -> ApiResult<Decoded> {
    let decoded = match format {
        BodyFormat::Json => parse_json(body),
        BodyFormat::Yaml => parse_yaml(body),
        BodyFormat::Protobuf => super::protobuf::decode(body).map(|value| Decoded {
            value,
            duplicates: Vec::new(),
        }),
    }
    .map_err(|msg| unrecognized(expected_kind, &msg, body))?;
    match &decoded.value {
        Value::Object(_) => Ok(decoded),
        Value::Null if !body.is_empty() => Ok(Decoded {
            value: Value::Object(Map::new()),
            duplicates: decoded.duplicates,
        }),
        other => Err(unrecognized(
            expected_kind,
            &format!(
                "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
                gofmt::json_kind(other)
            ),
            body,
        )),
    }
}

/// 413 for a body over the limit.
pub(crate) fn too_large() -> ApiError {
    ApiError::too_large(MAX_BODY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_and_non_object_bodies_match_recorded_messages() {
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x""#;
        let err = decode_object(body, BodyFormat::Json, "ConfigMap").unwrap_err();
        assert_eq!(
            err.message,
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"
        );
        let err = decode_object(b"[1,2]", BodyFormat::Json, "ConfigMap").unwrap_err();
        assert!(err.message.contains("cannot unmarshal array into Go value"));
        assert!(err.message.ends_with("(5b312c325d)"));
        let err = decode_object(b"", BodyFormat::Json, "ConfigMap").unwrap_err();
        assert!(
            err.message
                .ends_with("unexpected end of JSON input (<empty>)")
        );
    }

    #[test]
    fn duplicates_are_reported_with_paths() {
        let d = parse_json(br#"{"data":{"a":"1"},"data":{"b":"2"},"m":{"x":1,"x":2}}"#).unwrap();
        assert_eq!(d.duplicates, vec!["data", "m.x"]);
        assert_eq!(d.value["data"]["b"], "2");
    }

    #[test]
    fn yaml_bodies_and_content_types() {
        let d = parse_yaml(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n").unwrap();
        assert_eq!(d.value["data"]["a"], "1");
        assert_eq!(
            body_format(Some("application/yaml; charset=utf-8")).unwrap(),
            BodyFormat::Yaml
        );
        assert_eq!(body_format(None).unwrap(), BodyFormat::Json);
        assert_eq!(body_format(Some("text/plain")).unwrap_err().code, 415);
        assert_eq!(body_format(Some("")).unwrap(), BodyFormat::Json);
        for refused in [
            "application/json\u{fffd}",
            "application/json; charset=\u{fffd}",
            " ",
        ] {
            assert_eq!(
                body_format(Some(refused)).unwrap_err().code,
                415,
                "{refused:?}"
            );
        }
    }
}
