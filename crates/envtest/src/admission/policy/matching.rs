//! Which requests a policy's `matchConstraints` and a binding's
//! `matchResources` select (kube-apiserver's `policy/matching`): the
//! namespace and object selectors, `excludeResourceRules`, then
//! `resourceRules` with their `resourceNames`, under `matchPolicy:
//! Equivalent` also on the other versions of the resource. The selectors and
//! rules are the webhooks' (`crate::admission::webhook_matching`).

use serde_json::Value;

use crate::admission::attributes::AdmissionAttributes;
use crate::admission::cluster::ClusterView;
use crate::admission::compiled_webhooks::{Rule, compile_rule, strings};
use crate::admission::webhook_matching::{
    Invocation, match_namespace, match_object, rule_matches_resource,
};
use crate::error::ApiResult;
use crate::selectors::LabelSelector;

/// A `NamedRuleWithOperations`.
#[derive(Debug)]
struct NamedRule {
    rule: Rule,
    /// `resourceNames`: empty matches every name.
    names: Vec<String>,
}

impl NamedRule {
    fn compile(value: &Value) -> NamedRule {
        NamedRule {
            rule: compile_rule(value),
            names: strings(value.get("resourceNames")),
        }
    }
}

/// Compiled `MatchResources`.
#[derive(Debug)]
pub(super) struct MatchResources {
    namespace_selector: Result<LabelSelector, String>,
    object_selector: Result<LabelSelector, String>,
    /// `None` when absent: a binding then selects all the policy selects.
    resource_rules: Option<Vec<NamedRule>>,
    exclude: Vec<NamedRule>,
    match_equivalent: bool,
}

impl MatchResources {
    pub(super) fn compile(value: Option<&Value>) -> MatchResources {
        let empty = Value::Null;
        let value = value.unwrap_or(&empty);
        let rules = |field: &str| {
            value
                .get(field)
                .and_then(Value::as_array)
                .map(|rules| rules.iter().map(NamedRule::compile).collect::<Vec<_>>())
        };
        MatchResources {
            namespace_selector: LabelSelector::from_object(value.get("namespaceSelector")),
            object_selector: LabelSelector::from_object(value.get("objectSelector")),
            resource_rules: rules("resourceRules"),
            exclude: rules("excludeResourceRules").unwrap_or_default(),
            match_equivalent: value.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
        }
    }

    /// Whether the request is selected, and as which version; `Err` is a
    /// selector that cannot be used or a missing namespace.
    pub(super) fn matches(
        &self,
        attrs: &AdmissionAttributes,
        cluster: &dyn ClusterView,
    ) -> ApiResult<Option<Invocation>> {
        let object = attrs.object.as_ref();
        if !match_namespace(&self.namespace_selector, attrs, object, cluster)? {
            return Ok(None);
        }
        if !match_object(&self.object_selector, attrs, object)? {
            return Ok(None);
        }
        if self.find(&self.exclude, attrs).is_some() {
            return Ok(None);
        }
        match &self.resource_rules {
            None => Ok(Some(Invocation::Request)),
            Some(rules) => Ok(self.find(rules, attrs)),
        }
    }

    /// The request itself when a rule selects it; else, under `Equivalent`,
    /// the first equivalent version a rule selects.
    fn find(&self, rules: &[NamedRule], attrs: &AdmissionAttributes) -> Option<Invocation> {
        let named = |rule: &NamedRule| rule.names.is_empty() || rule.names.contains(&attrs.name);
        if rules
            .iter()
            .any(|r| rule_matches_resource(&r.rule, attrs, &attrs.resource) && named(r))
        {
            return Some(Invocation::Request);
        }
        if !self.match_equivalent {
            return None;
        }
        rules.iter().find_map(|rule| {
            attrs
                .equivalents
                .iter()
                .position(|(_, resource)| {
                    *resource != attrs.resource
                        && rule_matches_resource(&rule.rule, attrs, resource)
                        && named(rule)
                })
                .map(Invocation::Equivalent)
        })
    }
}
