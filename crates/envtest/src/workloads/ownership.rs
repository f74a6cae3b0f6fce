//! kube-controller-manager's `ControllerRefManager`: before a controller
//! counts what it owns, it adopts the orphans its selector matches (a
//! controller owner reference with `blockOwnerDeletion`, patched in as
//! `kube-controller-manager`) and releases what it owns that the selector no
//! longer matches (its owner reference removed). Objects another controller
//! owns, and objects being deleted, are left alone; a controller being
//! deleted adopts and releases nothing.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{self, CONTROLLER_MANAGER};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;
use crate::selectors::LabelSelector;

/// What a controller claims: objects of `key` in its namespace.
pub(crate) struct Claim<'a> {
    pub key: &'a str,
    pub selector: Option<LabelSelector>,
    /// Finalizers an adopted object gets (a Job's tracking finalizer).
    pub finalizers: &'a [&'a str],
}

/// The controller's selector from `spec.selector` (a LabelSelector); an
/// unparsable one selects nothing.
pub(crate) fn selector_of(owner: &Value) -> Option<LabelSelector> {
    LabelSelector::from_object(meta::get_path(owner, &["spec", "selector"])).ok()
}

/// Whether `obj` has no controller owner reference.
pub(crate) fn is_orphan(obj: &Value) -> bool {
    !meta::owner_references(obj)
        .iter()
        .any(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// `ClaimObjects`: the candidates `owner` owns once orphans that match are
/// adopted and owned ones that do not are released. `matches` adds what
/// the selector alone does not say (a StatefulSet's Pod names).
pub(crate) async fn claim(
    app: &App,
    owner: &Value,
    claim: &Claim<'_>,
    candidates: Vec<Arc<Value>>,
    matches: impl Fn(&Value) -> bool,
) -> ApiResult<Vec<Arc<Value>>> {
    let uid = meta::uid(owner);
    let deleting = meta::is_deleting(owner);
    let selected = |obj: &Value| {
        claim
            .selector
            .as_ref()
            .is_some_and(|s| !s.is_empty() && s.matches_object(obj))
            && matches(obj)
    };
    let mut owned = Vec::new();
    for obj in candidates {
        let controller = meta::owner_references(&obj)
            .into_iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true));
        match controller {
            Some(r) if r.get("uid").and_then(Value::as_str) != Some(uid) => {}
            Some(_) if selected(&obj) => owned.push(obj),
            Some(_) => {
                if !deleting {
                    release(app, claim.key, owner, &obj).await?;
                }
            }
            None if deleting || !selected(&obj) || meta::is_deleting(&obj) => {}
            None => {
                if let Some(adopted) = adopt(app, claim, owner, &obj).await? {
                    owned.push(adopted);
                }
            }
        }
    }
    Ok(owned)
}

/// Adds `owner` as the controller of `obj` (when it is still an orphan).
async fn adopt(
    app: &App,
    claim: &Claim<'_>,
    owner: &Value,
    obj: &Value,
) -> ApiResult<Option<Arc<Value>>> {
    let uid = meta::uid(obj).to_string();
    let reference = client::controller_ref(owner);
    client::modify_with_admission(
        app,
        claim.key,
        meta::namespace(obj),
        meta::name(obj),
        None,
        CONTROLLER_MANAGER,
        |o| {
            if meta::uid(o) != uid || !is_orphan(o) || meta::is_deleting(o) {
                return false;
            }
            let mut refs: Vec<Value> = meta::owner_references(o)
                .into_iter()
                .map(|r| Value::Object(r.clone()))
                .collect();
            refs.push(reference.clone());
            meta::set_meta(o, "ownerReferences", Value::Array(refs));
            let mut finalizers: Vec<Value> =
                meta::finalizers(o).into_iter().map(Value::from).collect();
            for f in claim.finalizers {
                if !finalizers.iter().any(|x| x == f) {
                    finalizers.push(json!(f));
                }
            }
            if !finalizers.is_empty() {
                meta::set_meta(o, "finalizers", Value::Array(finalizers));
            }
            true
        },
    )
    .await?;
    let adopted = client::get(app, claim.key, meta::namespace(obj), meta::name(obj));
    Ok(adopted
        .filter(|o| meta::uid(o) == uid && client::controller_uid_any(o) == Some(meta::uid(owner))))
}

/// Removes `owner`'s reference from `obj`.
async fn release(app: &App, key: &str, owner: &Value, obj: &Value) -> ApiResult<()> {
    let (uid, owner_uid) = (meta::uid(obj).to_string(), meta::uid(owner).to_string());
    client::modify_with_admission(
        app,
        key,
        meta::namespace(obj),
        meta::name(obj),
        None,
        CONTROLLER_MANAGER,
        |o| {
            if meta::uid(o) != uid {
                return false;
            }
            let refs: Vec<Value> = meta::owner_references(o)
                .into_iter()
                .map(|r| Value::Object(r.clone()))
                .collect();
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid.as_str()))
                .cloned()
                .collect();
            if kept.len() == refs.len() {
                return false;
            }
            if kept.is_empty() {
                meta::remove_meta(o, "ownerReferences");
            } else {
                meta::set_meta(o, "ownerReferences", Value::Array(kept));
            }
            true
        },
    )
    .await
}
