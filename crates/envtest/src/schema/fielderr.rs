//! Field paths and field errors rendered the way kube-apiserver (v1.24, the
//! version the transcripts were recorded from) renders `field.Error`s.
//!
//! Go prints bad values with `%v` for numbers and booleans, `%q` for strings
//! and `%#v` for anything else; the helpers here reproduce those forms so the
//! messages match the recorded ones byte for byte.

use serde_json::Value;

use crate::error::Cause;

/// A `field.Path`. `None` is Go's nil path, printed `<nil>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldPath(Option<String>);

impl FieldPath {
    /// The nil path.
    pub(crate) fn nil() -> Self {
        FieldPath(None)
    }

    pub(crate) fn new(name: &str) -> Self {
        FieldPath(Some(name.to_string()))
    }

    /// Appends a named child (`a.b`).
    pub(crate) fn child(&self, name: &str) -> Self {
        match &self.0 {
            None => FieldPath(Some(name.to_string())),
            Some(s) => FieldPath(Some(format!("{s}.{name}"))),
        }
    }

    /// Appends a subscript (`a[key]`).
    pub(crate) fn key(&self, key: &str) -> Self {
        match &self.0 {
            None => FieldPath(Some(format!("[{key}]"))),
            Some(s) => FieldPath(Some(format!("{s}[{key}]"))),
        }
    }

    pub(crate) fn index(&self, i: usize) -> Self {
        self.key(&i.to_string())
    }

    /// Prefixes a path string that was rendered relative to a nil root.
    pub(crate) fn join_relative(&self, relative: &str) -> String {
        match (&self.0, relative) {
            (None, r) => r.to_string(),
            (Some(s), "") | (Some(s), "<nil>") => s.clone(),
            (Some(s), r) if r.starts_with('[') => format!("{s}{r}"),
            (Some(s), r) => format!("{s}.{r}"),
        }
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("<nil>"),
            Some(s) => f.write_str(s),
        }
    }
}

/// The kind of a field error (`field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrKind {
    Required,
    Forbidden,
    TooLong,
    Invalid,
    TypeInvalid,
    NotSupported,
    Duplicate,
    TooMany,
}

impl ErrKind {
    fn reason(self) -> &'static str {
        match self {
            ErrKind::Required => "FieldValueRequired",
            ErrKind::Forbidden => "FieldValueForbidden",
            ErrKind::TooLong => "FieldValueTooLong",
            ErrKind::Invalid => "FieldValueInvalid",
            ErrKind::TypeInvalid => "FieldValueTypeInvalid",
            ErrKind::NotSupported => "FieldValueNotSupported",
            ErrKind::Duplicate => "FieldValueDuplicate",
            ErrKind::TooMany => "FieldValueTooMany",
        }
    }

    fn text(self) -> &'static str {
        match self {
            ErrKind::Required => "Required value",
            ErrKind::Forbidden => "Forbidden",
            ErrKind::TooLong => "Too long",
            ErrKind::Invalid | ErrKind::TypeInvalid => "Invalid value",
            ErrKind::NotSupported => "Unsupported value",
            ErrKind::Duplicate => "Duplicate value",
            ErrKind::TooMany => "Too many",
        }
    }
}

/// The bad value of a field error, already in the shape Go prints it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BadValue {
    /// Not printed at all (`field.OmitValueType`).
    Omit,
    /// Printed as is (numbers, booleans, `%#v` renderings).
    Raw(String),
    /// Printed with `%q`.
    Str(String),
}

impl BadValue {
    /// How `field.Error` prints a JSON value taken from an object.
    pub(crate) fn of(v: &Value) -> BadValue {
        match v {
            Value::String(s) => BadValue::Str(s.clone()),
            // v1.24 turns nil into the string "null" before quoting it.
            Value::Null => BadValue::Str("null".to_string()),
            Value::Bool(b) => BadValue::Raw(b.to_string()),
            Value::Number(_) => BadValue::Raw(go_number(v)),
            other => BadValue::Raw(go_sharp_v(other)),
        }
    }

    pub(crate) fn str(s: &str) -> BadValue {
        BadValue::Str(s.to_string())
    }
}

/// One `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub kind: ErrKind,
    pub field: String,
    pub value: BadValue,
    pub detail: String,
}

impl FieldError {
    fn with(kind: ErrKind, field: &FieldPath, value: BadValue, detail: &str) -> Self {
        FieldError {
            kind,
            field: field.to_string(),
            value,
            detail: detail.to_string(),
        }
    }

    pub(crate) fn required(field: &FieldPath, detail: &str) -> Self {
        Self::with(ErrKind::Required, field, BadValue::str(""), detail)
    }

    pub(crate) fn forbidden(field: &FieldPath, detail: &str) -> Self {
        Self::with(ErrKind::Forbidden, field, BadValue::str(""), detail)
    }

    pub(crate) fn invalid(field: &FieldPath, value: BadValue, detail: &str) -> Self {
        Self::with(ErrKind::Invalid, field, value, detail)
    }

    pub(crate) fn type_invalid(field: &FieldPath, value: BadValue, detail: &str) -> Self {
        Self::with(ErrKind::TypeInvalid, field, value, detail)
    }

    pub(crate) fn duplicate(field: &FieldPath, value: BadValue) -> Self {
        Self::with(ErrKind::Duplicate, field, value, "")
    }

    /// `field.NotSupported`: the supported values are quoted with `%q`.
    pub(crate) fn not_supported(field: &FieldPath, value: BadValue, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            format!(
                "supported values: {}",
                supported
                    .iter()
                    .map(|s| go_quote(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Self::with(ErrKind::NotSupported, field, value, &detail)
    }

    /// `field.TooLongMaxLength` (v1.32: the same as `field.TooLong`).
    pub(crate) fn too_long(field: &FieldPath, value: BadValue, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("may not be more than {max} bytes")
        } else {
            "value is too long".to_string()
        };
        Self::with(ErrKind::TooLong, field, value, &detail)
    }

    /// `field.TooMany`.
    pub(crate) fn too_many(field: &FieldPath, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        let value = if actual >= 0 {
            BadValue::Raw(actual.to_string())
        } else {
            BadValue::Omit
        };
        Self::with(ErrKind::TooMany, field, value, &detail)
    }

    /// `ErrorBody()`: the message without the field.
    pub(crate) fn body(&self) -> String {
        let mut s = match self.kind {
            ErrKind::Required | ErrKind::Forbidden | ErrKind::TooLong => {
                self.kind.text().to_string()
            }
            _ => match &self.value {
                BadValue::Omit => self.kind.text().to_string(),
                BadValue::Raw(v) => format!("{}: {v}", self.kind.text()),
                BadValue::Str(v) => format!("{}: {}", self.kind.text(), go_quote(v)),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// `Error()`: `field: body`.
    pub(crate) fn error_string(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }

    pub(crate) fn into_cause(self) -> Cause {
        let message = self.body();
        Cause::new(self.kind.reason(), self.field, message)
    }
}

pub(crate) fn into_causes(errs: Vec<FieldError>) -> Vec<Cause> {
    errs.into_iter().map(FieldError::into_cause).collect()
}

/// Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_go_unprintable(c) => {
                let n = c as u32;
                if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An approximation of `!unicode.IsPrint` for characters above ASCII.
fn is_go_unprintable(c: char) -> bool {
    let n = c as u32;
    (0x80..=0xa0).contains(&n)
        || n == 0xad
        || (0x2000..=0x200f).contains(&n) && n != 0x2010
        || (0x2028..=0x202f).contains(&n)
        || (0x205f..=0x206f).contains(&n)
        || n == 0x3000
        || n == 0xfeff
        || (0xfff9..=0xfffb).contains(&n)
        || (0xd800..=0xdfff).contains(&n)
        || (0xe000..=0xf8ff).contains(&n)
}

/// A JSON number as Go decodes it into `interface{}` (int64 when it fits,
/// float64 otherwise) and prints it with `%v`.
pub(crate) fn go_number(v: &Value) -> String {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else {
                go_float(n.as_f64().unwrap_or(0.0))
            }
        }
        _ => String::new(),
    }
}

/// Go's `%v` for a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`: shortest
/// digits, exponent form below 1e-4 and from 1e6).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Shortest round-trip digits and decimal exponent.
    let e_repr = format!("{f:e}");
    let (mantissa, exp) = match e_repr.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse::<i32>().unwrap_or(0)),
        None => (e_repr.clone(), 0),
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        let abs = exp.unsigned_abs();
        if abs < 10 {
            format!("{mantissa}e{sign}0{abs}")
        } else {
            format!("{mantissa}e{sign}{abs}")
        }
    } else {
        // Rust's Display never uses an exponent and is shortest round-trip.
        format!("{f}")
    }
}

/// Go's `%#v` of a JSON value decoded into `interface{}`.
pub(crate) fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner = keys
                .iter()
                .map(|k| format!("{}:{}", go_quote(k), go_sharp_v_elem(&m[k.as_str()])))
                .collect::<Vec<_>>()
                .join(", ");
            format!("map[string]interface {{}}{{{inner}}}")
        }
        Value::Array(a) => {
            let inner = a.iter().map(go_sharp_v_elem).collect::<Vec<_>>().join(", ");
            format!("[]interface {{}}{{{inner}}}")
        }
        Value::String(s) => go_quote(s),
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => go_number(v),
    }
}

/// `%#v` of an element inside a container (typed `interface{}` elements).
fn go_sharp_v_elem(v: &Value) -> String {
    match v {
        Value::Number(n) if n.as_i64().is_none() => {
            let s = go_float(n.as_f64().unwrap_or(0.0));
            // %#v of a float64 always shows a decimal point or exponent.
            if s.contains('.') || s.contains('e') || s.contains("Inf") || s == "NaN" {
                s
            } else {
                format!("{s}.0")
            }
        }
        other => go_sharp_v(other),
    }
}

/// Go's `json.Marshal` of a JSON value (keys sorted, `<>&` escaped), as the
/// current `field.Error` prints compound values.
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_str(k, out);
                out.push(':');
                write_go_json(&m[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(e, out);
            }
            out.push(']');
        }
        Value::String(s) => write_go_json_str(s, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_go_json_str(s: &str, out: &mut String) {
    let quoted = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
    for c in quoted.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_render_like_go() {
        let p = FieldPath::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        assert_eq!(
            p.child("properties").key("spec").child("type").to_string(),
            "spec.validation.openAPIV3Schema.properties[spec].type"
        );
        assert_eq!(FieldPath::nil().to_string(), "<nil>");
        assert_eq!(FieldPath::nil().child("type").to_string(), "type");
        assert_eq!(FieldPath::nil().key("a").to_string(), "[a]");
        assert_eq!(
            p.join_relative("properties[a].type"),
            format!("{p}.properties[a].type")
        );
    }

    #[test]
    fn go_float_formatting() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(123456789.0), "1.23456789e+08");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5), "-2.5");
    }

    #[test]
    fn bodies_match_v124() {
        let e = FieldError::invalid(&FieldPath::new("x"), BadValue::of(&json!(0)), "d");
        assert_eq!(e.body(), "Invalid value: 0: d");
        let e = FieldError::required(&FieldPath::new("x"), "");
        assert_eq!(e.body(), "Required value");
        let e = FieldError::invalid(&FieldPath::new("x"), BadValue::of(&Value::Null), "d");
        assert_eq!(e.body(), "Invalid value: \"null\": d");
        assert_eq!(
            go_sharp_v(&json!({"b": [1, "x"], "a": 1.5})),
            "map[string]interface {}{\"a\":1.5, \"b\":[]interface {}{1, \"x\"}}"
        );
        assert_eq!(go_quote("a\"b\n\u{1}"), "\"a\\\"b\\n\\x01\"");
        assert_eq!(
            go_json(&json!({"b": "<", "a": 1})),
            "{\"a\":1,\"b\":\"\\u003c\"}"
        );
    }
}
