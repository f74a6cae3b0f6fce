//! Large LIST answers are written item by item (streamed in chunks); every
//! shape and format a LIST serves must still read as the whole document
//! did: JSON (compact and indented), YAML, Table (with each includeObject)
//! and PartialObjectMetadataList, for built-in and custom resources, and
//! the same as a small (unstreamed) page of the same list.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::time::Duration;

use opctl_envtest::{Config, Simulation};
use serde_json::{Value, json};
use support::http::{Http, HttpRequest, HttpResponse};

/// More than the server writes in one piece (256 items).
const OBJECTS: usize = 600;
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const METADATA: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

async fn get(http: &Http, target: &str, accept: &str) -> HttpResponse {
    let mut request = HttpRequest::new("GET", target);
    request.headers = vec![("Accept".into(), accept.into())];
    let response = http
        .send(&request, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("GET {target}: {e}"));
    assert_eq!(response.status, 200, "GET {target}: {}", response.text());
    response
}

fn names(items: &Value) -> Vec<String> {
    items
        .as_array()
        .expect("an array")
        .iter()
        .map(|i| {
            i.pointer("/metadata/name")
                .or_else(|| i.pointer("/object/metadata/name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_lists_read_as_whole_documents_in_every_shape() {
    let dir = tempfile::tempdir().expect("temp dir");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "bolts.lists.example.com"},
        "spec": {"group": "lists.example.com", "scope": "Namespaced",
            "names": {"plural": "bolts", "singular": "bolt", "kind": "Bolt"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    std::fs::write(dir.path().join("bolts.json"), crd.to_string()).expect("CRD");
    let env = server::start(Config {
        crd_paths: vec![dir.path().to_path_buf()],
        simulation: Simulation::off(),
        ..Config::default()
    })
    .await;
    let http = Http::new(&env.base_url());
    let created = http
        .send(
            &HttpRequest::new("POST", "/api/v1/namespaces").json(
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "big"}}),
            ),
            Duration::from_secs(10),
        )
        .await
        .expect("namespace");
    assert_eq!(created.status, 201);
    for i in 0..OBJECTS {
        for (target, body) in [
            (
                "/api/v1/namespaces/big/configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i:04}"), "labels": {"n": i.to_string()}},
                    "data": {"text": "<b>&\u{2028}"}}),
            ),
            (
                "/apis/lists.example.com/v1/namespaces/big/bolts",
                json!({"apiVersion": "lists.example.com/v1", "kind": "Bolt",
                    "metadata": {"name": format!("bolt-{i:04}")}, "spec": {"size": i}}),
            ),
        ] {
            let r = http
                .send(
                    &HttpRequest::new("POST", target).json(&body),
                    Duration::from_secs(10),
                )
                .await
                .expect("create");
            assert_eq!(r.status, 201, "{}", r.text());
        }
    }
    let expected: Vec<String> = (0..OBJECTS).map(|i| format!("cm-{i:04}")).collect();
    let configmaps = "/api/v1/namespaces/big/configmaps?labelSelector=n";

    // JSON as Go writes it: compact, HTML-escaped, one final newline; items
    // without apiVersion and kind, metadata first.
    let json_list = get(&http, configmaps, "application/json").await;
    let text = json_list.text();
    assert!(text.ends_with("]}\n") && text.matches('\n').count() == 1);
    assert!(
        text.contains(r#""text":"\u003cb\u003e\u0026\u2028""#),
        "{}",
        &text[..300]
    );
    let list: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        (&list["kind"], &list["apiVersion"]),
        (&json!("ConfigMapList"), &json!("v1"))
    );
    assert_eq!(names(&list["items"]), expected);
    // Each item is the object as a GET serves it, in its order of fields,
    // less apiVersion and kind.
    let one = get(
        &http,
        "/api/v1/namespaces/big/configmaps/cm-0000",
        "application/json",
    )
    .await;
    let one: Value = serde_json::from_slice(&one.body).expect("JSON");
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .expect("an object")
            .keys()
            .filter(|k| *k != "apiVersion" && *k != "kind")
            .cloned()
            .collect()
    };
    assert_eq!(keys(&list["items"][0]), keys(&one));
    let mut without_type = one.clone();
    without_type.as_object_mut().map(|m| {
        m.shift_remove("apiVersion");
        m.shift_remove("kind")
    });
    assert_eq!(list["items"][0], without_type);
    assert_eq!(list["items"][7]["data"]["text"], "<b>&\u{2028}");

    // A small page of the same list (written in one piece) says the same.
    let page = get(
        &http,
        &format!("{configmaps}&limit=100"),
        "application/json",
    )
    .await;
    let page: Value = page.json().expect("JSON");
    assert_eq!(page["items"].as_array().map(Vec::len), Some(100));
    assert_eq!(page["items"][5], list["items"][5]);

    // Indented JSON and YAML carry the same document.
    let pretty = get(
        &http,
        &format!("{configmaps}&pretty=true"),
        "application/json",
    )
    .await;
    assert!(
        pretty
            .text()
            .starts_with("{\n  \"kind\": \"ConfigMapList\",\n")
    );
    assert_eq!(pretty.json().expect("JSON"), list);
    let yaml = get(&http, configmaps, "application/yaml").await;
    assert_eq!(yaml.content_type, "application/yaml");
    let from_yaml: Value = serde_saphyr::from_str(&yaml.text()).expect("YAML");
    assert_eq!(from_yaml, list);

    // Tables: rows in order, each object as asked.
    for (include, object_kind) in [
        ("", Some("PartialObjectMetadata")),
        ("&includeObject=Object", None),
        ("&includeObject=None", Some("")),
    ] {
        let table = get(&http, &format!("{configmaps}{include}"), TABLE).await;
        let table: Value = table.json().expect("JSON");
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["rows"].as_array().map(Vec::len), Some(OBJECTS));
        let row = &table["rows"][3];
        assert_eq!(row["cells"][0], "cm-0003");
        match object_kind {
            Some("") => assert!(row.get("object").is_none(), "{row}"),
            Some(kind) => assert_eq!(row["object"]["kind"], kind),
            None => assert_eq!(row["object"]["data"]["text"], "<b>&\u{2028}"),
        }
        if object_kind != Some("") {
            assert_eq!(names(&table["rows"]), expected);
        }
    }
    let metadata = get(&http, configmaps, METADATA).await;
    let metadata: Value = metadata.json().expect("JSON");
    assert_eq!(metadata["kind"], "PartialObjectMetadataList");
    assert_eq!(names(&metadata["items"]), expected);
    assert_eq!(metadata["items"][0]["kind"], "PartialObjectMetadata");
    assert!(metadata["items"][0].get("data").is_none());

    // Custom resources keep apiVersion and kind on items, and the list an
    // empty continue.
    let bolts = get(
        &http,
        "/apis/lists.example.com/v1/namespaces/big/bolts",
        "application/json",
    )
    .await;
    let bolts: Value = bolts.json().expect("JSON");
    assert_eq!(bolts["metadata"]["continue"], "");
    assert_eq!(bolts["items"].as_array().map(Vec::len), Some(OBJECTS));
    assert_eq!(
        (
            &bolts["items"][9]["kind"],
            &bolts["items"][9]["spec"]["size"]
        ),
        (&json!("Bolt"), &json!(9))
    );
    env.shutdown().await;
}
