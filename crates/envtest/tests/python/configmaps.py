"""CRUD of ConfigMaps and list with selectors through CoreV1Api."""

import json

from kubernetes import client

from common import api_client, expect_api_error, namespace

ns = namespace()
v1 = client.CoreV1Api(api_client())

created = v1.create_namespaced_config_map(
    ns,
    client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="py-cm", labels={"app": "web", "tier": "front"}),
        data={"a": "1"},
    ),
)
assert created.metadata.uid, "uid set"
assert created.metadata.resource_version, "resourceVersion set"
assert created.metadata.creation_timestamp is not None, "creationTimestamp parsed"

got = v1.read_namespaced_config_map("py-cm", ns)
assert got.data == {"a": "1"}, got.data

got.data["b"] = "2"
replaced = v1.replace_namespaced_config_map("py-cm", ns, got)
assert replaced.data == {"a": "1", "b": "2"}, replaced.data
assert replaced.metadata.resource_version != created.metadata.resource_version

# Replacing with the stale object is an optimistic-concurrency conflict.
stale = created
stale.data = {"x": "y"}
err = expect_api_error(409, v1.replace_namespaced_config_map, "py-cm", ns, stale)
assert json.loads(err.body)["reason"] == "Conflict", err.body

patched = v1.patch_namespaced_config_map("py-cm", ns, {"data": {"c": "3"}})
assert patched.data == {"a": "1", "b": "2", "c": "3"}, patched.data

expect_api_error(409, v1.create_namespaced_config_map, ns,
                 client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm")))
err = expect_api_error(422, v1.create_namespaced_config_map, ns,
                       client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Not_Valid")))
assert json.loads(err.body)["reason"] == "Invalid", err.body

for name, labels in [("py-db", {"app": "db"}), ("py-other", {"tier": "back"})]:
    v1.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels)))


def names(**kwargs):
    # Every namespace also holds the root-CA publisher's kube-root-ca.crt.
    items = v1.list_namespaced_config_map(ns, **kwargs).items
    return sorted(cm.metadata.name for cm in items if cm.metadata.name != "kube-root-ca.crt")


assert names() == ["py-cm", "py-db", "py-other"], names()
assert names(label_selector="app=web") == ["py-cm"]
assert names(label_selector="app in (web,db)") == ["py-cm", "py-db"]
assert names(label_selector="!app") == ["py-other"]
assert names(label_selector="app,tier=front") == ["py-cm"]
assert names(field_selector="metadata.name=py-db") == ["py-db"]
page = v1.list_namespaced_config_map(ns, limit=2)
assert len(page.items) == 2 and page.metadata._continue, "first page with a continue token"
rest = v1.list_namespaced_config_map(ns, limit=2, _continue=page.metadata._continue)
paged = [i.metadata.name for i in page.items + rest.items]
assert paged == ["kube-root-ca.crt", "py-cm", "py-db", "py-other"], paged

status = v1.delete_namespaced_config_map("py-cm", ns)
assert status.status == "Success", status
expect_api_error(404, v1.read_namespaced_config_map, "py-cm", ns)
print("configmaps: ok")
