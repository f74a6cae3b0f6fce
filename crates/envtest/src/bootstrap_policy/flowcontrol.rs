//! kube-apiserver v1.32's API Priority and Fairness configuration
//! (`flowcontrol.yaml`): the mandatory and suggested PriorityLevelConfigurations
//! and FlowSchemas its config producer keeps in every cluster.

use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub(crate) const FLOW_SCHEMAS: &str = "flowschemas";
pub(crate) const PRIORITY_LEVELS: &str = "prioritylevelconfigurations";
/// Marks the objects the producer may put back when they are changed.
pub(crate) const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Configuration {
    priority_levels: Sets<LevelDef>,
    flow_schemas: Sets<SchemaDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sets<T> {
    mandatory: Vec<T>,
    suggested: Vec<T>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelDef {
    name: String,
    spec: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SchemaDef {
    name: String,
    priority_level: String,
    matching_precedence: i64,
    #[serde(default)]
    distinguisher: Option<String>,
    subjects: Vec<String>,
    #[serde(default)]
    everything: bool,
    #[serde(default)]
    resource_rules: Vec<Value>,
    #[serde(default)]
    non_resource_rules: Vec<Value>,
}

/// One object of the configuration.
pub(crate) struct Bootstrapped {
    /// `flowschemas` or `prioritylevelconfigurations`.
    pub plural: &'static str,
    pub mandatory: bool,
    pub body: Value,
}

impl Bootstrapped {
    pub(crate) fn name(&self) -> &str {
        crate::meta::name(&self.body)
    }
}

/// `Group NAME`, `User NAME` or `ServiceAccount NAMESPACE/NAME`.
fn subject(text: &str) -> Value {
    match text.split_once(' ') {
        Some(("Group", name)) => json!({"kind": "Group", "group": {"name": name}}),
        Some(("User", name)) => json!({"kind": "User", "user": {"name": name}}),
        Some(("ServiceAccount", account)) => {
            let (namespace, name) = account.split_once('/').unwrap_or(("", account));
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": name}})
        }
        _ => json!({"kind": text}),
    }
}

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "annotations": {AUTO_UPDATE: "true"}},
        "spec": spec,
    })
}

fn flow_schema(def: SchemaDef) -> Value {
    let mut rule = json!({"subjects": def.subjects.iter().map(|s| subject(s)).collect::<Vec<_>>()});
    let (resource_rules, non_resource_rules) = if def.everything {
        (
            vec![
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}),
            ],
            vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
        )
    } else {
        (def.resource_rules, def.non_resource_rules)
    };
    if !resource_rules.is_empty() {
        rule["resourceRules"] = Value::Array(resource_rules);
    }
    if !non_resource_rules.is_empty() {
        rule["nonResourceRules"] = Value::Array(non_resource_rules);
    }
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": def.priority_level},
        "matchingPrecedence": def.matching_precedence,
        "rules": [rule],
    });
    if let Some(method) = def.distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    object("FlowSchema", &def.name, spec)
}

static CONFIGURATION: LazyLock<Vec<Bootstrapped>> = LazyLock::new(parse);

/// Every object, priority levels first, mandatory before suggested.
pub(crate) fn configuration() -> &'static [Bootstrapped] {
    &CONFIGURATION
}

fn parse() -> Vec<Bootstrapped> {
    // The file is part of the binary and checked by a unit test.
    let config: Configuration = match serde_saphyr::from_str(include_str!("flowcontrol.yaml")) {
        Ok(config) => config,
        Err(e) => unreachable!("flowcontrol.yaml is checked by the unit tests: {e}"),
    };
    let mut out = Vec::new();
    for (defs, mandatory) in [
        (config.priority_levels.mandatory, true),
        (config.priority_levels.suggested, false),
    ] {
        out.extend(defs.into_iter().map(|d| Bootstrapped {
            plural: PRIORITY_LEVELS,
            mandatory,
            body: object("PriorityLevelConfiguration", &d.name, d.spec),
        }));
    }
    for (defs, mandatory) in [
        (config.flow_schemas.mandatory, true),
        (config.flow_schemas.suggested, false),
    ] {
        out.extend(defs.into_iter().map(|d| Bootstrapped {
            plural: FLOW_SCHEMAS,
            mandatory,
            body: flow_schema(d),
        }));
    }
    out
}

/// The fixed spec of a mandatory object that validation holds writes to:
/// the `exempt` and `catch-all` FlowSchemas and the `catch-all` priority
/// level (the `exempt` level's shares may be tuned, as on v1.32).
pub(crate) fn fixed_spec(plural: &str, name: &str) -> Option<Value> {
    if (plural, name) == (PRIORITY_LEVELS, "exempt") {
        return None;
    }
    configuration()
        .iter()
        .find(|b| b.mandatory && b.plural == plural && b.name() == name)
        .and_then(|b| b.body.get("spec").cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_has_v1_32s_objects() {
        let all = configuration();
        let names = |plural: &str, mandatory: bool| -> Vec<String> {
            all.iter()
                .filter(|b| b.plural == plural && b.mandatory == mandatory)
                .map(|b| b.name().to_string())
                .collect()
        };
        assert_eq!(names(PRIORITY_LEVELS, true), ["catch-all", "exempt"]);
        assert_eq!(names(PRIORITY_LEVELS, false).len(), 6);
        assert_eq!(names(FLOW_SCHEMAS, true), ["exempt", "catch-all"]);
        assert_eq!(names(FLOW_SCHEMAS, false).len(), 11);
        let exempt = all
            .iter()
            .find(|b| b.plural == FLOW_SCHEMAS && b.name() == "exempt")
            .unwrap();
        assert_eq!(
            exempt.body["spec"]["rules"][0]["subjects"],
            json!([{"kind": "Group", "group": {"name": "system:masters"}}])
        );
        assert!(exempt.body["spec"].get("distinguisherMethod").is_none());
        let sa = all
            .iter()
            .find(|b| b.name() == "endpoint-controller")
            .unwrap();
        assert_eq!(
            sa.body["spec"]["rules"][0]["subjects"][1],
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "endpoint-controller"}})
        );
        assert!(fixed_spec(PRIORITY_LEVELS, "catch-all").is_some());
        assert!(fixed_spec(PRIORITY_LEVELS, "exempt").is_none());
        assert!(fixed_spec(FLOW_SCHEMAS, "global-default").is_none());
    }
}
