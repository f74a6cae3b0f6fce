//! Defaulting and validation of `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` writes, as the `admissionregistration.k8s.io/v1`
//! API does, for the server to run on create and update.
//!
//! Covered: every webhook field the dispatcher reads (names, rules,
//! policies, sideEffects, timeoutSeconds, selectors' operators, clientConfig,
//! admissionReviewVersions, matchConditions names and syntax), with the
//! ratcheting kube-apiserver applies on update. Not covered: `metadata`
//! (the server's generic object validation), label key/value syntax inside
//! selectors, and CEL type checking and cost limits of matchConditions.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::admission::conditions::compile_error;
use crate::error::Cause;

/// Which of the two configuration kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigurationKind {
    Mutating,
    Validating,
}

impl ConfigurationKind {
    #[cfg(test)]
    pub(crate) fn kind(self) -> &'static str {
        match self {
            ConfigurationKind::Mutating => "MutatingWebhookConfiguration",
            ConfigurationKind::Validating => "ValidatingWebhookConfiguration",
        }
    }
}

pub(super) fn set_default(map: &mut Map<String, Value>, field: &str, value: Value) {
    if map.get(field).is_none_or(Value::is_null) {
        map.insert(field.to_string(), value);
    }
}

/// Fills the v1 defaults into a configuration about to be stored:
/// `failurePolicy: Fail`, `matchPolicy: Equivalent`, `namespaceSelector: {}`,
/// `objectSelector: {}`, `timeoutSeconds: 10`, `reinvocationPolicy: Never`
/// (mutating), rule `scope: "*"`, service `port: 443`.
pub(crate) fn default_configuration(kind: ConfigurationKind, configuration: &mut Value) {
    let Some(hooks) = configuration
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        set_default(hook, "failurePolicy", json!("Fail"));
        set_default(hook, "matchPolicy", json!("Equivalent"));
        set_default(hook, "namespaceSelector", json!({}));
        set_default(hook, "objectSelector", json!({}));
        set_default(hook, "timeoutSeconds", json!(10));
        if kind == ConfigurationKind::Mutating {
            set_default(hook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                set_default(rule, "scope", json!("*"));
            }
        }
        if let Some(service) = hook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            set_default(service, "port", json!(443));
        }
    }
}

#[cfg(test)]
/// The 422 for a configuration that failed [`validate_configuration`].
pub(crate) fn invalid_configuration(
    kind: ConfigurationKind,
    name: &str,
    causes: Vec<Cause>,
) -> crate::error::ApiError {
    crate::error::ApiError::invalid("admissionregistration.k8s.io", kind.kind(), name, causes)
}

/// What an update may keep that a create may not (kube-apiserver's ratcheting).
struct Options {
    require_no_side_effects: bool,
    require_recognized_versions: bool,
    require_unique_names: bool,
    /// Per webhook index: the matchConditions are unchanged and not re-checked.
    unchanged_conditions: bool,
}

fn hooks_of(configuration: &Value) -> Vec<&Value> {
    configuration
        .get("webhooks")
        .and_then(Value::as_array)
        .map(|h| h.iter().collect())
        .unwrap_or_default()
}

pub(super) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn text<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str)
}

const ACCEPTED_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

fn options(new: &Value, old: Option<&Value>) -> Options {
    let Some(old) = old else {
        return Options {
            require_no_side_effects: true,
            require_recognized_versions: true,
            require_unique_names: true,
            unchanged_conditions: false,
        };
    };
    let old_hooks = hooks_of(old);
    let new_hooks = hooks_of(new);
    let mut names = BTreeSet::new();
    Options {
        require_no_side_effects: old_hooks
            .iter()
            .all(|h| matches!(text(h, "sideEffects"), Some("None" | "NoneOnDryRun"))),
        require_recognized_versions: old_hooks.iter().all(|h| {
            let versions = strings(h.get("admissionReviewVersions"));
            versions.is_empty()
                || versions
                    .iter()
                    .any(|v| ACCEPTED_VERSIONS.contains(&v.as_str()))
        }),
        require_unique_names: old_hooks
            .iter()
            .all(|h| names.insert(text(h, "name").unwrap_or_default().to_string())),
        unchanged_conditions: old_hooks.len() == new_hooks.len()
            && old_hooks
                .iter()
                .zip(&new_hooks)
                .all(|(o, n)| o.get("matchConditions") == n.get("matchConditions")),
    }
}

/// Validates a configuration (`old` on update), returning the causes of a 422.
pub(crate) fn validate_configuration(
    kind: ConfigurationKind,
    new: &Value,
    old: Option<&Value>,
) -> Vec<Cause> {
    let opts = options(new, old);
    let mut causes = Vec::new();
    let mut names = BTreeSet::new();
    for (i, hook) in hooks_of(new).into_iter().enumerate() {
        let path = format!("webhooks[{i}]");
        validate_webhook(kind, hook, &path, &opts, &mut causes);
        validate_review_versions(
            &strings(hook.get("admissionReviewVersions")),
            opts.require_recognized_versions,
            &format!("{path}.admissionReviewVersions"),
            &mut causes,
        );
        let name = text(hook, "name").unwrap_or_default();
        if opts.require_unique_names && !name.is_empty() && !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(format!("{path}.name"), &json!(name)));
        }
    }
    causes
}

pub(super) fn invalid_raw(field: String, rendered: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {rendered}: {detail}"),
    )
}

fn validate_webhook(
    kind: ConfigurationKind,
    hook: &Value,
    path: &str,
    opts: &Options,
    causes: &mut Vec<Cause>,
) {
    validate_fully_qualified_name(
        text(hook, "name").unwrap_or_default(),
        &format!("{path}.name"),
        causes,
    );
    if let Some(rules) = hook.get("rules").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            validate_rule(rule, &format!("{path}.rules[{i}]"), causes);
        }
    }
    let mut enumerated = |field: &str, supported: &[&str]| {
        if let Some(v) = hook.get(field).filter(|v| !v.is_null())
            && !v.as_str().is_some_and(|s| supported.contains(&s))
        {
            causes.push(Cause::not_supported(
                format!("{path}.{field}"),
                v,
                supported,
            ));
        }
    };
    enumerated("failurePolicy", &["Fail", "Ignore"]);
    enumerated("matchPolicy", &["Equivalent", "Exact"]);
    let allowed_side_effects: &[&str] = if opts.require_no_side_effects {
        &["None", "NoneOnDryRun"]
    } else {
        &["None", "NoneOnDryRun", "Some", "Unknown"]
    };
    match hook.get("sideEffects").filter(|v| !v.is_null()) {
        None => causes.push(Cause::required(
            format!("{path}.sideEffects"),
            &format!("must specify one of {}", allowed_side_effects.join(", ")),
        )),
        Some(v)
            if !v
                .as_str()
                .is_some_and(|s| allowed_side_effects.contains(&s)) =>
        {
            causes.push(Cause::not_supported(
                format!("{path}.sideEffects"),
                v,
                allowed_side_effects,
            ))
        }
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").filter(|v| !v.is_null())
        && !t.as_i64().is_some_and(|t| (1..=30).contains(&t))
    {
        causes.push(Cause::invalid(
            format!("{path}.timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = hook.get(selector).filter(|v| !v.is_null()) {
            validate_selector(s, &format!("{path}.{selector}"), causes);
        }
    }
    if kind == ConfigurationKind::Mutating
        && let Some(v) = hook.get("reinvocationPolicy").filter(|v| !v.is_null())
        && !v
            .as_str()
            .is_some_and(|s| ["IfNeeded", "Never"].contains(&s))
    {
        causes.push(Cause::not_supported(
            format!("{path}.reinvocationPolicy"),
            v,
            &["IfNeeded", "Never"],
        ));
    }
    validate_client_config(
        hook.get("clientConfig"),
        &format!("{path}.clientConfig"),
        causes,
    );
    if !opts.unchanged_conditions {
        validate_match_conditions(
            hook.get("matchConditions"),
            &format!("{path}.matchConditions"),
            causes,
        );
    }
}

const DNS1123_SUBDOMAIN_ERROR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// `IsDNS1123Subdomain`: its error messages.
fn dns1123_subdomain_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                (first.is_ascii_lowercase() || first.is_ascii_digit())
                    && (last.is_ascii_lowercase() || last.is_ascii_digit())
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            }
            _ => false,
        }
    };
    if !name.split('.').all(label_ok) {
        errors.push(DNS1123_SUBDOMAIN_ERROR.to_string());
    }
    errors
}

fn validate_fully_qualified_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(Cause::required(field, ""));
        return;
    }
    let errors = dns1123_subdomain_errors(name);
    if !errors.is_empty() {
        causes.push(Cause::invalid(field, &json!(name), &errors.join(",")));
    } else if name.split('.').count() < 3 {
        causes.push(Cause::invalid(
            field,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

pub(super) fn validate_rule(rule: &Value, path: &str, causes: &mut Vec<Cause>) {
    let operations = strings(rule.get("operations"));
    let field = format!("{path}.operations");
    if operations.is_empty() {
        causes.push(Cause::required(&field, ""));
    }
    if operations.len() > 1 && operations.iter().any(|o| o == "*") {
        causes.push(invalid_raw(
            field.clone(),
            &crate::gofmt::typed_slice("[]admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            causes.push(Cause::not_supported(
                format!("{field}[{i}]"),
                &json!(op),
                &OPERATIONS,
            ));
        }
    }
    for (list, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = strings(rule.get(list));
        let field = format!("{path}.{list}");
        if items.is_empty() {
            causes.push(Cause::required(&field, ""));
        }
        if items.len() > 1 && items.iter().any(|g| g == "*") {
            causes.push(invalid_raw(
                field.clone(),
                &crate::gofmt::typed_slice("[]string", &items),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if list == "apiVersions" {
            for (i, v) in items.iter().enumerate() {
                if v.is_empty() {
                    causes.push(Cause::required(format!("{field}[{i}]"), ""));
                }
            }
        }
    }
    validate_resources(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
        causes,
    );
    if let Some(scope) = rule.get("scope").filter(|v| !v.is_null())
        && !scope
            .as_str()
            .is_some_and(|s| ["*", "Cluster", "Namespaced"].contains(&s))
    {
        causes.push(Cause::not_supported(
            format!("{path}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

fn validate_resources(resources: &[String], field: &str, causes: &mut Vec<Cause>) {
    if resources.is_empty() {
        causes.push(Cause::required(field, ""));
    }
    let mut wildcard_sub_of: BTreeSet<&str> = BTreeSet::new();
    let mut wildcard_res_for: BTreeSet<&str> = BTreeSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            causes.push(Cause::required(format!("{field}[{i}]"), ""));
            continue;
        }
        double |= entry == "*/*";
        single |= entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            plain = entry != "*";
            continue;
        };
        if wildcard_sub_of.contains(res) {
            causes.push(Cause::invalid(
                format!("{field}[{i}]"),
                &json!(entry),
                &format!("if '{res}/*' is present, must not specify {entry}"),
            ));
        }
        if wildcard_res_for.contains(sub) {
            causes.push(Cause::invalid(
                format!("{field}[{i}]"),
                &json!(entry),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            wildcard_sub_of.insert(res);
        }
        if res == "*" {
            wildcard_res_for.insert(sub);
        }
    }
    if resources.len() > 1 && double {
        causes.push(invalid_raw(
            field.to_string(),
            &crate::gofmt::typed_slice("[]string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        causes.push(invalid_raw(
            field.to_string(),
            &crate::gofmt::typed_slice("[]string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

fn validate_selector(selector: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) else {
        return;
    };
    for (i, expr) in exprs.iter().enumerate() {
        let field = format!("{path}.matchExpressions[{i}]");
        let operator = text(expr, "operator").unwrap_or_default();
        let has_values = expr
            .get("values")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty());
        match operator {
            "In" | "NotIn" if !has_values => causes.push(Cause::required(
                format!("{field}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if has_values => causes.push(Cause::forbidden(
                format!("{field}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(Cause::invalid(
                format!("{field}.operator"),
                &json!(other),
                "not a valid selector operator",
            )),
        }
    }
}

const URL_FORM: &str = "; desired format: https://host[/path]";

fn validate_client_config(cc: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let empty = Value::Null;
    let cc = cc.unwrap_or(&empty);
    let url = cc.get("url").filter(|v| !v.is_null());
    let service = cc.get("service").filter(|v| !v.is_null());
    match (url, service) {
        (Some(url), None) => validate_url(
            url.as_str().unwrap_or_default(),
            &format!("{path}.url"),
            causes,
        ),
        (None, Some(service)) => validate_service(service, &format!("{path}.service"), causes),
        _ => causes.push(Cause::required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

fn validate_url(url: &str, field: &str, causes: &mut Vec<Cause>) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        causes.push(Cause::invalid(
            field,
            &json!(scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = before_query.split('/').next().unwrap_or_default();
    let host = match authority.rsplit_once('@') {
        Some((user, host)) => {
            causes.push(Cause::invalid(
                field,
                &json!(user),
                "user information is not permitted in the URL",
            ));
            host
        }
        None => authority,
    };
    if scheme.is_empty() || host.is_empty() {
        causes.push(Cause::invalid(
            field,
            &json!(if scheme.is_empty() { "" } else { host }),
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if !fragment.is_empty() {
        causes.push(Cause::invalid(
            field,
            &json!(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        causes.push(Cause::invalid(
            field,
            &json!(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_service(service: &Value, path: &str, causes: &mut Vec<Cause>) {
    for field in ["name", "namespace"] {
        if text(service, field).unwrap_or_default().is_empty() {
            causes.push(Cause::required(format!("{path}.{field}"), ""));
        }
    }
    if let Some(port) = service.get("port").filter(|v| !v.is_null())
        && !port.as_i64().is_some_and(|p| (1..=65535).contains(&p))
    {
        causes.push(Cause::invalid(
            format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = text(service, "path") else {
        return;
    };
    let field = format!("{path}.path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        causes.push(Cause::invalid(
            &field,
            &json!(url_path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        causes.push(Cause::invalid(
            &field,
            &json!(url_path),
            "must start with a '/'",
        ));
    }
    let to_check = url_path.get(1..).unwrap_or_default();
    let to_check = to_check.strip_suffix('/').unwrap_or(to_check);
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            causes.push(Cause::invalid(
                &field,
                &json!(url_path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in dns1123_subdomain_errors(step) {
            causes.push(Cause::invalid(
                &field,
                &json!(url_path),
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

fn validate_review_versions(
    versions: &[String],
    require_recognized: bool,
    field: &str,
    causes: &mut Vec<Cause>,
) {
    if versions.is_empty() {
        causes.push(Cause::required(
            field,
            &format!("must specify one of {}", ACCEPTED_VERSIONS.join(", ")),
        ));
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            causes.push(Cause::invalid(
                format!("{field}[{i}]"),
                &json!(v),
                "duplicate version",
            ));
        }
    }
    if require_recognized
        && !versions
            .iter()
            .any(|v| ACCEPTED_VERSIONS.contains(&v.as_str()))
    {
        causes.push(invalid_raw(
            field.to_string(),
            &crate::gofmt::typed_slice("[]string", versions),
            &format!(
                "must include at least one of {}",
                ACCEPTED_VERSIONS.join(", ")
            ),
        ));
    }
}

fn validate_match_conditions(conditions: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let Some(conditions) = conditions.and_then(Value::as_array) else {
        return;
    };
    if conditions.len() > 64 {
        causes.push(Cause::new(
            "FieldValueTooMany",
            path,
            format!("Too many: {}: must have at most 64 items", conditions.len()),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let field = format!("{path}[{i}]");
        let name = text(condition, "name").unwrap_or_default();
        if name.is_empty() {
            causes.push(Cause::required(format!("{field}.name"), ""));
        } else if !names.insert(name) {
            causes.push(Cause::duplicate(format!("{field}.name"), &json!(name)));
        }
        let expression = text(condition, "expression").unwrap_or_default();
        if expression.is_empty() {
            causes.push(Cause::required(format!("{field}.expression"), ""));
        } else if let Some(error) = compile_error(expression) {
            causes.push(Cause::invalid(
                format!("{field}.expression"),
                &json!(expression),
                &format!("compilation failed: {error}"),
            ));
        }
    }
}
