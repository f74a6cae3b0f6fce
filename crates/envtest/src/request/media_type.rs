//! `Content-Type` values as kube-apiserver reads them. Go hands the header's
//! bytes over as they came (bytes that are not UTF-8 included); object
//! bodies are negotiated with Go's `mime.ParseMediaType`, which refuses a
//! value whose type, subtype or parameters are not RFC 2045 tokens or
//! quoted strings, so a byte outside ASCII anywhere but inside a quoted
//! parameter value makes the body 415; PATCH compares the value itself
//! (see `patch::PatchType::from_content_type`).

use std::borrow::Cow;

use axum::http::{HeaderMap, header};

/// The request's first `Content-Type` as Go's `Header.Get` gives it: the
/// raw bytes, with any that are not UTF-8 turned into U+FFFD (like those
/// bytes, never a token character, a space or a quote, so every check
/// below answers as it would for the bytes). `None` when absent.
pub(crate) fn header(headers: &HeaderMap) -> Option<Cow<'_, str>> {
    headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
}

/// RFC 2045 `tspecials`.
fn is_tspecial(c: char) -> bool {
    "()<>@,;:\\\"/[]?=".contains(c)
}

/// A token character: visible ASCII other than the tspecials.
fn is_token_char(c: char) -> bool {
    c.is_ascii() && c > ' ' && c != '\x7f' && !is_tspecial(c)
}

/// The longest token at the start of `v`, and the rest.
fn token(v: &str) -> (&str, &str) {
    let end = v.find(|c| !is_token_char(c)).unwrap_or(v.len());
    v.split_at(end)
}

/// A token or a quoted string (unquoted) at the start of `v`, and the rest;
/// `None` when there is neither.
fn value(v: &str) -> Option<(String, &str)> {
    let Some(quoted) = v.strip_prefix('"') else {
        let (t, rest) = token(v);
        return (!t.is_empty()).then(|| (t.to_string(), rest));
    };
    let mut out = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &quoted[i + 1..])),
            '\r' | '\n' => return None,
            // A backslash escapes only a tspecial; before anything else it
            // is a literal backslash (what Go's parser does for MSIE paths).
            '\\' if quoted[i + 1..].starts_with(is_tspecial) => {
                if let Some((_, escaped)) = chars.next() {
                    out.push(escaped);
                }
            }
            other => out.push(other),
        }
    }
    None
}

/// `; name = value` at the start of `v` (after any spaces): the lower-cased
/// name, the value and the rest.
fn parameter(v: &str) -> Option<(String, String, &str)> {
    let rest = v.trim_start().strip_prefix(';')?.trim_start();
    let (name, rest) = token(rest);
    if name.is_empty() {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let (value, rest) = value(rest)?;
    Some((name.to_ascii_lowercase(), value, rest))
}

/// `type/subtype` (or a lone `type`) made of tokens.
fn well_formed_type(s: &str) -> bool {
    let (main, rest) = token(s);
    if main.is_empty() {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return false;
    };
    let (sub, rest) = token(rest);
    !sub.is_empty() && rest.is_empty()
}

/// Go's `mime.ParseMediaType` as far as the negotiation uses it: the
/// lower-cased media type, or `None` where Go returns an error (a
/// malformed type, parameter, or a name given twice with different
/// values; a trailing `;` is fine).
pub(crate) fn parse(v: &str) -> Option<String> {
    let (base, _) = v.split_once(';').unwrap_or((v, ""));
    let media_type = base.to_lowercase().trim().to_string();
    if !well_formed_type(&media_type) {
        return None;
    }
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut rest = &v[base.len()..];
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let Some((name, value, after)) = parameter(rest) else {
            return (rest.trim() == ";").then_some(media_type);
        };
        if seen.iter().any(|(n, v)| *n == name && *v != value) {
            return None;
        }
        seen.push((name, value));
        rest = after;
    }
    Some(media_type)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn media_types_parse_as_go_parses_them() {
        for (value, expected) in [
            ("application/json", Some("application/json")),
            (" Application/JSON ", Some("application/json")),
            ("application/json; charset=utf-8", Some("application/json")),
            (
                "application/json;charset=\"utf-8\"",
                Some("application/json"),
            ),
            ("application/json;", Some("application/json")),
            ("application/json; a=1; a=1", Some("application/json")),
            ("application/json; a=\"\u{fffd}\"", Some("application/json")),
            ("application/json; a=\"\\\"x\"", Some("application/json")),
            ("application", Some("application")),
            ("", None),
            ("application/json\u{fffd}", None),
            ("application/\u{fffd}json", None),
            ("application/json; charset=\u{fffd}", None),
            ("application/json; charset", None),
            ("application/json; charset=", None),
            ("application/json; a=1; a=2", None),
            ("application/json; a=\"open", None),
            ("application/json garbage", None),
            ("application/", None),
            ("/json", None),
        ] {
            assert_eq!(parse(value).as_deref(), expected, "{value:?}");
        }
    }
}
