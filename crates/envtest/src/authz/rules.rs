//! One RBAC `PolicyRule` and how it matches a request, as
//! `k8s.io/kubernetes/pkg/apis/rbac/v1` (`RuleAllows`) matches it.

use serde_json::{Value, json};

use super::Attributes;

const ALL: &str = "*";

/// A rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(rule: &Value, field: &str) -> Vec<String> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn owned(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_string()).collect()
}

impl Rule {
    /// A rule over `resources` of one API group.
    pub fn on_resources(verbs: &[&str], api_group: &str, resources: &[&str]) -> Rule {
        Rule {
            verbs: owned(verbs),
            api_groups: vec![api_group.to_string()],
            resources: owned(resources),
            ..Rule::default()
        }
    }

    /// A rule over non-resource paths (`/version`, `/apis/*`).
    pub fn on_paths(verbs: &[&str], urls: &[&str]) -> Rule {
        Rule {
            verbs: owned(verbs),
            non_resource_urls: owned(urls),
            ..Rule::default()
        }
    }

    /// The rules of a stored Role or ClusterRole.
    pub fn all_of(role: &Value) -> Vec<Rule> {
        role.get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|rule| Rule {
                verbs: strings(rule, "verbs"),
                api_groups: strings(rule, "apiGroups"),
                resources: strings(rule, "resources"),
                resource_names: strings(rule, "resourceNames"),
                non_resource_urls: strings(rule, "nonResourceURLs"),
            })
            .collect()
    }

    /// Whether this rule allows the request.
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !has(&self.verbs, &attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return self.non_resource_urls.iter().any(|url| {
                url == ALL
                    || *url == attrs.path
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| attrs.path.starts_with(prefix))
            });
        }
        has(&self.api_groups, &attrs.api_group)
            && self.matches_resource(&attrs.resource, &attrs.subresource)
            && (self.resource_names.is_empty() || self.resource_names.contains(&attrs.name))
    }

    /// `pods`, `pods/status`, `*` and `*/status` as RBAC reads them.
    fn matches_resource(&self, resource: &str, subresource: &str) -> bool {
        let combined = if subresource.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{subresource}")
        };
        self.resources.iter().any(|r| {
            r == ALL
                || *r == combined
                || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
        })
    }

    /// The rule as a SelfSubjectRulesReview lists it.
    pub fn to_review_json(&self) -> Value {
        if !self.non_resource_urls.is_empty() {
            return json!({"verbs": self.verbs, "nonResourceURLs": self.non_resource_urls});
        }
        let mut rule = json!({
            "verbs": self.verbs,
            "apiGroups": self.api_groups,
            "resources": self.resources,
        });
        if !self.resource_names.is_empty() {
            rule["resourceNames"] = json!(self.resource_names);
        }
        rule
    }
}

fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|item| item == ALL || item == wanted)
}
