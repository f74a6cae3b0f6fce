//! The recorded create and update requests of the transcripts, run through
//! decode → defaults → (allocation) → prepare → validate, compared with what
//! the real server stored or the causes it reported. What the server core adds
//! (uid, resourceVersion, creationTimestamp, managedFields) is left out, and
//! generated values are normalised as the transcripts normalise them.

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value, json};

use super::*;

const TIME: &str = "2026-11-30T10:00:00Z";
const MICRO_TIME: &str = "2026-11-30T10:00:00.123456Z";
const MICRO_TIME_FIELDS: &[&str] = &["eventTime", "renewTime", "acquireTime", "lastObservedTime"];

fn transcript(name: &str) -> Value {
    let text = match name {
        "02" => include_str!("../../tests/fixtures/transcripts/02-configmap-crud.json"),
        "03" => include_str!("../../tests/fixtures/transcripts/03-request-errors.json"),
        "10" => include_str!("../../tests/fixtures/transcripts/10-deletion-gc.json"),
        "12" => include_str!("../../tests/fixtures/transcripts/12-builtin-defaults.json"),
        "13" => include_str!("../../tests/fixtures/transcripts/13-events-leases.json"),
        "14" => include_str!("../../tests/fixtures/transcripts/14-dry-run.json"),
        other => panic!("no transcript {other}"),
    };
    serde_json::from_str(text).expect("transcript is JSON")
}

/// Replaces request placeholders with values a client would send.
fn concrete(value: &mut Value, key: Option<&str>) {
    match value {
        Value::String(s) if s == "<time>" => {
            let micro = key.is_some_and(|k| MICRO_TIME_FIELDS.contains(&k));
            *s = if micro { MICRO_TIME } else { TIME }.to_string();
        }
        Value::Array(items) => items.iter_mut().for_each(|v| concrete(v, key)),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                concrete(v, Some(k));
            }
        }
        _ => {}
    }
}

/// The server's own additions, and generated values, as placeholders.
fn normalised(value: &Value) -> Value {
    static API_ACCESS: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new("kube-api-access-[a-z0-9]{5}").unwrap());
    static RFC3339: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$").unwrap()
    });
    fn walk(value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::String(s) if RFC3339.is_match(s) => json!("<time>"),
            Value::String(s) if matches!(key, Some("clusterIP")) && s != "None" => {
                json!("<clusterIP>")
            }
            Value::String(s) => json!(API_ACCESS.replace_all(s, "kube-api-access-<suffix>")),
            Value::Number(_) if key == Some("nodePort") => json!("<nodePort>"),
            Value::Array(items) if key == Some("clusterIPs") => Value::Array(
                items
                    .iter()
                    .map(|v| {
                        if v == "None" {
                            v.clone()
                        } else {
                            json!("<clusterIP>")
                        }
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, key)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), walk(v, Some(k))))
                    .collect::<Map<String, Value>>(),
            ),
            other => other.clone(),
        }
    }
    let mut out = walk(value, None);
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            meta.remove(key);
        }
        if let Some(generate) = meta
            .get("generateName")
            .and_then(Value::as_str)
            .map(str::to_string)
            && meta
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with(&generate))
        {
            meta.insert("name".into(), json!(format!("{generate}<suffix>")));
        }
    }
    out
}

/// `kind` and namespace named by a request path.
fn route(path: &str) -> Option<(&'static KindInfo, Option<String>, Option<String>)> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", group, "v1", rest @ ..] => (*group, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        other => (None, other),
    };
    match rest {
        [plural] => Some((find(group, plural)?, namespace, None)),
        [plural, name] => Some((find(group, plural)?, namespace, Some(name.to_string()))),
        _ => None,
    }
}

/// What the pipeline produced.
enum Outcome {
    Stored(Value),
    Invalid(Vec<Cause>),
    BadRequest(String),
}

struct Server {
    allocator: Allocator,
    stored: HashMap<String, Value>,
}

impl Server {
    fn new() -> Self {
        Server {
            allocator: Allocator::default(),
            stored: HashMap::new(),
        }
    }

    /// Create or update as the server core would drive this module.
    fn write(
        &mut self,
        kind: &KindInfo,
        namespace: Option<&str>,
        mut body: Value,
        uid: Option<&str>,
        dry_run: bool,
        update_of: Option<&str>,
    ) -> (Outcome, Vec<String>) {
        concrete(&mut body, None);
        if let (Some(ns), Some(meta)) = (
            namespace,
            body.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.insert("namespace".into(), json!(ns));
        }
        let (mut obj, unknown) = match decode(kind, body) {
            Ok(decoded) => decoded,
            Err(e) => return (Outcome::BadRequest(e.message), Vec::new()),
        };
        apply_defaults(kind, &mut obj);
        let old = update_of.and_then(|key| self.stored.get(key).cloned());
        let meta = obj["metadata"].as_object_mut().expect("metadata");
        if old.is_none() {
            // What the server core fills in before preparing a create.
            if let Some(uid) = uid {
                meta.insert("uid".into(), json!(uid));
            }
            meta.insert("creationTimestamp".into(), json!(TIME));
            if meta.get("name").is_none()
                && let Some(generate) = meta.get("generateName").and_then(Value::as_str)
            {
                let name = format!("{generate}abcde");
                meta.insert("name".into(), json!(name));
            }
        }
        if (kind.group, kind.kind) == ("", "Service")
            && let Err(causes) = self.allocator.allocate_service(&mut obj, dry_run)
        {
            return (Outcome::Invalid(causes), unknown);
        }
        match &old {
            None => {
                admit_create(kind, &mut obj, None);
                prepare_for_create(kind, &mut obj);
            }
            Some(old) => prepare_for_update(kind, &mut obj, old, None),
        }
        let causes = validate(kind, &obj, old.as_ref());
        if !causes.is_empty() {
            return (Outcome::Invalid(causes), unknown);
        }
        if !dry_run {
            let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
            self.stored.insert(
                format!("{}/{}/{name}", kind.plural, namespace.unwrap_or("")),
                obj.clone(),
            );
        }
        (Outcome::Stored(obj), unknown)
    }
}

fn causes_of(status: &Value) -> Vec<Cause> {
    serde_json::from_value(status["details"]["causes"].clone()).unwrap_or_default()
}

/// Go pointer addresses as the transcripts normalise them.
fn pointerless_text(text: &str) -> String {
    static PTR: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"\(0x[0-9a-f]+\)").unwrap());
    PTR.replace_all(text, "(<ptr>)").to_string()
}

fn pointerless(causes: &[Cause]) -> Vec<Cause> {
    causes
        .iter()
        .map(|c| Cause {
            message: pointerless_text(&c.message),
            ..c.clone()
        })
        .collect()
}

/// Replays every create/update step of a transcript that this module decides.
/// Returns how many steps were compared.
fn replay(file: &str, skip: &[usize]) -> usize {
    let doc = transcript(file);
    let mut server = Server::new();
    let mut compared = 0;
    for (index, step) in doc["steps"].as_array().unwrap().iter().enumerate() {
        let request = &step["request"];
        let response = &step["response"];
        let method = request["method"].as_str().unwrap();
        if skip.contains(&index)
            || !matches!(method, "POST" | "PUT")
            || !request["body"].is_object()
        {
            continue;
        }
        let Some((kind, namespace, name)) = route(request["path"].as_str().unwrap()) else {
            continue;
        };
        let status = response["status"].as_u64().unwrap();
        let body = &response["body"];
        let message = body["message"].as_str().unwrap_or("");
        // Errors the server core decides (kind mismatch, namespaces, conflicts, ...).
        let ours = match status {
            200 | 201 => true,
            422 => body["reason"] == "Invalid" && !message.contains("Options"),
            400 => {
                message.contains("cannot be handled as a")
                    && !message.contains("unknown conversion")
                    && !message.contains("is registered for version")
                    && !message.contains("duplicate field")
            }
            _ => false,
        };
        if !ours {
            continue;
        }
        let dry_run = request["query"]["dryRun"] == "All";
        // A real uid stands in for the recorded placeholder.
        let placeholder = body["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let uid = format!("00000000-0000-4000-8000-{index:012}");
        let update_of = (method == "PUT").then(|| {
            format!(
                "{}/{}/{}",
                kind.plural,
                namespace.as_deref().unwrap_or(""),
                name.clone().unwrap_or_default()
            )
        });
        let (outcome, unknown) = server.write(
            kind,
            namespace.as_deref(),
            request["body"].clone(),
            Some(&uid),
            dry_run,
            update_of.as_deref(),
        );
        let label = format!(
            "{file} step {index} ({})",
            step["name"].as_str().unwrap_or("")
        );
        let strict = request["query"]["fieldValidation"] == "Strict";
        match (status, outcome) {
            (400, _) if strict => {
                let listed = unknown
                    .iter()
                    .map(|p| format!("unknown field {p:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let expected = format!(
                    "{k} in version \"v1\" cannot be handled as a {k}: strict decoding error: {listed}",
                    k = kind.kind
                );
                assert_eq!(message, expected, "{label}");
            }
            (200 | 201, Outcome::Stored(obj)) => {
                let obj: Value = serde_json::from_str(
                    &serde_json::to_string(&obj)
                        .unwrap()
                        .replace(&uid, &placeholder),
                )
                .unwrap();
                if !dry_run {
                    let key = format!(
                        "{}/{}/{}",
                        kind.plural,
                        namespace.as_deref().unwrap_or(""),
                        obj["metadata"]["name"].as_str().unwrap_or("")
                    );
                    server.stored.insert(key, obj.clone());
                }
                let expected = normalised(body);
                let actual = normalised(&obj);
                assert_eq!(
                    actual,
                    expected,
                    "{label}\nactual:   {}\nexpected: {}",
                    serde_json::to_string_pretty(&actual).unwrap(),
                    serde_json::to_string_pretty(&expected).unwrap()
                );
                let warnings: Vec<String> = unknown
                    .iter()
                    .map(|p| format!("299 - \"unknown field \\\"{p}\\\"\""))
                    .collect();
                let recorded: Vec<String> = response["warnings"]
                    .as_array()
                    .map(|w| {
                        w.iter()
                            .map(|x| x.as_str().unwrap_or("").to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                if request["query"]["fieldValidation"] != "Ignore" {
                    assert_eq!(warnings, recorded, "{label}: warnings");
                }
            }
            (422, Outcome::Invalid(causes)) => {
                assert_eq!(pointerless(&causes), causes_of(body), "{label}");
                // Events of both APIs are the core kind inside the server.
                let group = if kind.kind == "Event" { "" } else { kind.group };
                let err = ApiError::invalid(
                    group,
                    kind.kind,
                    body["details"]["name"].as_str().unwrap_or(""),
                    causes,
                );
                assert_eq!(pointerless_text(&err.message), message, "{label}");
            }
            (400, Outcome::BadRequest(actual)) => assert_eq!(actual, message, "{label}"),
            (_, Outcome::Stored(obj)) => {
                panic!("{label}: stored {obj}, expected {status} {message}")
            }
            (_, Outcome::Invalid(causes)) => {
                panic!("{label}: invalid {causes:?}, expected {status} {message}")
            }
            (_, Outcome::BadRequest(m)) => {
                panic!("{label}: bad request {m}, expected {status} {message}")
            }
        }
        compared += 1;
    }
    compared
}

use crate::error::ApiError;

#[test]
fn transcript_02_configmap_crud() {
    // Step 6 is a stale-resourceVersion conflict (server core).
    assert_eq!(replay("02", &[6]), 6);
}

#[test]
fn transcript_03_request_errors() {
    assert_eq!(replay("03", &[]), 8);
}

#[test]
fn transcript_03_configmap_over_one_mebibyte() {
    let kind = find("", "configmaps").unwrap();
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "too-much-data", "namespace": "t03"},
        "data": {"big": "x".repeat(1_048_577)}
    });
    let (obj, _) = decode(kind, body).unwrap();
    let causes = validate(kind, &obj, None);
    let recorded = &transcript("03")["steps"][24]["response"]["body"];
    assert_eq!(causes, causes_of(recorded));
}

#[test]
fn transcript_10_owner_references() {
    assert_eq!(replay("10", &[]), 11);
}

#[test]
fn transcript_12_builtin_defaults() {
    assert_eq!(replay("12", &[]), 16);
}

#[test]
fn transcript_13_events_and_leases() {
    // Step 12 is the lost race (409 from the server core).
    assert_eq!(replay("13", &[12]), 11);
}

#[test]
fn transcript_14_dry_run() {
    assert_eq!(replay("14", &[]), 4);
}

#[test]
fn transcript_13_events_read_through_both_apis() {
    let doc = transcript("13");
    let core_items = doc["steps"][6]["response"]["body"]["items"]
        .as_array()
        .unwrap()
        .clone();
    let v1_items = doc["steps"][7]["response"]["body"]["items"]
        .as_array()
        .unwrap()
        .clone();
    for (core, v1) in core_items.iter().zip(&v1_items) {
        assert_eq!(&events::core_to_events_v1(core), v1);
        assert_eq!(&events::events_v1_to_core(v1), core);
    }
}

#[test]
fn transcript_12_tables() {
    let doc = transcript("12");
    let now: jiff::Timestamp = TIME.parse().unwrap();
    // Pods: the recorded Pod as stored, listed as a Table.
    let pod = doc["steps"][0]["response"]["body"].clone();
    let table_step = &doc["steps"][1]["response"]["body"];
    let (columns, rows) = table(find("", "pods").unwrap(), &[with_created(pod)], now).unwrap();
    assert_eq!(
        columns,
        table_step["columnDefinitions"].as_array().unwrap().clone()
    );
    let mut cells = rows[0].clone();
    cells[4] = json!("<age>");
    assert_eq!(Value::Array(cells), table_step["rows"][0]["cells"]);

    // Services: the three recorded Services.
    let services: Vec<Value> = [9, 7, 8]
        .iter()
        .map(|i| with_created(doc["steps"][*i]["response"]["body"].clone()))
        .collect();
    let services: Vec<Value> = services
        .into_iter()
        .map(|mut s| {
            // Placeholders back to values a real Service holds.
            if s["spec"]["clusterIP"] != "None" {
                s["spec"]["clusterIP"] = json!("10.96.0.20");
                s["spec"]["clusterIPs"] = json!(["10.96.0.20"]);
            }
            if let Some(ports) = s["spec"]["ports"].as_array_mut() {
                for p in ports.iter_mut().filter(|p| p.get("nodePort").is_some()) {
                    p["nodePort"] = json!(30123);
                }
            }
            s
        })
        .collect();
    let table_step = &doc["steps"][12]["response"]["body"];
    let (columns, rows) = table(find("", "services").unwrap(), &services, now).unwrap();
    let names = |cols: &[Value]| -> Vec<Value> {
        cols.iter()
            .map(|c| json!([c["name"], c["type"], c["format"], c["priority"]]))
            .collect()
    };
    assert_eq!(
        names(&columns),
        names(table_step["columnDefinitions"].as_array().unwrap())
    );
    for (row, recorded) in rows.iter().zip(table_step["rows"].as_array().unwrap()) {
        let cells: Vec<Value> = row
            .iter()
            .enumerate()
            .map(|(i, c)| match i {
                2 if c != "None" => json!("<clusterIP>"),
                4 => json!(c.as_str().unwrap().replace("30123", "<nodePort>")),
                5 => json!("<age>"),
                _ => c.clone(),
            })
            .collect();
        assert_eq!(Value::Array(cells), recorded["cells"]);
    }
}

fn with_created(mut obj: Value) -> Value {
    obj["metadata"]["creationTimestamp"] = json!(TIME);
    obj
}

#[test]
fn secret_string_data_and_bad_base64() {
    let kind = find("", "secrets").unwrap();
    let (mut obj, _) = decode(
        kind,
        json!({"metadata": {"name": "s", "namespace": "n"}, "stringData": {"a": "b"}, "data": {"c": "YR=="}}),
    )
    .unwrap();
    // Go accepts non-canonical trailing bits and writes the canonical form.
    assert_eq!(obj["data"]["c"], "YQ==");
    apply_defaults(kind, &mut obj);
    assert_eq!(obj["data"], json!({"a": "Yg==", "c": "YQ=="}));
    assert!(obj.get("stringData").is_none());
    assert_eq!(obj["type"], "Opaque");
}

#[test]
fn type_errors_name_the_go_struct_and_field() {
    let pods = find("", "pods").unwrap();
    let err = decode(
        pods,
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": 5, "image": "x"}]}}),
    )
    .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string"
    );
    let err = decode(
        pods,
        json!({"metadata": {"name": "p"}, "spec": {"containers": "x"}}),
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container"
    );
    let err = decode(
        pods,
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1.5}]}]}}),
    )
    .unwrap_err();
    assert!(err.message.ends_with(
        "cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    ));
    let cms = find("", "configmaps").unwrap();
    let err = decode(cms, json!({"metadata": {"name": "c"}, "data": {"a": 1}})).unwrap_err();
    assert_eq!(
        err.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
}

#[test]
fn unknown_fields_are_reported_with_list_positions() {
    let deployments = find("apps", "deployments").unwrap();
    let (obj, unknown) = decode(
        deployments,
        json!({
            "metadata": {"name": "d", "bogus": 1},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i", "extra": {"x": 1}}]}}},
            "zzz": true
        }),
    )
    .unwrap();
    assert_eq!(
        unknown,
        vec![
            "metadata.bogus",
            "spec.template.spec.containers[1].extra",
            "zzz"
        ]
    );
    assert!(obj.get("zzz").is_none());
    assert!(
        obj["spec"]["template"]["spec"]["containers"][1]
            .get("extra")
            .is_none()
    );
}

#[test]
fn quantities_are_canonicalised_and_qos_computed() {
    let pods = find("", "pods").unwrap();
    let (mut obj, _) = decode(
        pods,
        json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"name": "c", "image": "i:1",
            "resources": {"requests": {"cpu": "1000m", "memory": 1073741824}, "limits": {"cpu": "2"}}}]}}),
    )
    .unwrap();
    assert_eq!(
        obj["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "memory": "1073741824"})
    );
    apply_defaults(pods, &mut obj);
    obj["metadata"]["uid"] = json!("u");
    admit_create(pods, &mut obj, None);
    prepare_for_create(pods, &mut obj);
    assert_eq!(obj["status"]["qosClass"], "Burstable");
    assert!(validate(pods, &obj, None).is_empty());
}

#[test]
fn the_service_account_token_is_mounted_in_every_container_without_one() {
    const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let pods = find("", "pods").unwrap();
    let (mut obj, _) = decode(
        pods,
        json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
            "initContainers": [{"name": "init", "image": "i"}],
            "containers": [
                {"name": "a", "image": "i"},
                {"name": "b", "image": "i", "volumeMounts": [{"name": "own", "mountPath": TOKEN_PATH}]},
            ],
            "volumes": [{"name": "own", "emptyDir": {}}],
        }}),
    )
    .unwrap();
    apply_defaults(pods, &mut obj);
    admit_create(pods, &mut obj, None);
    let volumes = obj["spec"]["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 2);
    let token = volumes[1]["name"].as_str().unwrap().to_string();
    assert!(token.starts_with("kube-api-access-"), "{token}");
    let mounts = |obj: &Value, list: &str, i: usize| obj["spec"][list][i]["volumeMounts"].clone();
    let token_mount = json!([{"name": token, "readOnly": true, "mountPath": TOKEN_PATH}]);
    assert_eq!(mounts(&obj, "initContainers", 0), token_mount);
    assert_eq!(mounts(&obj, "containers", 0), token_mount);
    assert_eq!(
        mounts(&obj, "containers", 1),
        json!([{"name": "own", "mountPath": TOKEN_PATH}])
    );

    // Run again after a webhook added a container (kube-apiserver reinvokes
    // its plugins): the new container mounts the same volume, and nothing
    // else changes.
    obj["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "i"}));
    admit_create(pods, &mut obj, None);
    assert_eq!(mounts(&obj, "containers", 2), token_mount);
    assert_eq!(obj["spec"]["volumes"].as_array().unwrap().len(), 2);
    let once_more = {
        let mut again = obj.clone();
        admit_create(pods, &mut again, None);
        again
    };
    assert_eq!(once_more, obj);
}

#[test]
fn the_service_account_decides_the_token_and_pull_secrets_a_pod_lacks() {
    let pods = find("", "pods").unwrap();
    let account = json!({"metadata": {"name": "sa"}, "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "registry"}]});
    let admitted = |spec: Value| {
        let mut obj = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": spec});
        admit_create(pods, &mut obj, Some(&account));
        obj["spec"].clone()
    };
    let containers = json!([{"name": "c", "image": "i"}]);

    // The account turns the token off and lends its pull secrets.
    let spec = admitted(json!({"serviceAccountName": "sa", "containers": containers}));
    assert!(spec.get("volumes").is_none(), "{spec}");
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "registry"}]));

    // The Pod's own choices win.
    let spec = admitted(json!({"serviceAccountName": "sa", "containers": containers,
        "automountServiceAccountToken": true, "imagePullSecrets": [{"name": "mine"}]}));
    let volume = spec["volumes"][0]["name"].as_str().unwrap_or_default();
    assert!(volume.starts_with("kube-api-access-"), "{spec}");
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "mine"}]));
}

#[test]
fn generation_tracks_spec_changes_only() {
    let kind = find("apps", "deployments").unwrap();
    let body = json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (mut old, _) = decode(kind, body.clone()).unwrap();
    apply_defaults(kind, &mut old);
    prepare_for_create(kind, &mut old);
    assert_eq!(old["metadata"]["generation"], 1);
    old["status"] = json!({"replicas": 3});

    let (mut same, _) = decode(kind, body.clone()).unwrap();
    apply_defaults(kind, &mut same);
    same["metadata"]["labels"] = json!({"x": "y"});
    prepare_for_update(kind, &mut same, &old, None);
    assert_eq!(same["metadata"]["generation"], 1);
    assert_eq!(same["status"], json!({"replicas": 3}));

    let mut changed = same.clone();
    changed["spec"]["replicas"] = json!(5);
    prepare_for_update(kind, &mut changed, &old, None);
    assert_eq!(changed["metadata"]["generation"], 2);

    let mut status = old.clone();
    status["spec"]["replicas"] = json!(9);
    status["status"] = json!({"replicas": 1});
    prepare_for_update(kind, &mut status, &old, Some("status"));
    assert_eq!(status["spec"]["replicas"], 1);
    assert_eq!(status["status"], json!({"replicas": 1}));
    assert_eq!(status["metadata"]["generation"], 1);
}

#[test]
fn every_kind_round_trips_an_empty_object() {
    for kind in kinds() {
        let (mut obj, unknown) = decode(kind, json!({"metadata": {"name": "x"}})).unwrap();
        assert!(unknown.is_empty(), "{}", kind.kind);
        assert_eq!(obj["kind"], kind.kind);
        apply_defaults(kind, &mut obj);
        prepare_for_create(kind, &mut obj);
        let _ = validate(kind, &obj, None);
        let _ = type_info(kind).list_type(&["spec"]);
        let _ = table(kind, std::slice::from_ref(&obj), jiff::Timestamp::now());
    }
}

#[test]
fn discovery_fields_match_the_recorded_documents() {
    let doc: Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/transcripts/01-discovery.json"
    ))
    .unwrap();
    for step in [2, 4, 5] {
        let list = &doc["steps"][step]["response"]["body"];
        let group = list["groupVersion"]
            .as_str()
            .unwrap()
            .rsplit_once('/')
            .map_or("", |(g, _)| g);
        for resource in list["resources"].as_array().unwrap() {
            let plural = resource["name"].as_str().unwrap();
            let Some(kind) = find(group, plural) else {
                continue;
            };
            assert_eq!(resource["kind"], kind.kind, "{plural}");
            assert_eq!(resource["namespaced"], kind.namespaced, "{plural}");
            assert_eq!(resource["verbs"], json!(kind.verbs), "{plural}");
            assert_eq!(
                resource.get("shortNames").cloned().unwrap_or(json!([])),
                json!(kind.short_names),
                "{plural}"
            );
            assert_eq!(
                resource.get("categories").cloned().unwrap_or(json!([])),
                json!(kind.categories),
                "{plural}"
            );
            // Answers made on the spot have no storage and no hash.
            let hash = kind
                .is_stored()
                .then(|| crate::registry::discovery::builtin_storage_hash(kind));
            assert_eq!(resource["storageVersionHash"], json!(hash), "{plural}");
            let subresource = |sub: &str| {
                list["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["name"] == format!("{plural}/{sub}"))
            };
            assert_eq!(subresource("status"), kind.has_status, "{plural}");
            assert_eq!(subresource("scale"), kind.has_scale, "{plural}");
        }
    }
}

/// Every object kube-apiserver wrote in the transcripts is already in Go's
/// shape: decoding it again and defaulting it must change nothing.
#[test]
fn recorded_objects_are_fixed_points_of_decode_and_defaults() {
    let files = [
        include_str!("../../tests/fixtures/transcripts/02-configmap-crud.json"),
        include_str!("../../tests/fixtures/transcripts/03-request-errors.json"),
        include_str!("../../tests/fixtures/transcripts/04-patch.json"),
        include_str!("../../tests/fixtures/transcripts/05-server-side-apply.json"),
        include_str!("../../tests/fixtures/transcripts/06-list-selectors-pagination.json"),
        include_str!("../../tests/fixtures/transcripts/07-watch.json"),
        include_str!("../../tests/fixtures/transcripts/08-crd-lifecycle.json"),
        include_str!("../../tests/fixtures/transcripts/10-deletion-gc.json"),
        include_str!("../../tests/fixtures/transcripts/11-namespace-deletion.json"),
        include_str!("../../tests/fixtures/transcripts/12-builtin-defaults.json"),
        include_str!("../../tests/fixtures/transcripts/13-events-leases.json"),
        include_str!("../../tests/fixtures/transcripts/14-dry-run.json"),
    ];
    let mut checked = 0;
    for text in files {
        let doc: Value = serde_json::from_str(text).unwrap();
        let mut objects = Vec::new();
        for step in doc["steps"].as_array().unwrap() {
            let response = &step["response"];
            let body = &response["body"];
            objects.push(body.clone());
            for item in body["items"].as_array().into_iter().flatten() {
                let mut item = item.clone();
                // List items carry no type meta; the list names the kind.
                if let Some(kind) = body["kind"].as_str().and_then(|k| k.strip_suffix("List")) {
                    item["kind"] = json!(kind);
                    item["apiVersion"] = body["apiVersion"].clone();
                }
                objects.push(item);
            }
            for event in response["events"].as_array().into_iter().flatten() {
                // BOOKMARK objects carry a resourceVersion only.
                if event["type"] != "BOOKMARK" {
                    objects.push(event["object"].clone());
                }
            }
        }
        for mut obj in objects {
            let (Some(api_version), Some(kind_name)) =
                (obj["apiVersion"].as_str(), obj["kind"].as_str())
            else {
                continue;
            };
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let Some(kind) = find_kind(group, kind_name) else {
                continue;
            };
            let kind_name = kind.kind;
            concrete(&mut obj, None);
            placeholders_to_values(&mut obj);
            let (decoded, unknown) =
                decode(kind, obj.clone()).unwrap_or_else(|e| panic!("{e}: {obj}"));
            assert!(unknown.is_empty(), "{unknown:?}");
            assert_eq!(decoded, obj, "decode changed a recorded {kind_name}");
            let mut defaulted = decoded.clone();
            apply_defaults(kind, &mut defaulted);
            assert_eq!(defaulted, obj, "defaults changed a recorded {kind_name}");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// Placeholders in typed fields back to values of their type.
fn placeholders_to_values(value: &mut Value) {
    match value {
        Value::String(s) if s == "<nodePort>" => *value = json!(30001),
        Value::String(s) if s == "<clusterIP>" => *value = json!("10.96.0.20"),
        Value::Array(items) => items.iter_mut().for_each(placeholders_to_values),
        Value::Object(map) => map.values_mut().for_each(placeholders_to_values),
        _ => {}
    }
}
