//! `kubectl get` columns of the kinds about the control plane itself:
//! ComponentStatuses, CertificateSigningRequests, APIServices and the
//! priority-and-fairness FlowSchemas and PriorityLevelConfigurations, as
//! kube-apiserver's printers (and the aggregator's, for APIServices) make them.

use serde_json::{Value, json};

use super::column::{AGE, Column, NAME};
use crate::builtin::KindInfo;
use crate::duration::human_duration;

const fn string(name: &'static str, description: &'static str) -> Column {
    (name, "string", "", 0, description)
}

pub(super) fn columns(kind: &KindInfo) -> Option<Vec<Column>> {
    Some(match (kind.group, kind.kind) {
        ("", "ComponentStatus") => vec![
            NAME,
            string("Status", "Status of the component conditions"),
            string("Message", "Message of the component conditions"),
            string("Error", "Error of the component conditions"),
        ],
        ("certificates.k8s.io", "CertificateSigningRequest") => vec![
            NAME,
            AGE,
            string("SignerName", "signerName indicates the requested signer."),
            string(
                "Requestor",
                "username contains the name of the user that created the CertificateSigningRequest.",
            ),
            string(
                "RequestedDuration",
                "expirationSeconds is the requested duration of validity of the issued certificate.",
            ),
            string("Condition", "conditions applied to the request."),
        ],
        // The aggregator's own table: no descriptions.
        ("apiregistration.k8s.io", "APIService") => vec![
            ("Name", "string", "name", 0, ""),
            string("Service", ""),
            string("Available", ""),
            string("Age", ""),
        ],
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => vec![
            NAME,
            string(
                "PriorityLevel",
                "`name` is the name of the priority level configuration being referenced Required.",
            ),
            string(
                "MatchingPrecedence",
                "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request.",
            ),
            string(
                "DistinguisherMethod",
                "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema.",
            ),
            AGE,
            string(
                "MissingPL",
                "references a broken or non-existent PriorityLevelConfiguration",
            ),
        ],
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => vec![
            NAME,
            string(
                "Type",
                "`type` indicates whether this priority level is subject to limitation on request execution.",
            ),
            string(
                "NominalConcurrencyShares",
                "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level.",
            ),
            string(
                "Queues",
                "`queues` is the number of queues for this priority level.",
            ),
            string(
                "HandSize",
                "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.",
            ),
            string(
                "QueueLengthLimit",
                "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time.",
            ),
            AGE,
        ],
        _ => return None,
    })
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .or_else(|| obj.get("conditions"))
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `Pending`, `Approved` or `Denied`, then `,Failed` and `,Issued`.
fn csr_condition(csr: &Value) -> String {
    let has = |t: &str| condition(csr, t).is_some();
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(csr, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

fn or_none(value: Option<&Value>) -> Value {
    value
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or_else(|| json!("<none>"))
}

/// The cells after what [`columns`] names, given the object's name and age.
pub(super) fn row(kind: &KindInfo, obj: &Value, name: Value, age: Value) -> Option<Vec<Value>> {
    Some(match (kind.group, kind.kind) {
        ("", "ComponentStatus") => {
            let (status, message, error) = match condition(obj, "Healthy") {
                Some(c) => (
                    if text(c, "/status") == "True" {
                        "Healthy"
                    } else {
                        "Unhealthy"
                    },
                    text(c, "/message"),
                    text(c, "/error"),
                ),
                None => ("Unknown", "", ""),
            };
            vec![name, json!(status), json!(message), json!(error)]
        }
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            let signer = match text(obj, "/spec/signerName") {
                "" => "<none>",
                s => s,
            };
            let duration = match obj
                .pointer("/spec/expirationSeconds")
                .and_then(Value::as_i64)
            {
                Some(seconds) => human_duration(seconds),
                None => "<none>".into(),
            };
            vec![
                name,
                age,
                json!(signer),
                json!(text(obj, "/spec/username")),
                json!(duration),
                json!(csr_condition(obj)),
            ]
        }
        ("apiregistration.k8s.io", "APIService") => {
            let service = match obj.pointer("/spec/service").filter(|s| !s.is_null()) {
                Some(s) => format!("{}/{}", text(s, "/namespace"), text(s, "/name")),
                None => "Local".into(),
            };
            let available = match condition(obj, "Available") {
                Some(c) if text(c, "/status") == "True" => "True".to_string(),
                Some(c) if !text(c, "/reason").is_empty() => {
                    format!("{} ({})", text(c, "/status"), text(c, "/reason"))
                }
                Some(c) => text(c, "/status").to_string(),
                None => "Unknown".into(),
            };
            vec![name, json!(service), json!(available), age]
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => {
            let method = match text(obj, "/spec/distinguisherMethod/type") {
                "" => "<none>",
                m => m,
            };
            let missing = condition(obj, "Dangling").map_or("?", |c| text(c, "/status"));
            vec![
                name,
                json!(text(obj, "/spec/priorityLevelConfiguration/name")),
                or_none(obj.pointer("/spec/matchingPrecedence")),
                json!(method),
                age,
                json!(missing),
            ]
        }
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            let limited = obj.pointer("/spec/limited").filter(|l| !l.is_null());
            let at = |pointer: &str| or_none(limited.and_then(|l| l.pointer(pointer)));
            vec![
                name,
                json!(text(obj, "/spec/type")),
                at("/nominalConcurrencyShares"),
                at("/limitResponse/queuing/queues"),
                at("/limitResponse/queuing/handSize"),
                at("/limitResponse/queuing/queueLengthLimit"),
                age,
            ]
        }
        _ => return None,
    })
}

/// The order rows are printed in: FlowSchemas by matching precedence, then name.
pub(crate) fn sort_for_printing(group: &str, plural: &str, objects: &mut [std::sync::Arc<Value>]) {
    if (group, plural) == ("flowcontrol.apiserver.k8s.io", "flowschemas") {
        objects.sort_by(|a, b| {
            let precedence = |o: &Value| {
                o.pointer("/spec/matchingPrecedence")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            precedence(a)
                .cmp(&precedence(b))
                .then_with(|| crate::meta::name(a).cmp(crate::meta::name(b)))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_of(group: &str, plural: &str, obj: Value) -> Vec<Value> {
        let kind = crate::builtin::find(group, plural).expect("a served kind");
        row(kind, &obj, json!("n"), json!("1s")).expect("a row")
    }

    #[test]
    fn certificate_requests_show_their_condition_and_issuance() {
        let csr = json!({"spec": {"signerName": "example.com/x", "username": "admin", "expirationSeconds": 3600},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}});
        assert_eq!(
            row_of("certificates.k8s.io", "certificatesigningrequests", csr),
            [
                json!("n"),
                json!("1s"),
                json!("example.com/x"),
                json!("admin"),
                json!("60m"),
                json!("Approved,Issued")
            ]
        );
        let pending = json!({"spec": {}});
        assert_eq!(
            row_of("certificates.k8s.io", "certificatesigningrequests", pending)[5],
            "Pending"
        );
    }

    #[test]
    fn api_services_flow_schemas_and_priority_levels() {
        let local = json!({"spec": {}, "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(
            row_of("apiregistration.k8s.io", "apiservices", local)[1..3],
            [json!("Local"), json!("True")]
        );
        let remote = json!({"spec": {"service": {"namespace": "ns", "name": "api"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound"}]}});
        assert_eq!(
            row_of("apiregistration.k8s.io", "apiservices", remote)[1..3],
            [json!("ns/api"), json!("False (ServiceNotFound)")]
        );
        let fs = json!({"spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(
            row_of("flowcontrol.apiserver.k8s.io", "flowschemas", fs),
            [
                json!("n"),
                json!("exempt"),
                json!(1),
                json!("<none>"),
                json!("1s"),
                json!("False")
            ]
        );
        let exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(
            row_of(
                "flowcontrol.apiserver.k8s.io",
                "prioritylevelconfigurations",
                exempt
            )[1..6],
            [
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }
}
