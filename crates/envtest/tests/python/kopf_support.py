"""Shared set-up of the Kopf checks: a namespaced custom resource for each
operator to handle, and the oscrypto fix Kopf's self-signed certificate needs.

Kopf's webhook server makes its certificate with certbuilder, which uses
oscrypto; oscrypto 1.3.0 (the newest on PyPI) cannot read OpenSSL version
strings with a two-digit patch number ("3.0.19") and refuses to load. Until
a fixed release is on PyPI, `load_oscrypto` loads it with the version
pattern of its development branch (one or more patch digits). Kopf's own
code then runs unchanged.
"""

import re
import time

from kubernetes import client

GROUP = "opctl.test"


def load_oscrypto():
    search = re.search
    broken = "\\b(\\d\\.\\d\\.\\d[a-z]*)\\b"

    def fixed(pattern, string, flags=0):
        if pattern == broken:
            pattern = "\\b(\\d\\.\\d\\.\\d+[a-z]*)\\b"
        return search(pattern, string, flags)

    re.search = fixed
    try:
        import oscrypto.asymmetric  # noqa: F401  (loaded once, with the fix)
    finally:
        re.search = search


def ensure_crd(api, plural, kind):
    """Creates the CRD `<plural>.opctl.test` (v1, status subresource) unless
    it exists, and waits until it is Established."""
    ext = client.ApiextensionsV1Api(api)
    name = f"{plural}.{GROUP}"
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    },
                }},
            }],
        },
    }
    try:
        ext.create_custom_resource_definition(body)
    except client.exceptions.ApiException as e:
        assert e.status == 409, e.body
    wait_for(lambda: any(
        c.type == "Established" and c.status == "True"
        for c in (ext.read_custom_resource_definition(name).status.conditions or [])
    ), f"CRD {name} Established")


def wait_for(check, what, timeout=30.0):
    """Calls `check` until it returns something true; fails naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except client.exceptions.ApiException as e:
            result, last = None, e
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")
