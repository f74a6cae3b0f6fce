//! Job Pods tracked with `batch.kubernetes.io/job-tracking`, and the
//! ttl-after-finished controller.

use serde_json::{Value, json};

use crate::api::{Api, no_nodes, with_nodes};

const TRACKING: &str = "batch.kubernetes.io/job-tracking";

fn job(name: &str, extra: Value) -> Value {
    let mut job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"backoffLimit": 3, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    if let (Some(spec), Some(extra)) = (job["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    job
}

async fn pods_of(api: &Api, ns: &str, job: &str) -> Vec<Value> {
    api.items(&format!(
        "/api/v1/namespaces/{ns}/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3D{job}"
    ))
    .await
}

#[tokio::test]
async fn a_job_counts_its_pods_through_their_finalizer() {
    let api = with_nodes();
    let ns = api.namespace("jobs").await;
    api.create(
        &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        job("once", json!({})),
    )
    .await;
    let done = api
        .until(
            &format!("/apis/batch/v1/namespaces/{ns}/jobs/once"),
            "the Job complete",
            |j| {
                j.is_some_and(|j| {
                    j["status"]["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete"))
                })
            },
        )
        .await
        .expect("job");
    assert_eq!(done["status"]["succeeded"], 1);
    assert_eq!(done["status"]["uncountedTerminatedPods"], json!({}));
    assert_eq!(done["status"]["ready"], 0);
    assert_eq!(done["status"]["terminating"], 0);
    assert!(done["status"].get("active").is_none(), "{done}");
    let types: Vec<&str> = done["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    let pods = pods_of(&api, &ns, "once").await;
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["status"]["phase"], "Succeeded");
    assert!(
        pods[0]["metadata"].get("finalizers").is_none(),
        "counted, so released: {}",
        pods[0]
    );
    let events = api.items(&format!("/api/v1/namespaces/{ns}/events")).await;
    let completed = events
        .iter()
        .find(|e| e["reason"] == "Completed")
        .expect("the Completed event");
    assert_eq!(completed["source"]["component"], "job-controller");
    assert_eq!(completed["message"], "Job completed");
}

#[tokio::test]
async fn a_deleted_job_pod_counts_as_failed_and_is_replaced() {
    let api = no_nodes();
    let ns = api.namespace("jobdel").await;
    api.create(
        &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        job("j", json!({})),
    )
    .await;
    let first = api
        .until_items(
            &format!("/api/v1/namespaces/{ns}/pods"),
            "the Job's Pod",
            |p| p.len() == 1,
        )
        .await;
    assert_eq!(first[0]["metadata"]["finalizers"], json!([TRACKING]));
    let first_name = first[0]["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    api.delete(&format!("/api/v1/namespaces/{ns}/pods/{first_name}"))
        .await;
    let job = api
        .until(
            &format!("/apis/batch/v1/namespaces/{ns}/jobs/j"),
            "the deleted Pod counted as failed",
            |j| j.is_some_and(|j| j["status"]["failed"] == 1 && j["status"]["active"] == 1),
        )
        .await
        .expect("job");
    assert_eq!(job["status"]["uncountedTerminatedPods"], json!({}));
    let pods = api
        .until_items(
            &format!("/api/v1/namespaces/{ns}/pods"),
            "the old Pod gone, a new one made",
            |p| p.len() == 1 && p[0]["metadata"]["name"] != first_name.as_str(),
        )
        .await;
    assert_eq!(pods[0]["metadata"]["finalizers"], json!([TRACKING]));
}

#[tokio::test]
async fn a_deleted_jobs_pods_lose_their_finalizer_and_go() {
    let api = no_nodes();
    let ns = api.namespace("jobgone").await;
    api.create(
        &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        job("j", json!({"parallelism": 2, "completions": 4})),
    )
    .await;
    api.until_items(
        &format!("/api/v1/namespaces/{ns}/pods"),
        "the Job's Pods",
        |p| p.len() == 2,
    )
    .await;
    api.delete(&format!("/apis/batch/v1/namespaces/{ns}/jobs/j"))
        .await;
    api.until_items(
        &format!("/api/v1/namespaces/{ns}/pods"),
        "the Pods gone with their Job",
        |p| p.is_empty(),
    )
    .await;
}

#[tokio::test]
async fn a_finished_job_with_a_time_to_live_is_deleted() {
    let api = with_nodes();
    let ns = api.namespace("ttl").await;
    api.create(
        &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        job("short", json!({"ttlSecondsAfterFinished": 1})),
    )
    .await;
    api.until(
        &format!("/apis/batch/v1/namespaces/{ns}/jobs/short"),
        "the Job complete",
        |j| j.is_some_and(|j| j["status"]["succeeded"] == 1),
    )
    .await;
    api.until(
        &format!("/apis/batch/v1/namespaces/{ns}/jobs/short"),
        "the Job deleted a second after it finished",
        |j| j.is_none(),
    )
    .await;
    api.until_items(
        &format!("/api/v1/namespaces/{ns}/pods"),
        "its Pod gone with it",
        |p| p.is_empty(),
    )
    .await;
}
