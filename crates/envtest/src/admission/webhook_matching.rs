//! Whether a webhook is called for a request: `namespaceSelector`,
//! `objectSelector`, `rules` and `matchConditions`, evaluated in the order and
//! with the errors of kube-apiserver's generic webhook plugin.

use std::borrow::Cow;

use serde_json::Value;

use super::attributes::{AdmissionAttributes, GroupVersionResource, Operation, convert};
use super::cluster::ClusterView;
#[cfg(test)]
use super::cluster::EmptyCluster;
use super::compiled_webhooks::{Rule, Scope, Webhook};
use super::webhook_errors::{internal_error, namespace_not_found};
use crate::error::ApiResult;
use crate::selectors::LabelSelector;

/// For which version of a request a webhook is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invocation {
    /// The request as received.
    Request,
    /// `attrs.equivalents[i]` (`matchPolicy: Equivalent`): the webhook's
    /// rules name another served version of the same resource.
    Equivalent(usize),
}

impl Invocation {
    /// The attributes and object the webhook is sent, with `object` the
    /// object as mutated so far (in the request's version).
    pub(crate) fn view<'a>(
        self,
        attrs: &'a AdmissionAttributes,
        object: Option<&'a Value>,
    ) -> (Cow<'a, AdmissionAttributes>, Option<Cow<'a, Value>>) {
        match self {
            Invocation::Equivalent(i) => match attrs.equivalents.get(i) {
                Some((kind, resource)) => (
                    Cow::Owned(attrs.for_equivalent(kind, resource)),
                    object.map(|o| Cow::Owned(attrs.convert(o, kind))),
                ),
                None => (Cow::Borrowed(attrs), object.map(Cow::Borrowed)),
            },
            Invocation::Request => (Cow::Borrowed(attrs), object.map(Cow::Borrowed)),
        }
    }

    /// A webhook's object (in the version it was called for) back in the request's version.
    pub(crate) fn back(self, attrs: &AdmissionAttributes, object: Value) -> Value {
        match self {
            Invocation::Equivalent(i) => match attrs.equivalents.get(i) {
                Some((kind, _)) => convert(&object, kind, &attrs.kind),
                None => object,
            },
            Invocation::Request => object,
        }
    }
}

/// Whether and how `hook` is called for `attrs`, with `object` the object as
/// mutated so far. `Err` fails the whole request (the failure policy does not
/// apply), as kube-apiserver's `ShouldCallHook` errors do.
pub(crate) fn should_call(
    hook: &Webhook,
    attrs: &AdmissionAttributes,
    object: Option<&Value>,
    cluster: &dyn ClusterView,
) -> ApiResult<Option<Invocation>> {
    // Selector errors only count for webhooks whose rules match the request.
    let namespace_match = match_namespace(&hook.namespace_selector, attrs, object, cluster);
    if let Ok(false) = namespace_match {
        return Ok(None);
    }
    let object_match = match_object(&hook.object_selector, attrs, object);
    if let Ok(false) = object_match {
        return Ok(None);
    }
    let Some(invocation) = invocation(hook, attrs) else {
        return Ok(None);
    };
    namespace_match?;
    object_match?;
    let (view, object) = invocation.view(attrs, object);
    let matched = hook
        .conditions
        .matches(hook.ignore_failures, &view, object.as_deref())?;
    Ok(matched.then_some(invocation))
}

/// The request itself when a rule matches it; else, under `matchPolicy:
/// Equivalent`, the first equivalent resource a rule matches (rules in
/// order, then equivalents in order, as kube-apiserver tries them).
fn invocation(hook: &Webhook, attrs: &AdmissionAttributes) -> Option<Invocation> {
    if hook.rules.iter().any(|rule| rule_matches(rule, attrs)) {
        return Some(Invocation::Request);
    }
    if !hook.match_equivalent {
        return None;
    }
    hook.rules.iter().find_map(|rule| {
        attrs
            .equivalents
            .iter()
            .position(|(_, resource)| {
                *resource != attrs.resource && rule_matches_resource(rule, attrs, resource)
            })
            .map(Invocation::Equivalent)
    })
}

/// Whether `namespaceSelector` selects the request's namespace (webhooks and
/// admission policies alike).
pub(crate) fn match_namespace(
    selector: &Result<LabelSelector, String>,
    attrs: &AdmissionAttributes,
    object: Option<&Value>,
    cluster: &dyn ClusterView,
) -> ApiResult<bool> {
    if attrs.namespace.is_empty() && attrs.resource.resource != "namespaces" {
        // Cluster-scoped objects other than namespaces are never exempted.
        return Ok(true);
    }
    let selector = selector.as_ref().map_err(|e| internal_error(e))?;
    if selector.is_empty() {
        return Ok(true);
    }
    // A namespace being created or updated is judged by its new labels; any
    // other request by the stored namespace's labels.
    let labels = if attrs.resource.resource == "namespaces"
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update)
    {
        AdmissionAttributes::labels_of(object).unwrap_or_default()
    } else {
        cluster
            .namespace_labels(&attrs.namespace)
            .ok_or_else(|| namespace_not_found(&attrs.namespace))?
    };
    Ok(selector.matches_labels(&labels))
}

/// Whether `objectSelector` selects the object or the old object.
pub(crate) fn match_object(
    selector: &Result<LabelSelector, String>,
    attrs: &AdmissionAttributes,
    object: Option<&Value>,
) -> ApiResult<bool> {
    let selector = selector.as_ref().map_err(|e| internal_error(e))?;
    if selector.is_empty() {
        return Ok(true);
    }
    let matches = |o: Option<&Value>| {
        AdmissionAttributes::labels_of(o).is_some_and(|labels| selector.matches_labels(&labels))
    };
    Ok(matches(object) || matches(attrs.old_object.as_ref()))
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

/// One rule against the request (`rules.Matcher` in kube-apiserver).
pub(crate) fn rule_matches(rule: &Rule, attrs: &AdmissionAttributes) -> bool {
    rule_matches_resource(rule, attrs, &attrs.resource)
}

/// One rule against the request with its resource replaced by `resource`.
pub(crate) fn rule_matches_resource(
    rule: &Rule,
    attrs: &AdmissionAttributes,
    resource: &GroupVersionResource,
) -> bool {
    let is_namespace_object = attrs.resource.is_core_namespaces();
    let scope = match rule.scope {
        Scope::All => true,
        Scope::Namespaced => !is_namespace_object && !attrs.namespace.is_empty(),
        Scope::Cluster => is_namespace_object || attrs.namespace.is_empty(),
        Scope::Unknown => false,
    };
    let operation = rule
        .operations
        .iter()
        .any(|op| op == "*" || op == attrs.operation.as_str());
    let resource_matches = rule.resources.iter().any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry.as_str(), ""));
        (res == "*" || res == resource.resource) && (sub == "*" || sub == attrs.subresource)
    });
    scope
        && operation
        && exact_or_wildcard(&rule.api_groups, &resource.group)
        && exact_or_wildcard(&rule.api_versions, &resource.version)
        && resource_matches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::attributes::{GroupVersionKind, GroupVersionResource};

    fn rule(ops: &[&str], groups: &[&str], versions: &[&str], res: &[&str], scope: Scope) -> Rule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Rule {
            operations: v(ops),
            api_groups: v(groups),
            api_versions: v(versions),
            resources: v(res),
            scope,
        }
    }

    fn pod(op: Operation, sub: &str) -> AdmissionAttributes {
        AdmissionAttributes::new(
            op,
            GroupVersionKind::new("", "v1", "Pod"),
            GroupVersionResource::new("", "v1", "pods"),
            "default",
            "p",
        )
        .with_subresource(sub)
    }

    fn namespace(op: Operation) -> AdmissionAttributes {
        AdmissionAttributes::new(
            op,
            GroupVersionKind::new("", "v1", "Namespace"),
            GroupVersionResource::new("", "v1", "namespaces"),
            "",
            "ns1",
        )
    }

    fn node() -> AdmissionAttributes {
        AdmissionAttributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "Node"),
            GroupVersionResource::new("", "v1", "nodes"),
            "",
            "n",
        )
    }

    #[test]
    fn resources_and_subresources() {
        let create = pod(Operation::Create, "");
        let status = pod(Operation::Update, "status");
        let any = [Scope::All];
        for (resources, on_pod, on_status) in [
            (&["pods"][..], true, false),
            (&["pods/status"][..], false, true),
            (&["pods/*"][..], true, true),
            (&["*"][..], true, false),
            (&["*/*"][..], true, true),
            (&["*/status"][..], false, true),
            (&["deployments"][..], false, false),
        ] {
            let r = rule(&["*"], &[""], &["v1"], resources, any[0]);
            assert_eq!(rule_matches(&r, &create), on_pod, "{resources:?}");
            assert_eq!(rule_matches(&r, &status), on_status, "{resources:?}");
        }
    }

    #[test]
    fn operations_groups_versions() {
        let attrs = pod(Operation::Update, "");
        assert!(rule_matches(
            &rule(&["UPDATE"], &[""], &["v1"], &["pods"], Scope::All),
            &attrs
        ));
        assert!(!rule_matches(
            &rule(&["CREATE"], &[""], &["v1"], &["pods"], Scope::All),
            &attrs
        ));
        assert!(!rule_matches(
            &rule(&["*"], &["apps"], &["v1"], &["pods"], Scope::All),
            &attrs
        ));
        assert!(rule_matches(
            &rule(&["*"], &["*"], &["*"], &["pods"], Scope::All),
            &attrs
        ));
        assert!(!rule_matches(
            &rule(&["*"], &[""], &["v2"], &["pods"], Scope::All),
            &attrs
        ));
        assert!(!rule_matches(
            &rule(&[], &[""], &["v1"], &["pods"], Scope::All),
            &attrs
        ));
    }

    #[test]
    fn scope_treats_namespaces_as_cluster_scoped() {
        let everything = |scope| rule(&["*"], &["*"], &["*"], &["*"], scope);
        let p = pod(Operation::Create, "");
        let ns = namespace(Operation::Create);
        let n = node();
        assert!(rule_matches(&everything(Scope::Namespaced), &p));
        assert!(!rule_matches(&everything(Scope::Cluster), &p));
        assert!(!rule_matches(&everything(Scope::Namespaced), &ns));
        assert!(rule_matches(&everything(Scope::Cluster), &ns));
        assert!(rule_matches(&everything(Scope::Cluster), &n));
        assert!(!rule_matches(&everything(Scope::Namespaced), &n));
        assert!(!rule_matches(&everything(Scope::Unknown), &p));
    }

    #[test]
    fn equivalent_versions_are_tried_under_match_policy_equivalent_only() {
        use crate::admission::compiled_webhooks::{HookSet, HookType};
        let rules = serde_json::json!([{"operations": ["CREATE"], "apiGroups": ["g.io"],
                                        "apiVersions": ["v1"], "resources": ["ws"]}]);
        let set = HookSet::compile(
            &[serde_json::json!({"metadata": {"name": "c"}, "webhooks": [
                {"name": "eq.g.io", "rules": rules},
                {"name": "exact.g.io", "rules": rules, "matchPolicy": "Exact"},
            ]})],
            HookType::Validating,
        );
        let version = |v: &str| {
            (
                GroupVersionKind::new("g.io", v, "W"),
                GroupVersionResource::new("g.io", v, "ws"),
            )
        };
        let (kind, resource) = version("v2");
        let attrs = AdmissionAttributes::new(Operation::Create, kind, resource, "default", "w")
            .with_object(serde_json::json!({"apiVersion": "g.io/v2", "kind": "W"}))
            .with_equivalents(vec![version("v3"), version("v1")]);
        let call =
            |i: usize| should_call(&set.hooks[i], &attrs, attrs.object.as_ref(), &EmptyCluster);
        assert_eq!(call(0), Ok(Some(Invocation::Equivalent(1))));
        assert_eq!(call(1), Ok(None));

        let (view, object) = Invocation::Equivalent(1).view(&attrs, attrs.object.as_ref());
        assert_eq!(view.kind.version, "v1");
        assert_eq!(
            view.request.as_ref().map(|(k, _)| k.version.as_str()),
            Some("v2")
        );
        assert_eq!(
            object.as_deref().map(|o| o["apiVersion"].clone()),
            Some(serde_json::json!("g.io/v1"))
        );
        let back =
            Invocation::Equivalent(1).back(&attrs, serde_json::json!({"apiVersion": "g.io/v1"}));
        assert_eq!(back["apiVersion"], "g.io/v2");
    }
}
