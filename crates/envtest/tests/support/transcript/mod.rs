//! Replay of the kube-apiserver transcripts (docs/envtest-conformance.md).

pub mod fake;
pub mod known;
pub mod matcher;
pub mod model;
pub mod placeholders;
pub mod replay;
