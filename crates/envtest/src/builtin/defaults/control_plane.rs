//! Defaults of APIServices (kube-aggregator's) and of the API Priority and
//! Fairness kinds (`pkg/apis/flowcontrol/v1/defaults.go`).

use serde_json::{Value, json};

use crate::builtin::KindInfo;
use crate::builtin::shape::default_value;

pub(super) fn apply(kind: &KindInfo, obj: &mut Value) {
    match (kind.group, kind.kind) {
        ("apiregistration.k8s.io", "APIService") => {
            if let Some(service) = obj
                .pointer_mut("/spec/service")
                .and_then(Value::as_object_mut)
            {
                default_value(service, "port", json!(443));
            }
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
                && spec
                    .get("matchingPrecedence")
                    .is_none_or(|p| p.is_null() || p == 0)
            {
                spec.insert("matchingPrecedence".into(), json!(1000));
            }
        }
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            if let Some(exempt) = obj
                .pointer_mut("/spec/exempt")
                .and_then(Value::as_object_mut)
            {
                default_value(exempt, "nominalConcurrencyShares", json!(0));
                default_value(exempt, "lendablePercent", json!(0));
            }
            if let Some(limited) = obj
                .pointer_mut("/spec/limited")
                .and_then(Value::as_object_mut)
            {
                default_value(limited, "nominalConcurrencyShares", json!(30));
                default_value(limited, "lendablePercent", json!(0));
            }
            if let Some(queuing) = obj
                .pointer_mut("/spec/limited/limitResponse/queuing")
                .and_then(Value::as_object_mut)
            {
                for (key, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                    if queuing.get(key).is_none_or(|v| v.is_null() || v == 0) {
                        queuing.insert(key.into(), json!(value));
                    }
                }
            }
        }
        _ => {}
    }
}
