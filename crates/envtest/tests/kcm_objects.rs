//! What envtest's kube-controller-manager controllers write, compared field
//! for field with what a real v1.32 kube-controller-manager wrote in the
//! same scenario (tests/fixtures/kcm-objects-v1.32, whose README says how it
//! was recorded): no Nodes, no scheduler, no kubelet, every controller on,
//! i.e. `opctl envtest --simulate none`. uids, times, resourceVersions,
//! random name suffixes and cluster IPs are normalised on both sides
//! (`kcm_objects/normalize.rs`); everything else, managedFields included,
//! must match.
//!
//! One scenario runs once per test binary (a server of its own); each test
//! compares one recorded file.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

#[path = "kcm_objects/normalize.rs"]
mod normalize;
#[path = "kcm_objects/scenario.rs"]
mod scenario;

use serde_json::Value;

use normalize::diff;
use scenario::{Scenario, fixture, scenario};

/// Compares a recorded object with envtest's, failing with every difference.
fn assert_same(what: &str, recorded: &Value, ours: &Value, run: &Scenario) {
    let want = run.recorded.apply(recorded);
    let got = run.envtest.apply(ours);
    let diffs = diff(&want, &got);
    assert!(
        diffs.is_empty(),
        "{what} differs from kube-controller-manager v1.32's in {} place(s):\n  {}\nenvtest's, normalised: {}",
        diffs.len(),
        diffs.join("\n  "),
        serde_json::to_string_pretty(&got).unwrap_or_default()
    );
}

#[test]
fn deployment_status_annotation_and_conditions() {
    let run = scenario();
    assert_same(
        "Deployment web",
        &fixture("deployment.json"),
        &run.get("deployment"),
        run,
    );
}

#[test]
fn replicaset_of_the_deployment() {
    let run = scenario();
    assert_same(
        "ReplicaSet",
        &fixture("replicaset.json"),
        &run.get("replicaset"),
        run,
    );
}

#[test]
fn pods_of_the_replicaset() {
    let run = scenario();
    let pods = run.list("deployment-pods");
    assert_eq!(pods.len(), 2, "the ReplicaSet's Pods: {pods:#?}");
    for pod in &pods {
        assert_same(
            "a Pod of the ReplicaSet",
            &fixture("deployment-pod.json"),
            pod,
            run,
        );
    }
}

#[test]
fn job_status() {
    let run = scenario();
    assert_same("Job job", &fixture("job.json"), &run.get("job"), run);
}

#[test]
fn pod_of_the_job() {
    let run = scenario();
    let pods = run.list("job-pods");
    assert_eq!(pods.len(), 1, "the Job's Pods: {pods:#?}");
    assert_same("the Job's Pod", &fixture("job-pod.json"), &pods[0], run);
}

#[test]
fn statefulset_status() {
    let run = scenario();
    assert_same(
        "StatefulSet db",
        &fixture("statefulset.json"),
        &run.get("statefulset"),
        run,
    );
}

#[test]
fn statefulset_pod_and_no_second_one() {
    let run = scenario();
    let pods = run.list("statefulset-pods");
    let names: Vec<&str> = pods
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["db-0"], "OrderedReady waits for db-0 to be Ready");
    assert_same(
        "Pod db-0",
        &fixture("statefulset-pod-0.json"),
        &pods[0],
        run,
    );
}

#[test]
fn statefulset_controller_revision() {
    let run = scenario();
    let revisions = run.list("controllerrevisions");
    assert_eq!(revisions.len(), 1, "{revisions:#?}");
    assert_same(
        "ControllerRevision",
        &fixture("statefulset-controllerrevision.json"),
        &revisions[0],
        run,
    );
}

#[test]
fn statefulset_claim() {
    let run = scenario();
    assert_same(
        "claim data-db-0",
        &fixture("statefulset-pvc.json"),
        &run.get("claim"),
        run,
    );
}

#[test]
fn service_endpoints_and_endpointslice() {
    let run = scenario();
    let recorded = fixture("service-endpoints-endpointslice.json");
    let items = recorded["items"].as_array().expect("items");
    assert_same("Service web", &items[0], &run.get("service"), run);
    assert_same("Endpoints web", &items[1], &run.get("endpoints"), run);
    let slices = run.list("endpointslices");
    assert_eq!(slices.len(), 1, "{slices:#?}");
    assert_same("EndpointSlice of web", &items[2], &slices[0], run);
}

#[test]
fn pod_disruption_budget_status() {
    let run = scenario();
    assert_same(
        "PodDisruptionBudget web",
        &fixture("poddisruptionbudget.json"),
        &run.get("pdb"),
        run,
    );
}

#[test]
fn resource_quota_status_and_its_writers() {
    let run = scenario();
    assert_same(
        "ResourceQuota quota",
        &fixture("resourcequota.json"),
        &run.get("quota"),
        run,
    );
}

#[test]
fn events_of_the_workload_controllers() {
    let run = scenario();
    let key = |e: &Value| {
        (
            e["involvedObject"]["kind"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            e["message"].as_str().unwrap_or("").to_string(),
        )
    };
    let mut recorded: Vec<Value> = fixture("events.json")["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|e| run.recorded.apply(e))
        .collect();
    let kinds = ["Deployment", "ReplicaSet", "Job", "StatefulSet"];
    let mut ours: Vec<Value> = run
        .list("events")
        .iter()
        .filter(|e| kinds.contains(&e["involvedObject"]["kind"].as_str().unwrap_or("")))
        .map(|e| run.envtest.apply(e))
        .collect();
    recorded.sort_by_key(key);
    ours.sort_by_key(key);
    let summary = |events: &[Value]| -> Vec<(String, String)> { events.iter().map(key).collect() };
    assert_eq!(
        summary(&ours),
        summary(&recorded),
        "the Events of the workloads"
    );
    let diffs: Vec<String> = recorded
        .iter()
        .zip(&ours)
        .flat_map(|(want, got)| diff(want, got))
        .collect();
    assert!(
        diffs.is_empty(),
        "the Events differ:\n  {}",
        diffs.join("\n  ")
    );
}

/// The hash is kube-controller-manager's (go-spew's print of the template's
/// Go struct, FNV-32a): the ReplicaSet and its Pods are named as on a
/// cluster. (The other tests would catch a difference too; this one says it.)
#[test]
fn pod_template_hash_is_kube_controller_managers() {
    let run = scenario();
    let hash = |rs: &Value| rs["metadata"]["labels"]["pod-template-hash"].clone();
    assert_eq!(
        hash(&run.get("replicaset")),
        hash(&fixture("replicaset.json"))
    );
    assert_eq!(run.get("replicaset")["metadata"]["name"], "web-77db66f68b");
}

/// How long the controllers took: printed, not asserted (a loaded machine
/// is slower; kube-controller-manager settled within a second).
#[test]
fn time_to_settle_is_reported() {
    let run = scenario();
    println!(
        "envtest's controllers settled {:.2} s after the batch of creates",
        run.settled_after.as_secs_f64()
    );
    assert!(!run.list("deployment-pods").is_empty());
}
