//! Server-side apply and Update bookkeeping beyond what the transcripts show:
//! list items and map keys an applier stops applying, sets and atomic
//! lists, several conflicting managers, subresources, unmanaged objects.

use serde_json::{Value, json};

use super::kinds::TranscriptKinds;
use crate::error::ApiError;
use crate::patch::{ApplyRequest, UpdateRequest, record_update, server_side_apply};

const T1: &str = "2026-11-30T10:00:01Z";
const T2: &str = "2026-11-30T10:00:02Z";

fn apply_as(
    live: Option<&Value>,
    applied: Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    let api_version = applied["apiVersion"].as_str().unwrap_or("").to_string();
    server_side_apply(&ApplyRequest {
        live,
        applied: &applied,
        manager,
        force,
        api_version: &api_version,
        subresource: None,
        now: T1,
        types: &TranscriptKinds,
    })
}

fn apply_ok(live: Option<&Value>, applied: Value, manager: &str) -> Value {
    apply_as(live, applied, manager, false).unwrap_or_else(|e| panic!("apply as {manager}: {e}"))
}

/// A live object as the server would store it after an apply (uid set).
fn stored(mut obj: Value) -> Value {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("uid".into(), json!("00000000-0000-4000-8000-000000000001"));
    }
    obj
}

fn fields_of(obj: &Value, manager: &str) -> Value {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|e| e["manager"] == manager))
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn managers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|e| e["manager"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
        }
    })
}

fn update_as(old: Option<&Value>, new: &mut Value, manager: &str, subresource: Option<&str>) {
    let api_version = new["apiVersion"].as_str().unwrap_or("").to_string();
    record_update(
        &UpdateRequest {
            old,
            manager,
            api_version: &api_version,
            subresource,
            now: T2,
            types: &TranscriptKinds,
        },
        new,
    );
}

#[test]
fn apply_create_owns_exactly_the_applied_fields() {
    let out = apply_ok(
        None,
        deployment(json!([{"name": "app", "image": "nginx"}])),
        "a",
    );
    assert_eq!(
        fields_of(&out, "a"),
        json!({"f:spec": {
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}
            }
        }})
    );
    assert_eq!(out["metadata"]["managedFields"][0]["operation"], "Apply");
    assert_eq!(out["metadata"]["managedFields"][0]["time"], T1);
}

#[test]
fn list_items_no_longer_applied_are_removed_unless_someone_else_owns_them() {
    let two = json!([{"name": "app", "image": "nginx"}, {"name": "sidecar", "image": "busybox"}]);
    let live = stored(apply_ok(None, deployment(two), "a"));
    // b co-owns the sidecar by applying it with the same values.
    let live = stored(apply_ok(
        Some(&live),
        deployment(json!([{"name": "sidecar", "image": "busybox"}])),
        "b",
    ));
    let out = apply_ok(
        Some(&live),
        deployment(json!([{"name": "app", "image": "nginx"}])),
        "a",
    );
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, vec!["app", "sidecar"], "b still owns the sidecar");

    // Once only a owned it, dropping it removes it.
    let live = stored(apply_ok(
        None,
        deployment(json!([{"name": "app"}, {"name": "tmp"}])),
        "a",
    ));
    let out = apply_ok(Some(&live), deployment(json!([{"name": "app"}])), "a");
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app"}])
    );
    assert!(
        fields_of(&out, "a").to_string().contains("app")
            && !fields_of(&out, "a").to_string().contains("tmp")
    );
}

#[test]
fn map_keys_no_longer_applied_are_removed_but_defaults_and_updates_stay() {
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"x": "1", "y": "2"}}, "data": data});
    let mut live = stored(apply_ok(None, cm(json!({"k1": "a", "k2": "b"})), "a"));
    // An Update manager changes k2: it takes it over.
    let mut new = live.clone();
    new["data"]["k2"] = json!("changed");
    new["data"]["extra"] = json!("e");
    update_as(Some(&live), &mut new, "m", None);
    assert_eq!(
        fields_of(&new, "m"),
        json!({"f:data": {"f:extra": {}, "f:k2": {}}})
    );
    assert_eq!(
        fields_of(&new, "a"),
        json!({"f:data": {"f:k1": {}}, "f:metadata": {"f:labels": {"f:x": {}, "f:y": {}}}})
    );
    live = new;
    let mut applied = cm(json!({"k1": "a"}));
    applied["metadata"]["labels"] = json!({"x": "1"});
    let out = apply_ok(Some(&live), applied, "a");
    assert_eq!(
        out["data"],
        json!({"k1": "a", "k2": "changed", "extra": "e"})
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"x": "1"}),
        "label y only a owned is removed"
    );
}

#[test]
fn a_whole_map_no_longer_applied_is_removed() {
    let cm = |data: Option<Value>| {
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        if let Some(d) = data {
            v["data"] = d;
        }
        v
    };
    let live = stored(apply_ok(None, cm(Some(json!({"k": "v"}))), "a"));
    let out = apply_ok(Some(&live), cm(None), "a");
    assert!(out.get("data").is_none(), "{out}");
    assert!(managers(&out).is_empty(), "nothing left to own: {out}");
}

#[test]
fn sets_merge_by_value_and_atomic_lists_conflict_whole() {
    let pod = |finalizers: Value, tolerations: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": finalizers},
               "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": tolerations}})
    };
    let live = stored(apply_ok(
        None,
        pod(json!(["x"]), json!([{"key": "k1"}])),
        "a",
    ));
    assert_eq!(
        fields_of(&live, "a")["f:metadata"],
        json!({"f:finalizers": {"v:\"x\"": {}}})
    );
    let mut b_config = pod(json!(["y"]), json!([{"key": "k2"}]));
    b_config["spec"]["containers"] = json!([{"name": "c", "image": "i"}]);
    let err =
        apply_as(Some(&live), b_config.clone(), "b", false).expect_err("tolerations conflict");
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.tolerations"
    );
    let out = apply_as(Some(&live), b_config, "b", true).expect("forced");
    assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
    assert_eq!(out["spec"]["tolerations"], json!([{"key": "k2"}]));
    assert_eq!(fields_of(&out, "b")["f:spec"]["f:tolerations"], json!({}));
    assert!(
        fields_of(&out, "a")["f:spec"]
            .get("f:tolerations")
            .is_none()
    );
}

#[test]
fn conflicts_with_several_managers_are_grouped_and_sorted() {
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
    let live = stored(apply_ok(
        None,
        cm(json!({"k1": "a", "k3": "a"})),
        "z-applier",
    ));
    let mut new = live.clone();
    new["data"]["k2"] = json!("m");
    update_as(Some(&live), &mut new, "m", None);
    let err = apply_as(
        Some(&new),
        cm(json!({"k1": "b", "k2": "b", "k3": "b"})),
        "b",
        false,
    )
    .expect_err("three conflicts");
    assert_eq!(
        err.message,
        "Apply failed with 3 conflicts: conflicts with \"m\" using v1:\n- .data.k2\nconflicts with \"z-applier\":\n- .data.k1\n- .data.k3"
    );
    let causes: Vec<(String, String)> = err
        .details
        .map(|d| d.causes.into_iter().map(|c| (c.field, c.message)).collect())
        .unwrap_or_default();
    assert_eq!(
        causes,
        vec![
            (
                ".data.k2".to_string(),
                "conflict with \"m\" using v1".to_string()
            ),
            (
                ".data.k1".to_string(),
                "conflict with \"z-applier\"".to_string()
            ),
            (
                ".data.k3".to_string(),
                "conflict with \"z-applier\"".to_string()
            ),
        ]
    );
}

#[test]
fn objects_nobody_manages_are_owned_by_before_first_apply() {
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "c", "uid": "u-1"}, "data": {"k": "old"}});
    let err = apply_as(Some(&live), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "new"}}), "a", false)
        .expect_err("conflict");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.k"
    );
    // Updates of such objects are not tracked at all.
    let mut new = live.clone();
    new["data"]["k"] = json!("x");
    update_as(Some(&live), &mut new, "m", None);
    assert!(new["metadata"].get("managedFields").is_none());
}

#[test]
fn status_is_owned_only_through_the_status_subresource() {
    let w = |spec: Value, status: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec, "status": status});
    let live = stored(apply_ok(
        None,
        w(json!({"color": "red"}), json!({"ready": true})),
        "a",
    ));
    assert_eq!(
        fields_of(&live, "a"),
        json!({"f:spec": {"f:color": {}}}),
        "status ignored on the main resource"
    );
    let applied = w(json!({"color": "blue"}), json!({"ready": false}));
    let out = server_side_apply(&ApplyRequest {
        live: Some(&live),
        applied: &applied,
        manager: "ctrl",
        force: false,
        api_version: "example.com/v1",
        subresource: Some("status"),
        now: T1,
        types: &TranscriptKinds,
    })
    .expect("no conflict: spec is not the status applier's");
    let entry = out["metadata"]["managedFields"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["manager"] == "ctrl").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(entry["subresource"], "status");
    assert_eq!(entry["fieldsV1"], json!({"f:status": {"f:ready": {}}}));

    // Update through /status: the request's managedFields are ignored, spec is not owned.
    let mut new = out.clone();
    new["status"]["ready"] = json!(true);
    new["spec"]["color"] = json!("green");
    new["metadata"]["managedFields"] = json!([]);
    update_as(Some(&out), &mut new, "other", Some("status"));
    let others: Vec<Value> = new["metadata"]["managedFields"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|e| e["manager"] == "other")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(others.len(), 1);
    assert_eq!(others[0]["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
    assert_eq!(
        fields_of(&new, "a"),
        json!({"f:spec": {"f:color": {}}}),
        "spec change ignored on /status"
    );
}

#[test]
fn apply_request_checks() {
    let err = server_side_apply(&ApplyRequest {
        live: None,
        applied: &json!({"apiVersion": "v2", "kind": "ConfigMap"}),
        manager: "a",
        force: false,
        api_version: "v1",
        subresource: None,
        now: T1,
        types: &TranscriptKinds,
    })
    .expect_err("other version");
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            400,
            "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
        )
    );
    let err = server_side_apply(&ApplyRequest {
        live: None,
        applied: &json!({"kind": "ConfigMap"}),
        manager: "a",
        force: false,
        api_version: "v1",
        subresource: None,
        now: T1,
        types: &TranscriptKinds,
    })
    .expect_err("missing apiVersion");
    assert_eq!(
        err.message,
        "Incorrect version specified in apply patch. Specified patch version: , expected: v1"
    );
    let err = apply_as(
        None,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": []}}),
        "a",
        false,
    )
    .expect_err("managedFields");
    assert_eq!(err.message, "metadata.managedFields must be nil");
    let err = apply_as(
        None,
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"image": "x"}]}}),
        "a",
        false,
    )
    .expect_err("missing key");
    assert_eq!(err.code, 500);
    assert!(
        err.message.starts_with(
            "failed to create typed patch object (/; /v1, Kind=Pod): .spec.containers: element 0:"
        ),
        "{}",
        err.message
    );
    let err = apply_as(None, json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "x"}, {"name": "x"}]}}), "a", false)
        .expect_err("duplicate key");
    assert!(
        err.message
            .contains("duplicate entries for key [name=\"x\"]"),
        "{}",
        err.message
    );
}

#[test]
fn a_no_op_apply_keeps_the_time_and_shares_ownership() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
    let live = stored(apply_ok(None, cm.clone(), "a"));
    let out = server_side_apply(&ApplyRequest {
        live: Some(&live),
        applied: &cm,
        manager: "b",
        force: false,
        api_version: "v1",
        subresource: None,
        now: T2,
        types: &TranscriptKinds,
    })
    .expect("shared");
    let entries = out["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // No time sorts as the epoch: b comes first.
    assert_eq!(managers(&out), vec!["b", "a"]);
    assert!(
        entries[0].get("time").is_none(),
        "the real server sets no time on a no-op apply"
    );
    assert_eq!(entries[0]["fieldsV1"], json!({"f:data": {"f:k": {}}}));
    assert_eq!(entries[1]["time"], T1);
}

#[test]
fn request_managed_fields_replace_clear_or_fall_back() {
    let live = stored(apply_ok(
        None,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}),
        "a",
    ));
    // `[]` clears; an existing object then stays unmanaged.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([]);
    new["data"]["k"] = json!("w");
    update_as(Some(&live), &mut new, "m", None);
    assert!(new["metadata"].get("managedFields").is_none(), "{new}");
    // Invalid entries fall back to the stored ones.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Bogus"}]);
    new["data"]["k2"] = json!("w");
    update_as(Some(&live), &mut new, "m", None);
    assert_eq!(managers(&new), vec!["a", "m"]);
    // A valid list replaces the stored one.
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]);
    update_as(Some(&live), &mut new, "m", None);
    assert_eq!(
        managers(&new),
        vec!["x"],
        "nothing changed, nothing gained by m"
    );
}

#[test]
fn failed_tracking_keeps_the_stored_managed_fields() {
    let live = stored(apply_ok(None, deployment(json!([{"name": "app"}])), "a"));
    let mut new = live.clone();
    // A container without its key cannot be tracked.
    new["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}]);
    update_as(Some(&live), &mut new, "m", None);
    assert_eq!(
        new["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
}

#[test]
fn an_update_takes_fields_over_and_drops_emptied_entries() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
    let mut created = cm.clone();
    update_as(None, &mut created, "first", None);
    let live = stored(created);
    let mut new = live.clone();
    new["data"]["k"] = json!("w");
    update_as(Some(&live), &mut new, "second", None);
    assert_eq!(
        managers(&new),
        vec!["first", "second"],
        "first keeps the data map itself"
    );
    // The map itself, without children, is a leaf in FieldsV1.
    assert_eq!(fields_of(&new, "first"), json!({"f:data": {}}));
    let mut again = new.clone();
    again.as_object_mut().map(|o| o.remove("data"));
    update_as(Some(&new), &mut again, "second", None);
    assert_eq!(
        managers(&again),
        Vec::<String>::new(),
        "removing data empties both entries"
    );
}

#[test]
fn kubectl_takes_over_from_its_client_side_apply() {
    let last = r#"{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"c"}}"#;
    let cm = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last}},
               "data": data})
    };
    let mut created = cm(json!({"k": "v", "other": "o"}));
    update_as(None, &mut created, "kubectl-client-side-apply", None);
    let live = stored(created);
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "new", "other": "x"}});

    // `other` was not applied client-side: still a conflict, and only that.
    let err =
        apply_as(Some(&live), applied.clone(), "kubectl", false).expect_err("other conflicts");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.other"
    );
    // Another manager would conflict on both.
    let err = apply_as(Some(&live), applied.clone(), "someone", false).expect_err("two conflicts");
    assert!(
        err.message.starts_with("Apply failed with 2 conflicts"),
        "{}",
        err.message
    );

    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "new"}});
    let out = apply_ok(Some(&live), applied, "kubectl");
    assert_eq!(out["data"]["k"], "new");
    assert_eq!(fields_of(&out, "kubectl"), json!({"f:data": {"f:k": {}}}));
    assert_eq!(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"new\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"}}\n"
    );
}
