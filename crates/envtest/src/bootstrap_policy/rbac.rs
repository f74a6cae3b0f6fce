//! The RBAC bootstrap policy of kube-apiserver v1.32 (`rbac-policy.yaml`) as
//! the objects the server creates at start.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

const GROUP: &str = "rbac.authorization.k8s.io";
const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Policy {
    cluster_roles: Vec<RoleDef>,
    cluster_role_bindings: Vec<BindingDef>,
    roles: Vec<RoleDef>,
    role_bindings: Vec<BindingDef>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RoleDef {
    #[serde(default)]
    namespace: String,
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    aggregate_labels: Vec<String>,
    #[serde(default)]
    rules: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BindingDef {
    #[serde(default)]
    namespace: String,
    name: String,
    role: String,
    subjects: Vec<String>,
}

/// One object of the policy: its resource (`clusterroles`, ...), namespace
/// (empty for cluster-scoped ones) and body.
pub(crate) struct PolicyObject {
    pub plural: &'static str,
    pub namespace: String,
    pub body: Value,
}

/// Every object of the bootstrap policy, in the order kube-apiserver creates
/// them: ClusterRoles, ClusterRoleBindings, Roles, RoleBindings.
pub(crate) fn policy_objects() -> Vec<PolicyObject> {
    // The file is part of the binary and checked by a unit test.
    let policy: Policy = match serde_saphyr::from_str(include_str!("rbac-policy.yaml")) {
        Ok(policy) => policy,
        Err(e) => unreachable!("rbac-policy.yaml is checked by the unit tests: {e}"),
    };
    let mut out = Vec::new();
    for role in &policy.cluster_roles {
        out.push(object("clusterroles", role_body("ClusterRole", role)));
    }
    for binding in &policy.cluster_role_bindings {
        out.push(object(
            "clusterrolebindings",
            binding_body("ClusterRoleBinding", "ClusterRole", binding),
        ));
    }
    for role in &policy.roles {
        out.push(object("roles", role_body("Role", role)));
    }
    for binding in &policy.role_bindings {
        out.push(object(
            "rolebindings",
            binding_body("RoleBinding", "Role", binding),
        ));
    }
    out
}

fn object(plural: &'static str, body: Value) -> PolicyObject {
    PolicyObject {
        plural,
        namespace: crate::meta::namespace(&body).to_string(),
        body,
    }
}

/// The metadata every bootstrap object carries.
fn metadata(name: &str, namespace: &str, extra_labels: &BTreeMap<String, String>) -> Value {
    let mut labels = Map::new();
    labels.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    for (key, value) in extra_labels {
        labels.insert(key.clone(), json!(value));
    }
    let mut meta = json!({
        "name": name,
        "labels": labels,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    });
    if !namespace.is_empty() {
        meta["namespace"] = json!(namespace);
    }
    meta
}

fn role_body(kind: &str, role: &RoleDef) -> Value {
    let mut body = json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata(&role.name, &role.namespace, &role.labels),
        "rules": role.rules,
    });
    if !role.aggregate_labels.is_empty() {
        let selectors: Vec<Value> = role
            .aggregate_labels
            .iter()
            .map(|label| json!({"matchLabels": {label: "true"}}))
            .collect();
        body["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
        body["rules"] = Value::Null;
    }
    body
}

fn binding_body(kind: &str, role_kind: &str, binding: &BindingDef) -> Value {
    let subjects: Vec<Value> = binding.subjects.iter().map(|s| subject(s)).collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata(&binding.name, &binding.namespace, &BTreeMap::new()),
        "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": binding.role},
        "subjects": subjects,
    })
}

/// `User NAME`, `Group NAME` or `ServiceAccount NAMESPACE/NAME` as a subject.
fn subject(text: &str) -> Value {
    let (kind, name) = text.split_once(' ').unwrap_or(("User", text));
    match kind {
        "ServiceAccount" => {
            let (namespace, name) = name.split_once('/').unwrap_or(("", name));
            json!({"kind": kind, "name": name, "namespace": namespace})
        }
        _ => json!({"kind": kind, "apiGroup": GROUP, "name": name}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(objects: &'a [PolicyObject], plural: &str, name: &str) -> &'a Value {
        objects
            .iter()
            .find(|o| o.plural == plural && crate::meta::name(&o.body) == name)
            .map(|o| &o.body)
            .unwrap_or_else(|| panic!("{plural}/{name} is missing"))
    }

    #[test]
    fn the_policy_parses_into_the_bootstrap_objects() {
        let objects = policy_objects();
        let count = |plural: &str| objects.iter().filter(|o| o.plural == plural).count();
        assert_eq!(count("clusterroles"), 65);
        assert_eq!(count("clusterrolebindings"), 46);
        assert_eq!(count("roles"), 7);
        assert_eq!(count("rolebindings"), 7);

        let admin = find(&objects, "clusterroles", "cluster-admin");
        assert_eq!(admin["rules"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            admin["metadata"]["labels"],
            json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
        );
        let edit = find(&objects, "clusterroles", "edit");
        assert_eq!(edit["rules"], Value::Null);
        assert_eq!(
            edit["aggregationRule"],
            json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]})
        );
        assert_eq!(
            edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
            "true"
        );

        let masters = find(&objects, "clusterrolebindings", "cluster-admin");
        assert_eq!(
            masters["subjects"],
            json!([{"kind": "Group", "apiGroup": GROUP, "name": "system:masters"}])
        );
        let controller = find(
            &objects,
            "clusterrolebindings",
            "system:controller:namespace-controller",
        );
        assert_eq!(
            controller["subjects"],
            json!([{"kind": "ServiceAccount", "name": "namespace-controller", "namespace": "kube-system"}])
        );
        let reader = find(
            &objects,
            "rolebindings",
            "system::extension-apiserver-authentication-reader",
        );
        assert_eq!(reader["metadata"]["namespace"], "kube-system");
        assert_eq!(reader["roleRef"]["kind"], "Role");
    }
}
