"""A Kopf operator with admission webhooks served by Kopf's own webhook
server on its self-signed certificate (CA-flagged, used as its own caBundle),
which Kopf registers in the webhook configurations it manages."""

import os

import kopf

import kopf_support

kopf_support.load_oscrypto()


@kopf.on.startup()
def webhook_server(settings: kopf.OperatorSettings, **_):
    settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", host="127.0.0.1")
    settings.admission.managed = os.environ["KOPF_WEBHOOK_CONFIGURATION"]


@kopf.on.validate("opctl.test", "v1", "kopfguards")
def refuse_forbidden(spec, **_):
    if spec.get("name") == "forbidden":
        raise kopf.AdmissionError("the name 'forbidden' is not allowed here")


@kopf.on.mutate("opctl.test", "v1", "kopfguards")
def mark(patch, **_):
    patch.metadata.setdefault("labels", {})["kopf.opctl.test/admitted"] = "yes"
