//! Formatting the way kube-apiserver's Go code prints values, so that error
//! messages and `FieldsV1` keys come out byte for byte like the real server's.

use serde_json::{Number, Value};

/// Compact JSON as Go's `encoding/json` writes it: map keys sorted, `<`, `>`
/// and `&` escaped, floats in Go's shortest form.
pub fn json(value: &Value) -> String {
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
pub fn json_string(s: &str) -> String {
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

/// Go's `%v` of a JSON number.
pub fn number(n: &Number) -> String {
    json_number(n)
}

/// Go's `%q` of a string.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                if (c as u32) < 0x80 {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                } else {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` of a decoded JSON value (`map[a:1 b:[x y]]`).
pub fn go_v(value: &Value) -> String {
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
pub fn go_type(value: &Value) -> &'static str {
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
pub fn json_kind(value: &Value) -> &'static str {
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
pub fn parse_json(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice::<Value>(body).map_err(|e| syntax_error(body, &e))
}

fn syntax_error(body: &[u8], err: &serde_json::Error) -> String {
    if err.is_eof() {
        return "unexpected end of JSON input".to_string();
    }
    if err.is_data() {
        // Only raised for things like numbers out of range or nesting limits.
        return format!("json: {err}");
    }
    let text = String::from_utf8_lossy(body);
    let Some((before, c)) = char_at(&text, err.line(), err.column()) else {
        return format!("invalid JSON: {err}");
    };
    if err.to_string().contains("trailing") {
        return format!("invalid character {} after top-level value", go_char(c));
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
                    go_char(c),
                    go_char(expected)
                );
            }
        }
    }
    format!(
        "invalid character {} looking for beginning of value",
        go_char(c)
    )
}

/// The character at a 1-based line and (byte) column of `text`, with the
/// text of that line before it.
fn char_at(text: &str, line: usize, column: usize) -> Option<(&str, char)> {
    let line_text = text.split('\n').nth(line.checked_sub(1)?)?;
    let start = column.saturating_sub(1);
    let c = line_text
        .get(start..)
        .and_then(|rest| rest.chars().next())?;
    Some((line_text.get(..start).unwrap_or(""), c))
}

fn go_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c if c.is_control() => format!("'\\x{:02x}'", c as u32),
        c => format!("'{c}'"),
    }
}

/// `json: cannot unmarshal <kind> into Go value of type <go_type>`.
pub fn unmarshal_type_error(value: &Value, go_type: &str) -> String {
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
