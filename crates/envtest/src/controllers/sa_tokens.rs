//! kube-controller-manager's ServiceAccount token controller: a Secret of
//! type `kubernetes.io/service-account-token` naming a ServiceAccount (the
//! `kubernetes.io/service-account.name` annotation) gets `token` (a legacy
//! token signed by this server, see [`crate::tokens`]), `ca.crt` and
//! `namespace` in its data and the account's uid in the
//! `kubernetes.io/service-account.uid` annotation. Such a Secret whose
//! ServiceAccount does not exist (or has another uid) is deleted, and so
//! are an account's token Secrets when the account goes.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::api::delete::delete_internal;
use crate::app::App;
use crate::meta;
use crate::request::query::DeleteOptions;
use crate::store::{Event, EventType, ResKey};
use crate::tokens::LegacyClaims;

const SECRETS: &str = "secrets";
const SERVICE_ACCOUNTS: &str = "serviceaccounts";
pub(super) const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

fn annotation<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn is_token_secret(secret: &Value) -> bool {
    secret.get("type").and_then(Value::as_str) == Some(TOKEN_TYPE)
}

/// Whether `secret` is a token Secret of `sa` (the uid annotation, when
/// set, must match too).
fn belongs_to(secret: &Value, sa: &Value) -> bool {
    let uid = annotation(secret, UID_ANNOTATION);
    is_token_secret(secret)
        && annotation(secret, NAME_ANNOTATION) == meta::name(sa)
        && (uid.is_empty() || uid == meta::uid(sa))
}

pub(super) fn on_event(app: &App, ev: &Event) {
    match &*ev.resource {
        SECRETS if ev.kind != EventType::Deleted && is_token_secret(&ev.object) => {
            sync_secret(app, &ev.namespace, &ev.name);
        }
        SERVICE_ACCOUNTS if ev.kind == EventType::Deleted => {
            delete_tokens_of(app, &ev.object);
        }
        _ => {}
    }
}

fn delete_tokens_of(app: &App, sa: &Value) {
    let Some(res) = resource_for(app, SECRETS) else {
        return;
    };
    let (secrets, _) = app
        .store
        .list(&res.store_key, Some(meta::namespace(sa)), None);
    for (_, secret) in secrets {
        if belongs_to(&secret, sa) && !meta::is_deleting(&secret) {
            delete_secret(app, &secret);
        }
    }
}

fn delete_secret(app: &App, secret: &Value) {
    let Some(res) = resource_for(app, SECRETS) else {
        return;
    };
    let opts = DeleteOptions {
        precondition_uid: Some(meta::uid(secret).to_string()),
        ..Default::default()
    };
    // Gone already, or replaced by another Secret of that name: nothing to do.
    let _ = delete_internal(
        app,
        &res,
        meta::namespace(secret),
        meta::name(secret),
        &opts,
    );
}

/// Fills in a token Secret, or deletes it when its ServiceAccount is missing.
fn sync_secret(app: &App, ns: &str, name: &str) {
    let Some(res) = resource_for(app, SECRETS) else {
        return;
    };
    let Some(secret) = app.store.get(&res.store_key, ns, name) else {
        return;
    };
    if !is_token_secret(&secret) || meta::is_deleting(&secret) {
        return;
    }
    let sa_key: ResKey = Arc::from(SERVICE_ACCOUNTS);
    let account = app
        .store
        .get(&sa_key, ns, annotation(&secret, NAME_ANNOTATION))
        .filter(|sa| belongs_to(&secret, sa) && !meta::is_deleting(sa));
    let Some(sa) = account else {
        delete_secret(app, &secret);
        return;
    };
    let ca = app.root_ca_pem();
    if !needs_update(&secret, &ca) {
        return;
    }
    let secret_uid = meta::uid(&secret).to_string();
    let claims = LegacyClaims {
        namespace: ns.to_string(),
        name: meta::name(&sa).to_string(),
        uid: meta::uid(&sa).to_string(),
        secret: name.to_string(),
    };
    // A write lost to a race comes back as a change and is looked at again.
    let _ = modify_without_admission(app, &res, ns, name, None, CONTROLLER_MANAGER, |obj| {
        if meta::uid(obj) != secret_uid || !needs_update(obj, &ca) {
            return false;
        }
        fill(obj, &ca, || app.tokens.issue_legacy(&claims), &claims);
        true
    });
}

fn data_of<'a>(secret: &'a Value, key: &str) -> &'a str {
    secret
        .pointer("/data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// What the real controller checks: a CA that differs from the server's,
/// an empty namespace or token.
fn needs_update(secret: &Value, ca: &str) -> bool {
    let ca_differs = !ca.is_empty() && data_of(secret, "ca.crt") != STANDARD.encode(ca);
    ca_differs || data_of(secret, "namespace").is_empty() || data_of(secret, "token").is_empty()
}

fn fill(obj: &mut Value, ca: &str, token: impl Fn() -> String, claims: &LegacyClaims) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let data = root.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        if !ca.is_empty() {
            data.insert("ca.crt".into(), json!(STANDARD.encode(ca)));
        }
        if data
            .get("namespace")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            data.insert(
                "namespace".into(),
                json!(STANDARD.encode(&claims.namespace)),
            );
        }
        if data
            .get("token")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            data.insert("token".into(), json!(STANDARD.encode(token())));
        }
    }
    let metadata = root.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        let annotations = m.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Some(a) = annotations.as_object_mut() {
            a.insert(NAME_ANNOTATION.into(), json!(claims.name));
            a.insert(UID_ANNOTATION.into(), json!(claims.uid));
        }
    }
}
