"""Kopf runs the operator in kopf_probe_operator.py against envtest (through
Kopf's own test runner, in this process): it handles a custom resource's
creation and patches its status through the status subresource, as on a
cluster."""

import os

from kopf.testing import KopfRunner
from kubernetes import client

import common
import kopf_support

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    api = common.api_client()
    ns = common.namespace()
    kopf_support.ensure_crd(api, "kopfprobes", "KopfProbe")
    objects = client.CustomObjectsApi(api)
    args = ["run", "--standalone", "--namespace", ns, "--verbose",
            os.path.join(HERE, "kopf_probe_operator.py")]
    with KopfRunner(args, timeout=60) as runner:
        objects.create_namespaced_custom_object(
            kopf_support.GROUP, "v1", ns, "kopfprobes",
            {"apiVersion": "opctl.test/v1", "kind": "KopfProbe",
             "metadata": {"name": "first"}, "spec": {"name": "envtest"}})
        status = kopf_support.wait_for(
            lambda: objects.get_namespaced_custom_object(
                kopf_support.GROUP, "v1", ns, "kopfprobes", "first").get("status", {}).get("created"),
            "Kopf's handler result in the status")
        assert status == {"greeting": "hello envtest"}, status
        probe = objects.get_namespaced_custom_object(kopf_support.GROUP, "v1", ns, "kopfprobes", "first")
        assert probe["status"]["phase"] == "Ready", probe
        # Kopf records what it handled, and its finalizer, on the object.
        assert "kopf.zalando.org/last-handled-configuration" in probe["metadata"]["annotations"], probe
        assert probe["metadata"]["generation"] == 1, probe
    assert runner.exception is None, runner.output
    assert runner.exit_code == 0, runner.output
    assert "Handler 'created' succeeded" in runner.output, runner.output
    print("kopf_operator: ok")


if __name__ == "__main__":
    main()
