//! Field selectors as kube-apiserver v1.32 takes them: which field labels
//! each kind accepts (its field-label conversion), the 400 a label it does
//! not accept gets, and the value each field has in an object — including
//! objects where the field is absent, which select as the Go zero value
//! (`spec.unschedulable=false` selects a Node that never set it).

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// `a=b`, `a==b`, `a!=b` terms of a field selector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    field: String,
    equals: bool,
    value: String,
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if escaped {
        cur.push('\\');
    }
    parts.push(cur);
    parts
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped || c != '\\' {
            out.push(c);
            escaped = false;
        } else {
            escaped = true;
        }
    }
    out
}

impl FieldSelector {
    pub(crate) fn parse(input: &str) -> ApiResult<FieldSelector> {
        let mut terms = Vec::new();
        if input.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in split_unescaped(input, ',') {
            let parsed = if let Some((k, v)) = part.split_once("!=") {
                Some((k, false, v))
            } else if let Some((k, v)) = part.split_once("==") {
                Some((k, true, v))
            } else {
                part.split_once('=').map(|(k, v)| (k, true, v))
            };
            match parsed {
                Some((k, equals, v)) => terms.push(Term {
                    field: k.trim().to_string(),
                    equals,
                    value: unescape(v),
                }),
                None => {
                    return Err(ApiError::bad_request(format!(
                        "invalid selector: '{input}'; can't understand '{part}'"
                    )));
                }
            }
        }
        Ok(FieldSelector { terms })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// `metadata.name=x` (the single-object watch and get shortcut).
    pub(crate) fn required_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == "metadata.name" && t.equals)
            .map(|t| t.value.as_str())
    }

    /// Every label checked against what the resource accepts and renamed
    /// to the field it selects (`spec.host` → `spec.nodeName`); the first
    /// label not accepted is a 400 with kube-apiserver's message.
    pub(crate) fn resolve(self, accepted: &Selectable) -> ApiResult<FieldSelector> {
        let terms = self
            .terms
            .into_iter()
            .map(|t| {
                let field = accepted.field_of(&t.field)?;
                Ok(Term { field, ..t })
            })
            .collect::<ApiResult<_>>()?;
        Ok(FieldSelector { terms })
    }

    pub(crate) fn matches(&self, field_value: impl Fn(&str) -> String) -> bool {
        self.terms
            .iter()
            .all(|t| (field_value(&t.field) == t.value) == t.equals)
    }
}

/// How a resource refuses a label it does not accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Kinds with no field-label conversion of their own (apimachinery's
    /// default: only the two metadata fields, listed in the message).
    MetadataOnly,
    /// Kinds with their own conversion, and custom resources.
    NotSupported,
}

/// The field labels a resource accepts, each with the field it selects.
#[derive(Debug, Clone)]
pub(crate) struct Selectable {
    labels: Vec<(String, String)>,
    refusal: Refusal,
}

impl Selectable {
    fn field_of(&self, label: &str) -> ApiResult<String> {
        if let Some((_, field)) = self.labels.iter().find(|(l, _)| l == label) {
            return Ok(field.clone());
        }
        Err(ApiError::bad_request(match self.refusal {
            Refusal::MetadataOnly => format!(
                "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            ),
            Refusal::NotSupported => format!("field label not supported: {label}"),
        }))
    }

    /// A built-in resource: its kind's own labels, or the metadata default.
    pub(crate) fn builtin(group: &str, plural: &str) -> Selectable {
        match KIND_LABELS
            .iter()
            .find(|(g, p, _)| *g == group && *p == plural)
        {
            Some((_, _, labels)) => Selectable {
                labels: labels
                    .iter()
                    .map(|(label, field)| {
                        let field = if field.is_empty() { label } else { field };
                        (label.to_string(), field.to_string())
                    })
                    .collect(),
                refusal: Refusal::NotSupported,
            },
            None => Selectable {
                labels: ["metadata.name", "metadata.namespace"]
                    .iter()
                    .map(|l| (l.to_string(), l.to_string()))
                    .collect(),
                refusal: Refusal::MetadataOnly,
            },
        }
    }

    /// A custom resource: `metadata.name`, `metadata.namespace` when
    /// namespaced, and the version's `selectableFields`.
    pub(crate) fn custom(namespaced: bool, selectable_fields: &[String]) -> Selectable {
        let mut labels = vec!["metadata.name".to_string()];
        if namespaced {
            labels.push("metadata.namespace".to_string());
        }
        labels.extend(selectable_fields.iter().cloned());
        Selectable {
            labels: labels.into_iter().map(|l| (l.clone(), l)).collect(),
            refusal: Refusal::NotSupported,
        }
    }
}

/// Field labels, each with the field it selects ("" for itself).
type Labels = &'static [(&'static str, &'static str)];

/// The kinds with a field-label conversion of their own in kube-apiserver
/// v1.32, as (group, plural, [(label, field it selects or "" for itself)]).
/// Every other built-in kind takes only `metadata.name` and
/// `metadata.namespace` — apps/v1 ReplicaSets included, whose
/// `status.replicas` the server refuses although its storage could match it.
const KIND_LABELS: &[(&str, &str, Labels)] = &[
    (
        "",
        "pods",
        &[
            ("metadata.name", ""),
            ("metadata.namespace", ""),
            ("spec.nodeName", ""),
            ("spec.restartPolicy", ""),
            ("spec.schedulerName", ""),
            ("spec.serviceAccountName", ""),
            ("spec.hostNetwork", ""),
            ("status.phase", ""),
            ("status.podIP", ""),
            // Accepted, but not in the Pod's field set: it selects as empty.
            ("status.podIPs", ""),
            ("status.nominatedNodeName", ""),
            // Kept for old clients.
            ("spec.host", "spec.nodeName"),
        ],
    ),
    (
        "",
        "nodes",
        &[("metadata.name", ""), ("spec.unschedulable", "")],
    ),
    (
        "",
        "replicationcontrollers",
        &[
            ("metadata.name", ""),
            ("metadata.namespace", ""),
            ("status.replicas", ""),
        ],
    ),
    (
        "",
        "events",
        &[
            ("involvedObject.kind", ""),
            ("involvedObject.namespace", ""),
            ("involvedObject.name", ""),
            ("involvedObject.uid", ""),
            ("involvedObject.apiVersion", ""),
            ("involvedObject.resourceVersion", ""),
            ("involvedObject.fieldPath", ""),
            ("reason", ""),
            ("reportingComponent", ""),
            ("source", ""),
            ("type", ""),
            ("metadata.namespace", ""),
            ("metadata.name", ""),
        ],
    ),
    (
        "",
        "namespaces",
        &[("status.phase", ""), ("metadata.name", "")],
    ),
    (
        "",
        "secrets",
        &[
            ("type", ""),
            ("metadata.namespace", ""),
            ("metadata.name", ""),
        ],
    ),
    (
        "",
        "services",
        &[
            ("metadata.namespace", ""),
            ("metadata.name", ""),
            ("spec.clusterIP", ""),
            ("spec.type", ""),
        ],
    ),
    (
        "batch",
        "jobs",
        &[
            ("metadata.name", ""),
            ("metadata.namespace", ""),
            ("status.successful", ""),
        ],
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &[("metadata.name", ""), ("spec.signerName", "")],
    ),
    (
        // Stored as core Events: its labels name the core fields.
        "events.k8s.io",
        "events",
        &[
            ("reason", ""),
            ("regarding.kind", "involvedObject.kind"),
            ("regarding.namespace", "involvedObject.namespace"),
            ("regarding.name", "involvedObject.name"),
            ("regarding.uid", "involvedObject.uid"),
            ("regarding.apiVersion", "involvedObject.apiVersion"),
            (
                "regarding.resourceVersion",
                "involvedObject.resourceVersion",
            ),
            ("regarding.fieldPath", "involvedObject.fieldPath"),
            ("reportingController", "reportingComponent"),
            ("type", ""),
            ("metadata.namespace", ""),
            ("metadata.name", ""),
        ],
    ),
];

fn scalar_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// `path` of `obj`, or `zero` (the Go zero value the real field set
/// writes) when absent.
fn or_zero(obj: &Value, path: &[&str], zero: &str) -> String {
    match crate::meta::get_path(obj, path) {
        None | Some(Value::Null) => zero.to_string(),
        v => scalar_string(v),
    }
}

/// The value field `field` (already resolved) has in a stored object of
/// `group`/`plural` (Events in their core form).
pub(crate) fn field_value(group: &str, plural: &str, obj: &Value, field: &str) -> String {
    let path: Vec<&str> = field.split('.').collect();
    match (group, plural, field) {
        ("", "pods", "spec.hostNetwork") => or_zero(obj, &path, "false"),
        // The first of the Pod's IPs, as the field set takes it.
        ("", "pods", "status.podIP") => match obj.pointer("/status/podIPs/0/ip") {
            Some(ip) => scalar_string(Some(ip)),
            None => or_zero(obj, &path, ""),
        },
        ("", "pods", "status.podIPs") => String::new(),
        ("", "nodes", "spec.unschedulable") => or_zero(obj, &path, "false"),
        ("", "replicationcontrollers", "status.replicas") => or_zero(obj, &path, "0"),
        ("batch", "jobs", "status.successful") => or_zero(obj, &["status", "succeeded"], "0"),
        // The source component, or the reporting controller of events
        // written through events.k8s.io.
        (_, "events", "source") => {
            let component = or_zero(obj, &["source", "component"], "");
            if component.is_empty() {
                or_zero(obj, &["reportingComponent"], "")
            } else {
                component
            }
        }
        _ => scalar_string(crate::meta::get_path(obj, &path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn select(group: &str, plural: &str, sel: &str, obj: &Value) -> ApiResult<bool> {
        let sel = FieldSelector::parse(sel)?.resolve(&Selectable::builtin(group, plural))?;
        Ok(sel.matches(|f| field_value(group, plural, obj, f)))
    }

    #[test]
    fn kinds_without_their_own_labels_take_only_metadata() {
        let obj = json!({"metadata": {"name": "cm-1"}});
        assert!(select("", "configmaps", "metadata.name!=cm-3", &obj).unwrap());
        assert_eq!(
            select("", "configmaps", "data.n=1", &obj)
                .unwrap_err()
                .message,
            "\"data.n\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let err = select("apps", "replicasets", "status.replicas=0", &obj).unwrap_err();
        assert!(err.message.contains("is not a known field selector"));
    }

    #[test]
    fn kinds_with_their_own_labels_refuse_others_as_not_supported() {
        let node = json!({"metadata": {"name": "n1"}});
        assert_eq!(
            select("", "nodes", "metadata.namespace=x", &node)
                .unwrap_err()
                .message,
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            select("", "pods", "spec.containers=x", &node)
                .unwrap_err()
                .message,
            "field label not supported: spec.containers"
        );
    }

    #[test]
    fn absent_fields_select_as_their_zero_value() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {}});
        assert!(select("", "nodes", "spec.unschedulable=false", &node).unwrap());
        assert!(!select("", "nodes", "spec.unschedulable=true", &node).unwrap());
        let pod = json!({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending"}});
        assert!(select("", "pods", "spec.hostNetwork=false", &pod).unwrap());
        assert!(select("", "pods", "spec.nodeName=", &pod).unwrap());
        assert!(select("", "pods", "spec.host=", &pod).unwrap());
        assert!(select("", "pods", "status.podIPs=", &pod).unwrap());
        let job = json!({"metadata": {"name": "j"}, "status": {}});
        assert!(select("batch", "jobs", "status.successful=0", &job).unwrap());
        let rc = json!({"metadata": {"name": "r"}, "status": {"replicas": 2}});
        assert!(select("", "replicationcontrollers", "status.replicas=2", &rc).unwrap());
    }

    #[test]
    fn events_select_by_source_or_reporting_controller() {
        let ev = json!({"involvedObject": {"name": "cm1"}, "reportingComponent": "ctl"});
        assert!(select("", "events", "source=ctl", &ev).unwrap());
        assert!(select("events.k8s.io", "events", "regarding.name=cm1", &ev).unwrap());
        assert!(select("events.k8s.io", "events", "reportingController=ctl", &ev).unwrap());
        assert_eq!(
            select("events.k8s.io", "events", "source=ctl", &ev)
                .unwrap_err()
                .message,
            "field label not supported: source"
        );
    }

    #[test]
    fn custom_resources_take_their_selectable_fields() {
        let cluster = Selectable::custom(false, &["spec.color".to_string()]);
        let err = FieldSelector::parse("metadata.namespace=x")
            .unwrap()
            .resolve(&cluster)
            .unwrap_err();
        assert_eq!(err.message, "field label not supported: metadata.namespace");
        assert!(
            FieldSelector::parse("spec.color=red")
                .unwrap()
                .resolve(&cluster)
                .is_ok()
        );
    }
}
