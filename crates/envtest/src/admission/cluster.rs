//! What admission needs to know about the rest of the cluster: namespace
//! labels for selectors and Services for routing webhook calls. Its own
//! module so that matching, routing and the transport read it without
//! reading each other.

use std::collections::BTreeMap;

use serde_json::Value;

/// What the dispatcher needs to know about the rest of the cluster. The
/// server implements it over its store; calls must be cheap and must not
/// block on I/O.
pub trait ClusterView: Send + Sync {
    /// The labels of namespace `name`, `None` when there is no such namespace.
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>>;

    /// The stored `Service` `namespace/name`, if any. Used to route webhook
    /// Service references to the Service's `targetPort` on the loopback
    /// interface (see [`super::WebhookRoutes`]).
    fn service(&self, namespace: &str, name: &str) -> Option<Value> {
        let _ = (namespace, name);
        None
    }
}

/// A cluster with no namespaces and no Services (for callers that have none).
#[derive(Debug, Default, Clone, Copy)]
#[cfg(test)]
pub(super) struct EmptyCluster;

#[cfg(test)]
impl ClusterView for EmptyCluster {
    fn namespace_labels(&self, _name: &str) -> Option<BTreeMap<String, String>> {
        None
    }
}
