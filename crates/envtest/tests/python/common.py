"""Shared set-up of the Python-client checks: a client for the kubeconfig and
namespace the Rust test passes in the environment."""

import os

from kubernetes import client, config


def api_client():
    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    return client.ApiClient()


def namespace():
    return os.environ["TEST_NAMESPACE"]


def expect_api_error(status, call, *args, **kwargs):
    """Runs call and returns the ApiException, which must carry `status`."""
    try:
        call(*args, **kwargs)
    except client.exceptions.ApiException as e:
        assert e.status == status, f"expected HTTP {status}, got {e.status}: {e.body}"
        return e
    raise AssertionError(f"expected HTTP {status}, the call succeeded")
