//! Input at the edges, answered as kube-apiserver v1.32 answers it (each
//! case follows its source, see docs/envtest-conformance.md): a DeleteOptions
//! body whose grace period is no int64, Content-Type values that are not
//! UTF-8, patches that change apiVersion or kind, and an empty value set in
//! a label selector. Nothing a refused request names is changed.

use axum::http::{HeaderValue, Request};
use kube::Client;
use serde_json::{Value, json};

use crate::common::{client, kubectl, namespace};
use crate::server;

/// A raw request's JSON answer, or its Status.
async fn send(
    client: &Client,
    method: &str,
    uri: &str,
    content_type: &[u8],
    body: &[u8],
) -> Result<Value, kube::core::Status> {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(
            "Content-Type",
            HeaderValue::from_bytes(content_type).expect("a header value"),
        )
        .body(body.to_vec())
        .expect("request");
    match client.request_text(request).await {
        Ok(text) => Ok(serde_json::from_str(&text).unwrap_or(Value::Null)),
        Err(kube::Error::Api(status)) => Err(*status),
        Err(e) => panic!("{method} {uri}: {e}"),
    }
}

async fn must(client: &Client, method: &str, uri: &str, content_type: &[u8], body: &[u8]) -> Value {
    send(client, method, uri, content_type, body)
        .await
        .unwrap_or_else(|s| panic!("{method} {uri}: {s:?}"))
}

async fn refused(
    client: &Client,
    method: &str,
    uri: &str,
    content_type: &[u8],
    body: &[u8],
) -> kube::core::Status {
    match send(client, method, uri, content_type, body).await {
        Err(status) => status,
        Ok(answer) => panic!(
            "{method} {uri} ({}) must fail, got {answer}",
            String::from_utf8_lossy(content_type)
        ),
    }
}

async fn config_map(client: &Client, ns: &str, name: &str) -> Value {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"a": ""}}, "data": {"k": "v"}});
    must(
        client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        b"application/json",
        body.to_string().as_bytes(),
    )
    .await
}

fn resource_version(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap_or("")
}

/// The DeleteOptions body is decoded into Go's struct and the decoder's
/// error goes out unwrapped (`handlers/delete.go`): a 500 with Go's text,
/// as for any other field of the wrong JSON type, and nothing deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grace_period_beyond_int64_in_a_delete_body_deletes_nothing() {
    let client = client().await;
    let ns = namespace(&client, "strict-grace").await;
    let created = config_map(&client, &ns, "kept").await;
    let uri = format!("/api/v1/namespaces/{ns}/configmaps/kept");
    for body in [
        r#"{"gracePeriodSeconds": 1e30}"#,
        r#"{"gracePeriodSeconds": 9223372036854775808}"#,
        r#"{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1e30}"#,
    ] {
        let status = refused(
            &client,
            "DELETE",
            &uri,
            b"application/json",
            body.as_bytes(),
        )
        .await;
        assert_eq!(status.code, 500, "{body}: {status:?}");
        assert!(
            status.message.starts_with("json: cannot unmarshal number ")
                && status.message.ends_with(
                    " into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
                ),
            "{body}: {status:?}"
        );
    }
    let after = must(&client, "GET", &uri, b"", b"").await;
    assert_eq!(resource_version(&after), resource_version(&created));
}

const UNKNOWN_BODY_FORMAT: &str = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// Object bodies are negotiated with Go's `mime.ParseMediaType`, which
/// refuses a byte outside ASCII in the type or a parameter token (415),
/// but takes one inside a quoted parameter value. PATCH compares the value
/// cut at `;` with the patch types, so its parameters do not matter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_types_that_are_not_utf8_are_refused_where_go_refuses_them() {
    let client = client().await;
    let ns = namespace(&client, "strict-ctype").await;
    let created = config_map(&client, &ns, "target").await;
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");
    let uri = format!("{collection}/target");
    let new = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).to_string()
    };
    for content_type in [
        &b"application/json\xff"[..],
        b"application/\xc3\x28json",
        b"\xff",
        b"application/json; charset=\xff",
        b"application/json; \xff=utf-8",
    ] {
        let shown = String::from_utf8_lossy(content_type).into_owned();
        let status = refused(
            &client,
            "POST",
            &collection,
            content_type,
            new("made").as_bytes(),
        )
        .await;
        assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (415, "UnsupportedMediaType", UNKNOWN_BODY_FORMAT),
            "POST {shown:?}"
        );
        let mut replaced = created.clone();
        replaced["data"] = json!({"k": "replaced"});
        let status = refused(
            &client,
            "PUT",
            &uri,
            content_type,
            replaced.to_string().as_bytes(),
        )
        .await;
        assert_eq!(status.code, 415, "PUT {shown:?}: {status:?}");
        let status = refused(&client, "DELETE", &uri, content_type, b"{}").await;
        assert_eq!(status.code, 415, "DELETE {shown:?}: {status:?}");
    }
    // Nothing was created, replaced or deleted.
    let list = must(&client, "GET", &collection, b"", b"").await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, ["target"]);
    let after = must(&client, "GET", &uri, b"", b"").await;
    assert_eq!(resource_version(&after), resource_version(&created));

    // A quoted parameter value may hold any byte.
    must(
        &client,
        "POST",
        &collection,
        b"application/json; charset=\"\xff\"",
        new("quoted").as_bytes(),
    )
    .await;
    // PATCH: the patch type before `;` decides.
    let status = refused(
        &client,
        "PATCH",
        &uri,
        b"application/merge-patch+json\xff",
        br#"{"data":{"k":"patched"}}"#,
    )
    .await;
    assert_eq!(
        (status.code, status.message.as_str()),
        (415, "415: Unsupported Media Type")
    );
    let patched = must(
        &client,
        "PATCH",
        &uri,
        b"application/merge-patch+json; charset=\xff",
        br#"{"data":{"k":"patched"}}"#,
    )
    .await;
    assert_eq!(patched["data"]["k"], "patched");
}

/// A JSON or merge patch of a built-in object is decoded again from the
/// patched JSON: another kind or apiVersion fails that decoding (422 on
/// `patch`). A strategic merge patch drops the change and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_that_change_a_builtin_objects_kind_fail_to_decode() {
    let client = client().await;
    let ns = namespace(&client, "strict-kind").await;
    let created = config_map(&client, &ns, "target").await;
    let uri = format!("/api/v1/namespaces/{ns}/configmaps/target");
    for (content_type, patch, detail) in [
        (
            "application/merge-patch+json",
            json!({"kind": "Secret"}),
            "converting (v1.Secret) to (core.ConfigMap): unknown conversion",
        ),
        (
            "application/merge-patch+json",
            json!({"apiVersion": "apps/v1", "data": {"k": "changed"}}),
            "no kind \"ConfigMap\" is registered for version \"apps/v1\" in scheme \"pkg/runtime/scheme.go:100\"",
        ),
        (
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/kind", "value": "Secret"}]),
            "converting (v1.Secret) to (core.ConfigMap): unknown conversion",
        ),
        (
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/apiVersion", "value": "v2"}]),
            "no kind \"ConfigMap\" is registered for version \"v2\" in scheme \"pkg/runtime/scheme.go:100\"",
        ),
        (
            "application/merge-patch+json",
            json!({"kind": 7}),
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string",
        ),
    ] {
        let status = refused(
            &client,
            "PATCH",
            &uri,
            content_type.as_bytes(),
            patch.to_string().as_bytes(),
        )
        .await;
        assert_eq!(
            (status.code, status.reason.as_str()),
            (422, "Invalid"),
            "{patch}: {status:?}"
        );
        assert!(
            status
                .message
                .starts_with(" \"\" is invalid: patch: Invalid value: \"{")
                && status.message.ends_with(&format!("}}\": {detail}")),
            "{patch}: {status:?}"
        );
        let causes = status.details.map(|d| d.causes).unwrap_or_default();
        assert_eq!(causes.len(), 1, "{patch}");
        assert_eq!(
            (causes[0].reason.as_str(), causes[0].field.as_str()),
            ("FieldValueInvalid", "patch")
        );
    }
    let after = must(&client, "GET", &uri, b"", b"").await;
    assert_eq!(resource_version(&after), resource_version(&created));

    let patched = must(
        &client,
        "PATCH",
        &uri,
        b"application/strategic-merge-patch+json",
        br#"{"kind": "Secret", "apiVersion": "apps/v1", "data": {"k": "strategic"}}"#,
    )
    .await;
    assert_eq!(
        (
            &patched["apiVersion"],
            &patched["kind"],
            &patched["data"]["k"]
        ),
        (&json!("v1"), &json!("ConfigMap"), &json!("strategic"))
    );
    let stored = must(&client, "GET", &uri, b"", b"").await;
    assert_eq!(
        (&stored["apiVersion"], &stored["kind"]),
        (&json!("v1"), &json!("ConfigMap"))
    );
}

/// A custom resource decodes whatever it is given; its validator then
/// refuses another kind or apiVersion (422 named after what the object
/// claims to be), but a `/status` update keeps both from the stored object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_that_change_a_custom_resources_kind_are_invalid() {
    let group = format!("{}.strict.example.com", server::unique_name("g"));
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("sprockets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "sprockets", "singular": "sprocket", "kind": "Sprocket"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": open, "status": open}}},
                "subresources": {"status": {}}}],
        }
    });
    kubectl().ok_stdin(&["apply", "-f", "-"], &crd.to_string());
    kubectl().ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/sprockets.{group}"),
    ]);
    let client = client().await;
    let ns = namespace(&client, "strict-cr").await;
    let collection = format!("/apis/{group}/v1/namespaces/{ns}/sprockets");
    let uri = format!("{collection}/s1");
    let created = must(
        &client,
        "POST",
        &collection,
        b"application/json",
        json!({"apiVersion": format!("{group}/v1"), "kind": "Sprocket",
            "metadata": {"name": "s1"}, "spec": {"size": 1}})
        .to_string()
        .as_bytes(),
    )
    .await;
    let merge = b"application/merge-patch+json";
    let status = refused(&client, "PATCH", &uri, merge, br#"{"kind": "Gear"}"#).await;
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            format!(
                "Gear.{group} \"s1\" is invalid: kind: Invalid value: \"Gear\": must be Sprocket"
            )
            .as_str()
        )
    );
    let status = refused(
        &client,
        "PATCH",
        &uri,
        merge,
        br#"{"apiVersion": "other.example.com/v1"}"#,
    )
    .await;
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            format!(
                "Sprocket.other.example.com \"s1\" is invalid: apiVersion: Invalid value: \"other.example.com/v1\": must be {group}/v1"
            )
            .as_str()
        )
    );
    let status = refused(&client, "PATCH", &uri, merge, br#"{"kind": null}"#).await;
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status.message.contains("patch: Invalid value: ")
            && status.message.contains("Object 'Kind' is missing in '{"),
        "{status:?}"
    );
    let after = must(&client, "GET", &uri, b"", b"").await;
    assert_eq!(resource_version(&after), resource_version(&created));

    let status_patched = must(
        &client,
        "PATCH",
        &format!("{uri}/status"),
        merge,
        br#"{"kind": "Gear", "status": {"turning": true}}"#,
    )
    .await;
    assert_eq!(
        (
            &status_patched["kind"],
            &status_patched["status"]["turning"]
        ),
        (&json!("Sprocket"), &json!(true))
    );
}

/// `labels.Parse` reads an empty value list `()` as the set holding the
/// empty value, so `a in ()` is valid and selects the objects whose label
/// `a` is empty (kube-apiserver v1.32 answers 200); an unclosed list is 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_value_list_in_a_selector_means_the_empty_value() {
    let client = client().await;
    let ns = namespace(&client, "strict-selector").await;
    config_map(&client, &ns, "empty").await;
    must(
        &client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        b"application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "set", "labels": {"a": "x"}}})
            .to_string()
            .as_bytes(),
    )
    .await;
    let names = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
            .filter(|n| n != "kube-root-ca.crt")
            .collect()
    };
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let list = must(
        &client,
        "GET",
        &format!("{base}?labelSelector=a%20in%20()"),
        b"",
        b"",
    )
    .await;
    assert_eq!(names(&list), ["empty"]);
    let list = must(
        &client,
        "GET",
        &format!("{base}?labelSelector=a%20notin%20()"),
        b"",
        b"",
    )
    .await;
    assert_eq!(names(&list), ["set"]);
    let status = refused(
        &client,
        "GET",
        &format!("{base}?labelSelector=a%20in%20("),
        b"",
        b"",
    )
    .await;
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            400,
            "unable to parse requirement: found '', expected: ',', ')' or identifier"
        )
    );
}
