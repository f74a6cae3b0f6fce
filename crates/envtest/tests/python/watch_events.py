"""kubernetes.watch.Watch sees ADDED, MODIFIED and DELETED in order."""

import threading
import time

from kubernetes import client, watch

from common import api_client, namespace

ns = namespace()
v1 = client.CoreV1Api(api_client())

# Start from a list's resourceVersion so no event can be missed.
start = v1.list_namespaced_config_map(ns).metadata.resource_version


def writes():
    time.sleep(0.3)
    v1.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="watched"), data={"v": "1"}))
    v1.patch_namespaced_config_map("watched", ns, {"data": {"v": "2"}})
    v1.delete_namespaced_config_map("watched", ns)


writer = threading.Thread(target=writes)
writer.start()

seen = []
w = watch.Watch()
for event in w.stream(v1.list_namespaced_config_map, namespace=ns,
                      resource_version=start, timeout_seconds=20):
    obj = event["object"]
    if obj.metadata.name != "watched":
        continue
    seen.append((event["type"], (obj.data or {}).get("v")))
    if event["type"] == "DELETED":
        w.stop()
writer.join()

assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")], seen
print("watch: ok")
