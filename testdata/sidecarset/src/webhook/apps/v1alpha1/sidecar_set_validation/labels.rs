//! Label selectors and the name syntax they use, checked as kube-apiserver
//! checks them (`ValidateLabelSelector` and `IsQualifiedName`,
//! `IsValidLabelValue`, `IsDNS1123Label` of apimachinery), with its
//! messages.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::field::Error;

const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
    and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
    '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const QUALIFIED_NAME: &str = "a qualified name must consist of alphanumeric characters, '-', \
    '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
    'my.name',  or '123-abc', regex used for validation is \
    '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' \
    (e.g. 'example.com/MyName')";

const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric \
    characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
    'MyValue',  or 'my_value',  or '12345', regex used for validation is \
    '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
    alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
    (e.g. 'example.com', regex used for validation is \
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
    characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  \
    or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// The errors of `selector` at `path` (`spec.selector`). An empty selector
/// is refused: for a SidecarSet it would mean every Pod of the cluster.
pub fn validate_selector(selector: &LabelSelector, path: &str) -> Vec<Error> {
    let labels = selector.match_labels.as_ref();
    let expressions = selector.match_expressions.as_deref().unwrap_or_default();
    if labels.is_none_or(|l| l.is_empty()) && expressions.is_empty() {
        return vec![Error::required(
            path,
            "a SidecarSet must select Pods with matchLabels or matchExpressions \
             (an empty selector would inject its sidecars into every Pod)",
        )];
    }
    let mut errors = Vec::new();
    let labels_path = format!("{path}.matchLabels");
    for (key, value) in labels.into_iter().flatten() {
        for message in qualified_name_errors(key) {
            errors.push(Error::invalid(&labels_path, key, message));
        }
        for message in label_value_errors(value) {
            errors.push(Error::invalid(&labels_path, value, message));
        }
    }
    for (i, requirement) in expressions.iter().enumerate() {
        let path = format!("{path}.matchExpressions[{i}]");
        let values = requirement.values.as_deref().unwrap_or_default();
        match requirement.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errors.push(Error::required(
                format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(Error::forbidden(
                format!("{path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(Error::invalid(
                format!("{path}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        for message in qualified_name_errors(&requirement.key) {
            errors.push(Error::invalid(
                format!("{path}.key"),
                &requirement.key,
                message,
            ));
        }
        for (j, value) in values.iter().enumerate() {
            for message in label_value_errors(value) {
                errors.push(Error::invalid(
                    format!("{path}.values[{j}]"),
                    value,
                    message,
                ));
            }
        }
    }
    errors
}

/// What is wrong with `value` as a label key: `[prefix/]name`, the prefix a
/// DNS subdomain, the name at most 63 characters.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let (prefix, name) = match value.split('/').collect::<Vec<_>>().as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => return vec![QUALIFIED_NAME.to_owned()],
    };
    let mut errors = Vec::new();
    match prefix {
        Some("") => errors.push("prefix part must be non-empty".to_owned()),
        Some(prefix) => errors.extend(
            dns1123_subdomain_errors(prefix)
                .into_iter()
                .map(|message| format!("prefix part {message}")),
        ),
        None => {}
    }
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_owned());
    } else if !is_label_syntax(name) {
        errors.push(NAME_PART.to_owned());
    }
    errors
}

/// What is wrong with `value` as a label value: empty, or at most 63
/// characters of the label syntax.
pub fn label_value_errors(value: &str) -> Vec<String> {
    if value.len() > 63 {
        vec!["must be no more than 63 characters".to_owned()]
    } else if !value.is_empty() && !is_label_syntax(value) {
        vec![LABEL_VALUE.to_owned()]
    } else {
        Vec::new()
    }
}

/// What is wrong with `value` as a DNS-1123 label (a container name).
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    if value.len() > 63 {
        vec!["must be no more than 63 characters".to_owned()]
    } else if !is_dns1123_label(value) {
        vec![DNS1123_LABEL.to_owned()]
    } else {
        Vec::new()
    }
}

fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    if value.len() > 253 {
        vec!["must be no more than 253 characters".to_owned()]
    } else if !value.split('.').all(is_dns1123_label) {
        vec![DNS1123_SUBDOMAIN.to_owned()]
    } else {
        Vec::new()
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_label_syntax(value: &str) -> bool {
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    ends_ok(value.chars().next())
        && ends_ok(value.chars().last())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns1123_label(value: &str) -> bool {
    let lower_alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    value.chars().next().is_some_and(lower_alnum)
        && value.chars().last().is_some_and(lower_alnum)
        && value.chars().all(|c| lower_alnum(c) || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(json: serde_json::Value) -> LabelSelector {
        serde_json::from_value(json).expect("a LabelSelector")
    }

    fn messages(json: serde_json::Value) -> Vec<String> {
        validate_selector(&selector(json), "spec.selector")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn valid_selectors_pass() {
        assert!(messages(serde_json::json!({"matchLabels": {"app": "web"}})).is_empty());
        assert!(
            messages(serde_json::json!({
                "matchLabels": {"app.kubernetes.io/name": "web", "empty": ""},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["front", "back"]},
                    {"key": "example.com/canary", "operator": "DoesNotExist"},
                ],
            }))
            .is_empty()
        );
    }

    #[test]
    fn an_empty_selector_is_required_to_select_something() {
        for empty in [
            serde_json::json!({}),
            serde_json::json!({"matchLabels": {}}),
        ] {
            let messages = messages(empty);
            assert_eq!(messages.len(), 1);
            assert!(
                messages[0].starts_with("spec.selector: Required value: a SidecarSet must select"),
                "{}",
                messages[0]
            );
        }
    }

    #[test]
    fn operators_and_their_values_are_checked() {
        assert_eq!(
            messages(serde_json::json!({"matchExpressions": [
                {"key": "app", "operator": "Equals", "values": ["web"]},
                {"key": "app", "operator": "Exists", "values": ["web"]},
                {"key": "app", "operator": "In"},
                {"key": "app", "operator": "NotIn", "values": []},
            ]})),
            [
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.selector.matchExpressions[2].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[3].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ]
        );
    }

    #[test]
    fn keys_and_values_are_checked() {
        let messages = messages(serde_json::json!({
            "matchLabels": {"bad key": "web", "app": "-web"},
            "matchExpressions": [{"key": "a/b/c", "operator": "In", "values": ["ok", "not ok"]}],
        }));
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].starts_with(
            "spec.selector.matchLabels: Invalid value: \"-web\": a valid label must be"
        ));
        assert!(messages[1].starts_with(
            "spec.selector.matchLabels: Invalid value: \"bad key\": name part must consist of"
        ));
        assert!(messages[2].starts_with(
            "spec.selector.matchExpressions[0].key: Invalid value: \"a/b/c\": a qualified name must"
        ));
        assert!(messages[3].starts_with("spec.selector.matchExpressions[0].values[1]: Invalid value: \"not ok\": a valid label must"));
    }

    #[test]
    fn qualified_names() {
        for valid in ["app", "App_1.x-y", "example.com/app", "a.b-c/D"] {
            assert!(qualified_name_errors(valid).is_empty(), "{valid}");
        }
        let long = "a".repeat(64);
        for (invalid, message) in [
            ("", "name part must be non-empty"),
            ("example.com/", "name part must be non-empty"),
            ("/app", "prefix part must be non-empty"),
            (
                "Example.com/app",
                "prefix part a lowercase RFC 1123 subdomain",
            ),
            (
                "example..com/app",
                "prefix part a lowercase RFC 1123 subdomain",
            ),
            (
                long.as_str(),
                "name part must be no more than 63 characters",
            ),
            ("_app", "name part must consist of"),
            ("a/b/c", "a qualified name must consist of"),
        ] {
            let errors = qualified_name_errors(invalid);
            assert!(
                errors.iter().any(|e| e.starts_with(message)),
                "{invalid:?}: {errors:?}"
            );
        }
    }

    #[test]
    fn label_values_and_dns_labels() {
        for valid in ["", "web", "Web_1.0-x"] {
            assert!(label_value_errors(valid).is_empty(), "{valid}");
        }
        for invalid in ["-web", "web.", "a b", &"a".repeat(64)] {
            assert!(!label_value_errors(invalid).is_empty(), "{invalid}");
        }
        for valid in ["log", "log-2", "0"] {
            assert!(dns1123_label_errors(valid).is_empty(), "{valid}");
        }
        for invalid in ["", "Log", "log_2", "-log", "log-", "a.b", &"a".repeat(64)] {
            assert!(!dns1123_label_errors(invalid).is_empty(), "{invalid}");
        }
    }
}
