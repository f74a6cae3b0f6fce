//! Building HTTP responses: JSON or YAML bodies, `Warning` headers, Status
//! errors, with the bytes kube-apiserver writes (see [`crate::gojson`]).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::error::ApiError;
use crate::faults::Injected;
use crate::gojson;
use crate::request::negotiate::{Accepted, Format, Shape, error_format};

/// One `Warning: 299 - "..."` header value.
pub(crate) fn warning_header(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

/// Compact JSON, as a client that asked for nothing in particular gets it.
pub(crate) const JSON: Accepted = Accepted {
    format: Format::Json,
    shape: Shape::Plain,
    pretty: false,
};

/// What the client prefers for every answer of one request: its `Accept`
/// header and whether it wants indented JSON (`?pretty=true`, or a
/// curl/Wget/browser User-Agent, as kube-apiserver's `isPrettyPrint`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Preferences {
    pub accept: Option<String>,
    pub pretty: bool,
}

impl Preferences {
    pub(crate) fn of(
        accept: Option<&str>,
        query: Option<&str>,
        user_agent: Option<&str>,
    ) -> Preferences {
        let from_query = query.and_then(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
                .find(|(k, _)| *k == "pretty")
                .map(|(_, v)| v.to_string())
        });
        let pretty = match from_query.as_deref() {
            // Go's strconv.ParseBool; an empty value leaves the User-Agent to decide.
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => true,
            Some(v) if !v.is_empty() => false,
            _ => user_agent.is_some_and(|ua| {
                ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("Mozilla/5.0")
            }),
        };
        Preferences {
            accept: accept.map(str::to_string),
            pretty,
        }
    }
}

fn encode(value: &Value, acc: &Accepted) -> (Vec<u8>, &'static str) {
    match acc.format {
        Format::Json if acc.pretty => (gojson::indented(value), "application/json"),
        Format::Json => (gojson::compact(value), "application/json"),
        Format::Yaml => (
            serde_saphyr::to_string(value)
                .unwrap_or_default()
                .into_bytes(),
            "application/yaml",
        ),
    }
}

pub(crate) fn object(status: u16, value: &Value, acc: &Accepted, warnings: &[String]) -> Response {
    let (bytes, content_type) = encode(value, acc);
    let mut resp = bytes_with_type(status, bytes, HeaderValue::from_static(content_type));
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&warning_header(w)) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

pub(crate) fn json_with_type(status: u16, value: &Value, content_type: &str) -> Response {
    let mut resp = object(status, value, &JSON, &[]);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// A non-API document written as kube-apiserver's `WriteRawJSON` writes it
/// (`/version`, errors no Accept range can carry): indented, whatever the
/// client accepts.
pub(crate) fn raw_json(status: u16, value: &Value) -> Response {
    bytes_with_type(
        status,
        gojson::indented(value),
        HeaderValue::from_static("application/json"),
    )
}

/// A Status error for a client with `prefs` (kube-apiserver's
/// `ErrorNegotiated`): in the first format of its Accept header that asks
/// for no transformation, else indented JSON.
pub(crate) fn error(err: &ApiError, prefs: &Preferences) -> Response {
    error_with_warnings(err, prefs, &[])
}

/// A Status error with `Warning` headers (e.g. from admission webhooks).
pub(crate) fn error_with_warnings(
    err: &ApiError,
    prefs: &Preferences,
    warnings: &[String],
) -> Response {
    match error_format(prefs.accept.as_deref()) {
        Some(mut acc) => {
            acc.pretty |= prefs.pretty;
            with_retry_after(err, object(err.code, &err.to_status(), &acc, warnings))
        }
        None => {
            let mut resp = raw_json(err.code, &err.to_status());
            for w in warnings {
                if let Ok(v) = HeaderValue::from_str(&warning_header(w)) {
                    resp.headers_mut().append("warning", v);
                }
            }
            with_retry_after(err, resp)
        }
    }
}

/// As kube-apiserver does for a Status that suggests a delay (429, 504).
fn with_retry_after(err: &ApiError, mut resp: Response) -> Response {
    let retry_after = err.details.as_ref().and_then(|d| d.retry_after_seconds);
    if let Some(seconds) = retry_after.filter(|s| *s > 0)
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, value);
    }
    resp
}

/// A body that is already encoded, such as protobuf.
pub(crate) fn bytes(status: u16, body: Vec<u8>, content_type: &'static str) -> Response {
    bytes_with_type(status, body, HeaderValue::from_static(content_type))
}

fn bytes_with_type(status: u16, body: Vec<u8>, content_type: HeaderValue) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, content_type);
    resp
}

pub(crate) fn text(status: u16, body: impl Into<Vec<u8>>) -> Response {
    let mut resp = bytes(status, body.into(), "text/plain; charset=utf-8");
    // Go's http.Error and http.NotFound mark plain-text answers so.
    resp.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Go's `responsewriters.InternalError`: a plain-text 500 naming the
/// request URI, HTML-escaped.
pub(crate) fn internal_error_text(request_uri: &str, message: &str) -> Response {
    let text = format!(
        "Internal Server Error: {}: {message}",
        crate::gofmt::quote(request_uri)
    );
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    text_line(500, escaped)
}

fn text_line(status: u16, mut body: String) -> Response {
    body.push('\n');
    text(status, body)
}

/// The text/plain 404 kube-apiserver's mux gives for paths nothing serves.
pub(crate) fn page_not_found() -> Response {
    text(404, "404 page not found\n")
}

/// An injected fault's answer, written as kube-apiserver writes each.
pub(crate) fn injected(answer: &Injected, prefs: &Preferences) -> Response {
    match answer {
        Injected::Status(err) => error(err, prefs),
        // API Priority and Fairness rejecting the request: plain text.
        Injected::TooManyRequests => {
            let mut resp = text(429, "Too many requests, please try again later.\n");
            let headers = resp.headers_mut();
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            resp
        }
        Injected::Timeout => request_timeout(),
    }
}

/// The request-timeout filter's answer: the Status without kind or
/// apiVersion, sent before any Content-Type was set (so Go sniffs text/plain).
pub(crate) fn request_timeout() -> Response {
    let status = serde_json::json!({"metadata": {}, "status": "Failure",
        "message": "Timeout: request did not complete within the allotted timeout",
        "reason": "Timeout", "details": {}, "code": 504});
    let mut body = serde_json::to_vec(&status).unwrap_or_default();
    body.push(b'\n');
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
