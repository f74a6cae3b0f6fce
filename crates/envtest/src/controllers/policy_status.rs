//! kube-controller-manager's ValidatingAdmissionPolicy status controller:
//! after each change of a policy's spec it records the generation it
//! checked in `status.observedGeneration` with the outcome of type checking
//! in `status.typeChecking`. envtest does not type-check (the `cel` crate
//! has no checker), so `typeChecking` has no `expressionWarnings`; clients
//! that wait for the status to catch up with the generation still can.

use serde_json::{Value, json};

use super::{modify_without_admission, resource_for};
use crate::app::App;
use crate::meta;
use crate::store::Event;

pub(super) const KEY: &str = "admissionregistration.k8s.io/validatingadmissionpolicies";
/// The field manager of the real controller.
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

pub(super) fn concerns(ev: &Event) -> bool {
    &*ev.resource == KEY
}

/// Brings the status of every policy whose generation it has not observed up to date.
pub(super) fn sync(app: &App) {
    let Some(res) = resource_for(app, KEY) else {
        return;
    };
    let (policies, _) = app.store.list(&res.store_key, None, None);
    for (_, policy) in policies {
        let generation = meta::generation(&policy);
        if observed(&policy) == Some(generation) {
            continue;
        }
        let _ = modify_without_admission(
            app,
            &res,
            "",
            meta::name(&policy),
            Some("status"),
            MANAGER,
            |obj| {
                let generation = meta::generation(obj);
                if observed(obj) == Some(generation) {
                    return false;
                }
                let status = obj
                    .as_object_mut()
                    .map(|o| o.entry("status").or_insert_with(|| json!({})));
                if let Some(Value::Object(status)) = status {
                    status.insert("observedGeneration".into(), json!(generation));
                    status.insert("typeChecking".into(), json!({}));
                }
                true
            },
        );
    }
}

fn observed(policy: &Value) -> Option<i64> {
    policy
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
}
