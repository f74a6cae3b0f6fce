//! `opctl envtest`: an in-process Kubernetes API server for testing operators.
//!
//! It is a test server, not a cluster: no kubelet, no scheduler, Pods never
//! run. What it implements behaves as kube-apiserver does as seen by real
//! clients (kubectl, kube-rs, the Python client), checked against transcripts
//! recorded from a real server (`tests/fixtures/transcripts`).

pub mod builtin;
pub mod error;
pub mod patch;
pub mod schema;
pub mod meta;
pub mod store;
pub mod typeinfo;

pub use error::{ApiError, ApiResult, Cause};
