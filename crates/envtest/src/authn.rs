//! Authentication of ServiceAccount tokens and the two endpoints around
//! them: `serviceaccounts/<name>/token` (TokenRequest, what `kubectl create
//! token` calls) and `authentication.k8s.io/v1` TokenReview.
//!
//! A request whose bearer token is a JSON Web Token from this server's
//! issuer acts as its ServiceAccount (`system:serviceaccount:NS:NAME`, in
//! `system:serviceaccounts` and `system:serviceaccounts:NS`) and is held to
//! the stored RBAC rules; an expired, tampered or foreign-signed one, or
//! one whose ServiceAccount is gone (or was recreated), gets kube-apiserver's
//! 401. A legacy token (from a `kubernetes.io/service-account-token`
//! Secret) is accepted while its Secret holds it and its ServiceAccount
//! exists with the uid it names. Any other credential is left to the
//! server's own authentication.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::app::App;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::store::ResKey;
use crate::tokens::{Claims, ISSUER, LegacyClaims, Refused, is_jwt};
use crate::user::UserInfo;

const SERVICE_ACCOUNTS: &str = "serviceaccounts";
const SECRETS: &str = "secrets";
/// TokenRequest's default lifetime, and the bounds validation puts on it.
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;

/// The audiences this server accepts tokens for.
fn api_audiences() -> Vec<String> {
    vec![ISSUER.to_string()]
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// kube-apiserver's answer to a credential it does not accept.
pub(crate) fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The bearer token of a request, if it carries one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether a request acts as envtest's administrator: any request when
/// serving plain HTTP; with HTTPS, one bearing the administrator's token.
pub(crate) fn is_administrator(app: &App, headers: &HeaderMap) -> bool {
    match &app.identity {
        None => true,
        Some(id) => bearer(headers).is_some_and(|t| id.is_admin_token(t)),
    }
}

/// The ServiceAccount a request's bearer token names: `Ok(None)` when the
/// request carries no ServiceAccount token, 401 when it carries one this
/// server does not accept.
pub(crate) fn service_account_user(app: &App, headers: &HeaderMap) -> ApiResult<Option<UserInfo>> {
    let Some(token) = bearer(headers).filter(|t| is_jwt(t)) else {
        return Ok(None);
    };
    match check(app, token, &api_audiences()) {
        Ok((user, _)) => Ok(Some(user)),
        Err(e) if e == INVALID_TOKEN => Ok(None),
        Err(_) => Err(unauthorized()),
    }
}

/// A TokenReview's judgement of `token`, by the authenticators that guard
/// requests, in kube-apiserver's order: the administrator's static token
/// (audience-agnostic: it holds the server's own audiences), then
/// ServiceAccount tokens.
fn review(app: &App, token: &str, audiences: &[String]) -> Result<(UserInfo, Vec<String>), String> {
    if let Some(id) = &app.identity
        && id.is_admin_token(token)
    {
        let granted: Vec<String> = api_audiences()
            .into_iter()
            .filter(|a| audiences.contains(a))
            .collect();
        if granted.is_empty() {
            return Err(INVALID_TOKEN.to_string());
        }
        return Ok((UserInfo::default(), granted));
    }
    check(app, token, audiences)
}

/// Who a token authenticates as and the audiences granted, when it is
/// valid now for one of `audiences` and its ServiceAccount still exists
/// with the uid it was issued for; otherwise the error kube-apiserver's
/// token authenticators give (what a TokenReview reports).
fn check(app: &App, token: &str, audiences: &[String]) -> Result<(UserInfo, Vec<String>), String> {
    let claims = match app.tokens.verify(token, now(), audiences) {
        Ok(claims) => claims,
        Err(Refused::NotOurs) => return check_legacy_token(app, token, audiences),
        Err(refused) => return Err(refusal_text(&refused, audiences)),
    };
    account_alive(app, &claims.namespace, &claims.name, &claims.uid, false)?;
    let granted = claims
        .audiences
        .iter()
        .filter(|a| audiences.contains(a))
        .cloned()
        .collect();
    Ok((claims.user(), granted))
}

/// A legacy token (from a token Secret), or `invalid bearer token` for a
/// credential no authenticator recognises.
fn check_legacy_token(
    app: &App,
    token: &str,
    audiences: &[String],
) -> Result<(UserInfo, Vec<String>), String> {
    let claims = match app.tokens.verify_legacy(token) {
        Ok(claims) => claims,
        Err(refused) => return Err(refusal_text(&refused, audiences)),
    };
    // A legacy token has no audience: it holds the server's own.
    let implicit = api_audiences();
    let granted: Vec<String> = implicit
        .iter()
        .filter(|a| audiences.contains(a))
        .cloned()
        .collect();
    if granted.is_empty() {
        return Err(audience_text(&implicit, audiences));
    }
    check_legacy(app, token, &claims)?;
    Ok((claims.user(), granted))
}

/// The texts of pkg/serviceaccount (jwt.go, claims.go) and go-jose for a
/// token this server's key or issuer refuses.
fn refusal_text(refused: &Refused, audiences: &[String]) -> String {
    match refused {
        Refused::NotOurs | Refused::Malformed => INVALID_TOKEN.to_string(),
        // A key id this server does not have finds no key; a signature
        // made for other bytes fails go-jose's check.
        Refused::UnknownKey => "invalid signature, no keys found".to_string(),
        Refused::BadSignature => "go-jose/go-jose: error in cryptographic primitive".to_string(),
        Refused::Expired => "service account token has expired".to_string(),
        Refused::NotYetValid => "service account token is not valid yet".to_string(),
        Refused::WrongAudience(held) => audience_text(held, audiences),
    }
}

/// jwt.go's refusal of a token meant for other audiences (Go's `%q` of a
/// string slice).
fn audience_text(held: &[String], wanted: &[String]) -> String {
    let quote = |list: &[String]| {
        let items: Vec<String> = list.iter().map(|a| crate::gofmt::quote(a)).collect();
        format!("[{}]", items.join(" "))
    };
    format!(
        "token audiences {} is invalid for the target audiences {}",
        quote(held),
        quote(wanted)
    )
}

/// What kube-apiserver's bearer-token authenticator answers when no token
/// authenticator recognises the credential.
const INVALID_TOKEN: &str = "invalid bearer token";

/// The ServiceAccount a token names must still exist, not be deleted, and
/// have the uid the token was issued for (claims.go; legacy.go writes
/// `ServiceAccount` where claims.go writes `service account`).
fn account_alive(app: &App, ns: &str, name: &str, uid: &str, legacy: bool) -> Result<(), String> {
    let key: ResKey = Arc::from(SERVICE_ACCOUNTS);
    let Some(sa) = app.store.get(&key, ns, name) else {
        return Err(format!("serviceaccounts \"{name}\" not found"));
    };
    let noun = if legacy {
        "ServiceAccount"
    } else {
        "service account"
    };
    if sa.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(format!("{noun} {ns}/{name} has been deleted"));
    }
    if meta::uid(&sa) != uid {
        return Err(format!(
            "{noun} UID ({}) does not match claim ({uid})",
            meta::uid(&sa)
        ));
    }
    Ok(())
}

/// A legacy token is good while its Secret (not being deleted) still holds
/// exactly it and its ServiceAccount exists with the same uid.
fn check_legacy(app: &App, token: &str, claims: &LegacyClaims) -> Result<(), String> {
    let key: ResKey = Arc::from(SECRETS);
    let invalidated = || "Token has been invalidated".to_string();
    let secret = app
        .store
        .get(&key, &claims.namespace, &claims.secret)
        .ok_or_else(invalidated)?;
    if meta::is_deleting(&secret) {
        return Err(invalidated());
    }
    let held = secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|d| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(d).ok()
        });
    if held.as_deref() != Some(token.as_bytes()) {
        return Err("Token does not match server's copy".to_string());
    }
    account_alive(app, &claims.namespace, &claims.name, &claims.uid, true)
}

fn invalid_request(detail_field: &str, value: i64, detail: &str) -> ApiError {
    ApiError::invalid(
        "authentication.k8s.io",
        "TokenRequest",
        "",
        vec![Cause::invalid(detail_field, &json!(value), detail)],
    )
}

/// The `fieldsV1` of what a review or token request sets: every field of
/// these specs is a scalar, an atomic list or a struct.
/// The field set of a request's `spec`: its own fields, and below them every
/// object with fields also owns itself (`"."`), as the pointer structs and
/// maps of these specs do (lists are atomic).
fn fields_v1(value: &Value, nested: bool) -> Value {
    match value {
        Value::Object(map) => {
            let mut set: serde_json::Map<String, Value> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (format!("f:{k}"), fields_v1(v, true)))
                .collect();
            if nested && !set.is_empty() {
                set.insert(".".to_string(), json!({}));
            }
            Value::Object(set)
        }
        _ => json!({}),
    }
}

/// The managedFields kube-apiserver records on the answer to a create that
/// stores nothing: the request's `spec`, as an Update by `manager`.
pub(crate) fn answer_metadata(
    meta: &mut Value,
    manager: &str,
    api_version: &str,
    spec: &Value,
    subresource: Option<&str>,
) {
    let set = fields_v1(spec, false);
    if set.as_object().is_none_or(|m| m.is_empty()) {
        return;
    }
    let mut entry = json!({
        "manager": manager, "operation": "Update", "apiVersion": api_version,
        "time": meta::now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": set},
    });
    if let Some(sub) = subresource {
        entry["subresource"] = json!(sub);
    }
    if let Some(m) = meta.as_object_mut() {
        m.insert("managedFields".into(), json!([entry]));
    }
}

/// POST `serviceaccounts/<name>/token`: a token for the ServiceAccount, with
/// the request's audiences (this server's when it names none) and lifetime,
/// answered as written by `manager`.
pub(crate) fn token_request(
    app: &App,
    ns: &str,
    name: &str,
    mut body: Value,
    manager: &str,
) -> ApiResult<Value> {
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if expiration < MIN_EXPIRATION {
        return Err(invalid_request(
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION {
        return Err(invalid_request(
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if spec.get("boundObjectRef").is_some_and(|v| !v.is_null()) {
        // Tokens bound to a Pod or Secret need those objects' lifecycles
        // checked on every use; envtest refuses rather than ignore the binding.
        return Err(ApiError::bad_request(
            "envtest does not issue tokens bound to an object (spec.boundObjectRef); request an unbound token",
        ));
    }
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => api_audiences(),
    };
    let key: ResKey = Arc::from(SERVICE_ACCOUNTS);
    let Some(sa) = app.store.get(&key, ns, name) else {
        return Err(ApiError::not_found("", SERVICE_ACCOUNTS, name));
    };
    let issued_at = now();
    let claims = Claims {
        namespace: ns.to_string(),
        name: name.to_string(),
        uid: meta::uid(&sa).to_string(),
        audiences: audiences.clone(),
        issued_at,
        expires_at: issued_at + expiration,
        id: uuid::Uuid::new_v4().to_string(),
    };
    let token = app.tokens.issue(&claims);
    let expires = jiff::Timestamp::from_second(claims.expires_at)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let map = body
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the TokenRequest must be an object"))?;
    map.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
    map.insert("kind".into(), json!("TokenRequest"));
    let mut metadata =
        json!({"name": name, "namespace": ns, "creationTimestamp": meta::now_rfc3339()});
    answer_metadata(
        &mut metadata,
        manager,
        "authentication.k8s.io/v1",
        &spec,
        Some("token"),
    );
    map.insert("metadata".into(), metadata);
    map.insert(
        "spec".into(),
        json!({"audiences": audiences, "expirationSeconds": expiration, "boundObjectRef": null}),
    );
    map.insert(
        "status".into(),
        json!({"token": token, "expirationTimestamp": expires}),
    );
    Ok(body)
}

/// POST `tokenreviews`: who a token authenticates as, for the audiences the
/// review names (this server's when it names none), answered as written by
/// `manager`.
pub(crate) fn token_review(app: &App, mut body: Value, manager: &str) -> ApiResult<Value> {
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let token = body
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let requested: Vec<String> = body
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let audiences = if requested.is_empty() {
        api_audiences()
    } else {
        requested
    };
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let status = match review(app, &token, &audiences) {
        Ok((user, granted)) => {
            json!({"authenticated": true, "user": user.to_json(), "audiences": granted})
        }
        Err(error) => json!({"user": {}, "error": error}),
    };
    let map = body
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the TokenReview must be an object"))?;
    map.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
    map.insert("kind".into(), json!("TokenReview"));
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    answer_metadata(metadata, manager, "authentication.k8s.io/v1", &spec, None);
    map.insert("status".into(), status);
    Ok(body)
}
