"""A StatefulSet with a claim template seen through the Python client: its
Pods come up in order, each with a claim bound to a volume the simulated
provisioner made for the default StorageClass."""

import time

from kubernetes import client

from common import api_client, namespace

ns = namespace()
api = api_client()
apps = client.AppsV1Api(api)
core = client.CoreV1Api(api)


def eventually(what, check, timeout=30):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, f"{what} not reached within {timeout}s"
        time.sleep(0.1)


labels = {"app": "py-db"}
core.create_namespaced_service(
    ns,
    client.V1Service(
        metadata=client.V1ObjectMeta(name="py-db"),
        spec=client.V1ServiceSpec(
            cluster_ip="None", selector=labels, ports=[client.V1ServicePort(port=5432)]
        ),
    ),
)
apps.create_namespaced_stateful_set(
    ns,
    client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="py-db"),
        spec=client.V1StatefulSetSpec(
            service_name="py-db",
            replicas=2,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="pg", image="postgres:16")]),
            ),
            volume_claim_templates=[
                client.V1PersistentVolumeClaim(
                    metadata=client.V1ObjectMeta(name="data"),
                    spec=client.V1PersistentVolumeClaimSpec(
                        access_modes=["ReadWriteOnce"],
                        resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
                    ),
                )
            ],
        ),
    ),
)


def ready():
    s = apps.read_namespaced_stateful_set_status("py-db", ns)
    done = s.status.ready_replicas == 2 and s.status.available_replicas == 2
    return s if done else None


s = eventually("StatefulSet ready", ready)
assert s.status.current_revision == s.status.update_revision, s.status
assert (s.status.replicas, s.status.current_replicas, s.status.updated_replicas) == (2, 2, 2), s.status

claims = {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(ns).items}
assert sorted(claims) == ["data-py-db-0", "data-py-db-1"], sorted(claims)
for ordinal in (0, 1):
    claim = claims[f"data-py-db-{ordinal}"]
    assert claim.status.phase == "Bound", claim.status
    assert claim.spec.storage_class_name == "standard", claim.spec
    assert claim.status.capacity == {"storage": "1Gi"}, claim.status.capacity
    assert claim.metadata.labels == labels, claim.metadata.labels
    assert claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes", claim.metadata.annotations
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.metadata.name == f"pvc-{claim.metadata.uid}", volume.metadata.name
    assert volume.status.phase == "Bound", volume.status
    assert (volume.spec.claim_ref.namespace, volume.spec.claim_ref.name) == (ns, claim.metadata.name)
    assert volume.spec.claim_ref.uid == claim.metadata.uid, volume.spec.claim_ref
    assert volume.spec.persistent_volume_reclaim_policy == "Delete", volume.spec

    pod = core.read_namespaced_pod(f"py-db-{ordinal}", ns)
    assert pod.status.phase == "Running", pod.status.phase
    assert (pod.spec.hostname, pod.spec.subdomain) == (f"py-db-{ordinal}", "py-db"), pod.spec
    mounted = [v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim]
    assert mounted == [claim.metadata.name], mounted
    assert pod.metadata.labels["apps.kubernetes.io/pod-index"] == str(ordinal), pod.metadata.labels

# Ordered: py-db-1 started only once py-db-0 was Ready.
first = core.read_namespaced_pod("py-db-0", ns)
second = core.read_namespaced_pod("py-db-1", ns)
ready_at = [c for c in first.status.conditions if c.type == "Ready"][0].last_transition_time
assert second.metadata.creation_timestamp >= ready_at.replace(microsecond=0), (
    second.metadata.creation_timestamp,
    ready_at,
)
print("statefulset_claims.py: ok")
