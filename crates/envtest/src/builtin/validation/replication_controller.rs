//! `ValidateReplicationControllerSpec`: a ReplicationController's selector is
//! a plain label map that must select its template, whose Pods always restart.

use serde_json::Value;

use super::go_syntax::{self, invalid_raw};
use super::pod;
use super::workloads::{nonnegative, pods_always_restart};
use crate::error::Cause;

pub(super) fn validate(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    nonnegative(spec, "minReadySeconds", "spec.minReadySeconds", &mut causes);
    let selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty());
    if selector.is_none() {
        causes.push(Cause::required("spec.selector", ""));
    }
    nonnegative(spec, "replicas", "spec.replicas", &mut causes);
    let Some(template) = spec.get("template").filter(|t| !t.is_null()) else {
        causes.push(Cause::required("spec.template", ""));
        return causes;
    };
    let labels = template.pointer("/metadata/labels");
    if let Some(selector) = selector {
        let selects = selector.iter().all(|(key, value)| {
            labels.and_then(|l| l.get(key)).and_then(Value::as_str) == value.as_str()
        });
        if !selects {
            causes.push(invalid_raw(
                "spec.template.metadata.labels",
                &go_syntax::string_map(labels),
                "selector does not match labels in spec.template",
            ));
        }
    }
    causes.extend(pod::template(Some(template), "spec.template"));
    causes.extend(pods_always_restart(spec, "ReplicationController"));
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rc(selector: Value, labels: Value, restart: &str) -> Value {
        json!({"spec": {"replicas": 1, "selector": selector, "template": {
            "metadata": {"labels": labels},
            "spec": {"restartPolicy": restart, "dnsPolicy": "ClusterFirst",
                "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                    "terminationMessagePolicy": "File"}]},
        }}})
    }

    #[test]
    fn the_selector_must_select_the_template_and_pods_always_restart() {
        let good = rc(json!({"app": "a"}), json!({"app": "a", "x": "y"}), "Always");
        assert_eq!(validate(&good), Vec::<Cause>::new());
        let causes = validate(&rc(json!({"app": "b"}), json!({"app": "a"}), "Never"));
        let summaries: Vec<String> = causes.iter().map(Cause::summary).collect();
        assert_eq!(
            summaries,
            [
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: selector does not match labels in spec.template",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ]
        );
        let causes = validate(&json!({"spec": {"replicas": -1}}));
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.selector", "spec.replicas", "spec.template"]);
    }
}
