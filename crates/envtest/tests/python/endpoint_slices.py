"""EndpointSlices of a Service seen through the Python client: the ready
Pods it selects as endpoints with their addresses, Nodes and target
references, the Service's port resolved by name, and a Pod that is not
ready reported as such."""

import time

from kubernetes import client

from common import api_client, namespace

ns = namespace()
api = api_client()
core = client.CoreV1Api(api)
discovery = client.DiscoveryV1Api(api)


def eventually(what, check, timeout=30):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, f"{what} not reached within {timeout}s"
        time.sleep(0.1)


def pod(name, image):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "py-api"}),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="api", image=image, ports=[client.V1ContainerPort(name="http", container_port=8080)]
                )
            ]
        ),
    )


for name in ("api-a", "api-b"):
    core.create_namespaced_pod(ns, pod(name, "nginx:1.27"))
core.create_namespaced_pod(ns, pod("api-crashing", "example.com/api:envtest-crashloop"))


def all_have_ips():
    pods = core.list_namespaced_pod(ns).items
    return len(pods) == 3 and all(p.status.pod_ip for p in pods)


# The Service comes once its Pods have addresses. Before that its only slice
# is the placeholder, whose `endpoints` is null as on a real cluster, and
# this client refuses to read such a slice ("Invalid value for `endpoints`,
# must not be `None`").
eventually("three Pods with addresses", all_have_ips)
service = core.create_namespaced_service(
    ns,
    client.V1Service(
        metadata=client.V1ObjectMeta(name="py-api"),
        spec=client.V1ServiceSpec(
            selector={"app": "py-api"},
            ports=[client.V1ServicePort(name="web", port=80, target_port="http")],
        ),
    ),
)

selector = "kubernetes.io/service-name=py-api"


def settled():
    slices = discovery.list_namespaced_endpoint_slice(ns, label_selector=selector).items
    endpoints = [e for s in slices for e in (s.endpoints or [])]
    ready = [e for e in endpoints if e.conditions.ready]
    return slices if len(endpoints) == 3 and len(ready) == 2 else None


slices = eventually("three endpoints, two ready", settled)
assert len(slices) == 1, [s.metadata.name for s in slices]
s = slices[0]
assert s.address_type == "IPv4", s.address_type
assert s.metadata.name.startswith("py-api-"), s.metadata.name
assert s.metadata.labels["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
owner = s.metadata.owner_references[0]
assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Service", "py-api", service.metadata.uid, True)
assert [(p.name, p.port, p.protocol) for p in s.ports] == [("web", 8080, "TCP")], s.ports

pods = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
by_pod = {e.target_ref.name: e for e in s.endpoints}
assert sorted(by_pod) == ["api-a", "api-b", "api-crashing"], sorted(by_pod)
for name, e in by_pod.items():
    p = pods[name]
    assert e.addresses == [p.status.pod_ip], (e.addresses, p.status.pod_ip)
    assert e.node_name == p.spec.node_name, (e.node_name, p.spec.node_name)
    assert e.zone, e
    assert (e.target_ref.kind, e.target_ref.namespace, e.target_ref.uid) == ("Pod", ns, p.metadata.uid)
    expected = name != "api-crashing"
    assert (e.conditions.ready, e.conditions.serving, e.conditions.terminating) == (
        expected,
        expected,
        False,
    ), (name, e.conditions)

# A deleted Pod leaves the slice.
core.delete_namespaced_pod("api-b", ns)


def without_b():
    slices = discovery.list_namespaced_endpoint_slice(ns, label_selector=selector).items
    names = sorted(e.target_ref.name for s in slices for e in (s.endpoints or []))
    return names if names == ["api-a", "api-crashing"] else None


eventually("api-b gone from the slice", without_b)
print("endpoint_slices.py: ok")
