"""A tiny Kopf operator: on creation of a KopfProbe it patches the status
(`phase`) and returns a greeting Kopf stores in the status too."""

import kopf


@kopf.on.create("opctl.test", "v1", "kopfprobes")
def created(spec, patch, **_):
    patch.status["phase"] = "Ready"
    return {"greeting": f"hello {spec.get('name', 'nobody')}"}
