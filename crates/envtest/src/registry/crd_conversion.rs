//! A CRD's `spec.conversion` as the registry keeps it: no conversion, or
//! the webhook that converts its objects (which `conversion/` calls).

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::admission::ClientSpec;

/// A CRD's `spec.conversion.strategy`.
#[derive(Debug, Clone, Default)]
pub(crate) enum Strategy {
    #[default]
    None,
    Webhook(Arc<Webhook>),
}

/// A CRD's conversion webhook, its client built on first use.
#[derive(Debug)]
pub(crate) struct Webhook {
    pub(crate) crd_name: String,
    pub(crate) client_config: Value,
    pub(crate) review_versions: Vec<String>,
    /// Compiled on the first call.
    pub(crate) client: OnceLock<ClientSpec>,
}

impl Strategy {
    /// Reads `spec.conversion` of a stored CRD.
    pub(crate) fn from_spec(crd_name: &str, spec: &Value) -> Strategy {
        let Some(conversion) = spec.get("conversion") else {
            return Strategy::None;
        };
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return Strategy::None;
        }
        let webhook = conversion.get("webhook").cloned().unwrap_or(Value::Null);
        Strategy::Webhook(Arc::new(Webhook {
            crd_name: crd_name.to_string(),
            client_config: webhook.get("clientConfig").cloned().unwrap_or(Value::Null),
            review_versions: webhook
                .get("conversionReviewVersions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            client: OnceLock::new(),
        }))
    }

    pub(crate) fn webhook(&self) -> Option<&Arc<Webhook>> {
        match self {
            Strategy::None => None,
            Strategy::Webhook(w) => Some(w),
        }
    }
}
