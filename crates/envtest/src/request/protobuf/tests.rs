use super::*;
use serde_json::json;

/// A minimal protobuf writer for building test bodies.
#[derive(Default)]
struct W(Vec<u8>);

impl W {
    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }
    fn bytes(mut self, tag: u64, b: &[u8]) -> W {
        self.varint(tag << 3 | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, tag: u64, s: &str) -> W {
        self.bytes(tag, s.as_bytes())
    }
    fn msg(self, tag: u64, m: W) -> W {
        self.bytes(tag, &m.0)
    }
    fn int(mut self, tag: u64, v: u64) -> W {
        self.varint(tag << 3);
        self.varint(v);
        self
    }
    fn entry(self, tag: u64, k: &str, v: &str) -> W {
        self.msg(tag, W::default().str(1, k).str(2, v))
    }
}

fn envelope(api_version: &str, kind: &str, raw: W) -> Vec<u8> {
    let type_meta = W::default().str(1, api_version).str(2, kind);
    let unknown = W::default().msg(1, type_meta).bytes(2, &raw.0);
    let mut body = MAGIC.to_vec();
    body.extend(unknown.0);
    body
}

#[test]
fn decodes_a_configmap_as_kubectl_sends_it() {
    // ObjectMeta: name (1), labels (11).
    let meta = W::default().str(1, "cm1").entry(11, "app", "demo");
    // ConfigMap: metadata (1), data (2), binaryData (3).
    let cm = W::default()
        .msg(1, meta)
        .entry(2, "a", "1")
        .msg(3, W::default().str(1, "b").bytes(2, b"\x00\x01"));
    let obj = decode(&envelope("v1", "ConfigMap", cm)).expect("decodes");
    assert_eq!(
        obj,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cm1", "labels": {"app": "demo"}},
               "data": {"a": "1"}, "binaryData": {"b": "AAE="}})
    );
}

#[test]
fn decodes_nested_workloads_quantities_and_inline_structs() {
    let container = W::default()
        .str(1, "web")
        .str(2, "nginx")
        // resources (8) → limits (1) map string→Quantity{string=1}
        .msg(
            8,
            W::default().msg(
                1,
                W::default()
                    .str(1, "cpu")
                    .msg(2, W::default().str(1, "100m")),
            ),
        );
    let pod_spec = W::default().msg(2, container);
    let template = W::default()
        .msg(1, W::default().entry(11, "app", "web"))
        .msg(2, pod_spec);
    let selector = W::default().entry(1, "app", "web");
    let spec = W::default().int(1, 2).msg(2, selector).msg(3, template);
    let deploy = W::default().msg(1, W::default().str(1, "web")).msg(2, spec);
    let obj = decode(&envelope("apps/v1", "Deployment", deploy)).expect("decodes");
    assert_eq!(obj["spec"]["replicas"], 2);
    assert_eq!(obj["spec"]["selector"]["matchLabels"]["app"], "web");
    let c = &obj["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (c["name"].as_str(), c["image"].as_str()),
        (Some("web"), Some("nginx"))
    );
    assert_eq!(c["resources"]["limits"]["cpu"], "100m");

    // SecretKeySelector embeds LocalObjectReference (name) inline.
    let sel = W::default().msg(1, W::default().str(1, "s")).str(2, "key");
    let fields = decode_message(&sel.0, "api.core.v1.SecretKeySelector").expect("decodes");
    assert_eq!(Value::Object(fields), json!({"name": "s", "key": "key"}));
}

#[test]
fn times_and_bad_input() {
    let t = W::default().int(1, 1_700_000_000);
    assert_eq!(
        special("apimachinery.pkg.apis.meta.v1.Time", &t.0).unwrap(),
        Some(json!("2023-11-14T22:13:20Z"))
    );
    assert!(decode(b"{\"kind\":\"ConfigMap\"}").is_err());
    assert!(decode(b"k8s\0\x0a\xff").is_err());
    let unknown_kind = envelope("example.com/v1", "Widget", W::default());
    assert!(decode(&unknown_kind).unwrap_err().contains("example.com"));
}

#[test]
fn zero_values_of_non_pointer_fields_are_left_out() {
    // kubectl create namespace: generateName "", generation 0, empty spec/status, zero creationTimestamp.
    let meta = W::default()
        .str(1, "ns1")
        .str(2, "")
        .int(7, 0)
        .msg(8, W::default());
    let ns = W::default()
        .msg(1, meta)
        .msg(2, W::default())
        .msg(3, W::default().str(1, ""));
    let obj = decode(&envelope("v1", "Namespace", ns)).expect("decodes");
    assert_eq!(
        obj,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}, "spec": {}, "status": {}})
    );
    // Deployment replicas 0 is a value.
    let spec = W::default().int(1, 0);
    let d = decode(&envelope(
        "apps/v1",
        "Deployment",
        W::default().msg(2, spec),
    ))
    .expect("decodes");
    assert_eq!(d["spec"]["replicas"], 0);
}
