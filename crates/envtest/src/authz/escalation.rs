//! The escalation check of kube-apiserver's RBAC storage: a user may create
//! or update a Role or ClusterRole only with rules it holds itself (or the
//! `escalate` verb on it), and a binding only to a role whose rules it holds
//! (or the `bind` verb on that role). Members of `system:masters` are exempt.
//! A refusal is the 403 kube-apiserver answers, listing the missing rules.

use serde_json::Value;

use super::{Attributes, Rule, authorize, walk_bindings};
use crate::error::{ApiError, ApiResult};
use crate::gofmt::quote;
use crate::meta;
use crate::store::Store;
use crate::user::UserInfo;

const GROUP: &str = "rbac.authorization.k8s.io";
const MASTERS: &str = "system:masters";

/// The write of an RBAC object to check: `old` is set on update.
pub(crate) struct Write<'a> {
    /// `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`.
    pub plural: &'a str,
    /// The request's namespace (empty for the cluster-scoped kinds).
    pub namespace: &'a str,
    pub obj: &'a Value,
    pub old: Option<&'a Value>,
}

/// Whether writes of `group`/`plural` are checked for escalation.
pub(crate) fn applies_to(group: &str, plural: &str) -> bool {
    group == GROUP
        && matches!(
            plural,
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
}

/// Refuses the write with kube-apiserver's 403 when it would grant `user`
/// (through the object written) permissions it does not hold.
pub(crate) fn check(store: &Store, user: &UserInfo, write: &Write<'_>) -> ApiResult<()> {
    if user.groups.iter().any(|g| g == MASTERS) {
        return Ok(());
    }
    if write
        .old
        .is_some_and(|old| only_gc_fields_change(write.obj, old))
    {
        return Ok(());
    }
    let name = meta::name(write.obj);
    match write.plural {
        "roles" | "clusterroles" => {
            if allowed(store, user, "escalate", write.plural, name, write.namespace) {
                return Ok(());
            }
            let rules = Rule::all_of(write.obj);
            confirm_no_escalation(store, user, write.namespace, &rules)
                .map_err(|msg| ApiError::forbidden(GROUP, write.plural, name, &msg))?;
            let aggregates = |role: &Value| {
                role.pointer("/aggregationRule/clusterRoleSelectors")
                    .and_then(Value::as_array)
                    .is_some_and(|selectors| !selectors.is_empty())
            };
            if write.plural == "clusterroles"
                && (aggregates(write.obj) || write.old.is_some_and(aggregates))
            {
                let everything = [
                    Rule::on_resources(&["*"], "*", &["*"]),
                    Rule::on_paths(&["*"], &["*"]),
                ];
                confirm_no_escalation(store, user, "", &everything).map_err(|_| {
                    ApiError::forbidden(
                        GROUP,
                        write.plural,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    )
                })?;
            }
            Ok(())
        }
        _ => {
            let role_ref = write.obj.get("roleRef").unwrap_or(&Value::Null);
            let str_of = |key: &str| role_ref.get(key).and_then(Value::as_str).unwrap_or("");
            let (kind, role_name) = (str_of("kind"), str_of("name"));
            let role_plural = match kind {
                "ClusterRole" => "clusterroles",
                "Role" => "roles",
                other => {
                    return Err(crate::error::ApiError::internal_no_reason(&format!(
                        "unsupported role reference kind: {}",
                        quote(other)
                    )));
                }
            };
            let bind = Attributes {
                verb: "bind".into(),
                resource_request: true,
                api_group: str_of("apiGroup").into(),
                resource: role_plural.into(),
                name: role_name.into(),
                namespace: write.namespace.into(),
                ..Attributes::default()
            };
            if authorize(store, user, &bind).allowed {
                return Ok(());
            }
            let role_namespace = if kind == "Role" { write.namespace } else { "" };
            let key = super::rbac_key(role_plural);
            let Some(role) = store.get(&key, role_namespace, role_name) else {
                return Err(ApiError::not_found(GROUP, role_plural, role_name));
            };
            confirm_no_escalation(store, user, write.namespace, &Rule::all_of(&role))
                .map_err(|msg| ApiError::forbidden(GROUP, write.plural, name, &msg))
        }
    }
}

fn allowed(store: &Store, user: &UserInfo, verb: &str, plural: &str, name: &str, ns: &str) -> bool {
    let attrs = Attributes {
        verb: verb.into(),
        resource_request: true,
        api_group: GROUP.into(),
        resource: plural.into(),
        name: name.into(),
        namespace: ns.into(),
        ..Attributes::default()
    };
    authorize(store, user, &attrs).allowed
}

/// `IsOnlyMutatingGCFields`: the write changes nothing but owner references
/// and finalizers (what the garbage collector writes).
fn only_gc_fields_change(obj: &Value, old: &Value) -> bool {
    let mut copy = obj.clone();
    for field in [
        "ownerReferences",
        "finalizers",
        "selfLink",
        "managedFields",
        "resourceVersion",
    ] {
        match meta::metadata(old).and_then(|m| m.get(field)) {
            Some(value) => meta::set_meta(&mut copy, field, value.clone()),
            None => {
                meta::remove_meta(&mut copy, field);
            }
        }
    }
    copy == *old
}

/// `ConfirmNoEscalation`: Ok when the rules `user` holds in `namespace`
/// cover `rules`, else kube-apiserver's message naming what is missing.
fn confirm_no_escalation(
    store: &Store,
    user: &UserInfo,
    namespace: &str,
    rules: &[Rule],
) -> Result<(), String> {
    let mut held = Vec::new();
    let mut resolution_errors = Vec::new();
    walk_bindings(store, user, namespace, |visit| {
        match visit {
            Ok((_, rule)) => held.push(rule.clone()),
            Err(error) => resolution_errors.push(error),
        }
        true
    });
    let missing: Vec<Rule> = rules
        .iter()
        .flat_map(Rule::breakdown)
        .filter(|sub| !held.iter().any(|owner| owner.covers(sub)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut descriptions: Vec<String> = compact(missing).iter().map(Rule::compact_string).collect();
    descriptions.sort();
    descriptions.dedup();
    let groups: Vec<String> = user.groups.iter().map(|g| quote(g)).collect();
    let mut msg = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        quote(&user.username),
        groups.join(" "),
        descriptions.join("\n")
    );
    if !resolution_errors.is_empty() {
        // One aggregate error, printed as Go prints a one-element error list.
        let aggregate = if resolution_errors.len() == 1 {
            resolution_errors.remove(0)
        } else {
            format!("[{}]", resolution_errors.join(", "))
        };
        msg.push_str(&format!("; resolution errors: [{aggregate}]"));
    }
    Err(msg)
}

/// `CompactRules`: rules of one group and one resource (and at most one
/// name) that differ only by verb become one rule with all their verbs.
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut simple: Vec<Rule> = Vec::new();
    for rule in rules {
        let is_simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty();
        if !is_simple {
            out.push(rule);
            continue;
        }
        let same = |r: &&mut Rule| {
            r.api_groups == rule.api_groups
                && r.resources == rule.resources
                && r.resource_names == rule.resource_names
        };
        match simple.iter_mut().find(same) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    out.extend(simple);
    out
}

#[cfg(test)]
mod tests;
