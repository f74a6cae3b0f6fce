//! `metav1.LabelSelector` objects (`namespaceSelector`, `objectSelector`):
//! parsed once when configurations change, matched against label maps.

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a `LabelSelector` object. `null` or absent is the empty selector
    /// (what kube-apiserver defaults both webhook selectors to).
    pub(crate) fn parse(value: Option<&Value>) -> Result<Self, String> {
        let value = match value {
            None | Some(Value::Null) => return Ok(LabelSelector::default()),
            Some(Value::Object(map)) => map,
            Some(other) => return Err(format!("label selector must be an object, got {other}")),
        };
        let mut requirements = Vec::new();
        match value.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, val) in labels {
                    let val = val
                        .as_str()
                        .ok_or_else(|| format!("matchLabels[{key:?}] must be a string"))?;
                    requirements.push(Requirement::Equals(key.clone(), val.to_string()));
                }
            }
            Some(_) => return Err("matchLabels must be an object".to_string()),
        }
        match value.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for expr in exprs {
                    requirements.push(parse_expression(expr)?);
                }
            }
            Some(_) => return Err("matchExpressions must be a list".to_string()),
        }
        Ok(LabelSelector { requirements })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }
}

fn parse_expression(expr: &Value) -> Result<Requirement, String> {
    let key = expr
        .get("key")
        .and_then(Value::as_str)
        .ok_or("matchExpressions entries need a string key")?
        .to_string();
    let operator = expr.get("operator").and_then(Value::as_str).unwrap_or("");
    let values: Vec<String> = match expr.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("values of {key:?} must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("values of {key:?} must be a list")),
    };
    // Messages follow apimachinery's labels.NewRequirement.
    match operator {
        "In" | "NotIn" => {
            if values.is_empty() {
                return Err(format!(
                    "values: Invalid value: []string{{}}: for 'in', 'notin' operators, values set can't be empty (key {key:?})"
                ));
            }
            Ok(if operator == "In" {
                Requirement::In(key, values)
            } else {
                Requirement::NotIn(key, values)
            })
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                return Err(format!(
                    "values: Invalid value: {values:?}: values set must be empty for exists and does not exist (key {key:?})"
                ));
            }
            Ok(if operator == "Exists" {
                Requirement::Exists(key)
            } else {
                Requirement::DoesNotExist(key)
            })
        }
        other => Err(format!("{other:?} is not a valid label selector operator")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn empty_and_absent_selectors_match_everything() {
        for v in [None, Some(&Value::Null), Some(&json!({}))] {
            let s = LabelSelector::parse(v).unwrap();
            assert!(s.is_empty());
            assert!(s.matches(&labels(&[])));
        }
    }

    #[test]
    fn match_labels_and_expressions_are_anded() {
        let s = LabelSelector::parse(Some(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "skip", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
            ]
        })))
        .unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "a")])));
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "b"), ("env", "dev")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "c")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a"), ("skip", "")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[("tier", "a")])));
    }

    #[test]
    fn exists_requires_the_key() {
        let s = LabelSelector::parse(Some(&json!({
            "matchExpressions": [{"key": "k", "operator": "Exists"}]
        })))
        .unwrap();
        assert!(s.matches(&labels(&[("k", "")])));
        assert!(!s.matches(&labels(&[])));
    }

    #[test]
    fn malformed_selectors_are_errors_not_panics() {
        for bad in [
            json!("x"),
            json!({"matchLabels": []}),
            json!({"matchLabels": {"a": 1}}),
            json!({"matchExpressions": [{"key": "k", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]}),
            json!({"matchExpressions": [{"key": "k", "operator": "Foo"}]}),
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            json!({"matchExpressions": {}}),
        ] {
            assert!(LabelSelector::parse(Some(&bad)).is_err(), "{bad}");
        }
    }
}
