//! What a kube-apiserver v1.32 cluster has and does beyond plain storage,
//! through real clients (kubectl and kube-rs): the objects it starts with,
//! RBAC as the real server guards it (bootstrap policy, aggregation,
//! escalation checks), the garbage collector's judgement of owner references.
//!
//! All tests share one server; each works in its own namespace, and
//! cluster-scoped objects carry the test's name.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

#[path = "cluster/common.rs"]
mod common;
#[path = "cluster/gc.rs"]
mod gc;
#[path = "cluster/rbac.rs"]
mod rbac;
#[path = "cluster/subresources.rs"]
mod subresources;
