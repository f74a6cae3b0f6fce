//! JSON bytes as kube-apiserver writes them. Its serializer is Go's
//! `json.Encoder`, which ends every document with a newline and escapes
//! `<`, `>`, `&`, U+2028 and U+2029 inside strings; its pretty form
//! (`json.MarshalIndent` with two spaces) has no trailing newline.

use serde_json::Value;

/// One document, compact, newline-terminated (responses and watch events).
pub(crate) fn compact(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    escape_html(bytes)
}

/// One document indented by two spaces, without a trailing newline.
pub(crate) fn indented(value: &Value) -> Vec<u8> {
    escape_html(serde_json::to_vec_pretty(value).unwrap_or_default())
}

/// Go's HTML-safe escaping. The characters it rewrites can only occur inside
/// strings of serde_json's output, so a byte scan is exact.
pub(crate) fn escape_html(bytes: Vec<u8>) -> Vec<u8> {
    let needs = |b: &u8| matches!(b, b'<' | b'>' | b'&' | 0xE2);
    if !bytes.iter().any(needs) {
        return bytes;
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            0xE2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                let last = if bytes[i + 2] == 0xA8 { b'8' } else { b'9' };
                out.extend_from_slice(b"\\u202");
                out.push(last);
                i += 3;
                continue;
            }
            b => out.push(b),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compact_ends_with_a_newline_and_escapes_like_go() {
        let v = json!({"message": "a <b> & c\u{2028}d\u{2029}é"});
        assert_eq!(
            String::from_utf8(compact(&v)).unwrap(),
            "{\"message\":\"a \\u003cb\\u003e \\u0026 c\\u2028d\\u2029é\"}\n"
        );
    }

    #[test]
    fn indented_has_two_spaces_and_no_newline() {
        let v = json!({"kind": "Status", "metadata": {}, "code": 406});
        assert_eq!(
            String::from_utf8(indented(&v)).unwrap(),
            "{\n  \"kind\": \"Status\",\n  \"metadata\": {},\n  \"code\": 406\n}"
        );
    }
}
