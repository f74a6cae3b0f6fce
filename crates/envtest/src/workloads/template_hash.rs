//! kube-controller-manager's pod-template-hash (`controller.ComputeHash`):
//! FNV-32a of the Pod template's Go struct as go-spew prints it (`%#v`
//! with sorted map keys and no methods: every field by its Go name, each
//! value after its Go type in parentheses, nil pointers, slices and maps as
//! `<nil>`), then of the collision count when the Deployment has one; the
//! sum in decimal, in the safe alphabet.
//!
//! The template kube-controller-manager hashes is the one it decoded from
//! kube-apiserver's protobuf: empty lists and maps are nil, quantities are
//! what `resource.ParseQuantity` makes of their canonical text. The Go types
//! (fields in order, their types and JSON names) are in
//! `pod_template_types.txt`. A template this cannot print as Go would (a
//! time or an owner reference in its metadata, a quantity beyond int64) has
//! no hash here; the caller falls back to its own.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::LazyLock;

use serde_json::Value;

struct Field {
    go_name: String,
    go_type: String,
    /// `None` for an inlined (embedded) struct.
    json: Option<String>,
}

#[derive(Default)]
struct Types {
    structs: HashMap<String, Vec<Field>>,
    /// Named types and what they are (`RestartPolicy` → `string`).
    named: HashMap<String, String>,
}

static TYPES: LazyLock<Types> = LazyLock::new(|| parse(include_str!("pod_template_types.txt")));

fn parse(text: &str) -> Types {
    let mut types = Types::default();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("= ") {
            if let Some((name, underlying)) = rest.split_once(' ') {
                types.named.insert(name.to_string(), underlying.to_string());
            }
            continue;
        }
        if let Some(field) = line.strip_prefix("  ") {
            let mut parts = field.split(' ');
            let (Some(go_name), Some(go_type), Some(json), Some(name)) =
                (parts.next(), parts.next(), parts.next(), current.as_ref())
            else {
                continue;
            };
            types.structs.entry(name.clone()).or_default().push(Field {
                go_name: go_name.to_string(),
                go_type: go_type.to_string(),
                json: (json != "-").then(|| json.to_string()),
            });
            continue;
        }
        current = Some(line.trim().to_string());
    }
    types
}

/// The hash of `template` (a Deployment's `spec.template` as served), or
/// `None` when it holds what this does not print as Go would.
pub(crate) fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> Option<String> {
    let mut printed = String::new();
    format(&mut printed, "PodTemplateSpec", Some(template), false)?;
    let mut bytes = printed.into_bytes();
    if let Some(count) = collision_count {
        // `binary.LittleEndian.PutUint32` into an 8-byte buffer.
        bytes.extend((count as u32).to_le_bytes());
        bytes.extend([0u8; 4]);
    }
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    Some(safe_encode(hash))
}

/// How `reflect.Type.String()` names a Go type of the table.
fn type_name(t: &str) -> String {
    if let Some(inner) = t.strip_prefix('*') {
        return format!("*{}", type_name(inner));
    }
    if let Some(inner) = t.strip_prefix("[]") {
        return format!("[]{}", type_name(inner));
    }
    if let Some((key, value)) = map_parts(t) {
        return format!("map[{}]{}", type_name(key), type_name(value));
    }
    match t.split_once('.') {
        Some(("metav1", name)) => format!("v1.{name}"),
        Some(_) => t.to_string(),
        None if matches!(t, "string" | "int32" | "int64" | "bool") => t.to_string(),
        None => format!("v1.{t}"),
    }
}

/// `map[K]V` → (K, V).
fn map_parts(t: &str) -> Option<(&str, &str)> {
    let rest = t.strip_prefix("map[")?;
    rest.split_once(']')
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// Prints `v` (JSON) as spew prints the Go value of type `t`. `ignore`: the
/// type is not shown (inside slices, maps and after a pointer).
fn format(out: &mut String, t: &str, v: Option<&Value>, ignore: bool) -> Option<()> {
    if let Some(inner) = t.strip_prefix('*') {
        return match present(v) {
            None if ignore => {
                out.push_str("<nil>");
                Some(())
            }
            None => {
                let _ = write!(out, "({})<nil>", type_name(t));
                Some(())
            }
            Some(v) => {
                if !ignore {
                    let _ = write!(out, "({})", type_name(t));
                }
                format(out, inner, Some(v), true)
            }
        };
    }
    if !ignore {
        let _ = write!(out, "({})", type_name(t));
    }
    value(out, t, present(v))
}

fn value(out: &mut String, t: &str, v: Option<&Value>) -> Option<()> {
    if let Some(underlying) = TYPES.named.get(t) {
        return value(out, underlying, v);
    }
    if let Some(item) = t.strip_prefix("[]") {
        let items = match v {
            None => &[][..],
            Some(v) => v.as_array()?.as_slice(),
        };
        if items.is_empty() {
            out.push_str("<nil>");
            return Some(());
        }
        out.push('[');
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            format(out, item, Some(x), true)?;
        }
        out.push(']');
        return Some(());
    }
    if let Some((_, item)) = map_parts(t) {
        let map = match v {
            None => None,
            Some(v) => Some(v.as_object()?),
        };
        let Some(map) = map.filter(|m| !m.is_empty()) else {
            out.push_str("<nil>");
            return Some(());
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        out.push_str("map[");
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(k);
            out.push(':');
            format(out, item, Some(&map[k]), true)?;
        }
        out.push(']');
        return Some(());
    }
    match t {
        "string" => out.push_str(match v {
            None => "",
            Some(v) => v.as_str()?,
        }),
        "int32" | "int64" => {
            let n = match v {
                None => 0,
                Some(v) => v.as_i64()?,
            };
            let _ = write!(out, "{n}");
        }
        "bool" => {
            let b = match v {
                None => false,
                Some(v) => v.as_bool()?,
            };
            out.push_str(if b { "true" } else { "false" });
        }
        // The zero time of a template's metadata; any other is not printed here.
        "metav1.Time" => {
            if v.is_some() {
                return None;
            }
            out.push_str(
                "{Time:(time.Time){wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>}}",
            );
        }
        "resource.Quantity" => quantity(out, v?.as_str()?)?,
        "intstr.IntOrString" => {
            let (kind, int, text) = match v {
                None => (0, 0, ""),
                Some(Value::String(s)) => (1, 0, s.as_str()),
                Some(n) => (0, n.as_i64()?, ""),
            };
            let _ = write!(
                out,
                "{{Type:(intstr.Type){kind} IntVal:(int32){int} StrVal:(string){text}}}"
            );
        }
        _ => {
            let fields = TYPES.structs.get(t)?;
            let object = match v {
                None => None,
                Some(v) => Some(v.as_object()?),
            };
            out.push('{');
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&f.go_name);
                out.push(':');
                let field = match &f.json {
                    // An embedded struct reads the same JSON object.
                    None => v,
                    Some(json) => object.and_then(|o| o.get(json)),
                };
                format(out, &f.go_type, field, false)?;
            }
            out.push('}');
        }
    }
    Some(())
}

/// A `resource.Quantity` as `ParseQuantity` makes it from its canonical
/// text (the int64 form only).
fn quantity(out: &mut String, text: &str) -> Option<()> {
    let (amount, scale, cached, format) = parse_quantity(text)?;
    let _ = write!(
        out,
        "{{i:(resource.int64Amount){{value:(int64){amount} scale:(resource.Scale){scale}}} \
         d:(resource.infDecAmount){{Dec:(*inf.Dec)<nil>}} s:(string){cached} \
         Format:(resource.Format){format}}}"
    );
    Some(())
}

/// `ParseQuantity`'s int64 path: (value, scale, the text it keeps when
/// canonical, format); `None` where it would use an `inf.Dec`.
fn parse_quantity(text: &str) -> Option<(i64, i32, &str, &'static str)> {
    if text == "0" {
        return Some((0, 0, text, "DecimalSI"));
    }
    let (positive, digits) = match text.as_bytes().first()? {
        b'-' => (false, &text[1..]),
        b'+' => (true, &text[1..]),
        _ => (true, text),
    };
    let digits = digits.trim_start_matches('0');
    let num_end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let num = match &digits[..num_end] {
        "" => "0",
        n => n,
    };
    let mut rest = &digits[num_end..];
    let mut denom = "";
    if let Some(after) = rest.strip_prefix('.') {
        let end = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        denom = &after[..end];
        rest = &after[end..];
    }
    let (base2, exponent, format): (bool, i32, &'static str) = match rest {
        "" => (false, 0, "DecimalSI"),
        "n" => (false, -9, "DecimalSI"),
        "u" => (false, -6, "DecimalSI"),
        "m" => (false, -3, "DecimalSI"),
        "k" => (false, 3, "DecimalSI"),
        "M" => (false, 6, "DecimalSI"),
        "G" => (false, 9, "DecimalSI"),
        "T" => (false, 12, "DecimalSI"),
        "P" => (false, 15, "DecimalSI"),
        "E" => (false, 18, "DecimalSI"),
        "Ki" => (true, 10, "BinarySI"),
        "Mi" => (true, 20, "BinarySI"),
        "Gi" => (true, 30, "BinarySI"),
        "Ti" => (true, 40, "BinarySI"),
        "Pi" => (true, 50, "BinarySI"),
        "Ei" => (true, 60, "BinarySI"),
        e => {
            let n = e.strip_prefix(['e', 'E'])?.parse::<i32>().ok()?;
            (false, n, "DecimalExponent")
        }
    };
    let digits_len = (num.len() + denom.len()) as i32;
    let (mut scale, precision, mantissa) = if base2 {
        if !denom.is_empty() {
            return None;
        }
        let precision = 15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
        (0, precision, 1i64.checked_shl(exponent as u32)?)
    } else {
        (exponent, 18 - digits_len, 1)
    };
    if precision < 0 {
        return None;
    }
    scale -= denom.len() as i32;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{num}{denom}");
    let value: i64 = shifted.parse().ok()?;
    let mut result = value.checked_mul(mantissa)?;
    if !positive {
        result = -result;
    }
    let canonical = if base2 {
        exponent % 10 == 0 && value & 0x07 != 0
    } else {
        scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
    };
    Some((result, scale, if canonical { text } else { "" }, format))
}

/// Go's `rand.SafeEncodeString` alphabet (no vowels, no confusable digits).
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A hash of the same form as the pod-template-hash, for templates
/// [`pod_template_hash`] cannot print as Go (FNV-32a of the JSON).
pub(crate) fn json_template_hash(template: &Value, collisions: i64) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u32::from(*b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(template.to_string().as_bytes());
    if collisions > 0 {
        feed(collisions.to_string().as_bytes());
    }
    safe_encode(hash)
}

/// apimachinery's `rand.SafeEncodeString` of a hash's decimal form.
pub(super) fn safe_encode(hash: u32) -> String {
    hash.to_string()
        .bytes()
        .map(|b| SAFE_ALPHABET[b as usize % SAFE_ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_use_the_safe_alphabet_and_change_with_the_template() {
        let a = json_template_hash(&json!({"spec": {"containers": [{"image": "nginx:1"}]}}), 0);
        let b = json_template_hash(&json!({"spec": {"containers": [{"image": "nginx:2"}]}}), 0);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| SAFE_ALPHABET.contains(&c)));
        assert_ne!(
            a,
            json_template_hash(&json!({"spec": {"containers": [{"image": "nginx:1"}]}}), 1)
        );
    }
    use serde_json::json;

    /// The template of the Deployment kube-controller-manager v1.32 named
    /// `web-77db66f68b` (tests/fixtures/kcm-objects-v1.32/deployment.json).
    fn recorded_template() -> Value {
        json!({"metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
            "spec": {"containers": [{"image": "nginx", "imagePullPolicy": "Always", "name": "c",
                "resources": {}, "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                "schedulerName": "default-scheduler", "securityContext": {},
                "terminationGracePeriodSeconds": 30}})
    }

    #[test]
    fn the_recorded_template_hashes_as_kube_controller_manager_hashed_it() {
        assert_eq!(
            pod_template_hash(&recorded_template(), None).as_deref(),
            Some("77db66f68b")
        );
        // A collision count changes it; the same count always the same way.
        let once = pod_template_hash(&recorded_template(), Some(1));
        assert_ne!(once.as_deref(), Some("77db66f68b"));
        assert_eq!(once, pod_template_hash(&recorded_template(), Some(1)));
    }

    #[test]
    fn go_printing_follows_spew() {
        let mut out = String::new();
        format(&mut out, "*int64", None, false).unwrap();
        format(&mut out, "*int64", Some(&json!(30)), false).unwrap();
        format(&mut out, "[]string", Some(&json!([])), false).unwrap();
        format(
            &mut out,
            "map[string]string",
            Some(&json!({"b": "2", "a": "1"})),
            false,
        )
        .unwrap();
        assert_eq!(
            out,
            "(*int64)<nil>(*int64)30([]string)<nil>(map[string]string)map[a:1 b:2]"
        );
        let mut out = String::new();
        format(&mut out, "intstr.IntOrString", Some(&json!("http")), false).unwrap();
        assert_eq!(
            out,
            "(intstr.IntOrString){Type:(intstr.Type)1 IntVal:(int32)0 StrVal:(string)http}"
        );
    }

    #[test]
    fn quantities_parse_as_go_parses_their_canonical_text() {
        assert_eq!(parse_quantity("100m"), Some((100, -3, "100m", "DecimalSI")));
        assert_eq!(parse_quantity("1"), Some((1, 0, "1", "DecimalSI")));
        assert_eq!(parse_quantity("1Gi"), Some((1 << 30, 0, "1Gi", "BinarySI")));
        // 512 & 7 == 0: Go does not keep the text.
        assert_eq!(
            parse_quantity("512Mi"),
            Some((512 << 20, 0, "", "BinarySI"))
        );
        assert_eq!(parse_quantity("0"), Some((0, 0, "0", "DecimalSI")));
        assert_eq!(
            parse_quantity("1e3"),
            Some((1, 3, "1e3", "DecimalExponent"))
        );
        assert_eq!(parse_quantity("-2k"), Some((-2, 3, "-2k", "DecimalSI")));
    }

    #[test]
    fn what_cannot_be_printed_has_no_hash() {
        let mut t = recorded_template();
        t["metadata"]["creationTimestamp"] = json!("2026-12-06T02:01:53Z");
        assert_eq!(pod_template_hash(&t, None), None);
        let mut t = recorded_template();
        t["spec"]["unknownField"] = json!(1);
        assert!(
            pod_template_hash(&t, None).is_some(),
            "unknown fields are not in Go's struct"
        );
        let mut t = recorded_template();
        t["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "0.0000000001"}});
        assert_eq!(pod_template_hash(&t, None), None);
    }
}
