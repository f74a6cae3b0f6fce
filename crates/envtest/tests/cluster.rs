//! What a kube-apiserver v1.32 cluster has and does beyond plain storage,
//! through real clients (kubectl and kube-rs): the objects it starts with,
//! RBAC as the real server guards it (bootstrap policy, aggregation,
//! escalation checks), the garbage collector's judgement of owner references,
//! the API groups beyond the core ones, the default admission plugins and
//! PodDisruptionBudgets honoured by evictions.
//!
//! All tests share one server; each works in its own namespace, and
//! cluster-scoped objects carry the test's name.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

#[path = "cluster/api_groups.rs"]
mod api_groups;
#[path = "cluster/budgets.rs"]
mod budgets;
#[path = "cluster/common.rs"]
mod common;
#[path = "cluster/gc.rs"]
mod gc;
#[path = "cluster/plugins.rs"]
mod plugins;
#[path = "cluster/pod_subresources.rs"]
mod pod_subresources;
#[path = "cluster/quota_and_storage.rs"]
mod quota_and_storage;
#[path = "cluster/rbac.rs"]
mod rbac;
#[path = "cluster/start_objects.rs"]
mod start_objects;
#[path = "cluster/strategies.rs"]
mod strategies;
#[path = "cluster/subresources.rs"]
mod subresources;
