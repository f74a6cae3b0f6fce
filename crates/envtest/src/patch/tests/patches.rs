//! JSON patch, JSON merge patch and strategic merge patch: the recorded
//! steps of transcript 04 and the directives the transcripts do not show.

use serde_json::{Value, json};

use super::kinds::TranscriptKinds;
use super::transcripts::step;
use crate::patch::{json_patch, merge_patch, strategic_merge_patch};

const FILE: &str = "04-patch.json";

fn body_bytes(step: &Value) -> Vec<u8> {
    match step.pointer("/request/body") {
        Some(Value::String(raw)) => raw.as_bytes().to_vec(),
        Some(v) => serde_json::to_vec(v).unwrap_or_default(),
        None => Vec::new(),
    }
}

fn response(step: &Value) -> Value {
    step.pointer("/response/body")
        .cloned()
        .unwrap_or(Value::Null)
}

fn content(obj: &Value, pointer: &str) -> Value {
    obj.pointer(pointer).cloned().unwrap_or(Value::Null)
}

/// The ConfigMap p1 as step `name` left it.
fn configmap_after(name: &str) -> Value {
    response(&step(FILE, name))
}

#[test]
fn merge_patch_deletes_with_null_and_adds() {
    let s = step(FILE, "merge patch: delete data.a");
    let before = configmap_after("create ConfigMap p1");
    let out = merge_patch(&before, &body_bytes(&s)).expect("patch applies");
    let recorded = response(&s);
    assert_eq!(out["data"], recorded["data"]);
    assert_eq!(out["metadata"]["labels"], recorded["metadata"]["labels"]);
}

#[test]
fn json_patch_steps_match_the_recording() {
    let before = configmap_after("merge patch: delete data.a");
    let s = step(FILE, "JSON patch: add, replace, remove");
    let out = json_patch(&before, &body_bytes(&s)).expect("patch applies");
    assert_eq!(out["data"], response(&s)["data"]);

    let s = step(FILE, "JSON patch: passing test op then replace");
    let out = json_patch(&out, &body_bytes(&s)).expect("test passes");
    assert_eq!(out["data"], response(&s)["data"]);
}

#[test]
fn failing_json_patch_operations_are_the_generic_422() {
    let before = configmap_after("JSON patch: passing test op then replace");
    for name in [
        "JSON patch: failing test op",
        "JSON patch: remove a missing path",
        "JSON patch: add under a missing parent",
    ] {
        let s = step(FILE, name);
        let err = json_patch(&before, &body_bytes(&s)).expect_err(name);
        assert_eq!(err.to_status(), response(&s), "{name}");
    }
    // Operations the Go code only rejects when applying them.
    for body in [
        r#"[{"op": "frobnicate", "path": "/data/b"}]"#,
        r#"[{"op": "add", "value": 1}]"#,
        r#"[{"op": "add", "path": "no-slash", "value": 1}]"#,
        r#"[{"op": "move", "path": "/data/x"}]"#,
    ] {
        let err = json_patch(&before, body.as_bytes()).expect_err(body);
        assert_eq!(err.code, 422, "{body}");
    }
}

#[test]
fn a_null_test_passes_for_an_absent_member_of_an_existing_object() {
    // kube-runtime's finalizer helper adds the first finalizer this way.
    let doc = json!({"metadata": {"name": "w"}});
    let body = br#"[{"op": "test", "path": "/metadata/finalizers", "value": null},
                    {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]"#;
    let out = json_patch(&doc, body).expect("null test of an absent member passes");
    assert_eq!(out["metadata"]["finalizers"], json!(["f"]));
    // ...but not when the parent is missing, nor for a present member.
    let missing_parent = br#"[{"op": "test", "path": "/spec/x", "value": null}]"#;
    assert_eq!(json_patch(&doc, missing_parent).unwrap_err().code, 422);
    let present = br#"[{"op": "test", "path": "/metadata/name", "value": null}]"#;
    assert_eq!(json_patch(&doc, present).unwrap_err().code, 422);
}

#[test]
fn malformed_json_patch_bodies_are_400_with_go_messages() {
    let before = configmap_after("create ConfigMap p1");
    let s = step(FILE, "JSON patch body that is not an array");
    let err = json_patch(&before, &body_bytes(&s)).expect_err("object body");
    assert_eq!(err.to_status(), response(&s));
    let cases = [
        (
            &b"[1]"[..],
            "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
        ),
        (
            b"[{\"op\": 5}]",
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
        ),
        (
            b"[{\"op\": ",
            "error decoding patch: unexpected end of JSON input",
        ),
        (
            b"nope",
            "error decoding patch: invalid character 'o' in literal null (expecting 'u')",
        ),
    ];
    for (body, message) in cases {
        let err = json_patch(&before, body).expect_err(message);
        assert_eq!((err.code, err.message.as_str()), (400, message));
    }
    // `null` decodes to no operations.
    assert_eq!(json_patch(&before, b"null").expect("no-op"), before);
}

#[test]
fn too_many_json_patch_operations_is_413() {
    let ops: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
        .collect();
    let body = serde_json::to_vec(&ops).unwrap_or_default();
    let err = json_patch(&json!({"kind": "ConfigMap"}), &body).expect_err("too many");
    assert_eq!(err.code, 413);
    assert!(
        err.message.ends_with("is 10000, got 10001"),
        "{}",
        err.message
    );
}

#[test]
fn merge_patch_errors_and_go_null_handling() {
    let doc = json!({"a": {"b": 1}, "l": [1]});
    let err = merge_patch(&doc, b"[1]").expect_err("array");
    assert_eq!(
        err.message,
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    assert_eq!(
        merge_patch(&doc, b"null").expect_err("null").message,
        "Invalid JSON Patch"
    );
    assert_eq!(merge_patch(&doc, b"{").expect_err("eof").code, 400);
    // Nulls inside new values are dropped, also in objects inside lists.
    let out = merge_patch(
        &doc,
        br#"{"n": {"x": null, "y": 1}, "l": [{"z": null}], "a": {"b": null}}"#,
    )
    .expect("applies");
    assert_eq!(out, json!({"a": {}, "l": [{}], "n": {"y": 1}}));
}

#[test]
fn strategic_patch_on_a_configmap_merges_data() {
    let before = configmap_after("JSON patch: passing test op then replace");
    let s = step(FILE, "strategic merge patch on a ConfigMap");
    let out = strategic_merge_patch(&before, &body_bytes(&s), &TranscriptKinds).expect("applies");
    assert_eq!(out["data"], response(&s)["data"]);
}

/// Steps 14–17: containers merged by name (order kept, new first, delete by
/// name) versus merge patch replacing the list.
#[test]
fn strategic_patch_merges_containers_by_name_in_the_real_order() {
    let mut current = response(&step(FILE, "create Deployment web"));
    for name in [
        "strategic merge patch: change image of container app",
        "strategic merge patch: add container extra",
        "strategic merge patch: $patch: delete removes container sidecar",
    ] {
        let s = step(FILE, name);
        let out = strategic_merge_patch(&current, &body_bytes(&s), &TranscriptKinds).expect(name);
        let recorded = response(&s);
        let names = |v: &Value| -> Vec<Value> {
            content(v, "/spec/template/spec/containers")
                .as_array()
                .map(|cs| cs.iter().map(|c| c["name"].clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(names(&out), names(&recorded), "{name}");
        // The server defaults new containers; compare what the patch decides.
        for (mine, real) in content(&out, "/spec/template/spec/containers")
            .as_array()
            .into_iter()
            .flatten()
            .zip(
                content(&recorded, "/spec/template/spec/containers")
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
        {
            assert_eq!(mine["image"], real["image"], "{name}");
        }
        current = recorded;
    }
    let s = step(FILE, "JSON merge patch of the containers list replaces");
    let out = merge_patch(&current, &body_bytes(&s)).expect("merge patch");
    assert_eq!(
        content(&out, "/spec/template/spec/containers"),
        json!([{"name": "app", "image": "nginx:1.26"}])
    );
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
        "spec": {
            "containers": [
                {"name": "c1", "image": "i1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "c2", "image": "i2"}
            ],
            "tolerations": [{"key": "k"}]
        }
    })
}

fn smp(doc: &Value, patch: Value) -> Value {
    let body = serde_json::to_vec(&patch).unwrap_or_default();
    strategic_merge_patch(doc, &body, &TranscriptKinds).unwrap_or_else(|e| panic!("{patch}: {e}"))
}

#[test]
fn null_deletes_and_nested_maps_merge() {
    let out = smp(
        &pod(),
        json!({"metadata": {"labels": {"x": null, "z": "3"}}, "spec": {"nodeName": null}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"y": "2", "z": "3"}));
    assert!(out["spec"].get("nodeName").is_none());
}

#[test]
fn lists_without_strategy_are_replaced_and_scalar_sets_unioned() {
    let out = smp(
        &pod(),
        json!({"spec": {"tolerations": [{"key": "other"}]}, "metadata": {"finalizers": ["c", "a"]}}),
    );
    assert_eq!(out["spec"]["tolerations"], json!([{"key": "other"}]));
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
}

#[test]
fn delete_from_primitive_list_removes_values() {
    let out = smp(
        &pod(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn set_element_order_reorders_merged_items() {
    let out = smp(
        &pod(),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}],
            "containers": [{"name": "c1", "image": "new"}]
        }}),
    );
    let containers = &out["spec"]["containers"];
    assert_eq!(containers[0]["name"], "c2");
    assert_eq!(containers[1]["name"], "c1");
    assert_eq!(containers[1]["image"], "new");
    assert_eq!(containers[1]["env"], pod()["spec"]["containers"][0]["env"]);
}

#[test]
fn nested_lists_merge_by_their_own_keys() {
    let out = smp(
        &pod(),
        json!({"spec": {"containers": [{"name": "c1", "env": [{"name": "B", "value": "9"}, {"name": "C", "value": "3"}]}]}}),
    );
    assert_eq!(
        out["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "9"}, {"name": "C", "value": "3"}])
    );
}

#[test]
fn patch_directives_in_maps_and_lists() {
    let out = smp(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
    let out = smp(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({}));
    let out = smp(
        &pod(),
        json!({"spec": {"containers": [{"name": "c9", "image": "i9"}, {"$patch": "replace"}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "c9", "image": "i9"}])
    );
    let out = smp(
        &pod(),
        json!({"spec": {"containers": [{"name": "c1", "$patch": "delete"}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "c2", "image": "i2"}])
    );
    // A whole-object replace at the top.
    let out = smp(&pod(), json!({"$patch": "replace", "kind": "Pod"}));
    assert_eq!(out, json!({"kind": "Pod"}));
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let doc =
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let out = smp(
        &doc,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    let err = strategic_merge_patch(
        &doc,
        br#"{"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}"#,
        &TranscriptKinds,
    )
    .expect_err("key outside the list");
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "invalid patch format of retainKeys")
    );
}

#[test]
fn strategic_patch_errors_are_classified_like_the_real_server() {
    let doc = pod();
    let cases: [(&str, u16, &str); 6] = [
        (
            r#"{"spec": {"containers": [{"image": "x"}]}}"#,
            500,
            "map: map[image:x] does not contain declared merge key: name",
        ),
        (
            r#"{"spec": {"containers": [{"name": "c1", "$patch": "merge"}]}}"#,
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            r#"{"metadata": {"labels": {"$patch": "bogus"}}}"#,
            500,
            "unknown patch type: bogus in map: map[$patch:bogus]",
        ),
        (
            r#"{"spec": {"$setElementOrder": []}}"#,
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            r#"{"metadata": {"$deleteFromPrimitiveList": ["a"]}}"#,
            400,
            "invalid patch format of primitive list",
        ),
        (
            r#"[1]"#,
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
    ];
    for (body, code, message) in cases {
        let err = strategic_merge_patch(&doc, body.as_bytes(), &TranscriptKinds).expect_err(body);
        assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
    }
    let err = strategic_merge_patch(
        &json!({"metadata": {"finalizers": [["x"]]}}),
        br#"{"metadata": {"finalizers": [["y"]]}}"#,
        &TranscriptKinds,
    )
    .expect_err("lists of lists");
    assert_eq!(err.code, 422);
}
