//! The workload simulation through real clients (kubectl and kube-rs):
//! simulated Nodes with heartbeats, the scheduler's filters and its
//! Unschedulable reports, the kubelet's Pod lifecycle (init containers,
//! readiness, crash loops, image-pull failures, graceful deletion, the logs
//! it reports), the Deployment, ReplicaSet, ReplicationController and Job
//! controllers (`kubectl rollout status`, `kubectl wait --for=condition=...`)
//! the Endpoints and EndpointSlices of Services, PersistentVolume binding
//! StatefulSets, DaemonSets, CronJobs and HorizontalPodAutoscalers, Nodes that
//! fail (taint eviction, Pod garbage collection), and `kubectl get`'s columns for
//! claims, volumes, StorageClasses and EndpointSlices.
//!
//! All tests share one server with two Nodes, the second tainted
//! `dedicated=gpu:NoSchedule`; each test works in its own namespace.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

#[path = "workloads/autoscalers.rs"]
mod autoscalers;
#[path = "workloads/common.rs"]
mod common;
#[path = "workloads/controllers.rs"]
mod controllers;
#[path = "workloads/cronjobs.rs"]
mod cronjobs;
#[path = "workloads/daemonsets.rs"]
mod daemonsets;
#[path = "workloads/logs.rs"]
mod logs;
#[path = "workloads/node_failures.rs"]
mod node_failures;
#[path = "workloads/pods.rs"]
mod pods;
#[path = "workloads/replication.rs"]
mod replication;
#[path = "workloads/services.rs"]
mod services;
#[path = "workloads/statefulsets.rs"]
mod statefulsets;
#[path = "workloads/tables.rs"]
mod tables;
#[path = "workloads/volumes.rs"]
mod volumes;
