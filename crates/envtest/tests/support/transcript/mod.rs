//! Replay of the kube-apiserver transcripts (DESIGN.md section 4).

pub mod fake;
pub mod known;
pub mod matcher;
pub mod model;
pub mod placeholders;
pub mod pyjson;
pub mod replay;
