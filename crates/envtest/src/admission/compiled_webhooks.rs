//! Webhook configurations compiled once, when they change, into the form the
//! dispatcher walks on every request.
//!
//! Fields missing from a stored configuration take the `admissionregistration.k8s.io/v1`
//! defaults (kube-apiserver defaults them on write, so it never sees them absent):
//! `failurePolicy: Fail`, empty selectors,
//! `timeoutSeconds: 10`, `reinvocationPolicy: Never`, rule `scope: "*"`,
//! service `port: 443`, `matchPolicy: Equivalent`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::conditions::MatchConditions;
use super::transport::ClientSpec;
use crate::selectors::LabelSelector;

/// Default `timeoutSeconds` of the v1 API.
pub(crate) const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// Largest `timeoutSeconds` the v1 API accepts.
pub(crate) const MAX_TIMEOUT_SECONDS: u64 = 30;

/// Which dispatcher a webhook belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookType {
    Mutating,
    Validating,
}

/// `rules[].scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    All,
    Cluster,
    Namespaced,
    /// An unknown value matches nothing, as in kube-apiserver.
    Unknown,
}

/// One `RuleWithOperations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub scope: Scope,
}

/// One webhook of a configuration, ready to match and call.
#[derive(Debug)]
pub(crate) struct Webhook {
    /// `<configuration>/<webhook>/<index>`: identifies the webhook across reinvocation.
    pub uid: String,
    pub name: String,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// `matchPolicy: Equivalent`: a request on another version of the same
    /// resource is sent, converted, to a webhook whose rules name one.
    pub match_equivalent: bool,
    pub namespace_selector: Result<LabelSelector, String>,
    pub object_selector: Result<LabelSelector, String>,
    pub side_effects: Option<String>,
    pub timeout: Duration,
    pub review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks only).
    pub reinvoke_if_needed: bool,
    pub conditions: MatchConditions,
    pub client: ClientSpec,
}

/// The compiled webhooks of one kind, configurations sorted by name and
/// webhooks in list order (the order kube-apiserver calls them in).
#[derive(Debug, Default)]
pub(crate) struct HookSet {
    pub hooks: Vec<Arc<Webhook>>,
}

impl HookSet {
    pub(crate) fn compile(configurations: &[Value], hook_type: HookType) -> HookSet {
        let mut named: Vec<(&str, &Value)> = configurations
            .iter()
            .map(|c| {
                let name = c
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                (name, c)
            })
            .collect();
        named.sort_by(|a, b| a.0.cmp(b.0));
        let mut hooks = Vec::new();
        for (config_name, config) in named {
            let Some(list) = config.get("webhooks").and_then(Value::as_array) else {
                continue;
            };
            for (index, hook) in list.iter().enumerate() {
                if hook.is_object() {
                    hooks.push(Arc::new(compile_webhook(
                        config_name,
                        index,
                        hook,
                        hook_type,
                    )));
                }
            }
        }
        HookSet { hooks }
    }
}

pub(crate) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn compile_rule(rule: &Value) -> Rule {
    let scope = match rule.get("scope").and_then(Value::as_str) {
        None | Some("*") => Scope::All,
        Some("Cluster") => Scope::Cluster,
        Some("Namespaced") => Scope::Namespaced,
        Some(_) => Scope::Unknown,
    };
    Rule {
        operations: strings(rule.get("operations")),
        api_groups: strings(rule.get("apiGroups")),
        api_versions: strings(rule.get("apiVersions")),
        resources: strings(rule.get("resources")),
        scope,
    }
}

fn compile_webhook(config_name: &str, index: usize, hook: &Value, hook_type: HookType) -> Webhook {
    let name = hook
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let text = |field: &str| hook.get(field).and_then(Value::as_str);
    let timeout_seconds = hook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .filter(|t| *t > 0)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        // The API allows 1 to 30 seconds; an unvalidated stored value is kept in that range.
        .min(MAX_TIMEOUT_SECONDS);
    Webhook {
        uid: format!("{config_name}/{name}/{index}"),
        rules: hook
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(compile_rule).collect())
            .unwrap_or_default(),
        ignore_failures: text("failurePolicy") == Some("Ignore"),
        match_equivalent: text("matchPolicy") != Some("Exact"),
        namespace_selector: LabelSelector::from_object(hook.get("namespaceSelector")),
        object_selector: LabelSelector::from_object(hook.get("objectSelector")),
        side_effects: text("sideEffects").map(str::to_string),
        timeout: Duration::from_secs(timeout_seconds),
        review_versions: strings(hook.get("admissionReviewVersions")),
        reinvoke_if_needed: hook_type == HookType::Mutating
            && text("reinvocationPolicy") == Some("IfNeeded"),
        conditions: MatchConditions::compile(hook.get("matchConditions")),
        client: ClientSpec::compile(&name, hook.get("clientConfig")),
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configurations_sorted_by_name_webhooks_in_list_order() {
        let set = HookSet::compile(
            &[
                json!({"metadata": {"name": "b"}, "webhooks": [{"name": "b1"}, {"name": "b2"}]}),
                json!({"metadata": {"name": "a"}, "webhooks": [{"name": "a1"}]}),
                json!({"metadata": {"name": "c"}}),
                json!("not an object"),
            ],
            HookType::Mutating,
        );
        let uids: Vec<_> = set.hooks.iter().map(|h| h.uid.as_str()).collect();
        assert_eq!(uids, ["a/a1/0", "b/b1/0", "b/b2/1"]);
    }

    #[test]
    fn v1_defaults_apply_to_missing_fields() {
        let set = HookSet::compile(
            &[json!({"metadata": {"name": "a"}, "webhooks": [{"name": "w", "rules": [{}]}]})],
            HookType::Mutating,
        );
        let hook = &set.hooks[0];
        assert!(!hook.ignore_failures);
        assert!(hook.match_equivalent);
        assert!(!hook.reinvoke_if_needed);
        assert_eq!(hook.timeout, Duration::from_secs(10));
        assert_eq!(hook.rules[0].scope, Scope::All);
        assert!(hook.namespace_selector.as_ref().unwrap().is_empty());
    }

    #[test]
    fn validating_webhooks_never_reinvoke() {
        let set = HookSet::compile(
            &[
                json!({"metadata": {"name": "a"}, "webhooks": [{"name": "w", "reinvocationPolicy": "IfNeeded"}]}),
            ],
            HookType::Validating,
        );
        assert!(!set.hooks[0].reinvoke_if_needed);
    }
}
