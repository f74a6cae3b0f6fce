//! Validation of the autoscaling, scheduling, storage and node kinds and of
//! IngressClass (Ingress has its own module): the rules an operator's
//! objects most often break, with kube-apiserver v1.32's messages.

use serde_json::Value;

use crate::error::Cause;

/// The largest priority a PriorityClass not named `system-*` may have.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;

pub(super) fn priority_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = crate::meta::name(obj);
    if old.is_none()
        && name.starts_with("system-")
        && !crate::bootstrap_policy::is_system_priority_class(name)
    {
        causes.push(Cause::forbidden(
            "metadata.name",
            &format!(
                "priority class names with 'system-' prefix are reserved for system use only. error: {name} is not a known system priority class"
            ),
        ));
    }
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    if !name.starts_with("system-") && value > HIGHEST_USER_DEFINABLE_PRIORITY {
        causes.push(Cause::forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(old) = old
        && old.get("value") != obj.get("value")
    {
        causes.push(Cause::forbidden(
            "value",
            "may not be changed in an update.",
        ));
    }
    causes
}

pub(super) fn horizontal_pod_autoscaler(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec");
    let target = spec.and_then(|s| s.get("scaleTargetRef"));
    for field in ["kind", "name"] {
        if target
            .and_then(|t| t.get(field))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause::required(format!("spec.scaleTargetRef.{field}"), ""));
        }
    }
    let min = spec
        .and_then(|s| s.get("minReplicas"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let max = spec
        .and_then(|s| s.get("maxReplicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if min < 1 {
        causes.push(Cause::invalid(
            "spec.minReplicas",
            &Value::from(min),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            &Value::from(max),
            "must be greater than 0",
        ));
    } else if max < min {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            &Value::from(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    causes
}

pub(super) fn storage_class(obj: &Value) -> Vec<Cause> {
    if obj
        .get("provisioner")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return vec![Cause::required("provisioner", "")];
    }
    Vec::new()
}

/// One resource's quantity of a LimitRange item's map.
struct Limit<'a> {
    text: &'a str,
    quantity: crate::quantity::Quantity,
}

impl Limit<'_> {
    fn shown(&self) -> String {
        self.quantity.canonical()
    }

    fn go(&self) -> String {
        super::go_syntax::go_quantity(self.text, &self.shown())
    }
}

fn limits<'a>(item: &'a Value, key: &str) -> Vec<(&'a str, Limit<'a>)> {
    item.get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(resource, value)| {
            let text = value.as_str()?;
            let quantity = crate::quantity::Quantity::parse(text.trim()).ok()?;
            Some((resource.as_str(), Limit { text, quantity }))
        })
        .collect()
}

/// The consistency rules of a LimitRange's items (`ValidateLimitRange`):
/// min ≤ default request ≤ default limit ≤ max.
pub(super) fn limit_range(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let items = obj
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (i, item) in items.enumerate() {
        let at = format!("spec.limits[{i}]");
        let min = limits(item, "min");
        let max = limits(item, "max");
        let defaults = limits(item, "default");
        let requests = limits(item, "defaultRequest");
        let invalid = |field: String, value: &Limit<'_>, detail: String| {
            Cause::new(
                "FieldValueInvalid",
                field,
                format!("Invalid value: {}: {detail}", value.go()),
            )
        };
        for (resource, lo) in &min {
            if let Some((_, hi)) = max.iter().find(|(k, _)| k == resource)
                && lo.quantity.nanos() > hi.quantity.nanos()
            {
                causes.push(invalid(
                    format!("{at}.min[{resource}]"),
                    lo,
                    format!(
                        "min value {} is greater than max value {}",
                        lo.shown(),
                        hi.shown()
                    ),
                ));
            }
        }
        for (resource, request) in &requests {
            let lookup = |list: &[(&str, Limit<'_>)]| {
                list.iter()
                    .find(|(k, _)| k == resource)
                    .map(|(_, l)| (l.quantity.nanos(), l.shown()))
            };
            let field = format!("{at}.defaultRequest[{resource}]");
            if let Some((lo, shown)) = lookup(&min)
                && lo > request.quantity.nanos()
            {
                causes.push(invalid(
                    field.clone(),
                    request,
                    format!(
                        "min value {shown} is greater than default request value {}",
                        request.shown()
                    ),
                ));
            }
            if let Some((hi, shown)) = lookup(&max)
                && request.quantity.nanos() > hi
            {
                causes.push(invalid(
                    field.clone(),
                    request,
                    format!(
                        "default request value {} is greater than max value {shown}",
                        request.shown()
                    ),
                ));
            }
            if let Some((limit, shown)) = lookup(&defaults)
                && request.quantity.nanos() > limit
            {
                causes.push(invalid(
                    field,
                    request,
                    format!(
                        "default request value {} is greater than default limit value {shown}",
                        request.shown()
                    ),
                ));
            }
        }
        for (resource, default) in &defaults {
            let field = format!("{at}.default[{resource}]");
            if let Some((_, lo)) = min.iter().find(|(k, _)| k == resource)
                && lo.quantity.nanos() > default.quantity.nanos()
            {
                causes.push(invalid(
                    field.clone(),
                    lo,
                    format!(
                        "min value {} is greater than default value {}",
                        lo.shown(),
                        default.shown()
                    ),
                ));
            }
            if let Some((_, hi)) = max.iter().find(|(k, _)| k == resource)
                && default.quantity.nanos() > hi.quantity.nanos()
            {
                causes.push(invalid(
                    field,
                    hi,
                    format!(
                        "default value {} is greater than max value {}",
                        default.shown(),
                        hi.shown()
                    ),
                ));
            }
        }
    }
    causes
}

/// `ValidateRuntimeClass`: a DNS-label handler, the overhead as container
/// limits, the scheduling node selector and tolerations.
pub(super) fn runtime_class(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
    for msg in crate::name_rules::name_is_dns_label(handler, false) {
        causes.push(Cause::invalid(
            "handler",
            &Value::String(handler.into()),
            &msg,
        ));
    }
    if let Some(fixed) = obj.pointer("/overhead/podFixed").filter(|v| !v.is_null()) {
        let requirements = serde_json::json!({ "limits": fixed });
        super::container::resources(Some(&requirements), "overhead", &mut causes);
    }
    if let Some(scheduling) = obj.get("scheduling").filter(|v| !v.is_null()) {
        causes.extend(super::meta::labels(
            scheduling.get("nodeSelector"),
            "scheduling.nodeSelector",
        ));
        super::pod::tolerations(scheduling, "scheduling.tolerations", &mut causes);
    }
    causes
}

/// `ValidateRuntimeClassUpdate`: only the handler is checked, and it is
/// immutable.
pub(super) fn runtime_class_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
    if Some(handler) != old.get("handler").and_then(Value::as_str) {
        return vec![super::go_syntax::immutable(
            "handler",
            &crate::gofmt::quote(handler),
        )];
    }
    Vec::new()
}

/// `validateIngressClassSpec` (and the immutable controller of
/// `ValidateIngressClassUpdate`, reported first).
pub(super) fn ingress_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let controller = obj
        .pointer("/spec/controller")
        .and_then(Value::as_str)
        .unwrap_or("");
    let field = "spec.controller";
    if let Some(old) = old
        && old
            .pointer("/spec/controller")
            .and_then(Value::as_str)
            .unwrap_or("")
            != controller
    {
        causes.push(super::go_syntax::immutable(
            field,
            &crate::gofmt::quote(controller),
        ));
    }
    if controller.len() > 250 {
        causes.push(super::go_syntax::too_long(field, 250));
    }
    causes.extend(domain_prefixed_path(field, controller));
    let Some(params) = obj.pointer("/spec/parameters").filter(|p| !p.is_null()) else {
        return causes;
    };
    let path = "spec.parameters";
    causes.extend(super::ingress::typed_local_object_reference(params, path));
    let namespace = params.get("namespace").and_then(Value::as_str);
    match params.get("scope").and_then(Value::as_str) {
        None => causes.push(Cause::required(format!("{path}.scope"), "")),
        Some("Namespace") => match namespace {
            None => causes.push(Cause::required(
                format!("{path}.namespace"),
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(ns) => {
                for msg in crate::name_rules::is_dns1123_label(ns) {
                    causes.push(Cause::invalid(
                        format!("{path}.namespace"),
                        &Value::String(ns.into()),
                        &msg,
                    ));
                }
            }
        },
        Some("Cluster") => {
            if namespace.is_some() {
                causes.push(Cause::forbidden(
                    format!("{path}.namespace"),
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        Some(other) => causes.push(Cause::not_supported(
            format!("{path}.scope"),
            &Value::String(other.into()),
            &["Cluster", "Namespace"],
        )),
    }
    causes
}

/// `IsDomainPrefixedPath`.
fn domain_prefixed_path(field: &str, value: &str) -> Vec<Cause> {
    let invalid = |v: &str, msg: &str| Cause::invalid(field, &Value::String(v.into()), msg);
    if value.is_empty() {
        return vec![Cause::required(field, "")];
    }
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![invalid(
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut causes: Vec<Cause> = crate::name_rules::is_dns1123_subdomain(host)
        .iter()
        .map(|msg| invalid(host, msg))
        .collect();
    const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";
    let valid = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !valid {
        causes.push(invalid(
            path,
            &crate::name_rules::regex_error("must be a valid path", HTTP_PATH_FMT, &[]),
        ));
    }
    causes
}
