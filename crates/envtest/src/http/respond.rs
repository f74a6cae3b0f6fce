//! Building HTTP responses: JSON or YAML bodies, `Warning` headers, Status errors.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::negotiate::Format;
use crate::error::ApiError;

/// One `Warning: 299 - "..."` header value.
pub fn warning_header(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

pub fn object(status: u16, value: &Value, format: Format, warnings: &[String]) -> Response {
    let (bytes, content_type) = match format {
        Format::Json => (
            serde_json::to_vec(value).unwrap_or_default(),
            "application/json",
        ),
        Format::Yaml => (
            serde_saphyr::to_string(value)
                .unwrap_or_default()
                .into_bytes(),
            "application/yaml",
        ),
    };
    let mut resp = Response::new(Body::from(bytes));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&warning_header(w)) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

pub fn json_with_type(status: u16, value: &Value, content_type: &str) -> Response {
    let mut resp = object(status, value, Format::Json, &[]);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

pub fn error(err: &ApiError) -> Response {
    error_with_warnings(err, &[])
}

/// A Status error with `Warning` headers (e.g. from admission webhooks).
pub fn error_with_warnings(err: &ApiError, warnings: &[String]) -> Response {
    let mut resp = object(err.code, &err.to_status(), Format::Json, warnings);
    // As kube-apiserver does for a Status that suggests a delay (429, 504).
    let retry_after = err.details.as_ref().and_then(|d| d.retry_after_seconds);
    if let Some(seconds) = retry_after.filter(|s| *s > 0)
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, value);
    }
    resp
}

/// A body that is already encoded, such as protobuf.
pub fn bytes(status: u16, body: Vec<u8>, content_type: &'static str) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

pub fn text(status: u16, body: &'static str) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The text/plain 404 kube-apiserver's mux gives for paths nothing serves.
pub fn page_not_found() -> Response {
    text(404, "404 page not found\n")
}
