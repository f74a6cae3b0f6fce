//! Name and key rules of `k8s.io/apimachinery/pkg/util/validation`, with the
//! exact messages the real server prints.

use std::sync::LazyLock;

use regex::Regex;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const IANA_SVC_NAME_FMT: &str = "[-a-z0-9]+";

fn anchored(fmt: &str) -> Regex {
    // The formats are constants known to compile.
    Regex::new(&format!("^{fmt}$")).unwrap_or_else(|_| Regex::new("^$").expect("empty regex"))
}

static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static DNS1035_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035_LABEL_FMT));
static QUALIFIED_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));
static CONFIG_MAP_KEY: LazyLock<Regex> = LazyLock::new(|| anchored(CONFIG_MAP_KEY_FMT));
static ENV_VAR_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(ENV_VAR_NAME_FMT));
static IANA_SVC_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(IANA_SVC_NAME_FMT));
static HAS_LETTER: LazyLock<Regex> = LazyLock::new(|| anchored(".*[a-z].*"));

/// `RegexError`: the message, examples and the regex.
pub(crate) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

pub(crate) fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

pub(crate) const EMPTY_ERROR: &str = "must be non-empty";

pub(crate) fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            // A valid subdomain that is no label: its length was checked
            // already, so it must be the dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// At most `max` bytes and matching `regex` (whose source is `fmt`): the
/// shape of most name rules, with `msg` and `examples` for a mismatch.
fn bounded_match(
    value: &str,
    max: usize,
    regex: &Regex,
    (msg, fmt, examples): (&str, &str, &[&str]),
) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > max {
        errs.push(max_len_error(max));
    }
    if !regex.is_match(value) {
        errs.push(regex_error(msg, fmt, examples));
    }
    errs
}

pub(crate) fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    bounded_match(
        value,
        253,
        &DNS1123_SUBDOMAIN,
        (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ),
    )
}

const WILDCARD_DNS1123_SUBDOMAIN_FMT: &str =
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
static WILDCARD_DNS1123_SUBDOMAIN: LazyLock<Regex> =
    LazyLock::new(|| anchored(WILDCARD_DNS1123_SUBDOMAIN_FMT));

/// `IsWildcardDNS1123Subdomain`: `*.` and a DNS subdomain (Ingress hosts).
/// Its message kept the older "DNS-1123" wording.
pub(crate) fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    bounded_match(
        value,
        253,
        &WILDCARD_DNS1123_SUBDOMAIN,
        (
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            WILDCARD_DNS1123_SUBDOMAIN_FMT,
            &["*.example.com"],
        ),
    )
}

pub(crate) fn is_dns1035_label(value: &str) -> Vec<String> {
    bounded_match(
        value,
        63,
        &DNS1035_LABEL,
        (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ),
    )
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `IsQualifiedName`: label keys, annotation keys, finalizers.
pub(crate) fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {EMPTY_ERROR}"));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {EMPTY_ERROR}"));
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

pub(crate) fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !LABEL_VALUE.is_match(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// A name that a path could mistake for `.` or `..` (apimachinery's
/// `hasChDirPrefix` checks).
fn relative_path_error(value: &str) -> Option<String> {
    match value {
        "." => Some("must not be '.'".to_string()),
        ".." => Some("must not be '..'".to_string()),
        _ if value.starts_with("..") => Some("must not start with '..'".to_string()),
        _ => None,
    }
}

pub(crate) fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !CONFIG_MAP_KEY.is_match(value) {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(relative_path_error(value));
    errs
}

pub(crate) fn is_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if !ENV_VAR_NAME.is_match(value) {
        errs.push(regex_error(
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(relative_path_error(value));
    errs
}

/// `IsValidPortName` (IANA service names).
pub(crate) fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if !IANA_SVC_NAME.is_match(port) {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if !port.is_empty() && (port.starts_with('-') || port.ends_with('-')) {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    if !HAS_LETTER.is_match(port) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    errs
}

pub(crate) fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_string()]
    }
}

/// `IsValidPathSegmentName`: RBAC names and the like.
pub(crate) fn is_valid_path_segment(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// A name rule (`ValidateNameFunc`): `prefix` is set for `generateName`.
pub(crate) type NameRule = fn(&str, bool) -> Vec<String>;

fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => name.to_string(),
    }
}

pub(crate) fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1123_subdomain(&mask_trailing_dash(name));
    }
    is_dns1123_subdomain(name)
}

pub(crate) fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1123_label(&mask_trailing_dash(name));
    }
    is_dns1123_label(name)
}

pub(crate) fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1035_label(&mask_trailing_dash(name));
    }
    is_dns1035_label(name)
}

pub(crate) fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_valid_path_segment(name);
    }
    is_valid_path_segment(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_recorded_ones() {
        assert_eq!(
            is_dns1123_subdomain("Bad_Name"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            is_config_map_key("bad key!"),
            vec![
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
    }

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("example.com/hold").is_empty());
        assert!(is_qualified_name("app").is_empty());
        assert_eq!(
            is_qualified_name("/x"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_valid_label_value("").is_empty());
        assert_eq!(is_valid_label_value("-x").len(), 1);
    }

    #[test]
    fn port_names() {
        assert!(is_valid_port_name("http").is_empty());
        assert_eq!(
            is_valid_port_name("80"),
            vec!["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            is_valid_port_name("a--b"),
            vec!["must not contain consecutive hyphens"]
        );
    }
}
