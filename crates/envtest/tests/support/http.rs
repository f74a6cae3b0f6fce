//! A plain HTTP/1.1 client for talking to the server exactly as recorded
//! requests did: chosen method, path, query, headers and raw body bytes.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;

/// What came back (the whole body, read until the server closed it).
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: String,
    /// Raw `Warning` header values, in order.
    pub warnings: Vec<String>,
    pub body: Bytes,
}

impl HttpResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body)
            .map_err(|e| format!("body is not JSON ({e}): {}", truncate(&self.text(), 200)))
    }
}

pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}...")
    }
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    /// Path plus encoded query string.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl HttpRequest {
    pub fn new(method: &str, target: impl Into<String>) -> HttpRequest {
        HttpRequest {
            method: method.to_string(),
            target: target.into(),
            headers: vec![("Accept".into(), "application/json".into())],
            body: None,
        }
    }

    pub fn json(mut self, body: &serde_json::Value) -> HttpRequest {
        self.headers
            .push(("Content-Type".into(), "application/json".into()));
        self.body = Some(body.to_string().into_bytes());
        self
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> HttpRequest {
        self.body = Some(body.into());
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> HttpRequest {
        self.headers.push((name.into(), value.into()));
        self
    }
}

#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    base_url: String,
}

impl Http {
    pub fn new(base_url: &str) -> Http {
        let client = Client::builder(TokioExecutor::new()).build_http();
        Http {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends a request and reads the whole response within `timeout`.
    pub async fn send(
        &self,
        request: &HttpRequest,
        timeout: Duration,
    ) -> Result<HttpResponse, String> {
        let (headers_tx, _headers_rx) = oneshot::channel();
        self.send_notifying(request, timeout, headers_tx, None)
            .await
    }

    /// Like `send`, but signals `headers_arrived` as soon as the status line and
    /// headers are in (used to know a watch is established), and, given
    /// `stop`, ends reading the body when it fires, keeping what arrived.
    pub async fn send_notifying(
        &self,
        request: &HttpRequest,
        timeout: Duration,
        headers_arrived: oneshot::Sender<()>,
        stop: Option<oneshot::Receiver<()>>,
    ) -> Result<HttpResponse, String> {
        let method = Method::from_bytes(request.method.as_bytes())
            .map_err(|e| format!("bad method {:?}: {e}", request.method))?;
        let uri = format!("{}{}", self.base_url, request.target);
        let mut builder = Request::builder().method(method).uri(&uri);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let body = Full::new(Bytes::from(request.body.clone().unwrap_or_default()));
        let req = builder
            .body(body)
            .map_err(|e| format!("cannot build request {uri}: {e}"))?;
        let exchange = async {
            let response = self.client.request(req).await.map_err(|e| {
                format!(
                    "{} {}: transport error: {e:?}",
                    request.method, request.target
                )
            })?;
            let _ = headers_arrived.send(());
            let status = response.status().as_u16();
            let headers = response.headers();
            let content_type = headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let warnings = headers
                .get_all("warning")
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect();
            let body = read_body(response.into_body(), stop).await.map_err(|e| {
                format!(
                    "{} {}: connection failed while reading the body: {e:?}",
                    request.method, request.target
                )
            })?;
            Ok(HttpResponse {
                status,
                content_type,
                warnings,
                body,
            })
        };
        tokio::time::timeout(timeout, exchange).await.map_err(|_| {
            format!(
                "{} {}: no complete response within {timeout:?} (stream not closed?)",
                request.method, request.target
            )
        })?
    }
}

/// The whole body, or what arrived before `stop` fired.
async fn read_body(
    mut body: hyper::body::Incoming,
    stop: Option<oneshot::Receiver<()>>,
) -> Result<Bytes, hyper::Error> {
    let mut stop = stop;
    let mut out = Vec::new();
    loop {
        let frame = match stop.as_mut() {
            Some(stop) => tokio::select! {
                frame = body.frame() => frame,
                _ = stop => None,
            },
            None => body.frame().await,
        };
        match frame {
            Some(frame) => {
                if let Ok(data) = frame?.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            None => return Ok(Bytes::from(out)),
        }
    }
}

impl Http {
    /// Opens a watch (`target` must ask for one) and reads its JSON events
    /// as they arrive until `done` says so; fails on close or after `timeout`.
    pub async fn watch_until(
        &self,
        target: &str,
        timeout: Duration,
        mut done: impl FnMut(&[serde_json::Value]) -> bool,
    ) -> Result<Vec<serde_json::Value>, String> {
        let uri = format!("{}{}", self.base_url, target);
        let req = Request::builder()
            .method(Method::GET)
            .uri(&uri)
            .header("Accept", "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| format!("cannot build request {uri}: {e}"))?;
        let read = async {
            let response = self
                .client
                .request(req)
                .await
                .map_err(|e| format!("watch {target}: transport error: {e:?}"))?;
            if response.status() != 200 {
                let status = response.status();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                return Err(format!(
                    "watch {target}: {status}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            let mut body = response.into_body();
            let mut pending: Vec<u8> = Vec::new();
            let mut events = Vec::new();
            loop {
                if done(&events) {
                    return Ok(events);
                }
                let frame = match body.frame().await {
                    Some(Ok(frame)) => frame,
                    Some(Err(e)) => return Err(format!("watch {target}: stream failed: {e:?}")),
                    None => {
                        return Err(format!(
                            "watch {target}: the server closed the stream after {} events",
                            events.len()
                        ));
                    }
                };
                if let Ok(data) = frame.into_data() {
                    pending.extend_from_slice(&data);
                }
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let event = serde_json::from_slice(&line).map_err(|e| {
                        format!(
                            "watch {target}: not a JSON event ({e}): {}",
                            String::from_utf8_lossy(&line)
                        )
                    })?;
                    events.push(event);
                }
            }
        };
        tokio::time::timeout(timeout, read)
            .await
            .map_err(|_| format!("watch {target}: condition not reached within {timeout:?}"))?
    }
}

/// `application/x-www-form-urlencoded` query encoding, as Go's `url.Values`
/// (and so kubectl) writes it: space as `+`, everything else percent-escaped.
pub fn encode_query(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

pub fn encode_component(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Splits a raw query string into decoded pairs (the inverse of `encode_query`).
pub fn decode_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode_component(k), decode_component(v))
        })
        .collect()
}

pub fn decode_component(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes.get(i) {
            Some(b'+') => out.push(b' '),
            Some(b'%') => {
                let hex = text
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            Some(b) => out.push(*b),
            None => break,
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
