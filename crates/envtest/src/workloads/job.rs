//! The Job controller: runs up to `parallelism` Pods until `completions`
//! succeeded (`Indexed` Jobs: one per index), fails the Job once more
//! than `backoffLimit` Pods failed or `activeDeadlineSeconds` passed, and
//! reports `active`, `ready`, `succeeded`, `failed`, `startTime`,
//! `completionTime` and the conditions of kube-controller-manager v1.32
//! (`SuccessCriteriaMet` then `Complete`; `FailureTarget` then `Failed`).
//!
//! Succeeded and failed Pods are counted from the Pods that exist, never
//! fewer than the status already says (kube-controller-manager tracks them
//! with a finalizer instead, so deleting finished Pods early loses nothing
//! there either).

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, CONTROLLER_MANAGER, ConditionStyle, JOBS};
use super::pods;
use crate::api::App;
use crate::error::ApiResult;
use crate::meta;

const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";

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

pub async fn reconcile(app: &App, ns: &str, name: &str) -> ApiResult<Option<Duration>> {
    let Some(job) = client::get(app, JOBS, ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&job) {
        return Ok(None);
    }
    let owned = pods::owned(app, ns, meta::uid(&job));
    let active: Vec<_> = owned
        .iter()
        .filter(|p| pods::is_active(p))
        .cloned()
        .collect();
    let terminating = owned.iter().filter(|p| meta::is_deleting(p)).count() as i64;
    let succeeded_pods: Vec<_> = owned
        .iter()
        .filter(|p| pods::phase(p) == "Succeeded")
        .collect();
    let failed_now = owned.iter().filter(|p| pods::phase(p) == "Failed").count() as i64;
    let succeeded = (succeeded_pods.len() as i64)
        .max(client::int_at(&job, &["status", "succeeded"]).unwrap_or(0));
    let failed = failed_now.max(client::int_at(&job, &["status", "failed"]).unwrap_or(0));
    let ready = active.iter().filter(|p| pods::is_ready(p)).count() as i64;

    let indexed = client::str_at(&job, &["spec", "completionMode"]) == "Indexed";
    let completions = client::int_at(&job, &["spec", "completions"]);
    let parallelism = client::int_at(&job, &["spec", "parallelism"])
        .unwrap_or(1)
        .max(0);
    let backoff_limit = client::int_at(&job, &["spec", "backoffLimit"]).unwrap_or(6);
    let suspended =
        meta::get_path(&job, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let done_indexes: BTreeSet<i64> = succeeded_pods.iter().filter_map(|p| index_of(p)).collect();

    let now = meta::now_rfc3339();
    let start_time = client::str_at(&job, &["status", "startTime"]).to_string();
    let deadline_passed = client::int_at(&job, &["spec", "activeDeadlineSeconds"]).and_then(|s| {
        let started = start_time.parse::<jiff::Timestamp>().ok()?;
        let left =
            jiff::SignedDuration::from_secs(s) - jiff::Timestamp::now().duration_since(started);
        Some(left)
    });
    let complete = match completions {
        Some(c) if indexed => done_indexes.len() as i64 >= c,
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

    let mut requeue = None;
    if !finished(&job) {
        if complete || failure.is_some() || suspended {
            for pod in &active {
                pods::delete(app, &job, pod)?;
            }
        } else {
            let remaining = match completions {
                Some(c) if indexed => c - done_indexes.len() as i64,
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
                pods::deletion_order(&mut extra);
                for pod in &extra[..active.len() - want] {
                    pods::delete(app, &job, pod)?;
                }
            }
            if let Some(left) = deadline_passed {
                requeue = Some(left.unsigned_abs() + Duration::from_millis(10));
            }
        }
    }

    let finishing = !finished(&job) && (complete || failure.is_some());
    client::modify(app, JOBS, ns, name, Some("status"), CONTROLLER_MANAGER, |obj| {
        let mut status: Map<String, Value> = obj.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
        let before = status.clone();
        if !suspended && !status.contains_key("startTime") {
            status.insert("startTime".into(), json!(now));
        }
        let still_active = if finishing { 0 } else { active.len() as i64 };
        pods::set_count(&mut status, "active", still_active);
        pods::set_count(&mut status, "succeeded", succeeded);
        pods::set_count(&mut status, "failed", failed);
        status.insert("ready".into(), json!(if finishing { 0 } else { ready }));
        status.insert("terminating".into(), json!(terminating));
        status.insert("uncountedTerminatedPods".into(), json!({}));
        if indexed && !done_indexes.is_empty() {
            status.insert("completedIndexes".into(), json!(ranges(&done_indexes)));
        }
        let mut conditions = client::conditions(obj);
        if finishing {
            let (target, last, reason, message) = match failure {
                Some((reason, message)) if !complete => ("FailureTarget", "Failed", reason, message),
                _ => ("SuccessCriteriaMet", "Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
            };
            for kind in [target, last] {
                client::set_condition(
                    &mut conditions,
                    json!({"type": kind, "status": "True", "reason": reason, "message": message}),
                    ConditionStyle::Job,
                );
            }
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
    })
    .await?;
    if finishing {
        match failure {
            Some((reason, message)) if !complete => {
                client::event(app, CONTROLLER_MANAGER, &job, "Warning", reason, message)
            }
            _ => client::event(
                app,
                CONTROLLER_MANAGER,
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
    pods::create_from_template(app, job, &template, &generate_name, &labels, &annotations).await?;
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
