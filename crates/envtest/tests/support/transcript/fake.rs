//! A server that answers with the recording itself, for testing the harness:
//! replaying a transcript against it must pass every step, and a deliberately
//! altered answer must be caught. Placeholders become concrete, made-up
//! values (resourceVersion `<rv:N>` is `1000+N`, and so on).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::{Map, Value};

use super::matcher;
use super::model::{Step, Transcript};
use super::placeholders::{Bindings, Family, PLACEHOLDER, Placeholder};
use super::replay::SETUP_HEADER;
use crate::support::http::decode_query;

/// Alters the recorded response of step `index` before it is served.
pub type Mutation = Arc<dyn Fn(usize, &mut Value) + Send + Sync>;

struct Fake {
    transcript: Transcript,
    served: Vec<bool>,
    /// Placeholder -> the concrete value this fake uses for it.
    values: Bindings,
    mutation: Option<Mutation>,
}

/// Starts the fake on a loopback port; returns its base URL.
pub async fn start(transcript: Transcript, mutation: Option<Mutation>) -> String {
    let served = vec![false; transcript.steps.len()];
    let state = Arc::new(Mutex::new(Fake {
        transcript,
        served,
        values: Bindings::default(),
        mutation,
    }));
    let app = Router::new().fallback(handle).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

async fn handle(State(state): State<Arc<Mutex<Fake>>>, request: Request) -> Response {
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    let query = decode_query(request.uri().query().unwrap_or_default());
    let setup = request.headers().contains_key(SETUP_HEADER);
    let body = axum::body::to_bytes(request.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    if setup {
        return setup_answer(&method);
    }
    let mut fake = match state.lock() {
        Ok(f) => f,
        Err(poisoned) => poisoned.into_inner(),
    };
    fake.answer(&method, &path, &query, &body)
}

/// Set-up requests: created, and any object read back is Established.
fn setup_answer(method: &str) -> Response {
    let (status, body) = match method {
        "POST" => (201, "{}".to_string()),
        "GET" => (
            200,
            r#"{"status":{"conditions":[{"type":"Established","status":"True"}]}}"#.to_string(),
        ),
        _ => (200, "{}".to_string()),
    };
    plain(status, "application/json", body)
}

fn plain(status: u16, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap_or_default()
}

impl Fake {
    fn answer(
        &mut self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: &[u8],
    ) -> Response {
        let candidates: Vec<usize> = (0..self.transcript.steps.len())
            .filter(|&i| !self.served.get(i).copied().unwrap_or(true))
            .collect();
        for index in candidates {
            let step = self.transcript.steps[index].clone();
            if step.request.method != method || self.concrete_str(&step.request.path) != path {
                continue;
            }
            let recorded_query: Vec<(String, String)> = step
                .request
                .query_pairs()
                .into_iter()
                .map(|(k, v)| (k, self.concrete_str(&v)))
                .collect();
            // The harness asks watches covering steps for a longer timeout.
            let comparable = |pairs: &[(String, String)]| -> Vec<(String, String)> {
                pairs
                    .iter()
                    .filter(|(k, _)| k != "timeoutSeconds")
                    .cloned()
                    .collect()
            };
            if comparable(&recorded_query) != comparable(query) {
                continue;
            }
            self.served[index] = true;
            self.learn(&step, body);
            return self.respond(index, &step);
        }
        plain(
            404,
            "text/plain",
            format!("fake: no unserved step matches {method} {path} {query:?}"),
        )
    }

    /// Client-invented values (a made-up precondition uid) come from the request.
    fn learn(&mut self, step: &Step, body: &[u8]) {
        if let (Value::Object(_), Ok(actual)) =
            (&step.request.body, serde_json::from_slice::<Value>(body))
        {
            let mut trial = self.values.clone();
            let _ = matcher::compare(
                &step.request.body,
                &actual,
                &mut trial,
                &matcher::Rules::default(),
            );
            self.values = trial;
        }
    }

    fn respond(&mut self, index: usize, step: &Step) -> Response {
        let recorded = &step.response;
        let mut builder = Response::builder()
            .status(recorded.status)
            .header("content-type", recorded.content_type.as_str());
        for warning in recorded.warnings.iter().flatten() {
            builder = builder.header("warning", self.concrete_str(warning));
        }
        let text = if let Some(events) = &recorded.events {
            let mut out = String::new();
            for event in events {
                let mut event = event.clone();
                if let Some(m) = &self.mutation {
                    m(index, &mut event);
                }
                out.push_str(&self.concrete(&event).to_string());
                out.push('\n');
            }
            out
        } else {
            match &recorded.body {
                Some(Value::String(s)) => self.concrete_str(s),
                Some(value) => {
                    let mut value = value.clone();
                    if let Some(m) = &self.mutation {
                        m(index, &mut value);
                    }
                    self.concrete(&value).to_string()
                }
                None => String::new(),
            }
        };
        builder.body(Body::from(text)).unwrap_or_default()
    }

    fn concrete(&mut self, value: &Value) -> Value {
        match value {
            Value::String(s) if s == "<nodePort>" => Value::from(30080),
            Value::String(s) => Value::String(self.concrete_str(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.concrete(v)).collect()),
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    out.insert(self.concrete_str(k), self.concrete(v));
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    fn concrete_str(&mut self, recorded: &str) -> String {
        PLACEHOLDER
            .replace_all(recorded, |caps: &regex::Captures<'_>| {
                let whole = caps.get(0).map(|m| m.as_str()).unwrap_or_default();
                let number: u32 = caps
                    .get(2)
                    .and_then(|m| m.as_str().parse().ok())
                    .unwrap_or(0);
                match caps.get(1).map(|m| m.as_str()) {
                    Some("rv") => self.numbered(Family::Rv, number, format!("{}", 1000 + number)),
                    Some("uid") => self.numbered(
                        Family::Uid,
                        number,
                        format!("{number:08x}-aaaa-4bbb-8ccc-{number:012x}"),
                    ),
                    _ => match whole {
                        "<time>" => "2026-11-30T10:00:00Z".to_string(),
                        "<clusterIP>" => "10.96.0.10".to_string(),
                        "<nodePort>" => "30080".to_string(),
                        "<continue>" => "c0ntinue".to_string(),
                        "<suffix>" => "x7k2p".to_string(),
                        "<age>" => "5s".to_string(),
                        "<ptr>" => "0xc000123456".to_string(),
                        "<token>" => {
                            "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.c2lnbmF0dXJl".to_string()
                        }
                        other => other.to_string(),
                    },
                }
            })
            .into_owned()
    }

    fn numbered(&mut self, family: Family, n: u32, default: String) -> String {
        if let Some(v) = self.values.get(family, n) {
            return v.to_string();
        }
        let _ = self
            .values
            .unify(Placeholder::Numbered(family, n), &default, true);
        default
    }
}
