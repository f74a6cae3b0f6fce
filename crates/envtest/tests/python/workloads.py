"""The workload simulation seen through the Python client: a Deployment
becomes available through its ReplicaSet with Running Pods on a simulated
Node, a Job completes."""

import time

from kubernetes import client

from common import api_client, namespace

ns = namespace()
api = api_client()
apps = client.AppsV1Api(api)
core = client.CoreV1Api(api)
batch = client.BatchV1Api(api)


def eventually(what, check, timeout=30):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, f"{what} not reached within {timeout}s"
        time.sleep(0.1)


labels = {"app": "py-web"}
apps.create_namespaced_deployment(
    ns,
    client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py-web"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx:1.27")]),
            ),
        ),
    ),
)


def available():
    d = apps.read_namespaced_deployment_status("py-web", ns)
    conditions = {c.type: c for c in (d.status.conditions or [])}
    done = (
        d.status.available_replicas == 2
        and d.status.updated_replicas == 2
        and conditions.get("Available") is not None
        and conditions["Available"].status == "True"
    )
    return d if done else None


d = eventually("Deployment available", available)
assert d.metadata.annotations["deployment.kubernetes.io/revision"] == "1", d.metadata.annotations

pods = core.list_namespaced_pod(ns, label_selector="app=py-web").items
assert len(pods) == 2, [p.metadata.name for p in pods]
for p in pods:
    assert p.status.phase == "Running", p.status.phase
    assert p.spec.node_name, "bound to a node"
    assert p.status.pod_ip and p.status.host_ip, (p.status.pod_ip, p.status.host_ip)
    ready = [c for c in p.status.conditions if c.type == "Ready"][0]
    assert ready.status == "True", ready
    status = p.status.container_statuses[0]
    assert status.ready and status.started and status.restart_count == 0, status
    assert status.state.running.started_at is not None, status.state
    assert "pod-template-hash" in p.metadata.labels, p.metadata.labels

# The Deployment's one ReplicaSet owns the Pods and counts them available.
sets = apps.list_namespaced_replica_set(ns, label_selector="app=py-web").items
assert len(sets) == 1, [s.metadata.name for s in sets]
rs = sets[0]
owner = rs.metadata.owner_references[0]
assert (owner.kind, owner.name, owner.controller) == ("Deployment", "py-web", True), owner
assert owner.uid == d.metadata.uid, (owner.uid, d.metadata.uid)
assert rs.metadata.name == "py-web-" + rs.metadata.labels["pod-template-hash"], rs.metadata
assert rs.metadata.annotations["deployment.kubernetes.io/revision"] == "1", rs.metadata.annotations
rs = eventually(
    "ReplicaSet status",
    lambda: (lambda r: r if r.status.available_replicas == 2 else None)(
        apps.read_namespaced_replica_set_status(rs.metadata.name, ns)
    ),
)
assert (rs.status.replicas, rs.status.ready_replicas, rs.status.fully_labeled_replicas) == (2, 2, 2), rs.status
assert rs.status.observed_generation == rs.metadata.generation, rs.status
for p in pods:
    ref = p.metadata.owner_references[0]
    assert (ref.kind, ref.name, ref.uid) == ("ReplicaSet", rs.metadata.name, rs.metadata.uid), ref
d = apps.read_namespaced_deployment_status("py-web", ns)
assert (d.status.replicas, d.status.ready_replicas, d.status.unavailable_replicas) == (2, 2, None), d.status
progressing = [c for c in d.status.conditions if c.type == "Progressing"][0]
assert (progressing.status, progressing.reason) == ("True", "NewReplicaSetAvailable"), progressing

batch.create_namespaced_job(
    ns,
    client.V1Job(
        metadata=client.V1ObjectMeta(name="py-job"),
        spec=client.V1JobSpec(
            completions=2,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never",
                    containers=[client.V1Container(name="work", image="busybox", command=["true"])],
                ),
            ),
        ),
    ),
)


def complete():
    j = batch.read_namespaced_job_status("py-job", ns)
    conditions = {c.type: c.status for c in (j.status.conditions or [])}
    return j if conditions.get("Complete") == "True" else None


j = eventually("Job complete", complete)
assert j.status.succeeded == 2, j.status
assert j.status.completion_time is not None, j.status
assert not j.status.active, j.status
job_pods = core.list_namespaced_pod(ns, label_selector="batch.kubernetes.io/job-name=py-job").items
assert len(job_pods) == 2, [p.metadata.name for p in job_pods]
for p in job_pods:
    assert p.status.phase == "Succeeded", p.status.phase
    terminated = p.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed"), terminated
print("workloads.py: ok")
