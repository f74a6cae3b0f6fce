//! Rules kube-apiserver v1.32 applies to requests that the recorded
//! transcripts show only in part, through real clients (kube-rs, kubectl):
//! custom resources (names, generateName, apiVersion and kind, deprecated
//! versions, a terminating CRD), validation ratcheting, and input at the
//! edges (DeleteOptions bodies, Content-Type bytes, patches of apiVersion
//! and kind, empty selector value lists).
//!
//! All tests share one server; each works in its own namespace, and
//! cluster-scoped objects carry the test's name.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

#[allow(dead_code)]
#[path = "cluster/common.rs"]
mod common;
#[path = "request_rules/custom_resources.rs"]
mod custom_resources;
#[path = "request_rules/json_patch.rs"]
mod json_patch;
#[path = "request_rules/query_parameters.rs"]
mod query_parameters;
#[path = "request_rules/ratcheting.rs"]
mod ratcheting;
#[path = "request_rules/size_limits.rs"]
mod size_limits;
#[path = "request_rules/strict_input.rs"]
mod strict_input;
