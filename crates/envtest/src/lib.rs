//! `opctl envtest`: an in-process Kubernetes API server for testing operators.
//!
//! It is a test server, not a cluster: no container ever runs, but simulated
//! Nodes, a scheduler, kubelets and the workload controllers move Pods,
//! Deployments, StatefulSets, DaemonSets, Jobs and CronJobs along as a
//! cluster would, with Services' endpoints and bound volumes (`workloads`).
//! What it implements behaves as kube-apiserver does as seen by real
//! clients (kubectl, kube-rs, the Python client), checked against transcripts
//! recorded from a real server (`tests/fixtures/transcripts`).

#![warn(unreachable_pub, missing_docs)]

// Every module is private: the public face is the re-exports below. The
// crate's own test modules reach the internals directly; its integration
// tests reach the admission internals through the `testing` feature.
// Items are `pub(crate)` unless the crate's face re-exports them; those of
// `admission` and `user` that only the `testing` face re-exports are `pub`,
// which without the feature nothing outside reaches.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
mod admission;
mod api;
mod app;
mod authn;
mod authz;
mod bootstrap;
mod bootstrap_policy;
mod builtin;
mod component_statuses;
mod controller_selection;
mod controllers;
mod conversion;
mod duration;
mod error;
mod faults;
mod field_selectors;
mod gofmt;
mod gojson;
mod http;
mod jsonpath;
mod memory;
mod meta;
mod metrics;
mod name_rules;
mod node_status;
mod patch;
mod pki;
mod pod_streams;
mod quantity;
mod registry;
mod request;
mod schema;
mod selectors;
mod server;
mod serving;
mod store;
mod table;
mod tokens;
mod typeinfo;
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
mod user;
mod version;
mod workloads;

pub use admission::WebhookRoute;
pub use builtin::{KindInfo as BuiltinKind, kinds as builtin_kinds};
pub use controller_selection::{Controller, Controllers};
pub use error::{ApiError, ApiResult, Cause};
pub use faults::{FaultSpec, SpecError as FaultSpecError};
pub use server::{
    Config, DEFAULT_NAMESPACE_DELETION_GRACE, DEFAULT_REQUEST_TIMEOUT, Envtest, Serving,
};
pub use workloads::{NodeSpec, NodeTaint, Simulation, Taint, Timing};

/// The admission internals, for this crate's integration tests (which call
/// webhooks without a server in between). Not part of the stable face.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::admission::{
        AdmissionAttributes, ClusterView, GroupVersionKind, GroupVersionResource, Operation,
        WebhookRegistry, WebhookRoute, WebhookRoutes,
    };
}
