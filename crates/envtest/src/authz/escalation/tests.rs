use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::store::ResKey;

/// A store with the bootstrap policy and `objects` (plural, namespace, body).
fn store_with(objects: &[(&str, &str, Value)]) -> Store {
    let store = Store::new(1000);
    let policy = crate::bootstrap_policy::policy_objects()
        .into_iter()
        .map(|o| (o.plural, o.namespace, o.body));
    let extra = objects
        .iter()
        .map(|(p, ns, body)| (*p, ns.to_string(), body.clone()));
    for (plural, ns, body) in policy.chain(extra) {
        let key: ResKey = Arc::from(format!("rbac.authorization.k8s.io/{plural}"));
        let name = meta::name(&body).to_string();
        store.create(&key, &ns, &name, body).expect("stored");
    }
    store
}

fn bob() -> UserInfo {
    UserInfo {
        username: "bob".into(),
        groups: vec!["system:authenticated".into()],
        ..UserInfo::default()
    }
}

fn binding(name: &str, kind: &str, role: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "t15"},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
        "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "bob"}]})
}

fn role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "t15"}, "rules": rules})
}

fn write<'a>(plural: &'a str, namespace: &'a str, obj: &'a Value) -> Write<'a> {
    Write {
        plural,
        namespace,
        obj,
        old: None,
    }
}

#[test]
fn a_role_granting_more_than_the_user_holds_is_refused_with_the_missing_rules() {
    let manager = role(
        "rbac-manager",
        json!([{"apiGroups": [GROUP], "resources": ["roles", "rolebindings"], "verbs": ["create", "get", "list"]}]),
    );
    let store = store_with(&[
        ("roles", "t15", manager),
        (
            "rolebindings",
            "t15",
            binding("bob-rbac-manager", "Role", "rbac-manager"),
        ),
    ]);
    let reader = role(
        "secret-reader",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    );
    let err = check(&store, &bob(), &write("roles", "t15", &reader)).unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "roles.rbac.authorization.k8s.io \"secret-reader\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    // Administrators are never refused.
    assert!(
        check(
            &store,
            &UserInfo::default(),
            &write("roles", "t15", &reader)
        )
        .is_ok()
    );
    // Rules the bootstrap policy grants every authenticated user are held.
    let discovery = role(
        "d",
        json!([{"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}]),
    );
    assert!(check(&store, &bob(), &write("roles", "t15", &discovery)).is_ok());
}

#[test]
fn a_binding_needs_the_roles_rules_or_the_bind_verb() {
    let store = store_with(&[]);
    let to_admin = binding("bob-cluster-admin", "ClusterRole", "cluster-admin");
    let err = check(&store, &bob(), &write("rolebindings", "t15", &to_admin)).unwrap_err();
    assert_eq!(
        err.message,
        "rolebindings.rbac.authorization.k8s.io \"bob-cluster-admin\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
    );
    let may_bind = json!({"metadata": {"name": "may-bind"},
        "rules": [{"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["cluster-admin"]}]});
    let store = store_with(&[
        ("clusterroles", "", may_bind),
        (
            "rolebindings",
            "t15",
            binding("bob-may-bind", "ClusterRole", "may-bind"),
        ),
    ]);
    assert!(check(&store, &bob(), &write("rolebindings", "t15", &to_admin)).is_ok());
    // bind is granted in t15 only.
    let mut elsewhere = to_admin.clone();
    elsewhere["metadata"]["namespace"] = json!("other");
    assert!(check(&store, &bob(), &write("rolebindings", "other", &elsewhere)).is_err());
    // A binding to a role that does not exist is a 404.
    let missing = binding("m", "Role", "nosuch");
    let err = check(&store, &bob(), &write("rolebindings", "t15", &missing)).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "roles.rbac.authorization.k8s.io \"nosuch\" not found")
    );
}

#[test]
fn escalate_allows_any_rules_and_aggregation_needs_everything() {
    let escalate = json!({"metadata": {"name": "escalator"},
        "rules": [{"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["escalate"]}]});
    let crb = json!({"metadata": {"name": "bob-escalates"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "escalator"},
        "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "bob"}]});
    let store = store_with(&[
        ("clusterroles", "", escalate),
        ("clusterrolebindings", "", crb),
    ]);
    let everything = json!({"metadata": {"name": "all"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]});
    assert!(check(&store, &bob(), &write("clusterroles", "", &everything)).is_ok());

    let store = store_with(&[]);
    let aggregated = json!({"metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
    let err = check(&store, &bob(), &write("clusterroles", "", &aggregated)).unwrap_err();
    assert_eq!(
        err.message,
        "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
    );
}

#[test]
fn missing_rules_are_compacted_by_resource_and_sorted() {
    let store = store_with(&[("rolebindings", "t15", binding("dangling", "Role", "gone"))]);
    let wide = role(
        "wide",
        json!([
            {"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"], "resourceNames": ["a", "b"]}
        ]),
    );
    let err = check(&store, &bob(), &write("roles", "t15", &wide)).unwrap_err();
    let detail = err.message.split_once(":\n").map(|(_, d)| d).unwrap_or("");
    assert_eq!(
        detail,
        "{APIGroups:[\"\"], Resources:[\"pods\"], ResourceNames:[\"a\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"pods\"], ResourceNames:[\"b\"], Verbs:[\"delete\"]}\n{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\" \"list\"]}\n{APIGroups:[\"apps\"], Resources:[\"deployments/scale\"], Verbs:[\"get\" \"list\"]}; resolution errors: [roles.rbac.authorization.k8s.io \"gone\" not found]"
    );
}

#[test]
fn changes_of_owner_references_and_finalizers_alone_are_not_checked() {
    let store = store_with(&[]);
    let old = role(
        "r",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    );
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let update = Write {
        plural: "roles",
        namespace: "t15",
        obj: &new,
        old: Some(&old),
    };
    assert!(check(&store, &bob(), &update).is_ok());
    new["rules"][0]["verbs"] = json!(["list"]);
    assert!(check(&store, &bob(), &update_of(&new, &old)).is_err());
}

fn update_of<'a>(obj: &'a Value, old: &'a Value) -> Write<'a> {
    Write {
        plural: "roles",
        namespace: "t15",
        obj,
        old: Some(old),
    }
}
