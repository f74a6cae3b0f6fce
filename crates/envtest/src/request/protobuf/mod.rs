//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).
//!
//! client-go's typed clients (kubectl's `create namespace|configmap|…`, Go
//! operators) send built-in objects as protobuf: the `k8s\0` magic, then a
//! `runtime.Unknown` envelope holding the object's apiVersion/kind and its
//! bytes. This module turns such a body into the JSON object the rest of the
//! server works with, driven by `schema.txt` (field numbers, JSON names and
//! wire types of the built-in kinds, taken from k8s-pb's prost types and,
//! for the kinds added since, from the `generated.proto` files they are
//! made from).
//! Responses stay JSON, which those clients accept as well.

use std::collections::HashMap;
use std::sync::LazyLock;

use base64::Engine;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Card {
    Optional,
    Repeated,
    Map,
    /// A Go struct embedded inline in JSON but nested in protobuf.
    Inline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Bytes,
    Bool,
    Int,
    Double,
    Message(&'static str),
}

#[derive(Debug, Clone, Copy)]
struct Field {
    tag: u64,
    json: &'static str,
    card: Card,
    kind: Kind,
}

struct Schema {
    messages: HashMap<&'static str, Vec<Field>>,
    /// Lower-cased message name → message name (for kinds whose Go and
    /// prost spellings differ in case).
    folded: HashMap<String, &'static str>,
}

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| parse_schema(include_str!("schema.txt")));

fn parse_schema(text: &'static str) -> Schema {
    let mut messages: HashMap<&'static str, Vec<Field>> = HashMap::new();
    let mut current: Option<&'static str> = None;
    for line in text.lines() {
        let parts: Vec<&'static str> = line.split(' ').collect();
        match parts.as_slice() {
            ["M", name] => {
                current = Some(name);
                messages.entry(name).or_default();
            }
            ["F", tag, json, card, kind, rest @ ..] => {
                let (Some(msg), Ok(tag)) = (current, tag.parse()) else {
                    continue;
                };
                let card = match *card {
                    "r" => Card::Repeated,
                    "map" => Card::Map,
                    "inline" => Card::Inline,
                    _ => Card::Optional,
                };
                // Maps name only their value type, which is what `kind` describes.
                let kind = match (*kind, rest.first()) {
                    ("message", Some(t)) => Kind::Message(t),
                    ("string", _) => Kind::String,
                    ("bytes", _) => Kind::Bytes,
                    ("bool", _) => Kind::Bool,
                    ("double" | "float", _) => Kind::Double,
                    _ => Kind::Int,
                };
                messages.entry(msg).or_default().push(Field {
                    tag,
                    json,
                    card,
                    kind,
                });
            }
            _ => {}
        }
    }
    let folded = messages.keys().map(|k| (k.to_lowercase(), *k)).collect();
    Schema { messages, folded }
}

/// A protobuf reader over one message's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            out |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err("varint too long".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or("truncated field")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn next(&mut self) -> Result<Option<(u64, Wire<'a>)>, String> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Wire::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "bad fixed64")?))
            }
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "length too large")?;
                Wire::Bytes(self.take(n)?)
            }
            5 => {
                let b = self.take(4)?;
                Wire::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| "bad fixed32")?))
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        Ok(Some((key >> 3, value)))
    }
}

fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "invalid UTF-8 in a string field".to_string())
}

/// RFC 3339 of seconds since the epoch, with `micros` digits when wanted.
fn timestamp(seconds: i64, nanos: i64, micro: bool) -> Value {
    let Ok(t) = jiff::Timestamp::new(seconds, if micro { nanos as i32 } else { 0 }) else {
        return Value::Null;
    };
    let fmt = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Value::String(t.strftime(fmt).to_string())
}

fn go_duration(nanos: i64) -> String {
    let total = nanos as f64 / 1e9;
    let h = (total / 3600.0).floor();
    let m = ((total - h * 3600.0) / 60.0).floor();
    let s = total - h * 3600.0 - m * 60.0;
    if h > 0.0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0.0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// Messages whose JSON form is not an object of their fields.
fn special(type_name: &str, bytes: &[u8]) -> Result<Option<Value>, String> {
    let ints = |bytes: &[u8]| -> Result<(i64, i64), String> {
        let mut r = Reader { buf: bytes, pos: 0 };
        let (mut a, mut b) = (0i64, 0i64);
        while let Some((tag, w)) = r.next()? {
            if let Wire::Varint(v) = w {
                match tag {
                    1 => a = v as i64,
                    2 => b = v as i64,
                    _ => {}
                }
            }
        }
        Ok((a, b))
    };
    let raw_json = |bytes: &[u8]| -> Result<Value, String> {
        let mut r = Reader { buf: bytes, pos: 0 };
        while let Some((tag, w)) = r.next()? {
            if let (1, Wire::Bytes(b)) = (tag, w) {
                return serde_json::from_slice(b).map_err(|e| format!("embedded JSON: {e}"));
            }
        }
        Ok(Value::Null)
    };
    Ok(Some(match type_name {
        "apimachinery.pkg.api.resource.Quantity" => {
            let v = decode_message(bytes, "apimachinery.pkg.api.resource.Quantity")?;
            v.get("string")
                .cloned()
                .unwrap_or(Value::String("0".into()))
        }
        "apimachinery.pkg.util.intstr.IntOrString" => {
            let v = decode_message(bytes, type_name)?;
            if v.get("type").and_then(Value::as_i64) == Some(1) {
                v.get("strVal")
                    .cloned()
                    .unwrap_or(Value::String(String::new()))
            } else {
                v.get("intVal").cloned().unwrap_or(Value::from(0))
            }
        }
        // A zero Time is JSON null (and so left out).
        "apimachinery.pkg.apis.meta.v1.Time" => match ints(bytes)? {
            (0, 0) => Value::Null,
            (s, n) => timestamp(s, n, false),
        },
        "apimachinery.pkg.apis.meta.v1.MicroTime" => match ints(bytes)? {
            (0, 0) => Value::Null,
            (s, n) => timestamp(s, n, true),
        },
        "apimachinery.pkg.apis.meta.v1.Duration" => Value::String(go_duration(ints(bytes)?.0)),
        "apimachinery.pkg.runtime.RawExtension" | "apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            raw_json(bytes)?
        }
        _ => return Ok(None),
    }))
}

fn scalar(kind: Kind, w: &Wire<'_>) -> Result<Value, String> {
    Ok(match (kind, w) {
        (Kind::String, Wire::Bytes(b)) => Value::String(utf8(b)?),
        (Kind::Bytes, Wire::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Kind::Bool, Wire::Varint(v)) => Value::Bool(*v != 0),
        (Kind::Int, Wire::Varint(v)) => Value::from(*v as i64),
        (Kind::Double, Wire::Fixed64(v)) => {
            serde_json::Number::from_f64(f64::from_bits(*v)).map_or(Value::Null, Value::Number)
        }
        (Kind::Double, Wire::Fixed32(v)) => {
            serde_json::Number::from_f64(f64::from(f32::from_bits(*v)))
                .map_or(Value::Null, Value::Number)
        }
        (Kind::Message(t), Wire::Bytes(b)) => match special(t, b)? {
            Some(v) => v,
            None => Value::Object(decode_message(b, t)?),
        },
        _ => return Err("field has an unexpected wire type".into()),
    })
}

/// Optional integer fields that are pointers in Go, where 0 is a value.
const ZERO_INTS: &[&str] = &[
    "replicas",
    "revisionHistoryLimit",
    "progressDeadlineSeconds",
    "parallelism",
    "completions",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "activeDeadlineSeconds",
    "terminationGracePeriodSeconds",
    "ttlSecondsAfterFinished",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "startingDeadlineSeconds",
    "gracePeriodSeconds",
    "runAsUser",
    "runAsGroup",
    "fsGroup",
    "expirationSeconds",
    "defaultMode",
    "mode",
    "partition",
    "leaseDurationSeconds",
    "leaseTransitions",
    "priority",
    "minReadySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
    "initialDelaySeconds",
    "tolerationSeconds",
    "minAvailable",
    "maxUnavailable",
    "count",
    "port",
    "targetPort",
    "nominalConcurrencyShares",
    "lendablePercent",
    "borrowingLimitPercent",
];

/// Optional boolean fields that are pointers in Go, where false is a value.
const FALSE_BOOLS: &[&str] = &[
    "automountServiceAccountToken",
    "enableServiceLinks",
    "readOnlyRootFilesystem",
    "runAsNonRoot",
    "privileged",
    "allowPrivilegeEscalation",
    "optional",
    "immutable",
    "suspend",
    "hostUsers",
    "setHostnameAsFQDN",
    "shareProcessNamespace",
    "controller",
    "blockOwnerDeletion",
    "allocateLoadBalancerNodePorts",
    "publishNotReadyAddresses",
    "readOnly",
    "served",
    "storage",
    "ready",
    "serving",
    "terminating",
];

/// gogo-protobuf writes Go's non-pointer fields even when they hold their
/// zero value, which Go's JSON encoding (`omitempty`) leaves out; such
/// values are dropped so the object reads as its JSON form would.
fn is_unset(f: &Field, v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(false) => !FALSE_BOOLS.contains(&f.json),
        Value::Number(n) => n.as_i64() == Some(0) && !ZERO_INTS.contains(&f.json),
        Value::Null => true,
        _ => false,
    }
}

fn decode_message(bytes: &[u8], type_name: &str) -> Result<Map<String, Value>, String> {
    let fields = SCHEMA
        .messages
        .get(type_name)
        .ok_or_else(|| format!("no protobuf layout for {type_name}"))?;
    let mut out = Map::new();
    let mut r = Reader { buf: bytes, pos: 0 };
    while let Some((tag, w)) = r.next()? {
        let Some(f) = fields.iter().find(|f| f.tag == tag) else {
            continue;
        };
        match f.card {
            Card::Optional => {
                let v = scalar(f.kind, &w)?;
                if !is_unset(f, &v) {
                    out.insert(f.json.to_string(), v);
                }
            }
            Card::Inline => {
                if let Value::Object(inner) = scalar(f.kind, &w)? {
                    out.extend(inner);
                }
            }
            Card::Repeated => {
                let list = out
                    .entry(f.json.to_string())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let items = match (f.kind, &w) {
                    // Packed repeated numbers.
                    (Kind::Int | Kind::Bool, Wire::Bytes(b)) => {
                        let mut pr = Reader { buf: b, pos: 0 };
                        let mut v = Vec::new();
                        while pr.pos < b.len() {
                            v.push(scalar(f.kind, &Wire::Varint(pr.varint()?))?);
                        }
                        v
                    }
                    _ => vec![scalar(f.kind, &w)?],
                };
                if let Value::Array(a) = list {
                    a.extend(items);
                }
            }
            Card::Map => {
                let Wire::Bytes(entry) = w else {
                    return Err("map entry is not length-delimited".into());
                };
                let mut er = Reader { buf: entry, pos: 0 };
                let (mut key, mut value) = (String::new(), None);
                while let Some((t, ew)) = er.next()? {
                    match (t, &ew) {
                        (1, Wire::Bytes(b)) => key = utf8(b)?,
                        (2, _) => value = Some(scalar(f.kind, &ew)?),
                        _ => {}
                    }
                }
                let map = out
                    .entry(f.json.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = map {
                    m.insert(key, value.unwrap_or(Value::Null));
                }
            }
        }
    }
    Ok(out)
}

/// The protobuf package of an API group.
fn package(group: &str) -> Option<&'static str> {
    Some(match group {
        "" => "api.core",
        "apps" => "api.apps",
        "batch" => "api.batch",
        "coordination.k8s.io" => "api.coordination",
        "rbac.authorization.k8s.io" => "api.rbac",
        "events.k8s.io" => "api.events",
        "policy" => "api.policy",
        "admissionregistration.k8s.io" => "api.admissionregistration",
        "authentication.k8s.io" => "api.authentication",
        "authorization.k8s.io" => "api.authorization",
        "autoscaling" => "api.autoscaling",
        "networking.k8s.io" => "api.networking",
        "discovery.k8s.io" => "api.discovery",
        "certificates.k8s.io" => "api.certificates",
        "flowcontrol.apiserver.k8s.io" => "api.flowcontrol",
        "apiregistration.k8s.io" => "kube_aggregator.pkg.apis.apiregistration",
        "meta.k8s.io" => "apimachinery.pkg.apis.meta",
        _ => return None,
    })
}

const MAGIC: &[u8] = b"k8s\0";

/// Decodes a Kubernetes protobuf body into the JSON object it encodes.
pub(crate) fn decode(body: &[u8]) -> Result<Value, String> {
    let envelope = body.strip_prefix(MAGIC).ok_or(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
    )?;
    // runtime.Unknown: typeMeta (1: apiVersion, 2: kind) and raw (2).
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let mut r = Reader {
        buf: envelope,
        pos: 0,
    };
    while let Some((tag, w)) = r.next()? {
        match (tag, w) {
            (1, Wire::Bytes(type_meta)) => {
                let mut tr = Reader {
                    buf: type_meta,
                    pos: 0,
                };
                while let Some((t, tw)) = tr.next()? {
                    match (t, tw) {
                        (1, Wire::Bytes(b)) => api_version = utf8(b)?,
                        (2, Wire::Bytes(b)) => kind = utf8(b)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let (group, version) = crate::meta::split_api_version(&api_version);
    let group = if kind.ends_with("Options") && group.is_empty() {
        "meta.k8s.io"
    } else {
        group
    };
    let pkg = package(group).ok_or_else(|| format!("no protobuf layout for group {group:?}"))?;
    let wanted = format!("{pkg}.{version}.{kind}");
    let type_name = SCHEMA
        .folded
        .get(&wanted.to_lowercase())
        .copied()
        .ok_or_else(|| format!("no protobuf layout for {api_version} {kind}"))?;
    let mut obj = decode_message(raw, type_name)?;
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests;
