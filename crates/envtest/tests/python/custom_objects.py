"""A custom resource through CustomObjectsApi (the CRD is created here)."""

import json
import time

from kubernetes import client

from common import api_client, expect_api_error, namespace

ns = namespace()
api = api_client()
ext = client.ApiextensionsV1Api(api)
custom = client.CustomObjectsApi(api)
GROUP, VERSION, PLURAL = "python.opctl.test", "v1", "gizmos"

crd = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Gizmo", "plural": PLURAL, "singular": "gizmo"},
        "versions": [{
            "name": VERSION, "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "mode": {"type": "string", "default": "fast"},
                    }},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                },
            }},
        }],
    },
}
try:
    ext.create_custom_resource_definition(crd)
except client.exceptions.ApiException as e:
    if e.status != 409:
        raise

deadline = time.time() + 20
while True:
    got = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
    conditions = {c.type: c.status for c in (got.status.conditions or [])}
    if conditions.get("Established") == "True":
        break
    assert time.time() < deadline, f"CRD not Established: {conditions}"
    time.sleep(0.2)

body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Gizmo",
        "metadata": {"name": "g1", "labels": {"team": "a"}}, "spec": {"size": 2}}
created = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body)
assert created["spec"] == {"size": 2, "mode": "fast"}, f"defaulting: {created['spec']}"
assert created["metadata"]["generation"] == 1

got = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g1")
got["spec"]["size"] = 3
replaced = custom.replace_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g1", got)
assert replaced["metadata"]["generation"] == 2, replaced["metadata"]

patched = custom.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g1", {"spec": {"mode": "slow"}})
assert patched["spec"] == {"size": 3, "mode": "slow"}, patched["spec"]

with_status = custom.patch_namespaced_custom_object_status(
    GROUP, VERSION, ns, PLURAL, "g1", {"status": {"phase": "Ready"}})
assert with_status["status"] == {"phase": "Ready"}
assert with_status["metadata"]["generation"] == 3, "status writes do not bump generation"

err = expect_api_error(422, custom.create_namespaced_custom_object, GROUP, VERSION, ns, PLURAL,
                       {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Gizmo",
                        "metadata": {"name": "bad"}, "spec": {"size": 0}})
message = json.loads(err.body)["message"]
assert "spec.size" in message and "greater than or equal to 1" in message, message

custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, {
    "apiVersion": f"{GROUP}/{VERSION}", "kind": "Gizmo",
    "metadata": {"name": "g2", "labels": {"team": "b"}}, "spec": {"size": 1}})
listed = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, label_selector="team=b")
assert [i["metadata"]["name"] for i in listed["items"]] == ["g2"], listed
every = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
assert {"g1", "g2"} <= {i["metadata"]["name"] for i in every["items"]}

custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g1")
expect_api_error(404, custom.get_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, "g1")
print("custom objects: ok")
