//! ControllerRevisions, the history StatefulSets and DaemonSets keep of
//! their Pod templates (kube-controller-manager's `history` package): one
//! revision per distinct template, named `<owner>-<hash>`, labelled with
//! the template's labels and `controller.kubernetes.io/hash`, holding the
//! patch that restores the template, numbered in order of use (a template
//! used again becomes the newest revision). Old revisions beyond
//! `revisionHistoryLimit` that no Pod uses are deleted.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, CONTROLLERREVISIONS};
use super::template_hash::safe_encode;
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

pub(crate) const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The revisions `owner` controls, oldest first.
pub(crate) fn owned(app: &App, owner: &Value) -> Vec<Arc<Value>> {
    let uid = meta::uid(owner);
    let mut list: Vec<Arc<Value>> =
        client::list(app, CONTROLLERREVISIONS, Some(meta::namespace(owner)))
            .into_iter()
            .filter(|r| client::controller_uid(r, client::str_at(owner, &["kind"])) == Some(uid))
            .collect();
    list.sort_by_key(|r| number(r));
    list
}

pub(crate) fn number(revision: &Value) -> i64 {
    client::int_at(revision, &["revision"]).unwrap_or(0)
}

/// The template a revision restores.
pub(crate) fn template(revision: &Value) -> Value {
    let mut t = meta::get_path(revision, &["data", "spec", "template"])
        .cloned()
        .unwrap_or_default();
    if let Some(map) = t.as_object_mut() {
        map.remove("$patch");
    }
    t
}

/// The hash part of a revision's name (`web-7c9d8f` → `7c9d8f`).
pub(crate) fn hash_of(revision: &Value) -> String {
    meta::get_path(revision, &["metadata", "labels", HASH_LABEL])
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            let name = meta::name(revision);
            name.rsplit_once('-').map_or(name, |(_, h)| h).to_string()
        })
}

/// kube-controller-manager's `HashControllerRevision`: FNV-32 (not FNV-1a)
/// of the revision's data as Go's `json.Marshal` writes it (keys sorted,
/// HTML characters escaped), then of the collision count in decimal when
/// there is one; the sum in decimal, in the safe alphabet.
pub(crate) fn revision_hash(data: &Value, collision_count: Option<i64>) -> String {
    let mut bytes =
        crate::gojson::escape_html(serde_json::to_vec(&sorted(data)).unwrap_or_default());
    if let Some(count) = collision_count {
        bytes.extend(count.to_string().bytes());
    }
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash = hash.wrapping_mul(0x0100_0193);
        hash ^= u32::from(b);
    }
    safe_encode(hash)
}

/// `value` with every object's keys in order, as Go marshals a map.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The revision of `owner`'s current template, made (or made newest) if
/// needed, and all its revisions after that.
pub(crate) async fn update_revision(
    app: &App,
    owner: &Value,
) -> ApiResult<(Arc<Value>, Vec<Arc<Value>>)> {
    let template = meta::get_path(owner, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    let history = owned(app, owner);
    let newest = history.last().map_or(0, |r| number(r));
    if let Some(same) = history.iter().find(|r| self::template(r) == template) {
        if number(same) == newest {
            return Ok((same.clone(), history));
        }
        // A template used before (a rollback): its revision becomes the newest.
        let (ns, name) = (meta::namespace(same), meta::name(same));
        client::modify_with_admission(
            app,
            CONTROLLERREVISIONS,
            ns,
            name,
            None,
            CONTROLLER_MANAGER,
            |r| {
                r["revision"] = json!(newest + 1);
                true
            },
        )
        .await?;
        let history = owned(app, owner);
        let same = history
            .iter()
            .find(|r| meta::name(r) == name)
            .cloned()
            .unwrap_or_else(|| same.clone());
        return Ok((same, history));
    }
    let mut patched = template.clone();
    if let Some(map) = patched.as_object_mut() {
        map.insert("$patch".into(), json!("replace"));
    }
    let data = sorted(&json!({"spec": {"template": patched}}));
    // A StatefulSet's collision count is always part of the hash (0 when
    // unset); a DaemonSet's only once its status has one.
    let collisions = client::int_at(owner, &["status", "collisionCount"]);
    let probe = match client::str_at(owner, &["kind"]) {
        "StatefulSet" => Some(collisions.unwrap_or(0)),
        _ => collisions,
    };
    let hash = revision_hash(&data, probe);
    let mut labels: Map<String, Value> = meta::get_path(&template, &["metadata", "labels"])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(HASH_LABEL.into(), json!(hash));
    let revision = json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": format!("{}-{hash}", meta::name(owner)),
            "labels": labels,
            "ownerReferences": [client::controller_ref(owner)],
        },
        "data": data,
        "revision": newest + 1,
    });
    let ns = meta::namespace(owner);
    let created =
        client::create_object(app, CONTROLLERREVISIONS, ns, revision, CONTROLLER_MANAGER).await?;
    let mut history = history;
    history.push(created.clone());
    Ok((created, history))
}

/// Deletes the oldest revisions beyond `revisionHistoryLimit` (default 10)
/// that are neither `live` (named by a Pod or the status) nor the newest.
pub(crate) fn truncate(
    app: &App,
    owner: &Value,
    history: &[Arc<Value>],
    live: &BTreeSet<String>,
) -> ApiResult<()> {
    let limit = client::int_at(owner, &["spec", "revisionHistoryLimit"])
        .unwrap_or(10)
        .max(0) as usize;
    let Some((_, older)) = history.split_last() else {
        return Ok(());
    };
    let idle: Vec<&Arc<Value>> = older
        .iter()
        .filter(|r| !live.contains(meta::name(r)) && !live.contains(&hash_of(r)))
        .collect();
    if idle.len() <= limit {
        return Ok(());
    }
    for r in &idle[..idle.len() - limit] {
        client::delete(
            app,
            CONTROLLERREVISIONS,
            meta::namespace(r),
            meta::name(r),
            meta::uid(r),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The revision kube-controller-manager v1.32 made for a StatefulSet
    /// `db` (tests/fixtures/kcm-objects-v1.32/statefulset-controllerrevision.json).
    #[test]
    fn revision_hashes_are_kube_controller_managers() {
        let data = json!({"spec": {"template": {"$patch": "replace",
            "metadata": {"creationTimestamp": null, "labels": {"app": "db"}},
            "spec": {"containers": [{"image": "nginx", "imagePullPolicy": "Always", "name": "c",
                "resources": {}, "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                "schedulerName": "default-scheduler", "securityContext": {},
                "terminationGracePeriodSeconds": 30}}}});
        assert_eq!(revision_hash(&data, Some(0)), "845c666c86");
        assert_ne!(revision_hash(&data, None), "845c666c86");
        assert_ne!(revision_hash(&data, Some(1)), "845c666c86");
    }
}
