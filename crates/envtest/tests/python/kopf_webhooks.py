"""Kopf's admission webhook server, with the self-signed certificate it
makes itself (marked as a CA and used as its own caBundle), registered by
Kopf in the webhook configurations it manages: envtest calls it over TLS
as kube-apiserver does, so its validation refuses and its mutation lands."""

import os

from kopf.testing import KopfRunner
from kubernetes import client

import common
import kopf_support

HERE = os.path.dirname(os.path.abspath(__file__))


def guard(name, value):
    return {"apiVersion": "opctl.test/v1", "kind": "KopfGuard",
            "metadata": {"name": name}, "spec": {"name": value}}


def main():
    api = common.api_client()
    ns = common.namespace()
    configuration = f"{ns}.kopf.opctl.test"
    os.environ["KOPF_WEBHOOK_CONFIGURATION"] = configuration
    kopf_support.ensure_crd(api, "kopfguards", "KopfGuard")
    objects = client.CustomObjectsApi(api)
    admission = client.AdmissionregistrationV1Api(api)
    args = ["run", "--standalone", "--namespace", ns, "--verbose",
            os.path.join(HERE, "kopf_guard_operator.py")]
    try:
        with KopfRunner(args, timeout=60) as runner:
            # Kopf creates the configuration empty, then patches its webhooks in.
            def registered():
                config = admission.read_validating_webhook_configuration(configuration)
                return config if config.webhooks else None

            config = kopf_support.wait_for(
                registered, "Kopf's webhooks in its validating webhook configuration")
            client_config = config.webhooks[0].client_config
            assert client_config.url.startswith("https://127.0.0.1:"), client_config
            assert client_config.ca_bundle, "Kopf registers its certificate as the caBundle"

            def refused():
                try:
                    objects.create_namespaced_custom_object(
                        kopf_support.GROUP, "v1", ns, "kopfguards", guard("refused", "forbidden"))
                except client.exceptions.ApiException as e:
                    # Until Kopf's server listens, the call fails to connect.
                    return e if "is not allowed here" in e.body else None
                raise AssertionError("the validating webhook allowed a forbidden name")

            error = kopf_support.wait_for(refused, "Kopf's webhook to refuse")
            assert "denied the request" in error.body, error.body
            created = objects.create_namespaced_custom_object(
                kopf_support.GROUP, "v1", ns, "kopfguards", guard("allowed", "fine"))
            assert created["metadata"]["labels"] == {"kopf.opctl.test/admitted": "yes"}, created
        assert runner.exception is None, runner.output
        assert runner.exit_code == 0, runner.output
    finally:
        for delete in (admission.delete_validating_webhook_configuration,
                       admission.delete_mutating_webhook_configuration):
            try:
                delete(configuration)
            except client.exceptions.ApiException as e:
                assert e.status == 404, e.body
    print("kopf_webhooks: ok")


if __name__ == "__main__":
    main()
