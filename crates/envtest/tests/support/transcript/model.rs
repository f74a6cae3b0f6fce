//! The recorded transcripts (`tests/fixtures/transcripts/*.json`) as Rust types.
//!
//! The format is described in `tests/fixtures/transcripts/README.md`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

/// One scenario file.
#[derive(Debug, Clone, Deserialize)]
pub struct Transcript {
    pub title: String,
    pub notes: String,
    pub steps: Vec<Step>,
    /// `07`, taken from the file name.
    #[serde(skip)]
    pub number: String,
    /// `07-watch`, the file name without extension.
    #[serde(skip)]
    pub stem: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub name: String,
    /// A watch opened before the `opened_before` steps that precede it.
    #[serde(default)]
    pub opened_before: Option<usize>,
    pub request: RecordedRequest,
    pub response: RecordedResponse,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Decoded parameters in the order sent (all values are strings).
    #[serde(default)]
    pub query: Map<String, Value>,
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// `null`: no body; a string: raw text; anything else: that value as JSON.
    #[serde(default)]
    pub body: Value,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RecordedResponse {
    pub status: u16,
    pub content_type: String,
    #[serde(default)]
    pub body: Option<Value>,
    /// Present for watches: every JSON line streamed until the server closed.
    #[serde(default)]
    pub events: Option<Vec<Value>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

impl RecordedRequest {
    /// The recorded query as ordered (name, value) pairs.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        self.query
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), value)
            })
            .collect()
    }

    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query.get(name).and_then(Value::as_str)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_str())
    }
}

impl Step {
    pub fn is_watch(&self) -> bool {
        self.response.events.is_some()
    }
}

/// The directory holding the recorded transcripts.
pub fn transcripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts")
}

/// Loads every `NN-*.json` transcript, sorted by number.
pub fn load_all() -> Vec<Transcript> {
    let dir = transcripts_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

pub fn load(path: &Path) -> Transcript {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut transcript: Transcript = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not a transcript: {e}", path.display()));
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    transcript.number = stem.chars().take_while(char::is_ascii_digit).collect();
    transcript.stem = stem;
    transcript
}
