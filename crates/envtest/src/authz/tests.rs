use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Method};
use serde_json::{Value, json};

use super::*;
use crate::request::query::Query;

/// A store holding `objects` and the bootstrap policy a cluster starts with.
fn rbac_store(objects: &[(&str, &str, Value)]) -> Store {
    let store = Store::new(1000);
    for object in crate::bootstrap_policy::policy_objects() {
        let key: ResKey = Arc::from(format!("rbac.authorization.k8s.io/{}", object.plural));
        let name = crate::meta::name(&object.body).to_string();
        store
            .create(&key, &object.namespace, &name, object.body)
            .expect("stored");
    }
    for (plural, ns, obj) in objects {
        let key: ResKey = Arc::from(format!("rbac.authorization.k8s.io/{plural}"));
        let name = crate::meta::name(obj).to_string();
        store.create(&key, ns, &name, obj.clone()).expect("stored");
    }
    store
}

fn service_account(namespace: &str, name: &str) -> UserInfo {
    let mut headers = HeaderMap::new();
    let user = format!("system:serviceaccount:{namespace}:{name}");
    headers.insert("impersonate-user", HeaderValue::from_str(&user).unwrap());
    impersonated_user(&headers).expect("impersonating")
}

fn request(method: Method, path: &str) -> Attributes {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    Attributes::of_request(&method, path, &Query::parse(Some(query)))
}

fn rule(value: Value) -> Rule {
    Rule::all_of(&json!({"rules": [value]})).remove(0)
}

#[test]
fn requests_become_the_attributes_rbac_reads() {
    let attrs = request(Method::GET, "/api/v1/namespaces/shop/pods");
    assert_eq!(
        (
            attrs.verb.as_str(),
            attrs.namespace.as_str(),
            attrs.resource.as_str()
        ),
        ("list", "shop", "pods")
    );
    assert_eq!(
        request(Method::GET, "/api/v1/pods?watch=true").verb,
        "watch"
    );
    assert_eq!(request(Method::GET, "/api/v1/watch/pods").verb, "watch");
    let status = request(
        Method::PATCH,
        "/apis/apps/v1/namespaces/a/deployments/web/status",
    );
    assert_eq!(
        (
            status.api_group.as_str(),
            status.subresource.as_str(),
            status.name.as_str()
        ),
        ("apps", "status", "web")
    );
    assert_eq!(
        request(Method::DELETE, "/api/v1/namespaces/a/configmaps").verb,
        "deletecollection"
    );
    // A Namespace object is in its own namespace.
    assert_eq!(
        request(Method::GET, "/api/v1/namespaces/shop").namespace,
        "shop"
    );
    let discovery = request(Method::GET, "/apis/apps");
    assert!(!discovery.resource_request);
    assert_eq!(
        (discovery.verb.as_str(), discovery.path.as_str()),
        ("get", "/apis/apps")
    );
}

#[test]
fn rules_match_verbs_groups_resources_and_names() {
    let pods = rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
    assert!(pods.allows(&request(Method::GET, "/api/v1/namespaces/a/pods/p")));
    assert!(!pods.allows(&request(Method::DELETE, "/api/v1/namespaces/a/pods/p")));
    assert!(!pods.allows(&request(Method::GET, "/api/v1/namespaces/a/pods/p/log")));
    assert!(!pods.allows(&request(
        Method::GET,
        "/apis/apps/v1/namespaces/a/deployments"
    )));

    let statuses = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}));
    assert!(statuses.allows(&request(
        Method::PUT,
        "/apis/apps/v1/namespaces/a/deployments/d/status"
    )));
    assert!(!statuses.allows(&request(
        Method::PUT,
        "/apis/apps/v1/namespaces/a/deployments/d"
    )));

    let named = rule(
        json!({"verbs": ["get", "create"], "apiGroups": [""], "resources": ["configmaps"],
        "resourceNames": ["settings"]}),
    );
    assert!(named.allows(&request(
        Method::GET,
        "/api/v1/namespaces/a/configmaps/settings"
    )));
    assert!(!named.allows(&request(
        Method::GET,
        "/api/v1/namespaces/a/configmaps/other"
    )));
    // A create names nothing yet, so resourceNames cannot allow it.
    assert!(!named.allows(&request(Method::POST, "/api/v1/namespaces/a/configmaps")));

    let metrics = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]}));
    assert!(metrics.allows(&request(Method::GET, "/metrics")));
    assert!(metrics.allows(&request(Method::GET, "/debug/pprof")));
    assert!(!metrics.allows(&request(Method::GET, "/metricsx")));
}

#[test]
fn bindings_grant_their_roles_to_their_subjects_only() {
    let store = rbac_store(&[
        (
            "roles",
            "shop",
            json!({"metadata": {"name": "pod-reader", "namespace": "shop"},
                "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}]}),
        ),
        (
            "rolebindings",
            "shop",
            // A ServiceAccount subject without a namespace is the binding's.
            json!({"metadata": {"name": "bot-reads", "namespace": "shop"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "bot"}]}),
        ),
        (
            "clusterroles",
            "",
            json!({"metadata": {"name": "lease-holder"},
                "rules": [{"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}]}),
        ),
        (
            "clusterrolebindings",
            "",
            json!({"metadata": {"name": "all-accounts-lease"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lease-holder"},
                "subjects": [{"kind": "Group", "name": "system:serviceaccounts"}]}),
        ),
    ]);
    let bot = service_account("shop", "bot");
    let list_pods = request(Method::GET, "/api/v1/namespaces/shop/pods");
    assert_eq!(
        authorize(&store, &bot, &list_pods),
        Decision {
            allowed: true,
            reason: r#"RBAC: allowed by RoleBinding "bot-reads/shop" of Role "pod-reader" to ServiceAccount "bot/shop""#.into()
        }
    );
    // The Role is for its namespace only, and for its verbs only.
    assert!(
        !authorize(
            &store,
            &bot,
            &request(Method::GET, "/api/v1/namespaces/other/pods")
        )
        .allowed
    );
    assert!(!authorize(&store, &bot, &request(Method::GET, "/api/v1/pods")).allowed);
    assert!(
        !authorize(
            &store,
            &bot,
            &request(Method::POST, "/api/v1/namespaces/shop/pods")
        )
        .allowed
    );
    // Another account of the same name elsewhere is someone else.
    assert!(!authorize(&store, &service_account("other", "bot"), &list_pods).allowed);

    let lease = request(
        Method::PUT,
        "/apis/coordination.k8s.io/v1/namespaces/x/leases/l",
    );
    assert_eq!(
        authorize(&store, &service_account("x", "anyone"), &lease).reason,
        r#"RBAC: allowed by ClusterRoleBinding "all-accounts-lease" of ClusterRole "lease-holder" to Group "system:serviceaccounts""#
    );

    // Discovery and self-reviews come with being authenticated (bootstrap bindings).
    assert!(authorize(&store, &bot, &request(Method::GET, "/apis")).allowed);
    assert!(
        authorize(
            &store,
            &bot,
            &request(
                Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
            )
        )
        .allowed
    );
    assert!(!authorize(&store, &bot, &request(Method::GET, "/metrics")).allowed);
}

#[test]
fn refusals_read_as_kube_apiservers() {
    let bot = service_account("shop", "bot");
    let err = forbidden(
        &bot,
        &request(Method::GET, "/api/v1/namespaces/shop/pods/web"),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        r#"pods "web" is forbidden: User "system:serviceaccount:shop:bot" cannot get resource "pods" in API group "" in the namespace "shop""#
    );
    let err = forbidden(&bot, &request(Method::GET, "/apis/apps/v1/deployments"));
    assert_eq!(
        err.message,
        r#"deployments.apps is forbidden: User "system:serviceaccount:shop:bot" cannot list resource "deployments" in API group "apps" at the cluster scope"#
    );
    let err = forbidden(
        &bot,
        &request(
            Method::PUT,
            "/apis/apps/v1/namespaces/shop/deployments/d/status",
        ),
    );
    assert!(
        err.message
            .contains(r#"cannot update resource "deployments/status" in API group "apps""#),
        "{}",
        err.message
    );
    let err = forbidden(&bot, &request(Method::GET, "/metrics"));
    assert_eq!(
        err.message,
        r#"forbidden: User "system:serviceaccount:shop:bot" cannot get path "/metrics""#
    );
}

#[test]
fn impersonated_users_carry_the_groups_of_their_kind() {
    let bot = service_account("shop", "bot");
    assert_eq!(
        bot.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:shop",
            "system:authenticated"
        ]
    );
    let mut headers = HeaderMap::new();
    headers.insert("impersonate-user", HeaderValue::from_static("jane"));
    headers.append("impersonate-group", HeaderValue::from_static("devs"));
    headers.append("impersonate-group", HeaderValue::from_static("ops"));
    let jane = impersonated_user(&headers).expect("impersonating");
    assert_eq!(jane.groups, ["devs", "ops", "system:authenticated"]);
    assert!(impersonated_user(&HeaderMap::new()).is_none());
}
