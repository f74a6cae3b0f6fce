//! Formatting the way kube-apiserver's Go code prints values, so that error
//! messages and `FieldsV1` keys come out byte for byte like the real server's.

use serde_json::{Number, Value};

/// Compact JSON as Go's `encoding/json` writes it: map keys sorted, `<`, `>`
/// and `&` escaped, floats in Go's shortest form.
pub(crate) fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&json_number(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(key));
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_json(v, out);
                }
            }
            out.push('}');
        }
    }
}

/// A JSON string literal with Go's escaping (HTML-safe).
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Go switches to exponent form outside [1e-6, 1e21) and writes `e+21`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

/// Go's `%v` of a JSON number decoded into `interface{}` (int64 when it
/// fits, float64 otherwise).
pub(crate) fn number(n: &Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or(0.0)),
    }
}

/// The size of a value as Go's `json.Marshal` writes it (compact), counted
/// without building the text.
pub(crate) fn encoded_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Go's `%#v` of a non-nil slice of strings of type `type_name`:
/// `[]string{"a", "b"}`.
pub(crate) fn typed_slice(type_name: &str, items: &[impl AsRef<str>]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
    format!("{type_name}{{{}}}", quoted.join(", "))
}

/// Go's `%#v` of a `[]string` that is nil when empty (as a slice built by
/// appending is): `[]string(nil)`, `[]string{"a"}`.
pub(crate) fn string_slice(items: &[String]) -> String {
    if items.is_empty() {
        return "[]string(nil)".to_string();
    }
    typed_slice("[]string", items)
}

/// Go's `strconv.Quote`.
pub(crate) fn quote(s: &str) -> String {
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

/// Go's `%v` for a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`: shortest
/// digits, exponent form below 1e-4 and from 1e6).
pub(crate) fn float(f: f64) -> String {
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
pub(crate) fn sharp_v(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner = keys
                .iter()
                .map(|k| format!("{}:{}", quote(k), sharp_v_elem(&m[k.as_str()])))
                .collect::<Vec<_>>()
                .join(", ");
            format!("map[string]interface {{}}{{{inner}}}")
        }
        Value::Array(a) => {
            let inner = a.iter().map(sharp_v_elem).collect::<Vec<_>>().join(", ");
            format!("[]interface {{}}{{{inner}}}")
        }
        Value::String(s) => quote(s),
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
    }
}

/// `%#v` of an element inside a container (typed `interface{}` elements).
fn sharp_v_elem(v: &Value) -> String {
    match v {
        Value::Number(n) if n.as_i64().is_none() => {
            let s = float(n.as_f64().unwrap_or(0.0));
            // %#v of a float64 always shows a decimal point or exponent.
            if s.contains('.') || s.contains('e') || s.contains("Inf") || s == "NaN" {
                s
            } else {
                format!("{s}.0")
            }
        }
        other => sharp_v(other),
    }
}

/// Go's `%v` of a decoded JSON value (`map[a:1 b:[x y]]`).
pub(crate) fn go_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(go_v).collect::<Vec<_>>().join(" "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts = keys
                .into_iter()
                .map(|k| format!("{k}:{}", map.get(k).map(go_v).unwrap_or_default()))
                .collect::<Vec<_>>();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// The Go type a decoded JSON value has (`map[string]interface {}`, `int64`, ...).
pub(crate) fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The JSON kind Go's decoder names in `cannot unmarshal <kind> into ...`.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Parses a request body as JSON, reporting failures the way Go's decoder words them.
pub(crate) fn parse_json(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice::<Value>(body).map_err(|e| syntax_error(body, &e))
}

/// Go's decoder error for the serde_json error `err` on `body`.
pub(crate) fn syntax_error(body: &[u8], err: &serde_json::Error) -> String {
    if err.is_eof() {
        return "unexpected end of JSON input".to_string();
    }
    if err.is_data() {
        // Only raised for things like numbers out of range or nesting limits.
        return format!("json: {err}");
    }
    let Some((before, c)) = char_at(body, err.line(), err.column()) else {
        return format!("invalid JSON: {err}");
    };
    if err.to_string().contains("trailing") {
        return format!("invalid character {} after top-level value", quote_char(c));
    }
    // Inside `null`, `true` or `false`, Go names the literal and the letter it wanted.
    let word: String = before
        .chars()
        .rev()
        .take_while(char::is_ascii_alphabetic)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if !word.is_empty() {
        for literal in ["null", "true", "false"] {
            if let Some(rest) = literal.strip_prefix(word.as_str())
                && let Some(expected) = rest.chars().next()
            {
                return format!(
                    "invalid character {} in literal {literal} (expecting {})",
                    quote_char(c),
                    quote_char(expected)
                );
            }
        }
    }
    format!(
        "invalid character {} looking for beginning of value",
        quote_char(c)
    )
}

/// The byte at a 1-based line and (byte) column of `body`, as the character
/// Go's scanner names (it reads bytes), with the line's text before it.
fn char_at(body: &[u8], line: usize, column: usize) -> Option<(String, char)> {
    let line_bytes = body.split(|b| *b == b'\n').nth(line.checked_sub(1)?)?;
    let start = column.saturating_sub(1);
    let byte = *line_bytes.get(start)?;
    let before = String::from_utf8_lossy(&line_bytes[..start]).into_owned();
    Some((before, char::from(byte)))
}

/// A character as Go's JSON errors quote it (`quoteChar`).
pub(crate) fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c => {
            let quoted = quote(&c.to_string());
            format!("'{}'", &quoted[1..quoted.len() - 1])
        }
    }
}

/// `json: cannot unmarshal <kind> into Go value of type <go_type>`.
pub(crate) fn unmarshal_type_error(value: &Value, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go value of type {go_type}",
        json_kind(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_matches_go_encoding() {
        assert_eq!(
            json(&json!({"b": 1, "a": "<x>"})),
            r#"{"a":"\u003cx\u003e","b":1}"#
        );
        assert_eq!(json(&json!(1.5)), "1.5");
        assert_eq!(json(&json!(1e21)), "1e+21");
        assert_eq!(json(&json!(1e-7)), "1e-7");
    }

    #[test]
    fn floats_print_as_go_v() {
        assert_eq!(float(1.0), "1");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(123456789.0), "1.23456789e+08");
        assert_eq!(float(100000.0), "100000");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(-2.5), "-2.5");
    }

    #[test]
    fn sharp_v_and_quote_match_go() {
        assert_eq!(
            sharp_v(&json!({"b": [1, "x"], "a": 1.5})),
            "map[string]interface {}{\"a\":1.5, \"b\":[]interface {}{1, \"x\"}}"
        );
        assert_eq!(quote("a\"b\n\u{1}"), "\"a\\\"b\\n\\x01\"");
        assert_eq!(
            json(&json!({"b": "<", "a": 1})),
            "{\"a\":1,\"b\":\"\\u003c\"}"
        );
        assert_eq!(quote("\u{7}\u{85}"), "\"\\a\\u0085\"");
        assert_eq!(go_v(&json!([1234567.5])), "[1.2345675e+06]");
    }

    #[test]
    fn go_v_prints_maps_sorted() {
        assert_eq!(
            go_v(&json!({"hostPath": {"path": "/x"}, "a": [1, "b"]})),
            "map[a:[1 b] hostPath:map[path:/x]]"
        );
    }

    #[test]
    fn decode_errors_read_like_go() {
        assert_eq!(
            parse_json(b"{").unwrap_err(),
            "unexpected end of JSON input"
        );
        assert_eq!(
            parse_json(b"xyz").unwrap_err(),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(
            parse_json(b"nope").unwrap_err(),
            "invalid character 'o' in literal null (expecting 'u')"
        );
        assert_eq!(
            parse_json(b"{} x").unwrap_err(),
            "invalid character 'x' after top-level value"
        );
        assert_eq!(
            unmarshal_type_error(&json!({}), "[]handlers.jsonPatchOp"),
            "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
    }
}
