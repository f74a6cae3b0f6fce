//! RFC 6902 JSON patch, with the request checks and errors of kube-apiserver
//! (the operations themselves, as its json-patch library runs them, are in
//! `json_ops`).

use serde_json::{Map, Value};

use super::json_ops;
use crate::error::{ApiError, ApiResult, Details};
use crate::gofmt;

/// The most operations the real server accepts in one JSON patch.
const MAX_OPERATIONS: usize = 10_000;

/// How many bytes the `copy` operations of one patch may add in total: the
/// json-patch library's accumulated copy limit, which kube-apiserver sets to
/// its request body limit.
const MAX_COPIED_BYTES: usize = crate::request::body::MAX_BODY;

/// A failing operation: the generic 422 the real server sends, `details: {}`.
fn rejected() -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )
    .with_details(Details::default())
}

fn decode_error(message: String) -> ApiError {
    ApiError::bad_request(format!("error decoding patch: {message}"))
}

/// Checks each operation the way Go decodes it into
/// `[]handlers.jsonPatchOp` (`op`, `path`, `from` strings, any `value`).
fn decode_operations(body: &[u8]) -> ApiResult<Vec<Map<String, Value>>> {
    let parsed = gofmt::parse_json(body).map_err(decode_error)?;
    let items = match parsed {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(decode_error(gofmt::unmarshal_type_error(
                &other,
                "[]handlers.jsonPatchOp",
            )));
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let op = match item {
            Value::Object(op) => op,
            Value::Null => Map::new(),
            other => {
                return Err(decode_error(gofmt::unmarshal_type_error(
                    &other,
                    "handlers.jsonPatchOp",
                )));
            }
        };
        for field in ["op", "path", "from"] {
            if let Some(v) = op.get(field)
                && !v.is_string()
                && !v.is_null()
            {
                return Err(decode_error(format!(
                    "json: cannot unmarshal {} into Go struct field jsonPatchOp.{field} of type string",
                    gofmt::json_kind(v)
                )));
            }
        }
        ops.push(op);
    }
    if ops.len() > MAX_OPERATIONS {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    Ok(ops)
}

pub(super) fn apply(doc: &Value, body: &[u8]) -> ApiResult<Value> {
    let ops = decode_operations(body)?;
    let mut out = doc.clone();
    let mut copied = 0usize;
    for op in &ops {
        json_ops::apply(
            &mut out,
            &json_ops::Operation::of(op),
            &mut copied,
            MAX_COPIED_BYTES,
        )
        .map_err(|_| rejected())?;
    }
    if super::exceeds_depth(&out) {
        return Err(rejected());
    }
    Ok(out)
}
