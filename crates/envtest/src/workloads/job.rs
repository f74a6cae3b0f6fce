//! The Job controller: runs up to `parallelism` Pods until `completions`
//! succeeded (`Indexed` Jobs: one per index), fails the Job once more
//! than `backoffLimit` Pods failed or `activeDeadlineSeconds` passed, and
//! reports `active`, `ready`, `succeeded`, `failed`, `startTime`,
//! `completionTime` and the conditions of kube-controller-manager v1.32
//! (`SuccessCriteriaMet` then `Complete`; `FailureTarget` then `Failed`).
//!
//! Finished Pods are counted as kube-controller-manager v1.32 counts them:
//! every Pod is created with the `batch.kubernetes.io/job-tracking`
//! finalizer; a Pod that finished or was deleted (a deleted one counts as
//! failed) is first listed in `status.uncountedTerminatedPods`, then loses
//! its finalizer, then moves into `succeeded` or `failed`; the `Complete` or
//! `Failed` condition waits until nothing is uncounted or terminating. The
//! Pods of a Job that is deleted or gone lose their finalizer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, ConditionStyle, JOBS, PODS};
use super::{owned_pods, ownership};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;

const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The finalizer every Job Pod is created with, until it is counted.
pub(crate) const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

fn finished(job: &Value) -> bool {
    client::condition_true(job, "Complete") || client::condition_true(job, "Failed")
}

fn index_of(pod: &Value) -> Option<i64> {
    meta::get_path(pod, &["metadata", "annotations", INDEX_ANNOTATION])
        .and_then(Value::as_str)
        .and_then(|i| i.parse().ok())
}

/// `1,3-5` from a set of indexes.
fn ranges(indexes: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end = iter.next().unwrap_or(end);
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

/// The uids of `status.uncountedTerminatedPods.<which>`.
fn uncounted(job: &Value, which: &str) -> Vec<String> {
    meta::get_path(job, &["status", "uncountedTerminatedPods", which])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn tracked(pod: &Value) -> bool {
    meta::finalizers(pod)
        .iter()
        .any(|f| f == TRACKING_FINALIZER)
}

/// `isPodFailed` under the default `podReplacementPolicy`
/// (`TerminatingOrFailed`): failed, or deleted before it succeeded.
fn considered_failed(pod: &Value) -> bool {
    owned_pods::phase(pod) == "Failed"
        || (meta::is_deleting(pod) && owned_pods::phase(pod) != "Succeeded")
}

/// `1,3-5` back to its indexes.
fn parse_ranges(text: &str) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// Removes the tracking finalizer, as the Job controller patches it away.
async fn release(app: &App, pod: &Value) -> ApiResult<()> {
    let uid = meta::uid(pod).to_string();
    client::modify_with_admission(
        app,
        PODS,
        meta::namespace(pod),
        meta::name(pod),
        None,
        CONTROLLER_MANAGER,
        |p| {
            if meta::uid(p) != uid || !tracked(p) {
                return false;
            }
            let rest: Vec<Value> = meta::finalizers(p)
                .into_iter()
                .filter(|f| f != TRACKING_FINALIZER)
                .map(Value::from)
                .collect();
            if rest.is_empty() {
                meta::remove_meta(p, "finalizers");
            } else {
                meta::set_meta(p, "finalizers", Value::Array(rest));
            }
            true
        },
    )
    .await
}

/// The Pods of a Job `name` that is gone (or was replaced by another of
/// that name) lose their tracking finalizer.
async fn release_orphans(app: &App, ns: &str, name: &str, live_uid: Option<&str>) -> ApiResult<()> {
    for pod in client::list(app, PODS, Some(ns)) {
        let orphan = client::controller_name(&pod, "Job") == Some(name)
            && client::controller_uid(&pod, "Job") != live_uid;
        if orphan && tracked(&pod) {
            release(app, &pod).await?;
        }
    }
    Ok(())
}

pub(crate) async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<Option<Duration>> {
    let Some(job) = client::get(app, JOBS, ns, name) else {
        release_orphans(app, ns, name, None).await?;
        return Ok(None);
    };
    release_orphans(app, ns, name, Some(meta::uid(&job))).await?;
    // Orphans it selects are adopted with the tracking finalizer.
    let claim = ownership::Claim {
        key: PODS,
        selector: ownership::selector_of(&job),
        finalizers: &[TRACKING_FINALIZER],
    };
    let candidates = client::list(app, PODS, Some(ns));
    let owned = ownership::claim(app, &job, &claim, candidates, |_| true).await?;
    if meta::is_deleting(&job) {
        for pod in owned.iter().filter(|p| tracked(p)) {
            release(app, pod).await?;
        }
        return Ok(None);
    }
    let active: Vec<_> = owned
        .iter()
        .filter(|p| owned_pods::is_active(p))
        .cloned()
        .collect();
    let ready = active.iter().filter(|p| owned_pods::is_ready(p)).count() as i64;

    let indexed = client::str_at(&job, &["spec", "completionMode"]) == "Indexed";
    let completions = client::int_at(&job, &["spec", "completions"]);
    let parallelism = client::int_at(&job, &["spec", "parallelism"])
        .unwrap_or(1)
        .max(0);
    let backoff_limit = client::int_at(&job, &["spec", "backoffLimit"]).unwrap_or(6);
    let suspended =
        meta::get_path(&job, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);

    // What the status counted, what it holds uncounted (the uids of Pods
    // whose finalizer is still to go), and the finished Pods not in either.
    let with_finalizer: BTreeSet<String> = owned
        .iter()
        .filter(|p| tracked(p))
        .map(|p| meta::uid(p).to_string())
        .collect();
    let mut counted_succeeded = client::int_at(&job, &["status", "succeeded"]).unwrap_or(0);
    let mut counted_failed = client::int_at(&job, &["status", "failed"]).unwrap_or(0);
    let mut uncounted_succeeded = uncounted(&job, "succeeded");
    let mut uncounted_failed = uncounted(&job, "failed");
    // `cleanUncountedPodsWithoutFinalizers`: released already, so counted.
    let before = (uncounted_succeeded.len(), uncounted_failed.len());
    uncounted_succeeded.retain(|uid| with_finalizer.contains(uid));
    uncounted_failed.retain(|uid| with_finalizer.contains(uid));
    counted_succeeded += (before.0 - uncounted_succeeded.len()) as i64;
    counted_failed += (before.1 - uncounted_failed.len()) as i64;
    let mut done_indexes = parse_ranges(client::str_at(&job, &["status", "completedIndexes"]));
    let newly_succeeded: Vec<&Arc<Value>> = owned
        .iter()
        .filter(|p| tracked(p) && owned_pods::phase(p) == "Succeeded")
        .filter(|p| !uncounted_failed.iter().any(|u| u == meta::uid(p)))
        .collect();
    if indexed {
        let within = |i: &i64| completions.is_some_and(|c| *i < c);
        done_indexes.extend(
            newly_succeeded
                .iter()
                .filter_map(|p| index_of(p))
                .filter(within),
        );
    } else {
        for pod in &newly_succeeded {
            let uid = meta::uid(pod).to_string();
            if !uncounted_succeeded.contains(&uid) {
                uncounted_succeeded.push(uid);
            }
        }
    }
    for pod in owned.iter().filter(|p| tracked(p) && considered_failed(p)) {
        let uid = meta::uid(pod).to_string();
        if !uncounted_failed.contains(&uid) && !uncounted_succeeded.contains(&uid) {
            uncounted_failed.push(uid);
        }
    }
    let succeeded = if indexed {
        done_indexes.len() as i64
    } else {
        counted_succeeded + uncounted_succeeded.len() as i64
    };
    let failed = counted_failed + uncounted_failed.len() as i64;

    let now = meta::now_rfc3339();
    let start_time = client::str_at(&job, &["status", "startTime"]).to_string();
    let deadline_passed = client::int_at(&job, &["spec", "activeDeadlineSeconds"]).and_then(|s| {
        let started = start_time.parse::<jiff::Timestamp>().ok()?;
        let left =
            jiff::SignedDuration::from_secs(s) - jiff::Timestamp::now().duration_since(started);
        Some(left)
    });
    let complete = match completions {
        Some(c) => succeeded >= c,
        None => succeeded >= 1 && active.is_empty(),
    };
    let failure = if failed > backoff_limit {
        Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ))
    } else if deadline_passed.is_some_and(|l| l.is_negative()) {
        Some((
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        ))
    } else {
        None
    };
    let interim = if complete {
        Some("SuccessCriteriaMet")
    } else if failure.is_some() {
        Some("FailureTarget")
    } else {
        client::conditions(&job)
            .iter()
            .find(|c| {
                matches!(
                    client::str_at(c, &["type"]),
                    "SuccessCriteriaMet" | "FailureTarget"
                ) && client::str_at(c, &["status"]) == "True"
            })
            .map(|c| {
                if client::str_at(c, &["type"]) == "SuccessCriteriaMet" {
                    "SuccessCriteriaMet"
                } else {
                    "FailureTarget"
                }
            })
    };
    let finishing = !finished(&job) && interim.is_some();

    let mut requeue = None;
    let mut deleted_active = 0;
    if !finished(&job) {
        if finishing || suspended {
            for pod in &active {
                owned_pods::delete(app, &job, pod)?;
                deleted_active += 1;
            }
        } else {
            let remaining = match completions {
                Some(c) => c - succeeded,
                None if succeeded > 0 => 0,
                None => parallelism,
            };
            let want = parallelism.min(remaining).max(0) as usize;
            if active.len() < want {
                let busy: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
                let mut free = (0..completions.unwrap_or(0))
                    .filter(|i| !done_indexes.contains(i) && !busy.contains(i));
                for _ in active.len()..want {
                    create_pod(app, &job, if indexed { free.next() } else { None }).await?;
                }
            } else if active.len() > want {
                let mut extra = active.clone();
                owned_pods::deletion_order(&mut extra);
                for pod in &extra[..active.len() - want] {
                    owned_pods::delete(app, &job, pod)?;
                }
            }
            if let Some(left) = deadline_passed {
                requeue = Some(left.unsigned_abs() + Duration::from_millis(10));
            }
        }
    }
    // Pods deleted just now stop being active but are not gone yet.
    let terminating = owned
        .iter()
        .filter(|p| meta::is_deleting(p) && !matches!(owned_pods::phase(p), "Succeeded" | "Failed"))
        .count() as i64
        + deleted_active;
    let still_active = if finishing || suspended {
        0
    } else {
        active.len() as i64
    };
    let failure_reason = match failure {
        Some((reason, message)) if !complete => Some((reason, message)),
        _ => None,
    };
    let (reason, message) = failure_reason.unwrap_or((
        "CompletionsReached",
        "Reached expected number of succeeded pods",
    ));

    // Flush 1: the new uncounted Pods and the interim condition, before
    // any finalizer goes (`flushUncountedAndRemoveFinalizers`).
    let write = |counted: (i64, i64),
                 uncounted: (&[String], &[String]),
                 terminating: i64,
                 terminal: bool| {
        let indexes = ranges(&done_indexes);
        let (unc_s, unc_f) = (uncounted.0.to_vec(), uncounted.1.to_vec());
        let now = now.clone();
        move |obj: &mut Value| {
            let mut status: Map<String, Value> = obj
                .get("status")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let before = status.clone();
            if !suspended && !status.contains_key("startTime") {
                status.insert("startTime".into(), json!(now));
            }
            owned_pods::set_count(&mut status, "active", still_active);
            owned_pods::set_count(&mut status, "succeeded", counted.0);
            owned_pods::set_count(&mut status, "failed", counted.1);
            status.insert("ready".into(), json!(if finishing { 0 } else { ready }));
            status.insert("terminating".into(), json!(terminating));
            let mut unc = Map::new();
            if !unc_s.is_empty() {
                unc.insert("succeeded".into(), json!(unc_s));
            }
            if !unc_f.is_empty() {
                unc.insert("failed".into(), json!(unc_f));
            }
            status.insert("uncountedTerminatedPods".into(), Value::Object(unc));
            if indexed && !indexes.is_empty() {
                status.insert("completedIndexes".into(), json!(indexes));
            }
            let mut conditions = client::conditions(obj);
            if let Some(kind) = interim {
                client::set_condition(
                    &mut conditions,
                    json!({"type": kind, "status": "True", "reason": reason, "message": message}),
                    ConditionStyle::Job,
                );
            }
            if terminal {
                let last = if interim == Some("SuccessCriteriaMet") {
                    "Complete"
                } else {
                    "Failed"
                };
                client::set_condition(
                    &mut conditions,
                    json!({"type": last, "status": "True", "reason": reason, "message": message}),
                    ConditionStyle::Job,
                );
                if last == "Complete" {
                    status.insert("completionTime".into(), json!(now));
                }
            }
            if suspended {
                client::set_condition(
                    &mut conditions,
                    json!({"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}),
                    ConditionStyle::Job,
                );
            } else if client::condition_true(obj, "Suspended") {
                client::set_condition(
                    &mut conditions,
                    json!({"type": "Suspended", "status": "False", "reason": "JobResumed", "message": "Job resumed"}),
                    ConditionStyle::Job,
                );
            }
            if !conditions.is_empty() {
                status.insert("conditions".into(), json!(conditions));
            }
            if status == before {
                return false;
            }
            obj["status"] = Value::Object(status);
            true
        }
    };
    let counted = (counted_succeeded, counted_failed);
    client::modify_with_admission(
        app,
        JOBS,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        write(
            counted,
            (&uncounted_succeeded, &uncounted_failed),
            terminating,
            false,
        ),
    )
    .await?;

    // The finalizers of finished, deleted or (the Job finishing) all Pods go.
    let mut released = BTreeSet::new();
    for pod in owned.iter().filter(|p| tracked(p)) {
        let done = matches!(owned_pods::phase(pod), "Succeeded" | "Failed");
        if finishing || finished(&job) || done || considered_failed(pod) {
            release(app, pod).await?;
            released.insert(meta::uid(pod).to_string());
        }
    }
    // Flush 2: what lost its finalizer is counted; the Job finishes once
    // nothing is uncounted or terminating.
    let is_released = |uid: &String| released.contains(uid);
    let moved_s = uncounted_succeeded
        .iter()
        .filter(|u| is_released(u))
        .count() as i64;
    let moved_f = uncounted_failed.iter().filter(|u| is_released(u)).count() as i64;
    uncounted_succeeded.retain(|u| !is_released(u));
    uncounted_failed.retain(|u| !is_released(u));
    let counted = (counted_succeeded + moved_s, counted_failed + moved_f);
    let still_terminating = owned_pods::owned(app, ns, meta::uid(&job))
        .iter()
        .filter(|p| meta::is_deleting(p) && !matches!(owned_pods::phase(p), "Succeeded" | "Failed"))
        .count();
    let terminal = finishing
        && uncounted_succeeded.is_empty()
        && uncounted_failed.is_empty()
        && still_terminating == 0;
    client::modify_with_admission(
        app,
        JOBS,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        write(
            counted,
            (&uncounted_succeeded, &uncounted_failed),
            still_terminating as i64,
            terminal,
        ),
    )
    .await?;
    if terminal {
        match failure_reason {
            Some((reason, message)) => client::event(
                app,
                client::JOB_CONTROLLER,
                &job,
                "Warning",
                reason,
                message,
            ),
            None => client::event(
                app,
                client::JOB_CONTROLLER,
                &job,
                "Normal",
                "Completed",
                "Job completed",
            ),
        }
    }
    Ok(requeue)
}

/// A Job Pod: the template with the Job's labels (and its index, for Indexed Jobs).
async fn create_pod(app: &App, job: &Value, index: Option<i64>) -> ApiResult<()> {
    let template = meta::get_path(job, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    let uid = meta::uid(job);
    let name = meta::name(job);
    let mut labels = Map::new();
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ] {
        labels.insert(key.into(), json!(value));
    }
    let mut annotations = Map::new();
    let mut template = template;
    let mut generate_name = format!("{name}-");
    if let Some(i) = index {
        labels.insert(INDEX_ANNOTATION.into(), json!(i.to_string()));
        annotations.insert(INDEX_ANNOTATION.into(), json!(i.to_string()));
        generate_name = format!("{name}-{i}-");
        if let Some(containers) = template
            .pointer_mut("/spec/containers")
            .and_then(Value::as_array_mut)
        {
            for c in containers {
                let env = c
                    .as_object_mut()
                    .map(|c| c.entry("env").or_insert_with(|| json!([])));
                if let Some(Value::Array(env)) = env {
                    env.push(json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.labels['{INDEX_ANNOTATION}']")}}}));
                }
            }
        }
    }
    let mut pod = owned_pods::from_template(job, &template, &labels, &annotations);
    meta::set_path(
        &mut pod,
        &["metadata", "generateName"],
        json!(generate_name),
    );
    let mut finalizers: Vec<Value> = meta::finalizers(&pod)
        .into_iter()
        .map(Value::from)
        .collect();
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(json!(TRACKING_FINALIZER));
    }
    meta::set_path(
        &mut pod,
        &["metadata", "finalizers"],
        Value::Array(finalizers),
    );
    owned_pods::create(app, job, pod, |name| format!("Created pod: {name}")).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_are_written_as_ranges() {
        let set: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(ranges(&set), "0-2,4,6-7");
        assert_eq!(ranges(&BTreeSet::new()), "");
    }
}
