//! The reviews: `authorization.k8s.io/v1` SelfSubjectAccessReview,
//! SubjectAccessReview, LocalSubjectAccessReview (can this user do this?)
//! and SelfSubjectRulesReview (what may I do in this namespace?), and
//! `authentication.k8s.io/v1` SelfSubjectReview (who am I?). They are
//! created, answered and never stored, as on kube-apiserver.

use serde_json::{Map, Value, json};

use crate::authz::{Attributes, Decision, Rule, authorize, visit_rules};
use crate::error::{ApiError, ApiResult, Cause};
use crate::registry::Resource;
use crate::store::Store;
use crate::user::UserInfo;

/// Whether `res` is one of the reviews this module answers.
pub(crate) fn is_review(res: &Resource) -> bool {
    matches!(
        (res.group.as_str(), res.kind.as_str()),
        ("authentication.k8s.io", "SelfSubjectReview" | "TokenReview")
            | ("authorization.k8s.io", _)
    )
}

/// Answers the review `body` POSTed to `res` (in namespace `ns` for a
/// LocalSubjectAccessReview) by `requester`.
pub(crate) fn answer(
    store: &Store,
    res: &Resource,
    ns: &str,
    requester: &UserInfo,
    mut body: Value,
    manager: &str,
) -> ApiResult<Value> {
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let status = match res.kind.as_str() {
        "SelfSubjectReview" => json!({"userInfo": requester.to_json()}),
        "SelfSubjectRulesReview" => rules_review(store, requester, &spec),
        "SelfSubjectAccessReview" => {
            let attrs = attributes(res, &spec)?;
            access_status(&authorize(store, requester, &attrs))
        }
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let user = subject(&spec);
            if user.username.is_empty() && user.groups.is_empty() {
                return Err(invalid(
                    res,
                    "spec.user",
                    &json!(""),
                    "at least one of user or group must be specified",
                ));
            }
            let attrs = attributes(res, &spec)?;
            if res.kind == "LocalSubjectAccessReview"
                && attrs.resource_request
                && attrs.namespace != ns
            {
                return Err(invalid(
                    res,
                    "spec.resourceAttributes.namespace",
                    &json!(attrs.namespace),
                    "must match metadata.namespace",
                ));
            }
            access_status(&authorize(store, &user, &attrs))
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let Value::Object(map) = &mut body else {
        return Err(ApiError::bad_request("the review must be an object"));
    };
    map.insert("apiVersion".into(), json!(res.api_version()));
    map.insert("kind".into(), json!(res.kind));
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        // A SelfSubjectReview is stamped with the time it was answered.
        let created = if res.kind == "SelfSubjectReview" {
            json!(crate::meta::now_rfc3339())
        } else {
            Value::Null
        };
        m.entry("creationTimestamp").or_insert(created);
    }
    crate::authn::answer_metadata(metadata, manager, &res.api_version(), &spec, None);
    map.insert("status".into(), status);
    Ok(body)
}

/// A review's validation error: kube-apiserver names the kind of the decoded
/// internal object, whose kind is empty (`.authorization.k8s.io "" is invalid`).
fn invalid(res: &Resource, field: &str, value: &Value, detail: &str) -> ApiError {
    ApiError::invalid(
        &res.group,
        "",
        "",
        vec![Cause::invalid(field, value, detail)],
    )
}

/// The user a SubjectAccessReview asks about.
fn subject(spec: &Value) -> UserInfo {
    let text = |field: &str| spec.get(field).and_then(Value::as_str).unwrap_or("");
    UserInfo {
        username: text("user").to_string(),
        uid: text("uid").to_string(),
        groups: spec
            .get("groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        extra: Default::default(),
    }
}

/// The request a review describes: `resourceAttributes` or
/// `nonResourceAttributes`, exactly one.
fn attributes(res: &Resource, spec: &Value) -> ApiResult<Attributes> {
    let text = |v: &Value, field: &str| {
        v.get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match (
        spec.get("resourceAttributes").filter(|v| v.is_object()),
        spec.get("nonResourceAttributes").filter(|v| v.is_object()),
    ) {
        (Some(r), None) => Ok(Attributes {
            verb: text(r, "verb"),
            resource_request: true,
            api_group: text(r, "group"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
            path: String::new(),
        }),
        (None, Some(n)) => Ok(Attributes {
            verb: text(n, "verb"),
            path: text(n, "path"),
            ..Attributes::default()
        }),
        (both, _) => Err(invalid(
            res,
            if both.is_some() {
                "spec.nonResourceAttributes"
            } else {
                "spec.resourceAttributes"
            },
            &Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

fn access_status(decision: &Decision) -> Value {
    let mut status = Map::new();
    status.insert("allowed".into(), json!(decision.allowed));
    if !decision.reason.is_empty() {
        status.insert("reason".into(), json!(decision.reason));
    }
    Value::Object(status)
}

/// What `requester` may do in `spec.namespace`: every rule bound to them
/// there and cluster-wide (the bootstrap bindings included).
fn rules_review(store: &Store, requester: &UserInfo, spec: &Value) -> Value {
    let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    let mut add = |rule: &Rule| {
        let json = rule.to_review_json();
        let list = if rule.non_resource_urls.is_empty() {
            &mut resource_rules
        } else {
            &mut non_resource_rules
        };
        if !list.contains(&json) {
            list.push(json);
        }
    };
    if requester.groups.iter().any(|g| g == "system:masters") {
        add(&Rule::on_resources(&["*"], "*", &["*"]));
        add(&Rule::on_paths(&["*"], &["*"]));
    }
    visit_rules(store, requester, namespace, |_, rule| {
        add(rule);
        true
    });
    json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    })
}
