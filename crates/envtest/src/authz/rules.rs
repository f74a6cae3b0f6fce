//! One RBAC `PolicyRule` and how it matches a request, as
//! `k8s.io/kubernetes/pkg/apis/rbac/v1` (`RuleAllows`) matches it.

use serde_json::{Value, json};

use super::Attributes;
use crate::gofmt;

const ALL: &str = "*";

/// A rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rule {
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
    pub(crate) fn on_resources(verbs: &[&str], api_group: &str, resources: &[&str]) -> Rule {
        Rule {
            verbs: owned(verbs),
            api_groups: vec![api_group.to_string()],
            resources: owned(resources),
            ..Rule::default()
        }
    }

    /// A rule over non-resource paths (`/version`, `/apis/*`).
    pub(crate) fn on_paths(verbs: &[&str], urls: &[&str]) -> Rule {
        Rule {
            verbs: owned(verbs),
            non_resource_urls: owned(urls),
            ..Rule::default()
        }
    }

    /// The rules of a stored Role or ClusterRole.
    pub(crate) fn all_of(role: &Value) -> Vec<Rule> {
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
    pub(crate) fn allows(&self, attrs: &Attributes) -> bool {
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
    pub(crate) fn to_review_json(&self) -> Value {
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

/// Escalation checks: how one rule covers another (`Covers` of
/// `k8s.io/component-helpers/auth/rbac/validation`).
impl Rule {
    /// The rule as rules of one group, resource, verb and name each (or one
    /// path and verb each).
    pub(crate) fn breakdown(&self) -> Vec<Rule> {
        let mut out = Vec::new();
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    let one = |names: Vec<String>| Rule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        resource_names: names,
                        non_resource_urls: Vec::new(),
                    };
                    if self.resource_names.is_empty() {
                        out.push(one(Vec::new()));
                    } else {
                        out.extend(self.resource_names.iter().map(|n| one(vec![n.clone()])));
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                out.push(Rule {
                    verbs: vec![verb.clone()],
                    non_resource_urls: vec![url.clone()],
                    ..Rule::default()
                });
            }
        }
        out
    }

    /// Whether this rule grants everything `sub` (one of [`Rule::breakdown`]'s
    /// rules) grants.
    pub(crate) fn covers(&self, sub: &Rule) -> bool {
        let verbs = has_all(&self.verbs, &sub.verbs);
        let groups = has_all(&self.api_groups, &sub.api_groups);
        let resources = self.resources.iter().any(|r| r == ALL)
            || sub.resources.iter().all(|wanted| {
                self.resources.contains(wanted)
                    || wanted.split_once('/').is_some_and(|(_, subresource)| {
                        self.resources.contains(&format!("*/{subresource}"))
                    })
            });
        let urls = sub.non_resource_urls.iter().all(|path| {
            self.non_resource_urls.iter().any(|owner| {
                owner == path
                    || owner
                        .strip_suffix('*')
                        .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
            })
        });
        let names = if sub.resource_names.is_empty() {
            self.resource_names.is_empty()
        } else {
            self.resource_names.is_empty()
                || has_all_exact(&self.resource_names, &sub.resource_names)
        };
        verbs && groups && resources && urls && names
    }

    /// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`,
    /// as kube-apiserver names a rule in its messages.
    pub(crate) fn compact_string(&self) -> String {
        let list = |items: &[String]| {
            let quoted: Vec<String> = items.iter().map(|i| gofmt::quote(i)).collect();
            format!("[{}]", quoted.join(" "))
        };
        let mut parts = Vec::new();
        for (label, items) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !items.is_empty() {
                parts.push(format!("{label}:{}", list(items)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// `*` in `owner`, or every item of `wanted` in it.
fn has_all(owner: &[String], wanted: &[String]) -> bool {
    owner.iter().any(|o| o == ALL) || has_all_exact(owner, wanted)
}

fn has_all_exact(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| owner.contains(w))
}

fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|item| item == ALL || item == wanted)
}
