"""The bytes kube-apiserver writes, as the Python client receives them:
compact JSON ending with a newline (Go's json.Encoder, HTML characters
escaped), Status errors in the format the Accept header asks for, indented
JSON without a newline where no accepted format can carry the error or the
client asks for pretty output."""

import json

from kubernetes import client

from common import api_client, namespace

ns = namespace()
api = api_client()
v1 = client.CoreV1Api(api)
v1.create_namespaced_config_map(
    ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="wire"), data={"a": "<b>&"})
)


def raw(method, path, accept="application/json", query=None, body=None, content_type=None):
    """(status, Content-Type, body bytes) of one request, error or not."""
    headers = {"Accept": accept}
    if content_type:
        headers["Content-Type"] = content_type
    try:
        resp = api.call_api(
            path, method, query_params=query or [], header_params=headers, body=body,
            _preload_content=False, _return_http_data_only=True,
        )
        return resp.status, resp.headers.get("Content-Type"), resp.data
    except client.exceptions.ApiException as e:
        data = e.body if isinstance(e.body, bytes) else e.body.encode()
        return e.status, e.headers.get("Content-Type"), data


def compact(doc):
    """Go's json.Encoder output for a Status (field order as Go's struct)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n").encode()


def indented(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def status(code, reason, message, details=None):
    doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason}
    if details is not None:
        doc["details"] = details
    doc["code"] = code
    return doc


base = f"/api/v1/namespaces/{ns}/configmaps"

# An object: compact, newline-terminated, HTML characters escaped as Go does.
code, ctype, body = raw("GET", f"{base}/wire")
assert code == 200 and ctype == "application/json", (code, ctype)
assert body.endswith(b"}\n") and not body.endswith(b"\n\n"), body[-20:]
assert b'"a":"\\u003cb\\u003e\\u0026"' in body, body

# A list too.
code, ctype, body = raw("GET", base)
assert code == 200 and body.endswith(b"]}\n"), body[-20:]

not_found = status(404, "NotFound", 'configmaps "nope" not found',
                   {"name": "nope", "kind": "configmaps"})

# A 404 for a JSON client: byte for byte what kube-apiserver writes.
code, ctype, body = raw("GET", f"{base}/nope")
assert (code, ctype) == (404, "application/json"), (code, ctype)
assert body == compact(not_found), body

# No accepted format can carry a Status (metadata only asked): indented JSON.
code, ctype, body = raw("GET", f"{base}/nope",
                        accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
assert (code, ctype) == (404, "application/json"), (code, ctype)
assert body == indented(not_found), body

# ?pretty=true asks for indented JSON, errors included.
code, ctype, body = raw("GET", f"{base}/nope", query=[("pretty", "true")])
assert body == indented(not_found), body
code, ctype, body = raw("GET", f"{base}/wire", query=[("pretty", "true")])
assert body.startswith(b'{\n  "') and body.endswith(b"\n}"), body
assert json.loads(body)["metadata"]["name"] == "wire", body

# 406: go-restful's message, indented (no format the client accepts).
code, ctype, body = raw("GET", f"{base}/wire", accept="application/xml")
assert (code, ctype) == (406, "application/json"), (code, ctype)
expected = status(406, "NotAcceptable",
                  "406: Not Acceptable\n\nAvailable representations: application/json, "
                  "application/yaml, application/vnd.kubernetes.protobuf", {})
assert body == indented(expected), body

# 405 and 415 as compact JSON.
code, ctype, body = raw("POST", f"{base}/wire", body={"kind": "ConfigMap"},
                        content_type="application/json")
assert body == compact(status(405, "MethodNotAllowed",
                              "the server does not allow this method on the requested resource",
                              {})), body
code, ctype, body = raw("POST", base, body="name: x", content_type="text/plain")
assert code == 415, (code, body)
assert body == compact(status(
    415, "UnsupportedMediaType",
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf")), body

# A YAML client gets its errors in YAML.
code, ctype, body = raw("GET", f"{base}/nope", accept="application/yaml")
assert (code, ctype) == (404, "application/yaml"), (code, ctype)
assert b"reason: NotFound" in body and not body.startswith(b"{"), body

# Paths nothing serves: Go's plain-text 404.
code, ctype, body = raw("GET", "/nothing/here")
assert (code, ctype, body) == (404, "text/plain; charset=utf-8", b"404 page not found\n"), body

# /version is written indented whatever the client accepts.
code, ctype, body = raw("GET", "/version", accept="application/yaml")
assert code == 200 and ctype == "application/json" and body.startswith(b'{\n  "major": '), body

print("wire_bytes: ok")
