//! The string formats kube-apiserver validates (go-openapi's `strfmt`
//! registry as Kubernetes configures it). Formats it does not know are
//! stripped from the schema and never checked.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// Format names normalised as the registry does (dashes removed).
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether kube-apiserver keeps `format` on a string schema.
pub(crate) fn is_supported(format: &str) -> bool {
    SUPPORTED.contains(&normalize(format).as_str())
}

/// Whether the registry knows `format` (the format validator applies).
pub(crate) fn is_known(format: &str) -> bool {
    !format.is_empty() && is_supported(format)
}

static UUID: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$")
});
static MAC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){9})$",
    )
});
static HEXCOLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"^(?:[^<>@\s"]+|"[^"]*")@[^<>@\s]+$|^[^<>]*<(?:[^<>@\s"]+|"[^"]*")@[^<>@\s]+>$"#)
});
static DURATION_PART: LazyLock<Regex> = LazyLock::new(|| re(r"((\d+)\s*([A-Za-zµ]+))"));
static GO_DURATION: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"));
static K8S_SHORT: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static K8S_LONG: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));

/// The patterns above are literals, compiled (and so checked) by the tests.
fn re(p: &str) -> Regex {
    Regex::new(p).expect("literal pattern compiles")
}

/// Whether `data` is valid for the (known) `format`.
pub(crate) fn validates(format: &str, data: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => data.len() == 24 && data.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(data),
        "email" => EMAIL.is_match(data),
        "hostname" => {
            HOSTNAME.is_match(data) && data.len() <= 255 && data.split('.').all(|p| p.len() <= 63)
        }
        "ipv4" => is_ipv4(data),
        "ipv6" => data.parse::<Ipv6Addr>().is_ok() && data.contains(':'),
        "cidr" => is_cidr(data),
        "mac" => MAC.is_match(data),
        "uuid" => UUID.is_match(data),
        "uuid3" => UUID3.is_match(data),
        "uuid4" => UUID4.is_match(data),
        "uuid5" => UUID5.is_match(data),
        "isbn" => is_isbn10(data) || is_isbn13(data),
        "isbn10" => is_isbn10(data),
        "isbn13" => is_isbn13(data),
        "creditcard" => is_credit_card(data),
        "ssn" => SSN.is_match(data),
        "hexcolor" => HEXCOLOR.is_match(data),
        "rgbcolor" => RGBCOLOR.is_match(data),
        "byte" => BASE64.is_match(data),
        "password" => true,
        "date" => parse_date(data).is_some(),
        "duration" => is_duration(data),
        "datetime" => is_date_time(data),
        "k8sshortname" => data.len() <= 63 && K8S_SHORT.is_match(data),
        "k8slongname" => data.len() <= 253 && K8S_LONG.is_match(data),
        _ => true,
    }
}

/// `2006-01-02`, with day-of-month checked as Go's `time.Parse` does.
pub(crate) fn parse_date(s: &str) -> Option<(i32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let y = digits(0..4)? as i32;
    let m = digits(5..7)?;
    let d = digits(8..10)?;
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some((y, m, d))
}

fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || parse_date(parts[0]).is_none() {
        return false;
    }
    let Some(c) = DATE_TIME.captures(parts[1]) else {
        return false;
    };
    let le = |i: usize, max: &str| c.get(i).is_some_and(|m| m.as_str() <= max);
    le(1, "23") && le(2, "59") && le(3, "59")
}

fn is_ipv4(s: &str) -> bool {
    // Go's ParseIPSloppy accepts leading zeros; std does not, so strip them.
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return s.contains('.') && s.parse::<IpAddr>().is_ok();
    }
    parts.iter().all(|p| {
        !p.is_empty()
            && p.len() <= 3
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|n| n <= 255)
    })
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if is_ipv4(ip) {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

/// Go's `url.ParseRequestURI`: absolute URI or absolute path, no fragment.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.contains(' ') && !s.contains('%') && s.starts_with(' ') {
        return false;
    }
    let rest = s.split_once('#').map_or(s, |(a, _)| a);
    if rest.starts_with('/') {
        return true;
    }
    match rest.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        }
        None => false,
    }
}

fn is_isbn10(s: &str) -> bool {
    let d: String = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if d.len() != 10 {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in d.chars().enumerate() {
        let v = match c {
            'X' if i == 9 => 10,
            c => match c.to_digit(10) {
                Some(v) => v,
                None => return false,
            },
        };
        sum += (i as u32 + 1) * v;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d: String = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if d.len() != 13 || !d.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let sum: u32 = d
        .chars()
        .enumerate()
        .map(|(i, c)| c.to_digit(10).unwrap_or(0) * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    sum.is_multiple_of(10)
}

fn is_credit_card(s: &str) -> bool {
    let d: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    if d.len() < 12 || d.len() > 19 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in d.chars().rev().enumerate() {
        let mut v = c.to_digit(10).unwrap_or(0);
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum % 10 == 0
}

/// strfmt's `ParseDuration`: a Go duration, or `<n> <unit>` pairs.
fn is_duration(s: &str) -> bool {
    if GO_DURATION.is_match(s) {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for c in DURATION_PART.captures_iter(s) {
        let unit = c.get(3).map_or("", |m| m.as_str()).trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || unit.eq_ignore_ascii_case(v) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Parses a Go duration (`1h30m`, `-1.5s`) or a strfmt duration into nanoseconds.
pub(crate) fn parse_duration_nanos(s: &str) -> Option<i128> {
    if GO_DURATION.is_match(s) {
        let (neg, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        if body == "0" {
            return Some(0);
        }
        let unit_re = LazyLock::force(&GO_DURATION_UNIT);
        let mut total: f64 = 0.0;
        for c in unit_re.captures_iter(body) {
            let n: f64 = c.get(1)?.as_str().parse().ok()?;
            let mult = match c.get(2)?.as_str() {
                "ns" => 1.0,
                "us" | "µs" | "μs" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                "m" => 60e9,
                "h" => 3600e9,
                _ => return None,
            };
            total += n * mult;
        }
        let v = total as i128;
        return Some(if neg { -v } else { v });
    }
    if !is_duration(s) {
        return None;
    }
    let mut total: i128 = 0;
    for c in DURATION_PART.captures_iter(s) {
        let n: i128 = c.get(2)?.as_str().parse().ok()?;
        let unit = c.get(3).map_or("", |m| m.as_str()).to_lowercase();
        let mult: i128 = if unit.starts_with("ns") || unit.starts_with("nano") {
            1
        } else if unit.starts_with("us") || unit.starts_with("µs") || unit.starts_with("micro") {
            1_000
        } else if unit.starts_with("ms") || unit.starts_with("milli") {
            1_000_000
        } else if unit == "s" || unit.starts_with("sec") {
            1_000_000_000
        } else if unit == "m" || unit.starts_with("min") {
            60_000_000_000
        } else if unit == "h" || unit.starts_with("hr") || unit.starts_with("hour") {
            3_600_000_000_000
        } else if unit == "d" || unit.starts_with("day") {
            86_400_000_000_000
        } else if unit == "w" || unit.starts_with("wk") || unit.starts_with("week") {
            604_800_000_000_000
        } else {
            0
        };
        total = total.saturating_add(n.saturating_mul(mult));
    }
    Some(total)
}

static GO_DURATION_UNIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"([0-9]*\.?[0-9]+)(ns|us|µs|μs|ms|s|m|h)"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_validate_like_strfmt() {
        assert!(validates("date-time", "2024-02-29T10:00:00Z"));
        assert!(validates("date-time", "2024-02-29T10:00:00.123+01:00"));
        assert!(!validates("date-time", "2023-02-29T10:00:00Z"));
        assert!(!validates("date-time", "2024-01-01 10:00:00"));
        assert!(validates("date", "2024-01-31"));
        assert!(!validates("date", "2024-04-31"));
        assert!(validates("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!validates("uuid", "not-a-uuid"));
        assert!(validates("byte", "aGVsbG8="));
        assert!(!validates("byte", "hello!"));
        assert!(validates("ipv4", "10.0.0.1"));
        assert!(!validates("ipv4", "10.0.0.256"));
        assert!(validates("ipv6", "::1"));
        assert!(validates("cidr", "10.0.0.0/8"));
        assert!(!validates("cidr", "10.0.0.0/33"));
        assert!(validates("duration", "1h30m"));
        assert!(validates("duration", "3 days"));
        assert!(!validates("duration", "soon"));
        assert!(validates("hostname", "example.com"));
        assert!(validates("mac", "00:1a:2b:3c:4d:5e"));
        assert!(validates("email", "a@example.com"));
        assert!(!validates("email", "nope"));
        assert!(validates("uri", "https://example.com/x"));
        assert!(!validates("uri", "example"));
        assert!(is_supported("date-time") && !is_supported("int32") && !is_supported("color"));
        assert_eq!(parse_duration_nanos("1m30s"), Some(90_000_000_000));
    }
}
