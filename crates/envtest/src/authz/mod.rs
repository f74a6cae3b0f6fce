//! Authorization as kube-apiserver's RBAC authorizer decides it.
//!
//! envtest's own user is a cluster administrator (`system:masters`) and is
//! never refused. A request that impersonates someone (`Impersonate-User`,
//! `Impersonate-Group`, as `kubectl --as` and kube-rs's `impersonate` send)
//! is decided from the stored Roles, ClusterRoles and their bindings, so an
//! operator run as its ServiceAccount is held to the RBAC its project
//! generates. The `authorization.k8s.io` reviews (`kubectl auth can-i`) are
//! answered from the same rules (`api::access_reviews`).
//!
//! The bootstrap policy (`crate::bootstrap`) is stored like any other RBAC
//! object, so discovery, health and self-reviews are allowed to every
//! authenticated user through its bindings, as on a real cluster.

pub(crate) mod escalation;
mod rules;

use std::sync::Arc;

use axum::http::{HeaderMap, Method};
use serde_json::Value;

use crate::error::ApiError;
use crate::request::path::{Route, route};
use crate::request::query::Query;
use crate::store::{ResKey, Store};
use crate::user::UserInfo;

pub(crate) use rules::Rule;

const AUTHENTICATED: &str = "system:authenticated";

/// The user a request acts as when it impersonates one; `None` for
/// envtest's own administrator.
pub(crate) fn impersonated_user(headers: &HeaderMap) -> Option<UserInfo> {
    let name = headers.get("impersonate-user")?.to_str().ok()?.to_string();
    let mut groups: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    // kube-apiserver adds the groups a ServiceAccount's token would carry.
    if let Some(namespace) = service_account_namespace(&name)
        && groups.is_empty()
    {
        groups.push("system:serviceaccounts".to_string());
        groups.push(format!("system:serviceaccounts:{namespace}"));
    }
    if name != "system:anonymous" && !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.to_string());
    }
    Some(UserInfo {
        username: name,
        groups,
        ..UserInfo::default()
    })
}

/// Impersonation headers naming groups, extras or a uid but no user are
/// refused: kube-apiserver's `requested [...] without impersonating a user`,
/// listing what was asked for as Go prints `[]v1.ObjectReference`.
pub(crate) fn impersonation_without_user(headers: &HeaderMap) -> Option<String> {
    if headers.contains_key("impersonate-user") {
        return None;
    }
    // Kind, Namespace, Name, UID, APIVersion, ResourceVersion, FieldPath.
    let reference = |kind: &str, name: &str, api_version: &str, field_path: &str| {
        format!("{{{kind}  {name}  {api_version}  {field_path}}}")
    };
    let mut asked = Vec::new();
    for group in headers.get_all("impersonate-group") {
        asked.push(reference(
            "Group",
            &String::from_utf8_lossy(group.as_bytes()),
            "",
            "",
        ));
    }
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-") {
            let key = crate::request::query::Query::parse(Some(&format!("k={key}")))
                .get("k")
                .unwrap_or(key)
                .to_string();
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            asked.push(reference(
                "UserExtra",
                &value,
                "authentication.k8s.io/v1",
                &key,
            ));
        }
    }
    if let Some(uid) = headers.get("impersonate-uid") {
        let uid = String::from_utf8_lossy(uid.as_bytes()).into_owned();
        asked.push(reference("UID", &uid, "authentication.k8s.io/v1", ""));
    }
    (!asked.is_empty()).then(|| {
        format!(
            "requested [{}] without impersonating a user",
            asked.join(" ")
        )
    })
}

/// `system:serviceaccount:<namespace>:<name>` → the namespace.
fn service_account_namespace(username: &str) -> Option<&str> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty()).then_some(namespace)
}

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub verb: String,
    /// False for paths that name no resource (`/api`, `/version`, ...).
    pub resource_request: bool,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The request path, for non-resource requests.
    pub path: String,
}

impl Attributes {
    /// The attributes of an HTTP request, as kube-apiserver's request info
    /// resolver derives them.
    pub(crate) fn of_request(method: &Method, path: &str, query: &Query) -> Attributes {
        let Route::Resource(p) = route(path) else {
            let verb = match *method {
                Method::GET | Method::HEAD => "get",
                Method::POST => "post",
                Method::PUT => "put",
                Method::PATCH => "patch",
                Method::DELETE => "delete",
                _ => "",
            };
            return Attributes {
                verb: verb.to_string(),
                path: path.to_string(),
                ..Attributes::default()
            };
        };
        let watching = p.watch_prefix || query.flag("watch").unwrap_or(false);
        let verb = match (method, p.name.is_some()) {
            (&Method::GET | &Method::HEAD, _) if watching => "watch",
            (&Method::GET | &Method::HEAD, true) => "get",
            (&Method::GET | &Method::HEAD, false) => "list",
            (&Method::POST, _) => "create",
            (&Method::PUT, _) => "update",
            (&Method::PATCH, _) => "patch",
            (&Method::DELETE, true) => "delete",
            (&Method::DELETE, false) => "deletecollection",
            _ => "",
        };
        let name = p.name.unwrap_or_default();
        // A Namespace object is in its own namespace, for the authorizer.
        let namespace = match p.namespace {
            None if p.group.is_empty() && p.resource == "namespaces" => name.clone(),
            namespace => namespace.unwrap_or_default(),
        };
        Attributes {
            verb: verb.to_string(),
            resource_request: true,
            api_group: p.group,
            resource: p.resource,
            subresource: p.subresource.unwrap_or_default(),
            namespace,
            name,
            path: path.to_string(),
        }
    }
}

/// An authorizer's answer; `reason` says which binding allowed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub allowed: bool,
    pub reason: String,
}

impl Decision {
    fn allowed_by(source: String) -> Decision {
        Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        }
    }

    fn no_opinion() -> Decision {
        Decision {
            allowed: false,
            reason: String::new(),
        }
    }
}

/// Decides whether `user` may do what `attrs` describe.
pub(crate) fn authorize(store: &Store, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.groups.iter().any(|g| g == "system:masters") {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut decision = Decision::no_opinion();
    visit_rules(store, user, &attrs.namespace, |source, rule| {
        if rule.allows(attrs) {
            decision = Decision::allowed_by(source.to_string());
            return false;
        }
        true
    });
    decision
}

pub(crate) fn rbac_key(plural: &str) -> ResKey {
    Arc::from(format!("rbac.authorization.k8s.io/{plural}"))
}

/// Calls `visit` with every rule granted to `user` cluster-wide and in
/// `namespace`, and where it comes from (`ClusterRoleBinding "b" of
/// ClusterRole "r" to User "u"`), until `visit` returns false. Bindings
/// whose role is missing are skipped.
pub(crate) fn visit_rules(
    store: &Store,
    user: &UserInfo,
    namespace: &str,
    mut visit: impl FnMut(&str, &Rule) -> bool,
) {
    walk_bindings(store, user, namespace, |found| match found {
        Ok((source, rule)) => visit(source, rule),
        Err(_) => true,
    });
}

/// [`visit_rules`], also visiting (as `Err`) the error of each binding of
/// `user` whose role is missing (`clusterroles.rbac.authorization.k8s.io
/// "x" not found`), as kube-apiserver's rule resolver reports them.
pub(crate) fn walk_bindings(
    store: &Store,
    user: &UserInfo,
    namespace: &str,
    mut visit: impl FnMut(Result<(&str, &Rule), String>) -> bool,
) {
    let (cluster_bindings, _) = store.list(&rbac_key("clusterrolebindings"), None, None);
    let namespace_bindings = if namespace.is_empty() {
        Vec::new()
    } else {
        store
            .list(&rbac_key("rolebindings"), Some(namespace), None)
            .0
    };
    let bindings = cluster_bindings
        .iter()
        .map(|(_, b)| (b, true))
        .chain(namespace_bindings.iter().map(|(_, b)| (b, false)));
    for (binding, cluster_wide) in bindings {
        let binding_namespace = crate::meta::namespace(binding);
        let Some(subject) = matching_subject(binding, user, binding_namespace) else {
            continue;
        };
        let role_kind = str_at(binding, &["roleRef", "kind"]);
        let role_name = str_at(binding, &["roleRef", "name"]);
        let (plural, role) = match role_kind {
            "ClusterRole" => (
                "clusterroles",
                store.get(&rbac_key("clusterroles"), "", role_name),
            ),
            "Role" if !cluster_wide => (
                "roles",
                store.get(&rbac_key("roles"), binding_namespace, role_name),
            ),
            _ => continue,
        };
        let Some(role) = role else {
            let missing = format!("{plural}.rbac.authorization.k8s.io {role_name:?} not found");
            if !visit(Err(missing)) {
                return;
            }
            continue;
        };
        let binding_name = crate::meta::name(binding);
        let source = if cluster_wide {
            format!("ClusterRoleBinding {binding_name:?} of {role_kind} {role_name:?} to {subject}")
        } else {
            let qualified = format!("{binding_name}/{binding_namespace}");
            format!("RoleBinding {qualified:?} of {role_kind} {role_name:?} to {subject}")
        };
        for rule in Rule::all_of(&role) {
            if !visit(Ok((&source, &rule))) {
                return;
            }
        }
    }
}

/// The first subject of `binding` that `user` is, described as kube-apiserver
/// describes it (`User "u"`, `Group "g"`, `ServiceAccount "name/namespace"`).
fn matching_subject(binding: &Value, user: &UserInfo, binding_namespace: &str) -> Option<String> {
    let subjects = binding.get("subjects")?.as_array()?;
    subjects.iter().find_map(|subject| {
        let name = str_at(subject, &["name"]);
        match str_at(subject, &["kind"]) {
            "User" if user.username == name => Some(format!("User {name:?}")),
            "Group" if user.groups.iter().any(|g| g == name) => Some(format!("Group {name:?}")),
            "ServiceAccount" => {
                // A subject without a namespace means the binding's own.
                let namespace = match str_at(subject, &["namespace"]) {
                    "" => binding_namespace,
                    ns => ns,
                };
                let username = format!("system:serviceaccount:{namespace}:{name}");
                (user.username == username)
                    .then(|| format!("ServiceAccount \"{name}/{namespace}\""))
            }
            _ => None,
        }
    })
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The 403 kube-apiserver answers a request its user may not make.
pub(crate) fn forbidden(user: &UserInfo, attrs: &Attributes) -> ApiError {
    let username = &user.username;
    if !attrs.resource_request {
        let detail = format!(
            "User {username:?} cannot {} path {:?}",
            attrs.verb, attrs.path
        );
        return ApiError::forbidden("", "", "", &detail);
    }
    let resource = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {:?}", attrs.namespace)
    };
    let detail = format!(
        "User {username:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        attrs.verb, attrs.api_group
    );
    ApiError::forbidden(&attrs.api_group, &attrs.resource, &attrs.name, &detail)
}

#[cfg(test)]
mod tests;
