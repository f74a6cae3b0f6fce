//! RBAC as kube-apiserver v1.32 has it: the bootstrap policy at start, the
//! clusterrole-aggregation controller, and the escalation checks on writes of
//! roles and bindings.

use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{api_error, client, client_as, eventually, json, kubectl, namespace};
use crate::server;

/// The bootstrap ClusterRoles, bindings and kube-system Roles exist at start,
/// labelled as kube-apiserver labels them, and they grant what they grant on
/// a real cluster (a controller's ServiceAccount, every authenticated user).
#[test]
fn the_bootstrap_policy_exists_at_start() {
    let k = kubectl();
    let roles = k.ok(&["get", "clusterroles", "-o", "name"]);
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:aggregate-to-edit",
        "system:controller:namespace-controller",
        "system:kube-scheduler",
        "system:node",
    ] {
        let line = format!("clusterrole.rbac.authorization.k8s.io/{name}");
        assert!(roles.lines().any(|l| l == line), "{name} missing:\n{roles}");
    }
    let admin = json(&k.ok(&["get", "clusterrole", "cluster-admin", "-o", "json"]));
    assert_eq!(
        admin["rules"],
        json!([
            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["*"], "nonResourceURLs": ["*"]}
        ])
    );
    assert_eq!(
        admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    let binding = json(&k.ok(&["get", "clusterrolebinding", "cluster-admin", "-o", "json"]));
    assert_eq!(
        binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}])
    );
    let leader = k.ok(&["get", "rolebindings", "-n", "kube-system", "-o", "name"]);
    assert!(
        leader.contains(
            "rolebinding.rbac.authorization.k8s.io/system::leader-locking-kube-scheduler"
        ),
        "{leader}"
    );

    let can_i = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        k.run(&all).stdout.trim().to_string()
    };
    let controller = "--as=system:serviceaccount:kube-system:namespace-controller";
    assert_eq!(can_i(&["delete", "pods", "-A", controller]), "yes");
    assert_eq!(can_i(&["create", "pods", "-A", controller]), "no");
    assert_eq!(can_i(&["get", "/healthz", "--as=anyone"]), "yes");
    assert_eq!(can_i(&["get", "/metrics", "--as=anyone"]), "no");
}

/// `admin`, `edit` and `view` are aggregated from the `system:aggregate-to-*`
/// roles (and from each other) before the first request.
#[test]
fn the_bootstrap_admin_edit_and_view_roles_are_aggregated() {
    let k = kubectl();
    let rules_of = |name: &str| {
        json(&k.ok(&["get", "clusterrole", name, "-o", "json"]))["rules"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let grants = |rules: &[Value], verb: &str, resource: &str| {
        rules.iter().any(|r| {
            let has = |field: &str, wanted: &str| {
                r[field]
                    .as_array()
                    .is_some_and(|list| list.iter().any(|v| v == wanted))
            };
            has("verbs", verb) && has("resources", resource)
        })
    };
    let (view, edit, admin) = (rules_of("view"), rules_of("edit"), rules_of("admin"));
    assert!(grants(&view, "list", "pods"));
    assert!(!grants(&view, "create", "pods"));
    assert!(grants(&edit, "list", "pods") && grants(&edit, "create", "pods"));
    assert!(!grants(&edit, "create", "roles"));
    assert!(grants(&admin, "create", "pods") && grants(&admin, "create", "roles"));
    // admin gathers edit's rules first (roles are taken by name), then
    // system:aggregate-to-admin's.
    assert_eq!(admin[..edit.len()], edit[..]);
}

/// A ClusterRole with an aggregationRule follows the ClusterRoles its
/// selectors match as they come, change and go; the rules are the
/// clusterrole-aggregation controller's (an Apply entry in managedFields).
/// Roles labelled for `view` reach `edit` and `admin` too.
#[tokio::test]
async fn aggregated_cluster_roles_follow_the_roles_they_select() {
    let client = client().await;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let label = server::unique_name("aggregate.opctl.test/agg");
    let aggregate: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": server::unique_name("agg-total")},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label.as_str(): "true"}}]}
    }))
    .expect("role");
    let aggregate = roles
        .create(&PostParams::default(), &aggregate)
        .await
        .expect("created");
    let aggregate_name = aggregate.metadata.name.clone().expect("name");
    let gadgets = json!({"apiGroups": ["aggregate.opctl.test"], "resources": ["gadgets"], "verbs": ["get", "list"]});
    let part: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": server::unique_name("agg-part"), "labels": {label.as_str(): "true"}},
        "rules": [gadgets]
    }))
    .expect("role");
    let part = roles
        .create(&PostParams::default(), &part)
        .await
        .expect("created");
    let part_name = part.metadata.name.clone().expect("name");

    let rules = |role: &ClusterRole| serde_json::to_value(&role.rules).expect("rules");
    let filled = eventually("the aggregated rules", async || {
        let role = roles.get(&aggregate_name).await.ok()?;
        (rules(&role) == json!([gadgets])).then_some(role)
    })
    .await;
    let managers: Vec<(String, String)> = filled
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&(
            "clusterrole-aggregation-controller".to_string(),
            "Apply".to_string()
        )),
        "{managers:?}"
    );

    let widgets = json!({"apiGroups": ["aggregate.opctl.test"], "resources": ["widgets"], "verbs": ["watch"]});
    roles
        .patch(
            &part_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"rules": [gadgets, widgets]})),
        )
        .await
        .expect("patched");
    eventually("the changed rules", async || {
        let role = roles.get(&aggregate_name).await.ok()?;
        (rules(&role) == json!([gadgets, widgets])).then_some(())
    })
    .await;
    roles
        .delete(&part_name, &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("no rules once the part is gone", async || {
        let role = roles.get(&aggregate_name).await.ok()?;
        role.rules.as_ref().is_none_or(Vec::is_empty).then_some(())
    })
    .await;

    // A role for `view` extends view, edit (which gathers view) and admin.
    let viewing: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": server::unique_name("agg-view"),
            "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [widgets]
    }))
    .expect("role");
    let viewing = roles
        .create(&PostParams::default(), &viewing)
        .await
        .expect("created");
    for name in ["view", "edit", "admin"] {
        eventually(&format!("{name} to gain the rule"), async || {
            let role = roles.get(name).await.ok()?;
            role.rules
                .iter()
                .flatten()
                .any(|r| serde_json::to_value(r).ok().as_ref() == Some(&widgets))
                .then_some(())
        })
        .await;
    }
    roles
        .delete(
            &viewing.metadata.name.expect("name"),
            &DeleteParams::default(),
        )
        .await
        .expect("deleted");
    roles
        .delete(&aggregate_name, &DeleteParams::default())
        .await
        .expect("deleted");
}

/// The escalation check with kubectl `--as`: a user who may create Roles
/// and RoleBindings still may not grant what it does not hold (kube-apiserver's
/// 403 lists the missing rules), until it holds it or has the `bind` verb
/// on the role it binds.
#[test]
fn kubectl_as_a_user_cannot_grant_more_than_it_holds() {
    let k = kubectl();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ns = runtime.block_on(async { namespace(&client().await, "rbac-esc").await });
    // kubectl in the test's namespace.
    let ok = |args: &[&str]| k.ok(&[args, &["-n", ns.as_str()]].concat());
    let fails = |args: &[&str]| k.fails(&[args, &["-n", ns.as_str()]].concat());
    let as_bob = "--as=bob";
    ok(&[
        "create",
        "role",
        "rbac-manager",
        "--verb=create,get,list",
        "--resource=roles,rolebindings",
    ]);
    ok(&[
        "create",
        "rolebinding",
        "bob-rbac-manager",
        "--role=rbac-manager",
        "--user=bob",
    ]);

    let reader = [
        "create",
        "role",
        "secret-reader",
        "--verb=get",
        "--resource=secrets",
        as_bob,
    ];
    let err = fails(&reader);
    assert!(
        err.contains(r#"roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#)
            && err.contains(r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#),
        "{err}"
    );
    let bind_admin = [
        "create",
        "rolebinding",
        "bob-admin",
        "--clusterrole=cluster-admin",
        "--user=bob",
        as_bob,
    ];
    let err = fails(&bind_admin);
    assert!(
        err.contains(r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#)
            && err.contains(r#"{NonResourceURLs:["*"], Verbs:["*"]}"#),
        "{err}"
    );

    // Holding the permission makes granting it fine.
    ok(&[
        "create",
        "role",
        "secrets-get",
        "--verb=get",
        "--resource=secrets",
    ]);
    ok(&[
        "create",
        "rolebinding",
        "bob-secrets-get",
        "--role=secrets-get",
        "--user=bob",
    ]);
    ok(&reader);

    // The bind verb on cluster-admin lets bob bind it (in this namespace).
    let may_bind = server::unique_name("may-bind-cluster-admin");
    k.ok(&[
        "create",
        "clusterrole",
        &may_bind,
        "--verb=bind",
        "--resource=clusterroles",
        "--resource-name=cluster-admin",
    ]);
    ok(&[
        "create",
        "rolebinding",
        "bob-may-bind",
        &format!("--clusterrole={may_bind}"),
        "--user=bob",
    ]);
    ok(&bind_admin);
    ok(&["get", "secrets", as_bob]);
    k.ok(&["delete", "clusterrole", &may_bind]);
}

/// An operator run as its ServiceAccount with RBAC that lets it create
/// Roles (as a scaffolded `+opctl:rbac` marker grants) still cannot create
/// one granting what its account lacks: the same 403 as on a cluster. What
/// it holds it may grant; `escalate` lifts the check; an aggregationRule
/// needs every permission.
#[tokio::test]
async fn an_operator_cannot_grant_more_than_its_service_account_holds() {
    let admin = client().await;
    let ns = namespace(&admin, "rbac-operator").await;
    let account = format!("system:serviceaccount:{ns}:operator");
    let role: Role = serde_json::from_value(json!({"metadata": {"name": "operator"},
        "rules": [
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create", "update"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
        ]}))
    .expect("role");
    Api::<Role>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &role)
        .await
        .expect("role");
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}]}))
    .expect("binding");
    Api::<RoleBinding>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");

    let operator = client_as(&account, &[]).await;
    let roles: Api<Role> = Api::namespaced(operator.clone(), &ns);
    let granting = |name: &str, resource: &str| -> Role {
        serde_json::from_value(json!({"metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get", "list"]}]}))
        .expect("role")
    };
    let err = api_error(
        roles
            .create(
                &PostParams::default(),
                &granting("reads-secrets", "secrets"),
            )
            .await,
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        format!(
            "roles.rbac.authorization.k8s.io \"reads-secrets\" is forbidden: user \"{account}\" (groups=[\"system:serviceaccounts\" \"system:serviceaccounts:{ns}\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}}"
        )
    );
    let created = roles
        .create(
            &PostParams::default(),
            &granting("reads-configmaps", "configmaps"),
        )
        .await
        .expect("granting what it holds is allowed");
    // Widening it by update is refused the same way.
    let mut wider = created.clone();
    wider.rules = granting("x", "secrets").rules;
    let err = api_error(
        roles
            .replace("reads-configmaps", &PostParams::default(), &wider)
            .await,
    );
    assert_eq!(err.code, 403, "{}", err.message);

    let cluster_roles: Api<ClusterRole> = Api::all(admin.clone());
    let escalator = server::unique_name("escalator");
    let escalate: ClusterRole = serde_json::from_value(json!({"metadata": {"name": escalator},
        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]}))
    .expect("role");
    cluster_roles
        .create(&PostParams::default(), &escalate)
        .await
        .expect("created");
    let binding: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "operator-escalates"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": escalator},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": ns}]}))
    .expect("binding");
    Api::<RoleBinding>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding");
    roles
        .create(
            &PostParams::default(),
            &granting("reads-secrets", "secrets"),
        )
        .await
        .expect("escalate lets it grant anything in its namespace");
    cluster_roles
        .delete(&escalator, &DeleteParams::default())
        .await
        .expect("deleted");
}
