//! Label selectors of built-in kinds: `ValidateLabelSelector`, whether one
//! selects a label set (matched by `crate::selectors`), and its Go rendering.

use serde_json::Value;

use super::meta::labels;
use crate::error::Cause;
use crate::name_rules::{is_qualified_name, is_valid_label_value};
use crate::selectors::LabelSelector;

/// `ValidateLabelSelector` (nothing for an absent selector).
pub(crate) fn validate(selector: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return causes;
    };
    causes.extend(labels(
        selector.get("matchLabels"),
        &format!("{field}.matchLabels"),
    ));
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, expr) in expressions.into_iter().flatten().enumerate() {
        let path = format!("{field}.matchExpressions[{i}]");
        let operator = expr.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = expr
            .get("values")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match operator {
            "In" | "NotIn" => {
                if values == 0 {
                    causes.push(Cause::required(
                        format!("{path}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if values > 0 {
                    causes.push(Cause::forbidden(
                        format!("{path}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            _ => causes.push(Cause::invalid(
                format!("{path}.operator"),
                &Value::String(operator.to_string()),
                "not a valid selector operator",
            )),
        }
        let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in is_qualified_name(key) {
            causes.push(Cause::invalid(
                format!("{path}.key"),
                &Value::String(key.to_string()),
                &msg,
            ));
        }
        // Values are held to label-value rules
        // (`AllowInvalidLabelValueInSelector` is false for new objects).
        let values = expr.get("values").and_then(Value::as_array);
        for (vi, value) in values.into_iter().flatten().enumerate() {
            let value = value.as_str().unwrap_or("");
            for msg in is_valid_label_value(value) {
                causes.push(Cause::invalid(
                    format!("{path}.values[{vi}]"),
                    &Value::String(value.to_string()),
                    &msg,
                ));
            }
        }
    }
    causes
}

/// How a selector compares with a label set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selects {
    /// No selector: `LabelSelectorAsSelector(nil)` selects nothing.
    Nothing,
    /// An empty selector selects everything.
    Everything,
    Matches(bool),
    /// The selector cannot be converted (bad operator or values).
    Invalid,
}

/// `LabelSelectorAsSelector(selector).Matches(labels)`.
pub(crate) fn selects(selector: Option<&Value>, labels: Option<&Value>) -> Selects {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return Selects::Nothing;
    };
    if !convertible(selector) {
        return Selects::Invalid;
    }
    match LabelSelector::from_object(Some(selector)) {
        Err(_) => Selects::Invalid,
        Ok(selector) if selector.is_empty() => Selects::Everything,
        Ok(selector) => Selects::Matches(selector.matches(labels.and_then(Value::as_object))),
    }
}

/// Whether `LabelSelectorAsSelector` accepts the selector: `NewRequirement`
/// holds every key to qualified-name rules and every value to label-value
/// rules, besides the operators and value counts.
fn convertible(selector: &Value) -> bool {
    let valid_key = |k: &str| is_qualified_name(k).is_empty();
    let valid_value = |v: &str| is_valid_label_value(v).is_empty();
    let labels_ok = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| valid_key(k) && valid_value(v.as_str().unwrap_or("")));
    let expressions_ok = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            valid_key(e.get("key").and_then(Value::as_str).unwrap_or(""))
                && e.get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .all(|v| valid_value(v.as_str().unwrap_or("")))
        });
    labels_ok && expressions_ok
}

/// The rendering of a `*metav1.LabelSelector` in messages.
pub(crate) fn go_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return "null".to_string();
    };
    let match_labels = super::go_syntax::string_map(selector.get("matchLabels"));
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(|items| {
            let body: Vec<String> = items
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{}}}",
                        e.get("key").and_then(Value::as_str).unwrap_or(""),
                        e.get("operator").and_then(Value::as_str).unwrap_or(""),
                        super::go_syntax::string_slice(
                            super::go_syntax::strings(e.get("values")).as_deref()
                        )
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", body.join(", "))
        })
        .unwrap_or_else(|| "[]v1.LabelSelectorRequirement(nil)".to_string());
    format!("v1.LabelSelector{{MatchLabels:{match_labels}, MatchExpressions:{expressions}}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matching() {
        let labels = json!({"app": "web", "tier": "fe"});
        assert_eq!(
            selects(Some(&json!({"matchLabels": {"app": "web"}})), Some(&labels)),
            Selects::Matches(true)
        );
        assert_eq!(
            selects(
                Some(
                    &json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["fe"]}]})
                ),
                Some(&labels)
            ),
            Selects::Matches(false)
        );
        assert_eq!(selects(None, Some(&labels)), Selects::Nothing);
        assert_eq!(
            selects(Some(&json!({})), Some(&labels)),
            Selects::Everything
        );
        assert_eq!(
            selects(
                Some(&json!({"matchExpressions": [{"key": "a", "operator": "Bad"}]})),
                Some(&labels)
            ),
            Selects::Invalid
        );
    }
}
