//! What admission sees of the cluster, read from the store: the
//! namespaces' labels (for namespace selectors) and Services (to route
//! webhook calls). Built when the server starts, before admission runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::admission::ClusterView;
use crate::meta;
use crate::store::{ResKey, Store};

/// What the webhooks see of the cluster: namespace labels and Services, read
/// from the store (each look-up takes the store lock briefly).
pub(crate) struct StoreView {
    store: Arc<Store>,
    pub(crate) namespaces: ResKey,
    services: ResKey,
}

impl StoreView {
    pub(crate) fn new(store: Arc<Store>) -> StoreView {
        StoreView {
            store,
            namespaces: Arc::from("namespaces"),
            services: Arc::from("services"),
        }
    }
}

impl ClusterView for StoreView {
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let ns = self.store.get(&self.namespaces, "", name)?;
        Some(
            meta::metadata(&ns)
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object)
                .map(|labels| {
                    labels
                        .iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default(),
        )
    }

    fn service(&self, namespace: &str, name: &str) -> Option<Value> {
        self.store
            .get(&self.services, namespace, name)
            .map(|s| (*s).clone())
    }
}
