//! `opctl envtest`: an in-process Kubernetes API server for testing operators.
//!
//! It is a test server, not a cluster: no container ever runs, but simulated
//! Nodes, a scheduler, kubelets and the workload controllers move Pods,
//! Deployments and Jobs along as a cluster would (`workloads`). What it implements behaves as kube-apiserver does as seen by real
//! clients (kubectl, kube-rs, the Python client), checked against transcripts
//! recorded from a real server (`tests/fixtures/transcripts`).

pub mod admission;
pub mod api;
pub mod authn;
pub mod authz;
pub mod bootstrap;
pub mod builtin;
pub mod component_statuses;
pub mod controllers;
pub mod conversion;
pub mod error;
pub mod faults;
pub mod field_selectors;
mod gofmt;
pub mod http;
pub mod jsonpath;
pub mod meta;
pub mod metrics;
pub mod nodes;
pub mod patch;
pub mod pod_streams;
mod quantity;
pub mod registry;
pub mod schema;
pub mod selectors;
pub mod server;
pub mod store;
pub mod table;
pub mod tokens;
pub mod typeinfo;
pub mod workloads;

pub use error::{ApiError, ApiResult, Cause};
pub use faults::FaultSpec;
pub use server::{Config, Envtest};
