//! The clusterrole-aggregation controller of kube-controller-manager: a
//! ClusterRole with an `aggregationRule` gets the rules of every other
//! ClusterRole its selectors match (by name, each distinct rule once), written
//! by server-side apply as `clusterrole-aggregation-controller` owning
//! `rules`. It runs again whenever a ClusterRole changes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::resource_for;
use crate::api::WriteCtx;
use crate::api::update_steps::{Change, Fail, update_once, with_retries};
use crate::app::App;
use crate::meta;
use crate::patch::{ApplyRequest, server_side_apply};
use crate::selectors::LabelSelector;
use crate::store::ResKey;

pub(crate) const MANAGER: &str = "clusterrole-aggregation-controller";
pub(super) const KEY: &str = "rbac.authorization.k8s.io/clusterroles";

/// Brings every aggregated ClusterRole up to date.
pub(crate) fn aggregate_all(app: &App) {
    let key: ResKey = Arc::from(KEY);
    let (roles, _) = app.store.list(&key, None, None);
    let roles: Vec<Arc<Value>> = roles.into_iter().map(|(_, role)| role).collect();
    for role in &roles {
        let Some(selectors) = role.pointer("/aggregationRule/clusterRoleSelectors") else {
            continue;
        };
        let rules = aggregated_rules(meta::name(role), selectors, &roles);
        if !same_rules(role.get("rules"), &rules) {
            apply_rules(app, meta::name(role), rules);
        }
    }
}

/// The rules of the roles (other than `name`) each selector matches, the
/// roles taken by name, each distinct rule once, in order.
fn aggregated_rules(name: &str, selectors: &Value, roles: &[Arc<Value>]) -> Vec<Value> {
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors.as_array().into_iter().flatten() {
        // A selector the validation let through always parses; one that
        // does not selects nothing.
        let Ok(selector) = LabelSelector::from_object(Some(selector)) else {
            continue;
        };
        // `roles` comes from the store ordered by name.
        for role in roles {
            if meta::name(role) == name || !selector.matches_object(role) {
                continue;
            }
            for rule in role
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

/// Equal as Go's semantic equality compares them: no rules and an empty
/// list are the same.
fn same_rules(stored: Option<&Value>, rules: &[Value]) -> bool {
    match stored {
        None | Some(Value::Null) => rules.is_empty(),
        Some(Value::Array(stored)) => stored == rules,
        Some(_) => false,
    }
}

/// A forced server-side apply of `rules` to ClusterRole `name`.
fn apply_rules(app: &App, name: &str, rules: Vec<Value>) {
    let Some(res) = resource_for(app, KEY) else {
        return;
    };
    let applied = json!({
        "apiVersion": res.api_version(),
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    });
    let mut ctx = WriteCtx::internal(MANAGER);
    ctx.opts.force = true;
    let change = Change {
        res: &res,
        ns: "",
        name,
        sub: None,
        ctx: &ctx,
        is_put: false,
        managed_done: true,
    };
    let api_version = res.api_version();
    let _ = with_retries(app, &res, "", name, |old| {
        let Some(old) = old else {
            return Err(Fail::Api(crate::api::not_found(&res, name)));
        };
        let live = res.from_storage(&old);
        let mut new = server_side_apply(&ApplyRequest {
            live: Some(&live),
            applied: &applied,
            manager: MANAGER,
            force: true,
            api_version: &api_version,
            subresource: None,
            now: &meta::now_rfc3339(),
            types: crate::api::type_info(&res),
        })?;
        meta::remove_meta(&mut new, "resourceVersion");
        update_once(app, &change, new, &[], &old)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, labels: Value, rules: Value) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name, "labels": labels}, "rules": rules}))
    }

    #[test]
    fn matching_roles_contribute_their_distinct_rules_by_name() {
        let get = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        let list = json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]});
        let roles = vec![
            role("a-reader", json!({"agg": "true"}), json!([list, get])),
            role(
                "aggregate",
                json!({"agg": "true"}),
                json!([{"verbs": ["*"]}]),
            ),
            role("b-reader", json!({"agg": "true"}), json!([get])),
            role("other", json!({}), json!([{"verbs": ["delete"]}])),
        ];
        let selectors = json!([{"matchLabels": {"agg": "true"}}]);
        assert_eq!(
            aggregated_rules("aggregate", &selectors, &roles),
            vec![list.clone(), get.clone()]
        );
        assert!(aggregated_rules("aggregate", &json!([]), &roles).is_empty());
        assert!(same_rules(None, &[]));
        assert!(same_rules(Some(&Value::Null), &[]));
        assert!(!same_rules(Some(&json!([get])), &[list]));
    }
}
