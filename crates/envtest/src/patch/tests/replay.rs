//! Replays every recorded write of the 14 transcripts through the ownership
//! functions and checks that the recorded `managedFields` come out, entry
//! order and `FieldsV1` key order included.
//!
//! For creates, updates and non-apply patches the recorded response (less
//! its managedFields) stands for the object the server hands to
//! [`record_update`]; for applies the recorded YAML body is applied to the
//! object as the previous steps left it. Each object's state carries the
//! managedFields this module computed, so errors accumulate as they would in
//! the server. Every write gets the same time: the recording ran many steps
//! within one second, and the real server sorts entries by whole seconds
//! before manager name.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::kinds::TranscriptKinds;
use super::transcripts::{
    fields_v1_texts, managed_fields, normalise_managed_fields, set_managed_fields, steps,
    with_fake_uids,
};
use crate::patch::{ApplyRequest, UpdateRequest, record_update, server_side_apply};

const FILES: &[&str] = &[
    "01-discovery.json",
    "02-configmap-crud.json",
    "03-request-errors.json",
    "04-patch.json",
    "05-server-side-apply.json",
    "06-list-selectors-pagination.json",
    "07-watch.json",
    "08-crd-lifecycle.json",
    "09-custom-resources.json",
    "10-deletion-gc.json",
    "11-namespace-deletion.json",
    "12-builtin-defaults.json",
    "13-events-leases.json",
    "14-dry-run.json",
];

const NOW: &str = "2026-11-30T10:00:00Z";

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The URL of the object a step addresses, without a `/status` suffix.
fn object_url(step: &Value) -> String {
    let path = text(step, "/request/path");
    let path = path.strip_suffix("/status").unwrap_or(path);
    if text(step, "/request/method") == "POST" {
        format!("{path}/{}", text(step, "/response/body/metadata/name"))
    } else {
        path.to_string()
    }
}

/// Fields that the real server writes after its field manager ran on a
/// create (admission plugins, registry strategies, allocators), so they are
/// owned by nobody. The server must call `record_update` before those steps.
fn remove_fields_written_after_tracking(new: &mut Value, request: &Value) {
    let count = |pointer: &str| {
        new.pointer(pointer)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    let mut pointers: Vec<String> = Vec::new();
    match text(new, "/kind") {
        "Pod" => {
            // ServiceAccount, Priority and DefaultTolerationSeconds admission.
            for p in [
                "/spec/volumes",
                "/spec/serviceAccountName",
                "/spec/serviceAccount",
                "/spec/tolerations",
                "/spec/priority",
                "/spec/preemptionPolicy",
            ] {
                pointers.push(p.to_string());
            }
            for i in 0..count("/spec/containers") {
                pointers.push(format!("/spec/containers/{i}/volumeMounts"));
            }
        }
        "Service" => {
            // The REST storage allocates IPs, families and node ports.
            for p in [
                "/spec/clusterIP",
                "/spec/clusterIPs",
                "/spec/ipFamilies",
                "/spec/ipFamilyPolicy",
            ] {
                pointers.push(p.to_string());
            }
            for i in 0..count("/spec/ports") {
                pointers.push(format!("/spec/ports/{i}/nodePort"));
            }
        }
        // The Job strategy generates the selector and labels.
        "Job" => {
            for p in [
                "/metadata/labels",
                "/spec/selector",
                "/spec/template/metadata/labels",
            ] {
                pointers.push(p.to_string());
            }
        }
        // The Namespace strategy adds the `kubernetes` finalizer.
        "Namespace" => pointers.push("/spec/finalizers".to_string()),
        _ => {}
    }
    for pointer in pointers {
        if request.pointer(&pointer).is_none() {
            remove_pointer(new, &pointer);
        }
    }
}

fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    if let Some(Value::Object(map)) = v.pointer_mut(parent) {
        map.remove(last);
    }
}

/// Server defaulting of the applied Widget (`spec.size: 3`), for comparing
/// apply results with recorded responses.
fn widget_defaults(obj: &mut Value) {
    if text(obj, "/kind") == "Widget"
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.entry("size").or_insert(json!(3));
    }
}

/// A recorded object (a read, or a delete's answer) adopted as state, so that
/// writes by the server's own controllers are taken into account.
fn adopt(body: &Value) -> Value {
    let mut obj = with_fake_uids(body);
    if let Some(Value::Array(entries)) = obj.pointer_mut("/metadata/managedFields") {
        for entry in entries {
            if let Some(map) = entry.as_object_mut() {
                map.insert("time".into(), Value::String(NOW.to_string()));
            }
        }
    }
    obj
}

struct Mismatch {
    at: String,
    detail: String,
}

fn check_managed_fields(
    at: &str,
    mine: &Value,
    recorded: &Value,
    out: &mut Vec<Mismatch>,
    checked: &mut usize,
) {
    *checked += 1;
    let mine = normalise_managed_fields(mine);
    if &mine != recorded || fields_v1_texts(&mine) != fields_v1_texts(recorded) {
        out.push(Mismatch {
            at: at.to_string(),
            detail: format!(
                "managedFields differ\n   mine: {}\n   real: {}",
                serde_json::to_string(&mine).unwrap_or_default(),
                serde_json::to_string(recorded).unwrap_or_default()
            ),
        });
    }
}

/// Replays one file; returns the mismatches and how many steps were checked.
fn replay(file: &str) -> (Vec<Mismatch>, usize) {
    let mut state: BTreeMap<String, Value> = BTreeMap::new();
    let mut mismatches = Vec::new();
    let mut checked = 0usize;
    for (i, step) in steps(file).iter().enumerate() {
        let at = format!("{file} step {i} ({})", text(step, "/name"));
        let method = text(step, "/request/method");
        let status = step
            .pointer("/response/status")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let body = step
            .pointer("/response/body")
            .cloned()
            .unwrap_or(Value::Null);
        let recorded_mf = managed_fields(&body);
        let url = object_url(step);
        let dry_run = text(step, "/request/query/dryRun") == "All";
        let content_type = text(step, "/request/headers/Content-Type");
        let is_apply = method == "PATCH" && content_type == "application/apply-patch+yaml";

        if matches!(method, "GET" | "DELETE") {
            if status == 200 && !recorded_mf.is_null() && body.get("items").is_none() {
                state.insert(url, adopt(&body));
            }
            continue;
        }
        if !matches!(method, "POST" | "PUT" | "PATCH") {
            continue;
        }
        if status >= 400 && !(is_apply && status == 409) {
            continue;
        }
        let live = state.get(&url).cloned();
        if method != "POST" && live.is_none() && !is_apply {
            // The object's earlier writes were not recorded (07's churn object).
            continue;
        }
        let subresource = text(step, "/request/path")
            .ends_with("/status")
            .then_some("status");
        let manager = step
            .pointer("/request/query/fieldManager")
            .and_then(Value::as_str)
            .unwrap_or("transcripts");
        let now = NOW.to_string();
        let request_body = with_fake_uids(step.pointer("/request/body").unwrap_or(&Value::Null));

        if is_apply {
            let applied: Value = match serde_saphyr::from_str(request_body.as_str().unwrap_or("")) {
                Ok(v) => v,
                Err(e) => panic!("{at}: apply body is not YAML: {e}"),
            };
            let api_version = text(&applied, "/apiVersion").to_string();
            let force = text(step, "/request/query/force") == "true";
            let result = server_side_apply(&ApplyRequest {
                live: live.as_ref(),
                applied: &applied,
                manager,
                force,
                api_version: &api_version,
                subresource,
                now: &now,
                types: &TranscriptKinds,
            });
            checked += 1;
            match (status, result) {
                (409, Err(err)) => {
                    if err.to_status() != body {
                        mismatches.push(Mismatch {
                            at,
                            detail: format!(
                                "conflict differs\n   mine: {}\n   real: {body}",
                                err.to_status()
                            ),
                        });
                    }
                }
                (409, Ok(_)) => mismatches.push(Mismatch {
                    at,
                    detail: "expected a conflict".into(),
                }),
                (_, Err(err)) => mismatches.push(Mismatch {
                    at,
                    detail: format!("apply failed: {err}"),
                }),
                (_, Ok(mut out)) => {
                    check_managed_fields(
                        &at,
                        &managed_fields(&out),
                        &recorded_mf,
                        &mut mismatches,
                        &mut checked,
                    );
                    widget_defaults(&mut out);
                    let recorded = with_fake_uids(&body);
                    for field in ["data", "spec"] {
                        if out.get(field) != recorded.get(field) {
                            mismatches.push(Mismatch {
                                at: at.clone(),
                                detail: format!(
                                    "applied {field} differs: mine {:?}, real {:?}",
                                    out.get(field),
                                    recorded.get(field)
                                ),
                            });
                        }
                    }
                    if out.pointer("/metadata/labels") != recorded.pointer("/metadata/labels") {
                        mismatches.push(Mismatch {
                            at: at.clone(),
                            detail: "applied labels differ".into(),
                        });
                    }
                    if !dry_run {
                        let mut next = recorded;
                        set_managed_fields(&mut next, managed_fields(&out));
                        state.insert(url, next);
                    }
                }
            }
            continue;
        }

        let mut new = with_fake_uids(&body);
        set_managed_fields(&mut new, Value::Null);
        if method == "POST" {
            remove_fields_written_after_tracking(&mut new, &request_body);
        }
        // What the server's field manager sees: a patched object carries the
        // stored managedFields, a PUT carries what the client sent back
        // (which was the stored list).
        let echoes = method == "PATCH" || request_body.pointer("/metadata/managedFields").is_some();
        if echoes && let Some(live) = &live {
            set_managed_fields(&mut new, managed_fields(live));
        }
        let api_version = text(&new, "/apiVersion").to_string();
        record_update(
            &UpdateRequest {
                old: live.as_ref(),
                manager,
                api_version: &api_version,
                subresource,
                now: &now,
                types: &TranscriptKinds,
            },
            &mut new,
        );
        check_managed_fields(
            &at,
            &managed_fields(&new),
            &recorded_mf,
            &mut mismatches,
            &mut checked,
        );
        if !dry_run {
            let mut next = with_fake_uids(&body);
            set_managed_fields(&mut next, managed_fields(&new));
            state.insert(url, next);
        }
    }
    (mismatches, checked)
}

#[test]
fn every_recorded_write_yields_the_recorded_managed_fields() {
    let mut all = Vec::new();
    let mut total = 0;
    for file in FILES {
        let (mismatches, checked) = replay(file);
        total += checked;
        all.extend(mismatches);
    }
    let report: Vec<String> = all
        .iter()
        .map(|m| format!("{}: {}", m.at, m.detail))
        .collect();
    assert!(
        report.is_empty(),
        "{} mismatches:\n{}",
        report.len(),
        report.join("\n")
    );
    eprintln!("checked {total} recorded writes");
    // Make sure the replay really ran the writes.
    assert!(total >= 80, "only {total} steps checked");
}

/// Writes of the server's own controllers, which the transcripts show only
/// through later reads: the CRD controller's status update, the garbage
/// collector removing an ownerReference, the namespace controller's
/// conditions. Each is `record_update` with the controller as manager.
#[test]
fn controller_writes_yield_the_recorded_managed_fields() {
    // The CRD controller writes within the second of the create; the
    // namespace controller seconds after the namespace was written.
    let later = "2026-11-30T10:00:07Z";
    let cases = [
        // (file, step before, step after, manager, subresource, time)
        (
            "08-crd-lifecycle.json",
            0,
            1,
            "kube-apiserver",
            Some("status"),
            NOW,
        ),
        (
            "10-deletion-gc.json",
            16,
            19,
            "kube-controller-manager",
            None,
            NOW,
        ),
        (
            "11-namespace-deletion.json",
            7,
            8,
            "kube-controller-manager",
            Some("status"),
            later,
        ),
    ];
    for (file, before, after, manager, subresource, now) in cases {
        let all = steps(file);
        let old = adopt(
            all[before]
                .pointer("/response/body")
                .unwrap_or(&Value::Null),
        );
        let mut new = with_fake_uids(all[after].pointer("/response/body").unwrap_or(&Value::Null));
        set_managed_fields(&mut new, managed_fields(&old));
        let api_version = text(&new, "/apiVersion").to_string();
        record_update(
            &UpdateRequest {
                old: Some(&old),
                manager,
                api_version: &api_version,
                subresource,
                now,
                types: &TranscriptKinds,
            },
            &mut new,
        );
        let recorded = managed_fields(all[after].pointer("/response/body").unwrap_or(&Value::Null));
        let mine = normalise_managed_fields(&managed_fields(&new));
        assert_eq!(mine, recorded, "{file} step {after}");
        assert_eq!(
            fields_v1_texts(&mine),
            fields_v1_texts(&recorded),
            "{file} step {after}"
        );
    }
}
