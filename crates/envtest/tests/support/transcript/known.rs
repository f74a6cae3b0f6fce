//! The explained list of steps where envtest knowingly differs from the
//! recording (`tests/fixtures/known-differences.toml`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::model::Transcript;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    difference: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// `NN/index`, e.g. `07/19`.
    step: String,
    /// One line: why envtest answers differently.
    reason: String,
}

pub fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/known-differences.toml")
}

/// Step id -> reason. Panics with a clear message on a malformed list or an
/// entry naming a step that does not exist.
pub fn load(transcripts: &[Transcript]) -> BTreeMap<String, String> {
    let path = path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse(&text, transcripts).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn parse(text: &str, transcripts: &[Transcript]) -> Result<BTreeMap<String, String>, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut known = BTreeMap::new();
    for entry in file.difference {
        let (number, index) = entry
            .step
            .split_once('/')
            .ok_or_else(|| format!("step {:?} is not NN/index", entry.step))?;
        let index: usize = index
            .parse()
            .map_err(|_| format!("step {:?} is not NN/index", entry.step))?;
        let transcript = transcripts
            .iter()
            .find(|t| t.number == number)
            .ok_or_else(|| format!("step {:?}: no transcript {number}", entry.step))?;
        if index >= transcript.steps.len() {
            return Err(format!(
                "step {:?}: {} has only {} steps",
                entry.step,
                transcript.stem,
                transcript.steps.len()
            ));
        }
        if entry.reason.trim().is_empty() || entry.reason.contains('\n') {
            return Err(format!("step {:?} needs a one-line reason", entry.step));
        }
        if known.insert(entry.step.clone(), entry.reason).is_some() {
            return Err(format!("step {:?} is listed twice", entry.step));
        }
    }
    Ok(known)
}
