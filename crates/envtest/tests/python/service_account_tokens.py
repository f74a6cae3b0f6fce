"""ServiceAccount tokens as a cluster issues and accepts them, through the
Python client: a TokenRequest returns a signed token; a client using it as
its bearer token acts as the ServiceAccount (RBAC decides what it may do);
TokenReview says who the token is; once the ServiceAccount is deleted the
token is refused with 401."""

import json

from kubernetes import client

from common import api_client, expect_api_error, namespace

ns = namespace()
admin = api_client()
core = client.CoreV1Api(admin)
rbac = client.RbacAuthorizationV1Api(admin)

core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="robot")))
request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
issued = core.create_namespaced_service_account_token("robot", ns, request)
token = issued.status.token
assert token.count(".") == 2 and token.startswith("eyJ"), token
assert issued.spec.audiences == ["https://kubernetes.default.svc"], issued.spec.audiences
assert issued.spec.expiration_seconds == 3600

too_short = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=60))
e = expect_api_error(422, core.create_namespaced_service_account_token, "robot", ns, too_short)
assert "may not specify a duration less than 10 minutes" in e.body, e.body
expect_api_error(404, core.create_namespaced_service_account_token, "nobody", ns, request)


def as_robot():
    """A client with the same server and TLS settings whose only credential is the token."""
    conf = client.Configuration()
    base = admin.configuration
    conf.host = base.host
    conf.verify_ssl = base.verify_ssl
    conf.ssl_ca_cert = base.ssl_ca_cert
    conf.api_key = {"authorization": "Bearer " + token}
    return client.ApiClient(conf)


robot = client.CoreV1Api(as_robot())
e = expect_api_error(403, robot.list_namespaced_config_map, ns)
assert f'User "system:serviceaccount:{ns}:robot" cannot list resource "configmaps"' in json.loads(e.body)["message"], e.body

rbac.create_namespaced_role_binding(ns, client.V1RoleBinding(
    metadata=client.V1ObjectMeta(name="robot-view"),
    role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view"),
    subjects=[client.RbacV1Subject(kind="ServiceAccount", name="robot", namespace=ns)],
))
assert robot.list_namespaced_config_map(ns).items is not None
# view grants reading, not writing.
expect_api_error(403, robot.create_namespaced_config_map, ns,
                 client.V1ConfigMap(metadata=client.V1ObjectMeta(name="nope")))

auth = client.AuthenticationV1Api(admin)
review = auth.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
assert review.status.authenticated, review.status
assert review.status.user.username == f"system:serviceaccount:{ns}:robot"
assert review.status.user.groups == ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
bad = auth.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="garbage")))
assert not bad.status.authenticated and bad.status.error == "invalid bearer token", bad.status

core.delete_namespaced_service_account("robot", ns)
e = expect_api_error(401, robot.list_namespaced_config_map, ns)
assert json.loads(e.body)["reason"] == "Unauthorized", e.body

print("service_account_tokens: ok")
